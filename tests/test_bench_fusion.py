"""benchmarks/bench_fusion.py's measuring functions on two tiny graphs: every variant steps, predicts and
trains."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from benchmarks import bench_fusion  # noqa: E402
from benchmarks.realscale import xla_layout_graph  # noqa: E402
from solutions.methods.gnn.data import layout_example  # noqa: E402
from solutions.pruning import OneHop  # noqa: E402


@pytest.fixture(scope="module")
def examples():
    graphs = [xla_layout_graph(num_nodes=120, num_edges=180, num_configurable=8, num_configs=6,
                               num_computations=4, seed=seed) for seed in (0, 1)]
    return [layout_example(f"g{i}", g, transform=OneHop(), compress=True) for i, g in enumerate(graphs)]


def test_the_measures_run_on_tiny_graphs(examples):
    torch.set_num_threads(1)
    steps = [bench_fusion.step_times(examples, k, repeats=1) for k in (4, 1000)]
    assert steps[1]["sampled"] == 6.0  # a graph gives at most its distinct configs
    assert all(set(r["seconds"]) == {v.label for v in bench_fusion.VARIANTS} for r in steps)
    assert all(math.isfinite(s) and s > 0 for r in steps for s in r["seconds"].values())
    throughput = bench_fusion.prediction_throughput(
        examples, variants=[(v, 4) for v in bench_fusion.VARIANTS], repeats=1)
    assert len(throughput) == 4 and min(throughput.values()) > 0
    epochs = bench_fusion.epoch_times(examples, repeats=1)
    assert set(epochs) == {s[0] for s in bench_fusion.EPOCH_SETTINGS}
    text = "\n".join([bench_fusion.step_table(steps, "cpu"),
                      bench_fusion.predict_table(throughput, "cpu", 12),
                      bench_fusion.epoch_table(epochs, "cpu", 2)])
    assert "1.00x" in text and "intermediate + attention" in text
