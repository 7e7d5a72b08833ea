"""A full-size rehearsal: every reference method end to end on a competition of the real release's size.

1. **Generation.** ``tpugraphs synth ROOT/data --scale full --workers N`` (docs/synthetic-data.md): the
   real graph counts of every collection and split and the real size extremes, 7,868 npz files.
   Measured: wall and CPU time, the peak memory of the whole process tree (the generator and its
   workers, sampled every second) and of its largest process (getrusage), files and bytes on disk.
   An existing complete competition in ``ROOT/data`` is reused when ``ROOT/results.json`` says this
   kit's generator version made it; otherwise the benchmark stops and says what to delete, since its
   scores would be reported as this kit's (``--data`` names another competition, measured as it is).
   Generating new data forgets the runs measured on the old.
2. **Methods.** For each method and collection, one fresh ``tpugraphs solve --collection C --cache-dir
   ROOT/cache --time-budget B`` process (``--timeout`` interrupts a run that goes on much longer:
   building caches and features is outside the solve's own budget). Measured: wall and CPU time,
   peak memory (tree and largest process), the disk of the shared cache after the run, of the run's
   models and of its submission, and the solve report (fit / validate / predict seconds, validation
   score, how training stopped). The per-collection submission is then validated and scored against
   ``private/solution.csv`` (``tpugraphs score --collection C``); when a method has all five, their
   rows together are scored as one submission.

Results go to ``ROOT/results.json`` (updated after every run, so an interrupted benchmark keeps what it
measured; a run already in it is skipped unless ``--rerun``) and a table is printed. Not part of
``make test`` or ``make bench``: the full competition takes about an hour to generate on two cores and
the methods many more (BENCHMARKS.md, Full-size rehearsal).

usage: python -m benchmarks.bench_fullscale --root DIR [--scale full] [--workers 2]
           [--methods random,heuristic,gbdt,gnn] [--collections tile:xla,layout:xla:random]
           [--time-budget 1800] [--timeout 7200] [--param gnn:hidden=32] [--generate-only]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.measure import ROOT, measure_tree
from competition.collections import COLLECTION_NAMES, SUBMISSION_HEADER
from competition.data.synth import GENERATOR_VERSION

METHODS = ("random", "heuristic", "gbdt", "gnn")


def _disk_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def _load(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {"generation": None, "runs": {}}


def _save(path: Path, results: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(results, indent=1, sort_keys=True))
    tmp.replace(path)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "competition.cli", *args]


def _complete(data: Path) -> bool:
    return ((data / "private" / "solution.csv").is_file()
            and (data / "public" / "sample_submission.csv").is_file())


def generate(data: Path, scale: str, seed: int, workers: int, log: Path) -> dict:
    """Generate the competition in ``data``, measured."""
    print(f"generating the {scale} competition (seed {seed}, {workers} workers) in {data}; log: {log}",
          flush=True)
    measured = measure_tree(_cli("synth", str(data), "--scale", scale, "--seed", str(seed), "--workers",
                                 str(workers), "--force"), log=log, env={"TPUGRAPHS_PROGRESS": "lines"})
    if measured.rc:
        raise SystemExit(f"generation failed (exit {measured.rc}); see {log}")
    files = list((data / "public").rglob("*.npz"))
    return {
        "scale": scale, "seed": seed, "workers": workers, "generator_version": GENERATOR_VERSION,
        "wall_s": round(measured.seconds, 1),
        "cpu_s": round(measured.cpu_seconds, 1), "peak_tree_mb": round(measured.peak_tree_mb),
        "peak_process_mb": round(measured.peak_process_mb), "npz_files": len(files),
        "public_bytes": _disk_bytes(data / "public"), "private_bytes": _disk_bytes(data / "private"),
        "largest_npz_bytes": max(p.stat().st_size for p in files),
        "load_average": os.getloadavg(),
    }


def _score(submission: Path, solution: Path, collections: list[str]) -> dict:
    args = ["score", str(submission), "--solution", str(solution), "--json"]
    for c in collections:
        args += ["--collection", c]
    done = subprocess.run(_cli(*args), capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode:
        return {"valid": False, "message": (done.stdout + done.stderr)[-2000:]}
    scored = json.loads(done.stdout)
    return {"valid": True, "score": scored["score"], "public": scored["public"], "private": scored["private"]}


def run_method(root: Path, data: Path, method: str, collection: str, *, time_budget: float | None,
               timeout: float | None, params: list[str]) -> dict:
    """One ``solve`` of one collection, measured, then scored."""
    runs = root / "runs" / method
    runs.mkdir(parents=True, exist_ok=True)
    stem = collection.replace(":", "_")
    submission, report, log = runs / f"{stem}.csv", runs / f"{stem}.json", runs / f"{stem}.log"
    models = runs / f"{stem}.models"
    for stale in (submission, report):
        stale.unlink(missing_ok=True)
    args = ["solve", "--data", str(data / "public"), "--method", method, "--collection", collection,
            "--out", str(submission), "--model-dir", str(models), "--cache-dir", str(root / "cache"),
            "--json", str(report)]
    if time_budget is not None:
        args += ["--time-budget", str(time_budget)]
    for param in params:
        args += ["--param", param]
    cache_before = _disk_bytes(root / "cache")
    print(f"{method} {collection}: solving (log: {log})", flush=True)
    measured = measure_tree(_cli(*args), log=log, timeout=timeout, env={"TPUGRAPHS_PROGRESS": "lines"})
    result = {
        "method": method, "collection": collection, "rc": measured.rc, "wall_s": round(measured.seconds, 1),
        "cpu_s": round(measured.cpu_seconds, 1), "peak_tree_mb": round(measured.peak_tree_mb),
        "peak_process_mb": round(measured.peak_process_mb), "cache_bytes": _disk_bytes(root / "cache"),
        "cache_added_bytes": _disk_bytes(root / "cache") - cache_before, "models_bytes": _disk_bytes(models),
        "submission_bytes": _disk_bytes(submission), "time_budget_s": time_budget, "timeout_s": timeout,
        "params": params, "load_average": os.getloadavg(),
    }
    if measured.rc or not report.is_file():
        tail = log.read_text(errors="replace")[-3000:] if log.is_file() else ""
        result.update(status="timed out" if timeout and measured.seconds > timeout else "failed",
                      log_tail=tail)
        return result
    solve_report = json.loads(report.read_text())
    c = solve_report["collections"][0]
    details = c.get("details") or {}
    result.update(
        status="ok", fit_s=round(c["fit_seconds"], 1), validate_s=round(c["validate_seconds"], 1),
        predict_s=round(c["predict_seconds"], 1), validation_score=c["validation_score"],
        stopped=details.get("stopped"), details={k: v for k, v in details.items() if k != "pruning"},
    )
    # A budget counts from the start of fitting; "hit" means training ended because of it.
    if time_budget is not None:
        result["hit_budget"] = details.get("stopped") == "time budget" if method == "gnn" else (
            method == "gbdt" and c["fit_seconds"] > time_budget)
    result["test"] = _score(submission, data / "private" / "solution.csv", [collection])
    return result


def _merged_score(root: Path, data: Path, method: str) -> dict | None:
    """Score the five per-collection submissions of ``method`` as one file, when all five exist."""
    parts = [root / "runs" / method / f"{c.replace(':', '_')}.csv" for c in COLLECTION_NAMES]
    if not all(p.is_file() for p in parts):
        return None
    merged = root / "runs" / method / "all.csv"
    with open(merged, "w", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(SUBMISSION_HEADER)
        for part in parts:
            with open(part, newline="") as fh:
                rows = csv.reader(fh)
                next(rows)
                writer.writerows(rows)
    return _score(merged, data / "private" / "solution.csv", [])


def table(results: dict) -> str:
    lines = []
    gen = results.get("generation")
    if gen:
        lines.append(f"generation ({gen['scale']}, {gen['workers']} workers): {gen['wall_s']:.0f} s wall, "
                     f"{gen['cpu_s']:.0f} s CPU, peak {gen['peak_tree_mb'] / 1024:.2f} GB (tree) / "
                     f"{gen['peak_process_mb'] / 1024:.2f} GB (one process), {gen['npz_files']} npz, "
                     f"{gen['public_bytes'] / 1e9:.2f} GB public + "
                     f"{gen['private_bytes'] / 1e6:.1f} MB private")
    lines.append(f"{'method':<10} {'collection':<19} {'status':<9} {'wall s':>7} {'fit s':>7} {'peak GB':>7} "
                 f"{'cache GB':>8} {'models MB':>9} {'valid':>7} {'test':>7} stopped")
    for run in results["runs"].values():
        test = run.get("test") or {}
        lines.append(
            f"{run['method']:<10} {run['collection']:<19} {run['status']:<9} {run['wall_s']:>7.0f} "
            f"{run.get('fit_s', float('nan')):>7.0f} {run['peak_tree_mb'] / 1024:>7.2f} "
            f"{run['cache_bytes'] / 1e9:>8.2f} "
            f"{run['models_bytes'] / 1e6:>9.1f} {run.get('validation_score', float('nan')):>7.4f} "
            f"{test.get('score') if test.get('score') is not None else float('nan'):>7.4f} "
            f"{run.get('stopped') or ''}")
    for method, merged in results.get("merged", {}).items():
        lines.append(f"{method}: all five collections scored together: {merged}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, required=True,
                        help="folder for the data, cache, runs and results")
    parser.add_argument("--data", type=Path,
                        help="an existing competition (OUT of tpugraphs synth) instead of ROOT/data")
    parser.add_argument("--scale", default="full",
                        help="scale to generate when there is no data (default: full)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2, help="generator processes (default: 2)")
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated (default: all four)")
    parser.add_argument("--collections", default=",".join(COLLECTION_NAMES),
                        help="comma-separated (default: all five)")
    parser.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                        help="solve --time-budget for the learned methods (gbdt, gnn), per collection")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                        help="interrupt a solve run after this long (default: never)")
    parser.add_argument("--param", action="append", default=[], metavar="METHOD:KEY=VALUE",
                        help="a --param for one method's runs (repeatable)")
    parser.add_argument("--generate-only", action="store_true", help="generate (or check) the data and stop")
    parser.add_argument("--rerun", action="store_true", help="run again what results.json already holds")
    args = parser.parse_args(argv)

    methods = [m for m in args.methods.split(",") if m]
    collections = [c for c in args.collections.split(",") if c]
    bad = [m for m in methods if m not in METHODS] + [c for c in collections if c not in COLLECTION_NAMES]
    if bad:
        parser.error(f"unknown method or collection: {', '.join(bad)}")
    root = args.root.absolute()
    root.mkdir(parents=True, exist_ok=True)
    results_path = root / "results.json"
    results = _load(results_path)
    data = (args.data or root / "data").absolute()
    made_by = (results.get("generation") or {}).get("generator_version")  # None: an older kit's results
    if not _complete(data):
        if args.data:
            parser.error(f"{data} holds no complete competition (public/ and private/solution.csv)")
        # New data: the runs measured on the data it replaces are not its runs.
        results = {"generation": generate(data, args.scale, args.seed, args.workers, root / "generate.log"),
                   "runs": {}}
        _save(results_path, results)
    elif not args.data and made_by != GENERATOR_VERSION:
        # Scores measured on another generator version would be reported as this kit's.
        maker = f"generator version {made_by}" if made_by else "an older kit"
        parser.error(f"{data} was generated by {maker} ({results_path} says), and this kit generates "
                     f"version {GENERATOR_VERSION}: delete {data} and {results_path} (and {root / 'cache'}) "
                     f"to generate it again, or pass --data {data} to measure that competition as it is")
    print(table({**results, "runs": {}}), flush=True)
    if args.generate_only:
        return 0

    for method in methods:
        for collection in collections:
            key = f"{method} {collection}"
            if key in results["runs"] and results["runs"][key]["status"] == "ok" and not args.rerun:
                continue
            learned = method in ("gbdt", "gnn")
            params = [p.split(":", 1)[1] for p in args.param if p.split(":", 1)[0] == method]
            started = time.perf_counter()
            results["runs"][key] = run_method(root, data, method, collection, params=params,
                                              time_budget=args.time_budget if learned else None,
                                              timeout=args.timeout)
            _save(results_path, results)
            run = results["runs"][key]
            print(f"  {run['status']} in {time.perf_counter() - started:.0f} s, peak "
                  f"{run['peak_tree_mb'] / 1024:.2f} GB, test {run.get('test')}", flush=True)
        merged = _merged_score(root, data, method)
        if merged is not None:
            results.setdefault("merged", {})[method] = merged
            _save(results_path, results)
    print(table(results))
    failed = [k for k, r in results["runs"].items() if r["status"] != "ok"
              or not (r.get("test") or {}).get("valid")]
    if failed:
        print(f"not ok: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
