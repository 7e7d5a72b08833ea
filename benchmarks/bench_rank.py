"""How long ``tpugraphs rank --sample 1000`` (and with ``--explain``) takes on a small real program (issues:
under 5 s on 2 cores, each).

The program is the attention block JAX dumped (``tests/fixtures/hlo/attention.before_optimizations.hlo.pb``:
43 nodes, 14 configurable dots and reshapes; ``scripts/dump_hlo_fixtures.py`` writes it). The model is
a gbdt model of ``layout:xla:random`` trained on the tiny embedded competition (``--model DIR`` ranks
with a saved one instead; ``--method gnn`` trains a gnn).

Two figures, each the median of ``--repeats`` runs:

1. **End to end**, as a user sees it: ``python -m competition.cli rank PROGRAM --model DIR --sample N
   --json`` in a fresh process (imports, reading, sampling, checking, featurizing, predicting, the
   report), wall time;
2. **In process, by phase** (the same steps once the kit is imported): reading the program, drawing the
   candidates (``solutions.rank.ranking.candidates``), ranking them (``rank_program``: model loading,
   features, prediction, changes), taking the best candidate that is not the reference apart
   (``solutions.rank.explain.explain``);
3. **End to end with ``--explain``** (the best candidate taken apart: each change scored alone, the
   greedy set), wall time, and its ratio to figure 1 measured in the same run; the JSON says how many
   changes were scored and how large the greedy set grew (a candidate not predicted faster than the
   reference has no set to build).

usage: python -m benchmarks.bench_rank [--sample 1000] [--repeats 5] [--model DIR] [--method gbdt]
       [--program PATH] [--json]

(``--program tests/fixtures/hlo/lstm_dump/module_0016.jit_loss.before_optimizations.hlo.pb``: the
scan-based recurrent program, 360 nodes and 20 configurable ones.)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "tests" / "fixtures" / "hlo" / "attention.before_optimizations.hlo.pb"
BUDGET_S = 5.0  # the bound for 1,000 candidates of a ~40-node program on 2 cores


def train(folder: Path, method: str) -> Path:
    """A model of layout:xla:random trained on the tiny embedded competition; its --model-dir."""
    from competition.cli import main
    from competition.data.synth import generate_competition

    generate_competition(folder / "comp", scale="tiny", seed=0)
    models = folder / "bench.models"
    with contextlib.redirect_stdout(sys.stderr):  # stdout carries the figures alone
        code = main(["solve", "--method", method, "--collection", "layout:xla:random", "--data",
                     str(folder / "comp" / "public"), "--out", str(folder / "bench.csv"),
                     "--model-dir", str(models), "--quiet"])
    if code != 0:
        raise SystemExit(f"bench_rank: training the {method} model failed (exit {code})")
    return models


def end_to_end(program: Path, models: Path, sample: int, *extra: str) -> tuple[float, dict]:
    """Wall seconds of one fresh ``rank`` process, and its JSON answer."""
    command = [sys.executable, "-m", "competition.cli", "rank", str(program), "--model", str(models),
               "--sample", str(sample), "--json", *extra]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"bench_rank: {' '.join(command)} failed: {done.stderr.strip()}")
    answer = json.loads(done.stdout)
    if answer["candidates"] < sample:
        raise SystemExit("bench_rank: fewer candidates than asked")
    return elapsed, answer


def phases(program: Path, models: Path, sample: int) -> dict[str, float]:
    from solutions.rank.explain import explain
    from solutions.rank.ranking import candidates, rank_program, read_program

    times = {}
    start = time.perf_counter()
    read = read_program(program)
    times["read"] = time.perf_counter() - start
    start = time.perf_counter()
    configs, source, added = candidates(read, sample=sample, seed=0)
    times["candidates"] = time.perf_counter() - start
    start = time.perf_counter()
    ranking = rank_program(read, models, configs=configs, candidate_source=source, reference_added=added)
    times["rank"] = time.perf_counter() - start
    start = time.perf_counter()
    best = next(int(c) for c in ranking.order if int(c) != ranking.reference_candidate)
    explain(read, ranking.scorer, ranking.reference_config, ranking.scorer.candidates[best], index=best,
            rank=None)
    times["explain"] = time.perf_counter() - start
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--model", type=Path, help="a saved --model-dir (default: train one)")
    parser.add_argument("--method", default="gbdt", help="the method trained when --model is not given")
    parser.add_argument("--program", type=Path, default=PROGRAM)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        models = args.model or train(Path(scratch), args.method)
        from solutions.rank.ranking import read_program

        program = read_program(args.program)
        cold = [end_to_end(args.program, models, args.sample)[0] for _ in range(args.repeats)]
        warm = [phases(args.program, models, args.sample) for _ in range(args.repeats)]
        explained = [end_to_end(args.program, models, args.sample, "--explain") for _ in range(args.repeats)]
    split = {name: statistics.median(w[name] for w in warm) for name in warm[0]}
    shown = args.program.relative_to(ROOT) if args.program.is_relative_to(ROOT) else args.program
    record = {"program": str(shown),
              "nodes": program.graph.num_nodes, "configurable_nodes": program.graph.num_configurable_nodes,
              "candidates": args.sample, "method": args.method if args.model is None else "saved",
              "cpus": len(os.sched_getaffinity(0)), "end_to_end_s": statistics.median(cold),
              "end_to_end_runs_s": cold, "in_process_s": split, "budget_s": BUDGET_S,
              "ratio_to_budget": statistics.median(cold) / BUDGET_S}
    summary = explained[0][1]["explain_summary"]
    record["explain"] = {"end_to_end_s": statistics.median(t for t, _ in explained),
                         "runs_s": [t for t, _ in explained],
                         "over_rank": statistics.median(t for t, _ in explained) / statistics.median(cold),
                         "ratio_to_budget": statistics.median(t for t, _ in explained) / BUDGET_S,
                         "candidate_rank": summary["rank"], "changes": summary["changes"],
                         "minimal_set_size": summary["minimal_set_size"], "reached": summary["reached"]}
    if args.json:
        print(json.dumps(record, indent=2))
        return 0
    print(f"tpugraphs rank --sample {args.sample}: {record['program']} ({record['nodes']} nodes, "
          f"{record['configurable_nodes']} configurable), {record['method']} model, {record['cpus']} CPUs")
    print(f"  end to end (fresh process, median of {args.repeats}): {record['end_to_end_s']:.2f} s "
          f"= {record['ratio_to_budget']:.2f} x the {BUDGET_S:.0f} s budget")
    print("  in process: " + ", ".join(f"{name} {value:.3f} s" for name, value in split.items()))
    e = record["explain"]
    print(f"  with --explain (rank-{e['candidate_rank']} candidate, {e['changes']} changes, greedy set of "
          f"{e['minimal_set_size']}): {e['end_to_end_s']:.2f} s = {e['over_rank']:.2f} x without it, "
          f"{e['ratio_to_budget']:.2f} x the {BUDGET_S:.0f} s budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
