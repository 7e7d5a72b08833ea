"""Do the 95 % intervals cover 95 %, and is `compare` wrong at most 5 % of the time? (issue 64)

On an embedded competition (``tpugraphs synth --scale small --seed 11``: 80 tile and 4 x 8 layout test
graphs), with the kit's own functions (``competition.stats.intervals`` and ``compare``, what ``report``
and ``compare`` run), every interval method side by side (``percentile``: the 1.0 default; ``t``: the
default; ``bootstrap-t``):

1. **Coverage.** ``--submissions`` random submissions (a random order of every graph's configs), whose
   expected score is known exactly: 0 on every layout graph (a random order is as likely reversed),
   and on a tile graph ``2 - E[min of 5 random configs' runtime] / min runtime`` from the order
   statistics. Per collection, the 4 layout collections pooled, and the final score: the share of
   intervals that hold the expected score. Then the same with G graphs drawn at random (with
   replacement) from the 80 tile graphs or the 32 layout graphs, G from 3 to 30: the figures
   ``competition.stats.calibration`` quotes where a collection has fewer than 30 graphs.
2. **False positives.** Pairs of submissions that differ only by chance: two random submissions, and
   two independent 10 % perturbations of the heuristic's submission (each listed position swapped with
   a random config with probability 0.1). The share of pairs called different ("beyond noise";
   1.0: the interval excludes 0), per collection and final, and the share with P(B better) below
   0.025 or above 0.975 (a calibrated probability: 5 %). Alongside, each half of the new rule alone
   (the t interval; the exact sign-flip test).
3. **Power.** A perturbed heuristic against a random submission: the share of pairs the rule tells
   apart (it should stay near 100 %).

Every rate comes with its 95 % Clopper-Pearson interval. The run fails (exit 1) if the t interval's
layout coverage at 8 graphs leaves 93-97 % or the new rule's false-positive rate exceeds 5 % beyond
its binomial noise (the lower end of its interval above 5 %).

usage: python -m benchmarks.bench_calibration [--submissions 600] [--pairs 300] [--draws 2000]
       [--data DIR] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
from scipy import stats as scipy_stats

from competition.collections import COLLECTIONS
from competition.scoring import Solution, load_solution
from competition.stats import GraphScores, compare, intervals, per_graph_scores
from competition.stats.mean_intervals import INTERVAL_METHODS
from competition.submission import validate_submission

ROOT = Path(__file__).resolve().parents[1]
SCALE, SEED = "small", 11
THIN_SIZES = (3, 4, 6, 8, 12, 17, 24, 30)
PERTURB_SHARE = 0.1
CONFIDENCE = 0.95
TILE = "tile:xla"
LAYOUTS = tuple(c.name for c in COLLECTIONS if c.task.name == "layout")
LEGACY = "percentile"

Rows = dict[str, np.ndarray]


# ---------------------------------------------------------------------------------------------
# Submissions and their exact expectations


def random_rows(solution: Solution, rng: np.random.Generator) -> Rows:
    """A random submission: every graph's configs in a random order (tile: the first five listed)."""
    rows: Rows = {}
    for labels in solution.labels.values():
        k = labels.collection.task.top_k
        for row_id, n in zip(labels.ids, labels.config_counts, strict=True):
            order = rng.permutation(int(n))
            rows[row_id] = order[:k] if k else order
    return rows


