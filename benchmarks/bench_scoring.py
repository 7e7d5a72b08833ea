"""Scoring speed on a Kaggle-sized submission (issue 2, item 8).

1. Whole process: ``tpugraphs score SUB --solution SOL --json`` against the straightforward
   csv + scipy scorer (benchmarks/naive_score.py), timed alternately in one run, median of N runs each.
   Target: the kit takes at most half the baseline's wall time.
2. In process, solution already parsed: validating and scoring one submission file
   (``score_submission``). Target: under 20 ms (median).
Both scorers must agree on the score to 1e-9, or the benchmark fails.

usage: python -m benchmarks.bench_scoring [--repeats 7]
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

from benchmarks.kaggle_sized import write_case
from competition.scoring import load_solution, score_submission

ROOT = Path(__file__).resolve().parents[1]


def _timed(cmd: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
    return time.perf_counter() - started, done.stdout


def run(repeats: int = 7) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        solution_path, submission_path = write_case(tmp)
        kit_cmd = [sys.executable, "-m", "competition.cli", "score", str(submission_path),
                   "--solution", str(solution_path), "--json"]
        naive_cmd = [sys.executable, str(ROOT / "benchmarks" / "naive_score.py"),
                     str(submission_path), str(solution_path)]
        kit_times, naive_times = [], []
        for _ in range(repeats):  # alternate so drifts in machine load hit both equally
            t, kit_out = _timed(kit_cmd)
            kit_times.append(t)
            t, naive_out = _timed(naive_cmd)
            naive_times.append(t)
        kit_score, naive_score = json.loads(kit_out)["score"], float(naive_out)
        if abs(kit_score - naive_score) > 1e-9:
            raise SystemExit(f"scores disagree: kit {kit_score!r} vs naive {naive_score!r}")

        solution = load_solution(solution_path)
        in_process = []
        for _ in range(max(20, repeats)):
            started = time.perf_counter()
            score_submission(submission_path, solution)
            in_process.append(time.perf_counter() - started)
        started = time.perf_counter()
        load_solution(solution_path)
        parse_solution_s = time.perf_counter() - started
    kit, naive = statistics.median(kit_times), statistics.median(naive_times)
    return {
        "score": kit_score,
        "kit_process_s": kit,
        "naive_process_s": naive,
        "ratio": kit / naive,
        "in_process_ms": statistics.median(in_process) * 1e3,
        "in_process_p90_ms": sorted(in_process)[int(0.9 * len(in_process))] * 1e3,
        "parse_solution_ms": parse_solution_s * 1e3,
        "repeats": repeats,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    figures = run(parser.parse_args().repeats)
    print(json.dumps(figures, indent=2))
    ok = figures["ratio"] <= 0.5 and figures["in_process_ms"] < 20
    print(f"\nwhole process: kit {figures['kit_process_s']:.3f} s vs naive "
          f"{figures['naive_process_s']:.3f} s (ratio {figures['ratio']:.2f}, target <= 0.50)")
    print(f"in process (solution parsed): {figures['in_process_ms']:.1f} ms median (target < 20 ms)")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
