"""Layout geometry: the per-graph facts the layout features and the heuristic need
(``LayoutContext``: tensor shapes, expected layouts, producer links, tied groups, how each reshape
regroups dimensions) and, per config, the padding and agreement of every configurable node's output /
input / kernel layout and whether each reshape is a copy (``LayoutGeometry``, whose ``cost`` is the
heuristic's estimate)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from competition.data.compact import layout_row_codes, pack_layout_vector_codes
from competition.data.graphs import LayoutGraph
from competition.data.hlo import OPCODE_IDS
from competition.data.reshapes import copy_mask, reshape_groups
from solutions.features.shapes import (
    CONFIGURABLE_KINDS,
    LANES,
    MAX_DIMS,
    MINOR_TO_MAJOR,
    SUBLANES,
    config_chunks,
    crop_layout,
    layout_values,
    node_shapes,
    pad_factor,
)

RESHAPE = CONFIGURABLE_KINDS.index("reshape")
MXU_KINDS = (CONFIGURABLE_KINDS.index("convolution"), CONFIGURABLE_KINDS.index("dot"))
# The heuristic's roofline, in multiply-adds (MACs) per bf16 element moved to or from HBM: on TPU v3,
# the chip the released runtimes were measured on (the TpuGraphs paper), 123 TFLOP/s of bf16 matrix
# work against 900 GB/s of HBM per chip; 2 flops per MAC and 2 bytes per element cancel. Public
# figures, not fitted.
MACS_PER_ELEMENT = 123e12 / 900e9


@dataclass(frozen=True)
class LayoutContext:
    """What the layout features need from a graph besides its configs; computed once per graph.

    Shapes: nc configurable nodes; vectors are (output, input, kernel).
    """

    tensor_dims: np.ndarray  # (nc, 3, 6) float64 dims of the output / input operand / kernel operand
    tensor_elements: np.ndarray  # (nc, 3) float64 element counts (0 where the tensor is unknown)
    rank: np.ndarray  # (nc, 3) int64 slots a vector sets (max over configs of its non -1 slots)
    expected: np.ndarray  # (nc, 3, 6) int64 layout the neighbours expect, -1 beyond the rank
    producer: np.ndarray  # (nc, 3) int64 configurable index whose output feeds this vector, -1 if none
    has_plain_consumer: np.ndarray  # (nc,) bool: some consumer is not configurable
    kind: np.ndarray  # (nc,) int64 index into CONFIGURABLE_KINDS, -1 for another opcode
    mode_codes: np.ndarray  # (nc,) int64 most common packed 18-d row of each node over the graph's configs
    # (nc,) int64 configurable node whose settings each node's copy: itself, or the first node of its
    # tied group (identical 18-d row in every config of the graph)
    representative: np.ndarray | None = None
    # (nc, 2, 6) int64: for a reshape, the group of each dimension of its output (0) and input (1),
    # -1 for a size-1 dimension or none (``reshape_groups``); all -1 for other nodes and for reshapes
    # whose two shapes do not hold the same number of elements (nothing is then known of their bytes)
    reshape_groups: np.ndarray | None = None
    # (nc,) float64 for a convolution or dot: its multiply-adds, estimated as sqrt(output x input x
    # kernel elements) (exact for a dot, M*N*K; a convolution's sqrt(window) times its own), and its two
    # operands' elements; 0 for other nodes and where an operand is not found. The heuristic's roofline
    # reads them (``LayoutGeometry.cost``).
    mxu_work: np.ndarray | None = None
    operand_elements: np.ndarray | None = None

    @property
    def num_configurable(self) -> int:
        return int(self.rank.shape[0])


def tied_groups(codes: np.ndarray) -> np.ndarray:
    """(nc,) the first node of each node's tied group, from (c, nc) packed rows of every config.

    >>> tied_groups(np.array([[1, 2, 1, 3], [4, 5, 4, 5]])).tolist()
    [0, 1, 0, 3]
    """
    if codes.shape[1] == 0:
        return np.zeros(0, dtype=np.int64)
    _, first, inverse = np.unique(codes.T, axis=0, return_index=True, return_inverse=True)
    return first[inverse.reshape(-1)].astype(np.int64)


def column_modes(codes: np.ndarray) -> np.ndarray:
    """(nc,) most common value of each column of (c, nc) codes (the smallest among equally common)."""
    modes = np.zeros(codes.shape[1], dtype=np.int64)
    for j in range(codes.shape[1]):
        values, counts = np.unique(codes[:, j], return_counts=True)
        modes[j] = values[np.argmax(counts)]
    return modes


def configurable_kinds(graph: LayoutGraph) -> np.ndarray:
    """(nc,) int64 each configurable node's index into ``CONFIGURABLE_KINDS``, -1 for another opcode."""
    kind_of_opcode = {OPCODE_IDS[k]: i for i, k in enumerate(CONFIGURABLE_KINDS)}
    ids = np.asarray(graph.node_config_ids, dtype=np.int64)
    return np.array([kind_of_opcode.get(int(op), -1) for op in graph.node_opcode[ids]], dtype=np.int64)


