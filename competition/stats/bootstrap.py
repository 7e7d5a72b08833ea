"""Per-graph scores and the bootstrap over graphs: ``tpugraphs report`` and ``tpugraphs compare``.

The official score is a mean of collection means, each over that collection's test graphs. Which
graphs happen to be in the test set is the largest source of noise in a score, so the interval here
resamples **graphs within each collection**, with replacement, ``draws`` times:

1. every graph is scored **once** with the kit's scorer (``competition.scoring.graph_scores``, the
   official metric); nothing in this module re-implements the metric;
2. one ``(draws, G_c)`` matrix of graph indices per collection, from one seeded generator, in the
   fixed collection order (so a seed gives the same numbers everywhere);
3. a draw's collection score is the mean of its resampled graphs' scores, its overall score the
   mean of its collection scores (as the official score averages collections);
4. the interval is the percentile interval of the draws (``confidence`` 0.95: 2.5 % and 97.5 %).

``compare`` is paired: A and B are resampled with the **same** index matrices, so a graph that is
hard for both does not widen the interval of their difference. ``p_b_better`` is the share of draws
where B scores higher, ties counted half (identical submissions give exactly 0.5).

What the interval means: how much the score would move on another test set drawn like this one. It
does not include the noise of retraining (seeds); compare two seeds' submissions for that.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from competition.collections import COLLECTION_BY_NAME, COLLECTIONS
from competition.scoring import (
    PRIVATE,
    PUBLIC,
    USAGE_CODES,
    Solution,
    SubmissionInvalid,
    graph_scores,
)
from competition.submission import validate_submission

DEFAULT_DRAWS = 2000
DEFAULT_CONFIDENCE = 0.95
DEFAULT_SEED = 0
USAGE_CHOICES = ("all", "Public", "Private")  # "all" = Public + Private; Ignored rows are never scored

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_DRAWS",
    "DEFAULT_SEED",
    "USAGE_CHOICES",
    "CollectionScores",
    "Comparison",
    "Difference",
    "GraphScores",
    "Interval",
    "Report",
    "bootstrap_means",
    "check_bootstrap_args",
    "compare",
    "draw_graph_indices",
    "intervals",
    "load_graph_scores",
    "per_graph_scores",
    "percentile_interval",
    "report",
]


# ---------------------------------------------------------------------------------------------
# Per-graph scores, computed once


@dataclass(frozen=True)
class CollectionScores:
    """The official per-graph scores of one submission on one collection, in solution order."""

    collection: str
    ids: tuple[str, ...]  # (G,)
    scores: np.ndarray  # (G,) float64
    configs: np.ndarray  # (G,) int64: configs of each graph
    usage: np.ndarray  # (G,) int8: 0 Public, 1 Private (Ignored graphs are never kept)

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class GraphScores:
    """A submission's per-graph scores by collection (only collections with graphs of the usage)."""

    name: str
    usage: str  # "all", "Public" or "Private"
    collections: dict[str, CollectionScores]

    @property
    def score(self) -> float:
        """The official score of these graphs: the mean of the collection means."""
        return _mean_of_means({name: c.scores for name, c in self.collections.items()})

    @classmethod
    def from_arrays(cls, name: str,
                    per_collection: Mapping[str, Sequence[float] | np.ndarray]) -> GraphScores:
        """Plain per-graph scores (e.g. on the valid split, where there is no solution file).

        Graphs are named ``<collection>#<position>``: two submissions compare only when their scores
        are listed in the same graph order.
        """
        kept = {}
        for collection in _ordered(list(per_collection)):
            values = np.asarray(per_collection[collection], dtype=np.float64)
            if values.size:
                kept[collection] = CollectionScores(
                    collection, tuple(f"{collection}#{i}" for i in range(values.size)), values,
                    np.zeros(values.size, dtype=np.int64), np.full(values.size, PUBLIC, dtype=np.int8))
        return cls(name=name, usage="all", collections=kept)

    def same_graphs(self, other: GraphScores) -> bool:
        return ({n: c.ids for n, c in self.collections.items()}
                == {n: c.ids for n, c in other.collections.items()})


