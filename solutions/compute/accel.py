"""Optional compiled extras, detected in one place, and the scatter helpers that use them.

``torch-scatter`` (a compiled PyG extra) has fused CPU/GPU kernels for grouped reductions; torch
has its own (``index_add_``, ``scatter_reduce_``) that give the same values. Everything in the kit
calls the helpers below, which pick the extra when it is installed (``WITH_TORCH_SCATTER``) and
torch's own ops otherwise, so the kit runs, and gives the same numbers, with or without it. Tests
force the flag off to check the fallback against the extra (``tests/test_accel.py``).

Conventions (as torch-scatter's): ``index[i]`` names the group of ``src``'s slice ``i`` along
``dim``; the output has ``dim_size`` groups along ``dim`` (default ``index.max() + 1``); a group
that receives nothing is 0 for every reduction.

>>> src = torch.tensor([[1.0], [2.0], [4.0]])
>>> index = torch.tensor([0, 0, 2])
>>> scatter_sum(src, index, dim_size=3).flatten().tolist()
[3.0, 0.0, 4.0]
>>> scatter_mean(src, index, dim_size=3).flatten().tolist()
[1.5, 0.0, 4.0]
>>> scatter_max(src, index, dim_size=3).flatten().tolist()
[2.0, 0.0, 4.0]
>>> segment(src, torch.tensor([0, 2, 3]), reduce="mean").flatten().tolist()
[1.5, 4.0]
"""

from __future__ import annotations

import importlib.util

import torch

WITH_TORCH_SCATTER: bool = importlib.util.find_spec("torch_scatter") is not None

REDUCTIONS = ("sum", "mean", "max")


def _dim_size(index: torch.Tensor, dim_size: int | None) -> int:
    if dim_size is not None:
        return int(dim_size)
    return int(index.max()) + 1 if index.numel() else 0


def _check(src: torch.Tensor, index: torch.Tensor, dim: int) -> int:
    dim = dim if dim >= 0 else src.dim() + dim
    if index.dim() != 1 or index.shape[0] != src.shape[dim]:
        raise ValueError(
            f"index must be 1-D with one entry per slice of src along dim {dim}; "
            f"got index {tuple(index.shape)} for src {tuple(src.shape)}"
        )
    return dim


def scatter(src: torch.Tensor, index: torch.Tensor, *, dim: int = 0, dim_size: int | None = None,
            reduce: str = "sum", count: torch.Tensor | None = None) -> torch.Tensor:
    """Reduce the slices of ``src`` along ``dim`` into the groups ``index`` names.

    Arguments:
        src: (..., N, ...) values, N along ``dim``.
        index: (N,) int64 group of each slice, in 0..dim_size-1.
        dim: the axis of ``src`` that ``index`` runs along.
        dim_size: number of groups G (default ``index.max() + 1``).
        reduce: ``"sum"``, ``"mean"`` or ``"max"``; empty groups give 0.
        count: ``"mean"`` only: (G,) how many slices each group receives, clamped at 1
            (``group_sizes``), where the caller has it already (a graph's in-degrees serve every layer
            and step); the same result, without counting again.

    Shapes: (..., N, ...) -> (..., G, ...).
    """
    if reduce not in REDUCTIONS:
        raise ValueError(f"unknown reduce {reduce!r}; expected one of {', '.join(REDUCTIONS)}")
    dim = _check(src, index, dim)
    size = _dim_size(index, dim_size)
    if count is not None and (reduce != "mean" or count.shape != (size,)):
        raise ValueError(f"count is the (dim_size,) = ({size},) group sizes of a mean; got "
                         f"{tuple(count.shape)} for reduce={reduce!r}")
    view = [1] * src.dim()
    view[dim] = -1
    if WITH_TORCH_SCATTER:
        import torch_scatter

        if count is None:
            return torch_scatter.scatter(src, index, dim=dim, dim_size=size, reduce=reduce)
        # torch-scatter's mean divides its sum by the same clamped counts
        return torch_scatter.scatter(src, index, dim=dim, dim_size=size) / count.to(src.dtype).view(view)
    shape = list(src.shape)
    shape[dim] = size
    if reduce == "max":
        return _max(src, index, dim, shape, torch.bincount(index, minlength=size) == 0)
    total = src.new_zeros(shape).index_add_(dim, index, src)
    if reduce == "sum":
        return total
    # The mean as sum / count: scatter_reduce_'s own "mean" is slower, forward and backward. An empty
    # group divides 0 by 1.
    sizes = group_sizes(index, size) if count is None else count
    return total / sizes.to(src.dtype).view(view)