def operand_spans(graph: LayoutGraph,
                  nodes: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where the operands of ``nodes`` (node ids; default the configurable nodes, in their order) lie
    among the edges: ``(producers, starts, stops)``, the ``j``-th node's operands being
    ``producers[starts[j]:stops[j]]`` (the released edges are sorted by consumer)."""
    nodes = np.asarray(graph.node_config_ids if nodes is None else nodes, dtype=np.int64)
    consumers, producers = graph.edge_index[:, 0], graph.edge_index[:, 1]
    return (producers, np.searchsorted(consumers, nodes, side="left"),
            np.searchsorted(consumers, nodes, side="right"))


def matrix_terms(graph: LayoutGraph, kind: np.ndarray, elements: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per configurable node (nc,): the multiply-adds of a convolution or dot and the elements of its two
    operands, 0 for other nodes and where no operand is found (``LayoutContext.mxu_work``,
    ``operand_elements``). Read from the node arrays and edges only; ``elements``: every node's (n,)."""
    ids = np.asarray(graph.node_config_ids, dtype=np.int64)
    mxu_work, operand_elements = np.zeros(ids.size), np.zeros(ids.size)
    producers, starts, stops = operand_spans(graph)
    for j in np.flatnonzero(np.isin(kind, MXU_KINDS) & (stops > starts)):
        operands = producers[starts[j]:stops[j]]
        # Two operands; the released edges are deduplicated, so x . x shows one producer. The work is
        # sqrt(output x input x kernel elements): exact for a dot (sqrt(MN * MK * KN) = MNK), a
        # convolution's times the square root of its window, activations or weight gradient alike.
        a, b = (operands[0], operands[1]) if operands.size > 1 else (operands[0], operands[0])
        operand_elements[j] = elements[a] + elements[b]
        mxu_work[j] = np.sqrt(elements[ids[j]] * elements[a] * elements[b])
    return mxu_work, operand_elements


def layout_context(graph: LayoutGraph, *, with_tied: bool = False) -> LayoutContext:
    """Per-graph facts for the layout features: tensor shapes, expected layouts, producer links.

    ``with_tied`` also finds the tied groups (``representative``): it sorts every config row of the
    graph, which on a 100,000-config graph costs more than the rest, so it is computed only when asked.

    Operands are found through the edges (``[consumer, producer]``; ``_link_operands``). A producer
    that is itself configurable is linked by index, so its chosen output layout is compared per
    config; otherwise its ``node_feat`` layout is what the vector should match.
    """
    feat = graph.node_config_feat
    ids = graph.node_config_ids.astype(np.int64)
    nc = ids.shape[0]
    dims, elements, node_rank = node_shapes(graph.node_feat)
    node_layout = layout_values(graph.node_feat[:, MINOR_TO_MAJOR])
    config_index = np.full(graph.num_nodes, -1, dtype=np.int64)
    config_index[ids] = np.arange(nc)
    rank, top, codes = _config_pass(feat, nc)

    tensor_dims = np.zeros((nc, 3, MAX_DIMS))
    tensor_elements = np.zeros((nc, 3))
    expected = np.full((nc, 3, MAX_DIMS), -1, dtype=np.int64)
    producer = np.full((nc, 3), -1, dtype=np.int64)
    tensor_dims[:, 0], tensor_elements[:, 0] = dims[ids], elements[ids]
    expected[:, 0] = crop_layout(node_layout[ids], rank[:, 0])
    kind = configurable_kinds(graph)
    mxu_work, operand_elements = matrix_terms(graph, kind, elements)
    producers, starts, stops = operand_spans(graph)
    for j in range(nc):
        for vector, v in _link_operands(producers[starts[j] : stops[j]], node_rank, rank[j], top[j]):
            tensor_dims[j, vector], tensor_elements[j, vector] = dims[v], elements[v]
            producer[j, vector] = config_index[v]
            expected[j, vector] = crop_layout(node_layout[v], np.int64(rank[j, vector]))

    # Consumers of each configurable node: producers column equals its id (edges sorted by consumer only).
    consumer_is_plain = config_index[graph.edge_index[:, 0]] < 0
    has_plain_consumer = np.zeros(nc, dtype=bool)
    linked = config_index[producers]
    has_plain_consumer[linked[(linked >= 0) & consumer_is_plain]] = True
    return LayoutContext(
        tensor_dims=tensor_dims, tensor_elements=tensor_elements, rank=rank, expected=expected,
        producer=producer, has_plain_consumer=has_plain_consumer, kind=kind,
        mode_codes=column_modes(codes) if feat.shape[0] else np.zeros(nc, np.int64),
        representative=(tied_groups(codes) if feat.shape[0] else np.arange(nc)) if with_tied else None,
        reshape_groups=_reshape_groups_of(kind, rank, tensor_dims), mxu_work=mxu_work,
        operand_elements=operand_elements,
    )


def _config_pass(feat: np.ndarray, nc: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One pass over the configs (a memory-mapped cached graph is read once): each vector's rank (slots
    it sets in any config) (nc, 3), the largest dimension it names (nc, 3), and the row codes (c, nc)."""
    rank = np.zeros((nc, 3), dtype=np.int64)
    top = np.full((nc, 3), -1, dtype=np.int64)
    codes = np.empty(feat.shape[:2], dtype=np.int64)
    for part in config_chunks(*feat.shape[:2]):
        chunk = feat[part]
        vectors = chunk.reshape(part.stop - part.start, nc, 3, MAX_DIMS)
        rank = np.maximum(rank, (vectors != -1).sum(axis=-1).max(axis=0, initial=0))
        top = np.maximum(top, vectors.max(axis=(0, 3), initial=-1).astype(np.int64))
        codes[part] = pack_layout_vector_codes(chunk)
    return rank, top, codes


def _link_operands(operands: np.ndarray, node_rank: np.ndarray, rank: np.ndarray,
                   top: np.ndarray) -> list[tuple[int, int]]:
    """(vector, operand node) of a configurable node's input (1) and kernel (2) vectors.

    The released edges are sorted and deduplicated, so operand order is lost: the input vector is
    matched to the first producer that can hold it, the kernel vector to the next one (the same one
    when there is only one). A producer holds a vector whose rank (slots it sets) equals its own rank;
    failing that, one whose rank is larger and takes every dimension the vector names (``_holds``):
    the real releases set only the two minor-most slots of a 4-D or 5-D convolution's tensors, whose
    operands a rank match alone never found."""
    found: list[tuple[int, int]] = []
    used: set[int] = set()
    for vector in (1, 2):
        if rank[vector] == 0:
            continue
        matching = _holds(operands, node_rank, rank[vector], top[vector])
        if not matching:
            continue
        fresh = [v for v in matching if v not in used]
        v = int(fresh[0] if fresh else matching[0])
        used.add(v)
        found.append((vector, v))
    return found


def _reshape_groups_of(kind: np.ndarray, rank: np.ndarray, tensor_dims: np.ndarray) -> np.ndarray:
    """(nc, 2, 6) the dimension groups of each reshape's output and input (``reshape_groups``), -1 where
    none are known."""
    groups = np.full((kind.shape[0], 2, MAX_DIMS), -1, dtype=np.int64)
    for j in np.flatnonzero((kind == RESHAPE) & (rank[:, 0] > 0) & (rank[:, 1] > 0)):
        found = reshape_groups(tensor_dims[j, 0, : rank[j, 0]], tensor_dims[j, 1, : rank[j, 1]])
        if found is not None:
            groups[j] = found
    return groups


def _holds(candidates: Iterable[int], node_rank: np.ndarray, slots: int, top: int) -> list[int]:
    """The candidates (node ids, in the given order) that can hold a layout vector setting ``slots``
    slots and naming dimensions up to ``top``: those whose rank is ``slots``, if any; else those of a
    larger rank (a vector setting only the minor-most slots of a higher-rank tensor). Either way the
    tensor must have dimension ``top``."""
    holds_top = [int(v) for v in candidates if node_rank[v] > top]
    exact = [v for v in holds_top if node_rank[v] == slots]
    return exact if exact else [v for v in holds_top if node_rank[v] > slots]


@dataclass(frozen=True)
class LayoutGeometry:
    """Per config and configurable node: padding, relayout and reshape-copy facts; shapes (c, nc, 3)."""

    active: np.ndarray  # bool: the node has this vector (rank > 0)
    padded_elements: np.ndarray  # tensor elements after (8, 128) padding in the chosen layout
    mismatch: np.ndarray  # bool: the chosen layout differs from what the neighbour provides / expects
    minor_size: np.ndarray  # float64 size of the minor-most dimension (for an unset vector: as assumed)
    second_size: np.ndarray  # float64 size of the second-minor dimension (1 when rank < 2)
    layouts: np.ndarray  # (c, nc, 3, 6) int64 the chosen layouts as given (-1 = unset)
    values: np.ndarray  # (c, nc, 18) int64 the rows as given, converted once (``layout_values``)
    reshape: np.ndarray  # (nc,) bool: the node is a reshape
    reshape_copy: np.ndarray  # (c, nc) bool: a reshape whose layouts do not keep the bytes in order
    output_elements: np.ndarray  # (nc,) float64 elements of each node's output (0 = unknown)
    mxu_work: np.ndarray  # (nc,) float64 multiply-adds of a convolution or dot (``LayoutContext``)
    operand_elements: np.ndarray  # (nc,) float64 elements a convolution or dot reads

    def codes(self) -> np.ndarray:
        """(c, nc) int64: each node's whole row as ``pack_layout_vector_codes`` packs it (no second check:
        the rows were read through ``layout_values``)."""
        return layout_row_codes(self.values)

    def cost(self) -> np.ndarray:
        """(c,) the heuristic's estimate in multiply-add times (rule 3, ``solutions.methods.heuristic``).

        A convolution or dot takes the longer of its matrix work, inflated by the (8, 128) padding of
        the output tiles it computes, and its memory traffic (its padded output written, its operands
        read as they arrive), at the roofline's ``MACS_PER_ELEMENT``. A reshape is free when it is a
        bitcast, else a copy that reads its input and writes its output, both padded. Nothing is
        charged for neighbours whose layouts disagree.
        """
        padded = self.padded_elements * self.active
        output = padded[:, :, 0]
        known = self.active[:, :, 0] & (self.output_elements[None] > 0)
        waste = np.where(known, output / np.where(known, self.output_elements[None], 1.0), 1.0)
        memory = MACS_PER_ELEMENT * (output + self.operand_elements[None])
        node = np.maximum(self.mxu_work[None] * waste, memory)
        copied = MACS_PER_ELEMENT * (padded[:, :, 0] + padded[:, :, 1]) * self.reshape_copy
        return np.where(self.reshape[None], copied, node).sum(axis=1)


def reshape_copies(chosen: np.ndarray, context: LayoutContext) -> np.ndarray:
    """(c, nc) bool: the reshapes whose chosen layouts make them a copy rather than a bitcast
    (``competition.data.reshapes``: both sides must store the same groups of dimensions in the same
    order). Where a side is unset (the compiler's choice, assumed to be the bitcast), a layout is not a
    permutation of its dimensions, or the shapes are unknown, nothing is charged.

    chosen: (c, nc, 3, 6) the chosen layouts cropped to each vector's rank (-1 = unset).
    """
    c, nc = chosen.shape[:2]
    copy = np.zeros((c, nc), dtype=bool)
    if context.reshape_groups is None:
        return copy
    for j in np.flatnonzero((context.reshape_groups >= 0).any(axis=(1, 2))):
        copy[:, j] = copy_mask(chosen[:, j, 0], chosen[:, j, 1], context.reshape_groups[j],
                               (int(context.rank[j, 0]), int(context.rank[j, 1])))
    return copy


def layout_geometry(node_config_feat: np.ndarray, context: LayoutContext) -> LayoutGeometry:
    """Padding and agreement of every (config, node, vector) of a chunk of configs (c, nc, 18)."""
    c, nc = node_config_feat.shape[:2]
    values = layout_values(node_config_feat)  # (c, nc, 18), converted once for every use below
    layouts = values.reshape(c, nc, 3, MAX_DIMS)
    active = np.broadcast_to(context.rank > 0, (c, nc, 3))
    # What each vector should agree with: a configurable producer's chosen output, else the fixed layout.
    expected = np.broadcast_to(context.expected, (c, nc, 3, MAX_DIMS)).copy()
    for vector in (1, 2):
        linked = np.flatnonzero(context.producer[:, vector] >= 0)
        if linked.size:
            source = layouts[:, context.producer[linked, vector], 0]
            expected[:, linked, vector] = crop_layout(source, context.rank[linked, vector])
    # An unset vector (-1 slots) leaves the choice to the compiler: not counted as a mismatch.
    chosen = crop_layout(layouts, context.rank)
    # Unknown on either side (unset vector, operand not found, producer's output unset): no mismatch.
    known = (chosen[..., 0] != -1) & (expected[..., 0] != -1)
    mismatch = known & (chosen != expected).any(axis=-1)
    output_free = ~context.has_plain_consumer  # configurable consumers are checked on their own input
    mismatch[:, :, 0] &= ~output_free[None, :]

    # An unset vector is the compiler's choice: assume it picks what the neighbour expects, else the
    # default descending layout, when estimating padding.
    descending = crop_layout(context.rank[..., None] - 1 - np.arange(MAX_DIMS), context.rank)  # (nc, 3, 6)
    fallback = np.where(expected[..., :1] != -1, expected, descending[None])
    effective = np.where(chosen[..., :1] == -1, fallback, chosen)
    minor = effective[..., 0]
    second = np.where(context.rank[None] >= 2, effective[..., 1], -1)
    dims = np.broadcast_to(context.tensor_dims, (c, nc, 3, MAX_DIMS))
    minor_size = np.take_along_axis(dims, np.clip(minor, 0, MAX_DIMS - 1)[..., None], axis=-1)[..., 0]
    second_size = np.take_along_axis(dims, np.clip(second, 0, MAX_DIMS - 1)[..., None], axis=-1)[..., 0]
    minor_size = np.where(minor >= 0, minor_size, 1.0)
    second_size = np.where(second >= 0, second_size, 1.0)
    padding = pad_factor(minor_size, LANES) * pad_factor(second_size, SUBLANES)
    padded = context.tensor_elements[None] * padding
    return LayoutGeometry(active=active, padded_elements=padded, mismatch=mismatch, minor_size=minor_size,
                          second_size=second_size, layouts=chosen, values=values,
                          reshape=context.kind == RESHAPE, reshape_copy=reshape_copies(chosen, context),
                          output_elements=context.tensor_elements[:, 0],
                          mxu_work=_or_zeros(context.mxu_work, nc),
                          operand_elements=_or_zeros(context.operand_elements, nc))


def _or_zeros(values: np.ndarray | None, n: int) -> np.ndarray:
    return np.zeros(n) if values is None else values


