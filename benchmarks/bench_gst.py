"""Graph Segment Training (``--param training=gst``): the memory of one step at the real extreme, and test
tau.

1. **One training step on the largest xla layout graph, unpruned** (``benchmarks.realscale.xla_layout_graph``:
   43,615 nodes, 72,000 edges, 2,250 configurable nodes; 64 configs): the graph is turned into a
   ``LayoutExample`` (``pruning=none``) and one optimizer step is taken with the gnn's default settings
   (32 configs per step, hidden 32, 3 layers), full-graph vs GST (segments of ``--segment-size`` nodes,
   ``segments_per_step`` 1), each in a fresh child process whose peak resident memory
   (``ru_maxrss``) is read by a wrapper process of its own (``benchmarks.measure``); the process
   peak is dominated by generating the graph, so each child also samples its resident memory every
   2 ms during the step (``solutions.solve.memory.PeakMemory``, after ``malloc_trim`` handed the
   generator's freed memory back) and reports the step's peak above the memory resident before
   it. A third child takes no step (the sampling's floor). Target: GST's step peak at least 10x
   smaller than the full-graph one.
2. **Test tau on the embedded competition**: ``tpugraphs solve`` on the four layout collections,
   the default model (``onehop`` pruning, full-graph training) vs GST unpruned (``training=gst``,
   ``pruning=none``, ``segment_size`` 256: the small competition's graphs are a few hundred to a few
   thousand nodes, so that several segments per graph are in play), both with default epochs;
   the written submissions scored on the hidden labels (Public + Private rows), with the paired
   bootstrap of the difference (``competition.stats.compare``). No target: the figures are reported
   as they come.

usage: python -m benchmarks.bench_gst [--competition data/demo] [--segment-size 1000] [--skip-tau]
       [--skip-memory] [--configs 32] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from benchmarks.bench_solutions import ensure_competition, run_solve, test_scores
from benchmarks.measure import measure_python

ROOT = Path(__file__).resolve().parents[1]
LAYOUT = ["layout:xla:default", "layout:xla:random", "layout:nlp:default", "layout:nlp:random"]
TARGET_STEP_RATIO = 10.0

# One child: argv mode ("none", "full" or "gst"), segment_size, configs per step. Prints JSON facts.
_STEP = """
import ctypes, gc, json, sys, time
import numpy as np, torch
from benchmarks.realscale import xla_layout_graph
from solutions.methods.gnn.data import layout_example
from solutions.methods.gnn.gst import SegmentTraining
from solutions.methods.gnn.model import LayoutRanker
from solutions.methods.gnn.train import GNNConfig, _gst_step, _layout_step
from solutions.solve.memory import PeakMemory, rss_reader
mode, segment_size, configs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.manual_seed(0)
torch.set_num_threads(1)
example = layout_example("xla", xla_layout_graph(num_configs=64), transform=None, compress=True)
# GST needs early fusion
config = GNNConfig(pruning="none", training="full" if mode == "none" else mode, segment_size=segment_size,
                   layout_configs_per_graph=configs, fusion="early", config_attention=False,
                   engineered_features=False)  # the examples above carry no engineered rows
model = LayoutRanker.from_settings(config)
optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr)
rng, device = np.random.default_rng(0), torch.device("cpu")
facts = {"nodes": example.num_nodes, "edges": int(example.inputs.edge_index.shape[1]),
         "configurable": int(example.inputs.config_node_ids.shape[0])}


def step():
    if mode == "gst":
        gst = SegmentTraining(segment_size, config.hidden)
        loss = _gst_step(gst, model, [(0, example)], config, rng, device, True)
        facts["segments"] = gst.num_segments
    else:
        loss = _layout_step(model, [(0, example)], config, rng, device, True)
    loss.backward()
    optimizer.step()
    facts["loss"] = float(loss.detach())


gc.collect()
ctypes.CDLL("libc.so.6").malloc_trim(0)  # hand the generator's freed memory back: the step starts from here
before = rss_reader()()
started = time.perf_counter()
with PeakMemory(interval=0.002) as memory:
    if mode != "none":
        step()