def _max(src: torch.Tensor, index: torch.Tensor, dim: int, shape: list[int],
         empty: torch.Tensor) -> torch.Tensor:
    """torch's grouped maximum into ``shape``; ``empty`` (G,) bool marks the groups that receive nothing.

    Starts from -inf, not from a placeholder left out with include_self=False: scatter_reduce_'s backward
    would still count a placeholder 0 as tied with a maximum of exactly 0 and halve its gradient
    (torch 2.13). A group that receives nothing stays -inf, then 0."""
    view = [1] * src.dim()
    view[dim] = -1
    out = src.new_full(shape, -torch.inf).scatter_reduce_(dim, index.view(view).expand_as(src), src, "amax")
    return out.masked_fill(empty.view(view), 0) if bool(empty.any()) else out


def group_sizes(index: torch.Tensor, dim_size: int) -> torch.Tensor:
    """How many slices each of ``dim_size`` groups receives, clamped at 1: what a mean divides the
    group's sum by (an empty group: 0 / 1). Shapes: (N,) int64 -> (dim_size,) float32."""
    return _divisors(torch.bincount(index, minlength=dim_size))


def _divisors(counts: torch.Tensor) -> torch.Tensor:
    """Group sizes as a mean's divisors: clamped at 1 (an empty group: 0 / 1), float32."""
    return counts.clamp(min=1).to(torch.float32)


def scatter_sum(src: torch.Tensor, index: torch.Tensor, *, dim: int = 0,
                dim_size: int | None = None) -> torch.Tensor:
    """Sum per group; see ``scatter``."""
    return scatter(src, index, dim=dim, dim_size=dim_size, reduce="sum")


def scatter_mean(src: torch.Tensor, index: torch.Tensor, *, dim: int = 0,
                 dim_size: int | None = None, count: torch.Tensor | None = None) -> torch.Tensor:
    """Mean per group (0 for an empty group); see ``scatter``."""
    return scatter(src, index, dim=dim, dim_size=dim_size, reduce="mean", count=count)


def scatter_max(src: torch.Tensor, index: torch.Tensor, *, dim: int = 0,
                dim_size: int | None = None) -> torch.Tensor:
    """Maximum per group (0 for an empty group); see ``scatter``."""
    return scatter(src, index, dim=dim, dim_size=dim_size, reduce="max")


def segment(src: torch.Tensor, ptr: torch.Tensor, *, reduce: str = "sum") -> torch.Tensor:
    """Reduce consecutive runs of rows: group ``g`` is ``src[ptr[g]:ptr[g + 1]]`` (CSR offsets).

    The form a batch of graphs comes in (nodes of graph ``g`` are contiguous), so pooling needs no
    per-node index. Empty segments give 0.

    Arguments:
        src: (N, ...) rows.
        ptr: (G + 1,) int64 offsets, non-decreasing, ``ptr[0] == 0`` and ``ptr[-1] == N``.
        reduce: ``"sum"``, ``"mean"`` or ``"max"``.

    Shapes: (N, ...) -> (G, ...).
    """
    if reduce not in REDUCTIONS:
        raise ValueError(f"unknown reduce {reduce!r}; expected one of {', '.join(REDUCTIONS)}")
    if ptr.dim() != 1 or ptr.numel() < 1 or int(ptr[0]) != 0 or int(ptr[-1]) != src.shape[0]:
        raise ValueError(f"ptr must be 1-D offsets from 0 to {src.shape[0]} (rows of src); got "
                         f"{ptr.tolist()[:8]}")
    counts = ptr[1:] - ptr[:-1]
    if bool((counts < 0).any()):
        raise ValueError(f"ptr must be non-decreasing offsets; got {ptr.tolist()[:8]}")
    if WITH_TORCH_SCATTER:
        import torch_scatter

        return torch_scatter.segment_csr(src, ptr, reduce=reduce)
    # Not torch.segment_reduce: its max backward hands each of several tied maxima the whole gradient
    # when that gradient is negative (torch 2.13, CPU), where a tie must share it; scatter's max shares it
    # evenly (docs/install.md, "torch-scatter").
    # The offsets already give each group's size: neither the max nor the mean counts again.
    index = torch.repeat_interleave(torch.arange(counts.numel(), device=src.device), counts)
    if reduce == "max":
        return _max(src, index, 0, [counts.numel(), *src.shape[1:]], counts == 0)
    count = _divisors(counts) if reduce == "mean" else None
    return scatter(src, index, dim=0, dim_size=counts.numel(), reduce=reduce, count=count)
