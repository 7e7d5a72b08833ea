"""The reference solutions on the small embedded competition: scores, time, memory, and what pruning buys.

1. **Scores.** ``tpugraphs solve`` with each method (default: ``gnn`` with its defaults, and
   ``random``) on all five collections: validation score per collection (the runner's, on the valid
   split) and test score (the written submission scored against the hidden labels,
   ``OUT/private/solution.csv``, Public + Private rows, as ``tpugraphs score`` does), fit and
   predict time, peak memory. Targets: ``gnn`` beats ``random`` on every collection's test score,
   and the final test score (mean of the five) by at least 0.25.
2. **Pruning and compression.** ``gnn`` on layout:xla:random with and without
   ``--no-prune --no-compress``: end-to-end wall and CPU time, validation and test Kendall tau,
   node and edge reduction over the training graphs, peak memory. Targets: at least 2x faster end
   to end (CPU time, which machine load does not inflate), losing at most 0.05 test tau.
3. With ``--device cuda`` (when a GPU is present): the same run as 1 for ``gnn`` on the GPU.

Every run is a fresh ``python -m competition.cli solve`` process, so peak memories are separate.
Prints markdown tables; exits 1 when a target is missed.

usage: python -m benchmarks.bench_solutions [--competition data/demo] [--methods gnn,random]
       [--seed 0] [--device cpu] [--skip-pruning] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from competition.collections import COLLECTION_NAMES
from competition.scoring import IGNORED, graph_scores, load_solution
from competition.submission import validate_submission

ROOT = Path(__file__).resolve().parents[1]
PRUNE_COLLECTION = "layout:xla:random"
TARGET_MARGIN = 0.25  # gnn's final test score over random's
TARGET_SPEEDUP = 2.0  # pruned + compressed vs neither, end to end
TARGET_TAU_LOSS = 0.05


def ensure_competition(out: Path, seed: int) -> Path:
    """The small embedded competition in ``out`` (built once, reused afterwards)."""
    if not (out / "private" / "solution.csv").is_file():
        from competition.data.synth import generate_competition

        print(f"building the small embedded competition in {out} ...", file=sys.stderr)
        generate_competition(out, scale="small", seed=seed, progress=False)
    return out


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_solve(public: Path, method: str, out: Path, *extra: str) -> dict:
    """One ``tpugraphs solve`` process; its JSON report plus wall and CPU seconds."""
    report_path = out.with_suffix(".json")
    cmd = [sys.executable, "-m", "competition.cli", "solve", "--data", str(public), "--method", method,
           "--out", str(out), "--json", str(report_path), "--quiet", *extra]
    cpu, wall = _children_cpu(), time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - wall, _children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    report = json.loads(report_path.read_text())
    report.update(wall_seconds=wall, cpu_seconds=cpu)
    return report


def test_scores(submission: Path, solution, collections: list[str]) -> dict[str, float]:
    """Per-collection test score of a (possibly partial) submission: Public + Private rows, official
    metric."""
    expected = {row_id: n for row_id, n in solution.expected_configs().items()
                if row_id.rpartition(":")[0] in collections}
    checked = validate_submission(submission, expected)
    if not checked.ok:
        raise SystemExit(f"{submission} is invalid: {checked.problems[:3]}")
    out = {}
    for name in collections:
        labels = solution.labels[name]
        scores = graph_scores(labels, checked.rows)
        out[name] = float(scores[labels.usage != IGNORED].mean())
    return out


def scores_table(results: dict[str, dict], tests: dict[str, dict[str, float]]) -> str:
    methods = list(results)
    head = "| collection | " + " | ".join(f"{m} valid | {m} test" for m in methods) + " |"
    lines = [head, "|" + "---|" * (1 + 2 * len(methods))]
    for name in COLLECTION_NAMES:
        cells = []
        for m in methods:
            entry = {c["collection"]: c for c in results[m]["collections"]}[name]
            cells += [f"{entry['validation_score']:.4f}", f"{tests[m][name]:.4f}"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    finals = []
    for m in methods:
        finals += [f"**{results[m]['validation_score']:.4f}**", f"**{np.mean(list(tests[m].values())):.4f}**"]
    lines.append("| **final (mean)** | " + " | ".join(finals) + " |")
    return "\n".join(lines)


def cost_table(results: dict[str, dict]) -> str:
    lines = ["| method | collection | fit s | predict s | peak MB |", "|---|---|---|---|---|"]
    for m, report in results.items():
        for c in report["collections"]:
            lines.append(f"| {m} | {c['collection']} | {c['fit_seconds']:.1f} | "
                         f"{c['validate_seconds'] + c['predict_seconds']:.1f} | {c['peak_memory_mb']:.0f} |")
        lines.append(f"| {m} | **whole run** | wall {report['wall_seconds']:.0f} s | CPU "
                     f"{report['cpu_seconds']:.0f} s | {report['process_peak_memory_mb']:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_solutions", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--competition", default=str(ROOT / "data" / "demo"),
                        help="a 'tpugraphs synth --scale small' OUT folder (built there when absent)")
    parser.add_argument("--methods", default="gnn,random",
                        help="comma-separated methods (default: gnn,random)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="device for gnn (cpu or cuda)")
    parser.add_argument("--skip-pruning", action="store_true", help="skip the pruning comparison (part 2)")
    parser.add_argument("--keep", metavar="DIR",
                        help="write submissions and reports here instead of a temp folder")
    args = parser.parse_args(argv)

    competition = ensure_competition(Path(args.competition), args.seed)
    public, solution = competition / "public", load_solution(competition / "private" / "solution.csv")
    methods = [m for m in args.methods.split(",") if m]
    missed = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        seed = ("--seed", str(args.seed))
        device = ("--device", args.device)

        # 1. scores on all five collections
        results, tests = {}, {}
        for m in methods:
            sub = work / f"{m}.csv"
            results[m] = run_solve(public, m, sub, *seed, *(device if m == "gnn" else ()))
            tests[m] = test_scores(sub, solution, list(COLLECTION_NAMES))
        print(f"### Scores on the small embedded competition (seed {args.seed}, device {args.device})\n")
        print(scores_table(results, tests))
        print("\n### Cost per collection\n")
        print(cost_table(results))
        if "gnn" in tests and "random" in tests:
            margin = np.mean(list(tests["gnn"].values())) - np.mean(list(tests["random"].values()))
            beaten = [c for c in COLLECTION_NAMES if tests["gnn"][c] > tests["random"][c]]
            print(f"\ngnn - random, final test score: {margin:+.4f} (target >= +{TARGET_MARGIN}); "
                  f"gnn ahead on {len(beaten)}/5 collections (target 5/5)")
            if margin < TARGET_MARGIN or len(beaten) < 5:
                missed.append("gnn vs random")

        # 2. pruning and compression on layout:xla:random
        if not args.skip_pruning:
            runs = {}
            for label, flags in (("prune + compress", ()),
                                 ("--no-prune --no-compress", ("--no-prune", "--no-compress"))):
                sub = work / f"prune-{'on' if not flags else 'off'}.csv"
                report = run_solve(public, "gnn", sub, "--collection", PRUNE_COLLECTION, *seed,
                                   *device, *flags)
                runs[label] = (report, test_scores(sub, solution, [PRUNE_COLLECTION])[PRUNE_COLLECTION])
            (on, on_test), (off, off_test) = runs["prune + compress"], runs["--no-prune --no-compress"]
            pruning = on["collections"][0]["details"].get("pruning") or {}
            print(f"\n### Pruning and compression: gnn on {PRUNE_COLLECTION}\n")
            print("| run | valid tau | test tau | wall s | CPU s | fit s | peak MB |")
            print("|---|---|---|---|---|---|---|")
            for label, (report, test) in runs.items():
                c = report["collections"][0]
                print(f"| {label} | {c['validation_score']:.4f} | {test:.4f} | "
                      f"{report['wall_seconds']:.1f} | {report['cpu_seconds']:.1f} | {c['fit_seconds']:.1f} "
                      f"| {report['process_peak_memory_mb']:.0f} |")
            speedup = off["cpu_seconds"] / on["cpu_seconds"]
            loss = off_test - on_test
            if pruning:
                print(f"\nOneHop pruning over the {pruning['graphs']} training graphs: "
                      f"{pruning['nodes_before']:,} -> {pruning['nodes_after']:,} nodes "
                      f"({pruning['node_reduction']:.1f}x), {pruning['edges_before']:,} -> "
                      f"{pruning['edges_after']:,} edges ({pruning['edge_reduction']:.1f}x)")
            print(f"end-to-end speed-up (CPU time): {speedup:.1f}x (target >= {TARGET_SPEEDUP}x); "
                  f"wall: {off['wall_seconds'] / on['wall_seconds']:.1f}x; "
                  f"test tau lost: {loss:+.4f} (target <= {TARGET_TAU_LOSS})")
            if speedup < TARGET_SPEEDUP or loss > TARGET_TAU_LOSS:
                missed.append("pruning")
    if missed:
        print(f"\ntargets missed: {', '.join(missed)}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
