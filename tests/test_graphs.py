"""The checked npz loader: real dtypes in, actionable errors for every kind of broken file."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

from competition.collections import (
    COLLECTION_BY_NAME,
    COLLECTIONS,
    get_collection,
    parse_row_id,
)
from competition.data.graphs import (
    LayoutGraph,
    TileGraph,
    graph_kind,
    iter_split,
    list_split,
    load_graph,
    read_config_count,
    save_graph,
)
from competition.data.tree import find_npz_root
from competition.errors import DataFormatError


def make_layout(n: int = 6, c: int = 4, nc: int = 2) -> LayoutGraph:
    rng = np.random.default_rng(0)
    return LayoutGraph(
        node_feat=rng.random((n, 140), dtype=np.float32),
        node_opcode=np.arange(1, n + 1, dtype=np.uint8),
        edge_index=np.array([[1, 0], [2, 1], [3, 1], [5, 4]], dtype=np.int64),
        config_runtime=np.arange(1, c + 1, dtype=np.int64) * 1000,
        node_config_feat=rng.integers(-1, 6, size=(c, nc, 18)).astype(np.float32),
        node_config_ids=np.array([1, 3], dtype=np.int64)[:nc],
        node_splits=np.array([[0, 4]], dtype=np.int64),
    )


def make_tile(n: int = 4, c: int = 7) -> TileGraph:
    rng = np.random.default_rng(1)
    return TileGraph(
        node_feat=rng.random((n, 140), dtype=np.float32),
        node_opcode=np.ones(n, dtype=np.uint8),
        edge_index=np.array([[1, 0], [3, 2]], dtype=np.int64),
        config_runtime=rng.integers(100, 1000, size=c),
        config_feat=rng.random((c, 24), dtype=np.float32),
        config_runtime_normalizers=np.full(c, 500, dtype=np.int64),
    )


@pytest.mark.parametrize("compressed", [True, False])
def test_round_trip_keeps_released_dtypes(tmp_path, compressed):
    path = tmp_path / "g.npz"
    save_graph(make_layout(), path, compressed=compressed)
    graph = load_graph(path)
    assert isinstance(graph, LayoutGraph)
    assert graph.node_opcode.dtype == np.uint8
    assert graph.edge_index.dtype == np.int64 and graph.edge_index.shape == (4, 2)
    assert graph.node_splits.shape == (1, 2)
    assert graph.computation_starts.tolist() == [0, 4]
    assert graph.node_config_feat.dtype == np.float32
    assert (graph.num_nodes, graph.num_edges, graph.num_configs, graph.num_configurable_nodes) == (6, 4, 4, 2)
    assert read_config_count(path) == 4

    save_graph(make_tile(), tmp_path / "t.npz", compressed=compressed)
    tile = load_graph(tmp_path / "t.npz")
    assert isinstance(tile, TileGraph) and graph_kind(tmp_path / "t.npz") == "tile"
    np.testing.assert_allclose(tile.normalized_runtime(), tile.config_runtime / 500)


def _write(path, arrays):
    with open(path, "wb") as fh:
        np.savez_compressed(fh, **arrays)


def _broken(**changes):
    arrays = make_layout().arrays()
    for key, value in changes.items():
        if value is None:
            del arrays[key]
        else:
            arrays[key] = value
    return arrays


BAD_LAYOUTS = [
    ("missing key", _broken(node_splits=None), r"missing key\(s\) node_splits"),
    ("missing two keys", _broken(node_splits=None, node_config_ids=None), r"node_config_ids, node_splits"),
    ("float edges", _broken(edge_index=np.zeros((4, 2), np.float64)),
     r"'edge_index' has dtype float64, expected int64"),
    ("1-d node_splits", _broken(node_splits=np.array([0, 4])),
     r"'node_splits' has shape \(2,\), expected 2 dimensions \(1, k\)"),
    ("139 features", _broken(node_feat=np.zeros((6, 139), np.float32)),
     r"'node_feat' has shape \(6, 139\), expected \(n, 140\)"),
    ("opcode count", _broken(node_opcode=np.ones(5, np.uint8)),
     r"'node_opcode' has size 5 on axis 0 but other arrays say n=6"),
    ("config count", _broken(config_runtime=np.ones(3, np.int64)),
     r"'node_config_feat' has size 4 on axis 0 but other arrays say c=3"),
    ("edge out of range", _broken(edge_index=np.array([[9, 0]], np.int64)),
     r"'edge_index' refers to nodes outside 0..5"),
    ("config id out of range", _broken(node_config_ids=np.array([1, 6])),
     r"'node_config_ids' refers to nodes outside 0..5"),
    ("18 slots", _broken(node_config_feat=np.zeros((4, 2, 17), np.float32)),
     r"'node_config_feat' has shape \(4, 2, 17\)"),
]


@pytest.mark.parametrize(("case", "arrays", "message"), BAD_LAYOUTS, ids=[c[0] for c in BAD_LAYOUTS])
def test_bad_layout_files_name_file_and_rule(tmp_path, case, arrays, message):
    path = tmp_path / "bad.npz"
    _write(path, arrays)
    with pytest.raises(DataFormatError, match=message) as info:
        load_graph(path, "layout")
    assert str(path) in str(info.value)


def test_lossless_dtype_is_accepted(tmp_path):
    path = tmp_path / "int32.npz"
    _write(path, _broken(edge_index=np.array([[1, 0]], np.int32)))
    assert load_graph(path).edge_index.dtype == np.int64


def test_truncated_and_junk_files(tmp_path):
    good = tmp_path / "good.npz"
    save_graph(make_layout(c=200), good)
    data = good.read_bytes()
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataFormatError, match=r"truncated\.npz: .*(truncated or corrupt)"):
        load_graph(truncated)
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"\x00\x01not a zip at all" * 10)
    with pytest.raises(DataFormatError, match=r"junk\.npz: not a readable npz archive"):
        load_graph(junk)
    with pytest.raises(DataFormatError, match="no such file"):
        load_graph(tmp_path / "absent.npz")


def test_corrupt_member_is_reported(tmp_path):
    """A zip whose directory is intact but whose array data is damaged."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zf:
        for key, value in make_layout().arrays().items():
            member = io.BytesIO()
            np.lib.format.write_array(member, value)
            payload = member.getvalue()
            if key == "node_config_feat":
                payload = payload[:80]  # header only, data cut off
            zf.writestr(f"{key}.npy", payload)
    path = tmp_path / "member.npz"
    path.write_bytes(buffer.getvalue())
    with pytest.raises(DataFormatError, match=r"'node_config_feat' cannot be read"):
        load_graph(path, "layout")