def expected_random_scores(solution: Solution) -> dict[str, np.ndarray]:
    """Each scored graph's exact expected score under a random submission, per collection.

    Layout: 0 (each pair of configs is as likely ordered either way). Tile (top k listed):
    ``2 - E[min y over k random configs] / min y`` with ``y = runtime / normalizer``; the j-th smallest
    (j = 1..n) is the minimum with probability ``C(n - j, k - 1) / C(n, k)``.
    """
    out = {}
    for name, labels in solution.labels.items():
        keep = (labels.usage == 0) | (labels.usage == 1)  # Public, Private
        k = labels.collection.task.top_k
        if not k:
            out[name] = np.zeros(int(keep.sum()))
            continue
        values = []
        for g in np.flatnonzero(keep):
            part = slice(labels.offsets[g], labels.offsets[g + 1])
            y = np.sort(labels.runtimes[part] / labels.normalizers[part])
            n = y.size
            if n <= k:
                values.append(1.0)
                continue
            j = np.arange(1, n + 1, dtype=np.float64)
            # C(n - j, k - 1) / C(n, k) as a product of ratios (no overflow)
            weight = np.ones(n) * k / n
            for i in range(1, k):
                weight *= np.clip(n - j - (i - 1), 0, None) / (n - i)
            values.append(2.0 - float(np.dot(weight, y)) / y[0])
        out[name] = np.array(values)
    return out


def perturbed_rows(base: Rows, solution: Solution, rng: np.random.Generator,
                   share: float = PERTURB_SHARE) -> Rows:
    """``base`` with each listed position, with probability ``share``, swapped with a random config
    of its graph (a listed one: the two trade places; an unlisted one: it takes the place)."""
    counts = {row_id: int(n) for labels in solution.labels.values()
              for row_id, n in zip(labels.ids, labels.config_counts, strict=True)}
    rows: Rows = {}
    for row_id, listed in base.items():
        listed = np.array(listed, copy=True)
        n = counts[row_id]
        full = np.full(n, -1)
        full[listed] = np.arange(listed.size)  # position of each listed config
        for position in np.flatnonzero(rng.random(listed.size) < share):
            other = int(rng.integers(n))
            where = full[other]
            current = listed[position]
            if where >= 0:
                listed[position], listed[where] = other, current
                full[other], full[current] = position, where
            else:
                listed[position] = other
                full[other], full[current] = position, -1
        rows[row_id] = listed
    return rows


def score_matrix(rows: list[Rows], solution: Solution) -> dict[str, np.ndarray]:
    """``(submissions, G_c)`` official per-graph scores per collection (Public + Private graphs)."""
    scored = [per_graph_scores(r, solution) for r in rows]
    return {name: np.stack([s.collections[name].scores for s in scored]) for name in scored[0].collections}


def heuristic_rows(public: Path, solution: Solution, workdir: Path) -> Rows:
    """The heuristic's submission for the test graphs (``tpugraphs solve --method heuristic``)."""
    out = workdir / "heuristic.csv"
    subprocess.run([sys.executable, "-m", "competition.cli", "solve", "--data", str(public), "--method",
                    "heuristic", "--out", str(out), "--quiet"], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL)
    return validate_submission(out, solution.expected_configs()).rows


# ---------------------------------------------------------------------------------------------
# Rates with binomial intervals


def rate(hits: int, n: int) -> dict:
    """A share with its 95 % Clopper-Pearson interval."""
    low = scipy_stats.beta.ppf(0.025, hits, n - hits + 1) if hits > 0 else 0.0
    high = scipy_stats.beta.ppf(0.975, hits + 1, n - hits) if hits < n else 1.0
    return {"rate": hits / n, "low": float(low), "high": float(high), "hits": int(hits), "n": int(n)}


def _as_scores(name: str, values: Mapping[str, np.ndarray]) -> GraphScores:
    return GraphScores.from_arrays(name, values)


# ---------------------------------------------------------------------------------------------
# 1. Coverage


def coverage(matrix: Mapping[str, np.ndarray], targets: Mapping[str, float], methods: tuple[str, ...],
             draws: int) -> dict[str, dict[str, dict]]:
    """method -> row -> rate: the share of submissions whose interval holds the exact expectation.

    Rows: each collection, the layout collections pooled, and the final score."""
    n = next(iter(matrix.values())).shape[0]
    final_target = float(np.mean(list(targets.values())))
    out = {}
    for method in methods:
        hits = {name: 0 for name in matrix} | {"final": 0}
        for i in range(n):
            overall, per = intervals({name: m[i] for name, m in matrix.items()}, draws=draws, seed=i,
                                     confidence=CONFIDENCE, method=method)
            for name, ci in per.items():
                hits[name] += ci.contains(targets[name])
            hits["final"] += overall.contains(final_target)
        rows = {name: rate(h, n) for name, h in hits.items()}
        layouts = [name for name in matrix if name in LAYOUTS]
        rows["layout pooled"] = rate(sum(hits[name] for name in layouts), n * len(layouts))
        out[method] = rows
    return out