def _usage_mask(usage_codes: np.ndarray, usage: str) -> np.ndarray:
    if usage == "all":
        return (usage_codes == PUBLIC) | (usage_codes == PRIVATE)
    if usage not in ("Public", "Private"):
        raise ValueError(f"usage must be one of {', '.join(USAGE_CHOICES)}; got {usage!r}")
    return usage_codes == USAGE_CODES[usage]


def per_graph_scores(rows: Mapping[str, np.ndarray], solution: Solution, *, usage: str = "all",
                     name: str = "submission") -> GraphScores:
    """Score validated rows (ID -> config indices) graph by graph with the kit's scorer.

    ``usage`` keeps the graphs of the Public rows, the Private rows, or both (``"all"``, what
    ``tpugraphs score`` calls ``score``). A collection without graphs of that usage is left out, as
    the scorer leaves it out of the mean.
    """
    kept: dict[str, CollectionScores] = {}
    for collection, labels in solution.labels.items():
        mask = _usage_mask(labels.usage, usage)
        if not mask.any():
            continue
        scores = graph_scores(labels, rows)
        kept[collection] = CollectionScores(
            collection=collection,
            ids=tuple(row_id for row_id, keep in zip(labels.ids, mask, strict=True) if keep),
            scores=np.asarray(scores, dtype=np.float64)[mask],
            configs=labels.config_counts[mask],
            usage=labels.usage[mask],
        )
    return GraphScores(name=name, usage=usage, collections=kept)


def load_graph_scores(source: str | Path | BinaryIO | bytes, solution: Solution, *, usage: str = "all",
                      name: str | None = None, max_problems: int = 50) -> GraphScores:
    """Validate a submission file with the kit's validator, then score it graph by graph.

    Raises ``SubmissionInvalid`` (its message lists every problem) for a file the validator refuses.
    """
    label = name or (str(source) if isinstance(source, str | Path) else "submission")
    result = validate_submission(source, solution.expected_configs(), max_problems=max_problems)
    if not result.ok:
        raise SubmissionInvalid(result, source_name=label)
    return per_graph_scores(result.rows, solution, usage=usage, name=label)


# ---------------------------------------------------------------------------------------------
# The resampling


@dataclass(frozen=True)
class Interval:
    """A point estimate and its bootstrap percentile interval."""

    estimate: float
    low: float
    high: float

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


def check_bootstrap_args(draws: int, confidence: float) -> None:
    """ValueError naming the argument when ``draws`` or ``confidence`` cannot give an interval."""
    if isinstance(draws, bool) or not isinstance(draws, int | np.integer) or draws < 1:
        raise ValueError(f"draws must be a positive integer; got {draws!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1 (e.g. 0.95); got {confidence!r}")


def draw_graph_indices(sizes: Mapping[str, int], draws: int, seed: int) -> dict[str, np.ndarray]:
    """One ``(draws, G_c)`` matrix of resampled graph positions per collection.

    Drawn from one generator in the fixed collection order, so the same seed and graph counts give
    the same matrices whichever function asks (report, compare, the slow references in the tests).
    """
    rng = np.random.default_rng(seed)
    ordered = [c.name for c in COLLECTIONS if c.name in sizes]
    return {name: rng.integers(0, sizes[name], size=(draws, sizes[name])) for name in ordered}


