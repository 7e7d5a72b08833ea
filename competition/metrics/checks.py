"""The metrics' input checks: each raises ValueError naming the rule that was broken and what was
received (competition.metrics, Undefined cases)."""

from __future__ import annotations

import numpy as np

PADDING = -1  # marks unused cells of a packed top_configs row


def check_1d(values: object, name: str, kinds: str) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array; got shape {array.shape}")
    if array.size and array.dtype.kind not in kinds:
        wanted = "integers" if kinds == "iu" else "real numbers"
        raise ValueError(f"{name} must hold {wanted}; got dtype {array.dtype}")
    return array


def check_positive(values: object, name: str) -> np.ndarray:
    """A 1-D array of finite, strictly positive numbers (measured times), as given."""
    array = check_1d(values, name, "iuf")
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


def check_same_length(a: np.ndarray, a_name: str, b: np.ndarray, b_name: str) -> None:
    if a.shape[0] != b.shape[0]:
        raise ValueError(
            f"{a_name} and {b_name} must have the same length (one entry per config); "
            f"got {a.shape[0]} and {b.shape[0]}"
        )


def check_offsets(offsets: object, n_values: int) -> np.ndarray:
    """Graph boundaries (G+1,): start at 0, never decrease, end at the number of configs."""
    array = check_1d(offsets, "offsets", "iu")
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


def check_permutations(orders: object, offsets: np.ndarray, *, name_graphs: bool) -> np.ndarray:
    """Every graph's slice of ``orders`` is a permutation of 0..n-1; returns global indices."""
    name = "orders" if name_graphs else "order"
    local = check_1d(orders, name, "iu").astype(np.int64, copy=False)
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
            f"{name}{graph_label(g, name_graphs)} must be a full permutation of 0..{sizes[g] - 1}; "
            f"position {i - offsets[g]} holds {local[i]}"
        )
    global_index = local + np.repeat(offsets[:-1], sizes)
    # All in range, so a repeated index leaves some config unlisted.
    listed = np.bincount(global_index, minlength=local.shape[0]) > 0
    if not listed.all():
        missing = int(np.flatnonzero(~listed)[0])
        g = _graph_of(missing, offsets)
        raise ValueError(
            f"{name}{graph_label(g, name_graphs)} must be a full permutation of 0..{sizes[g] - 1}; "
            f"config {missing - offsets[g]} is missing"
        )
    return global_index


def _graph_of(position: int, offsets: np.ndarray) -> int:
    return int(np.searchsorted(offsets, position, side="right") - 1)


def graph_label(g: int, name_graphs: bool) -> str:
    # The per-graph functions pass a single graph; naming "graph 0" there would only confuse.
    return f" of graph {g}" if name_graphs else ""


def check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be a positive integer; got {k!r}")
    return int(k)


def check_top_configs(top: np.ndarray, sizes: np.ndarray, k: int, *, name_graphs: bool) -> np.ndarray:
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
            f"top_configs{graph_label(g, name_graphs)} must hold config indices in 0..{sizes[g] - 1}; "
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
            f"top_configs{graph_label(g, name_graphs)} must list min(k, n) = {required[g]} configs"
            f"{' before any padding (-1)' if name_graphs else ''}; got {top[g].tolist()}"
        )
    ordered = np.sort(top, axis=1)
    repeated = (ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] != PADDING)
    if repeated.any():
        g, j = (int(x) for x in np.argwhere(repeated)[0])
        raise ValueError(
            f"top_configs{graph_label(g, name_graphs)} must list distinct configs; "
            f"config {ordered[g, j]} is listed twice"
        )
    return top

