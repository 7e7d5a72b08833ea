"""One decoded ``HloModuleProto`` -> graph arrays: the nodes, their 140 features, the edges and the splits.

The part of the TpuGraphs featurizer (docs/featurizer.md) that tile kernels and layout programs share;
``layout.py`` and ``tile.py`` add each kind's configs, ``featurize.py`` reads the files:

- nodes: every instruction of every computation, in proto order (callees first, entry last);
- ``node_opcode``: the opcode string through the upstream id table (1..120, unknown -> 0);
- ``node_feat``: 140 columns, listed once in ``NODE_FEATURE_BLOCKS`` (names in ``NODE_FEATURE_NAMES``);
  numeric lists give their first k values zero-padded, then sum and product, accumulated as wrapping
  int64 and only then rounded to float32 (the product of an empty list is 1);
- ``edge_index``: ``[self, operand]`` per sorted, deduplicated operand id, ``[self, root of callee]``
  per called computation, control edges ignored, rows sorted.

>>> len(NODE_FEATURE_NAMES), NODE_FEATURE_NAMES[28], NODE_FEATURE_NAMES[133]
(140, 'shape_dimensions_product', 'is_stable')
>>> opcode_id("convolution"), opcode_id("no-such-op")
(26, 0)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from competition.data.hlo import NODE_FEATURE_NAMES, opcode_id
from competition.data.protos.schema import PRIMITIVE_TYPE_ONE_HOT
from competition.data.protos.wire import empty_message

Message = dict[str, Any]

__all__ = [
    "NODE_FEATURE_BLOCKS", "NODE_FEATURE_NAMES", "FeatureBlock", "Message", "ModuleGraph", "encode_module",
    "leading", "leading_bools", "leading_sum_product", "node_feature_matrix", "opcode_id",
]

# ----------------------------------------------------------------------------------------------------
# Fixed-length views of variable-length lists, as the upstream featurizer builds them. Values stay
# Python ints here; the whole matrix is cast int64 -> float32 at the end, as C++'s static_cast does.

_INT64_MIN, _TWO_64 = -(1 << 63), 1 << 64


def _wrap_int64(value: int) -> int:
    """``value`` reduced to int64 two's complement, as a C++ int64 accumulator wraps."""
    return (value - _INT64_MIN) % _TWO_64 + _INT64_MIN


def leading_sum_product(values: Sequence[int], k: int, *, empty_product: int = 1) -> list[int]:
    """First ``k`` values zero-padded, then their sum and product (``empty_product`` if none).

    >>> leading_sum_product([3, 4], 6)
    [3, 4, 0, 0, 0, 0, 7, 12]
    >>> leading_sum_product([], 2), leading_sum_product([], 2, empty_product=0)
    ([0, 0, 0, 1], [0, 0, 0, 0])
    """
    product = _wrap_int64(math.prod(values)) if values else empty_product
    return leading(values, k) + [_wrap_int64(sum(values)), product]


def leading(values: Sequence[int], k: int) -> list[int]:
    """First ``k`` values, zero-padded to length ``k``."""
    head = list(values[:k])
    return head + [0] * (k - len(head))


def leading_bools(values: Sequence[bool], k: int) -> list[int]:
    """First ``k`` booleans as 0/1 zero-padded, then the count of trues and of falses."""
    trues = sum(1 for v in values if v)
    return leading([int(v) for v in values[:k]], k) + [trues, len(values) - trues]


# ----------------------------------------------------------------------------------------------------
# The node feature columns, in one place. Each block names its columns and computes them from an
# instruction and its computation. NODE_FEATURE_NAMES follows the upstream README's 0..139 list.


@dataclass(frozen=True)
class FeatureBlock:
    """A run of node-feature columns: ``names`` and ``compute(instruction, computation) -> ints``."""

    names: tuple[str, ...]
    compute: Callable[[Message, Message], list[int]]


def _seq_names(prefix: str, k: int, tail: tuple[str, ...] = ("sum", "product")) -> tuple[str, ...]:
    return tuple(f"{prefix}_{i}" for i in range(k)) + tuple(f"{prefix}_{t}" for t in tail)


_EMPTY = {
    name: empty_message(name)
    for name in ("ShapeProto", "LayoutProto", "Window", "PaddingConfig", "ConvolutionDimensionNumbers")
}


def _sub(message: Message, field: str, type_name: str) -> Message:
    # An absent sub-message reads as all defaults, as in C++ protobuf.
    value = message[field]
    return value if value is not None else _EMPTY[type_name]


