"""The gnn's layout model, early against intermediate fusion: step time, step memory, prediction, an epoch.

Early fusion (``LayoutRanker(fusion="early")``) adds each config's rows at the configurable nodes and
runs message passing once per config, on a (B, n, h) tensor; intermediate fusion
(``fusion="intermediate"``) runs message passing once per graph and then touches only the nc
configurable nodes of each config, so a step costs O(B nc) instead of O(B n) and can score many more
configs (the 10th place scored ~1,000 configs per batch). Each is measured with and without
cross-config attention (``config_attention``). Fusion, attention and configs per step are passed
explicitly, so the figures do not depend on the gnn's defaults of the day; every model is the gnn's
own (``GNNRanker._build``), hidden 32, 3 layers (``GNNConfig``'s defaults), trained with its loss (the
pairwise hinge), built with a fixed seed.

1. **Training step time on the pruned training graphs of one collection** (default
   layout:xla:random of the small embedded competition, loaded as the gnn loads them:
   ``make_example`` with the default pruning and config deduplication): one step is the gnn's
   ``_layout_step`` (configs sampled, forward, ranking loss) then zero_grad, backward, gradient
   clipping and an AdamW step, as in ``train``. At ``--configs`` per step (32 and 1,000; a graph with
   fewer distinct configs gives all of them, as in training: the table shows the mean sampled). Per
   graph, ``--repeats`` steps of each variant, interleaved (round robin, so load changes hit every
   variant alike), the median kept; the table gives the mean over the graphs, and the ratio to early
   fusion without attention. The variants sample the same configs (same seed, same call order).
2. **One step on the largest xla graph, unpruned** (``benchmarks.realscale.xla_layout_graph``: 43,615
   nodes, 72,000 edges, 2,250 configurable nodes), each (variant, configs) in a fresh child process
   (``benchmarks.measure``): the step's peak resident memory above what was resident before it
   (sampled every 2 ms, as ``bench_gst``; on CUDA ``max_memory_allocated``), and its time (the first
   step; with ``--big-repeats`` > 1 the median of further steps too). Early fusion at 1,000 configs
   is not run: its step's memory grows with the configs (BENCHMARKS.md, "gnn: fusion speed").
3. **Prediction throughput**: ``predict_layout`` over every kept config of every training graph of
   (1), with ``GNNConfig.predict_batch_nodes`` rows per pass; configs per second (median of
   ``--repeats`` interleaved rounds). With attention, the peers are ``attention_context`` configs
   (the configs per step the model was trained with: 32 here, and 1,000 in one extra row).
4. **One epoch of layout training** on (1) with ``solutions.methods.gnn.train.train`` (one step per graph,
   shuffled; no validation): the former default (early fusion, no attention, 32 configs) against
   intermediate fusion with attention at 32 and at 1,000 configs per step; median of ``--repeats``
   interleaved epochs, each from a fresh model.

All on the CPU with 1 torch thread (the gnn's default ``num_threads``); when ``torch.cuda`` is
available, (1), (3) and (4) are measured on the GPU too (and (2) with ``--big-device cuda``).

usage: python -m benchmarks.bench_fusion [--competition data/demo] [--collection layout:xla:random]
       [--configs 32 1000] [--repeats 3] [--skip-big] [--big-repeats 1] [--skip-epoch]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from benchmarks.measure import measure_python
from competition.collections import get_collection
from solutions.methods.base import SplitSource
from solutions.methods.gnn.data import LayoutExample, make_example
from solutions.methods.gnn.model import LayoutRanker
from solutions.methods.gnn.ranker import GNNRanker
from solutions.methods.gnn.settings import DEFAULT_PRUNING
from solutions.methods.gnn.train import GNNConfig, _layout_step, predict_layout, train
from solutions.pruning import parse_pruning

ROOT = Path(__file__).resolve().parents[1]
SEED = 0


@dataclass(frozen=True)
class Variant:
    """One layout model: where the configs join, and whether configs attend to each other."""

    fusion: str
    attention: bool

    @property
    def label(self) -> str:
        return f"{self.fusion}{' + attention' if self.attention else ''}"


VARIANTS = (Variant("early", False), Variant("early", True), Variant("intermediate", False),
            Variant("intermediate", True))
BASELINE = VARIANTS[0]


def gnn_config(variant: Variant, configs: int) -> GNNConfig:
    """The gnn's settings with fusion, attention and configs per step given (hidden 32, 3 layers;
    without the engineered config features, so the figures compare with the ones measured before them)."""
    return GNNConfig(fusion=variant.fusion, config_attention=variant.attention,
                     layout_configs_per_graph=configs, hidden=32, layers=3, engineered_features=False)


def build_model(config: GNNConfig, collection: str, device: torch.device, seed: int = SEED) -> LayoutRanker:
    """The gnn's layout model for ``config`` (``GNNRanker._build``), weights drawn from ``seed``."""
    torch.manual_seed(seed)
    model = GNNRanker(config)._build(get_collection(collection))
    return model.to(device)