def test_neither_tile_nor_layout(tmp_path):
    path = tmp_path / "other.npz"
    _write(path, {"x": np.zeros(3)})
    with pytest.raises(DataFormatError, match="neither 'config_feat'"):
        load_graph(path)


def test_iter_split_and_data_dir_layouts(tmp_path):
    collection = COLLECTION_BY_NAME["layout:xla:random"]
    root = tmp_path / "predict-ai-model-runtime"
    for stem in ("b_model", "a_model"):
        save_graph(make_layout(), root / collection.npz_subdir / "train" / f"{stem}.npz")
    got = [(row_id, g.num_configs) for row_id, g in iter_split(root, collection, "train")]
    assert got == [("layout:xla:random:a_model", 4), ("layout:xla:random:b_model", 4)]
    # The download root, its npz_all/ folder and the upstream npz/ folder all work.
    for data_dir in (root, root / "npz_all", root / "npz_all" / "npz"):
        assert find_npz_root(data_dir) == root / "npz_all" / "npz"
        assert len(list_split(data_dir, collection, "train")) == 2
    with pytest.raises(FileNotFoundError,
                       match=r"no layout:xla:random valid folder here.*npz_all/npz/layout/xla/random/valid"):
        list_split(root, collection, "valid")


def test_collections_table():
    assert [c.name for c in COLLECTIONS] == [
        "tile:xla", "layout:xla:default", "layout:xla:random", "layout:nlp:default", "layout:nlp:random",
    ]
    assert COLLECTIONS[0].required_length(3) == 3 and COLLECTIONS[0].required_length(900) == 5
    assert COLLECTIONS[3].required_length(1000) == 1000
    assert parse_row_id("layout:nlp:default:abc")[1] == "abc"
    for bad in ("tile:abc", "layout:xla:abc", "tile:xla:", "nonsense", ""):
        with pytest.raises(ValueError, match="is not '<collection>:<file stem>'"):
            parse_row_id(bad)
    with pytest.raises(ValueError, match="unknown collection 'tile'; expected one of tile:xla"):
        get_collection("tile")


def test_the_kit_s_errors_survive_pickling_whole():
    """A worker process (``solve --jobs``) hands its error back to the parent pickled: the same type,
    message and fields come out."""
    import pickle

    from competition.errors import RowError

    for error in (DataFormatError("/data/a.npz", "missing array 'config_runtime'"),
                  RowError("duplicate", "config 3 appears twice")):
        again = pickle.loads(pickle.dumps(error))
        assert type(again) is type(error) and str(again) == str(error) and vars(again) == vars(error)