def _shape(inst: Message) -> Message:
    return _sub(inst, "shape", "ShapeProto")


def _window_dims(inst: Message) -> list[Message]:
    return _sub(inst, "window", "Window")["dimensions"]


def _element_type_one_hot(inst: Message, comp: Message) -> list[int]:
    element_type = _shape(inst)["element_type"]
    return [int(element_type == value) for value, _ in PRIMITIVE_TYPE_ONE_HOT]


def _window_block(field: str) -> FeatureBlock:
    return FeatureBlock(
        _seq_names(f"window_{field}", 6),
        lambda inst, comp: leading_sum_product([d[field] for d in _window_dims(inst)], 6),
    )


def _conv_dims(inst: Message, comp: Message) -> list[int]:
    conv = _sub(inst, "convolution_dimension_numbers", "ConvolutionDimensionNumbers")
    return [
        conv["input_batch_dimension"],
        conv["input_feature_dimension"],
        *leading(conv["input_spatial_dimensions"], 4),
        conv["kernel_input_feature_dimension"],
        conv["kernel_output_feature_dimension"],
        *leading(conv["kernel_spatial_dimensions"], 4),
        conv["output_batch_dimension"],
        conv["output_feature_dimension"],
    ]


def _slice_block(field: str) -> FeatureBlock:
    return FeatureBlock(
        _seq_names(f"slice_dims_{field}", 2),
        lambda inst, comp: leading_sum_product([s[field] for s in inst["slice_dimensions"]], 2),
    )


def _padding_block(field: str) -> FeatureBlock:
    return FeatureBlock(
        _seq_names(f"padding_config_{field}", 2),
        lambda inst, comp: leading_sum_product(
            [d[field] for d in _sub(inst, "padding_config", "PaddingConfig")["dimensions"]], 2
        ),
    )


_CONV = "convolution_dim_numbers"
NODE_FEATURE_BLOCKS: tuple[FeatureBlock, ...] = (
    FeatureBlock(("is_root",), lambda inst, comp: [int(inst["id"] == comp["root_id"])]),
    FeatureBlock(("element_size_in_bits",), lambda inst, comp: [0]),  # deprecated upstream, always 0
    FeatureBlock(tuple(f"shape_element_type_is_{n}" for _, n in PRIMITIVE_TYPE_ONE_HOT),
                 _element_type_one_hot),
    FeatureBlock(_seq_names("shape_dimensions", 6),
                 lambda inst, comp: leading_sum_product(_shape(inst)["dimensions"], 6)),
    FeatureBlock(("shape_tuple_shapes_size",), lambda inst, comp: [len(_shape(inst)["tuple_shapes"])]),
    FeatureBlock(("parameter_number",), lambda inst, comp: [inst["parameter_number"]]),
    FeatureBlock(_seq_names("dimensions", 6, ()), lambda inst, comp: leading(inst["dimensions"], 6)),
    _window_block("size"),
    _window_block("stride"),
    _window_block("padding_low"),
    _window_block("padding_high"),
    _window_block("window_dilation"),
    _window_block("base_dilation"),
    FeatureBlock(
        _seq_names("window_window_reversal", 6, ("true_count", "false_count")),
        lambda inst, comp: leading_bools([d["window_reversal"] for d in _window_dims(inst)], 6),
    ),
    FeatureBlock(
        (
            f"{_CONV}_input_batch_dim",
            f"{_CONV}_input_feature_dim",
            *_seq_names(f"{_CONV}_input_spatial_dims", 4, ()),
            f"{_CONV}_kernel_input_feature_dim",
            f"{_CONV}_kernel_output_feature_dim",
            *_seq_names(f"{_CONV}_kernel_spatial_dims", 4, ()),
            f"{_CONV}_output_batch_dim",
            f"{_CONV}_output_feature_dim",
        ),
        _conv_dims,
    ),
    FeatureBlock(("feature_group_count",), lambda inst, comp: [inst["feature_group_count"]]),
    FeatureBlock(("batch_group_count",), lambda inst, comp: [inst["batch_group_count"]]),
    _slice_block("start"),
    _slice_block("stride"),
    _slice_block("limit"),
    FeatureBlock(_seq_names("dynamic_slice_sizes", 2),
                 lambda inst, comp: leading_sum_product(inst["dynamic_slice_sizes"], 2)),
    _padding_block("edge_padding_low"),
    _padding_block("edge_padding_high"),
    FeatureBlock(("is_stable",), lambda inst, comp: [int(inst["is_stable"])]),
    FeatureBlock(
        _seq_names("layout_minor_to_major", 6, ()),
        lambda inst, comp: leading(_sub(_shape(inst), "layout", "LayoutProto")["minor_to_major"], 6),
    ),
)
# The blocks compute the columns; competition.data.hlo names them. They must agree column for column.
if tuple(name for block in NODE_FEATURE_BLOCKS for name in block.names) != NODE_FEATURE_NAMES:
    raise ImportError("NODE_FEATURE_BLOCKS disagree with competition.data.hlo.NODE_FEATURE_NAMES")


