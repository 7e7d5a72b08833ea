"""solutions.accel: the scatter helpers against slow loops, with and without torch-scatter."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from solutions import accel
from solutions.accel import scatter, scatter_max, scatter_mean, scatter_sum, segment


@pytest.fixture(params=["fallback", "torch_scatter"])
def scatter_path(request, monkeypatch):
    """Run a test once on torch's own ops and once on torch-scatter (skipped when it is absent)."""
    if request.param == "torch_scatter":
        if not accel.WITH_TORCH_SCATTER:
            pytest.skip("torch-scatter is not installed; only the fallback path can run")
    else:
        monkeypatch.setattr(accel, "WITH_TORCH_SCATTER", False)
    return request.param


def reference(src: torch.Tensor, index: torch.Tensor, size: int, reduce: str, dim: int = 0) -> torch.Tensor:
    """Group by group with Python loops: the obvious definition (empty groups give 0)."""
    moved = src.movedim(dim, 0)
    out = torch.zeros((size, *moved.shape[1:]), dtype=src.dtype)
    for g in range(size):
        members = moved[index == g]
        if len(members):
            out[g] = {"sum": members.sum(0), "mean": members.mean(0), "max": members.amax(0)}[reduce]
    return out.movedim(0, dim)


@pytest.mark.parametrize("reduce", accel.REDUCTIONS)
@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_matches_the_loop(scatter_path, reduce, dim):
    gen = torch.Generator().manual_seed(0)
    src = torch.randn(7, 9, 3, generator=gen, dtype=torch.float64)
    index = torch.randint(0, 5, (src.shape[dim],), generator=gen)
    index[index == 3] = 4  # group 3 stays empty
    out = scatter(src, index, dim=dim, dim_size=6, reduce=reduce)
    assert out.shape[dim] == 6
    torch.testing.assert_close(out, reference(src, index, 6, reduce, dim))


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(0, 4), min_size=1, max_size=6), reduce=st.sampled_from(accel.REDUCTIONS),
       seed=st.integers(0, 2**16))
def test_segment_equals_scatter_over_the_same_groups(sizes, reduce, seed):
    src = torch.randn(sum(sizes), 2, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    ptr = torch.tensor([0, *torch.tensor(sizes).cumsum(0).tolist()])
    index = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    torch.testing.assert_close(segment(src, ptr, reduce=reduce), reference(src, index, len(sizes), reduce))


def test_named_helpers_are_the_reductions(scatter_path):
    src, index = torch.tensor([1.0, 3.0, 5.0]), torch.tensor([1, 1, 0])
    assert scatter_sum(src, index).tolist() == [5.0, 4.0]
    assert scatter_mean(src, index).tolist() == [5.0, 2.0]
    assert scatter_max(src, index).tolist() == [5.0, 3.0]


def test_gradients_flow(scatter_path):
    src = torch.randn(6, 2, dtype=torch.float64, requires_grad=True)
    index = torch.tensor([0, 0, 1, 2, 2, 2])
    for reduce in accel.REDUCTIONS:
        assert torch.autograd.gradcheck(lambda x, r=reduce: scatter(x, index, dim_size=4, reduce=r), (src,))


def test_fallback_equals_torch_scatter(monkeypatch):
    if not accel.WITH_TORCH_SCATTER:
        pytest.skip("torch-scatter is not installed; nothing to compare the fallback with")
    gen = torch.Generator().manual_seed(1)
    src, index = torch.randn(50, 4, generator=gen), torch.randint(0, 8, (50,), generator=gen)
    ptr = torch.tensor([0, 10, 10, 30, 50])
    with_extra = [scatter(src, index, dim_size=9, reduce=r) for r in accel.REDUCTIONS]
    with_extra += [segment(src, ptr, reduce=r) for r in accel.REDUCTIONS]
    monkeypatch.setattr(accel, "WITH_TORCH_SCATTER", False)
    without = [scatter(src, index, dim_size=9, reduce=r) for r in accel.REDUCTIONS]
    without += [segment(src, ptr, reduce=r) for r in accel.REDUCTIONS]
    for a, b in zip(with_extra, without, strict=True):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: scatter(torch.zeros(3), torch.tensor([0, 1])), "one entry per slice"),
        (lambda: scatter(torch.zeros(3), torch.zeros(3, dtype=torch.int64), reduce="median"), "unknown reduce"),
        (lambda: segment(torch.zeros(3), torch.tensor([0, 2])), "offsets from 0 to 3"),
        (lambda: segment(torch.zeros(3), torch.tensor([1, 3])), "offsets from 0 to 3"),
        (lambda: segment(torch.zeros(3), torch.tensor([0, 3]), reduce="min"), "unknown reduce"),
    ],
)
def test_bad_inputs(call, message):
    with pytest.raises(ValueError, match=message):
        call()