def thin_coverage(population: np.ndarray, target: float, collection: str, sizes: tuple[int, ...],
                  methods: tuple[str, ...], replicates: int, draws: int,
                  rng: np.random.Generator) -> dict[str, dict[int, dict]]:
    """method -> G -> rate: G graphs drawn with replacement from ``population`` ``(submissions, graphs)``,
    each drawn graph scored by a random one of the submissions (so repeated graphs are independent
    draws); the interval should hold ``target``, the population's mean expected score."""
    subs, graphs = population.shape
    out: dict[str, dict[int, dict]] = {method: {} for method in methods}
    for g in sizes:
        picks = rng.integers(0, graphs, size=(replicates, g))
        who = rng.integers(0, subs, size=(replicates, g))
        samples = population[who, picks]
        for method in methods:
            hits = sum(intervals({collection: samples[r]}, draws=draws, seed=r, confidence=CONFIDENCE,
                                 method=method)[1][collection].contains(target) for r in range(replicates))
            out[method][g] = rate(hits, replicates)
    return out


# ---------------------------------------------------------------------------------------------
# 2. and 3. False positives and power


def pair_rates(first: Mapping[str, np.ndarray], second: Mapping[str, np.ndarray], methods: tuple[str, ...],
               draws: int) -> dict[str, dict[str, dict]]:
    """method -> measure -> row -> rate over pairs (first[i], second[i]).

    Measures: ``called`` (the method's verdict: beyond noise), ``interval`` (the interval alone
    excludes 0), ``sign_flip`` (the sign-flip test alone rejects), ``p_tails`` (P(B better) below
    0.025 or above 0.975)."""
    n = next(iter(first.values())).shape[0]
    alpha = 1 - CONFIDENCE
    out = {}
    for method in methods:
        counts: dict[str, dict[str, int]] = {m: {} for m in ("called", "interval", "sign_flip", "p_tails")}
        for i in range(n):
            a = _as_scores("a", {name: m[i] for name, m in first.items()})
            b = _as_scores("b", {name: m[i] for name, m in second.items()})
            result = compare(a, b, draws=draws, seed=i, confidence=CONFIDENCE, method=method)
            for row, d in [*result.collections.items(), ("final", result.overall)]:
                found = {"called": d.beyond_noise,
                         "interval": d.interval.low > 0 or d.interval.high < 0,
                         "sign_flip": d.p_sign_flip < alpha,
                         "p_tails": d.p_b_better < alpha / 2 or d.p_b_better > 1 - alpha / 2}
                for measure, hit in found.items():
                    counts[measure][row] = counts[measure].get(row, 0) + int(hit)
        rows = {}
        for measure, per_row in counts.items():
            layouts = [row for row in per_row if row in LAYOUTS]
            rows[measure] = {row: rate(h, n) for row, h in per_row.items()}
            rows[measure]["layout pooled"] = rate(sum(per_row[row] for row in layouts), n * len(layouts))
        out[method] = rows
    return out


# ---------------------------------------------------------------------------------------------
# The run


def build_competition(out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "competition.cli", "synth", str(out), "--scale", SCALE, "--seed",
                    str(SEED)], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return out


def _halves(matrix: Mapping[str, np.ndarray], pairs: int) -> tuple[dict, dict]:
    return ({name: m[0:2 * pairs:2] for name, m in matrix.items()},
            {name: m[1:2 * pairs:2] for name, m in matrix.items()})


