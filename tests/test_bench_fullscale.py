"""The full-size rehearsal benchmark's plumbing, on the tiny competition (the real run is not a test)."""

from __future__ import annotations

import json
import shutil

import pytest

from benchmarks import bench_fullscale


def test_bench_fullscale_generates_solves_scores_and_resumes(tmp_path, capsys):
    root = tmp_path / "rehearsal"
    argv = ["--root", str(root), "--scale", "tiny", "--workers", "1", "--methods", "random,heuristic",
            "--collections", "tile:xla,layout:xla:random"]
    assert bench_fullscale.main(argv) == 0
    results = json.loads((root / "results.json").read_text())
    generation = results["generation"]
    assert generation["npz_files"] == 41 and generation["public_bytes"] > 0 and generation["peak_tree_mb"] > 0
    assert set(results["runs"]) == {f"{m} {c}" for m in ("random", "heuristic")
                                    for c in ("tile:xla", "layout:xla:random")}
    for run in results["runs"].values():
        assert run["status"] == "ok" and run["test"]["valid"], run
        assert run["wall_s"] > 0 and run["peak_tree_mb"] > 0 and run["submission_bytes"] > 0
        assert -1 <= run["test"]["score"] <= 1
    out = capsys.readouterr().out
    assert "generating the tiny competition" in out and "heuristic  layout:xla:random" in out
    # A second call reuses the data and skips what results.json already holds.
    assert bench_fullscale.main(argv) == 0
    assert "generating" not in capsys.readouterr().out


def test_bench_fullscale_refuses_data_of_another_generator_version(tmp_path, capsys):
    root = tmp_path / "rehearsal"
    argv = ["--root", str(root), "--scale", "tiny", "--workers", "1", "--methods", "random",
            "--collections", "tile:xla", "--generate-only"]
    assert bench_fullscale.main(argv) == 0
    results_path = root / "results.json"
    results = json.loads(results_path.read_text())
    assert results["generation"]["generator_version"] == bench_fullscale.GENERATOR_VERSION
    for stale in (bench_fullscale.GENERATOR_VERSION - 1, None):  # an older version; a kit that recorded none
        results["generation"]["generator_version"] = stale
        results["runs"] = {"random tile:xla": {"status": "ok"}}
        results_path.write_text(json.dumps(results))
        with pytest.raises(SystemExit) as raised:
            bench_fullscale.main(argv)
        assert raised.value.code == 2
        err = capsys.readouterr().err
        assert (f"generator version {stale}" if stale else "an older kit") in err
        assert "delete" in err and "--data" in err
    # Measuring it as it is stays possible (and what is measured is said to be that data's).
    assert bench_fullscale.main([*argv, "--data", str(root / "data")]) == 0
    # Deleting the data generates it again and forgets the runs measured on the old one.
    shutil.rmtree(root / "data")
    assert bench_fullscale.main(argv) == 0
    results = json.loads(results_path.read_text())
    assert results["generation"]["generator_version"] == bench_fullscale.GENERATOR_VERSION
    assert results["runs"] == {}
