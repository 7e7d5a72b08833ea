"""The valid graphs of a collection split by graph into a search half and a held-out half, the sources
that read only one half, and the fingerprint that tells one data set from another.

A trial is fitted on the train split, selects its round or epoch on the search half and is scored there;
the held-out half is read only once the search is over, to compare its best settings with the defaults
(``solutions.tune.selection``). The split is a seeded shuffle of the graphs' file names, so every process
of a shared study (and every machine with a copy of the data) draws the same halves.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from competition.collections import Collection
from competition.data.graphs import Graph, list_split, load_graph
from competition.data.processed_cache import build_cache, split_cache_dir
from solutions.methods.base import SplitSource


@dataclass(frozen=True)
class GraphSubset(SplitSource):
    """Some graphs of one split (by file stem), read as a ``SplitSource`` reads a whole split."""

    stems: frozenset[str] = frozenset()

    def entries(self) -> list[tuple[Collection, Path]]:
        return [(c, path) for c, path in super().entries() if path.stem in self.stems]

    def __iter__(self) -> Iterator[tuple[str, Graph]]:
        for collection, path in self.entries():
            yield collection.row_id(path.stem), load_graph(path, collection.task.name)

    def graphs(self, cache_dir: Path | None = None) -> Iterator[tuple[str, Graph]]:
        if cache_dir is None or not self.collection.task.cached:
            yield from self
            return
        for collection, path in self.entries():
            cached = build_cache(path, split_cache_dir(cache_dir, collection, self.split) / path.stem)
            try:
                yield collection.row_id(path.stem), cached.layout_view()
            finally:
                cached.close()

    def __len__(self) -> int:
        return len(self.entries())


@dataclass(frozen=True)
class ValidSplit:
    """The valid graphs (file stems) the search selects and scores on, and those it never reads."""

    search: tuple[str, ...]
    held_out: tuple[str, ...]

    def sources(self, data_dir: Path, collection: Collection) -> tuple[GraphSubset, GraphSubset]:
        return (GraphSubset(data_dir, collection, "valid", frozenset(self.search)),
                GraphSubset(data_dir, collection, "valid", frozenset(self.held_out)))


def split_valid(stems: list[str], holdout: float, seed: int) -> ValidSplit:
    """A seeded shuffle of the valid graphs, ``holdout`` of them (rounded, at least one) held out and at
    least one left to search on; ValueError when there are fewer than two graphs.

    >>> split_valid(["a", "b", "c", "d"], 0.5, 0).held_out
    ('b', 'd')
    """
    if len(stems) < 2:
        raise ValueError(f"{len(stems)} valid graph{'s' if len(stems) != 1 else ''}: the search needs at "
                         "least 2, one to search on and one to hold out")
    order = np.random.default_rng([int(seed), 0x7A11]).permutation(len(stems))
    held = min(len(stems) - 1, max(1, math.floor(holdout * len(stems) + 0.5)))
    chosen = sorted(stems)
    return ValidSplit(search=tuple(sorted(chosen[i] for i in order[held:])),
                      held_out=tuple(sorted(chosen[i] for i in order[:held])))


def valid_stems(data_dir: Path, collection: Collection) -> list[str]:
    return [path.stem for path in list_split(data_dir, collection, "valid")]


def data_fingerprint(data_dir: Path, collection: Collection) -> str:
    """What tells one data set from another: the names and sizes of the collection's train and valid files
    (not the folder, so copies on two machines agree), hashed."""
    digest = hashlib.sha256()
    for split in ("train", "valid"):
        for path in list_split(data_dir, collection, split):
            digest.update(f"{split}/{path.name}:{path.stat().st_size}\n".encode())
    return digest.hexdigest()[:16]
