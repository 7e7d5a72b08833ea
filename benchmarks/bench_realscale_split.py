"""Peak memory of the reference solutions over a whole real-size ``layout:nlp:random`` split, end to end.

The claim checked: with a cache folder (``tpugraphs solve --cache-dir``), training on the whole
``layout:nlp:*`` train split, validating on its valid split and predicting its test split stays
within 8 GB, although the split's config tensors add up to tens of GB of float32.

The data: a Kaggle-layout tree with the real split sizes (docs/competition.md, The task: 207 train, 20 valid,
17 test graphs). Per-graph sizes are not published beyond the extremes, so they are drawn (seeded):

- configs log-uniform in 1,000 .. 100,040, the two largest training graphs and the largest valid
  graph set to the published worst case (100,040 configs x 121 configurable nodes, 872 MB of
  float32 each);
- configurable nodes log-uniform in 20 .. 121, 30 nodes per configurable node;
- distinct configs 2 % .. 50 % of the configs (docs/competition.md, Data format: some nlp graphs are > 98 %
  duplicates);
- test graphs 1,000 configs (two 1,001) with all-zero runtimes, as released.

Files are written by ``benchmarks.realscale.write_nlp_npz`` (deflate level 1, to keep generation to
minutes; reading is unaffected). Each run is a fresh ``solve`` process over the collection, peak
resident memory from ``getrusage`` of a wrapper process (``benchmarks.measure``):

- ``gnn, cold cache``: builds every graph's cache (train, valid, test), trains, validates, predicts;
- ``gbdt, warm cache``: the same caches reused;
- with ``--no-cache-too``, ``gnn`` without the cache for comparison (every graph loaded whole).

usage: python -m benchmarks.bench_realscale_split [--train 207 --valid 20 --test 17] [--keep DIR]
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
from benchmarks.realscale import NLP_CONFIGS, NLP_CONFIGURABLE, write_nlp_npz
from competition.collections import COLLECTION_BY_NAME
from competition.data.graphs import load_graph, save_graph
from competition.tasks import LAYOUT_CONFIG_DIM

COLLECTION = COLLECTION_BY_NAME["layout:nlp:random"]
TARGET_GB = 8.0
MIN_CONFIGS, MIN_CONFIGURABLE = 1_000, 20
NODES_PER_CONFIGURABLE = 30
TEST_CONFIGS = 1_000

# One solve run; argv: data_dir out cache_dir|"" method params_json. Prints the report summary.
_SOLVE = """
import json, sys
from pathlib import Path
from solutions.methods.base import FitOptions
from solutions.solve.runner import solve
data, out, cache, method, params = sys.argv[1:]
options = FitOptions(progress=False, cache_dir=Path(cache) if cache else None)
report = solve(data, method, out, collections=["layout:nlp:random"], options=options,
               method_params=json.loads(params))
c = report.collections[0]
print(json.dumps({"fit_s": round(c.fit_seconds, 1),
                  "predict_s": round(c.validate_seconds + c.predict_seconds, 1),
                  "valid": round(c.validation_score, 4), "rows": report.rows}))
"""

GNN_PARAMS = {"layout_epochs": 2, "hidden": 32, "layers": 2, "layout_configs_per_graph": 32,
              "layout_valid_configs": 256, "eval_every": 1}
GBDT_PARAMS = {"num_boost_round": 60, "min_boost_round": 20, "early_stopping_rounds": 20,
               "max_configs_per_graph": 200}


def _log_uniform(rng: np.random.Generator, low: float, high: float, size: int) -> np.ndarray:
    return np.exp(rng.uniform(np.log(low), np.log(high), size=size))


def graph_sizes(count: int, seed: int, *, worst: int) -> list[tuple[int, int, int]]:
    """``(configs, configurable nodes, distinct configs)`` of ``count`` graphs, the first ``worst`` at the
    published extreme (100,040 x 121)."""
    rng = np.random.default_rng(seed)
    configs = np.round(_log_uniform(rng, MIN_CONFIGS, NLP_CONFIGS, count)).astype(int)
    configurable = np.round(_log_uniform(rng, MIN_CONFIGURABLE, NLP_CONFIGURABLE, count)).astype(int)
    distinct = np.maximum(2, np.round(configs * rng.uniform(0.02, 0.5, size=count))).astype(int)
    configs[:worst], configurable[:worst], distinct[:worst] = NLP_CONFIGS, NLP_CONFIGURABLE, 2_000
    return list(zip(configs.tolist(), configurable.tolist(), distinct.tolist(), strict=True))


def write_split(root: Path, split: str, sizes: list[tuple[int, int, int]], seed: int, *,
                labeled: bool) -> int:
    """Write (or keep) one split's files; returns the float32 bytes of their config tensors."""
    folder = root / "npz_all" / "npz" / COLLECTION.subpath / split
    total = 0
    for i, (configs, nc, distinct) in enumerate(sizes):
        path = folder / f"{split}_{i:03d}.npz"
        total += configs * nc * LAYOUT_CONFIG_DIM * 4
        if path.is_file():
            continue
        write_nlp_npz(path, num_configs=configs, num_configurable=nc, num_nodes=nc * NODES_PER_CONFIGURABLE,
                      distinct_configs=min(distinct, configs), seed=seed + i, compresslevel=1)
        if not labeled:
            graph = load_graph(path, "layout")
            save_graph(replace(graph, config_runtime=np.zeros_like(graph.config_runtime)), path)
    return total


