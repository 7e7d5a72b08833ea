"""Non-learned baselines: the floor every results table starts from.

- ``sample_rows``: the competition's ``sample_submission.csv`` ranking (config order as stored).
- ``random_rows``: a seeded random ranking of every test graph's configs, straight to submission rows.
- ``RandomMethod``: the same idea as a ``RankingMethod`` (``tpugraphs solve --method random``), seeded
  per graph so its predictions do not depend on the order graphs are predicted in.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from competition.collections import COLLECTIONS, Collection, parse_row_id
from competition.data.graphs import Graph, list_split, read_config_count
from competition.predictions import ranking_from_predictions
from solutions.methods.base import FitOptions, SplitSource
from solutions.store.saved import ModelFile

RANDOM_FILE = "random.json"
SAVED = ModelFile("random", RANDOM_FILE, indent=None)


def _test_graphs(data_dir: str | Path, collections: tuple[Collection, ...]) -> list[tuple[str, int]]:
    """(row_id, number of configs) of every test graph of the chosen collections."""
    return [
        (collection.row_id(path.stem), read_config_count(path))
        for collection in collections
        for path in list_split(data_dir, collection, "test")
    ]


def sample_rows(data_dir: str | Path,
                collections: tuple[Collection, ...] = COLLECTIONS) -> dict[str, np.ndarray]:
    """The identity ranking, as in ``sample_submission.csv``."""
    rows = {}
    for row_id, n in _test_graphs(data_dir, collections):
        collection, _ = parse_row_id(row_id)
        rows[row_id] = ranking_from_predictions(collection, np.arange(n))
    return rows


def random_rows(
    data_dir: str | Path, collections: tuple[Collection, ...] = COLLECTIONS, *, seed: int = 0
) -> dict[str, np.ndarray]:
    """A random ranking per graph; the same seed gives the same rows."""
    rng = np.random.default_rng(seed)
    rows = {}
    for row_id, n in _test_graphs(data_dir, collections):
        collection, _ = parse_row_id(row_id)
        rows[row_id] = ranking_from_predictions(collection, rng.random(n))
    return rows


def graph_fingerprint(graph: Graph) -> int:
    """A 64-bit digest of a graph's structure and config count: the same file always gives the same value.

    Hashes ``node_opcode``, ``edge_index``, ``node_feat`` and the config count (not the configs: a
    100k-config layout tensor is 872 MB and the structure already tells graphs apart).
    """
    digest = hashlib.blake2b(digest_size=8)
    for array in (graph.node_opcode, graph.edge_index, graph.node_feat):
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.tobytes())
    digest.update(str(graph.num_configs).encode())
    return int.from_bytes(digest.digest(), "little")


class RandomMethod:
    """A seeded random score per config: the floor of every results table.

    Each graph gets its own generator, seeded from ``(seed, graph_fingerprint(graph))``, so a graph's
    predictions depend only on the seed and the graph itself, not on which graphs were predicted before.
    """

    name = "random"
    learned = False

    def __init__(self, seed: int = 0) -> None:
        self.seed = int(seed)

    def fit(self, collection: Collection, train: SplitSource, valid: SplitSource,
            options: FitOptions) -> None:
        """Nothing to learn; adopts ``options.seed`` so a run's seed decides the ranking."""
        self.seed = int(options.seed)

    def predict(self, collection: Collection, graph: Graph) -> np.ndarray:
        """(c,) float64 uniform scores in [0, 1), lower = faster."""
        rng = np.random.default_rng([self.seed & 0xFFFFFFFFFFFFFFFF, graph_fingerprint(graph)])
        return rng.random(graph.num_configs)

    def save(self, path: Path) -> None:
        """Write ``path/random.json`` holding the seed (``path`` is a directory, created if needed)."""
        SAVED.write(path, {"seed": self.seed})

    @classmethod
    def load(cls, path: Path) -> RandomMethod:
        meta = SAVED.read(path)
        return meta.rebuild(lambda: cls(seed=int(meta["seed"])), KeyError)
