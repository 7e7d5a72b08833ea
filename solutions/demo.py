"""``make demo``: the whole competition loop on the small embedded competition.

1. builds the embedded competition once (``tpugraphs synth``; reused when present);
2. runs every reference method with ``solutions.solve.runner.solve`` (``tpugraphs solve``): trains on the
   train split, selects and reports on the valid split with the official metric, predicts the test
   split, writes and validates the submission;
3. scores each submission against the hidden labels (``tpugraphs score``) and prints, per method and
   collection, the validation and the test score, with time and peak memory; the final scores that
   are within noise of the best are marked (``competition.stats.within_noise_of_best``: ``tpugraphs
   compare``'s paired tests over graphs, Holm-adjusted over every pair of methods).

Every step is the code a user runs through ``tpugraphs``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from competition.collections import COLLECTIONS
from competition.data.locate import clear_stamp, is_embedded_competition, stamp_competition
from competition.data.synth import generate_competition
from competition.scoring import ScoreReport, Solution, load_solution, score_submission
from competition.stats import GraphScores, load_graph_scores, within_noise_of_best
from solutions.methods.base import FitOptions
from solutions.solve.runner import SolveError, SolveReport, solve

DEFAULT_METHODS = ("random", "heuristic", "gbdt", "gnn")
SHORT = {"tile:xla": "tile", "layout:xla:default": "xla:def", "layout:xla:random": "xla:rnd",
         "layout:nlp:default": "nlp:def", "layout:nlp:random": "nlp:rnd"}


NOISE_DRAWS = 2000


def noise_marks(results: dict[str, tuple[SolveReport, ScoreReport]],
                solution: Solution) -> dict[str, tuple[str, str]]:
    """Per method, a mark for its final validation and test score: ``*`` the best, ``~`` within noise of it.

    Within noise: ``competition.stats.within_noise_of_best`` does not set the method apart from the
    best (``compare``'s paired t interval and sign-flip test, Holm-adjusted over every pair of methods,
    since the best is picked on the same graphs): the valid graphs for the validation score, the hidden
    test graphs for the test score. Every method is scored on the same graphs, so the pairing holds.
    """
    valid = {m: GraphScores.from_arrays(m, {c.collection: c.valid_graph_scores for c in solved.collections})
             for m, (solved, _) in results.items()}
    test = {m: load_graph_scores(solved.submission, solution, name=m) for m, (solved, _) in results.items()}
    marks: dict[str, list[str]] = {m: ["", ""] for m in results}
    for side, scored in enumerate((valid, test)):
        comparable = {m: s for m, s in scored.items() if s.collections}
        if not comparable:
            continue
        best = max(comparable, key=lambda m: comparable[m].score)
        marks[best][side] = "*"
        same = {m: s for m, s in comparable.items() if s.same_graphs(comparable[best])}
        verdict = within_noise_of_best(same, draws=NOISE_DRAWS)
        for method in same:
            if method != best:
                marks[method][side] = verdict.mark(method)
    return {m: (v, t) for m, (v, t) in marks.items()}


def results_table(results: dict[str, tuple[SolveReport, ScoreReport]],
                  marks: dict[str, tuple[str, str]] | None = None) -> str:
    """Methods side by side: validation / hidden-test score per collection, final, time, peak memory.

    With ``marks`` (``noise_marks``), the final scores carry ``*`` (the best) or ``~`` (within noise of
    the best), and a legend says so.
    """
    names = [c.name for c in COLLECTIONS]
    head = f"{'method':<10} " + " ".join(f"{SHORT[n]:>13}" for n in names)
    head += f" {'final':>15} {'time s':>7} {'peak MB':>8}"
    lines = [head, f"{'':<10} " + " ".join(f"{'valid / test':>13}" for _ in range(len(names)))
             + f" {'valid / test':>15}", "-" * len(head)]
    for method, (solved, scored) in results.items():
        valid = {c.collection: c.validation_score for c in solved.collections}
        cells = [f"{valid[n]:>6.3f} /{scored.collections.get(n, float('nan')):>6.3f}" for n in names]
        mark_valid, mark_test = (marks or {}).get(method, ("", ""))
        final = f"{solved.validation_score:>6.3f}{mark_valid:<1} /{scored.score:>6.3f}{mark_test:<1}"
        peak = max(c.peak_memory_mb for c in solved.collections)
        lines.append(f"{method:<10} " + " ".join(cells) + f" {final:>15} {solved.seconds:>7.0f} {peak:>8.0f}")
    if marks:
        lines.append("final: * the best; ~ within noise of the best (not set apart by the paired t and "
                     "sign-flip tests at 5%, Holm-adjusted over every pair of methods: valid graphs for "
                     "valid, hidden test graphs for test)")
    return "\n".join(lines)


REAL_COLLECTION = "layout:xla:default"  # the shipped real layout graph comes from a default-style search


def real_data_line(model_dirs: dict[str, Path]) -> str:
    """How the demo's models rank the real layout graph the kit ships, with a 95 % interval over its configs.

    ``model_dirs``: method -> the folder ``solve`` saved its models in. The ranking is ``tpugraphs rank``'s
    (``solutions.rank.ranking``: the saved model, or a seed ensemble's blend). One graph of one program whose
    112 measured configs lie within 1.6 % of each other: the line says so. Most of its pairs of configs
    differ by less than its configs measured twice do, so a second line scores the pairs beyond that
    noise (``competition.stats.noise``).
    """
    from competition.data.realdata import LAYOUT_PROTO
    from competition.stats import tau_interval
    from competition.stats.noise import beyond_noise_interval, pairs_beyond_noise
    from solutions.features.dedup import repeat_noise_of
    from solutions.rank.ranking import RankError, rank_program, read_program

    program = read_program(LAYOUT_PROTO)
    runtimes = program.graph.config_runtime.astype(np.float64)
    # Its configs measured more than once say how far apart a re-measurement puts the same config.
    noise = repeat_noise_of(program.graph.configs, runtimes)
    cells, beyond = [], []
    for method, model_dir in model_dirs.items():
        try:
            order = rank_program(program, model_dir, collection=REAL_COLLECTION).order
        except RankError as exc:
            cells.append(f"{method} (no saved {REAL_COLLECTION} model: {exc})")
            continue
        position = np.empty(len(order))
        position[order] = np.arange(len(order))  # rank 0 = predicted fastest
        ci = tau_interval([position], [runtimes])
        cells.append(f"{method} {ci.estimate:+.2f} [{ci.low:+.2f}, {ci.high:+.2f}]")
        if noise is not None:
            ci = beyond_noise_interval([position], [runtimes], noise.level)
            beyond.append(f"{method} {ci.estimate:+.2f} [{ci.low:+.2f}, {ci.high:+.2f}]")
    noise_line = "" if not beyond else (
        f"   On only the {100 * pairs_beyond_noise(runtimes, noise.level):.0f} % of its pairs of configs "
        f"whose runtimes differ by more than the same config measured twice does ({noise.percent()}):\n   "
        + "; ".join(beyond) + "\n")
    return (f"== real data, one graph: the {REAL_COLLECTION} models rank the {len(runtimes)} "
            "measured configs of a real 3D U-Net (shipped with the kit; runtimes within 1.6 % of each "
            "other), Kendall tau with "
            f"its 95 % interval over those configs:\n   " + "; ".join(cells) + "\n" + noise_line +
            "   One graph is weak evidence, and the embedded competition teaches only part of what "
            "real runtimes teach: 'make bench-real' ranks every real graph at hand (BENCHMARKS.md, "
            "\"Real data\").")


NEXT_STEPS = """
These figures come from this machine and this run: times and memory vary by machine, and a learned
method's scores move by a few hundredths between runs and seeds (tpugraphs compare says whether a
difference is real). The embedded competition teaches the workflow; the real one is next
(README, "The real competition"):
  tpugraphs download --out data/real                    # Kaggle credentials, or --source mirror
  tpugraphs cache --data data/real --out data/cache     # optional: memory-mapped configs
  tpugraphs solve --data data/real --method gbdt --out submission.csv --cache-dir data/cache
  tpugraphs validate submission.csv --data data/real
  tpugraphs submit submission.csv --kaggle -m "gbdt baseline" --data data/real
