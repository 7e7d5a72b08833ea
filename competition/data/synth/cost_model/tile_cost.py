"""Tile: the runtime of one fused kernel under each output tiling (see the package docstring)."""

from __future__ import annotations

import math

import numpy as np

from competition.data.synth.cost_model.chip import (
    DMA_ROW_BYTES,
    HBM_BYTES_PER_NS,
    KERNEL_LAUNCH_NS,
    LANES,
    PEAK_MXU_FLOPS_PER_NS,
    PEAK_VPU_FLOPS_PER_NS,
    SUBLANES,
    TILE_STEP_NS,
    VMEM_BYTES,
    pad_to,
)
from competition.data.synth.kernels import KernelProfile


def tile_runtime(profile: KernelProfile, output_tiles: np.ndarray,
                 input_feature_tiles: np.ndarray | None = None,
                 *, compiler_view: bool = False) -> np.ndarray:
    """Noise-free runtime (ns, float64) of a kernel under each output tiling.

    Args:
        profile: the kernel.
        output_tiles: ``(c, r)`` tile bounds per output dimension; an all-zero row means "no tiling"
            (the whole output as one tile), as in the empty configurations.
        input_feature_tiles: ``(c,)`` convolution input-feature tile (kernel bounds), or None.
        compiler_view: the compiler's own, blinder estimate that picks the default configuration: no
            convolution halo, no DMA row efficiency, a third of the per-tile overhead.
    """
    shape = np.asarray(profile.out_shape, dtype=np.float64)
    tiles = np.asarray(output_tiles, dtype=np.float64)
    tiles = np.where(tiles <= 0, shape, np.minimum(tiles, shape))
    r = shape.shape[0]
    n_tiles = np.prod(np.ceil(shape / tiles), axis=1)
    padded = tiles.copy()
    padded[:, r - 1] = pad_to(padded[:, r - 1], LANES)
    if r >= 2:
        padded[:, r - 2] = pad_to(padded[:, r - 2], SUBLANES)
    tile_elems = np.prod(tiles, axis=1)
    computed = n_tiles * np.prod(padded, axis=1)  # element slots computed, padding included
    per_out = 1.0 / profile.out_elements
    compute = computed * per_out * (profile.mxu_flops / PEAK_MXU_FLOPS_PER_NS
                                    + profile.vpu_flops / PEAK_VPU_FLOPS_PER_NS)

    out_tile_bytes = tile_elems * profile.out_bytes
    traffic = n_tiles * out_tile_bytes
    in_tile_bytes = np.zeros_like(n_tiles)
    weight_tile_bytes = np.zeros_like(n_tiles)
    passes = np.ones_like(n_tiles)
    for role, in_shape, nbytes in profile.inputs:
        in_elems = float(math.prod(in_shape))
        if role in ("same", "transpose_in"):
            per_tile = tile_elems * nbytes
        elif role == "bcast":
            per_tile = np.minimum(in_elems, tiles[:, r - 1]) * nbytes
        elif role == "reduce_in":
            per_tile = tile_elems * profile.reduced * nbytes
        elif role == "lhs":  # (..., m, k): rows of the output tile times the whole contraction
            rows = tiles[:, r - 2] if r >= 2 else 1.0
            batch = np.prod(tiles[:, : r - 2], axis=1) if r > 2 else 1.0
            per_tile = batch * rows * profile.contraction * nbytes
        elif role == "rhs":  # (..., k, n)
            batch = np.prod(tiles[:, : r - 2], axis=1) if r > 2 else 1.0
            per_tile = batch * profile.contraction * tiles[:, r - 1] * nbytes
            weight_tile_bytes = weight_tile_bytes + per_tile
        elif role == "conv_in":  # input window of the tile: halo on the spatial dimensions
            kh, kw = (1, 1) if compiler_view else profile.window
            s = profile.stride
            halo = (tiles[:, 1] * s + kh - 1) * (tiles[:, 2] * s + kw - 1)
            per_tile = tiles[:, 0] * halo * profile.in_features * nbytes
        elif role == "conv_w":
            per_tile = math.prod(profile.window) * profile.in_features * tiles[:, r - 1] * nbytes
            weight_tile_bytes = weight_tile_bytes + per_tile
        else:
            raise ValueError(f"unknown input role {role!r}")
        traffic = traffic + n_tiles * per_tile
        in_tile_bytes = in_tile_bytes + per_tile
    if input_feature_tiles is not None and profile.in_features:
        ci = np.where(input_feature_tiles <= 0, profile.in_features, np.minimum(input_feature_tiles,
                                                                                  profile.in_features))
        passes = np.ceil(profile.in_features / ci)
        # Partial sums of the output tile are written and read back once per extra pass (f32).
        traffic = traffic + (passes - 1) * 2 * n_tiles * tile_elems * 4
        in_tile_bytes = in_tile_bytes * ci / profile.in_features  # only one feature slice in VMEM at a time
    minor_row_bytes = tiles[:, r - 1] * profile.out_bytes
    dma_efficiency = 1.0 if compiler_view else np.sqrt(np.minimum(1.0, minor_row_bytes / DMA_ROW_BYTES))
    memory = traffic / HBM_BYTES_PER_NS / dma_efficiency

    footprint = 2.0 * (in_tile_bytes + np.prod(padded, axis=1) * profile.out_bytes)  # double-buffered
    spill = np.maximum(1.0, footprint / VMEM_BYTES)
    slowdown = 1.0 + 0.6 * np.log2(spill)
    busy = np.maximum(compute, memory) + 0.2 * np.minimum(compute, memory)
    step = TILE_STEP_NS / 3 if compiler_view else TILE_STEP_NS
    return busy * slowdown + n_tiles * passes * step + KERNEL_LAUNCH_NS


