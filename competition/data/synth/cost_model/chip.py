"""The simulated chip of the hidden runtime model: its constants, (8, 128) padding, and measurement noise."""

from __future__ import annotations

import numpy as np

# The simulated chip.
PEAK_MXU_FLOPS_PER_NS = 1.0e5  # matrix unit: 100 TFLOP/s
PEAK_VPU_FLOPS_PER_NS = 4.0e3  # vector unit
HBM_BYTES_PER_NS = 1.0e3  # 1 TB/s
VMEM_BYTES = 16 * 2**20
LANES, SUBLANES = 128, 8
DMA_ROW_BYTES = 512  # rows shorter than this use the memory bus partially
TILE_STEP_NS = 350.0  # per grid step of a tiled kernel
KERNEL_LAUNCH_NS = 2_000.0
OP_OVERHEAD_NS = 400.0  # per instruction of a program
COPY_OVERHEAD_NS = 1_500.0  # per layout conversion
FUSED_SHARE = 0.15  # what remains of an elementwise op's time once fused into its neighbours


def pad_to(x: np.ndarray, multiple: int) -> np.ndarray:
    return np.ceil(x / multiple) * multiple


def measure(rng: np.random.Generator, runtime_ns: np.ndarray, sigma: float | np.ndarray) -> np.ndarray:
    """Measured runtimes: ``runtime * LogNormal(0, sigma)``, rounded to int64 nanoseconds (>= 1)."""
    noisy = runtime_ns * np.exp(rng.normal(0.0, 1.0, size=np.shape(runtime_ns)) * sigma)
    return np.maximum(np.rint(noisy), 1).astype(np.int64)


def tile_noise_sigma(runtime_ns: np.ndarray) -> np.ndarray:
    """Relative measurement noise of a kernel: short kernels jitter more (launch and clock noise)."""
    return 0.002 + 0.02 * np.sqrt(1e4 / np.maximum(runtime_ns, 1.0))
