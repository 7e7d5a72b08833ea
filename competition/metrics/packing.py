"""Packing helpers for callers that hold one array per graph: the batch metrics take per-config
arrays of all graphs concatenated, plus ``offsets`` (G+1,), and tile rows as a (G, k) array padded
with -1."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from competition.metrics.checks import PADDING, check_k


def pack_ragged(
    arrays: Sequence[Sequence[float] | np.ndarray], *, dtype: object = None
) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate per-graph 1-D arrays; returns ``(values (N,), offsets (G+1,) int64)``.

    >>> values, offsets = pack_ragged([[3, 1], [2]])
    >>> values.tolist(), offsets.tolist()
    ([3, 1, 2], [0, 2, 3])
    """
    parts = [np.asarray(a, dtype=dtype).reshape(-1) for a in arrays]
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([p.shape[0] for p in parts], out=offsets[1:])
    values = np.concatenate(parts) if parts else np.zeros(0, dtype=dtype or np.float64)
    return values, offsets


def pack_top_configs(rows: Sequence[Sequence[int] | np.ndarray], *, k: int = 5) -> np.ndarray:
    """(G, k) int64 rows of the first ``k`` listed indices, padded with -1 (see tile_slowdown_scores).

    >>> pack_top_configs([[4, 0, 1, 2, 3, 9], [1, 0]], k=5).tolist()
    [[4, 0, 1, 2, 3], [1, 0, -1, -1, -1]]
    """
    k = check_k(k)
    packed = np.full((len(rows), k), PADDING, dtype=np.int64)
    for g, row in enumerate(rows):  # G rows of at most k cells: cheap
        head = np.asarray(row, dtype=np.int64)[:k]
        packed[g, : head.shape[0]] = head
    return packed