def load_graphs(competition: Path, collection: str) -> list[LayoutExample]:
    """The training graphs of ``collection`` as the gnn loads them (default pruning, deduplicated configs)."""
    source = SplitSource(competition / "public", get_collection(collection), "train")
    transform = parse_pruning(DEFAULT_PRUNING)
    return [make_example(row_id, graph, transform=transform, compress=True)
            for row_id, graph in source.graphs()]


def synchronize(device: torch.device) -> None:
    """Wait for ``device``'s queued kernels (a GPU's); nothing on the CPU."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Stepper:
    """One variant's model, optimizer and sampling stream: ``step(example)`` -> seconds of one training
    step."""

    def __init__(self, variant: Variant, configs: int, collection: str, device: torch.device) -> None:
        self.config = gnn_config(variant, configs)
        self.model = build_model(self.config, collection, device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=self.config.lr,
                                           weight_decay=self.config.weight_decay)
        self.rng = np.random.default_rng(SEED)  # the same stream in every variant: the same configs sampled
        self.device = device

    def step(self, example: LayoutExample) -> float:
        self.model.train()
        synchronize(self.device)
        started = time.perf_counter()
        loss = _layout_step(self.model, [(0, example)], self.config, self.rng, self.device, True)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        synchronize(self.device)
        return time.perf_counter() - started


def step_times(examples: Sequence[LayoutExample], configs: int, *, variants: Sequence[Variant] = VARIANTS,
               repeats: int = 3, collection: str = "layout:xla:random",
               device: torch.device | None = None) -> dict:
    """Mean over the graphs of each variant's median step time (s), at ``configs`` configs per step.

    Returns ``{"configs", "sampled" (mean configs actually sampled), "seconds": {label: mean s}}``.
    One untimed warm-up step per variant first.
    """
    device = device or torch.device("cpu")
    steppers = [Stepper(v, configs, collection, device) for v in variants]
    for stepper in steppers:
        stepper.step(examples[0])
    per_graph: dict[str, list[float]] = {v.label: [] for v in variants}
    for g, example in enumerate(examples):
        times: list[list[float]] = [[] for _ in variants]
        for r in range(repeats):
            for k in range(len(variants)):
                i = (k + r + g) % len(variants)  # rotate who goes first
                times[i].append(steppers[i].step(example))
        for v, t in zip(variants, times, strict=True):
            per_graph[v.label].append(statistics.median(t))
    return {"configs": configs, "sampled": float(np.mean([min(configs, e.num_configs) for e in examples])),
            "seconds": {label: float(np.mean(t)) for label, t in per_graph.items()}}


def prediction_throughput(examples: Sequence[LayoutExample], *, variants: Sequence[tuple[Variant, int]],
                          repeats: int = 3, collection: str = "layout:xla:random",
                          device: torch.device | None = None) -> dict[str, float]:
    """Configs per second of ``predict_layout`` over every kept config of ``examples``.

    ``variants``: (variant, attention context) pairs; a row's label names the context when attention is on.
    """
    device = device or torch.device("cpu")
    total = sum(e.num_configs for e in examples)
    models, labels = [], []
    for variant, context in variants:
        config = gnn_config(variant, context)  # the context is the configs per step trained with
        models.append((build_model(config, collection, device), config.predict_batch_nodes))
        labels.append(variant.label + (f" (context {context})" if variant.attention else ""))
    for model, batch_nodes in models:  # warm-up
        predict_layout(model, examples[0], device=device, batch_nodes=batch_nodes)
    seconds: list[list[float]] = [[] for _ in models]
    for r in range(repeats):
        for k in range(len(models)):
            i = (k + r) % len(models)
            model, batch_nodes = models[i]
            started = time.perf_counter()
            for example in examples:
                predict_layout(model, example, device=device, batch_nodes=batch_nodes)
            seconds[i].append(time.perf_counter() - started)
    return {label: total / statistics.median(s) for label, s in zip(labels, seconds, strict=True)}


EPOCH_SETTINGS = (  # (label, variant, configs per step)
    ("early, 32 configs (the former default)", Variant("early", False), 32),
    ("intermediate + attention, 32 configs", Variant("intermediate", True), 32),
    ("intermediate + attention, 1000 configs", Variant("intermediate", True), 1000),
)


def epoch_times(examples: Sequence[LayoutExample], *, repeats: int = 3, collection: str = "layout:xla:random",
                device: torch.device | None = None, settings: Sequence = EPOCH_SETTINGS) -> dict[str, float]:
    """Seconds of one epoch of ``train`` (no validation), median of ``repeats`` interleaved runs."""
    device = device or torch.device("cpu")
    seconds: list[list[float]] = [[] for _ in settings]
    for r in range(repeats):
        for k in range(len(settings)):
            i = (k + r) % len(settings)
            _, variant, configs = settings[i]
            config = replace(gnn_config(variant, configs), layout_epochs=1)
            model = build_model(config, collection, device)
            result = train(model, examples, [], config, seed=SEED, device=device, progress=False)
            seconds[i].append(result.seconds)
    return {s[0]: statistics.median(t) for s, t in zip(settings, seconds, strict=True)}


# --------------------------------------------------------------------------------------------------
# (2) the largest xla graph unpruned, one child process per (variant, configs)

# argv: fusion, attention (0/1), configs per step, repeats, device. Prints JSON facts.
_BIG_STEP = """
import ctypes, gc, json, statistics, sys, time
import numpy as np, torch
from benchmarks.bench_fusion import Stepper, Variant
from benchmarks.realscale import xla_layout_graph
from solutions.methods.gnn.data import configurable_links, layout_example
from solutions.solve.memory import PeakMemory, rss_reader
fusion, attention, configs, repeats, device = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3]), \
    int(sys.argv[4]), torch.device(sys.argv[5])
