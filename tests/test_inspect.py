"""The streaming inspector against a plain np.load reference, on compressed and stored npz files."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from competition.cli import main
from competition.data.graphs import LayoutGraph, TileGraph, save_graph
from competition.data.inspection import _count_distinct_rows, format_summary, inspect_npz
from competition.errors import DataFormatError

SEED = 20231


def random_layout(rng: np.random.Generator, *, configs=60, configurable=7, nodes=40,
                  unique=12) -> LayoutGraph:
    """A layout graph whose configs repeat: ``unique`` distinct config matrices drawn ``configs`` times."""
    pool = rng.integers(-1, 6, size=(unique, configurable, 18)).astype(np.float32)
    edges = np.sort(rng.integers(0, nodes, size=(nodes * 2, 2)), axis=1)[:, ::-1]
    return LayoutGraph(
        node_feat=rng.normal(size=(nodes, 140)).astype(np.float32),
        node_opcode=rng.integers(1, 121, size=nodes).astype(np.uint8),
        edge_index=edges.astype(np.int64),
        config_runtime=rng.integers(10**6, 10**7, size=configs).astype(np.int64),
        node_config_feat=pool[rng.integers(0, unique, size=configs)],
        node_config_ids=np.sort(rng.choice(nodes, size=configurable, replace=False)).astype(np.int64),
        node_splits=np.array([[0, nodes // 2]], dtype=np.int64),
    )


def random_tile(rng: np.random.Generator, *, configs=50, nodes=9) -> TileGraph:
    """Tile configs mixing small integers (int8 path), large values and fractions (float path), -0.0."""
    pool = rng.integers(0, 300, size=(8, 24)).astype(np.float32)
    pool[1] = 0.0
    pool[2] = -0.0  # equal to row 1 for np.unique: must count once
    pool[3, 5] = 0.5
    feat = pool[rng.integers(0, 8, size=configs)]
    runtime = rng.integers(1000, 5000, size=configs).astype(np.int64)
    return TileGraph(
        node_feat=rng.normal(size=(nodes, 140)).astype(np.float32),
        node_opcode=rng.integers(1, 121, size=nodes).astype(np.uint8),
        edge_index=np.array([[i + 1, i] for i in range(nodes - 1)], dtype=np.int64).reshape(-1, 2),
        config_runtime=runtime,
        config_feat=feat,
        config_runtime_normalizers=np.full(configs, runtime[0], dtype=np.int64),
    )


def reference(path: Path) -> dict:
    """The same figures from a plain, whole-file np.load (what inspect must never need)."""
    with np.load(path) as npz:
        arrays = {key: npz[key] for key in npz.files}
    kind = "layout" if "node_config_feat" in arrays else "tile"
    config = arrays["node_config_feat" if kind == "layout" else "config_feat"]
    runtime = arrays["config_runtime"]
    flat = (config.reshape(len(config), -1) + np.float32(0)) if len(config) else config
    return {
        "kind": kind,
        "nodes": len(arrays["node_opcode"]),
        "edges": len(arrays["edge_index"]),
        "configs": len(runtime),
        "configurable_nodes": len(arrays["node_config_ids"]) if kind == "layout" else None,
        "distinct_configs": len(np.unique(flat, axis=0)) if len(config) else 0,
        "runtime_min": int(runtime.min()) if runtime.any() else None,
        "runtime_max": int(runtime.max()) if runtime.any() else None,
        "memory_bytes": sum(a.nbytes for a in arrays.values()),
    }


def summary_figures(path: Path, **kwargs) -> dict:
    s = inspect_npz(path, **kwargs)
    keys = ("kind", "nodes", "edges", "configs", "configurable_nodes", "distinct_configs", "runtime_min",
            "runtime_max", "memory_bytes")  # fmt: skip
    return {k: getattr(s, k) for k in keys}


@pytest.mark.parametrize("compressed", [True, False])
@pytest.mark.parametrize("chunk_bytes", [1, 700, 5000, 16 * 2**20])
@pytest.mark.parametrize("seed", range(3))
def test_inspect_equals_np_load_reference(tmp_path, compressed, chunk_bytes, seed):
    rng = np.random.default_rng(SEED + seed)
    for name, graph in (("layout", random_layout(rng)), ("tile", random_tile(rng))):
        path = tmp_path / f"{name}.npz"
        save_graph(graph, path, compressed=compressed)
        assert summary_figures(path, chunk_bytes=chunk_bytes) == reference(path)
        assert inspect_npz(path).compressed is compressed


def test_duplicates_are_counted_exactly(tmp_path):
    rng = np.random.default_rng(SEED)
    graph = random_layout(rng, configs=200, unique=5)
    graph.node_config_feat[-1, 0, 0] = 0.25  # one non-integer config: float path, distinct
    path = tmp_path / "g.npz"
    save_graph(graph, path)
    expected = len(np.unique(graph.node_config_feat.reshape(200, -1), axis=0))
    assert inspect_npz(path, chunk_bytes=1000).distinct_configs == expected <= 6


def test_test_file_runtime_is_hidden(tmp_path):
    graph = random_layout(np.random.default_rng(SEED))
    graph.config_runtime[:] = 0
    path = tmp_path / "0123abcd.npz"
    save_graph(graph, path)
    summary = inspect_npz(path)
    assert summary.runtime_hidden and summary.runtime_min is None and summary.runtime_ratio is None
    assert "hidden (test file" in format_summary(summary)


def test_zero_configs_and_fortran_ordered_tensor(tmp_path):
    rng = np.random.default_rng(SEED)
    graph = random_layout(rng, configs=0)
    path = tmp_path / "empty.npz"
    save_graph(graph, path)
    summary = inspect_npz(path)
    assert summary.configs == 0 and summary.distinct_configs == 0 and "no configs" in format_summary(summary)

    graph = random_layout(rng)
    arrays = graph.arrays()
    arrays["node_config_feat"] = np.asfortranarray(arrays["node_config_feat"])
    path = tmp_path / "fortran.npz"
    np.savez(path, **arrays)
    assert summary_figures(path) == reference(path)


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(
        dtype=np.float64,
        shape=hnp.array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=6),
        elements=st.sampled_from([-1.0, 0.0, -0.0, 1.0, 5.0, 0.5, 300.0, -129.0]),
    ),
    st.sampled_from([np.float32, np.float64, np.int64]),
    st.integers(1, 200),
)
def test_streamed_distinct_rows_equal_np_unique(values, dtype, chunk_bytes):
    array = values.astype(dtype)  # int64: 0.5 -> 0, -0.0 -> 0
    buffer = io.BytesIO(array.tobytes())
    got = _count_distinct_rows(buffer, array.shape, array.dtype, Path("mem"), "x", chunk_bytes)
    flat = array.reshape(len(array), -1)
    if flat.dtype.kind == "f":
        flat = flat + flat.dtype.type(0)  # np.unique compares -0.0 == 0.0 by value
    assert got == len(np.unique(flat, axis=0))


def test_cli_inspect_text_and_json(tmp_path, capsys):
    rng = np.random.default_rng(SEED)
    layout, tile = tmp_path / "a.npz", tmp_path / "b.npz"
    save_graph(random_layout(rng), layout)
    save_graph(random_tile(rng), tile, compressed=False)
    assert main(["inspect", str(layout), str(tile)]) == 0
    text = capsys.readouterr().out
    assert "layout graph, compressed npz" in text and "tile graph, stored npz" in text
    assert "configurable nodes  7" in text and "distinct configs" in text and "max/min" in text

    assert main(["inspect", "--json", str(layout)]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["ok"] and document["problems"] == [] and len(document["files"]) == 1
    record = document["files"][0]
    expected = reference(layout)
    for key in ("nodes", "edges", "configs", "configurable_nodes", "distinct_configs", "runtime_min",
                "runtime_max", "memory_bytes"):  # fmt: skip
        assert record[key] == expected[key], key
    assert {"runtime_ratio", "runtime_hidden", "compressed", "arrays", "kind", "path"} <= set(record)
    assert record["arrays"]["node_config_feat"] == {"shape": [60, 7, 18], "dtype": "<f4",
                                                    "nbytes": 60 * 7 * 18 * 4}


def _write_npz(path: Path, arrays: dict) -> Path:
    np.savez(path, **arrays)
    return path


def _bad_files(tmp_path: Path) -> list[tuple[Path, str]]:
    rng = np.random.default_rng(SEED)
    full = random_layout(rng).arrays()
    good = tmp_path / "good.npz"
    save_graph(random_layout(rng), good)
    data = good.read_bytes()
    text = tmp_path / "notes.npz"
    text.write_text("not a zip")
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(data[: len(data) // 2])
    no_ids = _write_npz(tmp_path / "no_ids.npz", {k: v for k, v in full.items() if k != "node_config_ids"})
    no_config = _write_npz(tmp_path / "no_config.npz", {"node_feat": full["node_feat"]})
    mismatch = dict(full, config_runtime=full["config_runtime"][:-1])
    header = tmp_path / "header.npz"
    with zipfile.ZipFile(header, "w") as archive:
        archive.writestr("config_feat.npy", b"garbage")
        tile_arrays = dict(full, config_runtime_normalizers=full["config_runtime"])
        for key in ("node_feat", "node_opcode", "edge_index", "config_runtime", "config_runtime_normalizers"):
            buffer = io.BytesIO()
            np.save(buffer, tile_arrays[key])
            archive.writestr(f"{key}.npy", buffer.getvalue())
    return [
        (text, r"notes\.npz: not an npz \(zip\) archive"),
        (truncated, r"truncated\.npz: not an npz \(zip\) archive"),
        (no_ids, r"no_ids\.npz: missing key\(s\) node_config_ids of a layout graph"),
        (no_config, r"no_config\.npz: neither 'config_feat' \(tile\) nor 'node_config_feat' \(layout\)"),
        (_write_npz(tmp_path / "mismatch.npz", mismatch),
         r"mismatch\.npz: array 'node_config_feat' has size 60 on axis 0 but other arrays say c=59"),
        (header, r"header\.npz: array 'config_feat' has no readable \.npy header"),
        (tmp_path / "absent.npz", r"absent\.npz: no such file"),
    ]  # fmt: skip


def test_bad_npz_files_are_named(tmp_path):
    for path, message in _bad_files(tmp_path):
        with pytest.raises(DataFormatError, match=message):
            inspect_npz(path)


def test_truncated_config_member_is_reported(tmp_path):
    # A stored member cut short inside the config tensor: the zip directory is intact, the data is not.
    graph = random_layout(np.random.default_rng(SEED), configs=100)
    arrays = graph.arrays()
    path = tmp_path / "cut.npz"
    with zipfile.ZipFile(path, "w") as archive:
        for key, value in arrays.items():
            buffer = io.BytesIO()
            np.save(buffer, value)
            raw = buffer.getvalue()
            archive.writestr(f"{key}.npy", raw[: len(raw) - 500] if key == "node_config_feat" else raw)
    with pytest.raises(DataFormatError, match=r"cut\.npz: array 'node_config_feat' is truncated"):
        inspect_npz(path, chunk_bytes=4096)


def test_cli_inspect_errors_exit_codes(tmp_path, capsys):
    text = tmp_path / "notes.npz"
    text.write_text("plain text")
    assert main(["inspect", str(text)]) == 1
    err = capsys.readouterr().err
    assert f"{text}: not an npz (zip) archive" in err and "Traceback" not in err
    assert main(["inspect", str(tmp_path / "absent.npz")]) == 2
    assert "absent.npz: no such file" in capsys.readouterr().err


def _schema_breaks(tmp_path: Path) -> list[tuple[Path, str]]:
    """Files whose arrays break the released format in ways only the loader used to notice."""
    rng = np.random.default_rng(SEED)
    layout, tile = random_layout(rng).arrays(), random_tile(rng).arrays()
    cases = {
        "feat139.npz": (dict(layout, node_feat=layout["node_feat"][:, :139]),
                        r"array 'node_feat' has shape \(40, 139\), expected \(n, 140\)"),
        "feat_rows.npz": (dict(tile, node_feat=tile["node_feat"][:5]),
                          r"array 'node_opcode' has size 9 on axis 0 but other arrays say n=5"),
        "feat64.npz": (dict(tile, node_feat=tile["node_feat"].astype(np.float64)),
                       r"array 'node_feat' has dtype float64, expected float32"),
        "flat_splits.npz": (dict(layout, node_splits=layout["node_splits"].reshape(-1)),
                            r"array 'node_splits' has shape \(2,\), expected 2 dimensions \(1, k\)"),
        "no_splits.npz": ({k: v for k, v in layout.items() if k != "node_splits"},
                          r"missing key\(s\) node_splits of a layout graph"),
        "config23.npz": (dict(tile, config_feat=tile["config_feat"][:, :23]),
                         r"array 'config_feat' has shape \(50, 23\), expected \(c, 24\)"),
    }
    return [(_write_npz(tmp_path / name, arrays), message) for name, (arrays, message) in cases.items()]


def test_inspect_applies_the_loaders_schema(tmp_path):
    # One schema: every file the loader refuses for its format, inspect refuses with the same message.
    from competition.data.graphs import load_graph

    for path, message in _schema_breaks(tmp_path):
        with pytest.raises(DataFormatError, match=message) as from_inspect:
            inspect_npz(path)
        with pytest.raises(DataFormatError) as from_loader:
            load_graph(path)
        assert str(from_inspect.value) == str(from_loader.value)


def test_inspect_accepts_what_the_loader_accepts(tmp_path):
    # Lossless dtypes the loader casts (int32 edges, int32 runtimes) are summarised, not refused.
    arrays = random_tile(np.random.default_rng(SEED)).arrays()
    arrays["edge_index"] = arrays["edge_index"].astype(np.int32)
    path = _write_npz(tmp_path / "int32.npz", arrays)
    assert inspect_npz(path).edges == len(arrays["edge_index"])


def test_cli_inspect_refuses_a_bad_node_feat(tmp_path, capsys):
    (path, _), *_ = _schema_breaks(tmp_path)
    good = tmp_path / "good.npz"
    save_graph(random_tile(np.random.default_rng(SEED)), good)
    assert main(["inspect", str(path), str(good)]) == 1
    captured = capsys.readouterr()
    assert (f"tpugraphs inspect: {path}: array 'node_feat' has shape (40, 139), expected (n, 140)"
            in captured.err)
    assert str(path) not in captured.out and "tile graph" in captured.out  # the good file is still summarised
