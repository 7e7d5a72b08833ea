"""``make demo``: the whole competition loop on the small embedded competition.

Builds the embedded competition (once; reused when present), writes the baseline submissions,
validates each with the validator, scores it against the hidden labels with the official metric and
prints the table. Every step is the same code a user runs through ``tpugraphs``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from competition.predictions import write_submission
from competition.scoring import SubmissionInvalid, format_report, load_solution, score_submission
from competition.submission import expected_from_data_dir, format_problems, validate_submission
from competition.synth import generate_competition
from solutions import baselines

METHODS = {
    "sample": lambda data: baselines.sample_rows(data),
    "random": lambda data: baselines.random_rows(data, seed=0),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m solutions.demo", description=__doc__)
    parser.add_argument("--out", default="data/demo", help="where the competition and submissions go")
    parser.add_argument("--scale", default="small", choices=("tiny", "small"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    out = Path(args.out)
    public, solution_path = out / "public", out / "private" / "solution.csv"
    if not solution_path.is_file():
        started = time.perf_counter()
        print(f"[1/3] building the {args.scale} embedded competition in {out} (seed {args.seed}) ...")
        generate_competition(out, scale=args.scale, seed=args.seed, progress=True)
        print(f"      done in {time.perf_counter() - started:.1f} s")
    else:
        print(f"[1/3] reusing the embedded competition in {out} (delete it to rebuild)")

    expected = expected_from_data_dir(public)
    solution = load_solution(solution_path)
    results = {}
    for step, (name, make_rows) in enumerate(METHODS.items(), start=2):
        print(f"[{step}/3] {name}: writing, validating and scoring the submission")
        sub_path = write_submission(out / "submissions" / f"{name}.csv", make_rows(public))
        checked = validate_submission(sub_path, expected)
        if not checked.ok:
            print(format_problems(checked, source_name=str(sub_path)), file=sys.stderr)
            return 1
        try:
            results[name] = score_submission(sub_path, solution)
        except SubmissionInvalid as exc:
            print(str(exc), file=sys.stderr)
            return 1
        print(f"      {sub_path}: valid, {len(checked.rows)} rows")
    for name, report in results.items():
        print(f"\n== {name} (test score against the hidden labels)\n{format_report(report)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
