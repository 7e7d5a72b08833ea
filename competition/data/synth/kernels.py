"""Fused kernels for the tile collection, and the facts about them that tiling depends on.

A tile-collection graph is one XLA kernel module: a fused computation (parameters, the fused ops,
its root) followed by the entry computation (parameters and the ``fusion`` instruction that calls the
fused computation, which is the entry's root). So the last node of every file is the fusion and its
shape is the kernel's output shape, the shape the output tile bounds refer to.

Kinds: convolution fusions (with bias, activation and casts), dot fusions, elementwise loop fusions,
reduction fusions, transposes, and a few data-movement kernels whose runs carry an empty tile
configuration (all 24 config features 0), like the real reshape kernels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from competition.data.hlo import ELEMENT_BYTES
from competition.data.synth.graphs import HloBuilder, HloGraph, Instr
from competition.data.synth.names import ModelSpec

KERNEL_KINDS = ("convolution", "dot", "elementwise", "reduce", "transpose", "empty")


@dataclass
class KernelProfile:
    """What tiling a kernel depends on, read off its fused computation.

    Every field follows from the node features (shapes, element types, windows), so a model can
    learn the same facts from the released arrays.
    """

    kind: str
    out_shape: tuple[int, ...]
    out_bytes: int  # bytes per output element
    mxu_flops: float  # convolution / dot work over the whole output
    vpu_flops: float  # elementwise work over the whole output
    inputs: list[tuple[str, tuple[int, ...], int]] = field(default_factory=list)  # (role, shape, bytes/elem)
    window: tuple[int, ...] = ()  # convolution window (spatial)
    stride: int = 1
    in_features: int = 0  # convolution input features
    contraction: int = 0  # dot contraction size
    reduced: int = 1  # elements reduced into each output element

    @property
    def out_elements(self) -> int:
        return math.prod(self.out_shape)


def _pick(rng: np.random.Generator, values) -> int:
    return int(values[int(rng.integers(len(values)))])


def _sized(shape: tuple[int, ...], low: int = 2**18, high: int = 2**26) -> tuple[int, ...]:
    """``shape`` with its leading dimension grown, or all dimensions halved, into [low, high] elements."""
    while math.prod(shape) < low:
        shape = (shape[0] * 2, *shape[1:])
    while math.prod(shape) > high:
        shape = tuple(max(1, d // 2) for d in shape)
    return shape


class _KernelBuilder:
    def __init__(self, spec: ModelSpec, rng: np.random.Generator, target_nodes: int) -> None:
        self.spec, self.rng, self.target = spec, rng, target_nodes
        self.b = HloBuilder(rng, spec.float_type)
        self.params: list[Instr] = []
        self.roles: list[str] = []

    def param(self, shape, role: str, dtype: str | None = None) -> Instr:
        p = self.b.param(shape, dtype)
        self.params.append(p)
        self.roles.append(role)
        return p

    def epilogue(self, y: Instr, budget: int) -> Instr:
        """Elementwise ops after the main op until the fused computation has ``budget`` nodes."""
        b = self.b
        while b.node_count < budget:
            kind = int(self.rng.integers(6))
            if kind == 0:
                y = b.binary("add", y, b.scalar_broadcast(y.shape))
            elif kind == 1:
                y = b.binary("maximum", y, b.scalar_broadcast(y.shape))
            elif kind == 2:
                y = b.binary("multiply", y,
                             b.broadcast(self.param((y.shape[-1],), "bcast"), y.shape, [y.rank - 1]))
            elif kind == 3:
                y = b.unary(str(self.rng.choice(["tanh", "exponential", "logistic", "rsqrt", "negate"])), y)
            elif kind == 4:
                other = self.param(y.shape, "same", y.dtype)
                y = b.binary(str(self.rng.choice(["add", "multiply", "subtract"])), y, other)
            else:
                y = (b.convert(b.convert(y, "f32"), y.dtype) if y.dtype != "f32"
                     else b.binary("multiply", y, y))
        return y

    def build(self, kind: str) -> tuple[HloGraph, KernelProfile]:
        b, rng, spec = self.b, self.rng, self.spec
        b.begin(b.unique("fused_computation"))
        fused_budget = max(2, self.target - 2)
        profile_extra: dict = {}
        if kind == "convolution":
            # A CNN stage: the spatial size halves as the features double.
            batch = min(spec.batch, 64)
            stage = int(rng.integers(0, 6))
            size = 224 >> stage
            cin = (max(3, int((32 << stage) * rng.choice([0.5, 1, 1, 2]))) if stage
                   else _pick(rng, [3, 32, 64]))
            cout = int((32 << stage) * rng.choice([0.5, 1, 1, 2, 4]))
            k = _pick(rng, [1, 1, 3, 3, 3, 5, 7] if stage < 3 else [1, 1, 3, 3])
            stride = 2 if rng.random() < 0.2 and size > 7 else 1
            x = self.param((batch, size, size, cin), "conv_in")
            w = self.param((k, k, cin, cout), "conv_w")
            y = b.convolution(x, w, cout, [stride, stride])
            if rng.random() < 0.8:
                y = b.binary("add", y, b.broadcast(self.param((cout,), "bcast"), y.shape, [3]))
            profile_extra = {"window": (k, k), "stride": stride, "in_features": cin}
        elif kind == "dot":
            m = _pick(rng, [64, 128, 256, 512, 1024, 2048, 4096, 8192]) * (1 if spec.batch < 64 else 2)
            kk = _pick(rng, [64, 128, 256, 512, 768, 1024, 2048, 3072, 4096])
            n = _pick(rng, [2, 64, 128, 256, 512, 768, 1024, 2048, 3072, 4096])
            if rng.random() < 0.3:  # batched (attention-like)
                heads = _pick(rng, [4, 8, 12, 16])
                a = self.param((heads, m // 8 or 1, kk // 8 or 1), "lhs")
                bb = self.param((heads, kk // 8 or 1, n), "rhs")
                y = b.dot(a, bb, batch_dims=1)
                kk = kk // 8 or 1
            else:
                a, bb = self.param((m, kk), "lhs"), self.param((kk, n), "rhs")
                y = b.dot(a, bb)
            profile_extra = {"contraction": kk}
        elif kind == "reduce":
            rank = _pick(rng, [2, 2, 3, 3, 4])
            shape = _sized(tuple(_pick(rng, [8, 16, 32, 64, 128, 256, 512, 1024, 4096]) for _ in range(rank)))
            x = self.param(shape, "reduce_in")
            x = b.binary("multiply", x, x) if rng.random() < 0.5 else b.convert(x, "f32")
            y = b.reduce(x, [rank - 1])
            profile_extra = {"reduced": shape[-1]}
        elif kind == "transpose":
            rank = _pick(rng, [2, 3, 4])
            shape = _sized(tuple(_pick(rng, [8, 12, 16, 64, 128, 256, 512, 1024]) for _ in range(rank)))
            x = self.param(shape, "transpose_in")
            perm = tuple(int(p) for p in rng.permutation(rank))
            if perm == tuple(range(rank)):
                perm = perm[::-1]
            y = b.transpose(x, perm)
        elif kind == "empty":
            shape = tuple(_pick(rng, [16, 128, 256, 1024]) for _ in range(_pick(rng, [2, 3])))
            x = self.param(shape, "same")
            y = b.reshape(x, (math.prod(shape[:-1]), shape[-1]))
            fused_budget = min(fused_budget, 4)
        else:  # elementwise loop fusion
            rank = _pick(rng, [1, 2, 2, 3, 4, 4])
            dims = [1, 3, 7, 8, 14, 16, 28, 32, 56, 64, 100, 128, 256, 384, 512, 768, 1024, 2048]
            y = self.param(_sized(tuple(_pick(rng, dims) for _ in range(rank))), "same")
        y = self.epilogue(y, fused_budget)
        fused = b.end(y)
        # The entry computation: parameters and the fusion instruction, which is the module's root.
        b.begin(f"cluster_{int(rng.integers(1, 10_000))}")
        entry_params = [b.param(p.shape, p.dtype) for p in self.params]
        fusion = b.emit("fusion", y.shape, entry_params, dtype=y.dtype, called=[fused])
        b.end(fusion)
        graph = b.build(spec.stem)
        fused_instrs = fused.instrs
        mxu = sum(i.flops for i in fused_instrs if i.opcode in ("convolution", "dot"))
        vpu = sum(i.flops for i in fused_instrs if i.opcode not in ("convolution", "dot"))
        profile = KernelProfile(
            kind=kind, out_shape=y.shape, out_bytes=ELEMENT_BYTES[y.dtype], mxu_flops=mxu, vpu_flops=vpu,
            inputs=[(role, p.shape, ELEMENT_BYTES[p.dtype])
                    for role, p in zip(self.roles, self.params, strict=True)],
            **profile_extra,
        )
        return graph, profile


def build_kernel(spec: ModelSpec, rng: np.random.Generator,
                 target_nodes: int) -> tuple[HloGraph, KernelProfile]:
    """One kernel module of about ``target_nodes`` nodes, its kind suited to the model family."""
    weights = {
        "cnn": [0.42, 0.06, 0.3, 0.1, 0.08, 0.04],
        "cnn3d": [0.42, 0.06, 0.3, 0.1, 0.08, 0.04],
        "transformer": [0.0, 0.4, 0.32, 0.14, 0.1, 0.04],
        "mlp": [0.0, 0.42, 0.34, 0.12, 0.08, 0.04],
    }[spec.family]
    kind = KERNEL_KINDS[int(rng.choice(len(KERNEL_KINDS), p=weights))]
    return _KernelBuilder(spec, rng, target_nodes).build(kind)
