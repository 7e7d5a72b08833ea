"""What a reference solution is: a ranking method, fitted per collection, that scores configs.

Every method (baselines, heuristics, the gradient-boosted ranker, the GNN) implements
:class:`RankingMethod`; ``solutions.runner`` trains it on the train split, selects and reports it on
the valid split with the official metric from ``competition.metrics``, predicts the test split and
writes the submission. A method predicts one number per config, lower = faster; the runner turns
it into the submission row (``competition.predictions.ranking_from_predictions``).
"""

from __future__ import annotations

import importlib
import json
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from competition.collections import COLLECTION_BY_NAME, Collection, Split
from competition.data.graphs import Graph, iter_split, list_split
from competition.data.processed_cache import iter_cached_split
from competition.data.tree import split_dir

if typing.TYPE_CHECKING:
    from solutions.settings import MethodSettings


@dataclass(frozen=True)
class SplitSource:
    """One split of one collection of a data directory, iterable any number of times; with ``also``,
    the same split of more collections read after it (``with_random_search``).

    Methods that cache (pruned graphs, compact configs, features) key their cache on ``paths``.
    """

    data_dir: Path
    collection: Collection
    split: Split
    also: tuple[Collection, ...] = ()

    @property
    def collection_names(self) -> list[str]:
        """The collections read, ``collection`` first (what a method's report says it trained on)."""
        return [part.collection.name for part in self.parts()]

    def parts(self) -> list[SplitSource]:
        """One source per collection read: ``collection`` first, then ``also``."""
        return [SplitSource(self.data_dir, c, self.split) for c in (self.collection, *self.also)]

    def entries(self) -> list[tuple[Collection, Path]]:
        """Every file read, with the collection it belongs to (its row ID and cache folder)."""
        return [(part.collection, path) for part in self.parts()
                for path in list_split(self.data_dir, part.collection, self.split)]

    @property
    def paths(self) -> list[Path]:
        return [path for _, path in self.entries()]

    def __iter__(self) -> Iterator[tuple[str, Graph]]:
        for part in self.parts():
            yield from iter_split(self.data_dir, part.collection, self.split)

    def graphs(self, cache_dir: Path | None = None) -> Iterator[tuple[str, Graph]]:
        """``(row ID, graph)`` pairs of the split, one graph in memory at a time.

        Without ``cache_dir`` each file is loaded whole (``load_graph``), as iterating the source does.
        With it, layout graphs come from the processed cache under ``cache_dir`` (built on first use,
        reused while fresh; ``competition.data.processed_cache``) as ``CachedLayoutGraph`` views whose configs
        stay memory-mapped int8: read them by index or a chunk at a time. Tile graphs are always loaded whole
        (the largest tile file is a few MB).
        """
        if cache_dir is None or not self.collection.task.config_per_node:
            yield from self
            return
        for part in self.parts():
            for cached in iter_cached_split(self.data_dir, part.collection, self.split, cache_dir):
                try:
                    yield part.collection.row_id(cached.stem), cached.layout_view()
                finally:
                    cached.close()  # the pages the consumer read leave resident memory before the next graph

    def __len__(self) -> int:
        return len(self.paths)


def random_search_of(collection: Collection) -> Collection:
    """The random-search layout collection of ``collection``'s source (``layout:xla:default`` ->
    ``layout:xla:random``)."""
    return COLLECTION_BY_NAME[f"{collection.task_name}:{collection.source}:random"]


def with_random_search(source: SplitSource) -> SplitSource:
    """A default-search layout source plus the same split of its source's random search
    (``layout:xla:default`` also reads ``layout:xla:random``), where the data has that folder.

    The configs of a default search differ little (real runtimes within 2 % of each other), so its
    graphs teach little about what makes a layout slow, and the random search of the same source shows
    it on the same kind of programs and chip. The methods train on their own collection only (learning
    from the random search too lost on real data: docs/journal/2026-11-28-settings-1.0.md); the
    real-data benchmark's within-graph tree still reads a program's random search beside it. Any other
    source is returned as it is.
    """
    collection = source.collection
    if collection.search != "default" or source.also:
        return source
    random = random_search_of(collection)
    if not any(split_dir(source.data_dir, random, source.split).glob("*.npz")):
        return source  # a partial download, or a tree of one search only: nothing to add
    return SplitSource(source.data_dir, collection, source.split, also=(random,))


