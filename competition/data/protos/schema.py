"""Field numbers of the messages the featurizer reads, written out by hand (no generated code).

Sources (public schemas; field numbers never change once published):
- ``tuning.proto`` of google-research-datasets/tpu_graphs (package ``tpu_graphs``): ``TuningData``,
  ``ModuleTuningData``, ``ConfigProfile``, ``HloOpConfig``, ``TileSizeConfig``, ``HloModuleConfig``,
  ``LayoutConfig`` and its nested ``NodeLayoutConfig`` / ``TensorLayoutConfig``.
- XLA's ``hlo.proto`` (TensorFlow r2.10, package ``xla``): ``HloProto``, ``HloModuleProto``,
  ``HloComputationProto``, ``HloInstructionProto`` and its nested ``SliceDimensions``; from current
  openxla/xla, ``StackFrameIndexProto`` (``HloModuleProto`` field 17, with its nested ``FileLocation`` and
  ``StackFrame``), which current JAX writes.
- XLA's ``xla_data.proto`` (r2.10): ``ShapeProto``, ``LayoutProto``, ``Window``, ``WindowDimension``,
  ``ConvolutionDimensionNumbers``, ``DotDimensionNumbers``, ``PaddingConfig`` /
  ``PaddingConfigDimension``, ``ExecutionProfile``, ``OpMetadata`` (its ``stack_frame_id``, field 15,
  from current openxla/xla) and the ``PrimitiveType`` enum.

Only the fields the featurizer uses (plus a few names useful in messages) are listed; the decoder skips
every other field, so an HLO proto from a newer XLA with extra fields still decodes. To read one more
field, add a ``Field`` line here under its upstream number and read it by name in ``featurize.py``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Field:
    """One field of a message: its name, kind and whether it repeats.

    ``kind`` is a scalar kind (``int64``, ``uint64``, ``int32``, ``enum``, ``bool``, ``string``,
    ``bytes``) or the name of another message in ``SCHEMAS``. ``oneof`` names the oneof group the
    field belongs to, if any. ``lazy`` (repeated messages only) keeps the elements as byte spans that
    decode one at a time on access, so 100,000 runs never sit in memory as Python objects.
    """

    name: str
    kind: str
    repeated: bool = False
    oneof: str | None = None
    lazy: bool = False


def _rep(name: str, kind: str) -> Field:
    return Field(name, kind, repeated=True)


SCHEMAS: dict[str, dict[int, Field]] = {
    # ---- tpu_graphs/proto/tuning.proto
    "TuningData": {1: _rep("modules", "ModuleTuningData")},
    "ModuleTuningData": {
        1: Field("module", "HloModuleProto"),
        2: Field("fingerprint", "uint64"),
        3: Field("runs", "ConfigProfile", repeated=True, lazy=True),
        4: _rep("config_index_to_node", "uint64"),
    },
    "ConfigProfile": {
        1: Field("op_config", "HloOpConfig", oneof="config"),
        2: Field("module_config", "HloModuleConfig", oneof="config"),
        3: Field("error", "bool"),
        4: Field("profile", "ExecutionProfile"),
        5: Field("is_default", "bool"),
    },
    "HloOpConfig": {1: Field("tile_size_config", "TileSizeConfig")},
    "TileSizeConfig": {
        1: _rep("kernel_bounds", "int64"),
        2: _rep("output_bounds", "int64"),
        3: _rep("input_bounds", "int64"),
        4: _rep("iteration_bounds", "int64"),
    },
    "HloModuleConfig": {1: Field("layout_config", "LayoutConfig")},
    "LayoutConfig": {1: _rep("nodes", "NodeLayoutConfig")},
    "NodeLayoutConfig": {1: _rep("tensors", "TensorLayoutConfig")},
    "TensorLayoutConfig": {1: _rep("dims", "int32")},
    # ---- xla/xla_data.proto
    "ExecutionProfile": {
        1: Field("compilation_cache_hit", "bool"),
        4: Field("compute_time_ns", "int64"),
        5: Field("compute_and_transfer_time_ns", "int64"),
    },
    # ---- xla/service/hlo.proto
    "HloModuleProto": {
        1: Field("name", "string"),
        2: Field("entry_computation_name", "string"),
        3: _rep("computations", "HloComputationProto"),
        5: Field("id", "int64"),
        6: Field("entry_computation_id", "int64"),
        7: Field("schedule", "bytes"),  # set once XLA scheduled the module (after its optimizations)
        # Read by tpugraphs rank only: where each instruction came from (current XLA; 1-based ids).
        17: Field("stack_frame_index", "StackFrameIndexProto"),
    },
    # What XLA writes with --xla_dump_hlo_as_proto (*.hlo.pb): the module sits in field 1.
    "HloProto": {1: Field("hlo_module", "HloModuleProto")},
    "HloComputationProto": {
        1: Field("name", "string"),
        2: _rep("instructions", "HloInstructionProto"),
        5: Field("id", "int64"),
        6: Field("root_id", "int64"),
        7: Field("is_fusion_computation", "bool"),
    },
    "HloInstructionProto": {
        1: Field("name", "string"),
        2: Field("opcode", "string"),
        3: Field("shape", "ShapeProto"),
        7: Field("metadata", "OpMetadata"),  # read by tpugraphs rank only (source locations)
        9: Field("parameter_number", "int64"),
        11: Field("fusion_kind", "string"),
        13: Field("tuple_index", "int64"),
        14: _rep("dimensions", "int64"),
        15: Field("window", "Window"),
        16: Field("convolution_dimension_numbers", "ConvolutionDimensionNumbers"),
        17: _rep("slice_dimensions", "SliceDimensions"),
        20: _rep("dynamic_slice_sizes", "int64"),
        21: Field("padding_config", "PaddingConfig"),
        30: Field("dot_dimension_numbers", "DotDimensionNumbers"),
        35: Field("id", "int64"),
        36: _rep("operand_ids", "int64"),
        37: _rep("control_predecessor_ids", "int64"),
        38: _rep("called_computation_ids", "int64"),
        50: Field("feature_group_count", "int64"),
        58: Field("batch_group_count", "int64"),
        60: Field("is_stable", "bool"),
    },
    # Read by tpugraphs rank only: the framework's name of an instruction and where in the source it
    # came from, either directly (source_file/source_line, older writers) or as a 1-based frame of the
    # module's stack_frame_index (current JAX).
    "OpMetadata": {
        1: Field("op_type", "string"),
        2: Field("op_name", "string"),
        3: Field("source_file", "string"),
        4: Field("source_line", "int32"),
        15: Field("stack_frame_id", "int32"),
    },
    "StackFrameIndexProto": {
        1: _rep("file_names", "string"),
        2: _rep("function_names", "string"),
        3: _rep("file_locations", "FileLocation"),
        4: _rep("stack_frames", "StackFrame"),
    },
    "FileLocation": {
        1: Field("file_name_id", "int32"),
        2: Field("function_name_id", "int32"),
        3: Field("line", "int32"),
        4: Field("column", "int32"),
    },
    "StackFrame": {
        1: Field("file_location_id", "int32"),
        2: Field("parent_frame_id", "int32"),
    },
    "SliceDimensions": {
        1: Field("start", "int64"),
        2: Field("limit", "int64"),
        3: Field("stride", "int64"),
    },
    # ---- xla/xla_data.proto
    "ShapeProto": {
        2: Field("element_type", "enum"),
        3: _rep("dimensions", "int64"),
        4: _rep("tuple_shapes", "ShapeProto"),
        5: Field("layout", "LayoutProto"),
        6: _rep("is_dynamic_dimension", "bool"),
    },
    "LayoutProto": {
        1: _rep("minor_to_major", "int64"),
        4: Field("format", "enum"),
        8: Field("memory_space", "int64"),
    },
    "Window": {1: _rep("dimensions", "WindowDimension")},
    "WindowDimension": {
        1: Field("size", "int64"),
        2: Field("stride", "int64"),
        3: Field("padding_low", "int64"),
        4: Field("padding_high", "int64"),
        5: Field("window_dilation", "int64"),
        6: Field("base_dilation", "int64"),
        7: Field("window_reversal", "bool"),
    },
    "ConvolutionDimensionNumbers": {
        3: Field("kernel_input_feature_dimension", "int64"),
        4: Field("kernel_output_feature_dimension", "int64"),
        6: _rep("kernel_spatial_dimensions", "int64"),
        7: Field("input_batch_dimension", "int64"),
        8: Field("input_feature_dimension", "int64"),
        9: Field("output_batch_dimension", "int64"),
        10: Field("output_feature_dimension", "int64"),
        11: _rep("input_spatial_dimensions", "int64"),
        12: _rep("output_spatial_dimensions", "int64"),
    },
    # Read by tpugraphs rank only (to name a dot's dimensions); the featurizer has no column for it.
    "DotDimensionNumbers": {
        1: _rep("lhs_contracting_dimensions", "int64"),
        2: _rep("rhs_contracting_dimensions", "int64"),
        3: _rep("lhs_batch_dimensions", "int64"),
        4: _rep("rhs_batch_dimensions", "int64"),
    },
    "PaddingConfig": {1: _rep("dimensions", "PaddingConfigDimension")},
    "PaddingConfigDimension": {
        1: Field("edge_padding_low", "int64"),
        2: Field("edge_padding_high", "int64"),
        3: Field("interior_padding", "int64"),
    },
}

# xla_data.proto PrimitiveType values, in the order of the featurizer's one-hot columns
# (featurizers.h PRIMITIVE_TYPE_FEATURES): note BF16 (16) sits after F64 (12), C64 (15) after BF16.
PRIMITIVE_TYPE_ONE_HOT: tuple[tuple[int, str], ...] = (
    (0, "invalid_type"),
    (1, "pred"),
    (2, "s8"),
    (3, "s16"),
    (4, "s32"),
    (5, "s64"),
    (6, "u8"),
    (7, "u16"),
    (8, "u32"),
    (9, "u64"),
    (10, "f16"),
    (11, "f32"),
    (12, "f64"),
    (16, "bf16"),
    (15, "c64"),
    (18, "c128"),
    (13, "tuple"),
    (14, "opaque_type"),
    (17, "token"),
)


def _check_schemas() -> None:
    # Every message kind a field names must itself be described; catches typos at import time.
    scalar = {"int64", "uint64", "int32", "enum", "bool", "string", "bytes"}
    for type_name, fields in SCHEMAS.items():
        for number, field in fields.items():
            if field.kind not in scalar and field.kind not in SCHEMAS:
                raise AssertionError(
                    f"{type_name}.{field.name} (field {number}) names unknown message {field.kind}"
                )
            if field.lazy and (field.kind in scalar or not field.repeated):
                raise AssertionError(f"{type_name}.{field.name}: only repeated message fields can be lazy")


_check_schemas()
