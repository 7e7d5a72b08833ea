"""The processed layout cache: exact round trip, freshness, refusals, memory mapping, whole splits."""

from __future__ import annotations

import json
import os
import shutil
import zipfile

import numpy as np
import pytest
from real_protos import LAYOUT_PROTO, needs_realdata

from competition.collections import COLLECTION_BY_NAME
from competition.data.graphs import LayoutGraph, TileGraph, list_split, load_graph, save_graph
from competition.data.processed_cache import (
    CONFIGS_NAME,
    MANIFEST_NAME,
    SMALL_KEYS,
    CachedLayoutGraph,
    build_cache,
    cache_split,
    is_fresh,
    iter_cached_split,
    open_cache,
)
from competition.errors import DataFormatError


def make_layout(c: int = 50, nc: int = 7, n: int = 24, seed: int = 0) -> LayoutGraph:
    rng = np.random.default_rng(seed)
    edges = np.array([[v + 1, v] for v in range(n - 1)], dtype=np.int64)
    return LayoutGraph(
        node_feat=rng.random((n, 140), dtype=np.float32) * 1e6,
        node_opcode=rng.integers(1, 121, size=n).astype(np.uint8),
        edge_index=edges,
        config_runtime=rng.integers(1_000, 10**9, size=c),
        node_config_feat=rng.integers(-1, 6, size=(c, nc, 18)).astype(np.float32),
        node_config_ids=np.sort(rng.choice(n, size=nc, replace=False)).astype(np.int64),
        node_splits=np.array([[0, n // 2]], dtype=np.int64),
    )


@pytest.mark.parametrize("compressed", [True, False])
@pytest.mark.parametrize("chunk_bytes", [1, 1000, 1 << 20])  # one config per chunk, a few, all at once
def test_round_trip_is_exact(tmp_path, compressed, chunk_bytes):
    graph = make_layout()
    npz = tmp_path / "g.npz"
    save_graph(graph, npz, compressed=compressed)
    cached = build_cache(npz, tmp_path / "cache", chunk_bytes=chunk_bytes)

    assert cached.num_configs == 50 and cached.num_configurable == 7
    np.testing.assert_array_equal(cached.runtime, graph.config_runtime)
    rng = np.random.default_rng(1)
    for _ in range(5):
        idx = rng.integers(0, 50, size=9)  # repeats and any order allowed
        got = cached.configs(idx)
        assert got.dtype == np.float32 and got.shape == (9, 7, 18)
        np.testing.assert_array_equal(got, graph.node_config_feat[idx])
    np.testing.assert_array_equal(cached.configs(np.arange(50)), graph.node_config_feat)
    arrays = cached.graph_arrays()
    assert set(arrays) == set(SMALL_KEYS)
    for key, value in arrays.items():
        expected = getattr(graph, key)
        assert value.dtype == expected.dtype, key
        np.testing.assert_array_equal(value, expected)


def test_layout_graph_subset_and_reopen(tmp_path):
    graph = make_layout()
    save_graph(graph, tmp_path / "g.npz")
    build_cache(tmp_path / "g.npz", tmp_path / "cache")
    cached = open_cache(tmp_path / "cache")
    sub = cached.layout_graph([3, 0, 3])
    np.testing.assert_array_equal(sub.node_config_feat, graph.node_config_feat[[3, 0, 3]])
    np.testing.assert_array_equal(sub.config_runtime, graph.config_runtime[[3, 0, 3]])
    np.testing.assert_array_equal(sub.edge_index, graph.edge_index)
    assert cached.stem == "g"


def test_config_array_is_memory_mapped(tmp_path):
    save_graph(make_layout(), tmp_path / "g.npz")
    cached = build_cache(tmp_path / "g.npz", tmp_path / "cache")
    mapped = cached.node_config_feat
    assert isinstance(mapped, np.memmap)
    assert mapped.dtype == np.int8 and mapped.shape == (50, 7, 18)
    assert not mapped.flags.writeable
    assert (tmp_path / "cache" / CONFIGS_NAME).stat().st_size < 50 * 7 * 18 + 200  # int8, not float32
    cached.close()
    assert isinstance(cached.node_config_feat, np.memmap)  # reopens on demand


def test_empty_config_axis(tmp_path):
    save_graph(make_layout(c=0), tmp_path / "g.npz")
    cached = build_cache(tmp_path / "g.npz", tmp_path / "cache")
    assert cached.num_configs == 0
    assert cached.configs([]).shape == (0, 7, 18)


def test_fresh_cache_is_reused_and_stale_one_rebuilt(tmp_path):
    npz, cache = tmp_path / "g.npz", tmp_path / "cache"
    save_graph(make_layout(seed=0), npz)
    build_cache(npz, cache)
    assert is_fresh(cache, npz)
    stamp = (cache / CONFIGS_NAME).stat().st_mtime_ns
    build_cache(npz, cache)
    assert (cache / CONFIGS_NAME).stat().st_mtime_ns == stamp  # fresh: not rewritten

    changed = make_layout(c=30, seed=5)
    save_graph(changed, npz)
    os.utime(npz, ns=(1, 1))  # a different mtime even on coarse-clock file systems
    assert not is_fresh(cache, npz)
    cached = build_cache(npz, cache)
    assert is_fresh(cache, npz)
    assert cached.num_configs == 30
    np.testing.assert_array_equal(cached.configs(np.arange(30)), changed.node_config_feat)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "g.npz"]  # no leftovers


def test_other_format_version_is_stale_and_refused_by_open(tmp_path):
    npz, cache = tmp_path / "g.npz", tmp_path / "cache"
    save_graph(make_layout(), npz)
    build_cache(npz, cache)
    manifest = json.loads((cache / MANIFEST_NAME).read_text())
    manifest["format_version"] = 0
    (cache / MANIFEST_NAME).write_text(json.dumps(manifest))
    assert not is_fresh(cache, npz)
    with pytest.raises(DataFormatError, match="cache format version 0"):
        open_cache(cache)
    assert build_cache(npz, cache).num_configs == 50


def test_open_without_manifest(tmp_path):
    with pytest.raises(DataFormatError, match="not a graph cache"):
        open_cache(tmp_path)


def _truncated(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _member_data_offset(path, name: str) -> tuple[int, zipfile.ZipInfo]:
    """Where the (compressed) bytes of one zip member start: after its local header."""
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(name)
    local = path.read_bytes()[info.header_offset : info.header_offset + 30]
    name_length, extra_length = int.from_bytes(local[26:28], "little"), int.from_bytes(local[28:30], "little")
    return info.header_offset + 30 + name_length + extra_length, info


def _corrupt_config_member(path):
    """Flip bytes in the middle of the deflated node_config_feat member (zip directory intact)."""
    start, info = _member_data_offset(path, "node_config_feat.npy")
    data = bytearray(path.read_bytes())
    for i in range(start + info.compress_size // 2, start + info.compress_size // 2 + 64):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def _flip_stored_config_value(path):
    """Change one stored config value to another valid one: only the member's CRC-32 can tell."""
    start, info = _member_data_offset(path, "node_config_feat.npy")
    assert info.compress_type == zipfile.ZIP_STORED
    start += 128  # past the .npy header
    data = bytearray(path.read_bytes())
    value = np.frombuffer(bytes(data[start : start + 4]), np.float32)[0]
    data[start : start + 4] = np.float32(-1.0 if value != -1 else 0.0).tobytes()
    path.write_bytes(bytes(data))


def _junk(path):
    path.write_bytes(b"this is not a zip file")


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_truncated, "truncated or corrupt"),
        (_corrupt_config_member, "node_config_feat"),  # garbage floats: caught by the value check
        (_flip_stored_config_value, "Bad CRC-32"),
        (_junk, "not a readable npz"),
    ],
)
def test_damaged_npz_names_file_and_leaves_no_cache(tmp_path, damage, message):
    npz, cache = tmp_path / "g.npz", tmp_path / "cache"
    save_graph(make_layout(c=400, nc=20, seed=3), npz, compressed=damage is not _flip_stored_config_value)
    damage(npz)
    with pytest.raises(DataFormatError, match=message) as info:
        build_cache(npz, cache, chunk_bytes=4096)
    assert info.value.path == str(npz)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.npz"]  # no cache, no staging folder


def test_failed_rebuild_keeps_the_old_cache(tmp_path):
    npz, cache = tmp_path / "g.npz", tmp_path / "cache"
    save_graph(make_layout(), npz)
    build_cache(npz, cache)
    _junk(npz)
    with pytest.raises(DataFormatError):
        build_cache(npz, cache)
    assert open_cache(cache).num_configs == 50
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "g.npz"]


