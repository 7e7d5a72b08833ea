"""The pure-Python featurizer against the real protos, hand-built protos and corrupt bytes.

The real protos (shipped in competition/data/realdata) are decoded once per module. Expected figures
come from the README next to the real protos and docs/featurizer.md (The rules; Checks against the real
protos); the hand-checked values were read from the decoded proto by hand and are re-read here through a
raw field walk (``iter_fields`` only), independent of the schema decoder.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from real_protos import LAYOUT_PROTO, TILE_PROTO, needs_realdata

from competition.cli import main
from competition.data.graphs import LayoutGraph, TileGraph, load_graph
from competition.data.protos import wire
from competition.data.protos.featurize import (
    ProtoFormatError,
    detect_kind,
    detect_message,
    featurize_file,
    featurize_files,
    featurize_proto,
    read_tuning_proto,
)
from competition.data.protos.layout import LAYOUT_CONFIG_FEATURE_NAMES, featurize_layout
from competition.data.protos.module import (
    NODE_FEATURE_BLOCKS,
    NODE_FEATURE_NAMES,
    FeatureBlock,
    leading_sum_product,
    node_feature_matrix,
    opcode_id,
)
from competition.data.protos.tile import TILE_CONFIG_FEATURE_NAMES, featurize_tile
from competition.data.protos.wire import WireFormatError, decode_message, iter_fields
from competition.tasks import LAYOUT, TILE

col = NODE_FEATURE_NAMES.index


# ---------------------------------------------------------------------------------------------------
# A wire encoder, to build small protos by hand (the varint is the kit's own: wire.encode_varint).


_varint = wire.encode_varint


def fv(number: int, value: int) -> bytes:
    """A varint field."""
    return _varint(number << 3) + _varint(value)


def fb(number: int, payload: bytes | str) -> bytes:
    """A length-delimited field."""
    payload = payload.encode() if isinstance(payload, str) else payload
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def fp(number: int, values) -> bytes:
    """A packed repeated varint field (omitted when empty, as protobuf writes it)."""
    return fb(number, b"".join(_varint(v) for v in values)) if values else b""


def instruction(ident: int, opcode: str, *, operands=(), called=(), dims=(), etype=11, extra=b"") -> bytes:
    shape = fv(2, etype) + fp(3, dims)
    return (
        fb(1, f"{opcode}.{ident}") + fb(2, opcode) + fb(3, shape) + fv(35, ident) + fp(36, operands)
        + fp(38, called) + extra
    )


def computation(ident: int, name: str, root: int, *instructions: bytes) -> bytes:
    return fb(1, name) + b"".join(fb(2, i) for i in instructions) + fv(5, ident) + fv(6, root)


def hlo_module(*computations: bytes, name: str = "m") -> bytes:
    return fb(1, name) + b"".join(fb(3, c) for c in computations)


def run(*, tile=None, layout=None, error=False, default=False, runtime: int | None = 1000) -> bytes:
    out = b""
    if tile is not None:
        kernel, output, inp = tile
        out += fb(1, fb(1, fp(1, kernel) + fp(2, output) + fp(3, inp)))
    if layout is not None:
        nodes = b"".join(fb(1, b"".join(fb(1, fp(1, dims)) for dims in node)) for node in layout)
        out += fb(2, fb(1, nodes))
    if error:
        out += fv(3, 1)
    if runtime is not None:
        out += fb(4, fv(4, runtime))
    if default:
        out += fv(5, 1)
    return out


def module_tuning(module: bytes, runs=(), config_ids=(), fingerprint: int = 7) -> bytes:
    return fb(1, module) + fv(2, fingerprint) + b"".join(fb(3, r) for r in runs) + fp(4, config_ids)


def tuning(*modules: bytes) -> bytes:
    return b"".join(fb(1, m) for m in modules)


def small_module() -> bytes:
    """Callee computation (2 instructions) then an entry that calls it: 5 nodes."""
    callee = computation(
        1, "fused_computation", 11,
        instruction(10, "parameter"), instruction(11, "negate", operands=[10]),
    )  # fmt: skip
    entry = computation(
        2, "main", 22,
        instruction(20, "parameter", dims=[4, 8]),
        instruction(21, "fusion", operands=[20, 20], called=[1], dims=[4, 8]),
        instruction(22, "convolution", operands=[21, 20], dims=[4, 8]),
    )  # fmt: skip
    return hlo_module(callee, entry)


def write(tmp_path: Path, data: bytes, name: str = "x.pb") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# ---------------------------------------------------------------------------------------------------
# Raw walk of the real bytes (iter_fields only), for the hand checks.


def raw_fields(data: bytes, begin: int, end: int, number: int) -> list:
    return [value for n, _, value, _ in iter_fields(memoryview(data), begin, end, "raw") if n == number]


def raw_varints(data: bytes, span) -> list[int]:
    out, pos = [], span[0]
    from competition.data.protos.wire import read_varint

    while pos < span[1]:
        value, pos = read_varint(data, pos, span[1])
        out.append(value - (1 << 64) if value >= 1 << 63 else value)
    return out


@pytest.fixture(scope="module")
def layout_bytes() -> bytes:
    return LAYOUT_PROTO.read_bytes()


@pytest.fixture(scope="module")
def layout_proto(layout_bytes):
    return decode_message(layout_bytes, "ModuleTuningData")


@pytest.fixture(scope="module")
def layout_graph(layout_proto) -> LayoutGraph:
    return featurize_layout(layout_proto)


@pytest.fixture(scope="module")
def tile_proto():
    return read_tuning_proto(TILE_PROTO)[1]


@pytest.fixture(scope="module")
def tile_graphs(tile_proto) -> list[tuple[str, TileGraph]]:
    graphs, skipped = featurize_tile(tile_proto, TILE_PROTO.stem)
    assert skipped == []
    return graphs


# ---------------------------------------------------------------------------------------------------
# Tables of the featurizer


def test_feature_names_follow_the_upstream_readme():
    assert len(NODE_FEATURE_NAMES) == 140 == len(set(NODE_FEATURE_NAMES))
    readme = {
        0: "is_root", 1: "element_size_in_bits", 2: "shape_element_type_is_invalid_type",
        15: "shape_element_type_is_bf16", 16: "shape_element_type_is_c64", 20: "shape_element_type_is_token",
        21: "shape_dimensions_0", 27: "shape_dimensions_sum", 28: "shape_dimensions_product",
        29: "shape_tuple_shapes_size", 30: "parameter_number", 31: "dimensions_0", 36: "dimensions_5",
        37: "window_size_0", 44: "window_size_product", 45: "window_stride_0", 53: "window_padding_low_0",
        61: "window_padding_high_0", 69: "window_window_dilation_0", 77: "window_base_dilation_0",
        85: "window_window_reversal_0", 91: "window_window_reversal_true_count",
        92: "window_window_reversal_false_count", 93: "convolution_dim_numbers_input_batch_dim",
        95: "convolution_dim_numbers_input_spatial_dims_0",
        99: "convolution_dim_numbers_kernel_input_feature_dim",
        101: "convolution_dim_numbers_kernel_spatial_dims_0",
        106: "convolution_dim_numbers_output_feature_dim",
        107: "feature_group_count", 108: "batch_group_count", 109: "slice_dims_start_0",
        113: "slice_dims_stride_0", 117: "slice_dims_limit_0", 120: "slice_dims_limit_product",
        121: "dynamic_slice_sizes_0", 124: "dynamic_slice_sizes_product",
        125: "padding_config_edge_padding_low_0", 129: "padding_config_edge_padding_high_0",
        132: "padding_config_edge_padding_high_product", 133: "is_stable", 134: "layout_minor_to_major_0",
        139: "layout_minor_to_major_5",
    }  # fmt: skip
    assert {i: NODE_FEATURE_NAMES[i] for i in readme} == readme
    assert len(TILE_CONFIG_FEATURE_NAMES) == 24 and TILE_CONFIG_FEATURE_NAMES[7] == "kernel_bounds_product"
    assert TILE_CONFIG_FEATURE_NAMES[16] == "input_bounds_0"
    assert len(LAYOUT_CONFIG_FEATURE_NAMES) == 18 and LAYOUT_CONFIG_FEATURE_NAMES[12] == "kernel_layout_0"


@pytest.mark.parametrize(
    ("opcode", "expected"),
    [("abs", 1), ("convolution", 26), ("dot", 34), ("fusion", 41), ("multiply", 59), ("reshape", 75),
     ("tanh", 96), ("trace", 97), ("transpose", 98), ("tuple", 100), ("tuple-select", 101), ("while", 102),
     ("cbrt", 103), ("tan", 120), ("no-such-op", 0), ("", 0)],
)  # fmt: skip
def test_opcode_ids_match_upstream_table(opcode, expected):
    assert opcode_id(opcode) == expected


@given(st.lists(st.integers(-(2**40), 2**40), max_size=10), st.integers(1, 6))
def test_leading_sum_product_wraps_like_int64(values, k):
    got = leading_sum_product(values, k)
    arr = np.asarray(values, dtype=np.int64)
    with np.errstate(over="ignore"):
        reference_product = int(np.prod(arr)) if values else 1  # numpy int64 wraps like C++
    assert got[:k] == (values[:k] + [0] * k)[:k]
    assert got[k] == int(arr.sum())
    assert got[k + 1] == reference_product


# ---------------------------------------------------------------------------------------------------
# Real layout proto


@needs_realdata()
def test_layout_counts_match_the_realdata_readme(layout_proto, layout_graph):
    g = layout_graph
    computations = layout_proto["module"]["computations"]
    assert len(computations) == 143
    assert g.num_nodes == 3163 == sum(len(c["instructions"]) for c in computations)
    assert g.node_feat.shape == (3163, 140) and g.node_feat.dtype == np.float32
    assert int(g.node_feat[:, col("is_root")].sum()) == 143  # one root per computation
    assert g.num_configurable_nodes == 62
    assert Counter(g.node_opcode[g.node_config_ids].tolist()) == {
        opcode_id("convolution"): 53, opcode_id("reshape"): 9
    }
    runs = layout_proto["runs"]
    assert len(runs) == 122
    assert sum(r["error"] for r in runs) == 10 and sum(r["is_default"] for r in runs) == 1
    assert g.num_configs == 112 == g.node_config_feat.shape[0]
    assert round(g.config_runtime.min() / 1e5) == 9109 and round(g.config_runtime.max() / 1e5) == 9256
    assert len(np.unique(g.node_config_feat.reshape(112, -1), axis=0)) == 91
    settings_per_node = [len(np.unique(g.node_config_feat[:, j], axis=0)) for j in range(62)]
    assert (min(settings_per_node), max(settings_per_node)) == (2, 8)
    assert len(np.unique(g.node_opcode)) == 41
    top5 = [op for op, _ in Counter(g.node_opcode.tolist()).most_common(5)]
    assert top5 == [opcode_id(o) for o in ("multiply", "add", "broadcast", "parameter", "get-tuple-element")]


@needs_realdata()
def test_layout_edges_follow_the_conventions(layout_proto, layout_graph):
    edges = layout_graph.edge_index
    assert edges.dtype == np.int64 and edges.shape == (5112, 2)
    assert (edges[:, 0] > edges[:, 1]).all()  # consumer after producer: topological order
    assert (np.lexsort((edges[:, 1], edges[:, 0])) == np.arange(len(edges))).all()  # rows sorted
    assert len(np.unique(edges, axis=0)) == len(edges)
    # Each node's producers are its operands and the roots of the computations it calls, nothing else.
    instructions = [i for c in layout_proto["module"]["computations"] for i in c["instructions"]]
    position = {inst["id"]: k for k, inst in enumerate(instructions)}
    root = {c["id"]: c["root_id"] for c in layout_proto["module"]["computations"]}
    producers: dict[int, set[int]] = {}
    for u, v in edges.tolist():
        producers.setdefault(u, set()).add(v)
    for k, inst in enumerate(instructions):
        expected = {position[o] for o in inst["operand_ids"]} | {
            position[root[c]] for c in inst["called_computation_ids"]
        }
        assert producers.get(k, set()) == expected, inst["name"]


@needs_realdata()
def test_layout_node_splits_follow_the_name_rule(layout_proto, layout_graph):
    splits = layout_graph.node_splits
    assert splits.dtype == np.int64 and splits.shape == (1, 8)
    assert splits.tolist() == [[0, 449, 453, 467, 471, 498, 502, 3163]]
    ends, count = [], 0
    for comp in layout_proto["module"]["computations"]:
        count += len(comp["instructions"])
        if any(word in comp["name"] for word in ("cluster", "while", "cond")):
            ends.append(count)
    assert ends == [449, 453, 467, 471, 498, 502]  # while_body/while_cond x3; the entry adds 3163


@needs_realdata()
def test_layout_configs_keep_proto_order_and_drop_error_runs(layout_proto, layout_graph):
    runs = layout_proto["runs"]
    usable = [
        r for r in runs if r["module_config"] is not None and not r["error"] and r["profile"] is not None
    ]
    assert layout_graph.config_runtime.tolist() == [r["profile"]["compute_time_ns"] for r in usable]
    assert runs[0]["is_default"] and layout_graph.config_runtime[0] == 910_903_932
    errors = [i for i, r in enumerate(runs) if r["error"]]
    assert errors == [6, 15, 67, 70, 88, 100, 106, 109, 117, 120]
    values = np.unique(layout_graph.node_config_feat)
    assert set(values.tolist()) <= set(range(-1, 6)) and -1 in values
    assert (layout_graph.node_config_feat == -1).mean() > 0.5  # most tensors have only 2 layout dims


@needs_realdata()
def test_layout_hand_checked_convolution(layout_bytes, layout_graph):
    # Node 660 is convolution.1043 of the entry computation: bf16[2,96,96,96,32] with layout
    # {4,3,2,1,0}, a 3x3x3 window, and the 5th configurable node. Re-read it from the raw bytes.
    module = raw_fields(layout_bytes, 0, len(layout_bytes), 1)[0]
    instructions = [
        span for comp in raw_fields(layout_bytes, *module, 3) for span in raw_fields(layout_bytes, *comp, 2)
    ]
    inst = instructions[660]
    assert bytes(layout_bytes[slice(*raw_fields(layout_bytes, *inst, 2)[0])]) == b"convolution"
    shape = raw_fields(layout_bytes, *inst, 3)[0]
    dims = raw_varints(layout_bytes, raw_fields(layout_bytes, *shape, 3)[0])
    element_type = raw_fields(layout_bytes, *shape, 2)[0]
    layout = raw_fields(layout_bytes, *shape, 5)[0]
    minor_to_major = raw_varints(layout_bytes, raw_fields(layout_bytes, *layout, 1)[0])
    assert dims == [2, 96, 96, 96, 32] and element_type == 16 and minor_to_major == [4, 3, 2, 1, 0]

    row = layout_graph.node_feat[660]
    assert layout_graph.node_opcode[660] == 26
    assert row[col("shape_element_type_is_bf16")] == 1 and row[2:21].sum() == 1
    assert row[col("shape_dimensions_0") : col("shape_dimensions_5") + 1].tolist() == dims + [0]
    assert row[col("shape_dimensions_sum")] == sum(dims) == 322
    assert row[col("shape_dimensions_product")] == np.prod(dims) == 56_623_104
    assert row[col("window_size_0") : col("window_size_product") + 1].tolist() == [3, 3, 3, 0, 0, 0, 9, 27]
    assert row[col("window_window_reversal_false_count")] == 3
    assert row[93:107].tolist() == [0, 4, 1, 2, 3, 0, 3, 4, 0, 1, 2, 0, 0, 4]
    assert row[col("feature_group_count")] == 1 and row[col("batch_group_count")] == 1
    assert row[134:140].tolist() == minor_to_major + [0]
    assert row[col("is_root")] == 0
    assert layout_graph.edge_index[layout_graph.edge_index[:, 0] == 660].tolist() == [[660, 657], [660, 659]]

    # Its layout slots in the first run: tensors {4,0}, {4,0}, {4,3}, the rest -1.
    first_run = raw_fields(layout_bytes, 0, len(layout_bytes), 3)[0]
    layout_config = raw_fields(layout_bytes, *raw_fields(layout_bytes, *first_run, 2)[0], 1)[0]
    node = raw_fields(layout_bytes, *layout_config, 1)[4]
    tensors = [
        raw_varints(layout_bytes, raw_fields(layout_bytes, *t, 1)[0])
        for t in raw_fields(layout_bytes, *node, 1)
    ]
    assert tensors == [[4, 0], [4, 0], [4, 3]]
    assert layout_graph.node_config_ids[4] == 660
    pad = [-1] * 4
    assert layout_graph.node_config_feat[0, 4].tolist() == [4, 0, *pad, 4, 0, *pad, 4, 3, *pad]


@needs_realdata()
def test_layout_hand_checked_entry_root_tuple(layout_graph):
    row = layout_graph.node_feat[3162]  # tuple.72, root of the entry computation, 226 elements
    assert row[col("is_root")] == 1 and row[col("shape_element_type_is_tuple")] == 1
    assert row[col("shape_tuple_shapes_size")] == 226
    assert row[col("shape_dimensions_sum")] == 0 and row[col("shape_dimensions_product")] == 1  # empty: 1
    assert row[col("window_size_product")] == 1 and row[col("slice_dims_start_product")] == 1


# ---------------------------------------------------------------------------------------------------
# Real tile proto


@needs_realdata()
def test_tile_counts_match_the_realdata_readme(tile_proto, tile_graphs):
    modules = tile_proto["modules"]
    assert len(modules) == 15 == len(tile_graphs)
    runs = [r for m in modules for r in m["runs"]]
    assert len(runs) == 754 and sum(r["error"] for r in runs) == 2
    assert all(sum(r["is_default"] for r in m["runs"]) == 1 for m in modules)
    sizes = [g.num_nodes for _, g in tile_graphs]
    assert (min(sizes), max(sizes)) == (2, 56)
    assert sum(g.num_configs for _, g in tile_graphs) == 752  # the 2 error runs dropped
    assert max(g.num_configs for _, g in tile_graphs) == 579  # the 581-run convolution kernel
    assert len({name for name, _ in tile_graphs}) == 15
    for _, g in tile_graphs:
        assert g.node_feat.shape == (g.num_nodes, 140) and g.config_feat.shape == (g.num_configs, 24)
        assert (g.edge_index[:, 0] > g.edge_index[:, 1]).all()


@needs_realdata()
def test_tile_normaliser_is_the_first_kept_default(tile_proto, tile_graphs):
    best_ratios = []
    for module, (_, g) in zip(tile_proto["modules"], tile_graphs, strict=True):
        kept = [r for r in module["runs"] if not r["error"] and r["profile"]["compute_time_ns"] > 1]
        default = next(r for r in kept if r["is_default"])
        assert g.config_runtime.tolist() == [r["profile"]["compute_time_ns"] for r in kept]
        assert (g.config_runtime_normalizers == default["profile"]["compute_time_ns"]).all()
        best_ratios.append(float(g.normalized_runtime().min()))
    assert sum(r == 1.0 for r in best_ratios) == 11  # default fastest in 11 of 15 kernels
    others = [r for r in best_ratios if r < 1.0]
    assert min(others) > 0.87 and max(others) < 0.99


@needs_realdata()
def test_tile_hand_checked_config_and_reshape_ties(tile_proto, tile_graphs):
    conv = tile_graphs[1][1]  # fusion.191: the convolution kernel with 581 runs
    tile = tile_proto["modules"][1]["runs"][0]["op_config"]["tile_size_config"]
    assert tile["kernel_bounds"] == [3, 1, 24, 3] and tile["input_bounds"] == []
    assert conv.config_feat[0, :8].tolist() == [3, 1, 24, 3, 0, 0, 31, 216]
    assert conv.config_feat[0, 16:24].tolist() == [0] * 8  # empty input bounds: product 0 here
    reshapes = [g for _, g in tile_graphs[-3:]]
    assert [tile_proto["modules"][i]["module"]["name"] for i in (12, 13, 14)] == [
        "reshape.37", "reshape.39", "reshape.38"
    ]
    for g in reshapes:
        assert (g.config_feat == 0).all()  # identical, empty tile configs
    assert reshapes[0].config_runtime.max() / reshapes[0].config_runtime.min() > 2.0


@needs_realdata()
def test_featurize_files_round_trip_through_load_graph(tmp_path):
    written = featurize_files([LAYOUT_PROTO, TILE_PROTO], tmp_path)
    assert len(written) == 16
    layout = load_graph(tmp_path / "module_tuning_data_layout.npz")
    assert isinstance(layout, LayoutGraph) and layout.num_configs == 112
    kinds = Counter(type(load_graph(p)).__name__ for p in written)
    assert kinds == {"TileGraph": 15, "LayoutGraph": 1}
    assert (tmp_path / "op_tuning_data_4ae805e53b8d2b8a.npz").is_file()


@needs_realdata()
def test_detect_kind_on_real_files():
    assert detect_kind(LAYOUT_PROTO.read_bytes()) is LAYOUT
    assert detect_kind(TILE_PROTO.read_bytes()) is TILE


# ---------------------------------------------------------------------------------------------------
# Hand-built protos: the rules one at a time


def test_small_layout_graph_rules(tmp_path):
    runs = [
        run(layout=[[[1, 0], [0, 1, 2, 3, 4, 5, 6]]], runtime=500),  # not default, kept; 7 dims -> first 6
        run(layout=[[[0, 1]]], error=True, runtime=400),  # error: dropped
        run(layout=[[]], default=True, runtime=600),  # default, no tensors: all -1
        run(layout=[[[1, 0]]], runtime=None),  # no profile: dropped
        run(runtime=300),  # no module config: dropped
    ]
    path = write(tmp_path, module_tuning(small_module(), runs, config_ids=[4]))
    (name, g), = featurize_file(path)  # fmt: skip
    assert name == "x" and isinstance(g, LayoutGraph)
    assert g.node_opcode.tolist() == [63, 60, 63, 41, 26]
    # operands deduplicated (fusion uses 20 twice), callee root joined, rows sorted
    assert g.edge_index.tolist() == [[1, 0], [3, 1], [3, 2], [4, 2], [4, 3]]
    assert g.node_feat[:, col("is_root")].tolist() == [0, 1, 0, 0, 1]
    assert g.node_splits.tolist() == [[0, 5]]  # no while/cond/cluster names: start and total only
    assert g.config_runtime.tolist() == [500, 600]
    assert g.node_config_ids.tolist() == [4]
    assert g.node_config_feat[0, 0].tolist() == [
        1, 0, -1, -1, -1, -1, 0, 1, 2, 3, 4, 5, -1, -1, -1, -1, -1, -1
    ]
    assert (g.node_config_feat[1] == -1).all()


def test_layout_without_default_run_keeps_no_config(tmp_path):
    runs = [run(layout=[[[0]]], runtime=5), run(layout=[[[0]]], error=True, default=True, runtime=6)]
    (_, g), = featurize_file(
        write(tmp_path, module_tuning(small_module(), runs, config_ids=[4]))
    )  # fmt: skip
    assert g.num_configs == 0 and g.node_config_feat.shape == (0, 1, 18)


def test_node_splits_after_cluster_while_and_cond_computations(tmp_path):
    comps = [
        computation(1, "while_body.3", 1, instruction(1, "parameter")),
        computation(2, "plain", 2, instruction(2, "parameter")),
        computation(3, "cluster_0", 3, instruction(3, "parameter")),
        computation(4, "main_cond_x", 5, instruction(4, "parameter"), instruction(5, "add", operands=[4, 4])),
    ]
    runs = [run(layout=[[[0]]], default=True)]
    (_, g), = featurize_file(
        write(tmp_path, module_tuning(hlo_module(*comps), runs, config_ids=[0]))
    )  # fmt: skip
    assert g.node_splits.tolist() == [[0, 1, 3, 5]]  # last computation matched: no extra total


def test_features_of_one_instruction(tmp_path):
    window = fb(1, fv(1, 2) + fv(2, 1) + fv(3, -1) + fv(7, 1)) + fb(1, fv(1, 3) + fv(2, 2))
    extra = (
        fb(15, window)
        + fp(14, [1, 0])
        + fb(17, fv(1, 5) + fv(2, 9) + fv(3, 1))
        + fp(20, [2, 3, 4])
        + fv(9, 3)
        + fv(60, 1)
        + fv(99, 12345)  # an unknown field: skipped
    )
    big = 3_000_000_000
    inst = instruction(1, "made-up-op", dims=[big, big, big], etype=16, extra=extra)
    module = hlo_module(computation(1, "main", 1, inst))
    (_, g), = featurize_file(
        write(tmp_path, module_tuning(module, [run(layout=[[]], default=True)], [0]))
    )  # fmt: skip
    row = g.node_feat[0]
    assert g.node_opcode[0] == 0  # unknown opcode
    assert row[col("shape_element_type_is_bf16")] == 1
    with np.errstate(over="ignore"):
        wrapped = int(np.prod(np.array([big] * 3, dtype=np.int64)))  # int64 product wraps like C++
    assert row[col("shape_dimensions_product")] == np.float32(wrapped)
    assert row[col("parameter_number")] == 3 and row[col("is_stable")] == 1
    assert row[col("dimensions_0") : col("dimensions_5") + 1].tolist() == [1, 0, 0, 0, 0, 0]
    assert row[col("window_size_0") : col("window_size_product") + 1].tolist() == [2, 3, 0, 0, 0, 0, 5, 6]
    assert row[col("window_padding_low_0")] == -1 and row[col("window_padding_low_product")] == 0
    assert row[85:93].tolist() == [1, 0, 0, 0, 0, 0, 1, 1]  # reversal: first 6, trues, falses
    assert row[109:121].tolist() == [5, 0, 5, 5, 1, 0, 1, 1, 9, 0, 9, 9]  # start, stride, limit
    assert row[121:125].tolist() == [2, 3, 9, 24]  # dynamic slice sizes: first 2, sum, product


def test_tile_rules_skip_filter_and_normaliser(tmp_path):
    empty = ([], [], [])
    kernel = hlo_module(
        computation(1, "k", 2, instruction(1, "parameter"), instruction(2, "copy", operands=[1]))
    )
    kept = module_tuning(
        kernel,
        [
            # error: dropped, not the normaliser
            run(tile=([2, 4], [8], []), error=True, default=True, runtime=90),
            run(tile=([2, 4], [8], []), runtime=1),  # runtime <= 1: dropped
            run(tile=([1], [], [3]), runtime=120),
            run(tile=empty, default=True, runtime=100),  # first kept default: normaliser
            run(tile=empty, default=True, runtime=110),
        ],
        fingerprint=(1 << 64) - 2,
    )
    single = module_tuning(kernel, [run(tile=empty, default=True)], fingerprint=2)  # one run: skipped
    no_tile = module_tuning(kernel, [run(tile=empty, default=True), run(runtime=5)], fingerprint=3)
    result = featurize_proto(write(tmp_path, tuning(kept, single, no_tile), "model.pb"))
    assert result.task is TILE and result.format.many
    assert [name for name, _ in result.graphs] == ["model_-2"]
    assert (
        len(result.skipped) == 2
        and "1 run(s)" in result.skipped[0]
        and "no tile size config" in result.skipped[1]
    )
    g = result.graphs[0][1]
    assert g.config_runtime.tolist() == [120, 100, 110]
    assert g.config_runtime_normalizers.tolist() == [100, 100, 100]
    assert g.config_feat[0].tolist() == [1, 0, 0, 0, 0, 0, 1, 1] + [0] * 8 + [3, 0, 0, 0, 0, 0, 3, 3]
    assert (g.config_feat[1] == 0).all()  # empty bounds: sum 0 and product 0


def test_tile_kernel_without_usable_default_is_refused(tmp_path):
    kernel = hlo_module(computation(1, "k", 1, instruction(1, "parameter")))
    bad = module_tuning(
        kernel, [run(tile=([1], [], []), runtime=5), run(tile=([1], [], []), default=True, error=True)]
    )
    with pytest.raises(
        ProtoFormatError, match=r"x\.pb: TuningData\.modules\[0\] \(m\): no usable default run"
    ):
        featurize_file(write(tmp_path, tuning(bad)))


DETECTED = [
    ("ModuleTuningData", lambda: module_tuning(small_module(), [run(layout=[[]], default=True)], [4])),
    ("ModuleTuningData without runs", lambda: module_tuning(small_module(), [], [4])),
    ("ModuleTuningData, runs only", lambda: fb(1, small_module()) + fb(3, run(layout=[[]], default=True))),
    ("TuningData", lambda: tuning(module_tuning(small_module(), [run(tile=([1], [], []))]))),
    ("HloProto", lambda: fb(1, small_module())),
    ("HloProto with a buffer assignment",
     lambda: fb(1, small_module()) + fb(3, fb(1, fv(1, 0) + fv(2, 128)))),
    ("HloModuleProto", small_module),
    ("HloModuleProto with its ids", lambda: small_module() + fb(2, "main") + fv(5, 1) + fv(6, 2)),
]


@pytest.mark.parametrize(("expected", "make"), DETECTED, ids=[d[0] for d in DETECTED])
def test_detect_message_tells_plain_modules_from_tuning_protos(expected, make):
    assert detect_message(make()) == expected.split(" ")[0].rstrip(",")


def test_kind_override_and_detection_of_a_module_without_runs(tmp_path):
    path = write(tmp_path, fb(1, small_module()))  # the module alone: an HloProto as XLA dumps it
    assert detect_message(path.read_bytes()) == "HloProto"
    with pytest.raises(ProtoFormatError, match=r"a plain HLO module \(HloProto\) without tuning runs"):
        featurize_file(path)
    # With --kind layout it is read as a ModuleTuningData that lists no configurable nodes.
    with pytest.raises(ProtoFormatError, match="config_index_to_node.*empty: no configurable nodes"):
        featurize_file(path, kind="layout")
    # Read as the wrong message, the module's name string is not a message: a clear error, no crash.
    with pytest.raises(ProtoFormatError, match=r"in TuningData\.modules\[0\]\.module\)"):
        featurize_file(path, kind="tile")


def test_packed_and_unpacked_repeated_fields_decode_alike():
    packed = decode_message(fp(1, [3, -2, 5]), "TensorLayoutConfig")
    unpacked = decode_message(fv(1, 3) + fv(1, -2) + fv(1, 5), "TensorLayoutConfig")
    assert packed == unpacked == {"dims": [3, -2, 5]}


def test_oneof_last_member_wins_and_repeated_message_merges():
    both = decode_message(fb(2, b"") + fb(1, b""), "ConfigProfile")
    assert both["op_config"] is not None and both["module_config"] is None
    merged = decode_message(fb(3, fp(3, [1])) + fb(3, fp(3, [2]) + fv(2, 16)), "HloInstructionProto")
    assert merged["shape"]["dimensions"] == [1, 2] and merged["shape"]["element_type"] == 16


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=20))
def test_varint_round_trip(values):
    assert decode_message(fp(1, values), "TileSizeConfig")["kernel_bounds"] == values
    assert decode_message(b"".join(fv(1, v) for v in values), "TileSizeConfig")["kernel_bounds"] == values


def _layout_config_bytes(nodes, packed: bool) -> bytes:
    def dims_field(dims):
        return fp(1, dims) if packed else b"".join(fv(1, d) for d in dims)

    return b"".join(fb(1, b"".join(fb(1, dims_field(dims)) for dims in node)) for node in nodes)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.lists(st.integers(-3, 200), max_size=7), max_size=4), max_size=6), st.booleans())
def test_fast_layout_decoder_agrees_with_the_general_one(nodes, packed):
    data = memoryview(_layout_config_bytes(nodes, packed))
    fast = wire._fast_layout_config(data, 0, len(data))
    general = wire._decode(data, 0, len(data), "LayoutConfig", "LayoutConfig")
    assert fast is None or fast == general
    if packed and all(0 <= d < 128 for node in nodes for dims in node for d in dims):
        assert fast == general  # the usual encoding takes the fast path


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40))
def test_fast_layout_decoder_leaves_bad_bytes_to_the_general_one(data):
    view = memoryview(data)
    try:
        general = wire._decode(view, 0, len(view), "LayoutConfig", "LayoutConfig")
    except WireFormatError:
        assert wire._fast_layout_config(view, 0, len(view)) is None
    else:
        fast = wire._fast_layout_config(view, 0, len(view))
        assert fast is None or fast == general


@needs_realdata()
def test_fast_path_gives_the_same_layout_graph(layout_bytes, layout_graph, monkeypatch):
    monkeypatch.setattr(wire, "_FAST_DECODERS", {})
    slow = featurize_layout(decode_message(layout_bytes, "ModuleTuningData"))
    assert np.array_equal(slow.node_config_feat, layout_graph.node_config_feat)
    assert np.array_equal(slow.config_runtime, layout_graph.config_runtime)


def test_node_feature_matrix_with_an_extra_block():
    module = decode_message(small_module(), "HloModuleProto")
    operand_count = FeatureBlock(("operand_count",), lambda inst, comp: [len(inst["operand_ids"])])
    extra = node_feature_matrix(module, blocks=(operand_count,))
    assert extra.shape == (5, 1) and extra[:, 0].tolist() == [0, 1, 0, 2, 2]
    assert node_feature_matrix(module).shape == (5, 140) == (
        5, sum(len(b.names) for b in NODE_FEATURE_BLOCKS)
    )


# ---------------------------------------------------------------------------------------------------
# Corrupt, truncated and foreign files


def _truncated_real(fraction: float) -> bytes:
    data = TILE_PROTO.read_bytes()
    return data[: int(len(data) * fraction)]


BAD_FILES = [
    ("empty", b"", r"empty file"),
    ("truncated varint", b"\x08\x96", r"at byte 1 \(in top level field 1\): truncated varint"),
    ("invalid wire type", b"\x0f", r"at byte 0 .*invalid wire type 7"),
    ("group", b"\x0b", r"groups \(wire type 3\) are not supported"),
    ("field number 0", b"\x00\x01", r"field number 0 is invalid"),
    ("length past end", fb(1, b"abc")[:-1],
     r"at byte 0 \(in top level\): field 1: length 3 runs past the end \(2 bytes left\)"),
    ("field 1 is a varint", fv(1, 5), r"field 1 has wire type 0, expected a nested message"),
    ("unknown top-level fields", fv(9, 1) + fb(1, b""),
     r"not a TuningData or ModuleTuningData proto: top-level fields \[1, 9\]"),
    ("fingerprint as bytes", fb(1, small_module()) + fb(2, b"xx") + fb(3, b""),
     r"in ModuleTuningData\): field 2 \(fingerprint\) has wire type 2 \(length-delimited\), expected 0"),
    ("deep truncated varint", tuning(module_tuning(hlo_module(computation(1, "c", 1, b"\x08")))),
     r"TuningData\.modules\[0\]\.module\.computations\[0\]\.instructions\[0\] field 1\): truncated varint"),
    ("corrupt run", module_tuning(small_module(), [b"\x18"], [4]),
     r"at byte \d+ \(in ModuleTuningData\.runs\[0\] field 3\): truncated varint"),
    ("bad utf-8 opcode", tuning(module_tuning(hlo_module(computation(1, "c", 1, fb(2, b"\xff\xfe"))))),
     r"instructions\[0\]\): field 2 \(opcode\) is not valid UTF-8"),
    ("unknown operand",
     module_tuning(hlo_module(computation(1, "c", 2, instruction(2, "add", operands=[99]))),
                   [run(layout=[[]], default=True)], [0]),
     r"instruction 'add\.2' \(id 2\) in computation 'c' has operand id 99, which no instruction"),
    ("unknown callee",
     module_tuning(hlo_module(computation(1, "c", 2, instruction(2, "call", called=[5]))),
                   [run(layout=[[]], default=True)], [0]),
     r"calls computation id 5, which the module does not have"),
    ("layout node count", module_tuning(small_module(), [run(layout=[[], []], default=True)], [4]),
     r"runs\[0\]: layout_config has 2 nodes but config_index_to_node lists 1"),
    ("config id out of range", module_tuning(small_module(), [run(layout=[[]], default=True)], [5]),
     r"config_index_to_node refers to node 5 but the module has 5 instructions"),
    ("four tensors", module_tuning(small_module(), [run(layout=[[[0]] * 4], default=True)], [4]),
     r"nodes\[0\]: 4 tensors, at most 3 allowed"),
]  # fmt: skip


@pytest.mark.parametrize(("label", "data", "message"), BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_protos_are_named_with_offset_and_field(tmp_path, label, data, message):
    path = write(tmp_path, data, "bad.pb")
    with pytest.raises(ProtoFormatError, match=message) as info:
        featurize_file(path)
    assert str(info.value).startswith(f"{path}: ")


@needs_realdata()
@pytest.mark.parametrize(
    ("source", "cut", "message"),
    [
        (
            "tile",
            1000,
            r"at byte 0 \(in top level\): field 1: length 3945 runs past the end \(997 bytes left\)",
        ),
        (
            "layout",
            -3,
            r"at byte 637944 \(in top level\): field 4: length 124 runs past the end \(121 bytes left\)",
        ),
        ("layout", 319_000, r"at byte 0 \(in top level\): field 1: length 493109 runs past the end"),
    ],
)
def test_truncated_real_protos(tmp_path, source, cut, message):
    data = (TILE_PROTO if source == "tile" else LAYOUT_PROTO).read_bytes()
    path = write(tmp_path, data[:cut])
    with pytest.raises(ProtoFormatError, match=message) as info:
        featurize_file(path)
    assert info.value.offset is not None


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(ProtoFormatError, match="no such file"):
        featurize_file(tmp_path / "nope.pb")
    with pytest.raises(ProtoFormatError, match="is a directory"):
        featurize_file(tmp_path)


def test_wire_error_carries_offset_and_path():
    with pytest.raises(WireFormatError) as info:
        decode_message(fv(1, 1) + b"\x10", "TensorLayoutConfig")
    assert info.value.offset == 3 and "TensorLayoutConfig field 2" in str(info.value)


# ---------------------------------------------------------------------------------------------------
# Command line


def test_cli_featurize_writes_npz_and_reports(tmp_path, capsys):
    src = tmp_path / "pb" / "layout" / "train"
    src.mkdir(parents=True)
    write(src, module_tuning(small_module(), [run(layout=[[]], default=True)], [4]), "net.pb")
    write(
        src.parent, tuning(module_tuning(small_module(), [run(tile=([], [], []), default=True)] * 2)), "k.pb"
    )
    out = tmp_path / "npz"
    assert main(["featurize", str(tmp_path / "pb"), "--out", str(out), "--stored", "-v"]) == 0
    printed = capsys.readouterr().out
    assert "layout graph" in printed and "5 nodes, 5 edges, 1 configs, 1 configurable nodes" in printed
    assert "1 tile kernels" in printed and "k_7: 5 nodes" in printed
    assert isinstance(load_graph(out / "layout" / "train" / "net.npz"), LayoutGraph)
    assert isinstance(load_graph(out / "layout" / "k_7.npz"), TileGraph)


def test_cli_featurize_bad_file_exit_1_without_traceback(tmp_path, capsys):
    good = write(tmp_path, module_tuning(small_module(), [run(layout=[[]], default=True)], [4]), "good.pb")
    bad = write(tmp_path, b"\x0a\x05ab", "bad.pb")
    assert main(["featurize", str(bad), str(good), "--out", str(tmp_path / "o")]) == 1
    captured = capsys.readouterr()
    assert f"{bad}: corrupt or truncated proto at byte 0" in captured.err
    assert (
        "Traceback" not in captured.err
        and "1 file(s) could not be featurized; 1 npz written" in captured.err
    )
    assert (tmp_path / "o" / "good.npz").is_file()


def test_cli_featurize_kind_and_usage_errors(tmp_path, capsys):
    path = write(tmp_path, tuning(module_tuning(small_module(), [run(tile=([], [], []), default=True)] * 2)))
    assert main(["featurize", str(path), "--out", str(tmp_path / "o"), "--kind", "tile"]) == 0
    assert main(["featurize", str(tmp_path / "missing.pb"), "--out", str(tmp_path / "o")]) == 2
    assert "missing.pb: no such file or folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["featurize", str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) == 2
    assert "folder holds no *.pb files" in capsys.readouterr().err
