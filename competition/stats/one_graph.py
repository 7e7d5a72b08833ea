"""An interval for the score of one layout graph: the bootstrap over its configs.

``report`` and ``compare`` resample graphs, which says nothing when there is one graph (a real graph
ranked by a model trained elsewhere, ``make bench-real``, the last line of ``make demo``). Here the
ranked configs are resampled instead, with replacement, ``draws`` times, and each draw is scored with
the official metric (``competition.metrics.kendall_tau_scores``, all draws in one call). With several
runs (seeds, splits) a draw first picks one run at random, so the interval also holds the spread
between runs; the estimate is the mean tau over runs.

What it means: how much the tau would move on another set of configs of this program measured the
same way. It says nothing about other programs: one graph is weak evidence.
"""

from __future__ import annotations

from collections.abc import Sequence

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


def tau_interval(predictions: Sequence[np.ndarray], runtimes: Sequence[np.ndarray], *,
                 draws: int = DEFAULT_DRAWS, seed: int = DEFAULT_SEED,
                 confidence: float = DEFAULT_CONFIDENCE) -> Interval:
    """The mean tau over runs and its percentile interval from resampling configs (and runs).

    ``predictions[k]`` and ``runtimes[k]`` are run ``k``'s predicted and measured runtimes of the same
    configs (different runs may rank different configs, e.g. the test parts of several splits).
    """
    check_bootstrap_args(draws, confidence)
    if not predictions:
        raise ValueError("no run to score")
    estimate = float(np.mean(layout_taus(predictions, runtimes)))
    rng = np.random.default_rng(seed)
    runs = rng.integers(0, len(predictions), size=draws)
    sampled_p, sampled_r = [], []
    for run in runs:
        n = len(runtimes[run])
        pick = np.sort(rng.integers(0, n, size=n))  # sorted: tied predictions keep their order by position
        sampled_p.append(np.asarray(predictions[run])[pick])
        sampled_r.append(np.asarray(runtimes[run])[pick])
    return percentile_interval(estimate, layout_taus(sampled_p, sampled_r), confidence)