@pytest.mark.parametrize(
    ("value", "position"),
    [
        (6.0, r"node_config_feat\[7, 2, 13\] = 6\.0 \(config 7, configurable node 2, kernel layout slot 1\)"),
        (-2.0, r"node_config_feat\[7, 2, 13\] = -2\.0"),
        (0.5, r"node_config_feat\[7, 2, 13\] = 0\.5"),
        (np.nan, r"node_config_feat\[7, 2, 13\] = nan"),
    ],
)
def test_config_values_outside_range_are_refused(tmp_path, value, position):
    graph = make_layout()
    graph.node_config_feat[7, 2, 13] = value
    npz = tmp_path / "g.npz"
    save_graph(graph, npz)
    with pytest.raises(DataFormatError, match=position + r".*integers in -1\.\.5") as info:
        build_cache(npz, tmp_path / "cache", chunk_bytes=500)  # several chunks: position stays absolute
    assert info.value.path == str(npz)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.npz"]


def _write_arrays(path, arrays):
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def test_malformed_graphs_are_refused(tmp_path):
    graph = make_layout()
    tile = TileGraph(
        node_feat=graph.node_feat, node_opcode=graph.node_opcode, edge_index=graph.edge_index,
        config_runtime=graph.config_runtime, config_feat=np.zeros((50, 24), np.float32),
        config_runtime_normalizers=graph.config_runtime,
    )
    save_graph(tile, tmp_path / "tile.npz")
    with pytest.raises(DataFormatError, match="not a layout graph: a tile graph"):
        build_cache(tmp_path / "tile.npz", tmp_path / "c1")

    arrays = graph.arrays()
    arrays["node_config_feat"] = arrays["node_config_feat"][:, :5]
    _write_arrays(tmp_path / "shape.npz", arrays)
    with pytest.raises(DataFormatError,
                       match=r"has shape \(50, 5, 18\), expected \(c, nc, 18\) = \(50, 7, 18\)"):
        build_cache(tmp_path / "shape.npz", tmp_path / "c2")

    arrays = graph.arrays()
    del arrays["node_splits"]
    _write_arrays(tmp_path / "missing.npz", arrays)
    with pytest.raises(DataFormatError, match="missing key.*node_splits"):
        build_cache(tmp_path / "missing.npz", tmp_path / "c3")

    arrays = graph.arrays()
    arrays["node_config_ids"] = arrays["node_config_ids"] + 100
    _write_arrays(tmp_path / "ids.npz", arrays)
    with pytest.raises(DataFormatError, match="'node_config_ids' refers to nodes outside 0..23"):
        build_cache(tmp_path / "ids.npz", tmp_path / "c4")

    with pytest.raises(DataFormatError, match="no such file"):
        build_cache(tmp_path / "absent.npz", tmp_path / "c5")
    assert not any(p.name.startswith((".c", "c")) for p in tmp_path.iterdir())


