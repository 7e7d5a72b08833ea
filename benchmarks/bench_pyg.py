"""The PyTorch Geometric dataset (``solutions.pyg``): speed against the kit's gnn, the docs example's score.

1. **Speed.** The train split of the four layout collections of the ``small`` embedded competition
   (seed 0), read two ways, alternately, ``--repeats`` times (median):
   - baseline, the kit's gnn reading them as it does before it trains: ``load_examples`` over a
     ``SplitSource`` with its default pruning (``OneHop``) and compression (load, prune, scale,
     deduplicate, pack), one collection after another;
   - one epoch of ``TpuGraphsDataset`` (``transform="onehop"``, ``configs_per_graph=32``) through
     ``torch_geometric.loader.DataLoader(batch_size=8, shuffle=True)``, fresh datasets (cold: every file
     read and pruned, every batch drawn and collated), then a second epoch of the same datasets (warm:
     the tensors kept in memory, only draws and collation);
   - the same with the processed cache (built before the timing): the gnn reading
     ``SplitSource.graphs(cache_dir)``, the dataset given ``cache_dir=``.
   The ratio is the gnn's time over the epoch's: above 1, the DataLoader epoch is the faster.
   Target: the cold epoch no slower than the gnn's read (ratio >= 1).
2. **Scores.** The example of docs/pyg.md, run as written on ``layout:xla:random``, beside ``tpugraphs
   solve`` with random, the heuristic and the gnn (default settings) on the same competition: the valid
   score (the evaluator; ``solve``'s report) and the score on the hidden test labels (the scorer).

Prints markdown tables.

usage: python -m benchmarks.bench_pyg [--repeats 3] [--data DIR] [--no-scores]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch_geometric.loader import DataLoader

from competition.collections import COLLECTIONS
from competition.data.locate import find_data
from competition.data.processed_cache import cache_split
from competition.scoring import Solution, load_solution, score_submission
from solutions.methods.base import SplitSource
from solutions.methods.gnn.data import load_examples
from solutions.pruning import OneHop
from solutions.pyg import Evaluator, TpuGraphsDataset

ROOT = Path(__file__).resolve().parents[1]
LAYOUTS = [c for c in COLLECTIONS if c.task.has_configurable_nodes]
EXAMPLE_COLLECTION = "layout:xla:random"
CONFIGS_PER_GRAPH = 32
BATCH_SIZE = 8


def gnn_read(data: Path, cache_dir: Path | None) -> int:
    """The kit's gnn reading the train graphs of every layout collection; returns the graph count."""
    count = 0
    for collection in LAYOUTS:
        source = SplitSource(data, collection, "train")
        count += len(load_examples(source.graphs(cache_dir), transform=OneHop(), compress=True))
    return count


def datasets(data: Path, cache_dir: Path | None) -> list[TpuGraphsDataset]:
    return [TpuGraphsDataset(data, c.name, "train", configs_per_graph=CONFIGS_PER_GRAPH, transform="onehop",
                             cache_dir=cache_dir) for c in LAYOUTS]


def epoch(sets: list[TpuGraphsDataset]) -> int:
    """One epoch through the DataLoader, one collection after another; returns the configs seen."""
    configs = 0
    for dataset in sets:
        for batch in DataLoader(dataset, batch_size=BATCH_SIZE, shuffle=True):
            configs += batch.num_configs
    return configs


def timed(job: Callable[[], object]) -> float:
    started = time.perf_counter()
    job()
    return time.perf_counter() - started


