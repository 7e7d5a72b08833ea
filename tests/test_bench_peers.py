"""``make bench-peers``'s plumbing (``benchmarks/bench_peers.py``) without TensorFlow: an upstream prediction
CSV to kit rows, the timing of its inference loop, the peers' data tree, the tables and the verdicts,
and a run of the kit's side on the tiny competition. The upstream baselines themselves (TensorFlow +
TF-GNN in ``.venv-peers``) need more than 30 s even for one epoch (TensorFlow's start and tracing alone
take tens of seconds on 2 cores): they run in the benchmark, not here."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from benchmarks import bench_peers
from benchmarks.bench_peers import VALID_PREFIX, BenchError
from competition.collections import COLLECTION_BY_NAME, COLLECTIONS
from competition.data.graphs import read_config_count
from competition.data.tree import split_dir
from competition.submission.rules import RowError

TILE = COLLECTION_BY_NAME["tile:xla"]
LAYOUT = COLLECTION_BY_NAME["layout:nlp:random"]


def _csv(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "results.csv"
    path.write_text(text)
    return path


def test_a_tile_row_padded_with_zeros_becomes_the_first_five_distinct_configs():
    # tiles_train.py lists 10 indices, padding a kernel of fewer configs with 0.
    assert bench_peers.peer_row(TILE, [2, 0, 1, 0, 0, 0, 0, 0, 0, 0], 3).tolist() == [2, 0, 1]
    assert bench_peers.peer_row(TILE, [9, 3, 7, 1, 0, 2, 4, 5, 6, 8], 12).tolist() == [9, 3, 7, 1, 0]


def test_a_layout_row_must_be_a_whole_permutation():
    assert bench_peers.peer_row(LAYOUT, [3, 1, 0, 2], 4).tolist() == [3, 1, 0, 2]
    with pytest.raises(RowError):
        bench_peers.peer_row(LAYOUT, [3, 1, 0], 4)
    with pytest.raises(RowError):
        bench_peers.peer_row(LAYOUT, [3, 1, 0, 4], 4)


def test_read_peer_csv_keeps_the_file_order_and_names_a_bad_line(tmp_path):
    path = _csv(tmp_path, "ID,TopConfigs\ntile:xla:b,1;0;2\ntile:xla:a,0;1;2")  # no final newline, as written
    assert bench_peers.read_peer_csv(path) == [("tile:xla:b", [1, 0, 2]), ("tile:xla:a", [0, 1, 2])]
    with pytest.raises(BenchError, match="header"):
        bench_peers.read_peer_csv(_csv(tmp_path, "id,configs\n"))
    with pytest.raises(BenchError, match=r"results.csv:3: TopConfigs 'x;1'"):
        bench_peers.read_peer_csv(_csv(tmp_path, "ID,TopConfigs\ntile:xla:a,0;1\ntile:xla:b,x;1\n"))


def test_split_peer_rows_parts_test_rows_from_valid_rows():
    rows = [("layout:nlp:random:t1", [1, 0]), (f"layout:nlp:random:{VALID_PREFIX}v1", [0, 2, 1])]
    sizes = {"t1": 2, f"{VALID_PREFIX}v1": 3}
    test, valid = bench_peers.split_peer_rows(rows, LAYOUT, sizes)
    assert {k: v.tolist() for k, v in test.items()} == {"layout:nlp:random:t1": [1, 0]}
    assert {k: v.tolist() for k, v in valid.items()} == {"v1": [0, 2, 1]}
    with pytest.raises(BenchError, match="lacks 1 graph"):
        bench_peers.split_peer_rows(rows[:1], LAYOUT, sizes)
    with pytest.raises(BenchError, match="collection tile:xla"):
        bench_peers.split_peer_rows([("tile:xla:t1", [0])], LAYOUT, sizes)


def test_inference_seconds_leaves_out_the_valid_graphs():
    # start, three items arriving at 1, 3, 6, the loop ending at 10: items take 2, 3, 4 s.
    loops = [{"desc": "other", "stamps": [0, 100]},
             {"desc": "Inference", "stamps": [0.0, 1.0, 3.0, 6.0, 10.0]}]
    total, test = bench_peers.inference_seconds(loops, "Inference", ["a", f"{VALID_PREFIX}b", "c"])
    assert (total, test) == (10.0, 6.0)
    with pytest.raises(BenchError, match="timed 3 items for 2 rows"):
        bench_peers.inference_seconds(loops, "Inference", ["a", "c"])
    with pytest.raises(BenchError, match="no 'Generating Predictions' loop"):
        bench_peers.inference_seconds(loops, "Generating Predictions", ["a"])


def test_the_peers_tree_holds_the_valid_graphs_in_its_test_partition_too(tiny_competition, tmp_path):
    public = tiny_competition / "public"
    root = tmp_path / "peers-tree"
    bench_peers.link_peers_tree(public, root)
    assert bench_peers.peers_data_root(root, "tile") == root / "npz" / "tile" / "xla"
    assert bench_peers.peers_data_root(root, "layout") == root / "npz" / "layout"
    for collection in COLLECTIONS:
        valid = sorted(p.name for p in split_dir(public, collection, "valid").glob("*.npz"))
        test = sorted(p.name for p in split_dir(public, collection, "test").glob("*.npz"))
        linked = sorted(p.name for p in (root / "npz" / collection.subpath / "test").iterdir())
        assert linked == sorted(test + [VALID_PREFIX + name for name in valid])
        sizes = bench_peers.graph_sizes(root, collection, "test")
        assert sizes[VALID_PREFIX + Path(valid[0]).stem] == read_config_count(
            split_dir(public, collection, "valid") / valid[0])
    bench_peers.link_peers_tree(public, root)  # again: the links are replaced, not doubled


def test_valid_score_is_the_kit_metric_on_the_valid_graphs(tiny_competition):
    public = tiny_competition / "public"
    paths = sorted(split_dir(public, LAYOUT, "valid").glob("*.npz"))
    from competition.data.graphs import load_graph

    best = {p.stem: np.argsort(load_graph(p, "layout").config_runtime, kind="stable") for p in paths}
    worst = {k: v[::-1] for k, v in best.items()}
    assert bench_peers.valid_score(LAYOUT, best, public) > 0.99
    assert bench_peers.valid_score(LAYOUT, worst, public) < -0.99


def _verdict_inputs(ci_high: float, gnn_train: float):
    compared = {"collections": {"tile:xla": {"diff": 0.01, "ci_low": -0.02, "ci_high": ci_high}}}
    return compared, {"tile:xla": {"train_s": 100.0}}, {"tile:xla": {"train_s": gnn_train}}


@pytest.mark.parametrize(("ci_high", "gnn_train", "holds"), [
    (0.04, 50.0, True),     # within the interval, half the time
    (-0.001, 10.0, False),  # worse beyond the interval
    (0.04, 51.0, False),    # as good, but more than half the time
])
def test_gnn_verdict_needs_the_score_and_half_the_training_time(ci_high, gnn_train, holds):
    verdict = bench_peers.gnn_verdicts(*_verdict_inputs(ci_high, gnn_train))["tile:xla"]
    assert verdict["holds"] is holds
    assert verdict["time_ratio"] == pytest.approx(gnn_train / 100.0)


def test_gnn_verdict_without_an_upstream_time_does_not_hold():
    compared, _, gnn = _verdict_inputs(0.04, 10.0)
    verdict = bench_peers.gnn_verdicts(compared, {"tile:xla": {"train_s": None}}, gnn)["tile:xla"]
    assert math.isnan(verdict["time_ratio"]) and not verdict["holds"]


def test_small_table_names_the_epochs_and_a_failed_peer():
    per = {c.name: {"train_s": 10.0, "predict_s": 1.0, "peak_mb": 500.0, "validation_score": 0.5, "epochs": 3,
                    "failed": None} for c in COLLECTIONS}
    per["layout:nlp:random"] = {"train_s": None, "predict_s": None, "peak_mb": 900.0, "epochs": 3,
                                "failed": "exit 1: TypeError: boom"}
    result = {"seed": 0, "scale": "small", "verdicts": {}, "methods": {"upstream": {"collections": per}}}
    table = bench_peers.small_table(result)
    assert "| tile:xla (3 epochs) | - (no submission: another collection failed) |" in table
    assert "layout:nlp:random (3 epochs) | failed: exit 1: TypeError: boom" in table
    assert "**final**" not in table  # no submission, no final score


def test_peer_epochs_option_is_checked():
    assert bench_peers._epochs("tile=10,layout=3") == {"tile": 10, "layout": 3}
    for bad in ("tile=0", "graph=3", "layout"):
        with pytest.raises(Exception, match="expected tile=N or layout=N"):
            bench_peers._epochs(bad)


def test_peers_missing_says_where_it_looked(tmp_path):
    assert "not at" in bench_peers.peers_missing(tmp_path / "absent")
    (tmp_path / "tiles_train.py").write_text("")
    assert bench_peers.peers_missing(tmp_path) == f"{tmp_path} lacks layout_train.py"


@pytest.mark.slow
def test_the_kit_side_runs_scores_and_tabulates_on_tiny(tmp_path, capsys):
    argv = ["--scale", "tiny", "--seeds", "0", "--methods", "random,heuristic", "--no-peers", "--no-real",
            "--out", str(tmp_path)]
    assert bench_peers.main(argv) == 0
    printed = capsys.readouterr().out
    assert "upstream baselines skipped: --no-peers" in printed
    results = json.loads((tmp_path / "results.json").read_text())
    [small] = results["small"]
    for method in ("random", "heuristic"):
        test = small["methods"][method]["test"]
        assert test["ci_low"] <= test["score"] <= test["ci_high"]
        assert set(small["methods"][method]["collections"]) == {c.name for c in COLLECTIONS}
        assert f"| {method} | **final** |" in printed
    # A second run reuses every measured run: nothing is run again.
    stamp = tmp_path / "runs" / "tiny-s0" / "random" / "measured.json"
    before = stamp.stat().st_mtime_ns
    assert bench_peers.main(argv) == 0
    assert stamp.stat().st_mtime_ns == before


def test_an_installed_peers_env_is_reused_and_a_changed_requirements_file_reinstalls(tmp_path, monkeypatch):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    (venv / ".installed-peers").write_text(bench_peers.requirements_digest() + "\n")
    ran: list[list[str]] = []
    monkeypatch.setattr(bench_peers.subprocess, "run", lambda cmd, **kw: ran.append(cmd))
    assert bench_peers.ensure_peers_env(venv, say=lambda *a, **k: None) == venv / "bin" / "python"
    assert ran == []
    (venv / ".installed-peers").write_text("an older digest\n")

    class Failed:
        returncode = 1
        stderr = "WARNING: a location is ignored\nERROR: No matching distribution for x==1\nmore"

    monkeypatch.setattr(bench_peers.subprocess, "run", lambda cmd, **kw: ran.append(cmd) or Failed())
    with pytest.raises(BenchError, match="failed: ERROR: No matching distribution for x==1"):
        bench_peers.ensure_peers_env(venv, say=lambda *a, **k: None)
    assert ran and ran[0][1:4] == ["-m", "pip", "install"]


def test_run_measured_reads_the_child_own_peak_memory_and_its_exit_status(tmp_path):
    import sys

    ballast = b"x" * (300 * 2**20)  # resident in the parent: it must not be counted as the child's
    code = "import time; b = b'x' * (120 * 2**20); time.sleep(0.6)"
    measured = bench_peers.run_measured([sys.executable, "-c", code], cwd=tmp_path,
                                        env=bench_peers.thread_env(1), log=tmp_path / "log.txt")
    assert measured.returncode == 0 and measured.peak_source == "VmHWM"
    assert 120 <= measured.peak_mb < 300, measured
    failed = bench_peers.run_measured([sys.executable, "-c", "raise SystemExit(3)"], cwd=tmp_path,
                                      env=bench_peers.thread_env(1), log=tmp_path / "log2.txt")
    assert failed.returncode == 3
    del ballast


@pytest.mark.slow
def test_the_kit_side_of_the_within_graph_protocol_ranks_the_shipped_real_protos(tmp_path, capsys):
    argv = ["--no-peers", "--no-small", "--real", str(tmp_path / "no-kaggle-tree"), "--methods",
            "random,heuristic", "--real-draws", "1", "--out", str(tmp_path)]
    assert bench_peers.main(argv) == 0
    printed = capsys.readouterr().out
    entries = json.loads((tmp_path / "results.json").read_text())["real"]
    assert {(e["graph"], e["method"]) for e in entries} == {
        (g, m) for g in ("layout:xla:default:proto/module_tuning_data_layout", "tile:xla:proto (8 kernels)")
        for m in ("random", "heuristic")}
    for entry in entries:
        assert entry["runs"] == 1 and entry["low"] <= entry["estimate"] <= entry["high"], entry
    assert "| `tile:xla:proto (8 kernels)` | heuristic |" in printed
    assert not (tmp_path / "real").exists() or not any((tmp_path / "real").rglob("*.npz"))  # trees removed
