"""The official metrics: tile slowdown and layout Kendall tau, per graph and vectorised over graphs.

Two scores, both higher-is-better, each averaged over the graphs of a collection (facts §4):

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

How the batch tau works: the predicted ranks have no ties, so with ``n0 = n (n - 1) / 2`` and
``t_y`` the number of pairs tied in runtime, tau-b is ``(n0 - t_y - 2 n_d) / sqrt(n0 (n0 - t_y))``
where ``n_d`` counts the strict inversions of ``runtimes[order]`` (pairs listed in the wrong order).
Inversions of all graphs are counted together by a bottom-up merge-sort pass: at level ``L`` every
block of ``2^L`` positions is paired with the block after it, one sort over all graphs orders each
pair by runtime, and a running count of left-block elements gives, for every right-block element,
how many left-block elements are slower. ``log2(max n)`` levels, no Python loop over graphs or
configs. Tie groups come from one sort and a diff.

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
  (the upstream baseline writes 10; facts §3 tolerate extras).
- **Empty input (G = 0)**: the batch functions return an empty float64 array.
- **Runtimes or normalizers that are zero, negative or not finite**: ValueError. That is a
  host-side data problem; in particular the released test npz files carry all-zero runtimes, and
  scoring against them must fail loudly instead of returning 0.0 for every graph.
- **Tile graph with no config**: ValueError (``min(y)`` does not exist). A layout graph with no
  config scores 0.0 like any graph with fewer than 2.

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
    "METRICS",
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
    if array.size == 0:
        return array
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        where = int(np.flatnonzero(~np.isfinite(array))[0])
        raise ValueError(f"{name} must be finite; entry {where} is {array[where]}")
    if not (array > 0).all():
        where = int(np.flatnonzero(~(array > 0))[0])
        raise ValueError(
            f"{name} must be positive (measured times); entry {where} is {array[where]} "
            "(all-zero runtimes mean unlabeled test data)"
        )
    return array


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
    local = _check_1d(orders, "order", "iu").astype(np.int64, copy=False)
    if local.shape[0] != offsets[-1]:
        raise ValueError(
            f"order and runtimes must have the same length (one entry per config); "
            f"got {local.shape[0]} and {offsets[-1]}"
        )
    sizes = np.diff(offsets)
    out_of_range = (local < 0) | (local >= np.repeat(sizes, sizes))
    if out_of_range.any():
        i = int(np.flatnonzero(out_of_range)[0])
        g = _graph_of(i, offsets)
        raise ValueError(
            f"order{_graph_label(g, name_graphs)} must be a full permutation of 0..{sizes[g] - 1}; "
            f"position {i - offsets[g]} holds {local[i]}"
        )
    global_index = local + np.repeat(offsets[:-1], sizes)
    # All in range, so a repeated index leaves some config unlisted.
    listed = np.bincount(global_index, minlength=local.shape[0]) > 0
    if not listed.all():
        missing = int(np.flatnonzero(~listed)[0])
        g = _graph_of(missing, offsets)
        raise ValueError(
            f"order{_graph_label(g, name_graphs)} must be a full permutation of 0..{sizes[g] - 1}; "
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
            f"top_configs{_graph_label(g, name_graphs)} must list min(k, n) = {required[g]} configs "
            f"before any padding; got {top[g].tolist()}"
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
    y = runtimes.astype(np.float64) / normalizers.astype(np.float64)
    return float(2.0 - y[top].min() / y.min())


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
    k = _check_k(k)
    runtimes = _check_positive(runtimes, "runtimes")
    normalizers = _check_positive(normalizers, "normalizers")
    _check_same_length(runtimes, "runtimes", normalizers, "normalizers")
    offsets = _check_offsets(offsets, runtimes.shape[0])
    sizes = np.diff(offsets)
    if (sizes == 0).any():
        g = int(np.flatnonzero(sizes == 0)[0])
        raise ValueError(f"every tile graph needs at least one config; graph {g} has none")
    top = _check_top_configs(np.asarray(top_configs), sizes, k, name_graphs=True)
    if sizes.shape[0] == 0:
        return np.zeros(0, dtype=np.float64)

    y = runtimes.astype(np.float64) / normalizers.astype(np.float64)
    best = np.minimum.reduceat(y, offsets[:-1])  # safe: no graph is empty
    is_listed = top != PADDING
    listed = y[np.where(is_listed, top + offsets[:-1, None], 0)]
    best_listed = np.where(is_listed, listed, np.inf).min(axis=1)  # every row lists >= 1 config
    return 2.0 - best_listed / best


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
    return float(_kendall_tau(order, runtimes, offsets, name_graphs=False)[0])


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
    runtimes = _check_positive(runtimes, "runtimes")
    offsets = _check_offsets(offsets, runtimes.shape[0])
    return _kendall_tau(orders, runtimes, offsets, name_graphs=True)


def _kendall_tau(
    orders: object, runtimes: np.ndarray, offsets: np.ndarray, *, name_graphs: bool
) -> np.ndarray:
    global_order = _check_permutations(orders, offsets, name_graphs=name_graphs)
    sizes = np.diff(offsets)
    if sizes.shape[0] == 0:
        return np.zeros(0, dtype=np.float64)

    # Dense runtime ranks over the whole batch: one sort, and only comparisons within a graph
    # are ever made, so ranks need not restart per graph.
    _, runtime_rank = np.unique(runtimes, return_inverse=True)
    runtime_rank = runtime_rank.astype(np.int64, copy=False)
    n_distinct = int(runtime_rank.max()) + 1 if runtime_rank.size else 1

    discordant = _count_inversions(runtime_rank[global_order], offsets, n_distinct).astype(np.float64)
    tied = _count_tied_pairs(runtime_rank, offsets, n_distinct).astype(np.float64)
    total = sizes.astype(np.float64) * (sizes - 1) / 2
    untied = total - tied  # pairs with distinct runtimes: each is concordant or discordant
    # Same arithmetic as scipy's kendalltau (tau-b; the ranks have no ties), so values agree.
    tau = np.zeros(sizes.shape[0], dtype=np.float64)
    defined = untied > 0
    tau[defined] = (
        (untied[defined] - 2 * discordant[defined]) / np.sqrt(total[defined]) / np.sqrt(untied[defined])
    )
    return np.clip(tau, -1.0, 1.0)


def _count_tied_pairs(values: np.ndarray, offsets: np.ndarray, n_distinct: int) -> np.ndarray:
    """(G,) int64: pairs of configs in the same graph with equal ``values`` (integer ranks)."""
    sizes = np.diff(offsets)
    graph = np.repeat(np.arange(sizes.shape[0], dtype=np.int64), sizes)
    keys = np.sort(graph * n_distinct + values)
    if keys.size == 0:
        return np.zeros(sizes.shape[0], dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    group_size = np.diff(np.r_[starts, keys.size])
    group_graph = keys[starts] // n_distinct
    pairs = group_size * (group_size - 1) // 2
    return np.bincount(group_graph, weights=pairs, minlength=sizes.shape[0]).astype(np.int64)


def _count_inversions(values: np.ndarray, offsets: np.ndarray, n_distinct: int) -> np.ndarray:
    """(G,) int64: pairs ``i < j`` in the same graph with ``values[i] > values[j]`` (ties excluded).

    Bottom-up merge count over all graphs at once. At level ``L`` positions are grouped into
    pairs of blocks of ``w = 2^L`` (left block, right block) within each graph; sorting by
    ``(pair, value, side)`` puts, before each right-block element, exactly the left-block elements
    of its pair that are not slower (left before right on equal values, so ties never count). The
    left block of any pair that has a right block is full, so ``w`` minus that running count is the
    number of inversions the element closes at this level.
    """
    sizes = np.diff(offsets)
    n_values = values.shape[0]
    inversions_at = np.zeros(n_values, dtype=np.int64)  # per position, summed per graph at the end
    if n_values == 0:
        return np.zeros(sizes.shape[0], dtype=np.int64)
    position = np.arange(n_values, dtype=np.int64)
    local = position - np.repeat(offsets[:-1], sizes)
    width = 1
    while width < sizes.max():
        pair_span = 2 * width
        pair = np.cumsum((local & (pair_span - 1)) == 0) - 1  # increases with position; unique
        is_right = (local & width) != 0
        keys = np.sort((pair * n_distinct + values) * 2 + is_right)
        # Each pair is a contiguous range of positions and the sort keeps it in that range, so
        # sorted slot i belongs to the pair holding position i.
        slot_is_right = (keys & 1).astype(bool)
        lefts_before = np.r_[0, np.cumsum(~slot_is_right)]  # lefts_before[i]: in slots < i
        pair_first = position - (local & (pair_span - 1))
        not_slower = lefts_before[:-1] - lefts_before[pair_first]
        inversions_at += np.where(slot_is_right, width - not_slower, 0)
        width = pair_span
    running = np.r_[0, np.cumsum(inversions_at)]
    return running[offsets[1:]] - running[offsets[:-1]]


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
# The table other modules look metrics up in (Collection.metric holds its keys).


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


METRICS: dict[str, Metric] = {
    "tile_slowdown": Metric(
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
    ),
    "kendall_tau": Metric(
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
    ),
}
