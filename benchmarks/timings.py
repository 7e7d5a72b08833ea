"""The README's two commands timed the way a new user meets them (`make timings`).

Each round clones this repository's committed HEAD into a fresh folder and runs, there, `make demo`,
`make test` and `make check` one after another, as a reader following the README would: the first
builds `.venv` (with the packages in pip's cache), the second installs the test tools. For each command
it records the wall time, the CPU time of everything the command ran (the children's user + system
time) and the machine's load average (1 minute) when the command started and ended, so that a figure
taken on a busy machine says so. The table printed at the end gives each command's median over the
rounds with its CPU time and load beside it: BENCHMARKS.md's Timings table holds those figures, and
the README quotes them (`tests/test_readme.py` checks that every time the README quotes is one of
that table's).

    python -m benchmarks.timings --rounds 3 --out data/timings.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ("demo", "test", "check")


@dataclass(frozen=True)
class Timing:
    command: str
    round: int
    wall_s: float
    cpu_s: float
    load_start: float
    load_end: float
    status: int


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_make(target: str, clone: Path, round_index: int, log: Path) -> Timing:
    """``make TARGET`` in ``clone``, its output appended to ``log``."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    load_start, cpu_start, started = os.getloadavg()[0], _children_cpu(), time.monotonic()
    with log.open("a", encoding="utf-8") as out:
        out.write(f"\n===== round {round_index}: make {target} =====\n")
        out.flush()
        done = subprocess.run(["make", target], cwd=clone, env=env, stdout=out, stderr=subprocess.STDOUT,
                              check=False)
    return Timing(target, round_index, round(time.monotonic() - started, 1),
                  round(_children_cpu() - cpu_start, 1), round(load_start, 2), round(os.getloadavg()[0], 2),
                  done.returncode)


def one_round(round_index: int, work: Path, log: Path) -> list[Timing]:
    """A fresh clone of HEAD, then the README's commands in it."""
    clone = work / f"round-{round_index}"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    timings = []
    for target in COMMANDS:
        timing = run_make(target, clone, round_index, log)
        timings.append(timing)
        print(f"round {round_index}: make {target}: {timing.wall_s:.0f} s wall, {timing.cpu_s:.0f} s CPU, "
              f"load {timing.load_start:.1f} -> {timing.load_end:.1f}, exit {timing.status}", flush=True)
        if timing.status != 0:
            break
    return timings


def table(timings: list[Timing]) -> str:
    """Markdown rows: each command's median wall and CPU time over the rounds, with the load range."""
    lines = ["| command | median wall | median CPU | rounds | load (1 min) during the runs |",
             "|---|---|---|---|---|"]
    for command in COMMANDS:
        mine = [t for t in timings if t.command == command and t.status == 0]
        if not mine:
            continue
        loads = [value for t in mine for value in (t.load_start, t.load_end)]
        lines.append(f"| `make {command}` | {statistics.median(t.wall_s for t in mine):.0f} s | "
                     f"{statistics.median(t.cpu_s for t in mine):.0f} s | {len(mine)} | "
                     f"{min(loads):.1f}-{max(loads):.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="fresh clones, each running every command")
    parser.add_argument("--out", type=Path, default=Path("data/timings.json"), help="JSON results")
    parser.add_argument("--keep", type=Path, help="clone here instead of a temporary folder (kept)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds {args.rounds}: at least 1")
    if subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain"], capture_output=True, text=True,
                      check=False).stdout.strip():
        print("timings: note: the work tree has uncommitted changes; the clones time the committed HEAD",
              file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    log = args.out.with_suffix(".log")
    log.write_text("", encoding="utf-8")
    timings: list[Timing] = []
    with tempfile.TemporaryDirectory(prefix="tpugraphs-timings-") as scratch:
        work = args.keep or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        for round_index in range(1, args.rounds + 1):
            timings += one_round(round_index, work, log)
    args.out.write_text(json.dumps({"cores": os.cpu_count(), "timings": [asdict(t) for t in timings]},
                                   indent=1) + "\n", encoding="utf-8")
    print(f"\n{table(timings)}\n\nwritten: {args.out} (each command's output: {log})")
    return 0 if all(t.status == 0 for t in timings) else 1


if __name__ == "__main__":
    sys.exit(main())
