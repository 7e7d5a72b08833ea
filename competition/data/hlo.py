"""The vocabularies of the released format, in one place: opcode ids and feature column names.

The featurizer (``competition.data.protos``), the synthetic generator (``competition.data.synth``) and the
reference solutions all read these tables; nothing else defines them. Sources: upstream
``hlo_opcode.h`` for the ids (docs/featurizer.md, The rules) and the upstream README for the column order
(docs/featurizer.md, The column map).

>>> OPCODE_IDS["convolution"], OPCODE_NAMES[34], NODE_FEATURE_INDEX["shape_dimensions_sum"]
(26, 'dot', 27)
>>> len(NODE_FEATURE_NAMES), len(TILE_CONFIG_NAMES), len(LAYOUT_CONFIG_NAMES)
(140, 24, 18)
"""

from __future__ import annotations

from collections.abc import Sequence

# ----------------------------------------------------------------------------------------------------
# Opcode ids: upstream hlo_opcode.h. Ids never change; 97 ("trace") and 101 ("tuple-select") are
# tombstones of removed ops, kept so old protos still map.
_OPCODES_IN_ID_ORDER = (
    "abs", "add", "add-dependency", "after-all", "all-reduce", "all-to-all", "atan2", "batch-norm-grad",
    "batch-norm-inference", "batch-norm-training", "bitcast", "bitcast-convert", "broadcast", "call",
    "ceil", "cholesky", "clamp", "collective-permute", "count-leading-zeros", "compare", "complex",
    "concatenate", "conditional", "constant", "convert", "convolution", "copy", "copy-done", "copy-start",
    "cosine", "custom-call", "divide", "domain", "dot", "dynamic-slice", "dynamic-update-slice",
    "exponential", "exponential-minus-one", "fft", "floor", "fusion", "gather", "get-dimension-size",
    "set-dimension-size", "get-tuple-element", "imag", "infeed", "iota", "is-finite", "log",
    "log-plus-one", "and", "not", "or", "xor", "map", "maximum", "minimum", "multiply", "negate",
    "outfeed", "pad", "parameter", "partition-id", "popcnt", "power", "real", "recv", "recv-done",
    "reduce", "reduce-precision", "reduce-window", "remainder", "replica-id", "reshape", "reverse", "rng",
    "rng-get-and-update-state", "rng-bit-generator", "round-nearest-afz", "rsqrt", "scatter", "select",
    "select-and-scatter", "send", "send-done", "shift-left", "shift-right-arithmetic",
    "shift-right-logical", "sign", "sine", "slice", "sort", "sqrt", "subtract", "tanh", "trace",
    "transpose", "triangular-solve", "tuple", "tuple-select", "while", "cbrt", "all-gather",
    "collective-permute-start", "collective-permute-done", "logistic", "dynamic-reshape",
    "all-reduce-start", "all-reduce-done", "reduce-scatter", "all-gather-start", "all-gather-done",
    "opt-barrier", "async-start", "async-update", "async-done", "round-nearest-even", "stochastic-convert",
    "tan",
)
OPCODE_IDS: dict[str, int] = {name: i + 1 for i, name in enumerate(_OPCODES_IN_ID_ORDER)}
assert len(OPCODE_IDS) == 120 and OPCODE_IDS["trace"] == 97 and OPCODE_IDS["tuple-select"] == 101



OPCODE_NAMES: dict[int, str] = {i: name for name, i in OPCODE_IDS.items()}


def opcode_id(opcode: str) -> int:
    """Upstream opcode id of an HLO opcode string; 0 for an opcode the table does not know."""
    return OPCODE_IDS.get(opcode, 0)


#: Opcodes whose nodes carry a layout configuration in the layout collections.
CONFIGURABLE_OPCODES = ("convolution", "dot", "reshape")

# -- element types ----------------------------------------------------------------------------------

#: Element types in the order of the one-hot columns 2..20.
ELEMENT_TYPES = (
    "invalid", "pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64",
    "f16", "f32", "f64", "bf16", "c64", "c128", "tuple", "opaque", "token",
)
ELEMENT_BYTES = {
    "pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "f32": 4,
    "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16, "tuple": 0, "opaque": 0, "token": 0, "invalid": 0,
}


# -- column maps ------------------------------------------------------------------------------------


def _seq(prefix: str, k: int, tail: Sequence[str] = ("sum", "product")) -> list[str]:
    return [f"{prefix}_{i}" for i in range(k)] + [f"{prefix}_{t}" for t in tail]


def _node_feature_names() -> tuple[str, ...]:
    names = ["is_root", "element_size_in_bits"]
    names += [f"shape_element_type_is_{t}" + ("_type" if t in ("invalid", "opaque") else "")
              for t in ELEMENT_TYPES]
    names += _seq("shape_dimensions", 6)
    names += ["shape_tuple_shapes_size", "parameter_number"]
    names += _seq("dimensions", 6, tail=())
    for field in ("size", "stride", "padding_low", "padding_high", "window_dilation", "base_dilation"):
        names += _seq(f"window_{field}", 6)
    names += _seq("window_window_reversal", 6, tail=("true_count", "false_count"))
    conv = "convolution_dim_numbers"
    names += [f"{conv}_input_batch_dim", f"{conv}_input_feature_dim"]
    names += _seq(f"{conv}_input_spatial_dims", 4, tail=())
    names += [f"{conv}_kernel_input_feature_dim", f"{conv}_kernel_output_feature_dim"]
    names += _seq(f"{conv}_kernel_spatial_dims", 4, tail=())
    names += [f"{conv}_output_batch_dim", f"{conv}_output_feature_dim"]
    names += ["feature_group_count", "batch_group_count"]
    for field in ("start", "stride", "limit"):
        names += _seq(f"slice_dims_{field}", 2)
    names += _seq("dynamic_slice_sizes", 2)
    names += _seq("padding_config_edge_padding_low", 2) + _seq("padding_config_edge_padding_high", 2)
    names += ["is_stable"]
    names += _seq("layout_minor_to_major", 6, tail=())
    return tuple(names)


#: The 140 ``node_feat`` columns (upstream README order).
NODE_FEATURE_NAMES: tuple[str, ...] = _node_feature_names()
NODE_FEATURE_INDEX: dict[str, int] = {name: i for i, name in enumerate(NODE_FEATURE_NAMES)}
assert len(NODE_FEATURE_NAMES) == 140, len(NODE_FEATURE_NAMES)

#: The 24 tile ``config_feat`` columns: kernel, output and input tile bounds (6 dims, sum, product).
TILE_CONFIG_NAMES: tuple[str, ...] = tuple(
    _seq("kernel_bounds", 6) + _seq("output_bounds", 6) + _seq("input_bounds", 6)
)
#: The 18 layout ``node_config_feat`` columns: minor-to-major order of output, input and kernel.
LAYOUT_CONFIG_NAMES: tuple[str, ...] = tuple(
    f"{tensor}_layout_{i}" for tensor in ("output", "input", "kernel") for i in range(6)
)