@dataclass
class FitOptions:
    """Options every method receives; a method ignores what does not apply to it."""

    seed: int = 0
    device: str = "cpu"  # "cpu", "cuda", "cuda:1", ...; solve() turns "auto" into one of them
    compress: bool = True  # config deduplication / compact storage
    progress: bool = True  # progress on anything a person waits for (competition.progress picks the form)
    time_budget_s: float | None = None  # soft limit on training time for this collection
    # The processed cache of layout graphs (competition.data.processed_cache): when set, methods read layout
    # graphs through it (SplitSource.graphs) in fit, and the runner hands them to predict the same way.
    cache_dir: Path | None = None


class SavedModelError(ValueError):
    """A saved model this code cannot use (another format version, a setting it cannot rebuild).

    The message names the file and what is wrong; ``tpugraphs solve --predict-only`` shows it as a
    usage error instead of predicting with different settings.
    """


def retrain_command(method: str, collection: object) -> str:
    """The command that trains a saved model of ``method`` again (on ``collection`` when the file names
    one), for the refusal of a model this kit cannot use."""
    name = collection if isinstance(collection, str) and collection else "NAME"
    return f"tpugraphs solve --method {method} --collection {name} --data PUBLIC_DIR --out SUB.csv"


def read_saved_json(file: Path) -> dict:
    """A saved model's JSON file as a dict; ``SavedModelError`` naming the file when it is not one (a
    damaged copy, a hand edit)."""
    try:
        data = json.loads(Path(file).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SavedModelError(f"{file}: not JSON ({exc}); write the model again (run without "
                              "--predict-only)") from None
    if not isinstance(data, dict):
        raise SavedModelError(f"{file}: a JSON object was expected, not a {type(data).__name__}; write the "
                              "model again (run without --predict-only)")
    return data


def unreadable_model_file(file: Path, reader: str, exc: BaseException) -> SavedModelError:
    """The refusal of a saved weight file its library cannot read (damaged, truncated, another model's):
    the file, the library's complaint in one line, and what to do."""
    complaint = (str(exc).strip().splitlines() or [""])[0][:200]
    return SavedModelError(f"{file}: {reader} cannot read it ({type(exc).__name__}: {complaint}); write the "
                           "model again (run without --predict-only)")


@runtime_checkable
class RankingMethod(Protocol):
    """A method fitted on one collection; ``predict`` gives one number per config, lower = faster."""

    name: str

    def fit(self, collection: Collection, train: SplitSource, valid: SplitSource,
            options: FitOptions) -> None:
        """Train on ``train``; ``valid`` may be used for model selection (early stopping, epochs)."""

    def predict(self, collection: Collection, graph: Graph) -> np.ndarray:
        """(c,) float predicted runtime-like scores of the graph's configs, lower = faster.

        A layout ``graph`` may be a ``competition.data.processed_cache.CachedLayoutGraph``
        (runs with a cache folder): its ``node_config_feat`` is a memory-mapped int8 array; read it by index
        or in chunks.
        """

    def save(self, path: Path) -> None:
        """Write everything ``load`` needs to predict again without training."""

    @classmethod
    def load(cls, path: Path) -> RankingMethod:
        """Read a method written by ``save``, with the settings it was fitted with (``SavedModelError``
        when this code cannot rebuild them)."""


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
        """The method's settings (``solutions.settings.MethodSettings``), read without importing what
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
        MethodInfo("random", "solutions.baselines:RandomMethod", "seeded random ranking: the floor", False),
        MethodInfo("heuristic", "solutions.heuristics:HeuristicMethod",
                   "non-learned rule of thumb from the config features (see solutions/heuristics.py)", False),
        MethodInfo("gbdt", "solutions.gbdt:GBDTRanker",
                   "LightGBM lambdarank on engineered graph and config features (fast on a CPU)",
                   settings_target="solutions.gbdt.settings:SETTINGS"),
        MethodInfo("gnn", "solutions.gnn:GNNRanker",
                   "message passing with PyTorch Geometric and a ranking loss (the default reference)",
                   uses_device=True, settings_target="solutions.gnn.settings:SETTINGS"),
    )
}


def get_method(name: str) -> MethodInfo:
    """The method called ``name``; ValueError listing the known ones otherwise."""
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; choose one of {', '.join(METHODS)}") from None
