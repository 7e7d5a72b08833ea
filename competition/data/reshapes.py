"""When a reshape's layouts keep its bytes in place (a bitcast) and when they make it a copy.

A reshape keeps the row-major order of its elements, so its two shapes split into *groups*: runs of
consecutive dimensions with equal products (a run of input dimensions merged, split or renamed into
the matching run of output dimensions). A reshape is a bitcast exactly when both sides store the same
groups in the same order from major to minor, each group's dimensions next to each other and in their
logical order; size-1 dimensions are ignored, as the (8, 128) tiles ignore them. That is a fact of the
format, not of a chip. Every reshape setting of the real layout graphs at hand is a bitcast; the
heuristic charges only the others (layout rules 2 and 3) and ``tpugraphs stats`` counts them ("reshape
settings that copy"). One implementation, read by both. A generator that drew only bitcasts was measured and
dropped (docs/synthetic-data.md, "Reshapes that copy").

>>> groups = reshape_groups([16384, 512], [32, 512, 512])
>>> groups.tolist()
[[0, 1, -1, -1, -1, -1], [0, 0, 1, -1, -1, -1]]
>>> group_order([0, 1], groups[0], 2), group_order([1, 0, 2], groups[1], 3)  # group 1 major on both sides
((1, 0), (1, 0))
>>> copy_mask(np.array([[0, 1], [1, 0]]), np.array([[1, 0, 2], [1, 0, 2]]), groups, (2, 3)).tolist()
[False, True]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from competition.data.compact import (
    LAYOUT_ROW_DIM,
    LAYOUT_SLOTS,
    LAYOUT_VALUE_MAX,
    LAYOUT_VALUE_MIN,
    layout_row_codes,
)


def reshape_groups(out_dims: Sequence[float], in_dims: Sequence[float]) -> np.ndarray | None:
    """(2, 6) group of each dimension of a reshape's output (row 0) and input (row 1), or None.

    Groups are numbered from the major end; size-1 dimensions (and slots beyond the rank) get -1.
    None when a size is unknown (<= 0) or the element counts differ.
    """
    sides = [[(k, int(size)) for k, size in enumerate(dims) if size != 1] for dims in (out_dims, in_dims)]
    if any(size <= 0 for side in sides for _, size in side):
        return None
    groups = np.full((2, LAYOUT_SLOTS), -1, dtype=np.int64)
    at, products, group = [0, 0], [1, 1], 0
    while at[0] < len(sides[0]) or at[1] < len(sides[1]):
        # Take a dimension from the side with the smaller product until both products are equal.
        side = 0 if products[0] < products[1] or at[1] == len(sides[1]) else 1
        if at[side] == len(sides[side]):
            return None  # one side ran out first: the element counts differ
        k, size = sides[side][at[side]]
        groups[side, k] = group
        products[side] *= size
        at[side] += 1
        if products[0] == products[1]:
            group, products = group + 1, [1, 1]
    return groups if products == [1, 1] else None


def group_order(layout: Sequence[int], groups: Sequence[int], rank: int) -> tuple[int, ...] | None:
    """The groups from major to minor that one side's ``minor_to_major`` layout stores, or None when the
    layout is not a permutation of the side's ``rank`` dimensions or splits a group or reorders one."""
    layout = [int(d) for d in layout[:rank]]
    if sorted(layout) != list(range(rank)):
        return None
    order: list[int] = []
    previous = -1
    for dim in reversed(layout):  # major to minor
        group = int(groups[dim])
        if group < 0:
            continue  # a size-1 dimension: anywhere
        if order and order[-1] == group:
            if dim <= previous:
                return None  # a group's dimensions out of their logical order
        elif group in order:
            return None  # a group split by another one
        else:
            order.append(group)
        previous = dim
    return tuple(order)


def is_copy(out_layout: Sequence[int], in_layout: Sequence[int], groups: np.ndarray,
            ranks: tuple[int, int]) -> bool:
    """Whether a reshape with these ``minor_to_major`` layouts moves bytes (a copy, not a bitcast).

    An unset side (-1 in its first slot: the compiler's choice, which keeps the bitcast) or a layout
    that is not a permutation of its dimensions (nothing is then known) is not charged.
    """
    if int(out_layout[0]) < 0 or int(in_layout[0]) < 0:
        return False
    layouts = (out_layout, in_layout)
    if not all(sorted(int(d) for d in layouts[side][: ranks[side]]) == list(range(ranks[side]))
               for side in (0, 1)):
        return False
    orders = [group_order(layouts[side], groups[side], ranks[side]) for side in (0, 1)]
    # A side that splits or reorders a group cannot match the other side's bytes.
    return orders[0] is None or orders[1] is None or orders[0] != orders[1]


def copy_mask(out_layouts: np.ndarray, in_layouts: np.ndarray, groups: np.ndarray,
              ranks: tuple[int, int]) -> np.ndarray:
    """(c,) bool ``is_copy`` of one reshape under c configs: ``(c, >= rank)`` layouts of each side.

    A search tries a few settings per node, so each distinct pair is checked once.
    """
    out_layouts = np.asarray(out_layouts, dtype=np.int64)
    in_layouts = np.asarray(in_layouts, dtype=np.int64)
    ranks = (int(ranks[0]), int(ranks[1]))
    if out_layouts.shape[0] == 0 or not (ranks[0] and ranks[1]):
        return np.zeros(out_layouts.shape[0], dtype=bool)
    # One packed code per (output, input) pair (compact's row codes, the kernel vector unset): a 1-d
    # unique is fast on 100,000 rows. A value outside -1..5 makes a layout no permutation, which is never
    # charged, as an unset slot makes it: both share a code without changing a verdict.
    rows = np.full((out_layouts.shape[0], LAYOUT_ROW_DIM), LAYOUT_VALUE_MIN, dtype=np.int64)
    rows[:, : ranks[0]] = out_layouts[:, : ranks[0]]
    rows[:, LAYOUT_SLOTS: LAYOUT_SLOTS + ranks[1]] = in_layouts[:, : ranks[1]]
    rows[(rows < LAYOUT_VALUE_MIN) | (rows > LAYOUT_VALUE_MAX)] = LAYOUT_VALUE_MIN
    _, first, inverse = np.unique(layout_row_codes(rows), return_index=True, return_inverse=True)
    verdict = np.array([is_copy(out_layouts[k, : ranks[0]], in_layouts[k, : ranks[1]], groups, ranks)
                        for k in first], dtype=bool)
    return verdict[inverse.reshape(-1)]

