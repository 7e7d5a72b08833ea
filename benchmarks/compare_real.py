"""Paired differences between two methods of one real-data run (``python -m benchmarks.compare_real``).

``bench_real`` gives each method's tau on each real graph with an interval of its own. Two methods'
intervals overlap even when one is better in every run, because most of a graph's spread (which
embedded competition a model trained on, which configs a draw put in the test part) is shared by both.
This compares them run by run: for each graph and protocol, NEW - BASE over the runs both made, with a
95 % interval from a two-stage bootstrap (the units resampled, then the runs within each; a unit is what
its runs share: the embedded competition in transfer, the draw of configs within a graph, the draw of
train / valid splits across programs), and in how many units NEW is ahead. For each layout collection
with two graphs or more, the mean difference over its graphs, the graphs resampled (as ``tpugraphs
report`` resamples graphs).

    python -m benchmarks.compare_real data/bench-real/results.json gnn-live-weights gnn
    python -m benchmarks.bench_real --methods gnn,gnn-live-weights --compare gnn-live-weights:gnn

Runs pair by position, so both methods must come from the same run of ``bench_real`` (same seeds, draws
and competitions): a graph whose runs or units differ between the two is named and left out.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.bench_real import DRAWS, few_graphs_note, mean_and_interval
from competition.collections import COLLECTION_BY_NAME
from competition.stats import intervals
from competition.stats.bootstrap import Interval, percentile_interval

CONFIDENCE = 0.95


class CompareError(ValueError):
    """A comparison that cannot be made, in words for the command line."""


@dataclass(frozen=True)
class Paired:
    """NEW - BASE on one graph in one protocol."""

    protocol: str
    graph: str
    base: float  # mean over the runs
    new: float
    difference: Interval
    units: int  # how many units the runs fall into
    unit: str  # what a unit is: "competition", "draw", or "run" (the runs themselves)
    ahead: int  # units where NEW's mean is above BASE's


def unit_groups(units: Sequence[str] | None, runs: int) -> tuple[list[np.ndarray], str]:
    """The run positions of each unit, and the unit's word; every run its own unit when the runs carry
    no units (results written before they did), fall into one unit, or into units of unequal size."""
    if units and len(units) == runs:
        labels = list(dict.fromkeys(units))
        groups = [np.flatnonzero(np.asarray(units) == label) for label in labels]
        if len(groups) > 1 and len({len(g) for g in groups}) == 1:
            return groups, labels[0].rsplit(" ", 1)[0]
    return [np.array([k]) for k in range(runs)], "run"


def paired_difference(base: Sequence[float], new: Sequence[float], groups: Sequence[np.ndarray], *,
                      draws: int = DRAWS, seed: int = 0, confidence: float = CONFIDENCE) -> Interval:
    """Mean of NEW - BASE over the runs, and its interval: each bootstrap draw picks as many units as
    there are (with replacement), then within each picked unit as many of its runs (with replacement).
    ``groups`` must be of equal size (``unit_groups`` makes them so)."""
    diff = np.asarray(new, dtype=np.float64) - np.asarray(base, dtype=np.float64)
    by_unit = np.stack([diff[g] for g in groups])  # (units, runs per unit)
    count, size = by_unit.shape
    rng = np.random.default_rng(seed)
    picked = rng.integers(0, count, size=(draws, count))
    within = rng.integers(0, size, size=(draws, count, size))
    means = by_unit[picked[..., None], within].mean(axis=(1, 2))
    return percentile_interval(float(diff.mean()), means, confidence)


def compare_cells(cells: Iterable[dict], base: str, new: str, *, protocols: Sequence[str] | None = None,
                  draws: int = DRAWS, seed: int = 0) -> tuple[list[Paired], list[str]]:
    """Every (protocol, graph) both methods were measured on, paired; and a note for each one left out."""
    cells = list(cells)
    methods = list(dict.fromkeys(c["method"] for c in cells))
    for name in (base, new):
        if name not in methods:
            held = ", ".join(methods) or "none"
            raise CompareError(f"no method {name!r} in these results (they hold {held})")
    if base == new:
        raise CompareError(f"both sides are {base!r}: name two different methods")
    found = {(c["protocol"], c["graph"], c["method"]): c for c in cells}
    pairs: list[Paired] = []
    notes: list[str] = []
    keys = dict.fromkeys((c["protocol"], c["graph"]) for c in cells)
    for protocol, graph in keys:
        if protocols is not None and protocol not in protocols:
            continue
        a, b = found.get((protocol, graph, base)), found.get((protocol, graph, new))
        if a is None and b is None:  # measured for other methods only
            continue
        if a is None or b is None:
            notes.append(f"{protocol} {graph}: only {(a or b)['method']} was measured there")
            continue
        if len(a["runs"]) != len(b["runs"]) or a.get("units") != b.get("units"):
            notes.append(f"{protocol} {graph}: not paired, {base} has {len(a['runs'])} runs and {new} "
                         f"{len(b['runs'])}, or their units differ (not the same bench_real run?)")
            continue
        groups, unit = unit_groups(a.get("units"), len(a["runs"]))
        interval = paired_difference(a["runs"], b["runs"], groups, draws=draws, seed=seed)
        diff = np.asarray(b["runs"], dtype=np.float64) - np.asarray(a["runs"], dtype=np.float64)
        pairs.append(Paired(protocol, graph, float(np.mean(a["runs"])), float(np.mean(b["runs"])), interval,
                            len(groups), unit, int(sum(diff[g].mean() > 0 for g in groups))))
    return pairs, notes


def collection_of(graph: str) -> str | None:
    """The layout collection a bench_real graph name belongs to (``layout:xla:random:valid/x`` ->
    ``layout:xla:random``); None for a tile cell, which already averages kernels."""
    name = ":".join(graph.split("/", 1)[0].split(":")[:3])
    return name if name in COLLECTION_BY_NAME and name.startswith("layout:") else None


def collection_rows(pairs: Iterable[Paired], protocol: str) -> dict[str, Interval]:
    """Per layout collection with two graphs or more: the mean difference over its graphs, the graphs
    resampled."""
    by_collection: dict[str, list[float]] = {}
    for p in pairs:
        if p.protocol == protocol and (name := collection_of(p.graph)):
            by_collection.setdefault(name, []).append(p.difference.estimate)
    kept = {name: values for name, values in by_collection.items() if len(values) >= 2}
    if not kept:
        return {}
    return intervals(kept, draws=DRAWS, seed=0)[1]


def _plural(unit: str, count: int) -> str:
    return unit if count == 1 else f"{unit}s"


def report(pairs: Sequence[Paired], notes: Sequence[str], base: str, new: str) -> str:
    """Markdown: per protocol a table of graphs, then the collection rows, then the notes."""
    lines: list[str] = []
    for protocol in dict.fromkeys(p.protocol for p in pairs):
        rows = [p for p in pairs if p.protocol == protocol]
        lines += [f"### {protocol}: {new} - {base}, paired run by run", "",
                  f"| real graph | {base} | {new} | {new} - {base} [95 %] | {new} ahead in |",
                  "|---|---|---|---|---|"]
        for p in rows:
            d = mean_and_interval(p.difference.estimate, p.difference.low, p.difference.high)
            lines.append(f"| {p.graph} | {p.base:+.3f} | {p.new:+.3f} | {d} | {p.ahead} of {p.units} "
                         f"{_plural(p.unit, p.units)} |")
        summary = collection_rows(rows, protocol)
        if summary:
            counts = {name: sum(collection_of(p.graph) == name for p in rows) for name in summary}
            lines += ["", f"| collection (mean over graphs) | graphs | {new} - {base} [95 %] |",
                      "|---|---|---|"]
            lines += [f"| {name} | {counts[name]} | {mean_and_interval(ci.estimate, ci.low, ci.high)} |"
                      for name, ci in summary.items()]
            lines += few_graphs_note(counts)
        lines.append("")
    if not pairs:
        lines.append(f"(no graph where both {base} and {new} were measured)")
    lines += [f"left out: {note}" for note in notes]
    return "\n".join(lines).rstrip()


def read_cells(path: Path) -> list[dict]:
    """The cells of a bench_real JSON; CompareError naming the file when it is not one."""
    try:
        results = json.loads(path.read_text())
    except FileNotFoundError:
        raise CompareError(f"{path}: no such file (bench_real writes data/bench-real/results.json by "
                           "default, or where --out says)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CompareError(f"{path}: not a bench_real results file ({exc})") from None
    cells = results.get("cells") if isinstance(results, dict) else None
    if not isinstance(cells, list) or not all(isinstance(c, dict) and {"graph", "method", "protocol", "runs"}
                                              <= c.keys() for c in cells):
        raise CompareError(f"{path}: not a bench_real results file (no list of cells with graph, method, "
                           "protocol and runs)")
    return cells


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compare_real",
                                     description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("results", type=Path, help="a bench_real JSON (its --out)")
    parser.add_argument("base", help="the method compared against, e.g. gnn-live-weights")
    parser.add_argument("new", help="the method compared, e.g. gnn")
    parser.add_argument("--protocols", default=None,
                        help="comma-separated (default: every protocol measured)")
    args = parser.parse_args(argv)
    protocols = [p for p in args.protocols.split(",") if p] if args.protocols else None
    try:
        pairs, notes = compare_cells(read_cells(args.results), args.base, args.new, protocols=protocols)
    except CompareError as exc:
        print(f"compare_real: {exc}", file=sys.stderr)
        return 2
    print(report(pairs, notes, args.base, args.new))
    return 0


if __name__ == "__main__":
    sys.exit(main())
