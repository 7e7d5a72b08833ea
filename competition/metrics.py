"""The official metrics: tile slowdown and layout Kendall tau, per graph and vectorised over graphs.

Two scores, both higher-is-better, each averaged over the graphs of a collection (docs/competition.md, The metric):

- **tile slowdown** (``tile:xla``), per graph: ``2 - min(y[top_configs[:k]]) / min(y)`` with
  ``y = runtimes / normalizers`` in float64 and ``k = 5``. 1.0 when the best config is among the
  first ``k`` listed; unbounded below.
- **Kendall tau** (``layout:*``), per graph: tau-b between the *ranks* the submitted ordering gives
  each config (``rank[order[i]] = i``, fastest first) and the measured runtimes; the same value as
  ``scipy.stats.kendalltau(ranks, runtimes)`` wherever that is defined. Computing it on the
  ordering itself is a classic bug (the tests keep an example).

The per-graph functions (``tile_slowdown_score``, ``kendall_tau_score``) are the readable
definitions. The batch functions (``tile_slowdown_scores``, ``kendall_tau_scores``) score a whole
submission at once on *packed* inputs: per-config arrays of all graphs concatenated, plus
``offsets`` (G+1,) with graph ``g`` owning ``offsets[g]:offsets[g + 1]``. Indices in orders and
``top_configs`` stay local to their graph. ``pack_ragged`` and ``pack_top_configs`` build them.

How the batch tau works: the predicted ranks have no ties, so with ``n0 = n (n - 1) / 2`` pairs,
``t_y`` of them tied in runtime, tau-b is ``(n0 - t_y - 2 n_d) / sqrt(n0 (n0 - t_y))`` where ``n_d``
counts the strict inversions of ``runtimes[order]`` (pairs listed in the wrong order). One stable
sort of all graphs' runtimes (kept within each graph) gives the tie groups (a diff) and feeds an
inversion count over the bits of the position, top-down, all graphs at once: ``log2(max n)``
linear passes, no Python loop over graphs or configs (see ``_count_inversions``).

Its speed is in BENCHMARKS.md (Scoring).

Undefined cases
---------------
Decided here, tested in ``tests/test_metrics.py``; no function ever returns NaN or inf.

- **Layout graph with fewer than 2 configs, or with all runtimes equal**: tau is undefined
  (scipy returns NaN). Score **0.0**: the graph carries no ranking information, so it neither
  rewards nor punishes a submission, and 0.0 is what a random ordering earns on average.
- **Ties in runtimes**: tau-b, as scipy's default (tied pairs are neither concordant nor
  discordant and shrink the denominator). Tile: ties do not matter, only minima are compared.
- **Tile graph with fewer than k configs**: its row lists all of them; the formula applies as is
  (so the score is exactly 1.0). A row listing fewer than ``min(k, n)`` configs is an error.
- **Tile rows with more than k indices**: only the first ``k`` count and only those are checked
  (the upstream baseline writes 10; docs/competition.md, Submission format, tolerates extras).
- **Empty input (G = 0)**: the batch functions return an empty float64 array.
- **Runtimes or normalizers that are zero, negative or not finite**: ValueError. That is a
  host-side data problem; in particular the released test npz files carry all-zero runtimes, and
  scoring against them must fail loudly instead of returning 0.0 for every graph.
- **Tile graph with no config**: ValueError (``min(y)`` does not exist). A layout graph with no
  config scores 0.0 like any graph with fewer than 2.
- **Tile rows listing a config twice**: ValueError; a repeat would let a row list fewer than
  ``min(k, n)`` configs in effect.
- **A ratio ``runtimes / normalizers`` that under- or overflows float64** (e.g. 1e-300 / 1e300)
  where it decides a minimum: ValueError, rather than a score of inf or NaN.
- **Exactness**: without ties the true order scores exactly 1.0 and its reverse exactly -1.0.

Examples
--------
>>> kendall_tau_score([2, 0, 1], [20, 30, 10])  # config 2 fastest, then 0, then 1: all right
1.0
>>> tile_slowdown_score([1], [4, 2], [2, 2], k=1)
1.0
>>> kendall_tau_scores([0, 1, 1, 0, 0], [1, 2, 1, 2, 7], [0, 2, 4, 5]).tolist()
[1.0, -1.0, 0.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "KENDALL_TAU",
    "TILE_SLOWDOWN",
    "Metric",
    "kendall_tau_score",
    "kendall_tau_scores",
    "pack_ragged",
    "pack_top_configs",
    "tile_slowdown_score",
    "tile_slowdown_scores",
]

PADDING = -1  # marks unused cells of a packed top_configs row


# ---------------------------------------------------------------------------------------------
# Checks: each raises ValueError naming the rule that was broken and what was received.


def _check_1d(values: object, name: str, kinds: str) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array; got shape {array.shape}")
    if array.size and array.dtype.kind not in kinds:
        wanted = "integers" if kinds == "iu" else "real numbers"
        raise ValueError(f"{name} must hold {wanted}; got dtype {array.dtype}")
    return array


def _check_positive(values: object, name: str) -> np.ndarray:
    """A 1-D array of finite, strictly positive numbers (measured times), as given."""
    array = _check_1d(values, name, "iuf")
    # Two reductions and no temporary array on the good path: this runs on ~1M runtimes.
    if array.size == 0 or (array.min() > 0 and array.max() < np.inf):  # NaN fails both
        return array
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        where = int(np.flatnonzero(~np.isfinite(array))[0])
        raise ValueError(f"{name} must be finite; entry {where} is {array[where]}")
    where = int(np.flatnonzero(array <= 0)[0])
    raise ValueError(
        f"{name} must be positive (measured times); entry {where} is {array[where]} "
        "(all-zero runtimes mean unlabeled test data)"
    )


def _check_same_length(a: np.ndarray, a_name: str, b: np.ndarray, b_name: str) -> None:
    if a.shape[0] != b.shape[0]:
        raise ValueError(
            f"{a_name} and {b_name} must have the same length (one entry per config); "
            f"got {a.shape[0]} and {b.shape[0]}"
        )


def _check_offsets(offsets: object, n_values: int) -> np.ndarray:
    """Graph boundaries (G+1,): start at 0, never decrease, end at the number of configs."""
    array = _check_1d(offsets, "offsets", "iu")
    if array.size == 0:
        raise ValueError("offsets must have G+1 entries (graph boundaries, starting at 0); got none")
    array = array.astype(np.int64, copy=False)
    if array[0] != 0:
        raise ValueError(f"offsets must start at 0; got {array[0]}")
    if array[-1] != n_values:
        raise ValueError(f"offsets must end at the number of configs ({n_values}); got {array[-1]}")
    sizes = np.diff(array)
    if (sizes < 0).any():
        g = int(np.flatnonzero(sizes < 0)[0])
        raise ValueError(f"offsets must not decrease; offsets[{g + 1}] < offsets[{g}]")
    return array


def _check_permutations(orders: object, offsets: np.ndarray, *, name_graphs: bool) -> np.ndarray:
    """Every graph's slice of ``orders`` is a permutation of 0..n-1; returns global indices."""
    name = "orders" if name_graphs else "order"
    local = _check_1d(orders, name, "iu").astype(np.int64, copy=False)
    if local.shape[0] != offsets[-1]:
        raise ValueError(
            f"{name} and runtimes must have the same length (one entry per config); "
            f"got {local.shape[0]} and {offsets[-1]}"
        )
    sizes = np.diff(offsets)
    out_of_range = (local < 0) | (local >= np.repeat(sizes, sizes))
    if out_of_range.any():
        i = int(np.flatnonzero(out_of_range)[0])
        g = _graph_of(i, offsets)
        raise ValueError(
            f"{name}{_graph_label(g, name_graphs)} must be a full permutation of 0..{sizes[g] - 1}; "
            f"position {i - offsets[g]} holds {local[i]}"
        )
    global_index = local + np.repeat(offsets[:-1], sizes)
    # All in range, so a repeated index leaves some config unlisted.
    listed = np.bincount(global_index, minlength=local.shape[0]) > 0
    if not listed.all():
        missing = int(np.flatnonzero(~listed)[0])
        g = _graph_of(missing, offsets)
        raise ValueError(
            f"{name}{_graph_label(g, name_graphs)} must be a full permutation of 0..{sizes[g] - 1}; "
            f"config {missing - offsets[g]} is missing"
        )
    return global_index


