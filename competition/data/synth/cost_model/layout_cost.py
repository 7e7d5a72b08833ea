"""Layout: the runtime of a whole program under each layout config, with its per-program physics
(see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from competition.data.synth.cost_model.chip import (
    COPY_OVERHEAD_NS,
    FUSED_SHARE,
    HBM_BYTES_PER_NS,
    LANES,
    OP_OVERHEAD_NS,
    PEAK_MXU_FLOPS_PER_NS,
    PEAK_VPU_FLOPS_PER_NS,
    SUBLANES,
    pad_to,
)
from competition.data.synth.graphs import HloGraph

# Layout, generator version 2's single model (``LayoutPhysics()``; version 3 draws it per program): how
# much a node's own layouts slow it (a share of the full padding/order penalty).
NODE_LAYOUT_WEIGHT = 0.05


@dataclass(frozen=True)
class LayoutPhysics:
    """How one program's runtime responds to layouts: drawn once per program (generator version 3).

    Real programs differ in what their layouts cost (docs/synthetic-data.md, "What real runtimes
    teach"): each program draws its own weights, so that a model trained on many programs learns what
    holds across them rather than one program's constants. The defaults are version 2's single model.
    Version 5 dropped the copies that versions 2-4 charged between neighbours whose layouts disagree
    (and the fusion such a copy broke): in the real graphs with runtimes, a setting costs through the
    tensor it sets and nothing else (docs/journal/2026-11-27-what-real-runtimes-teach.md,
    "Version 5: no charge between neighbours").
    """

    node_layout_weight: float = NODE_LAYOUT_WEIGHT  # share paid of the own-layout (padding, order) penalty
    # What a minor (second-minor) dimension other than the row-major one costs beyond its padding.
    minor_order_penalty: float = 1.0
    second_order_penalty: float = 0.25
    padding_exponent: float = 0.75  # how steeply (8, 128) padding waste slows the node
    reshape_copy_share: float = 1.0  # what a reshape that is not a bitcast costs, in plain copies (x3 bytes)


def draw_layout_physics(rng: np.random.Generator) -> LayoutPhysics:
    """One program's layout physics: version 3's ranges for the terms version 5 kept.

    The ranges were chosen by the real-data check (``make bench-real``, transfer protocol), never by
    the embedded competition's own test scores; BENCHMARKS.md, "Real data", has the figures.
    """
    return LayoutPhysics(
        node_layout_weight=float(np.exp(rng.uniform(np.log(0.5), np.log(1.0)))),
        minor_order_penalty=float(rng.uniform(0.0, 0.3)),
        second_order_penalty=float(rng.uniform(0.0, 0.1)),
        padding_exponent=float(rng.uniform(0.75, 1.25)),
        reshape_copy_share=float(np.exp(rng.uniform(np.log(0.05), np.log(0.5)))),
    )


def _gather(shapes: np.ndarray, dims: np.ndarray) -> np.ndarray:
    """``shapes[k, dims[..., k, i]]``: sizes of the dimensions named in ``dims`` (clipped to 0..5)."""
    return shapes[np.arange(shapes.shape[0])[:, None], np.clip(dims, 0, 5)]


def canonical_layouts(layouts: np.ndarray, shapes: np.ndarray) -> np.ndarray:
    """Layouts with size-1 dimensions dropped (they do not change the physical order), -1 padded.

    layouts: ``(..., k, 6)`` minor_to_major, -1 padded; shapes: ``(k, 6)``. Two layouts of a tensor
    are physically the same exactly when their canonical forms are equal.
    """
    layouts = np.asarray(layouts, dtype=np.int64)
    real = (layouts >= 0) & (_gather(shapes, layouts) > 1)
    # A stable partition by sorting packed keys: real entries keep their order, the rest go last.
    slot = np.arange(6)
    keys = np.sort(np.where(real, slot * 8 + layouts, 64 + slot), axis=-1)
    return np.where(keys < 64, keys % 8, -1)


def _row_major(shapes: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """Canonical form of the default layout ``{r-1, ..., 0}`` of each tensor: ``(k, 6)``."""
    default = np.where(np.arange(6) < ranks[:, None], ranks[:, None] - 1 - np.arange(6), -1)
    return canonical_layouts(default, shapes)


def _major_disorder(canonical: np.ndarray, effective_rank: np.ndarray) -> np.ndarray:
    """Fraction of out-of-order pairs among the major dimensions (all but the two most minor)."""
    out = np.zeros(canonical.shape[:-1])
    for i in range(2, 6):
        for j in range(i + 1, 6):
            # The natural order is descending: a later slot holding a larger dimension is out of order.
            out = out + ((effective_rank > j) & (canonical[..., j] > canonical[..., i]))
    return out / np.maximum((effective_rank - 2) * (effective_rank - 3) / 2, 1)


def layout_penalty(shapes: np.ndarray, canonical: np.ndarray, preferred: np.ndarray,
                   physics: LayoutPhysics | None = None) -> np.ndarray:
    """Slowdown (>= 1) of a convolution/dot reading or writing tensors in the given layouts.

    Lane and sublane padding of the (8, 128) tiles the two most minor dimensions are stored in, a
    minor dimension other than the last logical one (the feature / contracting dimension the matrix
    unit streams), a second-minor dimension other than the one before it, and major dimensions out
    of order. Size-1 dimensions are ignored. shapes ``(k, 6)``; canonical layouts ``(..., k, 6)``
    (see ``canonical_layouts``); preferred: the canonical row-major layouts ``(k, 6)``. Returns
    ``(..., k)``.
    """
    eff = (canonical >= 0).sum(axis=-1)
    lane = _gather(shapes, canonical[..., :2]).astype(np.float64)
    lane, sub = lane[..., 0], lane[..., 1]
    lane = np.where(eff >= 1, lane, LANES)
    sub = np.where(eff >= 2, sub, SUBLANES)
    waste = np.minimum((pad_to(lane, LANES) / lane) * (pad_to(sub, SUBLANES) / sub), 16.0)
    minor_off = (canonical[..., 0] != preferred[:, 0]) & (eff >= 2)
    second_off = (canonical[..., 1] != preferred[:, 1]) & (eff >= 3)
    physics = physics or LayoutPhysics()
    penalty = (waste ** physics.padding_exponent * (1.0 + physics.minor_order_penalty * minor_off)
               * (1.0 + physics.second_order_penalty * second_off))
    return penalty * (1.0 + 0.05 * _major_disorder(canonical, eff))


@dataclass
class LayoutCostTables:
    """Per-graph quantities of the layout cost model, computed once and reused for every config.

    Shapes: ``nc`` configurable nodes. Layouts stored here are canonical (see ``canonical_layouts``).
    """

    base_ns: float  # time of every non-configurable node
    steps: float  # hidden repeat count of the program (training steps, loop trips)
    shapes: np.ndarray  # (3, nc, 6) shapes of the output, input and kernel tensor of each node
    ranks: np.ndarray  # (3, nc)
    nbytes: np.ndarray  # (3, nc) bytes of those tensors
    mxu: np.ndarray  # (nc,) matrix-unit work (conv/dot), 0 for reshapes
    row_major: np.ndarray  # (3, nc, 6) canonical default layout of each tensor
    compiled: np.ndarray  # (3, nc, 6) compiled layout of each tensor (not canonical), for unset slots
    operands_compiled: np.ndarray  # (2, nc, 6) canonical compiled layout of each input and kernel
    physics: LayoutPhysics = LayoutPhysics()  # the program's weights


def _node_time(flops: float, nbytes: float, mxu: bool) -> float:
    """Time of a non-configurable node. Elementwise work is mostly fused into its neighbours."""
    compute = flops / (PEAK_MXU_FLOPS_PER_NS if mxu else PEAK_VPU_FLOPS_PER_NS)
    memory = nbytes / HBM_BYTES_PER_NS
    busy = max(compute, memory) + 0.1 * min(compute, memory)
    return busy + OP_OVERHEAD_NS if mxu else FUSED_SHARE * (busy + OP_OVERHEAD_NS)


def _slots(graph: HloGraph, node: int) -> list[int]:
    """The operands whose layout a configuration sets: input, and kernel for convolutions and dots."""
    return graph.operands[node][: 2 if graph.instrs[node].opcode in ("convolution", "dot") else 1]



def complete_layouts(settings: np.ndarray, compiled: np.ndarray) -> np.ndarray:
    """Whole ``minor_to_major`` orders from settings that fix only the minor-most slots.

    settings: ``(..., k, 6)``, the first slots set, the rest -1 (all -1: the compiler's choice);
    compiled: ``(k, 6)`` the compiled layouts. The dimensions not set follow in their compiled order.
    """
    settings = np.asarray(settings, dtype=np.int64)
    compiled = np.broadcast_to(np.asarray(compiled, dtype=np.int64), settings.shape)
    given = (settings >= 0).sum(axis=-1, keepdims=True)
    used = (compiled[..., :, None] == settings[..., None, :]).any(axis=-1) & (compiled >= 0)
    rest = (compiled >= 0) & ~used
    position = given + np.cumsum(rest, axis=-1) - 1
    out = np.where(np.arange(6) < given, settings, -1)
    rows = np.nonzero(rest)
    out[(*rows[:-1], position[rows])] = compiled[rows]
    return out



def layout_tables(graph: HloGraph, config_ids: np.ndarray, steps: float,
                  physics: LayoutPhysics | None = None) -> LayoutCostTables:
    """Precompute the cost-model tables of ``graph`` for the configurable nodes ``config_ids``
    (``physics``: the program's weights; version 2's single model when None)."""
    nc = len(config_ids)
    index = {int(node): j for j, node in enumerate(config_ids)}
    shapes = np.zeros((3, nc, 6), dtype=np.int64)
    ranks = np.zeros((3, nc), dtype=np.int64)
    nbytes = np.zeros((3, nc))
    mxu = np.zeros(nc)
    compiled = np.full((3, nc, 6), -1, dtype=np.int64)
    for j, node in enumerate(config_ids):
        for t, tensor in enumerate([int(node), *_slots(graph, int(node))]):
            compiled[t, j] = graph.layouts[tensor]
            shapes[t, j] = graph.shapes[tensor]
            ranks[t, j] = graph.ranks[tensor]
            nbytes[t, j] = graph.instrs[tensor].nbytes
        if graph.instrs[node].opcode in ("convolution", "dot"):
            mxu[j] = graph.flops[node]
    base = sum(
        _node_time(graph.flops[i], graph.bytes_moved[i], graph.instrs[i].opcode in ("convolution", "dot"))
        for i in range(graph.num_nodes)
        if i not in index
        and graph.instrs[i].opcode not in ("parameter", "constant", "get-tuple-element", "tuple")
    )

    return LayoutCostTables(
        base_ns=float(base),
        steps=float(steps),
        shapes=shapes,
        ranks=ranks,
        nbytes=nbytes,
        mxu=mxu,
        row_major=np.stack([_row_major(shapes[t], ranks[t]) for t in range(3)]),
        compiled=compiled,
        operands_compiled=np.stack([canonical_layouts(compiled[t], shapes[t]) for t in (1, 2)]),
        physics=physics or LayoutPhysics(),
    )


def _differs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.any(a != b, axis=-1)


# Configs x configurable nodes evaluated at once: the work arrays are int64 (c, nc, 18) and a few
# copies of them, so a chunk of 2**20 keeps them near 150 MB each. Every config is evaluated on its
# own row, so chunking does not change a result.
_CHUNK_ELEMENTS = 1 << 20


def layout_runtime(tables: LayoutCostTables, node_config_feat: np.ndarray) -> np.ndarray:
    """Noise-free runtime (ns, float64) of the program under each configuration.

    ``node_config_feat``: ``(c, nc, 18)`` integer layouts (output, input, kernel; -1 padded),
    evaluated a chunk of configs at a time.
    """
    c, nc = node_config_feat.shape[:2]
    step = max(1, _CHUNK_ELEMENTS // max(nc, 1))
    if c <= step:
        return _layout_runtime(tables, node_config_feat)
    return np.concatenate([_layout_runtime(tables, node_config_feat[s:s + step]) for s in range(0, c, step)])


def _layout_runtime(tables: LayoutCostTables, node_config_feat: np.ndarray) -> np.ndarray:
    cfg = np.asarray(node_config_feat, dtype=np.int64)
    c, nc = cfg.shape[:2]
    total = np.full(c, tables.base_ns)
    if nc == 0:
        return total * tables.steps
    canon = np.stack([canonical_layouts(complete_layouts(cfg[:, :, 6 * t: 6 * t + 6], tables.compiled[t]),
                                        tables.shapes[t]) for t in range(3)])
    # A convolution or dot reads its operands in the layout they arrive in: the input and kernel
    # settings of such a node change nothing, only its output's does (version 4: in the real graphs
    # with runtimes, swapping an operand's two minor dimensions never changed a runtime; swapping an
    # output's often did).
    canon[1:, :, tables.mxu > 0] = tables.operands_compiled[:, None, tables.mxu > 0]
    penalty = np.stack([layout_penalty(tables.shapes[t], canon[t], tables.row_major[t], tables.physics)
                        for t in range(3)])  # (3, c, nc)
    physics = tables.physics
    penalty = 1.0 + physics.node_layout_weight * (penalty - 1.0)
    compute = tables.mxu / PEAK_MXU_FLOPS_PER_NS * penalty[0] * np.sqrt(penalty[1] * penalty[2])
    memory = (tables.nbytes[:, None, :] * penalty).sum(axis=0) / HBM_BYTES_PER_NS
    node = np.maximum(compute, memory) + 0.1 * np.minimum(compute, memory) + OP_OVERHEAD_NS
    # A reshape is free (a bitcast) when both its layouts are row-major; otherwise it is a copy.
    bitcast = ~_differs(canon[0], tables.row_major[0]) & ~_differs(canon[1], tables.row_major[1])
    relayout = physics.reshape_copy_share * 3.0 * tables.nbytes[0] / HBM_BYTES_PER_NS + COPY_OVERHEAD_NS
    reshape = np.where(bitcast, OP_OVERHEAD_NS, relayout)
    # Nothing is charged for neighbours whose layouts disagree (version 5): a setting costs through
    # the tensor it sets alone.
    total = total + np.where(tables.mxu > 0, node, reshape).sum(axis=1)
    return total * tables.steps
