"""``make bench``: run every benchmark in turn and print its figures (they go into BENCHMARKS.md).

Each benchmark is a module with a ``main() -> int`` that measures the kit against a baseline in the
same run and exits non-zero when a target is missed. Modules whose optional parts are not installed
are skipped with a note.
"""

from __future__ import annotations

import importlib
import sys
import time

BENCHMARKS = (
    "benchmarks.bench_scoring",
    "benchmarks.bench_statistics",
    "benchmarks.bench_pruning",
    "benchmarks.bench_inspect",
    "benchmarks.bench_cache",
    "benchmarks.bench_prepare",
    "benchmarks.bench_accel",  # needs torch-scatter (make accel); skipped without it
    "benchmarks.bench_solutions",
    "benchmarks.bench_gst",
    "benchmarks.bench_fusion",
    "benchmarks.bench_engineered",
    "benchmarks.bench_realscale_training",
    "benchmarks.bench_realscale_split",  # the longest: writes and reads a 20 GB (float32) split
    "benchmarks.bench_leaderboard",
)


def main() -> int:
    failed = []
    for name in BENCHMARKS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            print(f"\n## {name}: skipped ({exc})")
            continue
        print(f"\n## {name}")
        started = time.perf_counter()
        saved_argv, sys.argv = sys.argv, [name]
        try:
            code = module.main()
        finally:
            sys.argv = saved_argv
        print(f"({name} took {time.perf_counter() - started:.0f} s)")
        if code:
            failed.append(name)
    if failed:
        print(f"\ntargets missed in: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
