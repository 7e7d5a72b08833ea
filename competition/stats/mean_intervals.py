"""Intervals for a mean of collection means, and the two-sided tests that go with them.

The official score is the unweighted mean of K collection means, collection ``c`` over its ``G_c``
test graphs. Three ways to put an interval on it (``method``), each per collection and overall:

- ``"t"`` (the default): per collection ``m_c +- t(G_c - 1) s_c / sqrt(G_c)`` (``s_c`` with
  ``G_c - 1`` in the denominator); overall ``M +- t(nu) sqrt(sum_c s_c^2 / G_c) / K`` with
  Welch-Satterthwaite's ``nu = (sum_c v_c)^2 / sum_c v_c^2 / (G_c - 1)``, ``v_c = s_c^2 / G_c``.
  It holds its level at 8 graphs where the percentile bootstrap does not (BENCHMARKS.md,
  "Calibration"): that one uses about the normal quantile and a spread shrunk by
  ``sqrt((G - 1) / G)``, so at ``G = 8`` its "95 %" is ``P(|t7| <= 1.833) = 89 %``.
- ``"bootstrap-t"``: the studentized bootstrap: each draw's ``(mean* - mean) / se*`` replaces the t
  quantiles, so a skewed collection gets a skewed interval (draws whose resampled graphs all score
  the same have no ``se*`` and are left out).
- ``"percentile"``: the 2.5 % and 97.5 % quantiles of the resampled means (the 1.0 default).

A collection with a single graph has no spread to measure: its interval has zero width and adds no
variance to the overall one (the tables say so). Paired differences use the same functions on the
per-graph differences B - A: the official score is linear in the per-graph scores.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

T = "t"
BOOTSTRAP_T = "bootstrap-t"
PERCENTILE = "percentile"
INTERVAL_METHODS = (T, BOOTSTRAP_T, PERCENTILE)
DEFAULT_METHOD = T
RESAMPLING_METHODS = (BOOTSTRAP_T, PERCENTILE)  # the methods that use the bootstrap draws

__all__ = ["BOOTSTRAP_T", "DEFAULT_METHOD", "INTERVAL_METHODS", "PERCENTILE", "RESAMPLING_METHODS", "T",
           "MeanIntervals", "Spread", "check_method", "mean_intervals", "percentile_bounds"]


@dataclass(frozen=True)
class Spread:
    """A mean, its standard error and the degrees of freedom of that error (0: no spread measured)."""

    mean: float
    se: float
    df: float

    def share_above(self, value: float = 0.0) -> float:
        """P(mean > value) read off the t distribution of (mean - true) / se: the one-sided confidence
        that the true mean lies above ``value``; 0.5 when ``se`` is 0 and ``mean == value``."""
        if self.se == 0 or self.df == 0:
            return 0.5 if self.mean == value else float(self.mean > value)
        from scipy.stats import t as student_t  # at the first interval: `tpugraphs --help` stays fast

        return float(student_t.cdf((self.mean - value) / self.se, self.df))

    def p_two_sided(self, value: float = 0.0) -> float:
        """The t test's two-sided p value of ``true mean == value``."""
        above = self.share_above(value)
        return min(1.0, 2.0 * min(above, 1.0 - above))


@dataclass(frozen=True)
class MeanIntervals:
    """``(estimate, low, high)`` per collection and overall, with each one's t spread."""

    overall: tuple[float, float, float]
    collections: dict[str, tuple[float, float, float]]
    overall_spread: Spread
    spreads: dict[str, Spread]


def check_method(method: str) -> None:
    if method not in INTERVAL_METHODS:
        raise ValueError(f"method must be one of {', '.join(INTERVAL_METHODS)}; got {method!r}")


def collection_spread(values: np.ndarray) -> Spread:
    g = values.size
    if g < 2:
        return Spread(float(np.mean(values)), 0.0, 0.0)
    return Spread(float(np.mean(values)), float(np.std(values, ddof=1) / math.sqrt(g)), float(g - 1))


