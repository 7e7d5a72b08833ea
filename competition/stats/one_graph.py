"""An interval for the score of one layout graph: the bootstrap over its configs.

``report`` and ``compare`` resample graphs, which says nothing when there is one graph (a real graph
ranked by a model trained elsewhere, ``make bench-real``, the last line of ``make demo``). Here the
ranked configs are resampled instead, with replacement, ``draws`` times, and each draw is scored with
the official metric (``competition.metrics.kendall_tau_scores``, all draws in one call). With several
runs (seeds, splits) a draw first picks one run at random, so the interval also holds the spread
between runs; the estimate is the mean tau over runs.

A graph of more than ``SUBSAMPLE`` configs is resampled ``SUBSAMPLE`` configs at a time (an m-out-of-n
bootstrap): each draw's deviation from its run's tau is scaled by sqrt(SUBSAMPLE / n) before it is
added back, since tau's spread falls as 1 / sqrt(n) (it is a ratio of U-statistics). Resampling every
config costs time and memory in proportion to configs x draws, too much for the release's largest
graphs; capped, any graph costs what a ``SUBSAMPLE``-config one does, and the interval agrees with the
full resampling's (what each costs: docs/statistics.md, "One graph: resampling its configs";
``tests/test_statistics.py`` checks the agreement).

What it means: how much the tau would move on another set of configs of this program measured the
same way. It says nothing about other programs: one graph is weak evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from competition.metrics.layout import kendall_tau_scores
from competition.stats.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_DRAWS,
    DEFAULT_SEED,
    Interval,
    check_bootstrap_args,
    percentile_interval,
)


def layout_taus(predictions: Sequence[np.ndarray], runtimes: Sequence[np.ndarray]) -> np.ndarray:
    """Kendall tau-b (the official layout metric) of each run's predicted runtimes against its runtimes.

    Predictions are ranked fastest first, ties by config position, as a submission row would be.
    """
    if len(predictions) != len(runtimes):
        raise ValueError(f"{len(predictions)} prediction arrays for {len(runtimes)} runtime arrays")
    for k, (p, r) in enumerate(zip(predictions, runtimes, strict=True)):
        if len(p) != len(r):
            raise ValueError(f"run {k}: {len(p)} predictions for {len(r)} runtimes")
    orders = [np.argsort(np.asarray(p), kind="stable") for p in predictions]
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in runtimes])]).astype(np.int64)
    values = np.concatenate([np.asarray(r, dtype=np.float64) for r in runtimes])
    return kendall_tau_scores(np.concatenate(orders), values, offsets)


SUBSAMPLE = 1000  # configs resampled per draw at most (the m of the m-out-of-n bootstrap)


def tau_interval(predictions: Sequence[np.ndarray], runtimes: Sequence[np.ndarray], *,
                 draws: int = DEFAULT_DRAWS, seed: int = DEFAULT_SEED,
                 confidence: float = DEFAULT_CONFIDENCE, subsample: int | None = SUBSAMPLE) -> Interval:
    """The mean tau over runs and its percentile interval from resampling configs (and runs).

    ``predictions[k]`` and ``runtimes[k]`` are run ``k``'s predicted and measured runtimes of the same
    configs (different runs may rank different configs, e.g. the test parts of several splits). A run of
    more than ``subsample`` configs is resampled ``subsample`` at a time, its deviations scaled (module
    docstring); ``subsample=None`` resamples every config.
    """
    return resampled_interval(layout_taus, predictions, runtimes, draws=draws, seed=seed,
                              confidence=confidence, subsample=subsample)


RunStatistic = Callable[[Sequence[np.ndarray], Sequence[np.ndarray]], np.ndarray]


def resampled_interval(statistic: RunStatistic, predictions: Sequence[np.ndarray],
                       runtimes: Sequence[np.ndarray], *, draws: int = DEFAULT_DRAWS,
                       seed: int = DEFAULT_SEED, confidence: float = DEFAULT_CONFIDENCE,
                       subsample: int | None = SUBSAMPLE, valued_at_most: int | None = None) -> Interval:
    """``tau_interval`` for any per-run statistic of (predictions, runtimes) that is a mean over pairs
    of configs (so its spread falls as 1 / sqrt(configs), which the m-out-of-n scaling assumes). A run
    or a draw whose statistic is undefined (NaN: no pair to count) is left out; with none left the
    interval is NaN. ``valued_at_most``: the statistic values a run of more configs on a sample of that
    many, so a draw's deviation is scaled to that size instead of the run's."""
    check_bootstrap_args(draws, confidence)
    if not predictions:
        raise ValueError("no run to score")
    if subsample is not None and subsample < 2:
        raise ValueError(f"subsample must be at least 2 configs, got {subsample}")
    run_values = statistic(predictions, runtimes)
    if np.isnan(run_values).all():
        return Interval(float("nan"), float("nan"), float("nan"))
    estimate = float(np.nanmean(run_values))
    rng = np.random.default_rng(seed)
    runs = rng.integers(0, len(predictions), size=draws)
    sizes = np.asarray([len(runtimes[run]) for run in runs])
    picked = sizes if subsample is None else np.minimum(sizes, subsample)
    sampled_p, sampled_r = [], []
    for run, n, m in zip(runs, sizes, picked, strict=True):
        pick = np.sort(rng.integers(0, n, size=m))  # sorted: tied predictions keep their order by position
        sampled_p.append(np.asarray(predictions[run])[pick])
        sampled_r.append(np.asarray(runtimes[run])[pick])
    values = statistic(sampled_p, sampled_r)
    if valued_at_most is not None:
        sizes = np.minimum(sizes, valued_at_most)
    scaled = picked < sizes  # m-out-of-n draws: the run's value plus the deviation scaled to n configs
    values[scaled] = run_values[runs[scaled]] + (values[scaled] - run_values[runs[scaled]]) * np.sqrt(
        picked[scaled] / sizes[scaled])
    values = values[~np.isnan(values)]
    if not values.size:
        return Interval(estimate, float("nan"), float("nan"))
    return percentile_interval(estimate, values, confidence)