def write_data(root: Path, train: int, valid: int, test: int) -> tuple[Path, dict[str, int]]:
    started = time.perf_counter()
    data = root / "public"
    test_sizes = [(TEST_CONFIGS + (i < 2), nc, min(TEST_CONFIGS, d))
                  for i, (_, nc, d) in enumerate(graph_sizes(test, 3, worst=0))]
    floats = {
        "train": write_split(data, "train", graph_sizes(train, 1, worst=min(2, train)), 1000, labeled=True),
        "valid": write_split(data, "valid", graph_sizes(valid, 2, worst=min(1, valid)), 2000, labeled=True),
        "test": write_split(data, "test", test_sizes, 3000, labeled=False),
    }
    on_disk = sum(p.stat().st_size for p in data.rglob("*.npz"))
    print(f"data: {train}/{valid}/{test} graphs, {sum(floats.values()) / 1e9:.1f} GB of float32 configs, "
          f"{on_disk / 1e9:.2f} GB of npz on disk ({time.perf_counter() - started:.0f} s)", flush=True)
    return data, floats


def measure(data: Path, out: Path, cache: Path | None, method: str, params: dict) -> dict:
    measured = measure_python(_SOLVE, str(data), str(out), str(cache) if cache else "", method,
                              json.dumps(params))
    summary = json.loads(measured.stdout.strip().splitlines()[-1])
    print(f"  {method} {'cache' if cache else 'no cache'}: {measured.peak_mb / 1024:.2f} GB, "
          f"{measured.seconds:.0f} s", flush=True)
    return {"peak_gb": measured.peak_mb / 1024, "seconds": measured.seconds, **summary}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", type=int, default=207,
                        help="training graphs (default: 207, the real count)")
    parser.add_argument("--valid", type=int, default=20, help="valid graphs (default: 20)")
    parser.add_argument("--test", type=int, default=17, help="test graphs (default: 17)")
    parser.add_argument("--keep", type=Path,
                        help="reuse (or write) the data and cache here instead of a temp folder")
    parser.add_argument("--no-cache-too", action="store_true", help="also run gnn without the cache")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="realscale-split-") as scratch:
        root = args.keep or Path(scratch)
        data, floats = write_data(root, args.train, args.valid, args.test)
        cache = root / "cache"
        runs = {
            "gnn, cold cache": measure(data, root / "gnn.csv", cache, "gnn", GNN_PARAMS),
            "gbdt, warm cache": measure(data, root / "gbdt.csv", cache, "gbdt", GBDT_PARAMS),
        }
        cache_gb = sum(p.stat().st_size for p in cache.rglob("*.npy")) / 1e9
        if args.no_cache_too:
            runs["gnn, no cache"] = measure(data, root / "gnn_plain.csv", None, "gnn", GNN_PARAMS)
            print(f"gnn submissions identical with and without the cache: "
                  f"{(root / 'gnn.csv').read_bytes() == (root / 'gnn_plain.csv').read_bytes()}")

    print(f"\nlayout:nlp:random at real scale: {args.train} train / {args.valid} valid / {args.test} "
          f"test graphs; config tensors {floats['train'] / 1e9:.1f} / {floats['valid'] / 1e9:.1f} / "
          f"{floats['test'] / 1e9:.2f} GB as float32; cache on disk {cache_gb:.1f} GB")
    print(f"{'run':<18} {'peak RSS GB':>11} {'wall s':>7} {'fit s':>6} {'predict s':>9} {'valid':>7}")
    for name, run in runs.items():
        print(f"{name:<18} {run['peak_gb']:>11.2f} {run['seconds']:>7.0f} {run['fit_s']:>6.0f} "
              f"{run['predict_s']:>9.0f} {run['valid']:>7.4f}")
    ok = all(run["peak_gb"] <= TARGET_GB for name, run in runs.items() if "no cache" not in name)
    print(f"target: every cached run within {TARGET_GB:.0f} GB: {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
