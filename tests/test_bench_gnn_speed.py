"""benchmarks/bench_gnn_speed.py on the tiny competition: both steps run, the phases add up, and the 1.0
step and today's hold the same bytes after the same steps (the speed-up is a pure rewrite)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from benchmarks import bench_gnn_speed  # noqa: E402
from competition.collections import get_collection  # noqa: E402
from solutions.methods.gnn.settings import SETTINGS  # noqa: E402

SMALL = {"hidden": 16, "layers": 2}


@pytest.mark.parametrize("name, params", [
    ("layout:nlp:random", SMALL),
    ("layout:xla:random", SMALL),  # its defaults average the weights
    ("tile:xla", SMALL),
    ("layout:nlp:default", {**SMALL, "dropout": 0.1}),  # dropout draws: the same draws
])
def test_before_and_after_steps_hold_the_same_bytes(tiny_competition, name, params):
    torch.set_num_threads(1)
    collection = get_collection(name)
    config = SETTINGS.resolve(collection, params)
    examples = bench_gnn_speed.load_examples(tiny_competition / "public", name, config)
    result = bench_gnn_speed.compare_steps(examples, config, collection.task, steps=2, rounds=2, warmup=1)
    assert result["identical"], result["max_apart"]
    assert result["steps_compared"] == 5 and result["flops"] > 0
    for variant in bench_gnn_speed.VARIANTS:
        assert len(result["times"][variant]) == 2
        for times in result["times"][variant]:
            per = times.per_step_ms("cpu")
            assert times.steps == 2 and all(per[p] >= 0 for p in bench_gnn_speed.PHASES)
            assert per["step"] == pytest.approx(sum(per[p] for p in bench_gnn_speed.PHASES))
    table = bench_gnn_speed.step_table(name, result, peak=50.0)
    assert "the same bytes" in table and table.count("| before |") == 2


def test_the_tables_say_what_differs():
    rows = [("tile:xla", {"wall": 10.0, "cpu": 8.0, "sha": "a"}, {"wall": 5.0, "cpu": 4.0, "sha": "a"}),
            ("layout:nlp:random", {"wall": 9.0, "cpu": 6.0, "sha": "a"},
             {"wall": 6.0, "cpu": 3.0, "sha": "b"})]
    text = bench_gnn_speed.whole_table(rows)
    assert "| tile:xla | 10.0 | 5.0 | 8.0 | 4.0 | 2.00x | yes |" in text
    assert text.rstrip().endswith("| 2.00x | no |")


def test_matmul_rates_are_positive():
    rates = bench_gnn_speed.matmul_rates([(64, 32, 32)], repeats=1)
    assert math.isfinite(rates[(64, 32, 32)]) and rates[(64, 32, 32)] > 0


def test_several_graphs_a_step_count_graphs_not_steps(tiny_competition):
    """Section (5): the variant of 3 graphs a step trains about as many graphs a round as one graph a step,
    and the table divides by graphs."""
    torch.set_num_threads(1)
    name = "layout:nlp:random"
    collection = get_collection(name)
    config = SETTINGS.resolve(collection, SMALL)
    examples = bench_gnn_speed.load_examples(tiny_competition / "public", name, config)
    results = bench_gnn_speed.compare_graphs_per_step(examples, config, collection.task, graphs=3, steps=6,
                                                      rounds=2, warmup=1)
    assert list(results) == ["1.0", "1 graph", "3 graphs"]
    for variant, rounds in results.items():
        for times in rounds:
            per_step = 3 if variant == "3 graphs" else 1
            assert times.steps == 6 // per_step and times.graphs == 6
            assert times.per_graph_ms("cpu") == pytest.approx(times.per_step_ms("cpu")["step"] / per_step)
    table = bench_gnn_speed.graphs_table(name, results)
    assert "| 3 graphs |" in table and "| 3.0 |" in table
