"""How much memory one gnn layout training step's tensors hold, at one graph and at G graphs a step.

One step (forward and backward, the training loop's own loss functions, the default settings of the
collection) under ``torch.profiler`` with ``profile_memory``: every allocation and free, in order, gives the
peak of tensor bytes the step holds above its start. Set beside a fit's process peak (``tpugraphs solve``
reports it) it says how much of that memory is the step's tensors and how much is freed memory the C heap
keeps (BENCHMARKS.md, "Full-size rehearsal").

The graphs: the first ``--graphs`` training graphs of the collection as the gnn loads them (pruned),
ordered by configurable nodes; steps on the largest alone, the second alone, and the largest
``--graphs-per-step`` together. Reported per step: configurable nodes, rows (configs x configurable
nodes), the tensor peak and the peak per row. No target: the figures locate the memory.

usage: python -m benchmarks.bench_step_memory --data FULL/public [--collection layout:xla:default]
           [--graphs 16] [--graphs-per-step 4]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

from benchmarks.bench_gnn_speed import graphs_a_step, load_examples
from competition.collections import get_collection
from competition.tasks import LAYOUT, Task
from solutions.methods.gnn import train as training
from solutions.methods.gnn.settings import SETTINGS, GNNConfig

CPU = torch.device("cpu")


def step_tensor_peak(model: torch.nn.Module, graphs: list, config: GNNConfig, seed: int = 0) -> int:
    """Peak bytes of tensors one training step on ``graphs`` holds above its start (forward + backward;
    the step is run once untimed first, so that lazily built state is not counted)."""
    def step() -> None:
        rng = np.random.default_rng(seed)
        if len(graphs) == 1:
            loss = training._one_layout_loss(model, graphs[0], config, rng, CPU, True)
        else:
            loss = training._batched_layout_losses(model, graphs, config, rng, CPU, True).mean()
        loss.backward()
        model.zero_grad(set_to_none=True)

    step()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as traced:
        step()
    held = peak = 0
    for event in sorted((e for e in traced.events() if e.self_cpu_memory_usage),
                        key=lambda e: e.time_range.start):
        held += event.self_cpu_memory_usage
        peak = max(peak, held)
    return peak


def measure(examples: list, config: GNNConfig, task: Task, graphs_per_step: int) -> list[dict]:
    """One row per step: the largest graph alone, the second alone, the largest ``graphs_per_step``."""
    examples = sorted(examples, key=lambda e: -e.inputs.config_node_ids.numel())
    torch.manual_seed(0)
    model = training.kind_plan(task, config).network(config)
    rows = []
    for graphs in ([examples[0]], examples[1:2], examples[:graphs_per_step]):
        if not graphs:
            continue
        nodes = sum(int(g.inputs.config_node_ids.numel()) for g in graphs)
        configs = min(config.layout_configs_per_graph, max(g.num_configs for g in graphs))
        peak = step_tensor_peak(model, graphs, graphs_a_step(config, len(graphs)))
        rows.append({"graphs": len(graphs), "configurable_nodes": nodes, "rows": configs * nodes,
                     "peak_bytes": peak})
    return rows


def table(rows: list[dict]) -> str:
    lines = ["| graphs in the step | configurable nodes | rows | tensor peak MB | KB per row |",
             "|---|---|---|---|---|"]
    lines += [f"| {r['graphs']} | {r['configurable_nodes']:,} | {r['rows']:,} "
              f"| {r['peak_bytes'] / 2**20:.0f} | {r['peak_bytes'] / max(r['rows'], 1) / 1024:.2f} |"
              for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_step_memory",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="public data folder (e.g. FULL/public)")
    parser.add_argument("--collection", default="layout:xla:default", help="a layout collection")
    parser.add_argument("--graphs", type=int, default=16, help="training graphs loaded (the first N)")
    parser.add_argument("--graphs-per-step", type=int, default=4, help="graphs in the several-graph step")
    args = parser.parse_args(argv)
    collection = get_collection(args.collection)
    if collection.task != LAYOUT:
        parser.error(f"--collection {args.collection}: a layout collection is needed (the step of "
                     f"several graphs is layout's)")
    torch.set_num_threads(1)
    config = SETTINGS.resolve(collection, {})
    examples = [e for e in load_examples(args.data, args.collection, config, limit=args.graphs)
                if e.inputs.config_node_ids.numel()]
    if not examples:
        parser.error(f"{args.data}: no {args.collection} training graph with configurable nodes")
    print(f"**{args.collection}**, the first {args.graphs} training graphs (pruned), one step each:\n")
    print(table(measure(examples, config, collection.task, args.graphs_per_step)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
