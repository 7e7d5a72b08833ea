"""Per-graph scores and intervals over graphs: ``tpugraphs report`` and ``tpugraphs compare``.

The official score is a mean of collection means, each over that collection's test graphs. Which
graphs happen to be in the test set is the largest source of noise in a score, so the intervals here
are over **graphs within each collection**:

1. every graph is scored **once** with the kit's scorer (``competition.scoring.graph_scores``, the
   official metric); nothing in this module re-implements the metric;
2. the interval of each collection's mean and of the mean of those comes from
   ``competition.stats.mean_intervals`` (``method``): the t interval by default (Welch-Satterthwaite
   overall), which holds its level at the 8 graphs of a Kaggle xla collection; or a bootstrap over
   graphs (``"bootstrap-t"``, ``"percentile"``, the 1.0 default) from one ``(draws, G_c)`` matrix of
   graph indices per collection, drawn from one seeded generator in the fixed collection order (so
   a seed gives the same numbers everywhere).

``compare`` is paired: the intervals are those of the per-graph differences B - A (the same graphs
for A and B, so a graph hard for both does not widen them). B is called better or worse only when
the interval excludes 0 **and** the exact sign-flip test (``competition.stats.sign_flip``) rejects
"A and B interchangeable" at the same level: ``p_value`` is the larger of the two tests' p values.
``p_b_better`` is, for the t interval, the t distribution's confidence that B - A > 0 (under no
difference it is uniform: below 0.025 one time in 40); for the bootstrap methods the share of draws
in which B scores higher, ties counted half. Identical submissions give exactly 0.5.

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
from competition.stats.calibration import THIN_GRAPHS, ThinData, thin_data
from competition.stats.mean_intervals import (
    DEFAULT_METHOD,
    INTERVAL_METHODS,
    PERCENTILE,
    RESAMPLING_METHODS,
    Spread,
    check_method,
    mean_intervals,
    percentile_bounds,
)
from competition.stats.sign_flip import sign_flip_p_values
from competition.submission import validate_submission

DEFAULT_DRAWS = 2000
DEFAULT_CONFIDENCE = 0.95
DEFAULT_SEED = 0
USAGE_CHOICES = ("all", "Public", "Private")  # "all" = Public + Private; Ignored rows are never scored

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_DRAWS",
    "DEFAULT_METHOD",
    "DEFAULT_SEED",
    "INTERVAL_METHODS",
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
    """A point estimate and its confidence interval."""

    estimate: float
    low: float
    high: float

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


def check_bootstrap_args(draws: int, confidence: float, method: str = DEFAULT_METHOD) -> None:
    """ValueError naming the argument when ``draws``, ``confidence`` or ``method`` cannot give an interval."""
    if isinstance(draws, bool) or not isinstance(draws, int | np.integer) or draws < 1:
        raise ValueError(f"draws must be a positive integer; got {draws!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1 (e.g. 0.95); got {confidence!r}")
    check_method(method)


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
    return Interval(float(estimate), *percentile_bounds(draws, confidence))


def _mean_of_means(scores: Mapping[str, np.ndarray]) -> float:
    return float(np.mean([np.mean(values) for values in scores.values()])) if scores else 0.0


def _overall_draws(collection_draws: Mapping[str, np.ndarray]) -> np.ndarray:
    return np.mean(np.stack(list(collection_draws.values())), axis=0)


def _ordered(names: Sequence[str]) -> list[str]:
    return [c.name for c in COLLECTIONS if c.name in names]


# ---------------------------------------------------------------------------------------------
# The intervals, shared by report, intervals and compare


def _interval(triple: tuple[float, float, float]) -> Interval:
    return Interval(*(float(x) for x in triple))


def _intervals_of(values: Mapping[str, np.ndarray], *, draws: int, seed: int, confidence: float,
                  method: str):
    """``mean_intervals`` of per-graph values in the fixed collection order, drawing the bootstrap
    indices only for the methods that resample."""
    ordered = {name: values[name] for name in _ordered(list(values))}
    indices = (draw_graph_indices({name: len(v) for name, v in ordered.items()}, draws, seed)
               if method in RESAMPLING_METHODS else None)
    return mean_intervals(ordered, confidence, method, indices), indices


def _method_words(method: str, draws: int, seed: int, paired: bool = False) -> str:
    if method in RESAMPLING_METHODS:
        kind = "paired bootstrap" if paired else "bootstrap"
        return f"{method} intervals, {draws} {kind} draws over graphs (seed {seed})"
    return "t intervals over graphs (overall: Welch-Satterthwaite)"


def _thin_line(name: str, graphs: int, method: str, confidence: float) -> str:
    thin = thin_data(name, graphs, method, confidence)
    return f"  ({thin.text})" if thin is not None else ""


def _thin_json(name: str, graphs: int, method: str, confidence: float) -> dict | None:
    thin = thin_data(name, graphs, method, confidence)
    return thin.to_json_dict() if thin is not None else None


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
    method: str = PERCENTILE
    spreads: dict[str, Spread] | None = None  # per collection: mean, standard error, degrees of freedom
    overall_spread: Spread | None = None

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

    def thin_collections(self) -> dict[str, ThinData]:
        """The collections with fewer than ``THIN_GRAPHS`` graphs, with the interval's measured coverage."""
        found = {name: thin_data(name, len(c), self.method, self.confidence)
                 for name, c in self.scores.collections.items()}
        return {name: thin for name, thin in found.items() if thin is not None}

    def to_json_dict(self) -> dict:
        spreads = self.spreads or {}
        return {
            "submission": self.scores.name,
            "usage": self.scores.usage,
            "score": self.overall.estimate,
            "ci_low": self.overall.low,
            "ci_high": self.overall.high,
            "confidence": self.confidence,
            "method": self.method,
            "df": self.overall_spread.df if self.overall_spread else None,
            "draws": self.draws,
            "seed": self.seed,
            "collections": {
                name: {"score": ci.estimate, "ci_low": ci.low, "ci_high": ci.high,
                       "graphs": len(self.scores.collections[name]),
                       "metric": COLLECTION_BY_NAME[name].metric,
                       "df": spreads[name].df if name in spreads else None,
                       "thin": _thin_json(name, len(self.scores.collections[name]), self.method,
                                          self.confidence)}
                for name, ci in self.collections.items()
            },
            "thin_graphs": THIN_GRAPHS,
            "tile_best_in_top5": self.tile_best_in_top5,
            "per_graph": self.per_graph(),
        }

    def format(self, worst: int = 10) -> str:
        pct = f"{self.confidence:.0%}"
        head = f"{'collection':<20} {'metric':<14} {'graphs':>6} {'score':>8} {pct + ' interval':>20}"
        lines = [f"{self.scores.name}: {_usage_words(self.scores.usage)}, "
                 f"{_method_words(self.method, self.draws, self.seed)}", head, "-" * len(head)]
        for name, ci in self.collections.items():
            graphs = len(self.scores.collections[name])
            note = "  (1 graph: no spread)" if graphs == 1 else _thin_line(name, graphs, self.method,
                                                                            self.confidence)
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
           confidence: float = DEFAULT_CONFIDENCE, method: str = DEFAULT_METHOD) -> Report:
    """Intervals for one submission's score, per collection and overall (``method``: see
    ``competition.stats.mean_intervals``; ``draws`` and ``seed`` serve the bootstrap methods)."""
    check_bootstrap_args(draws, confidence, method)
    values = {name: c.scores for name, c in scores.collections.items()}
    if not values:
        raise ValueError(f"{scores.name}: no scored graph of usage {scores.usage!r}")
    found, _ = _intervals_of(values, draws=draws, seed=seed, confidence=confidence, method=method)
    collections = {name: _interval(triple) for name, triple in found.collections.items()}
    overall = Interval(scores.score, *(float(x) for x in found.overall[1:]))
    return Report(scores, overall, collections, draws, seed, confidence, method, found.spreads,
                  found.overall_spread)


