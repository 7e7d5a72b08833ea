"""The full-size rehearsal benchmark's plumbing, on the tiny competition (the real run is not a test)."""

from __future__ import annotations

import json

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