def _graph_of(position: int, offsets: np.ndarray) -> int:
    return int(np.searchsorted(offsets, position, side="right") - 1)


def _graph_label(g: int, name_graphs: bool) -> str:
    # The per-graph functions pass a single graph; naming "graph 0" there would only confuse.
    return f" of graph {g}" if name_graphs else ""


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be a positive integer; got {k!r}")
    return int(k)


def _check_top_configs(top: np.ndarray, sizes: np.ndarray, k: int, *, name_graphs: bool) -> np.ndarray:
    """Rows of ``(G, m)`` local indices padded with -1; returns the first k columns as int64.

    Each row must list ``min(k, n)`` distinct configs of its graph first; padding only after them.
    """
    if top.ndim != 2 or top.shape[0] != sizes.shape[0]:
        raise ValueError(
            f"top_configs must have shape (G, k) = ({sizes.shape[0]}, k), one row per graph; got {top.shape}"
        )
    if top.size and top.dtype.kind not in "iu":
        raise ValueError(f"top_configs must hold integers; got dtype {top.dtype}")
    top = top[:, :k].astype(np.int64, copy=False)
    is_listed = top != PADDING
    bad = (top < PADDING) | (top >= sizes[:, None])
    if bad.any():
        g, j = (int(x) for x in np.argwhere(bad)[0])
        raise ValueError(
            f"top_configs{_graph_label(g, name_graphs)} must hold config indices in 0..{sizes[g] - 1}; "
            f"entry {j} is {top[g, j]}"
        )
    n_listed = is_listed.sum(axis=1)
    required = np.minimum(k, sizes)
    # Listed entries must come first: the count of leading listed cells equals the listed count.
    leading = np.cumprod(is_listed, axis=1).sum(axis=1)
    short = (leading < required) | (leading != n_listed)
    if short.any():
        g = int(np.flatnonzero(short)[0])
        raise ValueError(
            f"top_configs{_graph_label(g, name_graphs)} must list min(k, n) = {required[g]} configs"
            f"{' before any padding (-1)' if name_graphs else ''}; got {top[g].tolist()}"
        )
    ordered = np.sort(top, axis=1)
    repeated = (ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] != PADDING)
    if repeated.any():
        g, j = (int(x) for x in np.argwhere(repeated)[0])
        raise ValueError(
            f"top_configs{_graph_label(g, name_graphs)} must list distinct configs; "
            f"config {ordered[g, j]} is listed twice"
        )
    return top