def intervals(per_collection: Mapping[str, Sequence[float] | np.ndarray], *, draws: int = DEFAULT_DRAWS,
              seed: int = DEFAULT_SEED, confidence: float = DEFAULT_CONFIDENCE,
              method: str = DEFAULT_METHOD) -> tuple[Interval, dict[str, Interval]]:
    """The same intervals for plain per-graph scores (e.g. validation scores): overall, per collection.

    Collections without scores are left out.
    """
    check_bootstrap_args(draws, confidence, method)
    values = {name: np.asarray(v, dtype=np.float64) for name, v in per_collection.items() if len(v)}
    if not values:
        raise ValueError("no per-graph scores to resample")
    found, _ = _intervals_of(values, draws=draws, seed=seed, confidence=confidence, method=method)
    return _interval(found.overall), {name: _interval(t) for name, t in found.collections.items()}


# ---------------------------------------------------------------------------------------------
# compare


@dataclass(frozen=True)
class Difference:
    """B - A with its paired interval, how sure B is better, and the two-sided test of "no difference"."""

    interval: Interval
    p_b_better: float  # t: the t distribution's confidence that B - A > 0; bootstrap: share of draws
    a: float
    b: float
    p_value: float = 1.0  # two-sided: the larger of the interval's test and the sign-flip test
    p_sign_flip: float = 1.0
    beyond_noise: bool = False  # the interval excludes 0 and the sign-flip test rejects, both at the level

    def entry(self) -> dict:
        return {"diff": self.interval.estimate, "ci_low": self.interval.low, "ci_high": self.interval.high,
                "p_b_better": self.p_b_better, "a": self.a, "b": self.b, "p_value": self.p_value,
                "p_sign_flip": self.p_sign_flip, "beyond_noise": self.beyond_noise}


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
    method: str = PERCENTILE

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
        d, level = self.overall, f"{self.confidence:.0%}"
        ci = d.interval
        if self.method == PERCENTILE:  # the 1.0 rule: the interval alone
            if ci.low > 0:
                return f"B is better: the {level} interval of B - A lies above 0"
            if ci.high < 0:
                return f"A is better: the {level} interval of B - A lies below 0"
            return f"within noise: the {level} interval of B - A contains 0"
        tests = f"sign-flip p = {d.p_sign_flip:.3g}"
        if d.beyond_noise:
            side = "above" if ci.low > 0 else "below"
            return (f"{'B' if ci.low > 0 else 'A'} is better: the {level} interval of B - A lies {side} 0 "
                    f"and the sign-flip test agrees ({tests})")
        if ci.low > 0 or ci.high < 0:
            return (f"within noise: the {level} interval of B - A excludes 0 but the exact sign-flip test "
                    f"does not confirm it ({tests})")
        return f"within noise: the {level} interval of B - A contains 0 ({tests})"

    def thin_collections(self) -> dict[str, ThinData]:
        found = {name: thin_data(name, len(c), self.method, self.confidence)
                 for name, c in self.a.collections.items()}
        return {name: thin for name, thin in found.items() if thin is not None}

    def to_json_dict(self, top: int = 20) -> dict:
        return {
            "a": self.a.name,
            "b": self.b.name,
            "usage": self.a.usage,
            **self.overall.entry(),
            "confidence": self.confidence,
            "method": self.method,
            "draws": self.draws,
            "seed": self.seed,
            "verdict": self.verdict(),
            "collections": {name: {**d.entry(), "graphs": len(self.a.collections[name]),
                                   "thin": _thin_json(name, len(self.a.collections[name]), self.method,
                                                      self.confidence)}
                            for name, d in self.collections.items()},
            "thin_graphs": THIN_GRAPHS,
            "graphs_differing_most": self.differing_graphs(top),
        }

    def format(self, top: int = 10) -> str:
        pct = f"{self.confidence:.0%}"
        head = (f"{'collection':<20} {'graphs':>6} {'A':>8} {'B':>8} {'B - A':>8} {pct + ' interval':>20} "
                f"{'P(B better)':>11} {'sign-flip p':>11}")
        lines = [f"A = {self.a.name}", f"B = {self.b.name}",
                 f"{_usage_words(self.a.usage)}, {_method_words(self.method, self.draws, self.seed, True)}",
                 head, "-" * len(head)]

        def line(label: str, graphs: str, d: Difference, note: str = "") -> str:
            mark = "*" if d.beyond_noise else " "
            return (f"{label:<20} {graphs:>6} {d.a:>8.4f} {d.b:>8.4f} {d.interval.estimate:>+8.4f} "
                    f"{_interval_text(d.interval):>20} {d.p_b_better:>11.3f} {d.p_sign_flip:>10.3g}{mark}"
                    f"{note}")

        for name, d in self.collections.items():
            graphs = len(self.a.collections[name])
            lines.append(line(name, str(graphs), d, _thin_line(name, graphs, self.method, self.confidence)))
        lines.append(line("final", "", self.overall))
        lines.append(self.verdict())
        if self.method != PERCENTILE:
            lines.append(f"* beyond noise: the interval excludes 0 and the exact sign-flip test rejects, "
                         f"both at {1 - self.confidence:.0%} two-sided")
            lines.append("P(B better): the t distribution's confidence that B - A > 0 (uniform when A and "
                         "B do not differ)")
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


