"""The description of a data tree (``competition.data.description``, ``tpugraphs stats``).

The streamed figures of one layout graph against slow whole-array references, the description of the
tiny competition, of the featurized real protos and of the real Kaggle tree, and the command line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from real_protos import KAGGLE_TREE, LAYOUT_PROTO, TILE_PROTO, needs_kaggle_tree, needs_realdata

from competition.cli import main
from competition.collections import COLLECTIONS
from competition.data.description import AT_FASTEST, LINKED, MENU_PRODUCT, RESHAPE_COPIES, describe, markdown
from competition.data.hlo import NODE_FEATURE_INDEX, OPCODE_IDS, OPCODE_NAMES
from competition.data.layout_description import LAYOUT_KEEPING, describe_layout_graph
from competition.data.reshapes import is_copy, reshape_groups


def exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code)


SHAPE_COLUMNS = slice(NODE_FEATURE_INDEX["shape_dimensions_0"], NODE_FEATURE_INDEX["shape_dimensions_0"] + 6)

def test_streamed_stats_match_whole_array_references(tiny_competition):
    public = tiny_competition / "public"
    reshape_totals = np.zeros(2, dtype=np.int64)
    for path in sorted((public / "npz_all/npz/layout/xla/random/train").glob("*.npz")):
        fast = describe_layout_graph(path, chunk_bytes=512)  # many small chunks
        with np.load(path) as npz:
            feat, runtime = npz["node_config_feat"].astype(np.int64), npz["config_runtime"]
            edges, ops, npz_ids = npz["edge_index"], npz["node_opcode"], npz["node_config_ids"]
            shapes = npz["node_feat"][:, SHAPE_COLUMNS]
        c, nc, _ = feat.shape
        flat = feat.reshape(c, -1)
        assert fast["distinct configs"] == len(np.unique(flat, axis=0))
        assert fast["distinct settings"] == [len(np.unique(feat[:, j], axis=0)) for j in range(nc)]
        columns = {feat[:, j].tobytes() for j in range(nc)}
        assert fast["distinct columns"] == len(columns)
        consumers = [len({int(u) for u, v in edges if v == node}) for node in range(len(ops))]
        assert fast["one consumer"] == pytest.approx(np.mean(np.array(consumers) == 1))
        unset = [np.mean((feat[:, :, 6 * t:6 * t + 6] < 0).all(axis=2)) for t in range(3)]
        assert fast["unset tensors"] == pytest.approx(unset)
        assert fast["minus one"] == pytest.approx(np.mean(feat == -1))
        assert fast["at the fastest"] == pytest.approx(np.mean(runtime <= runtime.min() * 1.0001))
        mxu = np.isin(ops[npz_ids], [OPCODE_IDS["convolution"], OPCODE_IDS["dot"]])
        reordered_only = 0
        for j in np.flatnonzero(mxu):
            for t in range(3):
                named = {tuple(sorted(v[v >= 0])) for v in feat[:, j, 6 * t:6 * t + 6]} - {()}
                reordered_only += len(named) == 1
        assert fast["mxu tensors reordered only"] == reordered_only
        # Per layout group (a distinct column) of conv/dot nodes with more than one setting: are its settings
        # every combination of its three tensors' settings?
        groups = {}
        for j in np.flatnonzero(mxu):
            whole = len(np.unique(feat[:, j], axis=0))
            if whole > 1:
                per_tensor = [len(np.unique(feat[:, j, 6 * t:6 * t + 6], axis=0)) for t in range(3)]
                groups[feat[:, j].tobytes()] = whole == int(np.prod(per_tensor))
        assert fast["mxu groups varying"] == len(groups)
        assert fast["mxu groups full product"] == sum(groups.values())
        producers = {}
        for consumer, producer in edges:
            producers.setdefault(int(consumer), []).append(int(producer))
        configurable, linked = set(npz_ids.tolist()), 0
        for node in npz_ids.tolist():  # walk back from each operand, one op at a time
            for start in producers.get(node, []):
                step, found = start, False
                for _ in range(12):
                    if step in configurable:
                        found = True
                        break
                    if OPCODE_NAMES[int(ops[step])] not in LAYOUT_KEEPING:
                        break
                    same = [p for p in producers.get(step, []) if list(shapes[p]) == list(shapes[step])]
                    if not same:
                        break
                    step = same[0]
                if found:
                    linked += 1
                    break
        assert fast["linked configurable"] == linked
        # Reshape copies, one (config, reshape) at a time through the scalar rule.
        copies = known = 0
        for j in np.flatnonzero(ops[npz_ids] == OPCODE_IDS["reshape"]):
            node = int(npz_ids[j])
            if len(set(producers.get(node, []))) != 1:
                continue
            source = producers[node][0]
            out_dims, in_dims = shapes[node][shapes[node] > 0], shapes[source][shapes[source] > 0]
            groups = reshape_groups(out_dims, in_dims)
            if groups is None or not len(out_dims) or not len(in_dims):
                continue
            for row in feat[:, j]:
                if row[0] >= 0 and row[6] >= 0:
                    known += 1
                    copies += is_copy(row[:6], row[6:12], groups, (len(out_dims), len(in_dims)))
        assert (fast["reshape copies"], fast["reshape settings"]) == (copies, known)
        reshape_totals += np.array([copies, known])
        spread = []
        for row in np.unique(flat, axis=0):
            same = runtime[(flat == row).all(axis=1)]
            if len(same) > 1:
                spread.append(same.max() / same.min() - 1)
        assert sorted(fast["duplicate spread"]) == pytest.approx(sorted(spread))
    assert 0 < reshape_totals[0] < reshape_totals[1]  # both kinds of reshape setting were checked
    assert describe(public, tiny_competition / "private", chunk_bytes=256) == describe(
        public, tiny_competition / "private")


def test_describe_reports_every_collection(tiny_competition):
    stats = describe(tiny_competition / "public", tiny_competition / "private")
    assert set(stats) == {c.name for c in COLLECTIONS}
    spread = {name: figures["runtime max/min"]["median"] for name, figures in stats.items()}
    assert spread["layout:xla:random"] > spread["layout:xla:default"]
    assert 0 <= stats["tile:xla"]["default is the fastest"] <= 1
    assert 0 < stats["layout:nlp:default"]["share of -1 in node_config_feat"] < 1


def test_stats_markdown_has_one_row_per_statistic(tiny_competition):
    stats = describe(tiny_competition / "public", tiny_competition / "private")
    text = markdown(stats)
    assert text.count("\n| ") >= len(stats["layout:xla:default"]) + len(stats["tile:xla"])
    assert "`layout:nlp:random`" in text and "`tile:xla`" in text


def test_stats_of_the_tiny_competition_meet_the_real_structure(tiny_competition):
    stats = describe(tiny_competition / "public", tiny_competition / "private")
    for name in ("layout:xla:random", "layout:nlp:random"):
        assert stats[name]["distinct settings per configurable node"]["max"] <= 9
    for name, figures in stats.items():
        if name == "tile:xla":
            assert figures["kernels with best normalised runtime > 1"] == 0
            assert figures["best normalised runtime"]["max"] <= 1.0
            continue
        assert figures["conv/dot tensors with a layout setting <= 2 slots"] == 1.0
        # In every real graph at hand a conv/dot tensor keeps its two minor-most dimensions (version 4).
        assert figures["conv/dot tensors whose settings only reorder the same dimensions"] == 1.0
        assert figures["distinct node columns / configurable nodes"]["median"] <= 0.8
        assert 0.6 <= figures["nodes with exactly one consumer"]["median"] <= 0.9


@needs_realdata(LAYOUT_PROTO, TILE_PROTO)
def test_stats_of_the_featurized_real_protos(tmp_path):
    root = tmp_path / "real"
    assert exit_code(["featurize", str(LAYOUT_PROTO), "--out",
                      str(root / "npz/layout/xla/default/train")]) == 0
    assert exit_code(["featurize", str(TILE_PROTO), "--out", str(root / "npz/tile/xla/train")]) == 0
    stats = describe(root)
    assert set(stats) == {"layout:xla:default", "tile:xla"}
    layout, tile = stats["layout:xla:default"], stats["tile:xla"]
    # The figures the real-data notes give for the layout proto and its 15 tile kernels.
    assert layout["configs per graph"]["median"] == 112
    assert layout["distinct configs / configs"]["median"] == pytest.approx(91 / 112, abs=1e-3)
    assert layout["distinct node columns / configurable nodes"]["median"] == pytest.approx(8 / 62, abs=1e-3)
    assert layout["distinct settings per configurable node"] == {"min": 2, "median": 4, "max": 8}
    assert layout["conv/dot tensors with a layout setting <= 2 slots"] == 1.0
    assert layout["share of -1 in node_config_feat"] == pytest.approx(0.69, abs=0.005)
    assert layout["nodes with exactly one consumer"]["median"] == pytest.approx(0.76, abs=0.01)
    assert (layout["whole tensor unset (output / input / kernel)"]
            == pytest.approx([0.08, 0.07, 0.14], abs=0.01))
    assert layout["runtime max/min"]["median"] == pytest.approx(1.016, abs=1e-3)
    assert layout["conv/dot tensors whose settings only reorder the same dimensions"] == 1.0
    assert layout[AT_FASTEST]["median"] == pytest.approx(91 / 112, abs=1e-3)  # runtimes on discrete levels
    assert layout[LINKED]["median"] == pytest.approx(6 / 62, abs=1e-3)
    assert layout[RESHAPE_COPIES] == 0.0  # its 9 reshapes: every setting a bitcast
    # Its six varying convolution groups: every combination of their tensors' orders, except one group whose
    # 112 configs show six of its eight.
    assert layout[MENU_PRODUCT] == pytest.approx(5 / 6, abs=1e-3)
    assert tile["graphs"] == 15
    assert tile["kernels with best normalised runtime > 1"] == 0
    assert tile["default is the fastest"] == pytest.approx(11 / 15, abs=1e-3)
    assert "`layout:xla:default`" in markdown(stats)


@needs_kaggle_tree
def test_stats_of_the_real_kaggle_tree():
    """What generator version 4 is grounded on: in every real layout graph at hand (labelled or test,
    seven programs), conv/dot tensors only reorder their two minor-most dimensions; in the labelled ones
    most configs tie the fastest runtime (discrete levels: a setting costs a fixed amount or nothing)."""
    stats = describe(KAGGLE_TREE)
    for name in ("layout:xla:default", "layout:xla:random", "layout:nlp:default", "layout:nlp:random"):
        assert stats[name]["conv/dot tensors whose settings only reorder the same dimensions"] == 1.0
    assert stats["layout:xla:default"][AT_FASTEST] == {"min": 0.42, "median": 0.632, "max": 0.844}
    assert stats["layout:xla:random"][AT_FASTEST]["min"] == 0.32
    # Real programs link configurable nodes sparsely: 10-21 % read another's output (small: ~43 %).
    for name in ("layout:xla:default", "layout:xla:random", "layout:nlp:default", "layout:nlp:random"):
        assert 0.05 < stats[name][LINKED]["max"] <= 0.25, stats[name][LINKED]
    # Every reshape setting of every real graph at hand keeps the reshape a bitcast (`small`: 25-78 %
    # copies; docs/synthetic-data.md, "Reshapes that copy").
    for name in ("layout:xla:default", "layout:xla:random", "layout:nlp:default", "layout:nlp:random"):
        assert stats[name][RESHAPE_COPIES] == 0.0
    # A conv/dot group's settings are (nearly always) every combination of its tensors' orders: all six
    # groups of each labelled `unet_3d` search and of `unet3d`; 2 of 4, 12 of 15 and 5 of 7 in the test
    # programs (`small` version 5: 9-36 %; docs/synthetic-data.md, "Two more candidates").
    assert stats["layout:xla:default"][MENU_PRODUCT] == pytest.approx(14 / 16, abs=1e-3)
    assert stats["layout:xla:random"][MENU_PRODUCT] == pytest.approx(8 / 10, abs=1e-3)
    assert stats["layout:nlp:default"][MENU_PRODUCT] == pytest.approx(12 / 15, abs=1e-3)
    assert stats["layout:nlp:random"][MENU_PRODUCT] == pytest.approx(5 / 7, abs=1e-3)


def test_stats_cli_prints_markdown_and_json(tiny_competition, capsys):
    assert exit_code(["stats", str(tiny_competition)]) == 0
    text = capsys.readouterr().out
    assert "`layout:nlp:random`" in text and "`tile:xla`" in text and "distinct node columns" in text
    assert exit_code(["stats", str(tiny_competition / "public"), "--json", "--collection",
                      "layout:xla:random", "--split", "train"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data) == ["layout:xla:random"]
    assert data["layout:xla:random"]["graphs"] == 3
    # Without private/ next to it, the test graphs count only for the structure.
    assert data["layout:xla:random"]["runtime max/min"]["min"] > 1


def test_the_module_form_points_to_the_command():
    done = subprocess.run([sys.executable, "-m", "competition.data.description", "data"], capture_output=True,
                          text=True, cwd=Path(__file__).resolve().parents[1], timeout=120)
    assert done.returncode == 1 and not done.stdout
    assert "run `tpugraphs stats DATA_DIR`" in done.stderr and "Traceback" not in done.stderr


def test_stats_cli_errors(tmp_path, tiny_competition, capsys):
    assert exit_code(["stats", str(tmp_path / "absent")]) == 2
    assert "no such directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert exit_code(["stats", str(tmp_path / "empty")]) == 2
    assert "holds no competition data" in capsys.readouterr().err
    assert exit_code(["stats", str(tiny_competition), "--collection", "layout:xla:nope"]) == 2
    capsys.readouterr()
    # A truncated config tensor: exit 1, the file named, no traceback.
    bad = tmp_path / "bad" / "npz" / "layout" / "xla" / "random" / "train"
    bad.mkdir(parents=True)
    source = next((tiny_competition / "public/npz_all/npz/layout/xla/random/train").glob("*.npz"))
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(bad / "broken.npz", "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            zout.writestr(info.filename,
                          data[: len(data) // 2] if "node_config_feat" in info.filename else data)
    assert exit_code(["stats", str(tmp_path / "bad")]) == 1
    err = capsys.readouterr().err
    assert "broken.npz" in err and "node_config_feat" in err and "Traceback" not in err
