"""The registry of methods: where each lives, so that choosing ``gbdt`` never imports torch (and ``gnn``
never lightgbm). Its targets are imports by name, declared in docs/architecture.md ("Imports by name").
"""

from __future__ import annotations

import difflib
import importlib
import typing
from collections.abc import Mapping
from dataclasses import dataclass

from competition.collections import Collection
from solutions.methods.base import RankingMethod

if typing.TYPE_CHECKING:
    from solutions.settings.schema import MethodSettings


@dataclass(frozen=True)
class MethodInfo:
    """Where a method lives, so that choosing ``gbdt`` never imports torch (and ``gnn`` never lightgbm)."""

    name: str
    target: str  # "module:ClassName"
    description: str
    learned: bool = True
    uses_device: bool = False  # runs on --device (torch); --device auto then looks for a GPU
    # "module:NAME" of its MethodSettings ("": no settings), in a module that imports no torch or lightgbm
    settings_target: str = ""

    def load_class(self) -> type:
        return _load(self.target)

    def load_settings(self) -> MethodSettings | None:
        """The method's settings (``solutions.settings.schema.MethodSettings``), read without importing what
        training needs; None for a method without settings."""
        return _load(self.settings_target) if self.settings_target else None

    def build(self, collection: Collection, params: Mapping[str, object]) -> RankingMethod:
        """The method for ``collection``: its settings resolved once (``MethodSettings.resolve``: the
        collection's defaults, then ``params``) and handed to the constructor whole."""
        settings = self.load_settings()
        if settings is None:
            return self.load_class()(**params)
        return self.load_class()(settings.resolve(collection, params))


def _load(target: str) -> typing.Any:
    module_name, name = target.split(":")
    return getattr(importlib.import_module(module_name), name)


METHODS: dict[str, MethodInfo] = {
    info.name: info
    for info in (
        MethodInfo("random", "solutions.methods.random:RandomMethod", "seeded random ranking: the floor",
                   False),
        MethodInfo("heuristic", "solutions.methods.heuristic:HeuristicMethod",
                   "non-learned rule of thumb from the config features (see solutions/methods/heuristic.py)",
                   False),
        MethodInfo("gbdt", "solutions.methods.gbdt:GBDTRanker",
                   "LightGBM lambdarank on engineered graph and config features (fast on a CPU)",
                   settings_target="solutions.methods.gbdt.settings:SETTINGS"),
        MethodInfo("gnn", "solutions.methods.gnn:GNNRanker",
                   "message passing with PyTorch Geometric and a ranking loss (the default reference)",
                   uses_device=True, settings_target="solutions.methods.gnn.settings:SETTINGS"),
    )
}


def get_method(name: str) -> MethodInfo:
    """The method called ``name``; ValueError listing the known ones otherwise."""
    try:
        return METHODS[name]
    except KeyError:
        close = difflib.get_close_matches(str(name).lower(), list(METHODS), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ValueError(f"unknown method {name!r}{hint}; choose one of {', '.join(METHODS)}") from None