def overall_spread(spreads: Mapping[str, Spread]) -> Spread:
    """The mean of the collection means, its standard error and Welch-Satterthwaite's degrees of freedom."""
    k = len(spreads)
    variances = [(s.se**2, s.df) for s in spreads.values() if s.df > 0]
    total = sum(v for v, _ in variances)
    mean = float(np.mean([s.mean for s in spreads.values()]))
    if total == 0:
        return Spread(mean, 0.0, 0.0)
    df = 1.0 / sum((v / total) ** 2 / d for v, d in variances)  # (sum v)^2 / sum v^2 / d, scale-free
    return Spread(mean, math.sqrt(total) / k, df)


def _t_interval(spread: Spread, confidence: float) -> tuple[float, float, float]:
    if spread.se == 0 or spread.df == 0:
        return spread.mean, spread.mean, spread.mean
    from scipy.stats import t as student_t

    half = float(student_t.ppf(0.5 + confidence / 2, spread.df)) * spread.se
    return spread.mean, spread.mean - half, spread.mean + half


def percentile_bounds(draws: np.ndarray, confidence: float) -> tuple[float, float]:
    """The percentile interval of resampled values: their (1 - confidence) / 2 and (1 + confidence) / 2
    quantiles."""
    alpha = (1 - confidence) / 2
    low, high = np.quantile(draws, [alpha, 1 - alpha])
    return float(low), float(high)


def _percentile(estimate: float, draws: np.ndarray, confidence: float) -> tuple[float, float, float]:
    return (estimate, *percentile_bounds(draws, confidence))


def _studentized(spread: Spread, draws: np.ndarray, draw_se: np.ndarray,
                 confidence: float) -> tuple[float, float, float]:
    """Bootstrap-t: the quantiles of (draw - estimate) / draw_se turned into an interval around estimate."""
    estimate, se = spread.mean, spread.se
    if se == 0:
        return estimate, estimate, estimate
    # A draw without spread (every resampled graph scoring the same) has no studentized value and is
    # left out; the t quantiles stand in when every draw is such a one (two graphs, few draws).
    keep = draw_se > 0
    if not keep.any():
        return _t_interval(spread, confidence)
    t_star = (draws[keep] - estimate) / draw_se[keep]
    alpha = (1 - confidence) / 2
    low_q, high_q = np.quantile(t_star, [alpha, 1 - alpha])
    return estimate, float(estimate - high_q * se), float(estimate - low_q * se)


def mean_intervals(values: Mapping[str, np.ndarray], confidence: float, method: str = DEFAULT_METHOD,
                   indices: Mapping[str, np.ndarray] | None = None) -> MeanIntervals:
    """Intervals of each collection's mean and of the mean of those, by ``method``.

    ``values[c]``: ``(G_c,)`` per-graph scores (or differences) in the fixed collection order;
    ``indices[c]``: ``(draws, G_c)`` resampled positions, needed by the two bootstrap methods.
    """
    check_method(method)
    spreads = {name: collection_spread(v) for name, v in values.items()}
    whole = overall_spread(spreads)
    if method == T:
        per = {name: _t_interval(s, confidence) for name, s in spreads.items()}
        return MeanIntervals(_t_interval(whole, confidence), per, whole, spreads)
    if indices is None:
        raise ValueError(f"the {method} interval needs the bootstrap indices")
    resampled = {name: v[indices[name]] for name, v in values.items()}  # (draws, G_c)
    means = {name: r.mean(axis=1) for name, r in resampled.items()}
    overall_draws = np.mean(np.stack(list(means.values())), axis=0)
    if method == PERCENTILE:
        per = {name: _percentile(spreads[name].mean, m, confidence) for name, m in means.items()}
        return MeanIntervals(_percentile(whole.mean, overall_draws, confidence), per, whole, spreads)
    draw_var = {name: (r.var(axis=1, ddof=1) / r.shape[1] if r.shape[1] > 1 else np.zeros(r.shape[0]))
                for name, r in resampled.items()}
    collections = {name: _studentized(spreads[name], means[name], np.sqrt(draw_var[name]), confidence)
                   for name in values}
    overall_se = np.sqrt(np.sum(np.stack(list(draw_var.values())), axis=0)) / len(values)
    return MeanIntervals(_studentized(whole, overall_draws, overall_se, confidence),
                         collections, whole, spreads)
