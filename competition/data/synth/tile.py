"""Tile configurations of one kernel: the search space, the compiler's default and the measured runs.

A configuration tiles the kernel's output: ``output_bounds`` holds one tile size per output dimension
(a power of two, a divisor, a multiple of 128 on the minor dimension, or the whole dimension).
Convolution kernels also tile their input features: ``kernel_bounds`` is the kernel window, the input
feature tile and the output feature tile, and ``input_bounds`` the input window one output tile reads.
Other kernels leave kernel and input bounds empty (zeros), as the released files mostly do.

The default configuration is the compiler's heuristic: the largest tile, minor dimensions first, that
fits a quarter of VMEM counting the output and same-shaped inputs only. It ignores halos, weights and
dot operands, so it is usually near the best and sometimes not (like XLA's default in the real data).
Runs are measured in batches: each batch measures the default once more (its normalizer), so the
normalizers vary by a few tenths of a percent within a graph and share the batch's machine drift with
the runs they normalise. The default configuration's own run is its batch's normaliser, so every
kernel has a config with normalised runtime exactly 1 and the best one is at most 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from competition.data.synth.cost_model import chip, tile_cost
from competition.data.synth.hlo_encoding import tile_config_features
from competition.data.synth.kernels import KernelProfile


@dataclass
class TileRuns:
    """The measured configurations of one kernel. Shapes: ``c`` configs."""

    config_feat: np.ndarray  # (c, 24) float32
    config_runtime: np.ndarray  # (c,) int64 ns
    config_runtime_normalizers: np.ndarray  # (c,) int64 ns
    default_index: int  # position of the default configuration


def dim_options(size: int, *, minor: bool, limit: int = 20) -> list[int]:
    """Tile sizes considered for one output dimension of ``size`` elements, ascending.

    Powers of two, divisors up to 256, the whole dimension and, on the minor dimension, multiples of
    128; lists longer than ``limit`` are thinned evenly (1 and the whole dimension always stay).

    >>> dim_options(56, minor=False)
    [1, 2, 4, 7, 8, 14, 16, 28, 32, 56]
    >>> dim_options(1000, minor=True)
    [1, 2, 5, 8, 10, 16, 25, 32, 40, 50, 100, 125, 128, 200, 256, 384, 512, 640, 896, 1000]
    """
    if size <= 1:
        return [1]
    options = {1, size}
    p = 2
    while p < size:
        options.add(p)
        p *= 2
    options.update(d for d in range(2, min(size, 256) + 1) if size % d == 0)
    if minor:
        options.update(range(128, size, 128))
    ordered = sorted(options)
    if len(ordered) > limit:
        keep = np.unique(np.linspace(0, len(ordered) - 1, limit).round().astype(int))
        ordered = [ordered[i] for i in keep]
    return ordered


def _option_grid(profile: KernelProfile) -> list[list[int]]:
    """Options per output dimension, then the convolution input-feature options ([0] otherwise)."""
    r = len(profile.out_shape)
    grid = [dim_options(s, minor=d == r - 1) for d, s in enumerate(profile.out_shape)]
    grid.append(dim_options(profile.in_features, minor=False) if profile.in_features else [0])
    return grid


def _heuristic_cost(profile: KernelProfile, rows: np.ndarray) -> np.ndarray:
    return tile_cost.tile_runtime(profile, rows[:, :-1], rows[:, -1] if profile.in_features else None,
                                   compiler_view=True)


def default_tiling(profile: KernelProfile) -> list[int]:
    """The compiler's default: output tile sizes then the input-feature tile (0 unless convolution).

    Coordinate descent over the option grid on the compiler's own estimate, which misses halos, DMA
    row efficiency and most of the per-tile overhead; it starts from the largest tile that fits a
    quarter of VMEM, minor dimensions first.
    """
    grid = _option_grid(profile)
    r = len(profile.out_shape)
    same_inputs = sum(1 for role, _, _ in profile.inputs if role in ("same", "transpose_in", "reduce_in"))
    current = [1] * r + [grid[-1][-1] if profile.in_features else 0]
    for d in reversed(range(r)):
        for option in grid[d]:
            trial = current[:d] + [option] + current[d + 1: r]
            if math.prod(trial) * profile.out_bytes * (1 + same_inputs) <= chip.VMEM_BYTES / 4:
                current[d] = option
    for _ in range(2):
        for d in range(r + 1):
            trials = np.array([current[:d] + [o] + current[d + 1:] for o in grid[d]], dtype=np.int64)
            current[d] = int(trials[int(np.argmin(_heuristic_cost(profile, trials))), d])
    return current


def _features(profile: KernelProfile, tiles: list[int], feature_tile: int) -> np.ndarray:
    if profile.kind == "empty":
        return tile_config_features([], [], [])
    if profile.kind != "convolution":
        return tile_config_features([], tiles, [])
    kh, kw = profile.window
    s = profile.stride
    kernel = [kh, kw, feature_tile, tiles[-1]]
    inputs = [tiles[0], (tiles[1] - 1) * s + kh, (tiles[2] - 1) * s + kw, feature_tile]
    return tile_config_features(kernel, tiles, inputs)


def measure_tile_runs(profile: KernelProfile, rng: np.random.Generator, n_configs: int) -> TileRuns:
    """Sample up to ``n_configs`` distinct configurations (the default among them) and measure them."""
    if profile.kind == "empty":
        # Data movement with nothing to tile: every run carries the same empty configuration.
        n = int(min(n_configs, rng.integers(2, 6)))
        table = np.zeros((n, len(profile.out_shape) + 1), dtype=np.int64)
        default_index = 0
    else:
        grid = _option_grid(profile)
        default = default_tiling(profile)
        start = np.array([g.index(v) for g, v in zip(grid, default, strict=True)])
        sizes = np.array([len(g) for g in grid])
        want = int(min(n_configs, np.prod(sizes)))
        # The autotuner explores around the default: each dimension keeps the default tile or moves a
        # few options up or down, further out once the near neighbourhood is used up; it skips what
        # its own estimate calls hopeless (over 6 times the default).
        def to_rows(index: np.ndarray) -> np.ndarray:
            return np.stack([np.asarray(g)[index[:, d]] for d, g in enumerate(grid)], axis=1)

        limit = 6 * _heuristic_cost(profile, to_rows(start[None]))[0]
        picks = [start[None]]
        seen = np.ravel_multi_index(start[:, None], sizes)
        count = 1
        for round_ in range(16):
            if count >= want:
                break
            radius = 2 + round_ // 2
            moves = np.where(rng.random((2 * want, len(grid))) < 0.5, 0,
                             rng.integers(-radius, radius + 1, size=(2 * want, len(grid))))
            candidates = np.clip(start + moves, 0, sizes - 1)
            candidates = candidates[_heuristic_cost(profile, to_rows(candidates)) <= limit]
            # New distinct candidates in order of first appearance, up to the number still wanted.
            keys = np.ravel_multi_index(candidates.T, sizes)
            _, first = np.unique(keys, return_index=True)
            first = np.sort(first)
            first = first[~np.isin(keys[first], seen)][: want - count]
            picks.append(candidates[first])
            seen = np.concatenate([seen, keys[first]])
            count += len(first)
        table = to_rows(np.concatenate(picks)).astype(np.int64)
        order = rng.permutation(len(table))
        table = table[order]
        default_index = int(np.argmin(order))  # where row 0 (the default) went
    tiles, feature_tiles = table[:, :-1], table[:, -1]
    true = tile_cost.tile_runtime(profile, tiles, feature_tiles if profile.in_features else None)
    default_true = true[default_index]
    # Measurement batches share a machine drift; each batch re-measures the default as its normalizer
    # (averaged over repeats, hence the smaller noise).
    c = len(true)
    batch_of = np.cumsum(rng.random(c) < 1.0 / rng.integers(8, 64)) if c > 1 else np.zeros(1, dtype=np.int64)
    batch_drift = np.exp(rng.normal(0.0, 0.001, size=int(batch_of.max()) + 1))
    runtime = chip.measure(rng, true * batch_drift[batch_of], chip.tile_noise_sigma(true))
    normalizers = chip.measure(rng, default_true * batch_drift, 0.0005)[batch_of]
    # The default's own run is the normaliser of its batch (the tuner keeps that run among the
    # configs), so the best normalised runtime of a kernel is at most 1, as in the released data.
    runtime[default_index] = normalizers[default_index]
    feats = np.stack([_features(profile, list(t), int(ci))
                      for t, ci in zip(tiles, feature_tiles, strict=True)])
    return TileRuns(feats.astype(np.float32), runtime, normalizers, default_index)