def speed(data: Path, repeats: int) -> list[dict[str, object]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-pyg-cache-") as tmp:
        cache = Path(tmp)
        for collection in LAYOUTS:
            cache_split(data, collection, "train", cache, progress=False)
        for label, cache_dir in (("released npz files", None), ("processed cache", cache)):
            gnn, cold, warm = [], [], []
            for _ in range(repeats):
                gnn.append(timed(lambda cache_dir=cache_dir: gnn_read(data, cache_dir)))
                sets = datasets(data, cache_dir)
                cold.append(timed(lambda sets=sets: epoch(sets)))
                warm.append(timed(lambda sets=sets: epoch(sets)))
            g = statistics.median(gnn)
            for what, times in (("first epoch (cold)", cold), ("second epoch (warm)", warm)):
                t = statistics.median(times)
                rows.append({"read from": label, "pyg": what, "gnn read s": g, "pyg epoch s": t,
                             "ratio": g / t})
    return rows


def example_code() -> str:
    """The example of docs/pyg.md: the python block after the ``<!-- pyg-example -->`` marker."""
    text = (ROOT / "docs" / "pyg.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- pyg-example -->\n```python\n(.*?)```", text, flags=re.S)
    if found is None:
        raise SystemExit("docs/pyg.md: no python block after <!-- pyg-example -->")
    return found.group(1)


def run_example(data: Path, workdir: Path) -> tuple[dict[str, object], float]:
    """Run the docs example as written in ``workdir``; its namespace and its wall time."""
    namespace: dict[str, object] = {"DATA": data, "__name__": "__pyg_example__"}
    here = Path.cwd()
    os.chdir(workdir)
    try:
        started = time.perf_counter()
        exec(compile(example_code(), "docs/pyg.md", "exec"), namespace)  # noqa: S102 - the docs' own code
        return namespace, time.perf_counter() - started
    finally:
        os.chdir(here)


def scores(data: Path, solution: Path) -> list[dict[str, object]]:
    everything = load_solution(solution)
    labels = Solution({EXAMPLE_COLLECTION: everything.labels[EXAMPLE_COLLECTION]})  # solve's partial files
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-pyg-") as tmp:
        work = Path(tmp)
        for method in ("random", "heuristic", "gnn"):
            report = work / f"{method}.json"
            started = time.perf_counter()
            # python -m solutions is tpugraphs solve
            subprocess.run([sys.executable, "-m", "solutions", "--data", str(data), "--method", method,
                            "--collection", EXAMPLE_COLLECTION, "--out", str(work / f"{method}.csv"),
                            "--json", str(report), "--quiet"], check=True, capture_output=True, text=True)
            seconds = time.perf_counter() - started
            valid = json.loads(report.read_text())["collections"][0]["validation_score"]
            test = score_submission(work / f"{method}.csv", labels).collections[EXAMPLE_COLLECTION]
            rows.append({"method": method, "valid": valid, "test": test, "seconds": seconds})
        namespace, seconds = run_example(data, work)
        model, predict = namespace["model"], namespace["predict"]
        valid_set, test_set = namespace["valid"], namespace["test"]
        valid = Evaluator(EXAMPLE_COLLECTION, data, "valid").eval(predict(model, valid_set))["score"]
        test = Evaluator(EXAMPLE_COLLECTION, data, "test", solution=solution).eval(predict(model, test_set))
        submitted = score_submission(work / "submission.csv", everything).collections[EXAMPLE_COLLECTION]
        if submitted != test["score"]:
            raise SystemExit(f"the example's submission scores {submitted}, its evaluator {test['score']}")
        rows.append({"method": "docs/pyg.md GraphSAGE", "valid": valid, "test": test["score"],
                     "seconds": seconds})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data", type=Path, default=None,
                        help="a competition folder (default: the small embedded competition, seed 0)")
    parser.add_argument("--no-scores", action="store_true", help="the speed table only")
    args = parser.parse_args(argv)
    location = find_data(args.data, scale="small", seed=0, progress=False)
    data = location.public_dir
    print(f"data: {data}; torch {torch.__version__}, {torch.get_num_threads()} threads\n")
    graphs = sum(len(SplitSource(data, c, "train")) for c in LAYOUTS)
    print(f"## Speed: the train graphs of the four layout collections ({graphs} graphs), median of "
          f"{args.repeats}\n")
    print("| read from | DataLoader epoch | gnn read (s) | epoch (s) | gnn / epoch |")
    print("|---|---|---:|---:|---:|")
    for row in speed(data, args.repeats):
        print(f"| {row['read from']} | {row['pyg']} | {row['gnn read s']:.2f} | {row['pyg epoch s']:.2f} | "
              f"{row['ratio']:.1f}x |")
    if args.no_scores:
        return 0
    if location.solution_path is None:
        print("\nno hidden labels beside the data: scores skipped")
        return 0
    print(f"\n## Scores on {EXAMPLE_COLLECTION} (kendall_tau)\n")
    print("| method | valid | test | wall (s) |")
    print("|---|---:|---:|---:|")
    for row in scores(data, location.solution_path):
        print(f"| {row['method']} | {row['valid']:.3f} | {row['test']:.3f} | {row['seconds']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
