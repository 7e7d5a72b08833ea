"""benchmarks/bench_calibration.py: the exact targets it measures against, and the promise it checks.

A hand-made competition of 8 graphs per layout collection (Kaggle's xla test size) and 20 tile graphs,
600 random submissions (fixed seeds): the default t interval must cover the exact expected layout score
at least 92 % of the time and ``compare`` may call two random submissions different at most 7 % of the
time, per layout collection and on the final score. The 1.0 percentile bootstrap, measured on the
same draws, fails the coverage bound: the check can fail.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import bench_calibration as bench
from competition.collections import COLLECTIONS
from competition.metrics import tile_slowdown_score
from competition.scoring import load_solution


def hand_made_solution(layout_graphs: int = 8, tile_graphs: int = 20, configs: int = 30, seed: int = 0):
    rng = np.random.default_rng(seed)
    lines = ["ID,Runtimes,Normalizers,Usage"]
    for collection in COLLECTIONS:
        tile = collection.task.name == "tile"
        for g in range(tile_graphs if tile else layout_graphs):
            n = int(rng.integers(3, configs)) if tile else configs
            runtime = rng.integers(100, 10_000, size=n)
            normalizers = ";".join(map(str, np.full(n, 5000))) if tile else ""
            lines.append(f"{collection.name}:g{g:03d},{';'.join(map(str, runtime))},{normalizers},"
                         f"{'Public' if g % 2 else 'Private'}")
    return load_solution("\n".join(lines).encode())


@pytest.fixture(scope="module")
def random_scores():
    solution = hand_made_solution()
    rng = np.random.default_rng(1)
    matrix = bench.score_matrix([bench.random_rows(solution, rng) for _ in range(600)], solution)
    targets = {name: float(np.mean(v)) for name, v in bench.expected_random_scores(solution).items()}
    return solution, matrix, targets


def test_exact_tile_expectation_is_the_mean_over_every_five_config_pick():
    """The order-statistics formula against the average over every 5-subset of a small graph."""
    from itertools import combinations

    solution = hand_made_solution(layout_graphs=1, tile_graphs=3, configs=9, seed=5)
    expected = bench.expected_random_scores(solution)["tile:xla"]
    labels = solution.labels["tile:xla"]
    for g in range(len(labels.ids)):
        part = slice(labels.offsets[g], labels.offsets[g + 1])
        n = labels.offsets[g + 1] - labels.offsets[g]
        picks = list(combinations(range(n), min(5, n)))
        brute = np.mean([tile_slowdown_score(np.array(p), labels.runtimes[part], labels.normalizers[part])
                         for p in picks])
        assert expected[g] == pytest.approx(brute, abs=1e-12)
    assert not bench.expected_random_scores(solution)["layout:xla:default"].any()


def test_perturbation_keeps_every_row_a_valid_ranking():
    solution = hand_made_solution(seed=2)
    rng = np.random.default_rng(0)
    base = bench.random_rows(solution, rng)
    moved = bench.perturbed_rows(base, solution, rng, share=0.5)
    counts = {i: int(n) for labels in solution.labels.values()
              for i, n in zip(labels.ids, labels.config_counts, strict=True)}
    changed = 0
    for row_id, listed in moved.items():
        assert len(set(listed.tolist())) == listed.size == base[row_id].size
        assert listed.min() >= 0 and listed.max() < counts[row_id]
        changed += int((listed != base[row_id]).any())
    assert changed > len(moved) / 2


def test_t_intervals_cover_and_compare_holds_its_false_positive_rate_at_8_graphs(random_scores):
    _, matrix, targets = random_scores
    cover = bench.coverage(matrix, targets, ("t", "percentile"), draws=200)
    assert cover["t"]["layout pooled"]["n"] == 2400
    assert cover["t"]["layout pooled"]["rate"] >= 0.92
    assert cover["t"]["final"]["rate"] >= 0.92
    # the 1.0 method on the same draws: about 89 % at 8 graphs, so the bound above can fail
    assert cover["percentile"]["layout pooled"]["rate"] < 0.92
    first, second = bench._halves(matrix, 300)
    null = bench.pair_rates(first, second, ("t",), draws=300)["t"]["called"]
    assert null["layout pooled"]["n"] == 1200
    assert null["layout pooled"]["rate"] <= 0.07 and null["final"]["rate"] <= 0.07


def test_the_quoted_coverage_table_has_every_method_and_size_the_benchmark_measures():
    from competition.stats.calibration import MEASURED_COVERAGE
    from competition.stats.mean_intervals import INTERVAL_METHODS

    assert set(MEASURED_COVERAGE) == set(INTERVAL_METHODS)
    for tasks in MEASURED_COVERAGE.values():
        assert set(tasks) == {"layout", "tile"}
        assert all(tuple(sizes) == bench.THIN_SIZES for sizes in tasks.values())
        assert all(0.5 < rate <= 1 for sizes in tasks.values() for rate in sizes.values())
