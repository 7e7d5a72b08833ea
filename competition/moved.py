"""Import paths that moved keep working: 1.0's paths through 1.x.

A package whose modules moved registers a table, old path -> the module that holds it now (or the modules
whose names it held together), with ``keep_paths``. Importing an old path then gives the module that
holds it now, the same object (``sys.modules`` names it twice); a package's submodules follow it. A path
whose names were split over several modules gets a module holding those same objects.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Mapping

Moves = Mapping[str, "str | tuple[str, ...]"]


def _current_names(moves: Moves, name: str) -> tuple[str, ...] | None:
    for old, new in moves.items():
        if name == old:
            return new if isinstance(new, tuple) else (new,)
        if name.startswith(old + ".") and isinstance(new, str):
            return (new + name[len(old):],)
    return None


class _SameModule(importlib.abc.Loader):
    def __init__(self, current: tuple[str, ...]) -> None:
        self.current = current

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None  # a placeholder, filled (or replaced) by exec_module

    def exec_module(self, module: types.ModuleType) -> None:
        holders = [importlib.import_module(name) for name in self.current]
        if len(holders) == 1:
            sys.modules[module.__name__] = holders[0]  # the import system hands out what sys.modules holds
            return
        for holder in holders:
            module.__dict__.update({key: value for key, value in vars(holder).items()
                                    if not key.startswith("__")})


class _MovedFinder(importlib.abc.MetaPathFinder):
    def __init__(self, moves: Moves) -> None:
        self.moves = moves

    def find_spec(self, fullname, path, target=None):  # noqa: ANN001 - the import system's signature
        current = _current_names(self.moves, fullname)
        if current is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _SameModule(current))


def keep_paths(moves: Moves) -> None:
    """Make every old path of ``moves`` import as the module that holds it now (once per table)."""
    if not any(isinstance(finder, _MovedFinder) and finder.moves is moves for finder in sys.meta_path):
        sys.meta_path.insert(0, _MovedFinder(moves))
