"""Counting pairs within many graphs at once, for the batch Kendall tau: each graph's slice sorted
in place, its tied pairs, and its inversions (pairs out of order), with no Python loop over graphs
or configs. Inputs are packed: graph ``g`` owns ``offsets[g]:offsets[g + 1]``."""

from __future__ import annotations

import numpy as np


def sort_within_graphs(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """(N,) int64 indices that sort each graph's slice of ``values``, ties by position.

    Graphs keep their ranges: the result is ``offsets[g]:offsets[g + 1]`` sorted within itself.
    """
    sizes = np.diff(offsets)
    by_value = np.argsort(values, kind="stable")
    graph_of = np.repeat(np.arange(sizes.shape[0]), sizes)[by_value]
    if sizes.shape[0] <= np.iinfo(np.uint16).max + 1:
        graph_of = graph_of.astype(np.uint16)  # numpy radix-sorts 16-bit keys: linear time
    return by_value[np.argsort(graph_of, kind="stable")]


def count_tied_pairs(sorted_values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
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


def count_inversions(by_value: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """(G,) int64: pairs of positions ``i < j`` in a graph whose values are strictly out of order.

    ``by_value`` sorts each graph's positions by (value, position) (see sort_within_graphs); the
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