def test_integer_configs_are_accepted(tmp_path):
    graph = make_layout()
    arrays = graph.arrays()
    arrays["node_config_feat"] = arrays["node_config_feat"].astype(np.int8)
    _write_arrays(tmp_path / "g.npz", arrays)
    cached = build_cache(tmp_path / "g.npz", tmp_path / "cache")
    np.testing.assert_array_equal(cached.configs(np.arange(50)), graph.node_config_feat)


@pytest.mark.parametrize(
    ("indices", "error"),
    [([50], "config index 50 is outside 0..49"), ([-1], "config index -1 is outside"), ([[1]], "1-D"),
     ([0.5], "integers")],
)
def test_bad_indices(tmp_path, indices, error):
    save_graph(make_layout(), tmp_path / "g.npz")
    cached = build_cache(tmp_path / "g.npz", tmp_path / "cache")
    with pytest.raises(IndexError, match=error):
        cached.configs(indices)


def test_cache_split_over_tiny_tree(tiny_competition, tmp_path):
    public = tiny_competition / "public"
    collection = COLLECTION_BY_NAME["layout:nlp:random"]
    paths = list_split(public, collection, "train")
    graphs = cache_split(public, "layout:nlp:random", "train", tmp_path / "cache", progress=False)
    assert [g.stem for g in graphs] == [p.stem for p in paths] and graphs
    for path, cached in zip(paths, graphs, strict=True):
        assert cached.cache_dir == tmp_path / "cache" / "layout/nlp/random/train" / path.stem
        original = load_graph(path, "layout")
        np.testing.assert_array_equal(cached.configs(np.arange(cached.num_configs)),
                                      original.node_config_feat)
        np.testing.assert_array_equal(cached.runtime, original.config_runtime)
    again = cache_split(public, collection, "train", tmp_path / "cache", progress=False)  # fresh: reopened
    assert [g.cache_dir for g in again] == [g.cache_dir for g in graphs]


