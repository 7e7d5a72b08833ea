"""What ``tpugraphs solve`` reports: one ``CollectionReport`` per collection and the ``SolveReport`` of a
run, printed as a table (``format_table``) or written as JSON (``to_json_dict``).

The validation intervals are bootstrap intervals over the valid graphs (``competition.stats.intervals``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from competition.collections import COLLECTIONS
from competition.stats import intervals
from solutions.methods.base import FitOptions

KAGGLE_ROWS = 894
INTERVAL_DRAWS = 2000  # bootstrap draws behind the validation intervals
INTERVAL_CONFIDENCE = 0.95
BLEND = "rank-mean"  # how seed ensembles blend (competition.stats.ensemble)


@dataclass
class CollectionReport:
    """What ``solve`` did on one collection."""

    collection: str
    metric: str  # "tile_slowdown" or "kendall_tau"
    validation_score: float  # mean official per-graph score over the valid split
    valid_graphs: int
    test_graphs: int
    fit_seconds: float  # 0.0 with predict_only (the model was loaded)
    validate_seconds: float  # predicting and scoring the valid split
    predict_seconds: float  # predicting the test split
    peak_memory_mb: float  # peak resident memory of the process while this collection ran
    model_path: Path | None  # where the fitted model was saved / loaded from
    details: dict = field(default_factory=dict)  # method-specific facts (``method.summary()`` if it has one)
    # Bootstrap interval of validation_score over the valid graphs (see SolveReport.add_intervals).
    validation_ci_low: float = math.nan
    validation_ci_high: float = math.nan
    valid_graph_scores: list[float] = field(default_factory=list, repr=False)  # per graph, split order
    # Seed ensembles: each seed's own validation score (str(seed) -> score); empty for a single model,
    # whose validation_score is its own. With seeds, validation_score is the blend's.
    seed_validation_scores: dict[str, float] = field(default_factory=dict)


@dataclass
class SolveReport:
    """What ``solve`` did: one ``CollectionReport`` per collection and the submission it wrote."""

    method: str
    submission: Path
    rows: int
    collections: list[CollectionReport]
    options: FitOptions
    predict_only: bool
    model_dir: Path
    seconds: float  # wall time of the whole run
    process_peak_memory_mb: float  # peak resident memory of the process since it started (getrusage)
    validation_ci_low: float = math.nan  # bootstrap interval of validation_score (add_intervals)
    validation_ci_high: float = math.nan
    interval_draws: int = INTERVAL_DRAWS
    interval_confidence: float = INTERVAL_CONFIDENCE
    world_size: int = 1  # training processes (torchrun); 1 without torch.distributed
    seeds: list[int] = field(default_factory=list)  # the seeds blended; [options.seed] for a single model

    def add_intervals(self, *, draws: int = INTERVAL_DRAWS, seed: int = 0,
                      confidence: float = INTERVAL_CONFIDENCE) -> None:
        """Bootstrap intervals over the valid graphs, per collection and for the mean of collections."""
        scored = {c.collection: c.valid_graph_scores for c in self.collections if c.valid_graph_scores}
        if not scored:
            return
        overall, per_collection = intervals(scored, draws=draws, seed=seed, confidence=confidence)
        for c in self.collections:
            if c.collection in per_collection:
                c.validation_ci_low = per_collection[c.collection].low
                c.validation_ci_high = per_collection[c.collection].high
        if len(scored) == len(self.collections):  # an overall interval only when every mean is known
            self.validation_ci_low, self.validation_ci_high = overall.low, overall.high
        self.interval_draws, self.interval_confidence = draws, confidence

    @property
    def complete(self) -> bool:
        """Whether the submission covers all five collections (a full Kaggle submission)."""
        return {c.collection for c in self.collections} == {c.name for c in COLLECTIONS}

    @property
    def validation_score(self) -> float:
        """Unweighted mean of the collection scores (the final score when ``complete``)."""
        return float(np.mean([c.validation_score for c in self.collections])) if self.collections else 0.0

    def format_table(self) -> str:
        """The per-collection table ``tpugraphs solve`` and ``make demo`` print."""
        interval = f"{self.interval_confidence:.0%} interval"
        head = (f"{'collection':<20} {'metric':<14} {'valid':>7} {interval:>18} {'graphs':>6} {'fit s':>7} "
                f"{'predict s':>9} {'peak MB':>8}")
        lines = [head, "-" * len(head)]
        for c in self.collections:
            lines.append(
                f"{c.collection:<20} {c.metric:<14} {c.validation_score:>7.4f} "
                f"{_interval_cell(c.validation_ci_low, c.validation_ci_high):>18} {c.valid_graphs:>6} "
                f"{c.fit_seconds:>7.1f} {c.validate_seconds + c.predict_seconds:>9.1f} "
                f"{c.peak_memory_mb:>8.0f}"
            )
        label = ("final (mean of the five)" if self.complete
                 else f"mean of {len(self.collections)} collection(s)")
        lines.append(f"{label:<35} {self.validation_score:>7.4f} "
                     f"{_interval_cell(self.validation_ci_low, self.validation_ci_high):>18}")
        lines.append(f"{self.method}: {self.rows} rows written to {self.submission} in {self.seconds:.1f} s "
                     "(validation scores on the valid split; peak memory "
                     f"{self.process_peak_memory_mb:.0f} MB)")
        lines += [f"{c.collection}: seeds " + ", ".join(f"{seed} {score:.4f}" for seed, score in
                                                    c.seed_validation_scores.items())
                  + f"; mean {np.mean(list(c.seed_validation_scores.values())):.4f}; "
                    f"{BLEND} blend {c.validation_score:.4f}"
                  for c in self.collections if c.seed_validation_scores]
        lines += [f"{c.collection}: {c.details['selection']['note']}."
                  for c in self.collections if _selection_is_notable(c.details)]
        if not self.complete:
            lines.append(self.partial_note())
        return "\n".join(lines)

    def partial_note(self) -> str:
        names = ", ".join(c.collection for c in self.collections)
        return (f"note: {self.submission} covers only {names}; it is not a full Kaggle submission "
                f"(that needs the rows of all five collections, {KAGGLE_ROWS} on Kaggle)")

    def to_json_dict(self) -> dict:
        def plain(value):
            if isinstance(value, Path):
                return str(value)
            if isinstance(value, dict):
                return {k: plain(v) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return [plain(v) for v in value]
            return value

        return plain({
            "method": self.method,
            "submission": self.submission,
            "rows": self.rows,
            "complete": self.complete,
            "validation_score": self.validation_score,
            # Bootstrap over the valid graphs (resampled within each collection); null when unknown.
            "validation_ci_low": _finite_or_none(self.validation_ci_low),
            "validation_ci_high": _finite_or_none(self.validation_ci_high),
            "interval_draws": self.interval_draws,
            "interval_confidence": self.interval_confidence,
            "seconds": self.seconds,
            "process_peak_memory_mb": self.process_peak_memory_mb,
            "predict_only": self.predict_only,
            "world_size": self.world_size,
            "model_dir": self.model_dir,
            "options": asdict(self.options),
            "seeds": self.seeds,
            "collections": [{**asdict(c), "validation_ci_low": _finite_or_none(c.validation_ci_low),
                             "validation_ci_high": _finite_or_none(c.validation_ci_high)}
                            for c in self.collections],
        })


def _selection_is_notable(details: dict) -> bool:
    """Whether a method's model selection really fell back to cross-validation (``methods.selection``;
    ``cv_folds`` > 0: some folds were trained): the table then says so, once, under the scores."""
    selection = details.get("selection") if isinstance(details, dict) else None
    return (isinstance(selection, dict) and "note" in selection
            and selection.get("mode") == "cross-validation"
            and int(selection.get("cv_folds") or 0) > 0)


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _interval_cell(low: float, high: float) -> str:
    return f"[{low:.4f}, {high:.4f}]" if math.isfinite(low) and math.isfinite(high) else "-"
