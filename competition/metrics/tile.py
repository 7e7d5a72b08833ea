"""The tile metric: slowdown of the best listed config relative to the best config, per graph and
for every graph of a solution at once (``TileLabels``: what every scoring of one solution shares)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from competition.metrics.checks import (
    PADDING,
    check_1d,
    check_k,
    check_offsets,
    check_positive,
    check_same_length,
    check_top_configs,
    graph_label,
)


def tile_slowdown_score(
    top_configs: Sequence[int] | np.ndarray,
    runtimes: Sequence[float] | np.ndarray,
    normalizers: Sequence[float] | np.ndarray,
    *,
    k: int = 5,
) -> float:
    """Tile score of one graph: ``2 - min(y[top_configs[:k]]) / min(y)``, ``y = runtimes / normalizers``.

    Args:
        top_configs: (m,) config indices, fastest first; the first ``min(k, n)`` must be distinct
            indices in ``0..n-1``; entries after the ``k``-th are ignored.
        runtimes: (n,) measured runtimes, positive.
        normalizers: (n,) runtime of the default config for each run, positive.
        k: how many listed configs count.

    Returns:
        1.0 when the fastest config is among the first ``k`` listed, less otherwise (unbounded below).
    """
    k = check_k(k)
    runtimes = check_positive(runtimes, "runtimes")
    normalizers = check_positive(normalizers, "normalizers")
    check_same_length(runtimes, "runtimes", normalizers, "normalizers")
    if runtimes.shape[0] == 0:
        raise ValueError("runtimes must list at least one config; got none")
    offsets = np.array([0, runtimes.shape[0]], dtype=np.int64)
    top = check_1d(top_configs, "top_configs", "iu")
    if (top[:k] == PADDING).any():  # -1 is padding only in the packed batch form
        raise ValueError(f"top_configs must hold config indices in 0..{runtimes.shape[0] - 1}; got -1")
    top = check_top_configs(top[None, :], np.diff(offsets), k, name_graphs=False)[0]
    with np.errstate(over="ignore", under="ignore"):  # extreme ratios are refused below
        y = np.divide(runtimes, normalizers, dtype=np.float64)
    best, best_listed = y.min(keepdims=True), y[top].min(keepdims=True)
    _check_ratio_range(best, best_listed, name_graphs=False)
    return float(2.0 - best_listed[0] / best[0])


def tile_slowdown_scores(
    top_configs: np.ndarray,
    runtimes: np.ndarray,
    normalizers: np.ndarray,
    offsets: np.ndarray,
    *,
    k: int = 5,
) -> np.ndarray:
    """Tile score of every graph at once (packed inputs, see ``competition.metrics``).

    Args:
        top_configs: (G, m) int, row ``g`` the indices listed for graph ``g`` (local to it), fastest
            first, padded with -1 when the graph has fewer than ``k`` configs; only the first ``k``
            columns count.
        runtimes: (N,) runtimes of all graphs concatenated, positive.
        normalizers: (N,) normalizers, aligned with ``runtimes``, positive.
        offsets: (G+1,) int, graph ``g`` owns configs ``offsets[g]:offsets[g + 1]``; every graph
            needs at least one config.
        k: how many listed configs count.

    Returns:
        (G,) float64 scores.
    """
    return score_tile_labels(top_configs, prepare_tile_labels(runtimes, normalizers, offsets), k=k)


@dataclass(frozen=True)
class TileLabels:
    """The solution side of the tile metric, computed once per solution (``prepare_tile_labels``).

    A leaderboard scores many submissions against one solution: the normalised runtimes and each
    graph's best are the same every time, so only the gather of the listed configs is per submission.
    """

    y: np.ndarray  # (N,) float64 runtime / normalizer, graphs concatenated
    best: np.ndarray  # (G,) float64 min of y per graph
    offsets: np.ndarray  # (G+1,) int64
    sizes: np.ndarray  # (G,) int64 configs per graph


def prepare_tile_labels(runtimes: np.ndarray, normalizers: np.ndarray, offsets: np.ndarray) -> TileLabels:
    """Check the tile labels and precompute what every scoring of them needs."""
    runtimes = check_positive(runtimes, "runtimes")
    normalizers = check_positive(normalizers, "normalizers")
    check_same_length(runtimes, "runtimes", normalizers, "normalizers")
    offsets = check_offsets(offsets, runtimes.shape[0])
    sizes = np.diff(offsets)
    if (sizes == 0).any():
        g = int(np.flatnonzero(sizes == 0)[0])
        raise ValueError(f"every tile graph needs at least one config; graph {g} has none")
    with np.errstate(over="ignore", under="ignore"):  # extreme ratios are refused when scoring
        y = np.divide(runtimes, normalizers, dtype=np.float64)
    best = np.minimum.reduceat(y, offsets[:-1]) if sizes.shape[0] else np.zeros(0)  # no graph is empty
    return TileLabels(y=y, best=best, offsets=offsets, sizes=sizes)


def score_tile_labels(top_configs: np.ndarray, labels: TileLabels, *, k: int = 5) -> np.ndarray:
    """(G,) tile scores of one submission's ``top_configs`` (as in tile_slowdown_scores)."""
    k = check_k(k)
    top = np.asarray(top_configs)
    if labels.sizes.shape[0] == 0:
        if top.size:
            raise ValueError(f"top_configs must have one row per graph; got shape {top.shape} for none")
        return np.zeros(0, dtype=np.float64)
    top = check_top_configs(top, labels.sizes, k, name_graphs=True)
    is_listed = top != PADDING
    listed = labels.y[np.where(is_listed, top + labels.offsets[:-1, None], 0)]
    best_listed = np.where(is_listed, listed, np.inf).min(axis=1)  # every row lists >= 1 config
    _check_ratio_range(labels.best, best_listed, name_graphs=True)
    return 2.0 - best_listed / labels.best


def _check_ratio_range(best: np.ndarray, best_listed: np.ndarray, *, name_graphs: bool) -> None:
    # Positive finite inputs can still give a ratio of 0 or inf (e.g. 1e-300 / 1e300); refuse
    # those rather than return inf or NaN.
    bad = ~((best > 0) & (best_listed < np.inf))
    if bad.any():
        g = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"runtimes / normalizers{graph_label(g, name_graphs)} must be positive and finite; "
            f"the ratio under- or overflows float64 (best {best[g]}, best listed {best_listed[g]})"
        )