def test_cache_split_refuses_tile_and_unknown(tiny_competition, tmp_path):
    public = tiny_competition / "public"
    with pytest.raises(ValueError, match="tile graphs are not cached"):
        cache_split(public, "tile:xla", "train", tmp_path)
    with pytest.raises(ValueError, match="unknown collection 'layout:foo'"):
        cache_split(public, "layout:foo", "train", tmp_path)


def test_layout_view_is_the_released_graph_with_mapped_int8_configs(tmp_path):
    graph = make_layout()
    save_graph(graph, tmp_path / "g.npz")
    view = build_cache(tmp_path / "g.npz", tmp_path / "cache").layout_view()
    assert isinstance(view, CachedLayoutGraph) and isinstance(view, LayoutGraph)
    assert isinstance(view.node_config_feat, np.memmap) and view.node_config_feat.dtype == np.int8
    np.testing.assert_array_equal(view.node_config_feat, graph.node_config_feat)  # same values, int8
    for key in SMALL_KEYS:
        np.testing.assert_array_equal(getattr(view, key), getattr(graph, key))
    assert (view.num_configs == graph.num_configs
            and view.num_configurable_nodes == graph.num_configurable_nodes)
    assert view.cache.cache_dir == tmp_path / "cache"
    view.cache.close()  # the view does not own the map: closing the cache drops it, the next read reopens it
    assert view.cache._config_map is None and view.node_config_feat.shape == graph.node_config_feat.shape
    with pytest.raises(AttributeError):
        view.node_config_feat = graph.node_config_feat  # read-only
    assert repr(view).startswith("CachedLayoutGraph(") and "configs=50" in repr(view)  # no array dump


def test_iter_cached_split_builds_each_cache_as_it_is_reached(tiny_competition, tmp_path):
    public = tiny_competition / "public"
    graphs = iter_cached_split(public, "layout:xla:default", "valid", tmp_path / "cache")
    folder = tmp_path / "cache" / "layout/xla/default/valid"
    first = next(graphs)
    assert [p.name for p in folder.iterdir() if not p.name.startswith(".")] == [first.stem]  # only the first
    rest = list(graphs)
    assert len(rest) + 1 == len(list_split(public, COLLECTION_BY_NAME["layout:xla:default"], "valid"))
    with pytest.raises(ValueError, match="tile graphs are not cached"):
        next(iter_cached_split(public, "tile:xla", "valid", tmp_path / "cache"))


def test_split_source_reads_layout_graphs_through_the_cache(tiny_competition, tmp_path):
    from solutions.methods.base import SplitSource

    public = tiny_competition / "public"
    layout = SplitSource(public, COLLECTION_BY_NAME["layout:nlp:default"], "test")
    plain, cached = list(layout.graphs()), list(layout.graphs(tmp_path / "cache"))
    assert [row for row, _ in cached] == [row for row, _ in plain]
    for (_, a), (_, b) in zip(plain, cached, strict=True):
        assert not isinstance(a, CachedLayoutGraph) and isinstance(b, CachedLayoutGraph)
        np.testing.assert_array_equal(b.node_config_feat, a.node_config_feat)
    tile = SplitSource(public, COLLECTION_BY_NAME["tile:xla"], "valid")
    assert all(isinstance(g, TileGraph) for _, g in tile.graphs(tmp_path / "cache"))  # tile: never cached
    assert not (tmp_path / "cache" / "tile").exists()


