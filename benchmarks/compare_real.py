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

``--statistic beyond-noise`` pairs the same runs scored on only the pairs of configs whose runtimes differ
by more than the graph's measurement noise (``competition.stats.noise``; bench_real records it for every
layout graph with configs measured more than once), where the official tau also counts pairs that
differ by less than a config's own repeated measurements.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.real_tables import DRAWS, PROTOCOLS, few_graphs_note, mean_and_interval
from competition.collections import COLLECTION_BY_NAME
from competition.stats.bootstrap import Interval, percentile_interval

CONFIDENCE = 0.95
FEW_UNITS = 10  # fewer units, and the table says its intervals are too narrow
EXAMPLE = ("e.g. python -m benchmarks.compare_real data/bench-real/results.json gnn-live-weights gnn "
           '(docs/statistics.md, "Two methods on real graphs")')
NAMES = ("graph", "method", "protocol")  # what a results cell names, beside its runs' scores
STATISTICS = {"tau": "the official tau", "beyond-noise": "pairs apart by more than the measurement noise"}


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
    unit_count: int  # how many units the runs fall into
    unit_word: str  # what a unit is: "competition", "draw", or "run" (the runs themselves)
    ahead: int  # units where NEW's mean is above BASE's
    level: int  # units where the two are equal (e.g. a setting that chose to change nothing)
    diffs: tuple[float, ...] = ()  # NEW - BASE, run by run
    units: tuple[str, ...] | None = None  # each run's unit, as the results name them

    @property
    def behind(self) -> int:
        return self.unit_count - self.ahead - self.level


def unit_groups(units: Sequence[str] | None, runs: int) -> tuple[list[np.ndarray], str]:
    """The run positions of each unit (in order of first appearance) and the unit's word; every run its
    own unit when the runs carry no units."""
    if units and len(units) == runs:
        labels = list(dict.fromkeys(units))
        return [np.flatnonzero(np.asarray(units) == label) for label in labels], labels[0].rsplit(" ", 1)[0]
    return [np.array([k]) for k in range(runs)], "run"


def paired_difference(base: Sequence[float], new: Sequence[float], groups: Sequence[np.ndarray], *,
                      draws: int = DRAWS, seed: int = 0, confidence: float = CONFIDENCE) -> Interval:
    """Mean of NEW - BASE over the runs, and its interval: each bootstrap draw picks as many units as
    there are (with replacement), then as many runs of each picked unit as it has (with replacement),
    and averages the runs picked."""
    diff = np.asarray(new, dtype=np.float64) - np.asarray(base, dtype=np.float64)
    means = _two_stage_means(diff[None], groups, draws, np.random.default_rng(seed))[:, 0]
    return percentile_interval(float(diff.mean()), means, confidence)


def _two_stage_means(rows: np.ndarray, groups: Sequence[np.ndarray], draws: int,
                     rng: np.random.Generator) -> np.ndarray:
    """(draws, len(rows)): each row's mean over the runs of one two-stage resample (units, then runs
    within them), the same resample for every row (rows whose runs share their units)."""
    sizes = np.array([len(g) for g in groups])
    padded = np.zeros((len(rows), len(groups), sizes.max()))
    for k, g in enumerate(groups):
        padded[:, k, : len(g)] = rows[:, g]
    picked = rng.integers(0, len(groups), size=(draws, len(groups)))
    size = sizes[picked][..., None]  # (draws, units, 1)
    within = np.floor(rng.random((draws, len(groups), sizes.max())) * size).astype(np.int64)
    used = np.arange(sizes.max()) < size  # a unit of fewer runs fills only its own places
    values = padded[:, picked[..., None], within] * used  # (rows, draws, units, places)
    return (values.sum(axis=(2, 3)) / used.sum(axis=(1, 2))).T