torch.set_num_threads(1)
example = layout_example("xla", xla_layout_graph(num_configs=max(64, configs)), transform=None, compress=True)
inputs = example.inputs
started = time.perf_counter()
links = configurable_links(inputs.edge_index, inputs.config_node_ids, inputs.num_nodes)
facts = {"nodes": example.num_nodes, "edges": int(inputs.edge_index.shape[1]),
         "configurable": int(inputs.config_node_ids.shape[0]), "configs_available": example.num_configs,
         "links": int(links.shape[1]), "links_seconds": time.perf_counter() - started}
stepper = Stepper(Variant(fusion, attention), configs, "layout:xla:random", device)
del links
gc.collect()
ctypes.CDLL("libc.so.6").malloc_trim(0)  # the generator's freed memory handed back: the step starts from here
before = rss_reader()()
if device.type == "cuda":
    torch.cuda.reset_peak_memory_stats(device)
    cuda_before = torch.cuda.memory_allocated(device)
with PeakMemory(interval=0.002) as memory:
    facts["first_step_seconds"] = stepper.step(example)
facts["step_mb"] = (memory.peak_bytes - before) / 2**20
facts["before_mb"] = before / 2**20
if device.type == "cuda":
    facts["cuda_step_mb"] = (torch.cuda.max_memory_allocated(device) - cuda_before) / 2**20
