"""Where the data are thin: how often a 95 % interval over few graphs held the truth, as measured.

A collection with fewer than ``THIN_GRAPHS`` graphs gets a note in ``report``'s and ``compare``'s
table and JSON: its number of graphs and the coverage its interval method reached in the
calibration benchmark (``python -m benchmarks.bench_calibration``, BENCHMARKS.md "Calibration"):
random submissions on an embedded competition, whose expected score is known exactly, G graphs
drawn from its test graphs (tile: from its 80 tile graphs; layout: from its 32 layout graphs), 95 %
intervals, 2,000 replicates per figure (binomial standard error about 0.5 points). Layout scores
(Kendall tau) are near-symmetric and the t interval holds 95 % from 3 graphs on; tile scores are
skewed (a point mass at 1, a tail below) and no method reaches 95 % there with few graphs: the
bootstrap-t comes closest (91.7 % at 8 graphs, against 84.0 % for t). ``MEASURED_COVERAGE`` is what
the benchmark printed last (it prints this literal).
"""

from __future__ import annotations

from dataclasses import dataclass

from competition.collections import COLLECTION_BY_NAME

THIN_GRAPHS = 30  # below this many graphs a collection's interval carries a note
MEASURED_CONFIDENCE = 0.95

# method -> task -> graphs -> share of 95 % intervals that held the exact expected score
MEASURED_COVERAGE: dict[str, dict[str, dict[int, float]]] = {
    "t": {"layout": {3: 0.949, 4: 0.959, 6: 0.943, 8: 0.949, 12: 0.950, 17: 0.948, 24: 0.952, 30: 0.955},
          "tile": {3: 0.793, 4: 0.807, 6: 0.823, 8: 0.840, 12: 0.858, 17: 0.888, 24: 0.913, 30: 0.908}},
    "bootstrap-t": {
        "layout": {3: 0.853, 4: 0.949, 6: 0.945, 8: 0.945, 12: 0.946, 17: 0.950, 24: 0.948, 30: 0.954},
        "tile": {3: 0.789, 4: 0.859, 6: 0.899, 8: 0.917, 12: 0.928, 17: 0.940, 24: 0.961, 30: 0.950}},
    "percentile": {
        "layout": {3: 0.762, 4: 0.815, 6: 0.841, 8: 0.882, 12: 0.913, 17: 0.924, 24: 0.927, 30: 0.939},
        "tile": {3: 0.628, 4: 0.686, 6: 0.746, 8: 0.796, 12: 0.839, 17: 0.876, 24: 0.905, 30: 0.902}},
}

__all__ = ["MEASURED_CONFIDENCE", "MEASURED_COVERAGE", "THIN_GRAPHS", "ThinData", "thin_data"]


@dataclass(frozen=True)
class ThinData:
    """A collection with fewer than ``THIN_GRAPHS`` graphs, and what its interval covered when measured."""

    graphs: int
    task: str
    measured_graphs: int | None  # the nearest measured count at or below ``graphs`` (None: none)
    measured_coverage: float | None  # None: not measured for this method and level
    better_method: str | None = None  # a method that came closer to the level there, if any
    better_coverage: float | None = None

    @property
    def text(self) -> str:
        head = f"{self.graphs} graph{'s' if self.graphs != 1 else ''} < {THIN_GRAPHS}"
        if self.measured_coverage is None:
            return (f"{head}: thin data; coverage measured only at {MEASURED_CONFIDENCE:.0%}"
                    if self.measured_graphs is not None
                    else f"{head}: thin data; coverage not measured with so few graphs")
        better = ""
        if self.better_method is not None and self.better_coverage is not None:
            better = f"; {self.better_method} reached {self.better_coverage:.1%}"
        return (f"{head}: measured coverage {self.measured_coverage:.1%} at {self.measured_graphs} "
                f"{self.task} graphs{better}")

    def to_json_dict(self) -> dict:
        return {"graphs": self.graphs, "below": THIN_GRAPHS, "task": self.task,
                "measured_graphs": self.measured_graphs, "measured_coverage": self.measured_coverage,
                "better_method": self.better_method, "better_coverage": self.better_coverage,
                "note": self.text}


def thin_data(collection: str, graphs: int, method: str, confidence: float) -> ThinData | None:
    """The note for a collection of ``graphs`` graphs, or None when it has ``THIN_GRAPHS`` or more."""
    if graphs >= THIN_GRAPHS:
        return None
    task = COLLECTION_BY_NAME[collection].task.name
    table = MEASURED_COVERAGE.get(method, {}).get(task, {})
    below = [g for g in table if g <= graphs]
    if not below:
        return ThinData(graphs, task, None, None)
    nearest = max(below)
    if abs(confidence - MEASURED_CONFIDENCE) > 1e-9:
        return ThinData(graphs, task, nearest, None)
    coverage = table[nearest]
    # Another method whose coverage there came at least 2 points closer to the level is named.
    others = {name: tables[task][nearest] for name, tables in MEASURED_COVERAGE.items()
              if name != method and nearest in tables.get(task, {})}
    best = min(others, key=lambda name: abs(others[name] - MEASURED_CONFIDENCE), default=None)
    gap = abs(coverage - MEASURED_CONFIDENCE)
    if best is not None and abs(others[best] - MEASURED_CONFIDENCE) < gap - 0.02:
        return ThinData(graphs, task, nearest, coverage, best, others[best])
    return ThinData(graphs, task, nearest, coverage)