def run(data: Path | None = None, submissions: int = 600, pairs: int = 300, draws: int = 2000,
        seed: int = 0, methods: tuple[str, ...] = INTERVAL_METHODS, heuristic: Path | None = None,
        log: Callable[[str], None] = print) -> dict:
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as tmp:
        if data is None:
            log(f"building the {SCALE} embedded competition (seed {SEED})")
            data = build_competition(Path(tmp) / "competition")
        solution = load_solution(data / "private" / "solution.csv")
        if heuristic is None:
            log("heuristic submission (tpugraphs solve --method heuristic)")
            base = heuristic_rows(data / "public", solution, Path(tmp))
        else:
            base = validate_submission(heuristic, solution.expected_configs()).rows
    expected = expected_random_scores(solution)
    targets = {name: float(np.mean(v)) for name, v in expected.items()}
    log(f"{submissions} random and {2 * pairs} perturbed submissions, scored graph by graph")
    random_scores = score_matrix([random_rows(solution, rng) for _ in range(submissions)], solution)
    perturbed_scores = score_matrix([perturbed_rows(base, solution, rng) for _ in range(2 * pairs)], solution)
    # The exact expectations, checked against the random submissions' mean scores.
    for name, m in random_scores.items():
        gap = abs(m.mean() - targets[name])
        se = m.mean(axis=1).std(ddof=1) / np.sqrt(m.shape[0])
        if gap > 5 * se + 1e-12:
            raise SystemExit(f"{name}: random submissions average {m.mean():.4f}, "
                             f"expected {targets[name]:.4f}")
    sizes = {name: m.shape[1] for name, m in random_scores.items()}

    log("coverage on the competition's test graphs")
    cover = coverage(random_scores, targets, methods, draws)
    log("coverage at few graphs")
    layout_population = np.concatenate([random_scores[name] for name in LAYOUTS if name in random_scores],
                                       axis=1)
    thin = {
        "tile": thin_coverage(random_scores[TILE], targets[TILE], TILE, THIN_SIZES, methods, submissions,
                              draws, rng),
        "layout": thin_coverage(layout_population, 0.0, LAYOUTS[0], THIN_SIZES, methods, submissions,
                                draws, rng),
    }
    log("false positives: random pairs, perturbed-heuristic pairs; power: perturbed heuristic vs random")
    null_random = pair_rates(*_halves(random_scores, pairs), methods, draws)
    null_perturbed = pair_rates(*_halves(perturbed_scores, pairs), methods, draws)
    power = pair_rates({n: m[:pairs] for n, m in random_scores.items()},
                       {n: m[:pairs] for n, m in perturbed_scores.items()}, methods, draws)
    return {
        "competition": f"synth --scale {SCALE} --seed {SEED}", "graphs": sizes,
        "submissions": submissions, "pairs": pairs, "draws": draws, "seed": seed,
        "confidence": CONFIDENCE, "targets": targets, "methods": list(methods),
        "coverage": cover, "thin_coverage": thin,
        "false_positives_random": null_random, "false_positives_perturbed": null_perturbed,
        "power_heuristic_vs_random": power, "seconds": time.perf_counter() - started,
    }


# ---------------------------------------------------------------------------------------------
# Tables


def _cell(r: dict) -> str:
    return f"{100 * r['rate']:.1f} % [{100 * r['low']:.1f}, {100 * r['high']:.1f}]"


def _row_order(rows: dict) -> list[str]:
    named = [c.name for c in COLLECTIONS if c.name in rows]
    return [*named, "layout pooled", "final"]


def _label(row: str, graphs: dict[str, int]) -> str:
    if row == "layout pooled":
        return f"{sum(1 for n in graphs if n in LAYOUTS)} layout pooled ({graphs[LAYOUTS[0]]} each)"
    if row == "final":
        return f"final ({sum(graphs.values())})"
    return f"{row} ({graphs[row]})"


