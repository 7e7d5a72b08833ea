"""Random config reads from the processed cache vs from the npz, on the largest layout file's shape.

The file: 100,040 configs x 121 configurable nodes (``benchmarks.realscale.write_nlp_npz``, 872 MB of
float32 ``node_config_feat``, compressed). Timed in one process, the three readers alternated, each
reading the same fresh 64 random config indices per round (median over rounds):
- the cache: ``build_cache`` once, then ``CachedGraph.configs(indices)`` (memory-mapped int8, decoded);
- the npz, as a user would write it: ``np.load(path)["node_config_feat"][indices]``, which must
  decompress the whole member;
- the npz streamed: decompress the member chunk by chunk, keep only the requested rows (bounded
  memory, same decompression cost).
Peak resident memory is measured in fresh child processes: building the cache, 100 random batches of
64 configs from the cache (with its allocated and mapped-file shares, from ``/proc``: Linux only),
and one baseline ``np.load`` read. Target: the cache at least 5x faster.

usage: python -m benchmarks.bench_cache [--configs 100040] [--rounds 5] [--keep FILE]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

from benchmarks.measure import measure_python
from benchmarks.realscale import NLP_CONFIGS, worst_case_nlp_npz
from competition.data.graphs import read_config_count
from competition.data.npz import read_exactly, read_npy_header
from competition.data.processed_cache import build_cache, open_cache

ROOT = Path(__file__).resolve().parents[1]
TARGET_SPEEDUP = 5.0
BATCH = 64

_BUILD = ("import sys; from competition.data.processed_cache import build_cache; "
          "build_cache(sys.argv[1], sys.argv[2], force=True)")
_READ_CACHE = """
import sys, numpy as np
from competition.data.processed_cache import open_cache
graph, rng = open_cache(sys.argv[1]), np.random.default_rng(0)
for _ in range(100):
    graph.configs(rng.integers(0, graph.num_configs, size=64))
status = dict(line.split(":", 1) for line in open("/proc/self/status")
              if line.startswith(("RssAnon", "RssFile")))