more = [stepper.step(example) for _ in range(repeats - 1)]
facts["step_seconds"] = statistics.median(more) if more else facts["first_step_seconds"]
print(json.dumps(facts))
"""

BIG_RUNS = (  # (variant, configs per step); early fusion at 1,000 configs would need ~100 GB
    (Variant("early", False), 32), (Variant("early", True), 32),
    (Variant("intermediate", False), 32), (Variant("intermediate", True), 32),
    (Variant("intermediate", False), 1000), (Variant("intermediate", True), 1000),
)


def big_steps(*, repeats: int, device: str, runs: Sequence = BIG_RUNS) -> list[dict]:
    rows = []
    for variant, configs in runs:
        measured = measure_python(_BIG_STEP, variant.fusion, "1" if variant.attention else "0", str(configs),
                                  str(repeats), device)
        facts = json.loads(measured.stdout.strip().splitlines()[-1])
        rows.append({"label": variant.label, "configs": configs, "peak_mb": measured.peak_mb, **facts})
        print(f"  big graph, {variant.label}, {configs} configs: step {facts['first_step_seconds']:.2f} s, "
              f"+{facts['step_mb']:.0f} MiB", file=sys.stderr)
    return rows


# --------------------------------------------------------------------------------------------------
# Tables


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f}" if seconds < 10 else f"{seconds * 1000:,.0f}"


def step_table(results: list[dict], device: str) -> str:
    head = "| model | " + " | ".join(f"{r['configs']} configs/step (mean {r['sampled']:.0f} sampled): "
                                     "ms | vs early" for r in results) + " |"
    lines = [f"Training step on the pruned training graphs ({device}), mean over the graphs of the "
             "median step:",
             "", head, "|---|" + "---|---|" * len(results)]
    for label in results[0]["seconds"]:
        cells = []
        for r in results:
            s = r["seconds"][label]
            cells += [_ms(s), f"{r['seconds'][BASELINE.label] / s:.2f}x"]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def big_table(rows: list[dict], device: str, repeats: int) -> str:
    first = rows[0]
    timing = "first step" if repeats <= 1 else f"median of {repeats - 1} steps after the first"
    cuda = device == "cuda"
    lines = [f"One training step on the xla graph unpruned ({first['nodes']:,} nodes, "
             f"{first['edges']:,} edges, {first['configurable']:,} configurable; {first['links']:,} "
             "configurable links, built in "
             f"{first['links_seconds']:.2f} s), {device}, step time the {timing}:", "",
             "| model | configs/step | step s | ms per config | the step's peak above resident MiB"
             + (" | CUDA step peak MiB" if cuda else "") + " | vs early at 32: time per config | memory |",
             "|---|---|---|---|---|---|---|" + ("---|" if cuda else "")]
    base = next(r for r in rows if r["label"] == BASELINE.label and r["configs"] == 32)

    def memory(row: dict) -> float:
        return row["cuda_step_mb"] if cuda else row["step_mb"]

    for r in rows:
        per_config = r["step_seconds"] / r["configs"]
        lines.append(f"| {r['label']} | {r['configs']} | {r['step_seconds']:.2f} | "
                     f"{per_config * 1000:,.1f} | "
                     f"{r['step_mb']:,.0f} | " + (f"{r['cuda_step_mb']:,.0f} | " if cuda else "")
                     + f"{base['step_seconds'] / base['configs'] / per_config:.1f}x | "
                     f"{memory(base) / max(memory(r), 1.0):.2f}x |")
    lines.append("| early (either) | 1000 | not run: the step's memory grows with the configs, ~100 GB "
                 "here | | | |"
                 + (" |" if cuda else "") + " |")
    return "\n".join(lines)


def predict_table(throughput: dict[str, float], device: str, configs: int) -> str:
    base = throughput[BASELINE.label]
    lines = [f"Prediction (`predict_layout`, every kept config of the graphs: {configs:,} configs), "
             f"{device}:", "", "| model | configs/s | vs early |", "|---|---|---|"]
    lines += [f"| {label} | {value:,.0f} | {value / base:.2f}x |" for label, value in throughput.items()]
    return "\n".join(lines)


def epoch_table(seconds: dict[str, float], device: str, graphs: int) -> str:
    base = seconds[EPOCH_SETTINGS[0][0]]
    lines = [f"One epoch of layout training ({graphs} graphs, one step each, no validation), {device}:", "",
             "| training | epoch s | vs the former default |", "|---|---|---|"]
    lines += [f"| {label} | {value:.2f} | {base / value:.2f}x |" for label, value in seconds.items()]
    return "\n".join(lines)


def _load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_fusion", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--competition", default=str(ROOT / "data" / "demo"),
                        help="a 'tpugraphs synth --scale small' OUT folder (built there when absent)")
    parser.add_argument("--collection", default="layout:xla:random",
                        help="the layout collection of (1), (3), (4)")
    parser.add_argument("--configs", type=int, nargs="+", default=[32, 1000],
                        help="configs per training step")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed steps per graph, prediction rounds, epochs")
    parser.add_argument("--big-repeats", type=int, default=1,
                        help="steps per child on the big graph (1: one)")
    parser.add_argument("--big-device", default="cpu", help="device of the big-graph steps (cpu or cuda)")
    parser.add_argument("--skip-big", action="store_true", help="skip the largest xla graph (2)")
    parser.add_argument("--skip-epoch", action="store_true", help="skip the epoch timing (4)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the competition, when it is built")
    args = parser.parse_args(argv)
    from benchmarks.bench_solutions import ensure_competition

    torch.set_num_threads(1)
    competition = ensure_competition(Path(args.competition), args.seed)
    examples = load_graphs(competition, args.collection)
    devices = [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])
    print(f"{args.collection}: {len(examples)} training graphs, "
          f"{np.mean([e.num_nodes for e in examples]):.0f} "
          f"nodes on average after pruning (max {max(e.num_nodes for e in examples)}), "
          f"{np.mean([int(e.inputs.config_node_ids.shape[0]) for e in examples]):.0f} configurable, "
          f"{np.mean([e.num_configs for e in examples]):.0f} distinct configs; torch threads "
          f"{torch.get_num_threads()}; load average at start {_load()}")
    if not torch.cuda.is_available():
        print("no CUDA device: CPU figures only")
    for device in devices:
        started = time.perf_counter()
        results = [step_times(examples, k, repeats=args.repeats, collection=args.collection, device=device)
                   for k in args.configs]
        print()
        print(step_table(results, device.type))
        throughput = prediction_throughput(
            examples, variants=[(v, 32) for v in VARIANTS] + [(Variant("intermediate", True), 1000)],
            repeats=args.repeats, collection=args.collection, device=device)
        print()
        print(predict_table(throughput, device.type, sum(e.num_configs for e in examples)))
        if not args.skip_epoch:
            print()
            print(epoch_table(epoch_times(examples, repeats=args.repeats, collection=args.collection,
                                          device=device),
                              device.type, len(examples)))
        print(f"\n({device.type}: {time.perf_counter() - started:.0f} s; load average now {_load()})")
    if not args.skip_big:
        rows = big_steps(repeats=args.big_repeats, device=args.big_device)
        print()
        print(big_table(rows, args.big_device, args.big_repeats))
        print(f"\n(load average now {_load()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
