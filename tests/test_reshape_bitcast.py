"""When a reshape is a bitcast (``competition.data.reshapes``, read through
``reshape_copies``, the heuristic's layout rules 2 and 3): checked against the obvious slow reference, which
lays out every element of a small array in both layouts and compares the byte order."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from competition.data.reshapes import copy_mask
from competition.data.reshapes import is_copy as scalar_is_copy
from solutions.features.layout_geometry import LayoutContext, reshape_copies, reshape_groups
from solutions.features.shapes import CONFIGURABLE_KINDS, MAX_DIMS

RESHAPE = CONFIGURABLE_KINDS.index("reshape")


def bytes_in_order(in_dims: list[int], in_layout: list[int], out_dims: list[int],
                   out_layout: list[int]) -> bool:
    """The reference: a row-major reshape of ``in_dims`` to ``out_dims`` keeps every element at the same
    place in memory under the two ``minor_to_major`` layouts."""
    count = int(np.prod(in_dims))
    logical_in, logical_out = np.arange(count).reshape(in_dims), np.arange(count).reshape(out_dims)
    memory_in = np.transpose(logical_in, in_layout[::-1]).ravel()  # major to minor
    memory_out = np.transpose(logical_out, out_layout[::-1]).ravel()
    return bool((memory_in == memory_out).all())


def is_copy(in_dims: list[int], in_layout: list[int], out_dims: list[int], out_layout: list[int]) -> bool:
    """``reshape_copies`` on one reshape node and one config."""
    groups = reshape_groups(np.array(out_dims, float), np.array(in_dims, float))
    assert groups is not None
    context = LayoutContext(
        tensor_dims=np.zeros((1, 3, MAX_DIMS)), tensor_elements=np.zeros((1, 3)),
        rank=np.array([[len(out_dims), len(in_dims), 0]]), expected=np.full((1, 3, MAX_DIMS), -1),
        producer=np.full((1, 3), -1), has_plain_consumer=np.zeros(1, bool), kind=np.array([RESHAPE]),
        mode_codes=np.zeros(1, np.int64), reshape_groups=groups[None])
    chosen = np.full((1, 1, 3, MAX_DIMS), -1)
    chosen[0, 0, 0, : len(out_layout)] = out_layout
    chosen[0, 0, 1, : len(in_layout)] = in_layout
    return bool(reshape_copies(chosen, context)[0, 0])


@pytest.mark.parametrize(("out_dims", "in_dims", "groups"), [
    ([16384, 512], [32, 512, 512], [[0, 1], [0, 0, 1]]),  # merge two dims
    ([32, 512, 512], [16384, 512], [[0, 0, 1], [0, 1]]),  # split one
    ([96, 96, 96], [1, 96, 96, 96], [[0, 1, 2], [-1, 0, 1, 2]]),  # drop a size-1 dim (the real U-Net's)
    ([6, 4], [4, 6], [[0, 0], [0, 0]]),  # no common boundary inside: one group
    ([1], [1, 1], [[-1], [-1, -1]]),  # scalars: no group at all
], ids=["merge", "split", "size-1", "one-group", "scalar"])
def test_groups(out_dims, in_dims, groups):
    found = reshape_groups(np.array(out_dims, float), np.array(in_dims, float))
    assert found is not None
    assert found[0, : len(out_dims)].tolist() == groups[0] and found[1, : len(in_dims)].tolist() == groups[1]
    assert (found[:, max(len(out_dims), len(in_dims)):] == -1).all()


@pytest.mark.parametrize(("out_dims", "in_dims"), [([10, 10], [3, 33]), ([8], [0, 8]), ([4], [-1, 4])],
                         ids=["counts-differ", "zero-size", "unknown-size"])
def test_groups_unknown(out_dims, in_dims):
    assert reshape_groups(np.array(out_dims, float), np.array(in_dims, float)) is None


@pytest.mark.parametrize(("in_dims", "in_layout", "out_dims", "out_layout", "copy"), [
    ([32, 512, 512], [2, 1, 0], [16384, 512], [1, 0], False),
    ([32, 512, 512], [1, 0, 2], [16384, 512], [0, 1], False),  # both transposed alike
    ([32, 512, 512], [1, 0, 2], [16384, 512], [1, 0], True),
    ([32, 512, 512], [0, 1, 2], [16384, 512], [0, 1], True),  # the merged pair reversed inside
    ([1, 96, 96, 96], [1, 3, 2, 0], [96, 96, 96], [0, 2, 1], False),  # the real U-Net's settings
    ([1, 96, 96, 96], [1, 3, 2, 0], [96, 96, 96], [2, 1, 0], True),
    ([2, 1, 3], [0, 1, 2], [2, 3], [0, 1], False),  # a size-1 dim anywhere is ignored
])
def test_table_against_the_reference(in_dims, in_layout, out_dims, out_layout, copy):
    if np.prod(in_dims) <= 10**6:
        assert bytes_in_order(in_dims, in_layout, out_dims, out_layout) is not copy
    assert is_copy(in_dims, in_layout, out_dims, out_layout) is copy


@st.composite
def reshapes(draw):
    """A small reshape: random factors merged into runs on one side (and a size-1 dim sometimes), both
    sides laid out by random permutations."""
    factors = draw(st.lists(st.sampled_from([1, 2, 3, 4]), min_size=1, max_size=5))
    merged, at = [], 0
    while at < len(factors):
        run = draw(st.integers(1, 3))
        merged.append(int(np.prod(factors[at : at + run])))
        at += run
    if draw(st.booleans()):
        merged.insert(draw(st.integers(0, len(merged))), 1)
    a, b = (factors, merged[:MAX_DIMS]) if draw(st.booleans()) else (merged[:MAX_DIMS], factors)
    if int(np.prod(a)) != int(np.prod(b)):
        a = b  # the insert pushed a factor beyond six dims: reshape to itself
    return (a, draw(st.permutations(range(len(a)))), b, draw(st.permutations(range(len(b)))))


@settings(max_examples=400, deadline=None)
@given(reshapes())
def test_fast_path_matches_the_reference(case):
    in_dims, in_layout, out_dims, out_layout = case
    assert is_copy(in_dims, list(in_layout), out_dims, list(out_layout)) is not bytes_in_order(
        in_dims, list(in_layout), out_dims, list(out_layout))


def test_unset_and_malformed_layouts_are_not_charged():
    assert not is_copy([32, 4], [-1, -1], [128], [0])  # the compiler's choice
    assert not is_copy([32, 4], [0, 0], [128], [0])  # not a permutation: nothing known


def test_copy_mask_checks_each_distinct_setting_with_the_scalar_rule():
    """Many configs, few settings: each row gets the verdict ``is_copy`` gives it alone, garbage values
    (outside -1..5) included, which make no permutation and are never charged."""
    groups = reshape_groups([16384, 512], [32, 512, 512])
    settings_ = [([0, 1], [1, 0, 2]), ([1, 0], [1, 0, 2]), ([1, 0], [2, 1, 0]), ([0, 1], [2, 1, 0]),
                 ([-1, -1], [1, 0, 2]), ([7, 0], [2, 1, 0]), ([1, 0], [2, 1, 9])]
    pick = np.random.default_rng(0).integers(len(settings_), size=200)
    out = np.array([settings_[k][0] for k in pick])
    inp = np.array([settings_[k][1] for k in pick])
    expected = [scalar_is_copy(o, i, groups, (2, 3)) for o, i in settings_]
    assert expected == [False, True, False, True, False, False, False]
    assert copy_mask(out, inp, groups, (2, 3)).tolist() == [expected[k] for k in pick]

