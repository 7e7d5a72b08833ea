"""A small HLO-like intermediate representation and a builder that emits it in the released form.

A synthetic program is built the way XLA lays out an ``HloModuleProto``: a list of computations
(reducers, while bodies and conditions, fused computations) with callees before callers and the
entry computation last; every instruction has an opcode, a shape, an element type and a layout.
``HloGraph`` turns that into the released arrays with the upstream featurizer's rules:

- nodes: every instruction of every computation, in order, so nodes are topologically sorted;
- ``edge_index``: ``[self, operand]`` per distinct operand, ``[self, root of callee]`` per called
  computation, rows sorted (so ``u > v`` on every row);
- ``node_splits``: ``[0]``, then the running instruction count after each computation whose name
  contains ``cluster``, ``while`` or ``cond``, then the total if it is not there yet;
- ``node_feat``: ``competition.data.synth.hlo_encoding.encode_node_features`` per instruction.

The builder also records, per instruction, the work it does (``flops``) and the bytes it moves; the
hidden cost model reads those (they follow from the shapes and opcodes, which the features show).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from competition.data.hlo import CONFIGURABLE_OPCODES, ELEMENT_BYTES, OPCODE_IDS
from competition.data.synth.hlo_encoding import ConvDims, WindowDim, encode_node_features

MAX_RANK = 6

# Relative cost of one element of an elementwise op (transcendentals are several VPU ops).
_ELEMENTWISE_WORK = {
    "exponential": 8, "log": 8, "tanh": 8, "logistic": 8, "rsqrt": 4, "sqrt": 4, "divide": 4, "power": 8,
    "sine": 8, "cosine": 8, "exponential-minus-one": 8, "log-plus-one": 8, "erf": 8,
}
# Opcodes that move no data (views, tuple plumbing, parameters).
_NO_DATA_MOVEMENT = {"parameter", "get-tuple-element", "tuple", "bitcast", "constant", "after-all", "while",
                     "call", "conditional", "fusion"}


def descending_layout(rank: int) -> tuple[int, ...]:
    """XLA's default layout: the last logical dimension is the most minor (``{r-1, ..., 0}``)."""
    return tuple(range(rank - 1, -1, -1))


@dataclass(eq=False)
class Instr:
    """One HLO instruction while a program is being built."""

    opcode: str
    shape: tuple[int, ...]  # () for scalars and tuples
    dtype: str  # element type name of competition.data.synth.hlo_encoding.ELEMENT_TYPES
    operands: list[Instr]
    called: list[Computation] = field(default_factory=list)
    layout: tuple[int, ...] = ()  # minor_to_major, one entry per dimension
    flops: float = 0.0  # arithmetic work
    bytes_moved: float = 0.0  # bytes read and written when executed on its own
    attrs: dict = field(default_factory=dict)  # extra proto fields for the features
    id: int = -1  # position in the final graph

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def elements(self) -> int:
        return math.prod(self.shape) if self.dtype != "tuple" else 0

    @property
    def nbytes(self) -> int:
        return self.elements * ELEMENT_BYTES[self.dtype]


@dataclass(eq=False)
class Computation:
    """One HLO computation: its name decides node_splits (``cluster``, ``while``, ``cond``)."""

    name: str
    instrs: list[Instr] = field(default_factory=list)
    root: Instr | None = None


