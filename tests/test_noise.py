"""Measurement noise from repeated configs, and tau over the pairs beyond it (``competition.stats.noise``)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from competition.stats import layout_taus
from competition.stats.noise import (
    MAX_GROUP,
    RepeatNoise,
    beyond_noise_interval,
    pairs_beyond_noise,
    repeat_noise,
    taus_beyond_noise,
)


def slow_beyond_noise_tau(prediction: np.ndarray, runtime: np.ndarray, noise: float) -> float:
    """The obvious reference: every pair, ranked as a submission row ranks them."""
    position = np.empty(len(prediction), dtype=np.int64)
    position[np.argsort(prediction, kind="stable")] = np.arange(len(prediction))
    score = kept = 0
    for i, j in itertools.combinations(range(len(runtime)), 2):
        fast, slow = (i, j) if runtime[i] <= runtime[j] else (j, i)
        if abs(runtime[i] - runtime[j]) / min(runtime[i], runtime[j]) > noise:  # the documented rule
            kept += 1
            score += 1 if position[slow] > position[fast] else -1
    return score / kept if kept else float("nan")


@settings(max_examples=80, deadline=None)
@given(st.integers(2, 60), st.sampled_from([0.0, 1e-4, 0.007, 0.29]), st.integers(0, 2**16))
def test_the_fast_count_is_the_slow_reference(n, noise, seed):
    rng = np.random.default_rng(seed)
    # Few distinct values on both sides: ties in runtimes and in predictions, and gaps around the noise.
    runtime = 100.0 * (1 + rng.integers(0, 6, n) * rng.choice([1e-5, 1e-3, 0.1]))
    prediction = rng.integers(0, 4, n).astype(float)
    [fast] = taus_beyond_noise([prediction], [runtime], noise)
    slow = slow_beyond_noise_tau(prediction, runtime, noise)
    assert (np.isnan(fast) and np.isnan(slow)) or fast == pytest.approx(slow)


def test_without_ties_and_noise_it_is_the_official_tau():
    rng = np.random.default_rng(3)
    runtimes = [rng.permutation(50) + 1.0 for _ in range(4)]
    predictions = [r + rng.normal(0, 15, r.shape) for r in runtimes]
    official = layout_taus(predictions, runtimes)
    np.testing.assert_allclose(taus_beyond_noise(predictions, runtimes, 0.0), official)


def test_pairs_inside_the_noise_do_not_count():
    # Two levels 10 % apart, each holding configs 0.001 % apart in the opposite order to the prediction.
    runtime = np.array([1.0, 1.00001, 1.00002, 1.1, 1.10001, 1.10002])
    prediction = np.array([3.0, 2.0, 1.0, 6.0, 5.0, 4.0])
    assert taus_beyond_noise([prediction], [runtime], 1e-4)[0] == 1.0  # every level pair right
    assert layout_taus([prediction], [runtime])[0] < 0.3  # the official tau counts the six wrong ones too
    assert np.isnan(taus_beyond_noise([prediction], [runtime], 0.5)[0])  # no pair apart by 50 %


def test_a_large_run_is_counted_on_a_sample(monkeypatch):
    from competition.stats import noise

    monkeypatch.setattr(noise, "EXACT_CONFIGS", 200)
    rng = np.random.default_rng(0)
    runtime = rng.random(2000) + 1
    prediction = runtime + rng.normal(0, 0.3, 2000)
    sampled = taus_beyond_noise([prediction], [runtime], 0.01)[0]
    monkeypatch.setattr(noise, "EXACT_CONFIGS", 5000)
    exact = taus_beyond_noise([prediction], [runtime], 0.01)[0]
    assert sampled == pytest.approx(exact, abs=0.08)
    assert sampled != exact


def test_repeat_noise_reads_the_configs_measured_twice():
    keys = np.array([[1, 2], [1, 2], [3, 4], [3, 4], [3, 4], [5, 6]])
    runtimes = np.array([100.0, 100.01, 200.0, 200.02, 200.04, 300.0])
    found = repeat_noise(keys, runtimes, min_pairs=4)
    assert isinstance(found, RepeatNoise)
    assert (found.pairs, found.configs) == (4, 2)
    gaps = [0.01 / 100.0, 0.02 / 200.0, 0.04 / 200.0, 0.02 / 200.02]
    assert found.level == pytest.approx(np.quantile(gaps, 0.95))
    assert found.percent() == f"{100 * found.level:.4f} %"
    assert repeat_noise(keys, runtimes) is None  # 4 pairs, fewer than the default 10
    assert repeat_noise(np.arange(6), runtimes, min_pairs=1) is None  # nothing measured twice


def test_a_config_measured_very_often_counts_a_sample_of_its_pairs():
    runtimes = 1 + np.random.default_rng(1).random(MAX_GROUP + 300) * 1e-4
    found = repeat_noise(np.zeros(runtimes.size), runtimes)
    assert found is not None and found.pairs == MAX_GROUP * (MAX_GROUP - 1) // 2 and found.configs == 1


@pytest.mark.parametrize("keys, runtimes, kwargs, message", [
    (np.zeros(3), np.ones(2), {}, "3 config keys for 2 runtimes"),
    (np.zeros(2), np.array([1.0, 0.0]), {}, "finite and positive"),
    (np.zeros(2), np.array([1.0, np.nan]), {}, "finite and positive"),
    (np.zeros(2), np.ones(2), {"quantile": 1.0}, "quantile must be between 0 and 1"),
])
def test_repeat_noise_refuses(keys, runtimes, kwargs, message):
    with pytest.raises(ValueError, match=message):
        repeat_noise(keys, runtimes, **kwargs)


@pytest.mark.parametrize("predictions, runtimes, noise, message", [
    ([np.zeros(2)], [np.ones(2)], -0.1, "noise must be"),
    ([np.zeros(2)], [np.ones(2)], float("inf"), "noise must be"),
    ([np.zeros(2)], [np.ones(2), np.ones(2)], 0.0, "1 prediction arrays for 2 runtime arrays"),
    ([np.zeros(3)], [np.ones(2)], 0.0, "run 0: 3 predictions for 2 runtimes"),
    ([np.zeros(3)], [np.array([1.0, -1.0, 2.0])], 0.0, "run 0: runtimes must be finite and positive"),
    ([np.zeros(2), np.zeros(2)], [np.ones(2), np.array([1.0, np.nan])], 0.0,
     "run 1: runtimes must be finite and positive"),
])
def test_taus_beyond_noise_refuses(predictions, runtimes, noise, message):
    with pytest.raises(ValueError, match=message):
        taus_beyond_noise(predictions, runtimes, noise)


def test_the_interval_holds_the_mean_over_runs_and_nan_when_nothing_counts():
    rng = np.random.default_rng(2)
    runtimes = [rng.random(300) + 1 for _ in range(3)]
    predictions = [r + rng.normal(0, 0.2, r.shape) for r in runtimes]
    ci = beyond_noise_interval(predictions, runtimes, 0.01, draws=200, subsample=100)
    assert ci.estimate == pytest.approx(taus_beyond_noise(predictions, runtimes, 0.01).mean())
    assert ci.low < ci.estimate < ci.high
    flat = beyond_noise_interval([np.zeros(5)], [np.ones(5)], 0.0, draws=50)
    assert np.isnan(flat.estimate) and np.isnan(flat.low)


def test_the_share_of_pairs_beyond_the_noise():
    runtime = np.array([1.0, 1.00001, 1.1, 1.10001])
    assert pairs_beyond_noise(runtime, 1e-4) == pytest.approx(4 / 6)  # the four pairs across the levels
    assert pairs_beyond_noise(runtime, 0.0) == 1.0
    assert pairs_beyond_noise(np.ones(3), 0.0) == 0.0  # tied runtimes never count
    assert np.isnan(pairs_beyond_noise(np.ones(1), 0.0))


def test_runs_without_a_pair_beyond_the_noise_are_left_out_of_the_mean_and_the_draws():
    rng = np.random.default_rng(4)
    varied = rng.random(200) + 1
    flat = np.ones(200) + rng.random(200) * 1e-7  # every pair inside a noise of 0.001 %
    predictions = [varied, varied, rng.random(200)]
    ci = beyond_noise_interval(predictions, [varied, varied, flat], 1e-5, draws=300)
    assert ci.estimate == pytest.approx(1.0)  # the two runs with pairs, both perfect
    assert ci.low == pytest.approx(1.0) and np.isfinite(ci.high)


def test_a_run_valued_on_a_sample_gets_the_spread_of_that_sample(monkeypatch):
    from competition.stats import noise, one_graph

    monkeypatch.setattr(noise, "EXACT_CONFIGS", 300)
    rng = np.random.default_rng(5)
    runtime = rng.random(3000) + 1
    prediction = runtime + rng.normal(0, 0.4, 3000)
    widened = beyond_noise_interval([prediction], [runtime], 0.01, draws=400, subsample=100)

    def statistic(p, r):
        return taus_beyond_noise(p, r, 0.01)

    narrow = one_graph.resampled_interval(statistic, [prediction], [runtime], draws=400, subsample=100)
    assert widened.estimate == narrow.estimate
    # Scaled to 300 configs instead of 3,000: sqrt(10) times the spread.
    assert (widened.high - widened.low) == pytest.approx(np.sqrt(10) * (narrow.high - narrow.low), rel=0.05)


def test_a_graphs_noise_is_read_from_its_configs_measured_more_than_once():
    from solutions.features.dedup import deduplicate_configs, repeat_noise_of

    rng = np.random.default_rng(6)
    configs = rng.integers(0, 3, size=(40, 2, 18)).astype(np.int8)
    configs[20:] = configs[:20]  # every config measured twice
    runtimes = 100 * (1 + rng.random(40) * 1e-4)
    found = repeat_noise_of(configs, runtimes)
    assert found == repeat_noise(deduplicate_configs(configs).inverse, runtimes)
    assert found is not None and found.configs == 20
    unmeasured = runtimes.copy()
    unmeasured[3] = 0  # a test graph's runtimes: nothing to read
    assert repeat_noise_of(configs, unmeasured) is None
    assert repeat_noise_of(configs[:1], runtimes[:1]) is None