What a real run needs (BENCHMARKS.md): a whole real-size layout:nlp:random split (207 + 20 + 17 graphs,
20.6 GB of float32 configs) trains, validates and predicts in 0.8 GB (gbdt) or 1.1 GB (gnn) with
--cache-dir, in about 2 min (gbdt) and 5 min (gnn) at the benchmark's light settings on 2 cores; the
cache takes about 5.4 GB of disk for that split. At the whole release's size (the synthetic --scale
full rehearsal) the default gnn takes 17.8 min for all five collections on 2 idle cores with a warm
cache and 5 min of training per collection, within 3.3 GB (gbdt 5.4 min); wider gnn models want a GPU.
Timings of every command: BENCHMARKS.md, "Timings"."""


def _beside_python(name: str) -> str:
    """``name`` in the folder of this python (``.venv/bin/NAME``), relative to the current folder when
    it lies under it, so that a hint printed here runs as printed in a fresh shell."""
    path = Path(sys.executable).parent / name
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def tpugraphs_command() -> str:
    """The ``tpugraphs`` console script of this environment, as a fresh shell can run it."""
    return _beside_python("tpugraphs")


def activate_line() -> str:
    """The line that puts this environment's ``tpugraphs`` on PATH in a fresh shell."""
    command = f"source {_beside_python('activate')}"
    return f"{command:<53} # tpugraphs on PATH in a new shell"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m solutions.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="data/demo", help="where the competition and submissions go")
    parser.add_argument("--scale", default="small", choices=("tiny", "small"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", nargs="+", default=list(DEFAULT_METHODS), metavar="METHOD",
                        help=f"methods to run (default: {' '.join(DEFAULT_METHODS)})")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    out = Path(args.out)
    public, solution_path = out / "public", out / "private" / "solution.csv"
    if not is_embedded_competition(out, scale=args.scale, seed=args.seed):  # missing, partial or stale
        print(f"== building the {args.scale} embedded competition in {out} (seed {args.seed})")
        clear_stamp(out)
        summary = generate_competition(out, scale=args.scale, seed=args.seed, progress=True, overwrite=True)
        stamp_competition(out, scale=args.scale, seed=args.seed)  # the notebooks reuse it (find_data)
        print(f"   done in {summary.seconds:.0f} s")
    else:
        print(f"== reusing the embedded competition in {out} (delete the folder to rebuild)")
    solution = load_solution(solution_path)

    results: dict[str, tuple[SolveReport, ScoreReport]] = {}
    for method in args.methods:
        print(f"\n== {method}: train, validate, predict, write and validate the submission")
        try:
            solved = solve(public, method, out / "submissions" / f"{method}.csv",
                           options=FitOptions(seed=args.seed, progress=sys.stderr.isatty()), log=print)
        except SolveError as exc:
            print(f"   {method} skipped: {exc}", file=sys.stderr)
            continue
        print(solved.format_table())
        results[method] = (solved, score_submission(solved.submission, solution))

    print("\n== results on the small embedded competition (validation split / hidden test labels)")
    print(results_table(results, noise_marks(results, solution) if results else None))
    if results:
        print()
        print(real_data_line({m: solved.model_dir for m, (solved, _) in results.items()}))
    print(f"\nmake demo finished in {time.perf_counter() - started:.0f} s. Submissions: "
          f"{out / 'submissions'}; score one yourself:\n  {tpugraphs_command()} score "
          f"{out / 'submissions' / 'gnn.csv'} --solution {solution_path}")
    print(NEXT_STEPS.replace("\n  tpugraphs download", f"\n  {activate_line()}\n  tpugraphs download", 1))
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main())
