"""The official metrics: tile slowdown and layout Kendall tau, per graph and vectorised over graphs.

Two scores, both higher-is-better, each averaged over the graphs of a collection
(docs/competition.md, The metric):

- **tile slowdown** (``tile:xla``), per graph: ``2 - min(y[top_configs[:k]]) / min(y)`` with
  ``y = runtimes / normalizers`` in float64 and ``k = 5``. 1.0 when the best config is among the
  first ``k`` listed; unbounded below.
- **Kendall tau** (``layout:*``), per graph: tau-b between the *ranks* the submitted ordering gives
  each config (``rank[order[i]] = i``, fastest first) and the measured runtimes; the same value as
  ``scipy.stats.kendalltau(ranks, runtimes)`` wherever that is defined. Computing it on the
  ordering itself is a classic bug (the tests keep an example).

The per-graph functions (``tile_slowdown_score``, ``kendall_tau_score``) are the readable
definitions. The batch functions (``tile_slowdown_scores``, ``kendall_tau_scores``) score a whole
submission at once on *packed* inputs: per-config arrays of all graphs concatenated, plus
``offsets`` (G+1,) with graph ``g`` owning ``offsets[g]:offsets[g + 1]``. Indices in orders and
``top_configs`` stay local to their graph. ``pack_ragged`` and ``pack_top_configs`` build them.

The modules of this package: ``tile`` and ``layout`` (each metric, per graph and batched, and what
every scoring of one solution shares: ``TileLabels``, ``LayoutLabels``), ``pair_counts`` (the tie
and inversion counts behind the batch tau), ``checks`` (the input checks) and ``packing``
(``pack_ragged``, ``pack_top_configs``). Their speed is in BENCHMARKS.md (Scoring).

Undefined cases
---------------
Decided here, tested in ``tests/test_metrics.py``; no function ever returns NaN or inf.

- **Layout graph with fewer than 2 configs, or with all runtimes equal**: tau is undefined
  (scipy returns NaN). Score **0.0**: the graph carries no ranking information, so it neither
  rewards nor punishes a submission, and 0.0 is what a random ordering earns on average.
- **Ties in runtimes**: tau-b, as scipy's default (tied pairs are neither concordant nor
  discordant and shrink the denominator). Tile: ties do not matter, only minima are compared.
- **Tile graph with fewer than k configs**: its row lists all of them; the formula applies as is
  (so the score is exactly 1.0). A row listing fewer than ``min(k, n)`` configs is an error.
- **Tile rows with more than k indices**: only the first ``k`` count and only those are checked
  (the upstream baseline writes 10; docs/competition.md, Submission format, tolerates extras).
- **Empty input (G = 0)**: the batch functions return an empty float64 array.
- **Runtimes or normalizers that are zero, negative or not finite**: ValueError. That is a
  host-side data problem; in particular the released test npz files carry all-zero runtimes, and
  scoring against them must fail loudly instead of returning 0.0 for every graph.
- **Tile graph with no config**: ValueError (``min(y)`` does not exist). A layout graph with no
  config scores 0.0 like any graph with fewer than 2.
- **Tile rows listing a config twice**: ValueError; a repeat would let a row list fewer than
  ``min(k, n)`` configs in effect.
- **A ratio ``runtimes / normalizers`` that under- or overflows float64** (e.g. 1e-300 / 1e300)
  where it decides a minimum: ValueError, rather than a score of inf or NaN.
- **Exactness**: without ties the true order scores exactly 1.0 and its reverse exactly -1.0.

Examples
--------
>>> kendall_tau_score([2, 0, 1], [20, 30, 10])  # config 2 fastest, then 0, then 1: all right
1.0
>>> tile_slowdown_score([1], [4, 2], [2, 2], k=1)
1.0
>>> kendall_tau_scores([0, 1, 1, 0, 0], [1, 2, 1, 2, 7], [0, 2, 4, 5]).tolist()
[1.0, -1.0, 0.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from competition.metrics.layout import kendall_tau_score, kendall_tau_scores
from competition.metrics.packing import pack_ragged, pack_top_configs
from competition.metrics.tile import tile_slowdown_score, tile_slowdown_scores

__all__ = [
    "KENDALL_TAU",
    "TILE_SLOWDOWN",
    "Metric",
    "kendall_tau_score",
    "kendall_tau_scores",
    "pack_ragged",
    "pack_top_configs",
    "tile_slowdown_score",
    "tile_slowdown_scores",
]


@dataclass(frozen=True)
class Metric:
    """One metric as data: what it computes, how to read it, what it expects."""

    name: str
    score: Callable[..., float]  # one graph
    scores: Callable[..., np.ndarray]  # all graphs of a collection, packed
    higher_is_better: bool
    range: tuple[float, float]  # (worst, best) attainable per graph
    expected_input: str

    @property
    def direction(self) -> str:
        return "higher is better" if self.higher_is_better else "lower is better"


TILE_SLOWDOWN = Metric(
    name="tile_slowdown",
    score=tile_slowdown_score,
    scores=tile_slowdown_scores,
    higher_is_better=True,
    range=(-math.inf, 1.0),
    expected_input=(
        "Per graph: top_configs, the indices of the k=5 configs predicted fastest, fastest first "
        "(all configs when the graph has fewer than 5; indices after the 5th are ignored); "
        "runtimes and normalizers, one positive value per config. Score 2 - min(y[top]) / min(y), "
        "y = runtimes / normalizers: 1.0 when the fastest config is listed, unbounded below. "
        "Batch: top_configs (G, k) int64 padded with -1, runtimes and normalizers (N,) "
        "concatenated over graphs, offsets (G+1,) int64 graph boundaries."
    ),
)
KENDALL_TAU = Metric(
    name="kendall_tau",
    score=kendall_tau_score,
    scores=kendall_tau_scores,
    higher_is_better=True,
    range=(-1.0, 1.0),
    expected_input=(
        "Per graph: order, a permutation of all config indices 0..n-1, fastest first; "
        "runtimes, one positive value per config. Score: Kendall tau-b between the ranks the "
        "order gives (rank[order[i]] = i) and the runtimes, in [-1, 1]; 0.0 when undefined "
        "(fewer than 2 configs or all runtimes equal). Batch: orders and runtimes (N,) "
        "concatenated over graphs, offsets (G+1,) int64 graph boundaries."
    ),
)