@needs_realdata(LAYOUT_PROTO)
def test_the_real_layout_graph_reads_the_same_through_the_cache(tmp_path):
    """The real proto, featurized, saved as a released npz and cached: the methods' inputs are the same."""
    from competition.data.protos.featurize import featurize_file
    from solutions.kinds.features import FeatureSettings, config_features
    from solutions.kinds.layout import layout_cost

    [(_, graph)] = featurize_file(LAYOUT_PROTO)
    save_graph(graph, tmp_path / "real.npz")
    view = build_cache(tmp_path / "real.npz", tmp_path / "cache").layout_view()
    loaded = load_graph(tmp_path / "real.npz", "layout")
    assert view.num_configs == loaded.num_configs > 1 and view.num_configurable_nodes == 62
    np.testing.assert_array_equal(view.node_config_feat, loaded.node_config_feat)
    np.testing.assert_array_equal(layout_cost(view), layout_cost(loaded))
    settings = FeatureSettings(task="layout")
    np.testing.assert_array_equal(config_features(view, settings), config_features(loaded, settings))


# -- tpugraphs cache ------------------------------------------------------------------------------------


def test_cache_command_builds_then_reuses(tiny_competition, tmp_path, capsys):
    from competition.cli import main

    public, out = tiny_competition / "public", tmp_path / "cache"
    assert main(["cache", "--data", str(public), "--out", str(out), "--quiet"]) == 0
    first = capsys.readouterr().out
    layout = [c for c in COLLECTION_BY_NAME.values() if c.task.name == "layout"]
    for collection in layout:
        for split in ("train", "valid", "test"):
            stems = [p.stem for p in list_split(public, collection, split)]
            assert sorted(p.name for p in (out / collection.subpath / split).iterdir()) == sorted(stems)
            assert f"{collection.name:<20} {split:<6} {len(stems):>6} {len(stems):>6} {0:>6}" in first
    assert not (out / "tile").exists() and "tpugraphs solve --data" in first
    assert main(["cache", "--data", str(public), "--out", str(out), "--quiet",
                 "--collection", "layout:nlp:random", "--split", "valid"]) == 0
    again = capsys.readouterr().out
    graphs = len(list_split(public, COLLECTION_BY_NAME["layout:nlp:random"], "valid"))
    assert f"{'layout:nlp:random':<20} {'valid':<6} {graphs:>6} {0:>6} {graphs:>6}" in again  # reused
    assert main(["cache", "--data", str(public), "--out", str(out), "--quiet", "--force",
                 "--collection", "layout:nlp:random", "--split", "valid"]) == 0
    assert f"{graphs:>6} {graphs:>6} {0:>6}" in capsys.readouterr().out  # --force: rebuilt


def test_cache_command_names_a_corrupt_file_and_caches_the_others(tiny_competition, tmp_path, capsys):

    from competition.cli import main

    data = tmp_path / "public"
    shutil.copytree(tiny_competition / "public", data)
    collection = COLLECTION_BY_NAME["layout:xla:random"]
    paths = list_split(data, collection, "valid")
    paths[0].write_bytes(b"not an npz")
    code = main(["cache", "--data", str(data), "--out", str(tmp_path / "cache"), "--quiet",
                 "--collection", collection.name, "--split", "valid"])
    err = capsys.readouterr().err
    assert code == 1 and paths[0].name in err and "could not be read" in err and "Traceback" not in err
    folder = tmp_path / "cache" / collection.subpath / "valid"
    assert (sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))
            == sorted(p.stem for p in paths[1:]))


@pytest.mark.parametrize(("argv", "message"), [
    (["--collection", "tile:xla"], "tile:xla: tile graphs are not cached"),
    (["--collection", "layout:foo"], "unknown collection 'layout:foo'"),
    (["--data", "{tmp}/nowhere"], "nowhere': no such directory"),
    (["--out", "{tmp}/a_file"], "a_file: exists and is not a folder"),
    (["--data", "{tmp}"], "holds no competition data"),
])
def test_cache_command_usage_errors(tiny_competition, tmp_path, capsys, argv, message):
    from competition.cli import main

    (tmp_path / "a_file").write_text("")
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in argv]
    base = ["cache", "--data", str(tiny_competition / "public"), "--out", str(tmp_path / "cache"), "--quiet"]
    assert main([*base, *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