def collection_difference(rows: Sequence[Paired], *, draws: int = DRAWS, seed: int = 0,
                          confidence: float = CONFIDENCE) -> Interval:
    """The mean over graphs of NEW - BASE, and its interval with both levels resampled: the graphs, and
    the units and runs behind each. In transfer the same competitions trained the models that ranked
    every graph, so one draw of competitions serves all the graphs and the spread they share stays in;
    within a graph each graph's draws split its own configs, so each graph's units are drawn on their
    own (across programs too: a draw's splits differ from fold to fold)."""
    rng = np.random.default_rng(seed)
    picked = rng.integers(0, len(rows), size=(draws, len(rows)))
    first = rows[0]
    if first.protocol == "transfer" and first.units and all(r.units == first.units for r in rows):
        groups, _ = unit_groups(first.units, len(first.diffs))
        per_graph = _two_stage_means(np.array([r.diffs for r in rows]), groups, draws, rng)
    else:
        per_graph = np.stack([_two_stage_means(np.array([r.diffs]), unit_groups(r.units, len(r.diffs))[0],
                                               draws, rng)[:, 0] for r in rows], axis=1)
    means = np.take_along_axis(per_graph, picked, axis=1).mean(axis=1)
    return percentile_interval(float(np.mean([np.mean(r.diffs) for r in rows])), means, confidence)


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
    unknown = sorted(set(protocols or ()) - set(PROTOCOLS))
    if unknown:
        raise CompareError(f"no protocol {', '.join(map(repr, unknown))} (bench_real's are "
                           f"{', '.join(PROTOCOLS)})")
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
        groups, word = unit_groups(a.get("units"), len(a["runs"]))
        interval = paired_difference(a["runs"], b["runs"], groups, draws=draws, seed=seed)
        diff = np.asarray(b["runs"], dtype=np.float64) - np.asarray(a["runs"], dtype=np.float64)
        per_unit = np.array([diff[g].mean() for g in groups])
        units = tuple(a["units"]) if a.get("units") else None
        pairs.append(Paired(protocol, graph, float(np.mean(a["runs"])), float(np.mean(b["runs"])), interval,
                            len(groups), word, int((per_unit > 0).sum()), int((per_unit == 0).sum()),
                            tuple(float(d) for d in diff), units))
    return pairs, notes


def statistic_cells(cells: Iterable[dict], statistic: str) -> tuple[list[dict], list[str]]:
    """The cells with ``runs`` of ``statistic`` (``STATISTICS``), and a note for each graph left out.

    ``beyond-noise``: a cell's runs scored on the pairs beyond its graph's measurement noise; a cell
    without them (a tile group, a graph whose configs were each measured once, results written before
    bench_real recorded them) or with a run that had no such pair is left out."""
    if statistic not in STATISTICS:
        raise CompareError(f"no statistic {statistic!r} (expected one of {', '.join(STATISTICS)})")
    cells = list(cells)
    if statistic == "tau":
        return cells, []
    if cells and not any("beyond_noise" in cell for cell in cells):
        raise CompareError(f"no cell carries scores on the {STATISTICS[statistic]} (results written before "
                           "bench_real recorded them, or no graph with configs measured more than once); run "
                           "bench_real again, or compare the official tau")
    kept, skipped = [], {}
    for cell in cells:
        runs = (cell.get("beyond_noise") or {}).get("runs")
        if isinstance(runs, list) and runs and not any(r != r for r in runs):  # r != r: NaN
            kept.append({**cell, "runs": runs})
        elif runs is not None:
            skipped[(cell["protocol"], cell["graph"])] = "a run had no pair of configs beyond the noise"
        else:
            skipped[(cell["protocol"], cell["graph"])] = (
                "a tile group, scored by its own metric" if cell["graph"].startswith("tile:")
                else "its measurement noise is not known (no config measured more than once)")
    return kept, [f"{protocol} {graph}: {why}" for (protocol, graph), why in skipped.items()]


def compare_statistic(cells: Iterable[dict], base: str, new: str, statistic: str, *,
                      protocols: Sequence[str] | None = None) -> tuple[list[Paired], list[str]]:
    """``compare_cells`` on the runs of ``statistic``, with a note for each graph that statistic leaves
    out; a CompareError says which statistic could not be compared, and why, naming those graphs."""
    scored, skipped = statistic_cells(cells, statistic)
    skipped = [n for n in skipped if protocols is None or n.split()[0] in protocols]
    try:
        pairs, notes = compare_cells(scored, base, new, protocols=protocols)
    except CompareError as exc:
        if statistic == "tau":
            raise
        left = f" (left out: {'; '.join(skipped)})" if skipped else ""
        raise CompareError(f"on the {STATISTICS[statistic]}: {exc}{left}") from None
    return pairs, notes + skipped


def collection_of(graph: str) -> str | None:
    """The layout collection a bench_real graph name belongs to (``layout:xla:random:valid/x`` ->
    ``layout:xla:random``); None for a tile cell, which already averages kernels."""
    name = ":".join(graph.split("/", 1)[0].split(":")[:3])
    return name if name in COLLECTION_BY_NAME and name.startswith("layout:") else None


def collection_rows(pairs: Iterable[Paired], protocol: str) -> dict[str, Interval]:
    """Per layout collection with two graphs or more: the mean difference over its graphs
    (``collection_difference``: graphs, units and runs resampled)."""
    by_collection: dict[str, list[Paired]] = {}
    for p in pairs:
        if p.protocol == protocol and (name := collection_of(p.graph)):
            by_collection.setdefault(name, []).append(p)
    return {name: collection_difference(rows) for name, rows in by_collection.items() if len(rows) >= 2}


def _plural(unit: str, count: int) -> str:
    return unit if count == 1 else f"{unit}s"


