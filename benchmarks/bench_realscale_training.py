"""Peak memory of a GNN fit on real-size layout:nlp:random graphs, with and without the processed cache.

The data: a Kaggle-layout tree under a temporary folder with ``--graphs`` training graphs at the real
worst case (100,040 configs x 121 configurable nodes each, 872 MB of float32 ``node_config_feat``
per graph once decompressed; ``benchmarks.realscale.write_nlp_npz``, ~25 s each), a small valid
graph and a small test graph (runtimes zeroed, as released test files). Each run is
``solve(..., collections=["layout:nlp:random"], options=FitOptions(cache_dir=...))`` with a few short
epochs, in a fresh child process whose peak resident memory (``ru_maxrss``) is read with
``getrusage(RUSAGE_CHILDREN)`` by a wrapper process of its own, so runs never share a peak:

- ``cache, cold``: the cache is built (once per file) and then trained from;
- ``cache, warm``: the same command again, the cache reused (no rebuild);
- ``no cache``: the released files loaded whole (skipped with ``--skip-no-cache``; it needs about
  the float32 tensor of one graph at a time plus its packed copy, ~2 GB here).

Target: the cached fit within 8 GB. With the cache, validation and test prediction read through it
too (here on small graphs); ``benchmarks.bench_realscale_split`` measures a whole real-size split.

usage: python -m benchmarks.bench_realscale_training [--graphs 2] [--epochs 4] [--keep DIR] [--skip-no-cache]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from benchmarks.measure import measure_python
from benchmarks.realscale import NLP_CONFIGS, write_nlp_npz
from competition.collections import COLLECTION_BY_NAME
from competition.data.graphs import load_graph, save_graph

ROOT = Path(__file__).resolve().parents[1]
COLLECTION = COLLECTION_BY_NAME["layout:nlp:random"]
TARGET_GB = 8.0
SMALL_CONFIGS = 2_000  # valid and test graphs: enough to score, small enough to load whole

# One solve run; argv: data_dir out cache_dir|"" params_json time_budget_s. Prints the report summary.
_SOLVE = """
import json, sys
from pathlib import Path
from solutions.methods.base import FitOptions
from solutions.solve.runner import solve
data, out, cache, params, budget = sys.argv[1:]
options = FitOptions(progress=False, time_budget_s=float(budget), cache_dir=Path(cache) if cache else None)
report = solve(data, "gnn", out, collections=["layout:nlp:random"], options=options,
               method_params=json.loads(params))
c = report.collections[0]
print(json.dumps({"fit_s": round(c.fit_seconds, 1), "steps": c.details.get("steps"),
                  "valid": round(c.validation_score, 4), "rows": report.rows}))
"""


def write_data(root: Path, graphs: int) -> Path:
    """The Kaggle-layout tree (reused when already there); returns the data directory to pass to solve."""
    data = root / "public"
    split_root = data / "npz_all" / "npz" / COLLECTION.subpath
    for i in range(graphs):
        path = split_root / "train" / f"realscale_{i}.npz"
        if not path.is_file():
            started = time.perf_counter()
            write_nlp_npz(path, num_configs=NLP_CONFIGS, seed=i)
            print(f"wrote {path.name}: {NLP_CONFIGS} configs in {time.perf_counter() - started:.0f} s",
                  flush=True)
    valid = split_root / "valid" / "realscale_valid.npz"
    if not valid.is_file():
        write_nlp_npz(valid, num_configs=SMALL_CONFIGS, seed=100)
    test = split_root / "test" / "realscale_test.npz"
    if not test.is_file():
        write_nlp_npz(test, num_configs=SMALL_CONFIGS, seed=200)
        graph = load_graph(test, "layout")
        save_graph(replace(graph, config_runtime=np.zeros_like(graph.config_runtime)), test)  # no labels
    return data


def measure(data: Path, out: Path, cache: Path | None, params: dict, budget_s: float) -> dict:
    """Run one solve in a fresh process; its peak RSS (GB), wall time and report summary."""
    measured = measure_python(_SOLVE, str(data), str(out), str(cache) if cache else "", json.dumps(params),
                              str(budget_s))
    summary = measured.stdout.strip().splitlines()[-1]
    return {"peak_gb": measured.peak_mb / 1024, "seconds": measured.seconds, **json.loads(summary)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graphs", type=int, default=2, help="real-size training graphs (default: 2)")
    parser.add_argument("--epochs", type=int, default=4, help="layout epochs of each fit (default: 4)")
    parser.add_argument("--time-budget", type=float, default=600.0,
                        help="soft training time limit, s (default: 600, a safety net: epochs end the fit)")
    parser.add_argument("--keep", type=Path,
                        help="reuse (or write) the data and cache here instead of a temp folder")
    parser.add_argument("--skip-no-cache", action="store_true", help="do not run the fit without the cache")
    args = parser.parse_args()
    params = {"layout_epochs": args.epochs, "hidden": 32, "layers": 2, "layout_configs_per_graph": 32,
              "layout_valid_configs": 256, "eval_every": 1}

    with tempfile.TemporaryDirectory(prefix="realscale-training-") as scratch:
        root = args.keep or Path(scratch)
        data = write_data(root, args.graphs)
        cache = root / "cache"
        runs = {}
        runs["cache, cold"] = measure(data, root / "cached.csv", cache, params, args.time_budget)
        runs["cache, warm"] = measure(data, root / "cached_again.csv", cache, params, args.time_budget)
        if not args.skip_no_cache:
            runs["no cache"] = measure(data, root / "plain.csv", None, params, args.time_budget)
        same = [(root / name).read_bytes() for name in ("cached.csv", "cached_again.csv", "plain.csv")
                if (root / name).is_file()]

    print(f"\nGNN fit on {args.graphs} x {NLP_CONFIGS} configs x 121 configurable nodes (layout:nlp:random), "
          f"{args.epochs} epochs, time budget {args.time_budget:.0f} s")
    print(f"{'run':<14} {'peak RSS GB':>11} {'wall s':>7} {'fit s':>6} {'steps':>6} {'valid':>7}")
    for name, run in runs.items():
        print(f"{name:<14} {run['peak_gb']:>11.2f} {run['seconds']:>7.1f} {run['fit_s']:>6.1f} "
              f"{run['steps']!s:>6} {run['valid']:>7.4f}")
    print(f"submissions identical: {all(s == same[0] for s in same)} ({len(same)} runs)")
    ok = runs["cache, cold"]["peak_gb"] <= TARGET_GB and runs["cache, warm"]["peak_gb"] <= TARGET_GB
    print(f"target: cached fit within {TARGET_GB:.0f} GB: {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
