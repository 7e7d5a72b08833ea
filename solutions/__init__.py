"""Reference solutions, laid out by program (docs/architecture.md, "Where things are"):

- ``methods/``: the ranking methods (``random``, ``heuristic``, ``gbdt/``, ``gnn/``), what every method
  shares (``base``, ``selection``) and their ``registry``;
- ``solve/``: ``tpugraphs solve``, from its arguments to the submission and its report;
- ``rank/``: ``tpugraphs rank``, from a program to its ranked candidates;
- ``kinds/``: one adapter per task kind, all that the methods and both programs know of a kind;
- the shared parts: ``features/``, ``pruning/``, ``settings/``, ``store/`` (saved models), ``compute/``.

The import paths that 1.0's notebooks and docs showed (``solutions.runner``, ``solutions.method``,
``solutions.gbdt``, ...) keep working through 1.x: ``PATHS_1_0`` maps each to the module that now holds
it, and importing the old name gives that same module object.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types

#: 1.0 import path -> the module that holds it now (a package's submodules follow their package), or the
#: modules whose names it held together (``solutions.method``).
PATHS_1_0: dict[str, str | tuple[str, ...]] = {
    "solutions.runner": "solutions.solve.runner",
    "solutions.method": ("solutions.methods.base", "solutions.methods.registry", "solutions.store.saved"),
    "solutions.baselines": "solutions.methods.random",
    "solutions.heuristics": "solutions.methods.heuristic",
    "solutions.dedup": "solutions.features.dedup",
    "solutions.gbdt": "solutions.methods.gbdt",
    "solutions.gnn": "solutions.methods.gnn",
}


def _current_names(name: str) -> tuple[str, ...] | None:
    for old, new in PATHS_1_0.items():
        if name == old:
            return new if isinstance(new, tuple) else (new,)
        if name.startswith(old + ".") and isinstance(new, str):
            return (new + name[len(old):],)
    return None


class _SameModule(importlib.abc.Loader):
    """Loads a 1.0 path as the module that holds it now (``sys.modules`` then names one object twice), or,
    for a path whose names now live in several modules, as a module holding those same objects."""

    def __init__(self, current: tuple[str, ...]) -> None:
        self.current = current

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None  # a placeholder, filled (or replaced) by exec_module

    def exec_module(self, module: types.ModuleType) -> None:
        holders = [importlib.import_module(name) for name in self.current]
        if len(holders) == 1:
            sys.modules[module.__name__] = holders[0]
            return
        for holder in holders:
            module.__dict__.update({key: value for key, value in vars(holder).items()
                                    if not key.startswith("__")})


class _Paths10Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):  # noqa: ANN001 - the import system's signature
        current = _current_names(fullname)
        if current is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _SameModule(current))


if not any(isinstance(finder, _Paths10Finder) for finder in sys.meta_path):
    sys.meta_path.insert(0, _Paths10Finder())
