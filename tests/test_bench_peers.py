"""``make bench-peers``'s plumbing (``benchmarks/bench_peers.py``) without TensorFlow: an upstream prediction
CSV to kit rows, the timing of its inference loop, the peers' data tree, the recipes, the refusal of data
the upstream cannot train on, the reading of several runs (spread, paired interval, verdict), the tiles
per kernel, the tables, and a run of the kit's side on the tiny competition. The upstream baselines
themselves (TensorFlow + TF-GNN in ``.venv-peers``) need more than 30 s even for one epoch (TensorFlow's
start and tracing alone take tens of seconds on 2 cores): they run in the benchmark, never here."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def _cell(runs: list[float]) -> dict:
    low, high = min(runs), max(runs)
    return {"run_low": low, "run_high": high}


@pytest.mark.parametrize(("ci", "gnn_runs", "upstream_runs", "expected"), [
    ((0.05, 0.20), [0.70, 0.72, 0.71], [0.50, 0.55, 0.60], "higher"),
    # the graphs say higher, but one upstream run reaches a gnn run: no more than level
    ((0.05, 0.20), [0.70, 0.72, 0.71], [0.50, 0.55, 0.71], "level"),
    ((-0.05, 0.10), [0.60, 0.62, 0.61], [0.55, 0.65, 0.60], "level"),
    ((-0.20, -0.01), [0.60, 0.62, 0.61], [0.55, 0.65, 0.60], "lower"),  # the paired interval below 0
    ((-0.05, 0.10), [0.40, 0.42, 0.41], [0.55, 0.65, 0.60], "lower"),  # every gnn run below every upstream
])
def test_verdict_reads_the_paired_interval_and_the_run_spread(ci, gnn_runs, upstream_runs, expected):
    diff = {"ci_low": ci[0], "ci_high": ci[1]}
    assert bench_peers.verdict(diff, _cell(gnn_runs), _cell(upstream_runs)) == expected


def test_with_one_run_the_verdict_says_the_spread_is_not_measured():
    diff = {"ci_low": 0.05, "ci_high": 0.2}
    one = {"n": 1, "run_low": 0.4, "run_high": 0.4}
    assert bench_peers.verdict(diff, {"n": 3, "run_low": 0.6, "run_high": 0.7}, one) == (
        "higher by the paired interval (one run: spread not measured)")


def test_cell_summary_shows_each_run_its_spread_and_the_graph_interval_of_their_mean():
    runs = [np.array([0.2, 0.4, 0.6, 0.8]), np.array([0.4, 0.6, 0.8, 1.0])]
    cell = bench_peers.cell_summary(runs, "tile:xla")
    assert cell["runs"] == [0.5, 0.7]
    assert cell["mean"] == pytest.approx(0.6) and (cell["run_low"], cell["run_high"]) == (0.5, 0.7)
    assert cell["run_sd"] == pytest.approx(np.std([0.5, 0.7], ddof=1))
    assert cell["low"] <= cell["mean"] <= cell["high"]


def test_paired_pairs_runs_by_seed_and_resamples_the_run_averaged_graphs():
    upstream = [np.array([0.1, 0.2, 0.3]), np.array([0.3, 0.2, 0.1])]
    gnn = [np.array([0.5, 0.9, 0.4]), np.array([0.6, 0.3, 0.9])]
    diff = bench_peers.paired(gnn, upstream, "tile:xla")
    assert diff["pair_diffs"] == pytest.approx([1.8 / 3 - 0.2, 0.6 - 0.2])
    assert diff["diff"] == pytest.approx(np.mean([1.8 / 3, 0.6]) - 0.2)
    assert diff["ci_low"] <= diff["diff"] <= diff["ci_high"]


@given(st.lists(st.floats(1.0, 100.0), min_size=1, max_size=9), st.integers(1, 5))
@settings(max_examples=60, deadline=None)
def test_random_top_gives_every_score_of_a_random_draw_of_k_configs_with_its_chance(runtimes, k):
    from competition.metrics.tile import tile_slowdown_score

    y = np.asarray(runtimes)
    norm = np.ones_like(y)
    draws = [tile_slowdown_score(list(d), y, norm, k=k)
             for d in itertools.combinations(range(y.size), min(k, y.size))]
    top = bench_peers.random_top(y, norm, k=k)
    assert top.expectation == pytest.approx(np.mean(draws), abs=1e-9)
    for score in (draws[0], 0.9, 1.0):
        brute = np.mean([(d < score - 1e-9) + 0.5 * (abs(d - score) <= 1e-9) for d in draws])
        assert top.chance_below(score) == pytest.approx(brute, abs=1e-9)


def _random_tops(expected: list[float]) -> list:
    """Kernels whose random top 5 scores ``e + 0.1`` or ``e - 0.1``, each half the time."""
    return [bench_peers.RandomTop(np.array([e + 0.1, e - 0.1]), np.array([0.5, 0.5])) for e in expected]


def test_tile_reading_gives_median_mean_both_readings_against_random_and_size_bands():
    configs = np.array([3, 20, 60, 200])
    randoms = _random_tops([1.0, 0.8, 0.7, 0.6])
    good = np.array([1.0, 0.95, 0.75, -2.0])  # above random on the middle kernels, sunk by the big one
    reading = bench_peers.tile_reading({"upstream": [good, good]}, configs, randoms)
    up = reading["upstream"]
    assert up["median"] == pytest.approx(0.85) and up["mean"] == pytest.approx(0.175) and up["min"] == -2.0
    assert up["above_expected"] == pytest.approx(2 / 3)  # the 3-config kernel cannot miss: left out
    assert up["chance_above_random"] == pytest.approx((1.0 + 0.5 + 0.0) / 3)
    assert {k: v["kernels"] for k, v in up["bands"].items()} == {"< 40": 2, "40-150": 1, "> 150": 1}
    assert up["bands"]["> 150"]["mean"] == -2.0 and up["bands"]["< 40"]["mean"] == pytest.approx(0.975)
    expected = reading["random (expected)"]
    assert expected["above_expected"] is None and expected["chance_above_random"] == 0.5
    table = bench_peers.tile_table(reading)
    assert "| upstream (TF-GNN) | 0.850 | 0.175 | -2.00 | 67% | 0.50 |" in table
    assert "> 150 configs (1)" in table


def test_the_documented_recipe_is_the_upstream_readme_and_changed_epochs_are_named():
    recipe = bench_peers.RECIPES["documented"]
    assert recipe.task_flags("layout") == ["--max_configs=1000", "--epochs=10"]
    assert recipe.task_flags("tile") == ["--model=EarlyJoinSAGE", "--epochs=100"]
    assert recipe.task_flags("layout", 3) == ["--max_configs=1000", "--epochs=3"]
    assert bench_peers.RECIPES["defaults"].task_flags("layout") == ["--epochs=50"]
    text = bench_peers.describe_recipe(recipe, {"layout": 3})
    assert text.startswith("documented (tile: `--model=EarlyJoinSAGE --epochs=100`; ")
    assert "layout: `--max_configs=1000 --epochs=3`, epochs lowered from 10" in text
    assert "lowered" not in bench_peers.describe_recipe(recipe, {})


def test_epoch_curve_keeps_each_epoch_time_and_validation_opa():
    timings = {"start": 10.0, "epochs": [
        {"t": 40.0, "logs": {"loss": 2.0, "opa_metric": 0.6, "val_loss": 2.1, "val_opa_metric": 0.55}},
        {"t": 55.5, "logs": {"loss": 1.5, "opa_metric": 0.7, "val_loss": 2.0, "val_opa_metric": 0.61}}]}
    curve = bench_peers.epoch_curve(timings)
    assert [(p["epoch"], p["elapsed_s"], p["val_opa"]) for p in curve] == [(1, 30.0, 0.55), (2, 45.5, 0.61)]
    assert bench_peers.epoch_curve({"loops": []}) == []


def _fake_tree(root: Path, counts: dict[tuple[str, str], list[int]], monkeypatch) -> Path:
    """A tree of empty ``.npz`` files whose config counts are ``counts`` ((collection, split) -> counts)."""
    sizes: dict[str, int] = {}
    for collection in COLLECTIONS:
        for split in ("train", "valid", "test"):
            folder = split_dir(root, collection, split)
            folder.mkdir(parents=True, exist_ok=True)
            for k, n in enumerate(counts.get((collection.name, split), [40, 40])):
                path = folder / f"g{k}.npz"
                path.write_bytes(b"")
                sizes[str(path)] = n
    monkeypatch.setattr("competition.data.graphs.read_config_count", lambda p: sizes[str(p)])
    return root


@pytest.mark.parametrize(("counts", "problem"), [
    ({("tile:xla", "train"): [12] * 10}, None),
    ({("tile:xla", "train"): [12] * 9 + [9] * 5},
     "9 training kernels with 10+ configs, fewer than one batch of 10 (tiles_train.py)"),
    ({("tile:xla", "train"): [12] * 10, ("layout:xla:default", "train"): [15, 3]},
     "no layout:xla:default train graph with 16+ configs (layout_train.py --configs 16)"),
    ({("tile:xla", "train"): [12] * 10, ("layout:nlp:random", "valid"): [8]},
     "no layout:nlp:random valid graph with 16+ configs (layout_train.py --configs 16)"),
])
def test_upstream_data_problem_says_what_the_upstream_programs_cannot_train_on(tmp_path, monkeypatch, counts,
                                                                               problem):
    assert bench_peers.upstream_data_problem(_fake_tree(tmp_path, counts, monkeypatch)) == problem


def test_matched_epochs_make_the_upstream_sample_every_training_config_once(tmp_path, monkeypatch):
    tree = _fake_tree(tmp_path, {("layout:xla:default", "train"): [1000],
                                 ("layout:nlp:default", "train"): [1000, 24, 8],
                                 ("tile:xla", "train"): [95, 5]}, monkeypatch)
    assert bench_peers.matched_epochs(COLLECTION_BY_NAME["layout:xla:default"], tree) == 63  # 1000 / 16
    assert bench_peers.matched_epochs(COLLECTION_BY_NAME["layout:nlp:default"], tree) == 32  # 1024 / 32
    assert bench_peers.matched_epochs(TILE, tree) == 10  # the 5-config kernel is never sampled


def test_tiny_with_the_upstream_is_refused_in_one_line_before_any_run(tiny_competition, tmp_path,
                                                                       monkeypatch):
    problem = bench_peers.upstream_data_problem(tiny_competition / "public")
    assert problem and "fewer than one batch of 10 (tiles_train.py)" in problem
    monkeypatch.setattr(bench_peers, "peers_missing", lambda: None)
    monkeypatch.setattr(bench_peers, "ensure_peers_env", lambda **kw: tmp_path / "python")
    monkeypatch.setattr(bench_peers, "build_small", lambda seed, out, **kw: tiny_competition)

    def no_run(*args, **kwargs):
        raise AssertionError("nothing may run")

    monkeypatch.setattr(bench_peers, "run_peer", no_run)
    monkeypatch.setattr(bench_peers, "run_kit", no_run)
    said: list[str] = []
    code = bench_peers.main(["--scale", "tiny", "--no-real", "--out", str(tmp_path)],
                            say=lambda *a, **k: said.append(" ".join(map(str, a))))
    assert code == 1
    assert said == ["== small seed 0", f"error: --scale tiny cannot run the upstream baselines: {problem}; "
                    "use --scale small, or --no-peers for the kit's side alone"]


def _small_result() -> dict:
    def entry(mean, low, high, n=3, **more):
        return {"n": n, "failed": None, "runs": [low, mean, high], "mean": mean, "run_low": low,
                "run_high": high, "run_sd": 0.05, "low": mean - 0.1, "high": mean + 0.1, "valid": 0.5,
                "train_s": 100.0, "predict_s": 2.0, "peak_mb": 900.0, **more}

    cells = {c.name: {"upstream": entry(0.6, 0.55, 0.65), "gnn": entry(0.7, 0.68, 0.72)}
             for c in COLLECTIONS}
    cells["layout:nlp:random"]["upstream"] = {"n": 3, "failed": "exit 1: TypeError: boom",
                                              "train_s": float("nan"), "predict_s": float("nan"),
                                              "peak_mb": 900.0}
    curve = [{"epoch": 1, "elapsed_s": 60.0, "val_opa": 0.52},
             {"epoch": 2, "elapsed_s": 80.0, "val_opa": 0.63},
             {"epoch": 3, "elapsed_s": 99.0, "val_opa": 0.60}]
    return {"seed": 0, "scale": "small", "recipe_text": "documented (...)", "run_seeds": [0, 1, 2],
            "cells": cells, "verdicts": {"tile:xla": {"diff": 0.1, "ci_low": 0.02, "ci_high": 0.2,
                                                      "pair_diffs": [0.1, 0.12, 0.08], "time_ratio": 0.1,
                                                      "verdict": "higher"}},
            "runs": {"upstream": {"tile:xla": [{"seed": 0, "curve": curve}]}}}


def test_small_table_names_the_recipe_runs_spread_curves_and_a_failed_peer():
    table = bench_peers.small_table(_small_result())
    assert "upstream recipe documented (...); every method run 3 times (seeds 0,1,2)" in table
    assert "| tile:xla | upstream (TF-GNN) | 0.600 [0.500, 0.700] | 0.550-0.650 (sd 0.050) | 0.500 |" \
        in table
    assert "| layout:nlp:random | upstream (TF-GNN) | failed: exit 1: TypeError: boom |" in table
    assert "| tile:xla | +0.100 [+0.020, +0.200] | +0.100, +0.120, +0.080 | 0.10 | higher |" in table
    assert "| tile:xla | 0 | 3 | 0.630 (2) | 0.600 | 0.52 0.63 0.60 |" in table


def test_a_one_collection_submission_keeps_its_rows_and_names_a_missing_graph(tiny_competition, tmp_path):
    from competition.scoring import load_solution

    solution = load_solution(tiny_competition / "private" / "solution.csv")
    labels = solution.labels["tile:xla"]
    sizes = dict(zip(labels.ids, (int(n) for n in labels.config_counts), strict=True))
    rows = {i: ";".join(map(str, range(min(5, n)))) for i, n in sizes.items()}
    path = tmp_path / "tile.csv"
    path.write_text("ID,TopConfigs\n" + "".join(f"{i},{r}\n" for i, r in rows.items()))
    read = bench_peers.submission_rows_partial(path, solution, TILE)
    assert set(read) == set(labels.ids)
    assert all(read[i].tolist() == list(range(min(5, n))) for i, n in sizes.items())
    path.write_text("ID,TopConfigs\n" + "".join(f"{i},{r}\n" for i, r in list(rows.items())[1:]))
    with pytest.raises(BenchError, match=f"no row for 1 tile:xla graph.*{labels.ids[0]}"):
        bench_peers.submission_rows_partial(path, solution, TILE)


def test_a_long_validation_curve_is_shown_every_kth_epoch_with_the_last():
    assert bench_peers.curve_text([0.5, 0.6]) == "0.50 0.60"
    values = [k / 100 for k in range(30)]
    assert bench_peers.curve_text(values) == "every 3 epochs: " + " ".join(
        f"{k / 100:.2f}" for k in [*range(0, 30, 3), 29])


def test_budget_table_shows_the_gnn_at_the_upstream_time_and_the_upstream_at_the_gnn_time():
    budget = {"tile:xla": {"upstream_train_s": 120.0, "gnn_train_s": 8.0, "gnn_epochs": 300,
                           "gnn_budget": {"runs": [0.9, 0.95], "mean": 0.925, "run_low": 0.9,
                                          "run_high": 0.95, "run_sd": 0.035, "low": 0.88, "high": 0.96},
                           "gnn_budget_train_s": 118.0,
                           "upstream_at_gnn_time": [{"seed": 0, "epochs_done": 0, "first_epoch_s": 45.0,
                                                     "val_opa": None}]}}
    table = bench_peers.budget_table(budget)
    assert ("| tile:xla | 120 | 0.925 [0.880, 0.960] | 0.900-0.950 (sd 0.035) | 118 (of 8 at its defaults) | "
            "0 | 45 s |") in table


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
    argv = ["--scale", "tiny", "--seeds", "0", "--run-seeds", "0,1", "--methods", "random,heuristic",
            "--no-peers", "--no-real", "--out", str(tmp_path)]
    assert bench_peers.main(argv) == 0
    printed = capsys.readouterr().out
    assert "upstream baselines skipped: --no-peers" in printed
    results = json.loads((tmp_path / "results.json").read_text())
    [small] = results["small"]
    assert set(small["cells"]) == {c.name for c in COLLECTIONS} | {"final"}
    for method in ("random", "heuristic"):
        final = small["cells"]["final"][method]
        assert final["n"] == 2 and final["run_low"] <= final["mean"] <= final["run_high"]
        for collection in COLLECTIONS:
            cell = small["cells"][collection.name][method]
            assert cell["low"] <= cell["mean"] <= cell["high"] and len(cell["runs"]) == 2
        assert f"| **final** | {method} |" in printed
    assert set(small["tile_reading"]) == {"random", "heuristic", "random (expected)"}
    assert "`tile:xla` per test kernel" in printed
    # A second run reuses every measured run: nothing is run again.
    stamp = tmp_path / "runs" / "tiny-s0" / "random-r1" / "measured.json"
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