def tables(figures: dict) -> str:
    methods, graphs = figures["methods"], figures["graphs"]
    out = [f"coverage of the {CONFIDENCE:.0%} interval ({figures['submissions']} random submissions, exact "
           "targets; 95 % Clopper-Pearson interval of each rate)", "",
           "| row (graphs) | " + " | ".join(methods) + " |", "|---|" + "---|" * len(methods)]
    for row in _row_order(figures["coverage"][methods[0]]):
        out.append(f"| {_label(row, graphs)} | "
                   + " | ".join(_cell(figures["coverage"][m][row]) for m in methods) + " |")
    out += ["", "coverage at G graphs drawn from the competition's tile (80) or layout (32) test graphs", "",
            "| graphs | " + " | ".join(f"{task} {m}" for task in ("layout", "tile") for m in methods) + " |",
            "|---|" + "---|" * (2 * len(methods))]
    for g in THIN_SIZES:
        out.append(f"| {g} | " + " | ".join(_cell(figures["thin_coverage"][task][m][g])
                                           for task in ("layout", "tile") for m in methods) + " |")
    for key, words in (("false_positives_random", "two random submissions"),
                       ("false_positives_perturbed", "two 10 % perturbations of the heuristic"),
                       ("power_heuristic_vs_random", "perturbed heuristic vs random (power)")):
        block = figures[key]
        out += ["", f"{words}, {figures['pairs']} pairs: share called different (verdict); the interval "
                "alone; the sign-flip test alone; P(B better) outside [0.025, 0.975]", "",
                "| row (graphs) | " + " | ".join(f"{m} verdict" for m in methods)
                + " | t interval alone | sign-flip alone | P(B better) tails, " + LEGACY + " | "
                + "P(B better) tails, t |",
                "|---|" + "---|" * (len(methods) + 4)]
        for row in _row_order(block[methods[0]]["called"]):
            cells = [_cell(block[m]["called"][row]) for m in methods]
            t = "t" if "t" in block else methods[0]
            cells += [_cell(block[t]["interval"][row]), _cell(block[t]["sign_flip"][row]),
                      _cell(block[LEGACY]["p_tails"][row]) if LEGACY in block else "",
                      _cell(block[t]["p_tails"][row])]
            out.append(f"| {_label(row, graphs)} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def measured_coverage_table(figures: dict) -> str:
    """The ``MEASURED_COVERAGE`` literal for ``competition/stats/calibration.py``."""
    lines = ["MEASURED_COVERAGE: dict[str, dict[str, dict[int, float]]] = {"]
    for m in figures["methods"]:
        tasks = ", ".join(
            f'"{task}": {{' + ", ".join(f"{g}: {figures['thin_coverage'][task][m][g]['rate']:.3f}"
                                          for g in THIN_SIZES) + "}"
            for task in ("layout", "tile"))
        lines.append(f'    "{m}": {{{tasks}}},')
    return "\n".join([*lines, "}"])


def check(figures: dict) -> list[str]:
    """What the issue asks of the default method; empty when it holds."""
    problems = []
    if "t" not in figures["methods"]:
        return problems
    layout8 = figures["thin_coverage"]["layout"]["t"][8]["rate"]
    if not 0.93 <= layout8 <= 0.97:
        problems.append(f"t interval: layout coverage at 8 graphs {layout8:.1%}, outside 93-97 %")
    for key in ("false_positives_random", "false_positives_perturbed"):
        for row, r in figures[key]["t"]["called"].items():
            if r["low"] > 0.05:
                problems.append(f"{key} {row}: {r['rate']:.1%} called different, above 5 % beyond noise")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=None,
                        help=f"an existing synth --scale {SCALE} --seed {SEED} folder (default: build one)")
    parser.add_argument("--heuristic", type=Path, default=None,
                        help="the heuristic's submission for --data (default: tpugraphs solve makes it)")
    parser.add_argument("--submissions", type=int, default=600)
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    figures = run(args.data, args.submissions, min(args.pairs, args.submissions), args.draws, args.seed,
                  heuristic=args.heuristic, log=lambda line: print(line, file=sys.stderr))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    print(tables(figures))
    print(f"\n{measured_coverage_table(figures)}\n\n{figures['seconds']:.0f} s")
    problems = check(figures)
    print("\n".join(problems) if problems else "PASS")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