print(int(status["RssAnon"].split()[0]), int(status["RssFile"].split()[0]), file=sys.stderr)
"""
_READ_NPZ_STREAMED = """
import sys, numpy as np
from pathlib import Path
from benchmarks.bench_cache import read_npz_streamed
read_npz_streamed(Path(sys.argv[1]), np.random.default_rng(0).integers(0, int(sys.argv[2]), size=64))
"""
_READ_NPZ = """
import sys, numpy as np
np.load(sys.argv[1])["node_config_feat"][np.random.default_rng(0).integers(0, int(sys.argv[2]), size=64)]
"""


def _peak(code: str, *args: str) -> tuple[float, float, str]:
    """(peak RSS in MiB, seconds, its stderr) of ``python -c code args`` run in a fresh process."""
    measured = measure_python(code, *args)
    return measured.peak_mb, measured.seconds, measured.stderr.strip()


def read_npz_whole(path: Path, indices: np.ndarray) -> np.ndarray:
    """The baseline a user writes: load the member (decompressing all of it), then index."""
    with np.load(path) as npz:
        return npz["node_config_feat"][indices]


def read_npz_streamed(path: Path, indices: np.ndarray, chunk_bytes: int = 8 * 2**20) -> np.ndarray:
    """Decompress the config member chunk by chunk and keep only the rows at ``indices``."""
    with zipfile.ZipFile(path) as archive, archive.open("node_config_feat.npy") as fp:
        shape, _, dtype = read_npy_header(fp, path, "node_config_feat")
        row_items = math.prod(shape[1:])
        out = np.empty((len(indices), *shape[1:]), dtype=dtype)
        order = np.argsort(indices)
        wanted = indices[order]
        step = max(1, chunk_bytes // (row_items * dtype.itemsize))
        last = int(wanted[-1]) if len(wanted) else -1
        if len(wanted) and (wanted[0] < 0 or last >= shape[0]):
            raise IndexError(f"{path}: config indices must lie in 0..{shape[0] - 1}")
        for start in range(0, last + 1, step):  # nothing after the last wanted row is decompressed
            count = min(step, shape[0] - start)
            chunk = np.frombuffer(read_exactly(fp, count * row_items * dtype.itemsize, path, "x"),
                                  dtype=dtype)
            chunk = chunk.reshape(count, *shape[1:])
            lo, hi = np.searchsorted(wanted, [start, start + count])
            out[order[lo:hi]] = chunk[wanted[lo:hi] - start]
        return out


def run(configs: int = NLP_CONFIGS, rounds: int = 5, keep: Path | None = None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = worst_case_nlp_npz(keep or Path(tmp) / "albert_like.npz", num_configs=configs)
        cache_dir = Path(tmp) / "cache"
        build_mb, build_s, _ = _peak(_BUILD, str(path), str(cache_dir))
        read_mb, read_s, rss_split = _peak(_READ_CACHE, str(cache_dir))
        read_anon_kib, read_file_kib = (int(v) for v in rss_split.split())
        count = str(read_config_count(path))  # a kept file may hold another count than --configs
        npz_mb, _, _ = _peak(_READ_NPZ, str(path), count)
        streamed_mb, _, _ = _peak(_READ_NPZ_STREAMED, str(path), count)

        graph = open_cache(cache_dir)
        assert build_cache(path, cache_dir).num_configs == graph.num_configs  # fresh: reopened, not rebuilt
        rng = np.random.default_rng(0)
        times: dict[str, list[float]] = {"cache": [], "npz": [], "npz_streamed": []}
        readers = {
            "cache": graph.configs,
            "npz": lambda idx: read_npz_whole(path, idx),
            "npz_streamed": lambda idx: read_npz_streamed(path, idx),
        }
        for _ in range(rounds):
            indices = rng.integers(0, graph.num_configs, size=BATCH)
            results = {}
            for name, reader in readers.items():
                started = time.perf_counter()
                results[name] = reader(indices)
                times[name].append(time.perf_counter() - started)
            for name in ("npz", "npz_streamed"):
                np.testing.assert_array_equal(results["cache"], results[name])
        for _ in range(200):  # the cache read is fast: more samples for a stable median
            indices = rng.integers(0, graph.num_configs, size=BATCH)
            started = time.perf_counter()
            graph.configs(indices)
            times["cache"].append(time.perf_counter() - started)
        cache_bytes = sum(f.stat().st_size for f in cache_dir.iterdir())
        npz_bytes = path.stat().st_size
    medians = {name: statistics.median(values) for name, values in times.items()}
    return {
        "configs": graph.num_configs,
        "configurable_nodes": graph.num_configurable,
        "median_s": medians,
        "samples": {name: len(values) for name, values in times.items()},
        "speedup_vs_npz": medians["npz"] / medians["cache"],
        "speedup_vs_npz_streamed": medians["npz_streamed"] / medians["cache"],
        "build_peak_mb": build_mb,
        "build_s": build_s,
        "cache_reads_peak_mb": read_mb,
        "cache_reads_s": read_s,
        "cache_reads_anon_mb": read_anon_kib / 1024,  # allocations
        "cache_reads_file_mb": read_file_kib / 1024,  # clean file pages: the mapped cache, shared libraries
        "npz_read_peak_mb": npz_mb,
        "npz_streamed_read_peak_mb": streamed_mb,
        "cache_mb": cache_bytes / 2**20,
        "npz_mb": npz_bytes / 2**20,
    }


def format_table(f: dict) -> str:
    m = f["median_s"]
    rows = [
        "| reader | median time, 64 random configs | vs cache | peak RSS |",
        "|---|---|---|---|",
        f"| cache (`CachedGraph.configs`) | {m['cache'] * 1e3:.2f} ms | 1x | "
        f"{f['cache_reads_peak_mb']:.0f} MiB (100 batches, {f['cache_reads_s']:.1f} s with start-up; at the "
        f"end {f['cache_reads_anon_mb']:.0f} MiB "
        f"allocated + {f['cache_reads_file_mb']:.0f} MiB file pages: the mapped cache, libraries) |",
        f"| npz, `np.load(path)['node_config_feat'][idx]` | {m['npz'] * 1e3:.0f} ms | "
        f"{f['speedup_vs_npz']:.0f}x slower | {f['npz_read_peak_mb']:.0f} MiB (one batch) |",
        f"| npz streamed in chunks | {m['npz_streamed'] * 1e3:.0f} ms | "
        f"{f['speedup_vs_npz_streamed']:.0f}x slower | "
        f"{f['npz_streamed_read_peak_mb']:.0f} MiB (one batch) |",
        "",
        f"Graph: {f['configs']:,} configs x {f['configurable_nodes']} configurable nodes. "
        f"Cache build: {f['build_s']:.1f} s, peak RSS {f['build_peak_mb']:.0f} MiB. "
        f"On disk: npz {f['npz_mb']:.0f} MiB, cache {f['cache_mb']:.0f} MiB. "
        f"Samples: {f['samples']}.",
    ]
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", type=int, default=NLP_CONFIGS)
    parser.add_argument("--rounds", type=int, default=5, help="alternated rounds of the three readers")
    parser.add_argument("--keep", type=Path, help="reuse (or write) the generated npz here")
    args = parser.parse_args()
    figures = run(args.configs, args.rounds, args.keep)
    print(format_table(figures))
    ok = figures["speedup_vs_npz"] >= TARGET_SPEEDUP
    print(f"\ncache {figures['speedup_vs_npz']:.0f}x faster than np.load (target >= {TARGET_SPEEDUP:.0f}x)")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
