"""What a reference solution is: a ranking method, fitted per collection, that scores configs.

Every method (baselines, heuristics, the gradient-boosted ranker, the GNN) implements
:class:`RankingMethod`; ``solutions.solve.runner`` trains it on the train split, selects and reports it on
the valid split with the official metric from ``competition.metrics``, predicts the test split and
writes the submission. A method predicts one number per config, lower = faster; the runner turns
it into the submission row (``competition.predictions.ranking_from_predictions``).
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from competition.collections import Collection, Split
from competition.data.graphs import Graph, iter_split, list_split
from competition.data.processed_cache import iter_cached_split

if typing.TYPE_CHECKING:
    pass


@dataclass(frozen=True)
class SplitSource:
    """One split of one collection of a data directory, iterable any number of times.

    Methods that cache (pruned graphs, compact configs, features) key their cache on ``paths``.
    """

    data_dir: Path
    collection: Collection
    split: Split

    @property
    def collection_names(self) -> list[str]:
        """The collections read (what a method's report says it trained on)."""
        return [self.collection.name]

    def entries(self) -> list[tuple[Collection, Path]]:
        """Every file read, with the collection it belongs to (its row ID and cache folder)."""
        return [(self.collection, path) for path in list_split(self.data_dir, self.collection, self.split)]

    @property
    def paths(self) -> list[Path]:
        return [path for _, path in self.entries()]

    def __iter__(self) -> Iterator[tuple[str, Graph]]:
        yield from iter_split(self.data_dir, self.collection, self.split)

    def graphs(self, cache_dir: Path | None = None) -> Iterator[tuple[str, Graph]]:
        """``(row ID, graph)`` pairs of the split, one graph in memory at a time.

        Without ``cache_dir`` each file is loaded whole (``load_graph``), as iterating the source does.
        With it, layout graphs come from the processed cache under ``cache_dir`` (built on first use,
        reused while fresh; ``competition.data.processed_cache``) as ``CachedLayoutGraph`` views whose configs
        stay memory-mapped int8: read them by index or a chunk at a time. Tile graphs are always loaded whole
        (the largest tile file is a few MB).
        """
        if cache_dir is None or not self.collection.task.cached:
            yield from self
            return
        for cached in iter_cached_split(self.data_dir, self.collection, self.split, cache_dir):
            try:
                yield self.collection.row_id(cached.stem), cached.layout_view()
            finally:
                cached.close()  # the pages the consumer read leave resident memory before the next graph

    def __len__(self) -> int:
        return len(self.paths)


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


# What a learned method says while it fits: its selection score on the valid graphs after each boosting
# round (gbdt) or evaluated epoch (the gnn), in the fit's final training. Nobody listens unless a caller
# asks (``tpugraphs tune``, to prune hopeless trials): a fit is the same with or without a listener.
_LISTENER: ContextVar[Callable[[int, float], None] | None] = ContextVar("validation_listener", default=None)


@contextmanager
def validation_listener(listener: Callable[[int, float], None] | None) -> Iterator[None]:
    """Within the block, ``report_validation(step, score)`` calls ``listener(step, score)`` (None: nobody
    hears it); an exception the listener raises (a pruned trial) leaves ``fit`` as it is."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


def report_validation(step: int, score: float) -> None:
    """A method's valid score at ``step`` (a boosting round, an epoch), for whoever listens."""
    listener = _LISTENER.get()
    if listener is not None:
        listener(step, score)
