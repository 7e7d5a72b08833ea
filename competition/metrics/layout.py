"""The layout metric: Kendall tau-b between the submitted ranks and the runtimes, per graph and for
every graph of a solution at once.

How the batch tau works: the predicted ranks have no ties, so with ``n0 = n (n - 1) / 2`` pairs,
``t_y`` of them tied in runtime, tau-b is ``(n0 - t_y - 2 n_d) / sqrt(n0 (n0 - t_y))`` where ``n_d``
counts the strict inversions of ``runtimes[order]`` (pairs listed in the wrong order). One stable
sort of all graphs' runtimes (kept within each graph) gives the tie groups (a diff) and feeds an
inversion count over the bits of the position, top-down, all graphs at once: ``log2(max n)``
linear passes, no Python loop over graphs or configs (``competition.metrics.pair_counts``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from competition.metrics.checks import check_offsets, check_permutations, check_positive
from competition.metrics.pair_counts import count_inversions, count_tied_pairs, sort_within_graphs


def kendall_tau_score(order: Sequence[int] | np.ndarray, runtimes: Sequence[float] | np.ndarray) -> float:
    """Layout score of one graph: Kendall tau-b between the ranks ``order`` gives and ``runtimes``.

    Args:
        order: (n,) the submitted ordering, a permutation of ``0..n-1``, fastest config first. It is
            turned into ranks (``rank[order[i]] = i``) before comparing.
        runtimes: (n,) measured runtimes, positive; ties are handled as tau-b.

    Returns:
        tau in [-1, 1]: 1.0 for the true order, -1.0 for its reverse; 0.0 when undefined (n < 2 or
        all runtimes equal, see "Undefined cases").
    """
    runtimes = check_positive(runtimes, "runtimes")
    offsets = np.array([0, runtimes.shape[0]], dtype=np.int64)
    return float(_kendall_tau(order, prepare_layout_labels(runtimes, offsets), name_graphs=False)[0])


def kendall_tau_scores(orders: np.ndarray, runtimes: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Layout score of every graph at once (packed inputs, see ``competition.metrics``).

    Args:
        orders: (N,) int, the submitted orderings concatenated; graph ``g``'s slice is a permutation
            of ``0..n_g-1``, fastest first.
        runtimes: (N,) runtimes concatenated, positive, aligned with the configs (not the orders).
        offsets: (G+1,) int, graph ``g`` owns ``offsets[g]:offsets[g + 1]`` of both arrays.

    Returns:
        (G,) float64 tau-b per graph, 0.0 where undefined.
    """
    return score_layout_labels(orders, prepare_layout_labels(runtimes, offsets))


@dataclass(frozen=True)
class LayoutLabels:
    """The solution side of the layout metric, computed once per solution (``prepare_layout_labels``).

    ``rank_key`` replaces each runtime by its dense rank among all graphs' runtimes, graph-major
    (graph 0's ranks first), so one stable sort of the keys in submitted order sorts every graph's
    positions by runtime at once; while there are at most 65,536 distinct keys they are uint16,
    which numpy radix-sorts in linear time. Tie counts depend on the runtimes only.
    """

    rank_key: np.ndarray  # (N,) uint16 or int64: dense rank of each config's runtime, graph-major
    offsets: np.ndarray  # (G+1,) int64
    total: np.ndarray  # (G,) float64 pairs of configs per graph
    untied: np.ndarray  # (G,) float64 pairs with distinct runtimes


def prepare_layout_labels(runtimes: np.ndarray, offsets: np.ndarray) -> LayoutLabels:
    """Check the layout labels and precompute what every scoring of them needs."""
    runtimes = check_positive(runtimes, "runtimes")
    offsets = check_offsets(offsets, runtimes.shape[0])
    sizes = np.diff(offsets)
    by_runtime = sort_within_graphs(runtimes, offsets)
    sorted_runtimes = runtimes[by_runtime]
    tied = count_tied_pairs(sorted_runtimes, offsets).astype(np.float64)
    starts_key = np.ones(runtimes.shape[0], dtype=bool)  # a new key: a new runtime or a new graph
    starts_key[1:] = sorted_runtimes[1:] != sorted_runtimes[:-1]
    starts_key[offsets[:-1][offsets[:-1] < runtimes.shape[0]]] = True
    dense = np.cumsum(starts_key) - 1
    key_dtype = np.uint16 if dense.size == 0 or dense[-1] <= np.iinfo(np.uint16).max else np.int64
    rank_key = np.empty(runtimes.shape[0], dtype=key_dtype)
    rank_key[by_runtime] = dense
    total = sizes.astype(np.float64) * (sizes - 1) / 2
    return LayoutLabels(rank_key=rank_key, offsets=offsets, total=total, untied=total - tied)


def score_layout_labels(orders: np.ndarray, labels: LayoutLabels) -> np.ndarray:
    """(G,) tau-b of one submission's concatenated ``orders`` (as in kendall_tau_scores)."""
    return _kendall_tau(orders, labels, name_graphs=True)


def _kendall_tau(orders: object, labels: LayoutLabels, *, name_graphs: bool) -> np.ndarray:
    global_order = check_permutations(orders, labels.offsets, name_graphs=name_graphs)
    if labels.total.shape[0] == 0:
        return np.zeros(0, dtype=np.float64)
    # Positions sorted by (graph, runtime), ties by position: graph-major keys do it in one sort.
    by_runtime = np.argsort(labels.rank_key[global_order], kind="stable")
    discordant = count_inversions(by_runtime, labels.offsets).astype(np.float64)
    # tau-b = (untied - 2 discordant) / sqrt(total * untied), written so that the true order and
    # its reverse give exactly 1.0 and -1.0 when there are no ties (both factors are then exact).
    tau = np.zeros(labels.total.shape[0], dtype=np.float64)
    defined = labels.untied > 0
    u, t, d = labels.untied[defined], labels.total[defined], discordant[defined]
    tau[defined] = (u - 2 * d) / u * np.sqrt(u / t)
    return np.clip(tau, -1.0, 1.0)