class HloBuilder:
    """Emits instructions into computations; finished computations are kept in finishing order.

    Open a computation with ``begin(name)``, emit into it, close it with ``end(root)``. A callee
    (a reducer, a while body) is opened and closed while its caller is still open, so it finishes
    first and lands before its caller, as in XLA's module protos.
    """

    def __init__(self, rng: np.random.Generator, float_type: str = "bf16") -> None:
        self.rng = rng
        self.float_type = float_type
        self.finished: list[Computation] = []
        self._open: list[Computation] = []
        self._names = 0
        self._reducers: dict[tuple[str, str], Computation] = {}
        self._constants: dict[tuple[int, str, int], Instr] = {}
        self._broadcasts: dict[tuple[int, tuple[int, ...]], Instr] = {}
        self.node_count = 0  # instructions emitted so far
        self.configurable_count = 0  # of which layout-configurable

    # -- computations ---------------------------------------------------------------------------
    def unique(self, stem: str) -> str:
        self._names += 1
        return f"{stem}.{self._names}"

    def begin(self, name: str) -> Computation:
        comp = Computation(name)
        self._open.append(comp)
        return comp

    def end(self, root: Instr) -> Computation:
        comp = self._open.pop()
        if root not in comp.instrs:
            raise ValueError(f"root of {comp.name} is not one of its instructions")
        comp.root = root
        self.finished.append(comp)
        return comp

    @property
    def current(self) -> Computation:
        return self._open[-1]

    # -- generic emission -----------------------------------------------------------------------
    def emit(
        self,
        opcode: str,
        shape: Sequence[int],
        operands: Sequence[Instr] = (),
        *,
        dtype: str | None = None,
        layout: Sequence[int] | None = None,
        flops: float | None = None,
        called: Sequence[Computation] = (),
        **attrs,
    ) -> Instr:
        if opcode not in OPCODE_IDS:
            raise ValueError(f"unknown opcode {opcode!r}")
        shape = tuple(int(s) for s in shape)
        dtype = dtype or self.float_type
        if layout is None:
            # Layout assignment propagates through ops of equal rank; elsewhere XLA's default.
            first = operands[0] if operands else None
            layout = first.layout \
                if first is not None and first.rank == len(shape) and first.dtype != "tuple" \
                else descending_layout(len(shape))
        instr = Instr(opcode, shape, dtype, list(operands), list(called), tuple(layout), attrs=attrs)
        if dtype == "tuple":
            instr.layout = ()
        elems = instr.elements
        if flops is None:
            flops = 0.0 if opcode in _NO_DATA_MOVEMENT else float(elems * _ELEMENTWISE_WORK.get(opcode, 1))
        instr.flops = flops
        if opcode not in _NO_DATA_MOVEMENT:
            instr.bytes_moved = float(instr.nbytes + sum(o.nbytes for o in operands if o.dtype != "tuple"))
        self.current.instrs.append(instr)
        self.node_count += 1
        if opcode in CONFIGURABLE_OPCODES and len(shape) >= 2 and dtype != "tuple":
            self.configurable_count += 1
        return instr

    # -- common ops -----------------------------------------------------------------------------
    def param(self, shape: Sequence[int], dtype: str | None = None, *,
              layout: Sequence[int] | None = None) -> Instr:
        number = sum(1 for i in self.current.instrs if i.opcode == "parameter")
        return self.emit("parameter", shape, dtype=dtype, layout=layout, parameter_number=number)

    def tuple_param(self, size: int) -> Instr:
        number = sum(1 for i in self.current.instrs if i.opcode == "parameter")
        return self.emit("parameter", (), dtype="tuple", parameter_number=number, tuple_size=size)

    def constant(self, shape: Sequence[int] = (), dtype: str | None = None) -> Instr:
        """A constant; scalars are shared within a computation (XLA folds equal constants)."""
        if shape:
            return self.emit("constant", shape, dtype=dtype)
        key = (id(self.current), dtype or self.float_type, int(self.rng.integers(3)))
        cached = self._constants.get(key)
        if cached is None:
            cached = self._constants[key] = self.emit("constant", (), dtype=dtype)
        return cached

    def broadcast(self, x: Instr, shape: Sequence[int], dims: Sequence[int]) -> Instr:
        return self.emit("broadcast", shape, [x], dtype=x.dtype, layout=descending_layout(len(shape)),
                         dimensions=tuple(dims))

    def scalar_broadcast(self, shape: Sequence[int], dtype: str | None = None) -> Instr:
        """A constant scalar broadcast to ``shape``; shared like the constants themselves."""
        const = self.constant((), dtype)
        key = (id(const), tuple(shape))
        cached = self._broadcasts.get(key)
        if cached is None:
            cached = self._broadcasts[key] = self.broadcast(const, shape, ())
        return cached

    def unary(self, opcode: str, x: Instr, dtype: str | None = None) -> Instr:
        return self.emit(opcode, x.shape, [x], dtype=dtype or x.dtype)

    def binary(self, opcode: str, a: Instr, b: Instr) -> Instr:
        dtype = "pred" if opcode == "compare" else a.dtype
        return self.emit(opcode, a.shape, [a, b], dtype=dtype)

    def convert(self, x: Instr, dtype: str) -> Instr:
        return self.emit("convert", x.shape, [x], dtype=dtype)

    def gte(self, tup: Instr, index: int, shape: Sequence[int], dtype: str | None = None,
            layout: Sequence[int] | None = None) -> Instr:
        return self.emit("get-tuple-element", shape, [tup], dtype=dtype,
                         layout=layout or descending_layout(len(shape)))

    def tuple(self, items: Sequence[Instr]) -> Instr:
        return self.emit("tuple", (), list(items), dtype="tuple", tuple_size=len(items))

    def reshape(self, x: Instr, shape: Sequence[int], *, layout: Sequence[int] | None = None) -> Instr:
        if math.prod(shape) != x.elements:
            raise ValueError(f"reshape {x.shape} -> {tuple(shape)} changes the element count")
        return self.emit("reshape", shape, [x], dtype=x.dtype, layout=layout or descending_layout(len(shape)))

    def transpose(self, x: Instr, perm: Sequence[int]) -> Instr:
        shape = tuple(x.shape[p] for p in perm)
        return self.emit("transpose", shape, [x], dtype=x.dtype, layout=descending_layout(len(shape)),
                         dimensions=tuple(perm))

    def reducer(self, kind: str, dtype: str) -> Computation:
        """The scalar computation a reduce calls (``add`` or ``maximum``), shared per module."""
        key = (kind, dtype)
        if key not in self._reducers:
            self.begin(self.unique(f"{'add' if kind == 'add' else 'max'}_{dtype}"))
            a = self.param((), dtype)
            b = self.param((), dtype)
            self._reducers[key] = self.end(self.emit(kind, (), [a, b], dtype=dtype))
        return self._reducers[key]

    def reduce(self, x: Instr, dims: Sequence[int], kind: str = "add") -> Instr:
        comp = self.reducer(kind, x.dtype)
        init = self.constant((), x.dtype)
        shape = tuple(s for d, s in enumerate(x.shape) if d not in dims)
        return self.emit("reduce", shape, [x, init], dtype=x.dtype, layout=descending_layout(len(shape)),
                         flops=float(x.elements), called=[comp], dimensions=tuple(sorted(dims)))

    def reduce_window(self, x: Instr, window: Sequence[int], strides: Sequence[int],
                      kind: str = "maximum") -> Instr:
        comp = self.reducer(kind, x.dtype)
        init = self.constant((), x.dtype)
        shape = tuple(-(-s // st) for s, st in zip(x.shape, strides, strict=True))
        dims = tuple(WindowDim(size=w, stride=st, padding_low=(w - 1) // 2, padding_high=w // 2)
                     for w, st in zip(window, strides, strict=True))
        return self.emit("reduce-window", shape, [x, init], dtype=x.dtype, layout=x.layout,
                         flops=float(math.prod(shape) * math.prod(window)), called=[comp], window=dims)

    def convolution(self, x: Instr, w: Instr, out_features: int, strides: Sequence[int], *,
                    groups: int = 1, layout: Sequence[int] | None = None) -> Instr:
        """A convolution with batch first, features last (NHWC / NDHWC) and an HWIO kernel."""
        spatial_in = x.shape[1:-1]
        window = w.shape[:-2]
        out_shape = (x.shape[0], *(-(-s // st) for s, st in zip(spatial_in, strides, strict=True)),
                     out_features)
        ns = len(spatial_in)
        dims = ConvDims(
            input_batch=0, input_feature=ns + 1, input_spatial=tuple(range(1, ns + 1)),
            kernel_input_feature=ns, kernel_output_feature=ns + 1, kernel_spatial=tuple(range(ns)),
            output_batch=0, output_feature=ns + 1,
        )
        win = tuple(WindowDim(size=k, stride=st, padding_low=(k - 1) // 2, padding_high=k // 2)
                    for k, st in zip(window, strides, strict=True))
        flops = 2.0 * math.prod(out_shape) * math.prod(window) * (x.shape[-1] // groups)
        return self.emit("convolution", out_shape, [x, w], dtype=x.dtype, layout=layout, flops=flops,
                         window=win, conv_dims=dims, feature_group_count=groups, batch_group_count=1)

    def dot(self, a: Instr, b: Instr, *, batch_dims: int = 0, layout: Sequence[int] | None = None) -> Instr:
        """``a[..., m, k] @ b[..., k, n]`` with ``batch_dims`` leading batch dimensions."""
        if a.shape[:batch_dims] != b.shape[:batch_dims] or a.shape[-1] != b.shape[batch_dims]:
            raise ValueError(f"dot shapes {a.shape} and {b.shape} do not contract")
        out_shape = (*a.shape[:-1], *b.shape[batch_dims + 1:])
        flops = 2.0 * math.prod(out_shape) * a.shape[-1]
        return self.emit("dot", out_shape, [a, b], dtype=a.dtype, layout=layout, flops=flops)

    def slice(self, x: Instr, starts: Sequence[int], limits: Sequence[int]) -> Instr:
        shape = tuple(lim - st for st, lim in zip(starts, limits, strict=True))
        return self.emit("slice", shape, [x], dtype=x.dtype,
                         slice_dims=tuple((st, lim, 1) for st, lim in zip(starts, limits, strict=True)))

    def pad(self, x: Instr, low: Sequence[int], high: Sequence[int]) -> Instr:
        shape = tuple(s + lo + hi for s, lo, hi in zip(x.shape, low, high, strict=True))
        value = self.constant((), x.dtype)
        return self.emit("pad", shape, [x, value], dtype=x.dtype, padding=tuple(zip(low, high, strict=True)))

    def concatenate(self, items: Sequence[Instr], dim: int) -> Instr:
        shape = list(items[0].shape)
        shape[dim] = sum(i.shape[dim] for i in items)
        return self.emit("concatenate", shape, list(items), dtype=items[0].dtype, dimensions=(dim,))

    # -- the result -----------------------------------------------------------------------------
    def build(self, name: str) -> HloGraph:
        if self._open:
            raise ValueError(f"computation {self._open[-1].name} is still open")
        return HloGraph.from_computations(name, self.finished)


@dataclass
class HloGraph:
    """A finished program: instructions in final order plus the arrays the released files hold.

    Shapes: ``n`` instructions; per-node arrays are indexed by node id.
    """

    name: str
    instrs: list[Instr]
    computations: list[tuple[str, int, int]]  # (name, first node, end node) in order
    shapes: np.ndarray  # (n, 6) int64, zero-padded logical dimensions
    ranks: np.ndarray  # (n,) int64
    layouts: np.ndarray  # (n, 6) int64 minor_to_major, -1 padded
    elem_bytes: np.ndarray  # (n,) int64
    flops: np.ndarray  # (n,) float64
    bytes_moved: np.ndarray  # (n,) float64
    operands: list[list[int]]  # operand node ids in operand order (duplicates kept)
    roots: set[int] = field(default_factory=set)  # root node of every computation
    # per node, roots of the computations it calls
    called_roots: list[list[int]] = field(default_factory=list)

    @classmethod
    def from_computations(cls, name: str, computations: Sequence[Computation]) -> HloGraph:
        instrs: list[Instr] = []
        spans = []
        for comp in computations:
            start = len(instrs)
            for instr in comp.instrs:
                instr.id = len(instrs)
                instrs.append(instr)
            spans.append((comp.name, start, len(instrs)))
        n = len(instrs)
        shapes = np.zeros((n, MAX_RANK), dtype=np.int64)
        layouts = np.full((n, MAX_RANK), -1, dtype=np.int64)
        operands = []
        for instr in instrs:
            shapes[instr.id, : instr.rank] = instr.shape
            layouts[instr.id, : len(instr.layout)] = instr.layout
            ids = [o.id for o in instr.operands]
            if any(i < 0 or i >= instr.id for i in ids):
                raise ValueError(f"{name}: {instr.opcode} {instr.id} uses an operand that is not before it")
            operands.append(ids)
        return cls(
            name=name,
            instrs=instrs,
            computations=spans,
            shapes=shapes,
            ranks=np.array([i.rank if i.dtype != "tuple" else 0 for i in instrs], dtype=np.int64),
            layouts=layouts,
            elem_bytes=np.array([ELEMENT_BYTES[i.dtype] for i in instrs], dtype=np.int64),
            flops=np.array([i.flops for i in instrs], dtype=np.float64),
            bytes_moved=np.array([i.bytes_moved for i in instrs], dtype=np.float64),
            operands=operands,
            roots={comp.root.id for comp in computations if comp.root is not None},
            called_roots=[[c.root.id for c in instr.called] for instr in instrs],
        )

    @property
    def num_nodes(self) -> int:
        return len(self.instrs)

    def node_opcode(self) -> np.ndarray:
        """``(n,)`` uint8 opcode ids."""
        return np.array([OPCODE_IDS[i.opcode] for i in self.instrs], dtype=np.uint8)

    def edge_index(self) -> np.ndarray:
        """``(m, 2)`` int64 rows ``[consumer, producer]``, sorted."""
        rows = []
        for instr in self.instrs:
            for v in sorted(set(self.operands[instr.id])):
                rows.append((instr.id, v))
            for root in self.called_roots[instr.id]:
                rows.append((instr.id, root))
        edges = np.array(rows, dtype=np.int64).reshape(-1, 2)
        order = np.lexsort((edges[:, 1], edges[:, 0]))
        return edges[order]

    def node_splits(self) -> np.ndarray:
        """``(1, k)`` int64 computation start offsets, as the upstream featurizer writes them."""
        splits = [0]
        for name, _, end in self.computations:
            if "cluster" in name or "while" in name or "cond" in name:
                splits.append(end)
        if splits[-1] < self.num_nodes:
            splits.append(self.num_nodes)
        return np.array([splits], dtype=np.int64)

    def node_feat(self) -> np.ndarray:
        """``(n, 140)`` float32 node features."""
        rows = np.empty((self.num_nodes, 140), dtype=np.float32)
        for instr in self.instrs:
            a = instr.attrs
            rows[instr.id] = encode_node_features(
                is_root=instr.id in self.roots,
                element_type=instr.dtype,
                shape=instr.shape,
                tuple_size=a.get("tuple_size", 0),
                parameter_number=a.get("parameter_number", 0),
                dimensions=a.get("dimensions", ()),
                window=a.get("window", ()),
                conv_dims=a.get("conv_dims"),
                feature_group_count=a.get("feature_group_count", 0),
                batch_group_count=a.get("batch_group_count", 0),
                slice_dims=a.get("slice_dims", ()),
                dynamic_slice_sizes=a.get("dynamic_slice_sizes", ()),
                padding=a.get("padding", ()),
                is_stable=a.get("is_stable", False),
                minor_to_major=instr.layout,
            )
        return rows

    def configurable_nodes(self) -> np.ndarray:
        """Node ids whose layout a layout configuration sets: convolution, dot and reshape of rank >= 2."""
        return np.array(
            [i.id for i in self.instrs
             if i.opcode in CONFIGURABLE_OPCODES and i.rank >= 2 and i.dtype != "tuple"],
            dtype=np.int64,
        )

    def consumers(self) -> list[list[int]]:
        """Per node, the ids of the nodes that use it as an operand (each once)."""
        users: list[list[int]] = [[] for _ in range(self.num_nodes)]
        for u, ops in enumerate(self.operands):
            for v in sorted(set(ops)):
                users[v].append(u)
        return users
