"""The generator's encoders: one HLO instruction's fields -> its 140 ``node_feat`` values, a tile
kernel's sizes -> its 24 ``config_feat`` values.

``encode_node_features`` follows the upstream featurizer's rules (first k values zero-padded, then the
sum and the product of *all* values, the product of an empty list being 1; ``is_root`` set for the root
of every computation). The format's vocabularies it encodes with (opcode ids, column names, element
types) live in ``competition.data.hlo``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from competition.data.hlo import ELEMENT_TYPES, NODE_FEATURE_INDEX, NODE_FEATURE_NAMES

# Column offsets used by the encoder.
_COL = NODE_FEATURE_INDEX
_ETYPE0 = _COL["shape_element_type_is_invalid_type"]
_WINDOW_FIELDS = ("size", "stride", "padding_low", "padding_high", "window_dilation", "base_dilation")
# The row of an instruction with every field unset: products of empty lists are 1 in node features.
_EMPTY_NODE_ROW = np.zeros(len(NODE_FEATURE_NAMES), dtype=np.float64)
_EMPTY_NODE_ROW[[i for i, name in enumerate(NODE_FEATURE_NAMES) if name.endswith("_product")]] = 1.0

# -- the encoder ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WindowDim:
    """One dimension of a convolution or reduce-window window (HLO ``WindowDimension``)."""

    size: int
    stride: int = 1
    padding_low: int = 0
    padding_high: int = 0
    window_dilation: int = 1
    base_dilation: int = 1
    window_reversal: bool = False


@dataclass(frozen=True)
class ConvDims:
    """Convolution dimension numbers (HLO ``ConvolutionDimensionNumbers``)."""

    input_batch: int
    input_feature: int
    input_spatial: tuple[int, ...]
    kernel_input_feature: int
    kernel_output_feature: int
    kernel_spatial: tuple[int, ...]
    output_batch: int
    output_feature: int


def sequence_features(values: Sequence[int], k: int, *, empty_product: int = 1) -> list[float]:
    """First ``k`` values zero-padded, then the sum and the product of all values.

    >>> sequence_features([2, 3, 4], 2)
    [2.0, 3.0, 9.0, 24.0]
    >>> sequence_features([], 2), sequence_features([], 2, empty_product=0)
    ([0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0])
    """
    head = [float(v) for v in values[:k]] + [0.0] * max(0, k - len(values))
    product = math.prod(int(v) for v in values) if values else empty_product
    return head + [float(sum(int(v) for v in values)), float(product)]


def encode_node_features(
    *,
    is_root: bool,
    element_type: str,
    shape: Sequence[int],
    tuple_size: int = 0,
    parameter_number: int = 0,
    dimensions: Sequence[int] = (),
    window: Sequence[WindowDim] = (),
    conv_dims: ConvDims | None = None,
    feature_group_count: int = 0,
    batch_group_count: int = 0,
    slice_dims: Sequence[tuple[int, int, int]] = (),
    dynamic_slice_sizes: Sequence[int] = (),
    padding: Sequence[tuple[int, int]] = (),
    is_stable: bool = False,
    minor_to_major: Sequence[int] = (),
) -> np.ndarray:
    """The 140 ``node_feat`` values of one instruction (float32).

    ``slice_dims`` holds ``(start, limit, stride)`` per dimension, ``padding`` ``(low, high)``.
    Fields an opcode does not have keep their defaults, which encode like the upstream featurizer
    encodes an unset proto field (zeros, products of 1).
    """
    row = _EMPTY_NODE_ROW.copy()
    row[_COL["is_root"]] = float(is_root)
    row[_ETYPE0 + ELEMENT_TYPES.index(element_type)] = 1.0
    if shape:
        c = _COL["shape_dimensions_0"]
        row[c : c + 8] = sequence_features(list(shape), 6)
    row[_COL["shape_tuple_shapes_size"]] = tuple_size
    row[_COL["parameter_number"]] = parameter_number
    if dimensions:
        c = _COL["dimensions_0"]
        row[c : c + min(6, len(dimensions))] = list(dimensions)[:6]
    if window:
        for field in _WINDOW_FIELDS:
            c = _COL[f"window_{field}_0"]
            row[c : c + 8] = sequence_features([getattr(w, field) for w in window], 6)
        c = _COL["window_window_reversal_0"]
        flags = [w.window_reversal for w in window]
        row[c : c + min(6, len(flags))] = [float(f) for f in flags[:6]]
        row[c + 6], row[c + 7] = sum(flags), len(flags) - sum(flags)
    if conv_dims is not None:
        conv = "convolution_dim_numbers"
        row[_COL[f"{conv}_input_batch_dim"]] = conv_dims.input_batch
        row[_COL[f"{conv}_input_feature_dim"]] = conv_dims.input_feature
        c = _COL[f"{conv}_input_spatial_dims_0"]
        row[c : c + min(4, len(conv_dims.input_spatial))] = conv_dims.input_spatial[:4]
        row[_COL[f"{conv}_kernel_input_feature_dim"]] = conv_dims.kernel_input_feature
        row[_COL[f"{conv}_kernel_output_feature_dim"]] = conv_dims.kernel_output_feature
        c = _COL[f"{conv}_kernel_spatial_dims_0"]
        row[c : c + min(4, len(conv_dims.kernel_spatial))] = conv_dims.kernel_spatial[:4]
        row[_COL[f"{conv}_output_batch_dim"]] = conv_dims.output_batch
        row[_COL[f"{conv}_output_feature_dim"]] = conv_dims.output_feature
    row[_COL["feature_group_count"]] = feature_group_count
    row[_COL["batch_group_count"]] = batch_group_count
    if slice_dims:
        # slice_dims holds (start, limit, stride); the columns go start, stride, limit.
        for name, j in (("start", 0), ("stride", 2), ("limit", 1)):
            c = _COL[f"slice_dims_{name}_0"]
            row[c : c + 4] = sequence_features([s[j] for s in slice_dims], 2)
    if dynamic_slice_sizes:
        c = _COL["dynamic_slice_sizes_0"]
        row[c : c + 4] = sequence_features(list(dynamic_slice_sizes), 2)
    if padding:
        c = _COL["padding_config_edge_padding_low_0"]
        row[c : c + 4] = sequence_features([p[0] for p in padding], 2)
        c = _COL["padding_config_edge_padding_high_0"]
        row[c : c + 4] = sequence_features([p[1] for p in padding], 2)
    row[_COL["is_stable"]] = float(is_stable)
    if minor_to_major:
        c = _COL["layout_minor_to_major_0"]
        row[c : c + min(6, len(minor_to_major))] = list(minor_to_major)[:6]
    return row.astype(np.float32)


def tile_config_features(kernel: Sequence[int], output: Sequence[int], inputs: Sequence[int]) -> np.ndarray:
    """The 24 ``config_feat`` values of one tile configuration (float32).

    As in the released files, an absent bound list encodes as zeros with a product of 0.

    >>> tile_config_features([], [8, 128], [])[8:16].tolist()
    [8.0, 128.0, 0.0, 0.0, 0.0, 0.0, 136.0, 1024.0]
    """
    values: list[float] = []
    for bounds in (kernel, output, inputs):
        values += sequence_features(list(bounds), 6, empty_product=0)
    return np.asarray(values, dtype=np.float32)
