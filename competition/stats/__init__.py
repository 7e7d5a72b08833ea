"""Is a difference real? Confidence intervals, paired comparisons, shake-up and rank ensembles.

Built on the kit's own scorer: every graph is scored once with ``competition.scoring.graph_scores``
(the official metric), then computed on with numpy (and scipy's t distribution). No torch, no pandas.

- ``bootstrap``: per-graph scores, ``report`` (intervals per collection and overall) and ``compare``
  (paired B - A with ``p_b_better`` and a two-sided ``p_value``), and ``intervals`` for plain
  per-graph scores (validation); the intervals come from ``mean_intervals`` (t by default, or a
  bootstrap: ``INTERVAL_METHODS``), the exact test from ``sign_flip``, the t distribution from
  scipy, and the notes for collections of few graphs from ``calibration``;
- ``multiple``: ``within_noise_of_best``, several submissions against the best, Holm-adjusted;
- ``shakeup``: random public/private splits and final-selection advice;
- ``one_graph``: ``tau_interval``, the interval of one layout graph's tau (its configs resampled);
- ``ensemble``: rank-mean and Borda blends of submissions, written and validated with the kit's code.
"""

from competition.stats.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_DRAWS,
    DEFAULT_METHOD,
    DEFAULT_SEED,
    INTERVAL_METHODS,
    USAGE_CHOICES,
    CollectionScores,
    Comparison,
    Difference,
    GraphScores,
    Interval,
    Report,
    compare,
    draw_graph_indices,
    intervals,
    load_graph_scores,
    per_graph_scores,
    report,
)
from competition.stats.calibration import THIN_GRAPHS, ThinData
from competition.stats.ensemble import METHODS, EnsembleError, EnsembleResult, ensemble, ensemble_files
from competition.stats.multiple import WithinNoise, holm, within_noise_of_best
from competition.stats.one_graph import layout_taus, tau_interval
from competition.stats.shakeup import DEFAULT_PUBLIC_SHARE, DEFAULT_SHAKEUP_DRAWS, Shakeup, shakeup

__all__ = [
    "layout_taus",
    "tau_interval",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_DRAWS",
    "DEFAULT_METHOD",
    "DEFAULT_PUBLIC_SHARE",
    "DEFAULT_SEED",
    "DEFAULT_SHAKEUP_DRAWS",
    "INTERVAL_METHODS",
    "METHODS",
    "THIN_GRAPHS",
    "USAGE_CHOICES",
    "CollectionScores",
    "Comparison",
    "Difference",
    "EnsembleError",
    "EnsembleResult",
    "GraphScores",
    "Interval",
    "Report",
    "Shakeup",
    "ThinData",
    "WithinNoise",
    "compare",
    "draw_graph_indices",
    "ensemble",
    "ensemble_files",
    "holm",
    "intervals",
    "load_graph_scores",
    "per_graph_scores",
    "report",
    "shakeup",
    "within_noise_of_best",
]