def _difference(estimate: float, triple: tuple[float, float, float], spread: Spread, p_sign_flip: float,
                method: str, confidence: float, diff_draws: np.ndarray | None, a: float,
                b: float) -> Difference:
    interval = Interval(estimate, float(triple[1]), float(triple[2]))
    if method == PERCENTILE:
        share = _p_better(diff_draws)
        return Difference(interval, share, a, b, min(1.0, 2 * min(share, 1 - share)), p_sign_flip,
                          interval.low > 0 or interval.high < 0)
    p_interval = spread.p_two_sided()
    if spread.se == 0:  # no spread measured: the interval has zero width around the estimate
        p_interval = 1.0 if estimate == 0 else 0.0
    p_value = max(p_interval, p_sign_flip)
    excludes_zero = interval.low > 0 or interval.high < 0
    return Difference(interval, spread.share_above(), a, b, p_value, p_sign_flip,
                      excludes_zero and p_sign_flip < 1 - confidence)


def compare(a: GraphScores, b: GraphScores, *, draws: int = DEFAULT_DRAWS, seed: int = DEFAULT_SEED,
            confidence: float = DEFAULT_CONFIDENCE, method: str = DEFAULT_METHOD) -> Comparison:
    """Paired comparison of B - A: the intervals of the per-graph differences (``method``), the exact
    sign-flip test, and the verdict that needs both (``draws`` and ``seed``: the bootstrap methods'
    draws and the sign-flip test's random patterns where there are too many to enumerate)."""
    check_bootstrap_args(draws, confidence, method)
    if not a.same_graphs(b):
        raise ValueError(f"{a.name} and {b.name} were not scored on the same graphs (same "
                         "solution and usage?)")
    if not a.collections:
        raise ValueError(f"no scored graph of usage {a.usage!r}")
    names = _ordered(list(a.collections))
    diffs = {name: b.collections[name].scores - a.collections[name].scores for name in names}
    found, indices = _intervals_of(diffs, draws=draws, seed=seed, confidence=confidence, method=method)
    p_overall, p_collections = sign_flip_p_values(diffs, draws=draws, seed=seed)
    diff_draws = ({name: diffs[name][indices[name]].mean(axis=1) for name in names}
                  if indices is not None else None)
    collections = {}
    for name in names:
        mean_a = float(np.mean(a.collections[name].scores))
        mean_b = float(np.mean(b.collections[name].scores))
        collections[name] = _difference(
            mean_b - mean_a, found.collections[name], found.spreads[name], p_collections[name], method,
            confidence, diff_draws[name] if diff_draws else None, mean_a, mean_b)
    overall = _difference(b.score - a.score, found.overall, found.overall_spread, p_overall, method,
                          confidence, _overall_draws(diff_draws) if diff_draws else None, a.score, b.score)
    return Comparison(a, b, overall, collections, draws, seed, confidence, method)