# ----------------------------------------------------------------------------------------------------
# The graph of one HloModuleProto


@dataclass
class ModuleGraph:
    """Nodes, edges and computation splits of one HLO module (shared by tile and layout graphs)."""

    node_feat: np.ndarray  # (n, 140) float32
    node_opcode: np.ndarray  # (n,) uint8
    edge_index: np.ndarray  # (m, 2) int64, rows [consumer, producer], sorted
    node_splits: np.ndarray  # (1, k) int64 start offsets of major computations


def node_feature_matrix(module: Message, blocks: Sequence[FeatureBlock] = NODE_FEATURE_BLOCKS) -> np.ndarray:
    """Feature rows of every instruction of ``module`` (a decoded ``HloModuleProto``), in node order.

    Pass your own ``blocks`` to compute extra columns aligned with the released node order.
    Returns a float32 array of shape ``(n, sum of block widths)``.
    """
    rows = []
    for comp in module["computations"]:
        for inst in comp["instructions"]:
            row: list[int] = []
            for block in blocks:
                row.extend(block.compute(inst, comp))
            rows.append(row)
    width = sum(len(b.names) for b in blocks)
    # int64 first, then one int64 -> float32 cast: the rounding C++ static_cast<float>(int64_t) does.
    return np.asarray(rows, dtype=np.int64).reshape(len(rows), width).astype(np.float32)


def encode_module(module: Message, *, where: str = "module") -> ModuleGraph:
    """Nodes, opcodes, edges and node_splits of a decoded ``HloModuleProto`` (docs/featurizer.md, The rules).

    Raises ``ValueError`` naming the instruction when an operand or a called computation does not
    exist in the module (the upstream featurizer aborts on those).
    """
    computations = module["computations"]
    # Instruction id -> node index; a repeated id maps to its last instruction, as upstream's map does.
    position: dict[int, int] = {}
    for index, inst in enumerate(inst for comp in computations for inst in comp["instructions"]):
        position[inst["id"]] = index
    root_of = {comp["id"]: comp["root_id"] for comp in computations}

    opcodes: list[int] = []
    edges: list[tuple[int, int]] = []
    splits = [0]
    for comp in computations:
        for inst in comp["instructions"]:
            node = len(opcodes)
            opcodes.append(opcode_id(inst["opcode"]))
            for operand in sorted(set(inst["operand_ids"])):
                if operand not in position:
                    raise ValueError(
                        f"{where}: instruction {inst['name']!r} (id {inst['id']}) in computation "
                        f"{comp['name']!r} has operand id {operand}, which no instruction of the module has"
                    )
                edges.append((node, position[operand]))
            for callee in inst["called_computation_ids"]:
                if callee not in root_of or root_of[callee] not in position:
                    raise ValueError(
                        f"{where}: instruction {inst['name']!r} (id {inst['id']}) in computation "
                        f"{comp['name']!r} calls computation id {callee}, which the module does not have "
                        "(or whose root instruction is missing)"
                    )
                edges.append((node, position[root_of[callee]]))
        name = comp["name"]
        if "cluster" in name or "while" in name or "cond" in name:
            splits.append(len(opcodes))
    count = len(opcodes)
    if splits[-1] < count:
        splits.append(count)

    edge_index = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if len(edge_index):
        # Sorted rows; duplicates (an instruction calling one computation twice) kept once.
        edge_index = np.unique(edge_index, axis=0)
    return ModuleGraph(
        node_feat=node_feature_matrix(module),
        node_opcode=np.asarray(opcodes, dtype=np.uint8),
        edge_index=edge_index,
        node_splits=np.asarray(splits, dtype=np.int64).reshape(1, -1),
    )
