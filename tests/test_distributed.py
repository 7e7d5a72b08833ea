"""Multi-process data-parallel training (solutions.compute.distributed): torchrun, 2 CPU processes (gloo)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from competition.data.graphs import expected_from_data_dir
from competition.stats import intervals
from competition.submission import validate_submission
from solutions.methods.base import FitOptions
from solutions.solve.runner import SolveError, solve

ROOT = Path(__file__).resolve().parents[1]
QUICK = ["--param", "layout_epochs=2", "--param", "tile_epochs=1", "--param", "hidden=16", "--param",
         "layers=2"]


def run_solve(command: list[str], out: Path, tiny: Path) -> tuple[dict, str]:
    """Run ``command + solve arguments`` from the repository root; the JSON report and the output."""
    report = out.with_suffix(".json")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([*command, "--data", str(tiny / "public"), "--out", str(out), "--quiet",
                           "--seed", "0", "--json", str(report), *QUICK], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(report.read_text(encoding="utf-8")), done.stdout + done.stderr


@pytest.mark.slow
def test_torchrun_two_processes_train_shards_and_rank_0_writes_a_valid_submission(tiny_competition, tmp_path):
    two, output = run_solve([sys.executable, "-m", "torch.distributed.run", "--standalone",
                             "--nproc_per_node=2", "-m", "solutions"], tmp_path / "two.csv", tiny_competition)
    one, _ = run_solve([sys.executable, "-m", "solutions"], tmp_path / "one.csv", tiny_competition)

    # both ranks trained every collection, each on its own shard (3 train graphs: 2 + 1 per layout collection)
    for collection in ("tile:xla", "layout:xla:random", "layout:nlp:default"):
        assert f"[rank 0/2] {collection}:" in output and f"[rank 1/2] {collection}:" in output
    assert "[rank 1/2] layout:xla:random: 1 of 3 train graphs" in output
    assert "rank 1 done; rank 0 wrote" in output
    assert two["world_size"] == 2 and one["world_size"] == 1
    assert all(c["details"]["world_size"] == 2 for c in two["collections"])
    assert two["complete"] and two["rows"] == one["rows"]
    expected = expected_from_data_dir(tiny_competition / "public")
    assert validate_submission(tmp_path / "two.csv", expected).ok
    assert sorted(p.name for p in (tmp_path / "two.models").iterdir()) == sorted(
        p.name for p in (tmp_path / "one.models").iterdir())

    # Within noise: the paired 95 % bootstrap interval of the difference (two - one) over the valid graphs
    # (the same graphs in the same order in both reports; competition.stats.intervals, what solve reports)
    # contains 0: which graphs happen to be validated on moves the score more than the runs differ. A
    # broken all-reduce (ranks drifting apart, gradients summed instead of averaged, a rank training on
    # nothing) shows as a diverged or far-off score on most graphs.
    differences = {}
    for a, b in zip(one["collections"], two["collections"], strict=True):
        assert (a["collection"] == b["collection"]
                and len(a["valid_graph_scores"]) == len(b["valid_graph_scores"]))
        differences[a["collection"]] = np.subtract(b["valid_graph_scores"], a["valid_graph_scores"])
    overall, _ = intervals(differences)
    assert overall.low <= 0.0 <= overall.high, (overall, differences)


def _train_rank(rank: int, world_size: int, init_file: str, tiny: str, out_dir: str) -> None:
    """One process of test_ranks_keep_identical_weights: train a layout model on this rank's shard."""
    import torch.distributed as dist

    from competition.collections import COLLECTION_BY_NAME
    from solutions.methods.base import SplitSource
    from solutions.methods.gnn import GNNRanker

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size)
    try:
        collection = COLLECTION_BY_NAME["layout:nlp:random"]
        public = Path(tiny) / "public"
        ranker = GNNRanker(layout_epochs=2, hidden=8, layers=2, layout_valid_configs=16, training="gst",
                           fusion="early", segment_size=64, pruning="none")
        ranker.fit(collection, SplitSource(public, collection, "train"),
                   SplitSource(public, collection, "valid"), FitOptions(progress=False))
        digest = hashlib.sha256()
        for name, tensor in sorted(ranker.model.state_dict().items()):
            digest.update(name.encode() + tensor.numpy().tobytes())
        summary = ranker.summary()
        Path(out_dir, f"rank{rank}.json").write_text(json.dumps({
            "weights": digest.hexdigest(), "train_graphs": summary["train_graphs_this_rank"],
            "history": ranker.result.history}))
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_ranks_keep_identical_weights_and_select_the_same_epoch(tiny_competition, tmp_path):
    """DDP averages the gradients, so two ranks training different graphs end with the same weights."""
    import torch.multiprocessing as mp

    mp.spawn(_train_rank, args=(2, str(tmp_path / "init"), str(tiny_competition), str(tmp_path)), nprocs=2)
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert ranks[0]["weights"] == ranks[1]["weights"]
    # the all-reduced validation scores and losses (not the wall times)
    assert [{**h, "seconds": 0} for h in ranks[0]["history"]] == [{**h, "seconds": 0}
                                                                  for h in ranks[1]["history"]]
    assert [r["train_graphs"] for r in ranks] == [2, 1]


def test_ranks_split_the_files_round_robin():
    from solutions.compute.distributed import World

    assert World(0, 2).shard(5) == [0, 2, 4] and World(1, 2).shard(5) == [1, 3]
    assert World(2, 3).shard(2) == [] and World().shard(3) == [0, 1, 2]


@pytest.mark.parametrize(("method", "predict_only", "message"), [
    ("gbdt", False, "train the gnn only"),
    ("gnn", True, "--predict-only trains nothing"),
])
def test_torchrun_refuses_what_it_cannot_run(tiny_competition, tmp_path, monkeypatch, method,
                                             predict_only, message):
    monkeypatch.setenv("WORLD_SIZE", "2")
    if predict_only:
        (tmp_path / "sub.models").mkdir()
        (tmp_path / "sub.models" / "solve.json").write_text(json.dumps({"method": "gnn"}))
    with pytest.raises(SolveError, match=message):
        solve(tiny_competition / "public", method, tmp_path / "sub.csv", options=FitOptions(progress=False),
              predict_only=predict_only)


def test_a_bad_world_size_is_a_usage_error(tiny_competition, tmp_path, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(SolveError, match="WORLD_SIZE='two'"):
        solve(tiny_competition / "public", "gnn", tmp_path / "sub.csv", options=FitOptions(progress=False))
