"""Bootstrap speed on a Kaggle-sized submission (issue 13): ``tpugraphs report`` with 2,000 draws.

1. Whole process: ``tpugraphs report SUB --solution SOL --bootstrap 2000 --json`` (parse the 13.8 MB
   solution, validate, score every graph once, resample), median of N runs. Target: under 2 s.
2. In process, where the time goes: parsing the solution, validating + scoring each graph once, the
   2,000-draw resampling (``report``), a paired ``compare`` and a 1,000-split ``shakeup``.
3. Baselines that rescore each draw, timed on a few draws and extrapolated to 2,000 (linear: every
   draw costs the same):
   a. the straightforward loop: every resampled graph rescored with the readable per-graph metric
      (``tile_slowdown_score`` / ``kendall_tau_score``);
   b. the kit's batch scorer (``competition.scoring.graph_scores``) rerun on every draw.
   Both must give exactly the resampled means of the fast path for the draws they run (same index
   matrices), or the benchmark fails.

usage: python -m benchmarks.bench_statistics [--repeats 5] [--slow-draws 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.kaggle_sized import write_case
from competition.metrics import kendall_tau_score, tile_slowdown_score
from competition.scoring import graph_scores, load_solution
from competition.stats import compare, load_graph_scores, report, shakeup
from competition.stats.bootstrap import bootstrap_means, draw_graph_indices
from competition.submission import validate_submission

ROOT = Path(__file__).resolve().parents[1]
DRAWS = 2000
TARGET_S = 2.0


def _per_graph_loop(solution, rows, scored, indices, draws: int) -> dict[str, np.ndarray]:
    """Baseline a: each draw, each resampled graph rescored with the per-graph metric."""
    out = {name: np.empty(draws) for name in scored.collections}
    for d in range(draws):
        for name, c in scored.collections.items():
            labels = solution.labels[name]
            total = 0.0
            for g in indices[name][d]:
                part = slice(labels.offsets[g], labels.offsets[g + 1])
                ranking = rows[c.ids[g]]
                if labels.collection.task.name == "tile":
                    total += tile_slowdown_score(ranking, labels.runtimes[part], labels.normalizers[part])
                else:
                    total += kendall_tau_score(ranking, labels.runtimes[part])
            out[name][d] = total / len(indices[name][d])
    return out


def _batch_rescore_loop(solution, rows, indices, draws: int) -> dict[str, np.ndarray]:
    """Baseline b: the kit's batch scorer rerun on every draw, then the resampled mean."""
    out = {name: np.empty(draws) for name in indices}
    for d in range(draws):
        for name in indices:
            out[name][d] = graph_scores(solution.labels[name], rows)[indices[name][d]].mean()
    return out


def _median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def run(repeats: int = 5, slow_draws: int = 3) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        solution_path, submission_path = write_case(tmp)
        cmd = [sys.executable, "-m", "competition.cli", "report", str(submission_path), "--solution",
               str(solution_path), "--bootstrap", str(DRAWS), "--json"]
        process_times = []
        for _ in range(repeats):
            started = time.perf_counter()
            done = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
            process_times.append(time.perf_counter() - started)
        cli = json.loads(done.stdout)

        parse_s = _median_time(lambda: load_solution(solution_path), 3)
        solution = load_solution(solution_path)
        score_once_s = _median_time(lambda: load_graph_scores(submission_path, solution), repeats)
        scored = load_graph_scores(submission_path, solution)
        resample_s = _median_time(lambda: report(scored, draws=DRAWS), repeats)
        result = report(scored, draws=DRAWS)
        if (abs(result.overall.estimate - cli["score"]) > 1e-12
                or abs(result.overall.low - cli["ci_low"]) > 1e-12):
            raise SystemExit("the command and the in-process report disagree")
        other = load_graph_scores(submission_path, solution, name="b")
        compare_s = _median_time(lambda: compare(scored, other, draws=DRAWS), repeats)
        shakeup_s = _median_time(lambda: shakeup([scored, other], draws=1000), repeats)

        rows = validate_submission(submission_path, solution.expected_configs()).rows
        indices = draw_graph_indices({n: len(c) for n, c in scored.collections.items()}, DRAWS, 0)
        fast_means = bootstrap_means({n: c.scores for n, c in scored.collections.items()}, indices)
        first = {name: idx[:slow_draws] for name, idx in indices.items()}
        started = time.perf_counter()
        loop_means = _per_graph_loop(solution, rows, scored, first, slow_draws)
        per_graph_loop_s = (time.perf_counter() - started) / slow_draws * DRAWS
        batch_draws = max(slow_draws, 20)
        first = {name: idx[:batch_draws] for name, idx in indices.items()}
        started = time.perf_counter()
        batch_means = _batch_rescore_loop(solution, rows, first, batch_draws)
        batch_loop_s = (time.perf_counter() - started) / batch_draws * DRAWS
        for name in fast_means:
            if not (np.allclose(loop_means[name], fast_means[name][:slow_draws], rtol=0, atol=1e-12)
                    and np.allclose(batch_means[name], fast_means[name][:batch_draws], rtol=0, atol=1e-12)):
                raise SystemExit(f"{name}: the baselines and the fast path disagree on the resampled means")
    in_process = score_once_s + resample_s
    return {
        "graphs": sum(len(c) for c in scored.collections.values()),
        "tile_configs": int(np.sum(scored.collections["tile:xla"].configs)),
        "draws": DRAWS,
        "score": result.overall.estimate,
        "ci": [result.overall.low, result.overall.high],
        "process_s": statistics.median(process_times),
        "parse_solution_s": parse_s,
        "validate_and_score_once_s": score_once_s,
        "resample_2000_s": resample_s,
        "compare_2000_s": compare_s,
        "shakeup_2x1000_s": shakeup_s,
        "in_process_s": in_process,
        "per_graph_loop_2000_s_extrapolated": per_graph_loop_s,
        "per_graph_loop_draws_timed": slow_draws,
        "batch_rescore_2000_s_extrapolated": batch_loop_s,
        "batch_rescore_draws_timed": batch_draws,
        "speedup_vs_per_graph_loop": per_graph_loop_s / in_process,
        "speedup_vs_batch_rescore": batch_loop_s / in_process,
        "repeats": repeats,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--slow-draws", type=int, default=3, help="draws the per-graph baseline really runs")
    args = parser.parse_args()
    figures = run(args.repeats, args.slow_draws)
    print(json.dumps(figures, indent=2))
    print(f"\ntpugraphs report --bootstrap {DRAWS} (whole process): {figures['process_s']:.2f} s "
          f"(target < {TARGET_S:.0f} s)")
    print(f"in process: score once {figures['validate_and_score_once_s'] * 1e3:.0f} ms + resample "
          f"{figures['resample_2000_s'] * 1e3:.0f} ms; rescoring each draw would take "
          f"{figures['per_graph_loop_2000_s_extrapolated']:.0f} s (per-graph loop) or "
          f"{figures['batch_rescore_2000_s_extrapolated']:.0f} s (batch scorer per draw)")
    ok = figures["process_s"] < TARGET_S
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
