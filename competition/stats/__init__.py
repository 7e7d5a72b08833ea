"""Is a difference real? Confidence intervals, paired comparisons, shake-up and rank ensembles.

Built on the kit's own scorer: every graph is scored once with ``competition.scoring.graph_scores``
(the official metric), then resampled with numpy. No torch, no pandas.

- ``bootstrap``: per-graph scores, ``report`` (intervals per collection and overall) and ``compare``
  (paired B - A with ``p_b_better``), and ``intervals`` for plain per-graph scores (validation);
- ``shakeup``: random public/private splits and final-selection advice;
- ``one_graph``: ``tau_interval``, the interval of one layout graph's tau (its configs resampled);
- ``ensemble``: rank-mean and Borda blends of submissions, written and validated with the kit's code.
"""

from competition.stats.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_DRAWS,
    DEFAULT_SEED,
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
from competition.stats.ensemble import METHODS, EnsembleError, EnsembleResult, ensemble, ensemble_files
from competition.stats.one_graph import layout_taus, tau_interval
from competition.stats.shakeup import DEFAULT_PUBLIC_SHARE, DEFAULT_SHAKEUP_DRAWS, Shakeup, shakeup

__all__ = [
    "layout_taus",
    "tau_interval",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_DRAWS",
    "DEFAULT_PUBLIC_SHARE",
    "DEFAULT_SEED",
    "DEFAULT_SHAKEUP_DRAWS",
    "METHODS",
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
    "compare",
    "draw_graph_indices",
    "ensemble",
    "ensemble_files",
    "intervals",
    "load_graph_scores",
    "per_graph_scores",
    "report",
    "shakeup",
]
