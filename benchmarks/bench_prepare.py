"""Peak memory of ``tpugraphs prepare`` when the held-out graphs are the largest layout files.

The source: a layout:nlp tree whose every program (three families, both searches) is the largest
real shape, 100,040 configs x 121 configurable nodes (``benchmarks.realscale``, 872 MB of float32
``node_config_feat``; hard links to one generated file). Whichever family goes to test, two of these
graphs are held out and sampled down to 1000 configs each, and four are copied to train.

Measured in fresh processes: ``prepare_competition`` on that tree, and the baseline a direct
implementation needs for one held-out graph, ``load_graph`` (every array in memory) of that file.
Target: prepare's peak below 350 MB and below a third of the baseline's.

usage: python -m benchmarks.bench_prepare [--configs 100040] [--keep FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from benchmarks.measure import measure_python
from benchmarks.realscale import NLP_CONFIGS, worst_case_nlp_npz

TARGET_MB = 350.0
TARGET_RATIO = 1 / 3
PROGRAMS = ("albert_en_base_batch_size_16_train", "electra_small_batch_size_8_test",
            "talking-heads_base_batch_size_32_train")

_PREPARE = """
import json, sys
from competition.data.prepare import prepare_competition
summary = prepare_competition(sys.argv[1], sys.argv[2], seed=0)
print(json.dumps({"graphs": summary.graphs, "test_configs": summary.test_configs}))
"""
_LOAD = "import sys; from competition.data.graphs import load_graph; load_graph(sys.argv[1])"


def run(configs: int = NLP_CONFIGS, keep: Path | None = None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        big = worst_case_nlp_npz(keep or Path(tmp) / "albert_like.npz", num_configs=configs)
        source = Path(tmp) / "source" / "npz"
        for search in ("default", "random"):
            folder = source / "layout" / "nlp" / search / "train"
            folder.mkdir(parents=True)
            for program in PROGRAMS:
                os.link(big, folder / f"{program}.npz")
        prepared = measure_python(_PREPARE, str(source), str(Path(tmp) / "out"))
        baseline = measure_python(_LOAD, str(big))
        written = json.loads(prepared.stdout)
        return {
            "configs": configs,
            "npz_mb": big.stat().st_size / 2**20,
            "prepare_peak_mb": prepared.peak_mb,
            "prepare_s": prepared.seconds,
            "load_graph_peak_mb": baseline.peak_mb,
            "load_graph_s": baseline.seconds,
            "graphs": written["graphs"],
            "test_configs": written["test_configs"],
        }


def format_table(f: dict) -> str:
    tests = sum(split["test"] for split in f["graphs"].values())
    train = sum(split["train"] for split in f["graphs"].values())
    return "\n".join([
        "| process | peak RSS | wall time |",
        "|---|---|---|",
        f"| `prepare_competition` ({tests} test graphs sampled to 1000 configs, {train} copied) | "
        f"**{f['prepare_peak_mb']:.0f} MiB** | {f['prepare_s']:.1f} s |",
        f"| baseline: `load_graph` of one such file | {f['load_graph_peak_mb']:.0f} MiB | "
        f"{f['load_graph_s']:.1f} s |",
        "",
        f"Each graph: {f['configs']:,} configs x 121 configurable nodes, {f['npz_mb']:.0f} MiB compressed. "
        f"Test configs written: {f['test_configs']}.",
    ])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", type=int, default=NLP_CONFIGS)
    parser.add_argument("--keep", type=Path, help="reuse (or write) the generated npz here")
    args = parser.parse_args()
    figures = run(args.configs, args.keep)
    print(format_table(figures))
    ratio = figures["prepare_peak_mb"] / figures["load_graph_peak_mb"]
    ok = figures["prepare_peak_mb"] < TARGET_MB and ratio < TARGET_RATIO
    print(f"\nprepare peak {figures['prepare_peak_mb']:.0f} MiB = {ratio:.2f} x the baseline "
          f"(targets < {TARGET_MB:.0f} MiB and < {TARGET_RATIO:.2f} x)")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