# ---------------------------------------------------------------------------------------------
# Tile: slowdown of the best listed config relative to the best config.


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
    k = _check_k(k)
    runtimes = _check_positive(runtimes, "runtimes")
    normalizers = _check_positive(normalizers, "normalizers")
    _check_same_length(runtimes, "runtimes", normalizers, "normalizers")
    if runtimes.shape[0] == 0:
        raise ValueError("runtimes must list at least one config; got none")
    offsets = np.array([0, runtimes.shape[0]], dtype=np.int64)
    top = _check_1d(top_configs, "top_configs", "iu")
    if (top[:k] == PADDING).any():  # -1 is padding only in the packed batch form
        raise ValueError(f"top_configs must hold config indices in 0..{runtimes.shape[0] - 1}; got -1")
    top = _check_top_configs(top[None, :], np.diff(offsets), k, name_graphs=False)[0]
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
    """Tile score of every graph at once (packed inputs, see the module docstring).

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
    runtimes = _check_positive(runtimes, "runtimes")
    normalizers = _check_positive(normalizers, "normalizers")
    _check_same_length(runtimes, "runtimes", normalizers, "normalizers")
    offsets = _check_offsets(offsets, runtimes.shape[0])
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
    k = _check_k(k)
    top = np.asarray(top_configs)
    if labels.sizes.shape[0] == 0:
        if top.size:
            raise ValueError(f"top_configs must have one row per graph; got shape {top.shape} for none")
        return np.zeros(0, dtype=np.float64)
    top = _check_top_configs(top, labels.sizes, k, name_graphs=True)
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
            f"runtimes / normalizers{_graph_label(g, name_graphs)} must be positive and finite; "
            f"the ratio under- or overflows float64 (best {best[g]}, best listed {best_listed[g]})"
        )


# ---------------------------------------------------------------------------------------------
# Layout: Kendall tau-b between the submitted ranks and the runtimes.


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
    runtimes = _check_positive(runtimes, "runtimes")
    offsets = np.array([0, runtimes.shape[0]], dtype=np.int64)
    return float(_kendall_tau(order, prepare_layout_labels(runtimes, offsets), name_graphs=False)[0])


def kendall_tau_scores(orders: np.ndarray, runtimes: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Layout score of every graph at once (packed inputs, see the module docstring).

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
    runtimes = _check_positive(runtimes, "runtimes")
    offsets = _check_offsets(offsets, runtimes.shape[0])
    sizes = np.diff(offsets)
    by_runtime = _sort_within_graphs(runtimes, offsets)
    sorted_runtimes = runtimes[by_runtime]
    tied = _count_tied_pairs(sorted_runtimes, offsets).astype(np.float64)
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
    global_order = _check_permutations(orders, labels.offsets, name_graphs=name_graphs)
    if labels.total.shape[0] == 0:
        return np.zeros(0, dtype=np.float64)
    # Positions sorted by (graph, runtime), ties by position: graph-major keys do it in one sort.
    by_runtime = np.argsort(labels.rank_key[global_order], kind="stable")
    discordant = _count_inversions(by_runtime, labels.offsets).astype(np.float64)
    # tau-b = (untied - 2 discordant) / sqrt(total * untied), written so that the true order and
    # its reverse give exactly 1.0 and -1.0 when there are no ties (both factors are then exact).
    tau = np.zeros(labels.total.shape[0], dtype=np.float64)
    defined = labels.untied > 0
    u, t, d = labels.untied[defined], labels.total[defined], discordant[defined]
    tau[defined] = (u - 2 * d) / u * np.sqrt(u / t)
    return np.clip(tau, -1.0, 1.0)


def _sort_within_graphs(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """(N,) int64 indices that sort each graph's slice of ``values``, ties by position.

    Graphs keep their ranges: the result is ``offsets[g]:offsets[g + 1]`` sorted within itself.
    """
    sizes = np.diff(offsets)
    by_value = np.argsort(values, kind="stable")
    graph_of = np.repeat(np.arange(sizes.shape[0]), sizes)[by_value]
    if sizes.shape[0] <= np.iinfo(np.uint16).max + 1:
        graph_of = graph_of.astype(np.uint16)  # numpy radix-sorts 16-bit keys: linear time
    return by_value[np.argsort(graph_of, kind="stable")]


def _count_tied_pairs(sorted_values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """(G,) int64: pairs of equal values within each graph, given each graph's slice sorted."""
    n_values = sorted_values.shape[0]
    starts_run = np.ones(n_values, dtype=bool)  # runs of equal values, never across graphs
    starts_run[1:] = sorted_values[1:] != sorted_values[:-1]
    starts_run[offsets[:-1][offsets[:-1] < n_values]] = True
    run_starts = np.flatnonzero(starts_run)
    run_length = np.diff(np.r_[run_starts, n_values])
    pairs_before = np.r_[0, np.cumsum(run_length * (run_length - 1) // 2)]
    first_run = np.searchsorted(run_starts, offsets)  # runs of graph g: first_run[g]:first_run[g+1]
    return pairs_before[first_run[1:]] - pairs_before[first_run[:-1]]


def _count_inversions(by_value: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """(G,) int64: pairs of positions ``i < j`` in a graph whose values are strictly out of order.

    ``by_value`` sorts each graph's positions by (value, position) (see _sort_within_graphs); the
    values themselves are no longer needed.

    Top-down over the bits of the position, all graphs at once. At width ``w`` (a power of two,
    largest first) every graph is cut into groups of ``2w`` positions, each a left half (``w``
    positions) and a right half. The array ``local`` lists, within each group's range of slots,
    the group's positions in value order. A right-half position is out of order with exactly
    the left-half positions listed *after* it (larger value; equal values list the left one first,
    as it has the smaller position, so ties never count): ``w`` minus the left-half positions
    listed before it. Each pair ``i < j`` is counted once, at the width where ``i`` and ``j``
    first fall into different halves. A stable partition of each group (left half first) then
    gives the listing for width ``w / 2``: linear work per width, ``log2(max n)`` widths.
    """
    sizes = np.diff(offsets)
    n_values = by_value.shape[0]
    if n_values == 0:
        return np.zeros(sizes.shape[0], dtype=np.int64)
    slot = np.arange(n_values, dtype=np.int64)
    slot_local = slot - np.repeat(offsets[:-1], sizes)  # position of each slot within its graph
    local = slot_local[by_value]  # the listing: positions (local) in value order within graphs
    inversions_at = np.zeros(n_values, dtype=np.int64)  # per slot; slots stay within their graph
    # Work arrays reused at every width (out=): fresh temporaries cost page faults that can
    # double the time of this loop, depending on the allocator's state.
    partitioned = np.empty_like(local)
    is_right = np.empty(n_values, dtype=bool)
    lefts_seen = np.zeros(n_values + 1, dtype=np.int64)  # lefts_seen[i]: lefts in slots < i
    group_first, lefts_before, new_slot, scratch = (np.empty(n_values, dtype=np.int64) for _ in range(4))
    width = 1 << (max(int(sizes.max()) - 1, 1).bit_length() - 1)  # 2 * width >= max n
    while width >= 1:
        np.not_equal(np.bitwise_and(local, width, out=scratch), 0, out=is_right)
        # Groups keep their range of slots: the group of slot i starts where position i's does.
        np.subtract(slot, np.bitwise_and(slot_local, 2 * width - 1, out=scratch), out=group_first)
        np.cumsum(~is_right, out=lefts_seen[1:])
        np.subtract(lefts_seen[:-1], np.take(lefts_seen, group_first, out=scratch), out=lefts_before)
        # A group with a right half has a full left half: `width` positions.
        np.subtract(width, lefts_before, out=scratch)  # for a right slot: left positions after it
        scratch *= is_right
        inversions_at += scratch
        if width > 1:
            # Stable partition: lefts first, in listing order, then rights.
            np.add(group_first, lefts_before, out=new_slot)  # left slot
            np.subtract(slot, lefts_before, out=scratch)
            scratch += width  # right slot: after all `width` lefts and the rights before it
            scratch -= new_slot
            scratch *= is_right
            new_slot += scratch
            partitioned[new_slot] = local
            local, partitioned = partitioned, local
        width //= 2
    inversions_before = np.r_[0, np.cumsum(inversions_at)]
    return inversions_before[offsets[1:]] - inversions_before[offsets[:-1]]


# ---------------------------------------------------------------------------------------------
# Packing helpers for callers that hold one array per graph.


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
    k = _check_k(k)
    packed = np.full((len(rows), k), PADDING, dtype=np.int64)
    for g, row in enumerate(rows):  # G rows of at most k cells: cheap
        head = np.asarray(row, dtype=np.int64)[:k]
        packed[g, : head.shape[0]] = head
    return packed


# ---------------------------------------------------------------------------------------------
# The two metrics as data; each task (competition.tasks) names its own.


@dataclass(frozen=True)
class Metric:
    """One metric as data: what it computes, how to read it, what it expects."""

    name: str
    score: Callable[..., float]  # one graph
    scores: Callable[..., np.ndarray]  # all graphs of a collection, packed
    higher_is_better: bool
    range: tuple[float, float]  # (worst, best) attainable per graph
    expected_input: str

    @property
    def direction(self) -> str:
        return "higher is better" if self.higher_is_better else "lower is better"


TILE_SLOWDOWN = Metric(
    name="tile_slowdown",
    score=tile_slowdown_score,
    scores=tile_slowdown_scores,
    higher_is_better=True,
    range=(-math.inf, 1.0),
    expected_input=(
        "Per graph: top_configs, the indices of the k=5 configs predicted fastest, fastest first "
        "(all configs when the graph has fewer than 5; indices after the 5th are ignored); "
        "runtimes and normalizers, one positive value per config. Score 2 - min(y[top]) / min(y), "
        "y = runtimes / normalizers: 1.0 when the fastest config is listed, unbounded below. "
        "Batch: top_configs (G, k) int64 padded with -1, runtimes and normalizers (N,) "
        "concatenated over graphs, offsets (G+1,) int64 graph boundaries."
    ),
)
KENDALL_TAU = Metric(
    name="kendall_tau",
    score=kendall_tau_score,
    scores=kendall_tau_scores,
    higher_is_better=True,
    range=(-1.0, 1.0),
    expected_input=(
        "Per graph: order, a permutation of all config indices 0..n-1, fastest first; "
        "runtimes, one positive value per config. Score: Kendall tau-b between the ranks the "
        "order gives (rank[order[i]] = i) and the runtimes, in [-1, 1]; 0.0 when undefined "
        "(fewer than 2 configs or all runtimes equal). Batch: orders and runtimes (N,) "
        "concatenated over graphs, offsets (G+1,) int64 graph boundaries."
    ),
)