facts["step_seconds"] = time.perf_counter() - started
facts["step_mb"] = (memory.peak_bytes - before) / 2**20
facts["before_mb"] = before / 2**20
print(json.dumps(facts))
"""


def step_memory(segment_size: int, configs: int) -> list[dict]:
    rows = []
    for mode in ("none", "full", "gst"):
        measured = measure_python(_STEP, mode, str(segment_size), str(configs))
        facts = json.loads(measured.stdout.strip().splitlines()[-1])
        rows.append({"mode": mode, "peak_mb": measured.peak_mb, **facts})
        print(f"  {mode}: peak {measured.peak_mb:.0f} MiB, step {facts['step_seconds']:.1f} s",
              file=sys.stderr)
    return rows


def memory_table(rows: list[dict], segment_size: int, configs: int) -> str:
    first = rows[0]
    lines = [f"One training step, xla graph unpruned ({first['nodes']:,} nodes, {first['edges']:,} edges, "
             f"{first['configurable']:,} configurable), {configs} configs, hidden 32, 3 layers:", "",
             "| training | process peak MiB | resident before the step MiB | the step's peak above it "
             "MiB | step s |",
             "|---|---|---|---|---|"]
    names = {"none": "no step (baseline: the example built)", "full": "full graph",
             "gst": f"GST, {rows[2].get('segments', '?')} segments of <= {segment_size} nodes, 1 per step"}
    for row in rows:
        lines.append(f"| {names[row['mode']]} | {row['peak_mb']:.0f} | {row['before_mb']:.0f} | "
                     f"{row['step_mb']:.0f} | {row['step_seconds']:.2f} |")
    return "\n".join(lines)


def tau_comparison(competition: Path, work: Path, seed: int) -> str:
    from competition.scoring import Solution, load_solution
    from competition.stats import compare, load_graph_scores

    public, solution = competition / "public", load_solution(competition / "private" / "solution.csv")
    collections = [arg for name in LAYOUT for arg in ("--collection", name)]
    runs = {
        "default": [],  # onehop pruning, full-graph training
        "GST unpruned": ["--param", "training=gst", "--param", "fusion=early", "--param", "pruning=none",
                         "--param", "segment_size=256"],
    }
    reports, tests, subs = {}, {}, {}
    for i, (label, params) in enumerate(runs.items()):
        out = work / f"gst_tau_{i}.csv"
        if out.is_file() and out.with_suffix(".json").is_file():  # --keep: a finished run is reused
            reports[label] = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
        else:
            reports[label] = run_solve(public, "gnn", out, "--seed", str(seed), *collections, *params)
        tests[label] = test_scores(out, solution, LAYOUT)
        subs[label] = out
        print(f"  {label}: {reports[label]['seconds']:.0f} s", file=sys.stderr)
    labels = list(runs)
    lines = ["| collection | " + " | ".join(f"{m} valid | {m} test" for m in labels) + " |",
             "|---|" + "---|" * (2 * len(labels))]
    for name in LAYOUT:
        cells = []
        for m in labels:
            entry = {c["collection"]: c for c in reports[m]["collections"]}[name]
            cells += [f"{entry['validation_score']:.4f}", f"{tests[m][name]:.4f}"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    cells = []
    for m in labels:
        cells += [f"fit {sum(c['fit_seconds'] for c in reports[m]['collections']):.0f} s",
                  f"whole run {reports[m]['seconds']:.0f} s"]
    lines.append("| time (4 collections) | " + " | ".join(cells) + " |")
    # no tile rows here
    layout_only = Solution({name: solution.labels[name] for name in LAYOUT}, solution.source)
    a, b = (load_graph_scores(subs[m], layout_only) for m in labels)
    comparison = compare(a, b)
    lines += ["", f"GST - default, mean test tau over the four collections (paired bootstrap, 95 %): "
                  f"{comparison.to_json_dict()['diff']:+.4f} "
                  f"[{comparison.to_json_dict()['ci_low']:+.4f}, "
                  f"{comparison.to_json_dict()['ci_high']:+.4f}], "
                  f"P(GST better) = {comparison.to_json_dict()['p_b_better']:.2f}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_gst", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--competition", default=str(ROOT / "data" / "demo"),
                        help="a 'tpugraphs synth --scale small' OUT folder (built there when absent)")
    parser.add_argument("--segment-size", type=int, default=1000)
    parser.add_argument("--configs", type=int, default=32, help="configs per step (the gnn's default: 32)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--skip-tau", action="store_true")
    parser.add_argument("--keep", metavar="DIR",
                        help="write the tau runs' submissions and reports here (and reuse "
                        "finished ones) instead of a temporary folder")
    args = parser.parse_args(argv)
    missed = False
    if not args.skip_memory:
        rows = step_memory(args.segment_size, args.configs)
        print(memory_table(rows, args.segment_size, args.configs))
        ratio = rows[1]["step_mb"] / max(rows[2]["step_mb"], 1.0)
        print(f"\nfull-graph step / GST step (memory the step adds): {ratio:.1f}x (target >= "
              f"{TARGET_STEP_RATIO:.0f}x)")
        missed |= ratio < TARGET_STEP_RATIO
    if not args.skip_tau:
        competition = ensure_competition(Path(args.competition), args.seed)
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(args.keep) if args.keep else Path(tmp)
            work.mkdir(parents=True, exist_ok=True)
            print()
            print(tau_comparison(competition, work, args.seed))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