def few_units_note(rows: Sequence[Paired]) -> list[str]:
    """The caption under a table whose intervals rest on too little: runs standing for units (results
    without units), one unit (nothing but the method seeds resampled), or few units (a percentile
    bootstrap over n units holds the truth too rarely when n is small)."""
    notes = []
    word = rows[0].unit_word
    if word == "run":
        notes.append("the results name no units, so each run is resampled as if independent: seeds trained "
                     "on one competition or draw count as several, and the interval is too narrow")
    elif any(p.unit_count == 1 for p in rows):
        notes.append(f"one {word}: its interval holds the method seeds' spread, nothing more")
    few = sorted({p.unit_count for p in rows if 1 < p.unit_count < FEW_UNITS})
    if few and word != "run":
        notes.append(f"{' or '.join(map(str, few))} {word}s: a bootstrap over fewer than {FEW_UNITS} units "
                     "is too narrow (in a simulation a 95 % interval held the truth about 3 times in 4 at 3 "
                     "units, 9 in 10 at 10); read it beside the counts")
    return [f"\n({note})" for note in notes]


def report(pairs: Sequence[Paired], notes: Sequence[str], base: str, new: str, *,
           statistic: str = "tau") -> str:
    """Markdown: per protocol a table of graphs, then the collection rows, then the notes."""
    lines: list[str] = []
    on = "" if statistic == "tau" else f", on the {STATISTICS[statistic]}"
    for protocol in dict.fromkeys(p.protocol for p in pairs):
        rows = [p for p in pairs if p.protocol == protocol]
        lines += [f"### {protocol}: {new} - {base}, paired run by run{on}", "",
                  f"| real graph | {base} | {new} | {new} - {base} [95 %] | {new} ahead / level / behind |",
                  "|---|---|---|---|---|"]
        for p in rows:
            d = mean_and_interval(p.difference.estimate, p.difference.low, p.difference.high)
            lines.append(f"| {p.graph} | {p.base:+.3f} | {p.new:+.3f} | {d} | {p.ahead} / {p.level} / "
                         f"{p.behind} {_plural(p.unit_word, p.unit_count)} |")
        lines += few_units_note(rows)
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
    """The cells of a bench_real JSON, each with the units of its runs (rebuilt from the run's seeds,
    competitions and draws for results written before cells carried them); CompareError naming the
    file when it is not one."""
    try:
        results = json.loads(path.read_text())
    except FileNotFoundError:
        raise CompareError(f"{path}: no such file (bench_real writes data/bench-real/results.json by "
                           "default, or where --out says)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CompareError(f"{path}: not a bench_real results file ({exc})") from None
    cells = results.get("cells") if isinstance(results, dict) else None
    if not isinstance(cells, list) or not all(_is_cell(c) for c in cells):
        raise CompareError(f"{path}: not a bench_real results file (no list of cells, each with a graph, "
                           "method and protocol and its runs' scores)")
    for cell in cells:
        if not cell.get("units"):
            cell["units"] = _former_units(results, cell)
    return cells


def _is_cell(cell: object) -> bool:
    if not isinstance(cell, dict) or not all(isinstance(cell.get(k), str) for k in NAMES):
        return False
    runs = cell.get("runs")
    return isinstance(runs, list) and all(isinstance(r, int | float) and type(r) is not bool for r in runs)


def _former_units(results: dict, cell: dict) -> list[str] | None:
    """The units of a cell written before cells carried them, from the order bench_real ran in
    (competition, then method seed; draw, then method seed); None when the counts do not fit."""
    try:
        seeds = len(results["seeds"])
        if cell["protocol"] == "transfer":
            outer = [f"competition {s}" for s in str(results["synth_seeds"]).split(",") if s]
        else:
            outer = [f"draw {d}" for d in range(int(results["draws"]))]
    except (KeyError, TypeError, ValueError):
        return None
    units = [u for u in outer for _ in range(seeds)]
    return units if len(units) == len(cell["runs"]) else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compare_real",
                                     description=(__doc__ or "").split("\n\n")[0],
                                     epilog=EXAMPLE)
    parser.add_argument("results", type=Path, help="a bench_real JSON (its --out)")
    parser.add_argument("base", help="the method compared against, e.g. gnn-live-weights")
    parser.add_argument("new", help="the method compared, e.g. gnn")
    parser.add_argument("--protocols", default=None,
                        help="comma-separated (default: every protocol measured)")
    parser.add_argument("--statistic", choices=list(STATISTICS), default="tau",
                        help="what the runs are scored by: the official tau (default), or beyond-noise: only "
                             "the pairs of configs whose runtimes differ by more than the graph's "
                             "measurement noise")
    args = parser.parse_args(argv)
    protocols = [p for p in args.protocols.split(",") if p] if args.protocols else None
    try:
        pairs, notes = compare_statistic(read_cells(args.results), args.base, args.new, args.statistic,
                                         protocols=protocols)
    except CompareError as exc:
        print(f"compare_real: {exc}", file=sys.stderr)
        return 2
    print(report(pairs, notes, args.base, args.new, statistic=args.statistic))
    return 0


if __name__ == "__main__":
    sys.exit(main())