def bootstrap_means(scores: Mapping[str, np.ndarray],
                    indices: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Resampled collection means: ``scores[c]`` is ``(G_c,)`` or ``(S, G_c)`` for S submissions
    resampled together (paired); returns ``(draws,)`` or ``(S, draws)`` per collection."""
    return {name: np.asarray(values)[..., indices[name]].mean(axis=-1) for name, values in scores.items()}


def percentile_interval(estimate: float, draws: np.ndarray, confidence: float) -> Interval:
    alpha = (1 - confidence) / 2
    low, high = np.quantile(draws, [alpha, 1 - alpha])
    return Interval(float(estimate), float(low), float(high))


def _mean_of_means(scores: Mapping[str, np.ndarray]) -> float:
    return float(np.mean([np.mean(values) for values in scores.values()])) if scores else 0.0


def _overall_draws(collection_draws: Mapping[str, np.ndarray]) -> np.ndarray:
    return np.mean(np.stack(list(collection_draws.values())), axis=0)


def _ordered(names: Sequence[str]) -> list[str]:
    return [c.name for c in COLLECTIONS if c.name in names]


# ---------------------------------------------------------------------------------------------
# report


@dataclass
class Report:
    """``tpugraphs report``: the score with intervals, per collection and overall, and every graph."""

    scores: GraphScores
    overall: Interval
    collections: dict[str, Interval]
    draws: int
    seed: int
    confidence: float

    @property
    def tile_best_in_top5(self) -> float | None:
        """Share of top-k graphs (tile) whose fastest config was among the first k listed (score exactly 1);
        None without a collection whose task scores a top k."""
        top_k = self._top_k_collections()
        return float(np.mean(np.concatenate([c.scores for c in top_k.values()]) == 1.0)) if top_k else None

    def _top_k_collections(self) -> dict:
        """The scored collections whose task reads only the first k listed configs (tile), by name."""
        return {name: c for name, c in self.scores.collections.items() if COLLECTION_BY_NAME[name].task.top_k}

    def per_graph(self) -> list[dict]:
        """Every graph, worst first (lowest score; ties in solution order)."""
        rows = [
            {"id": row_id, "collection": name, "score": float(score), "configs": int(configs),
             "usage": "Public" if code == PUBLIC else "Private"}
            for name, c in self.scores.collections.items()
            for row_id, score, configs, code in zip(c.ids, c.scores, c.configs, c.usage, strict=True)
        ]
        return sorted(rows, key=lambda row: row["score"])  # stable: equal scores keep solution order

    def to_json_dict(self) -> dict:
        return {
            "submission": self.scores.name,
            "usage": self.scores.usage,
            "score": self.overall.estimate,
            "ci_low": self.overall.low,
            "ci_high": self.overall.high,
            "confidence": self.confidence,
            "draws": self.draws,
            "seed": self.seed,
            "collections": {
                name: {"score": ci.estimate, "ci_low": ci.low, "ci_high": ci.high,
                       "graphs": len(self.scores.collections[name]),
                       "metric": COLLECTION_BY_NAME[name].metric}
                for name, ci in self.collections.items()
            },
            "tile_best_in_top5": self.tile_best_in_top5,
            "per_graph": self.per_graph(),
        }

    def format(self, worst: int = 10) -> str:
        pct = f"{self.confidence:.0%}"
        head = f"{'collection':<20} {'metric':<14} {'graphs':>6} {'score':>8} {pct + ' interval':>20}"
        lines = [f"{self.scores.name}: {_usage_words(self.scores.usage)}, {self.draws} bootstrap draws "
                 f"over graphs (seed {self.seed})", head, "-" * len(head)]
        for name, ci in self.collections.items():
            graphs = len(self.scores.collections[name])
            note = "  (1 graph: no spread)" if graphs == 1 else ""
            lines.append(f"{name:<20} {COLLECTION_BY_NAME[name].metric:<14} {graphs:>6} {ci.estimate:>8.4f} "
                         f"{_interval_text(ci):>20}{note}")
        lines.append(f"{'final (mean of collections)':<42} {self.overall.estimate:>8.4f} "
                     f"{_interval_text(self.overall):>20}")
        if self.tile_best_in_top5 is not None:
            top_k = self._top_k_collections()
            k = max(COLLECTION_BY_NAME[name].task.top_k for name in top_k)
            lines.append(f"{', '.join(top_k)} graphs whose fastest config is in the top {k}: "
                         f"{self.tile_best_in_top5:.1%}")
        graphs = self.per_graph()
        if worst > 0 and graphs:
            lines.append(f"\nworst {min(worst, len(graphs))} of {len(graphs)} graphs:")
            lines.append(f"{'score':>8} {'configs':>7}  ID")
            lines += [f"{g['score']:>8.4f} {g['configs']:>7}  {g['id']}" for g in graphs[:worst]]
        return "\n".join(lines)


def _usage_words(usage: str) -> str:
    return {"all": "Public + Private graphs", "Public": "Public graphs only",
            "Private": "Private graphs only"}[usage]


def _interval_text(ci: Interval) -> str:
    return f"[{ci.low:.4f}, {ci.high:.4f}]"


def report(scores: GraphScores, *, draws: int = DEFAULT_DRAWS, seed: int = DEFAULT_SEED,
           confidence: float = DEFAULT_CONFIDENCE) -> Report:
    """Bootstrap intervals for one submission's score, per collection and overall."""
    check_bootstrap_args(draws, confidence)
    values = {name: c.scores for name, c in scores.collections.items()}
    if not values:
        raise ValueError(f"{scores.name}: no scored graph of usage {scores.usage!r}")
    indices = draw_graph_indices({name: len(v) for name, v in values.items()}, draws, seed)
    resampled = bootstrap_means(values, indices)
    collections = {name: percentile_interval(float(np.mean(values[name])), resampled[name], confidence)
                   for name in _ordered(list(values))}
    overall = percentile_interval(scores.score, _overall_draws(resampled), confidence)
    return Report(scores, overall, collections, draws, seed, confidence)


def intervals(per_collection: Mapping[str, Sequence[float] | np.ndarray], *, draws: int = DEFAULT_DRAWS,
              seed: int = DEFAULT_SEED,
              confidence: float = DEFAULT_CONFIDENCE) -> tuple[Interval, dict[str, Interval]]:
    """The same intervals for plain per-graph scores (e.g. validation scores): overall, per collection.

    Collections without scores are left out.
    """
    check_bootstrap_args(draws, confidence)
    values = {name: np.asarray(v, dtype=np.float64) for name, v in per_collection.items() if len(v)}
    if not values:
        raise ValueError("no per-graph scores to resample")
    indices = draw_graph_indices({name: len(v) for name, v in values.items()}, draws, seed)
    resampled = bootstrap_means(values, indices)
    collections = {name: percentile_interval(float(np.mean(values[name])), resampled[name], confidence)
                   for name in _ordered(list(values))}
    return percentile_interval(_mean_of_means(values), _overall_draws(resampled), confidence), collections


# ---------------------------------------------------------------------------------------------
# compare


@dataclass(frozen=True)
class Difference:
    """B - A with its paired interval and the probability that B is better."""

    interval: Interval
    p_b_better: float
    a: float
    b: float


@dataclass
class Comparison:
    """``tpugraphs compare``: the paired difference B - A, overall and per collection."""

    a: GraphScores
    b: GraphScores
    overall: Difference
    collections: dict[str, Difference]
    draws: int
    seed: int
    confidence: float

    def differing_graphs(self, top: int | None = None) -> list[dict]:
        """Graphs by how much B differs from A (largest absolute difference first)."""
        rows = []
        for name, ca in self.a.collections.items():
            cb = self.b.collections[name]
            for row_id, sa, sb, configs in zip(ca.ids, ca.scores, cb.scores, ca.configs, strict=True):
                rows.append({"id": row_id, "collection": name, "a": float(sa), "b": float(sb),
                             "diff": float(sb - sa), "configs": int(configs)})
        rows.sort(key=lambda row: -abs(row["diff"]))
        return rows[:top] if top is not None else rows

    def verdict(self) -> str:
        ci = self.overall.interval
        if ci.low > 0:
            return f"B is better: the {self.confidence:.0%} interval of B - A lies above 0"
        if ci.high < 0:
            return f"A is better: the {self.confidence:.0%} interval of B - A lies below 0"
        return f"within noise: the {self.confidence:.0%} interval of B - A contains 0"

    def to_json_dict(self, top: int = 20) -> dict:
        def entry(d: Difference) -> dict:
            return {"diff": d.interval.estimate, "ci_low": d.interval.low, "ci_high": d.interval.high,
                    "p_b_better": d.p_b_better, "a": d.a, "b": d.b}

        return {
            "a": self.a.name,
            "b": self.b.name,
            "usage": self.a.usage,
            **entry(self.overall),
            "confidence": self.confidence,
            "draws": self.draws,
            "seed": self.seed,
            "verdict": self.verdict(),
            "collections": {name: {**entry(d), "graphs": len(self.a.collections[name])}
                            for name, d in self.collections.items()},
            "graphs_differing_most": self.differing_graphs(top),
        }

    def format(self, top: int = 10) -> str:
        pct = f"{self.confidence:.0%}"
        head = (f"{'collection':<20} {'graphs':>6} {'A':>8} {'B':>8} {'B - A':>8} {pct + ' interval':>20} "
                f"{'P(B better)':>11}")
        lines = [f"A = {self.a.name}", f"B = {self.b.name}",
                 f"{_usage_words(self.a.usage)}, {self.draws} paired bootstrap draws (seed {self.seed})",
                 head, "-" * len(head)]

        def line(label: str, graphs: str, d: Difference) -> str:
            return (f"{label:<20} {graphs:>6} {d.a:>8.4f} {d.b:>8.4f} {d.interval.estimate:>+8.4f} "
                    f"{_interval_text(d.interval):>20} {d.p_b_better:>11.3f}")

        for name, d in self.collections.items():
            lines.append(line(name, str(len(self.a.collections[name])), d))
        lines.append(line("final", "", self.overall))
        lines.append(self.verdict())
        graphs = self.differing_graphs()
        # Sorted by |B - A|, so the differing graphs come first; "the same" is judged on all of them,
        # never on the top N shown (--top 0 shows none, which says nothing about the graphs).
        differing = [g for g in graphs if g["diff"] != 0]
        if not differing:
            lines.append("\nA and B score the same on every graph")
        elif top:
            lines.append(f"\ngraphs where B and A differ most (of {len(graphs)}):")
            lines.append(f"{'A':>8} {'B':>8} {'B - A':>8} {'configs':>7}  ID")
            lines += [f"{g['a']:>8.4f} {g['b']:>8.4f} {g['diff']:>+8.4f} {g['configs']:>7}  {g['id']}"
                      for g in differing[:top]]
        return "\n".join(lines)


def _p_better(diff_draws: np.ndarray) -> float:
    # Ties count half, so identical submissions give exactly 0.5 and swapping A and B gives 1 - p.
    return float(np.mean(diff_draws > 0) + 0.5 * np.mean(diff_draws == 0))


def compare(a: GraphScores, b: GraphScores, *, draws: int = DEFAULT_DRAWS, seed: int = DEFAULT_SEED,
            confidence: float = DEFAULT_CONFIDENCE) -> Comparison:
    """Paired bootstrap of B - A: both resampled with the same graphs in every draw."""
    check_bootstrap_args(draws, confidence)
    if not a.same_graphs(b):
        raise ValueError(f"{a.name} and {b.name} were not scored on the same graphs (same "
                         "solution and usage?)")
    if not a.collections:
        raise ValueError(f"no scored graph of usage {a.usage!r}")
    names = _ordered(list(a.collections))
    stacked = {name: np.stack([a.collections[name].scores, b.collections[name].scores]) for name in names}
    indices = draw_graph_indices({name: len(a.collections[name]) for name in names}, draws, seed)
    resampled = bootstrap_means(stacked, indices)  # (2, draws) per collection
    diffs = {name: resampled[name][1] - resampled[name][0] for name in names}
    collections = {}
    for name in names:
        mean_a, mean_b = (float(np.mean(row)) for row in stacked[name])
        collections[name] = Difference(percentile_interval(mean_b - mean_a, diffs[name], confidence),
                                       _p_better(diffs[name]), mean_a, mean_b)
    overall_diffs = _overall_draws(diffs)
    overall = Difference(percentile_interval(b.score - a.score, overall_diffs, confidence),
                         _p_better(overall_diffs), a.score, b.score)
    return Comparison(a, b, overall, collections, draws, seed, confidence)
