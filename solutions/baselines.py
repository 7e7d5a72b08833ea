"""Non-learned baselines: the floor every results table starts from.

- ``sample``: the competition's ``sample_submission.csv`` ranking (config order as stored).
- ``random``: a seeded random ranking of every graph's configs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from competition.collections import COLLECTIONS, Collection, parse_row_id
from competition.graphs import list_split, read_config_count
from competition.predictions import ranking_from_predictions


def _test_graphs(data_dir: str | Path, collections: tuple[Collection, ...]) -> list[tuple[str, int]]:
    """(row_id, number of configs) of every test graph of the chosen collections."""
    return [
        (collection.row_id(path.stem), read_config_count(path))
        for collection in collections
        for path in list_split(data_dir, collection, "test")
    ]


def sample_rows(data_dir: str | Path, collections: tuple[Collection, ...] = COLLECTIONS) -> dict[str, np.ndarray]:
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
