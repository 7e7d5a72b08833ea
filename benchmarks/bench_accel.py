"""torch-scatter against torch's own ops on the kit's own scatter work, both timed in one run (CPU).

The kit reduces rows by group in three places:

1. **Tile pooling**: ``TileRanker.encode_graphs`` pools the node states of each kernel of a batch,
   mean and max, with ``solutions.compute.accel.segment`` over the batch's CSR offsets.
2. **Neighbour aggregation**: every ``BidirectionalSAGE`` layer averages, for each node, what its
   producers hold and what its consumers hold (two ``SAGEConv(aggr="mean")``). Measured as the
   gather + ``accel.scatter(..., reduce="mean")`` on either path, and as PyG's own
   ``MeanAggregation`` (what ``SAGEConv`` calls).
3. **The (node, config) row scatter**: ``LayoutRanker.forward_encoded`` adds each (config,
   configurable node) contribution to that node's state: ``index_add`` along the node axis of a
   (B, n, h) tensor, against ``torch_scatter.scatter(..., reduce="sum")`` plus the add.

Then whole training steps (forward, ranking loss, backward) of both models with ``solutions.compute.accel``
on either path, and, from torch's profiler, how many torch-scatter kernels each step runs.

Inputs: the small embedded competition (built into ``--competition`` when absent): a 16-kernel tile
batch of 32 configs each (one training step at the GNN's defaults) and every tile:xla training kernel
in one batch; the largest layout:xla:random training graph after OneHop pruning (the GNN's default).
Real size: ``benchmarks.realscale.xla_layout_graph()``, the largest xla graph's size (43,615 nodes,
72,000 edges, 2,250 configurable), after OneHop (9,211 nodes). Layout steps score B = 32 configs at
hidden width 32, on one thread: the GNN's defaults (``GNNConfig``).

Both paths must give the same values and gradients (to float32 rounding) or the benchmark fails.
Timing: CPU time of this one-thread process, so other work on a shared machine inflates neither
side; the two paths alternate, each round runs a case as many times as fill about 50 ms, and the
figure is the median over ``--repeats`` rounds. There is no speed target: the figures decide whether
``make accel`` is worth it (docs/install.md, "torch-scatter"). torch-scatter must be installed
(``make accel``); ``make bench`` skips this module otherwise.

usage: python -m benchmarks.bench_accel [--competition data/demo] [--repeats 7] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
import torch_scatter  # noqa: F401  (make bench skips this module when torch-scatter is absent)
from torch_geometric.nn.aggr import MeanAggregation

from benchmarks.bench_solutions import ensure_competition
from benchmarks.realscale import xla_layout_graph
from competition.collections import get_collection
from competition.data.graphs import iter_split
from solutions.compute import accel
from solutions.methods.gnn.data import LayoutExample, TileExample, layout_example, load_examples, tile_batch
from solutions.methods.gnn.model import LayoutRanker, TileRanker
from solutions.methods.gnn.train import GNNConfig, ranking_loss
from solutions.pruning import OneHop

ROOT = Path(__file__).resolve().parents[1]
ROUND_SECONDS = 0.05  # each timed round runs a case this long, at least once
# The message-passing paths timed here do not read the engineered config features; the examples are
# built without them.
DEFAULTS = GNNConfig(engineered_features=False)


@contextmanager
def scatter_path(use_extra: bool) -> Iterator[None]:
    """Run ``solutions.compute.accel`` on torch-scatter (True) or on torch's own ops (False)."""
    saved = accel.WITH_TORCH_SCATTER
    accel.WITH_TORCH_SCATTER = use_extra
    try:
        yield
    finally:
        accel.WITH_TORCH_SCATTER = saved


def median_seconds(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median CPU seconds per call of each function, the functions alternating round by round.

    CPU time of this process, not wall time: torch runs on one thread here, so time spent waiting
    for a core that other work holds counts for neither side (the machine is shared).
    """
    calls = {}
    for name, fn in fns.items():
        fn()  # warm-up (allocator, lazy init)
        started = time.process_time()
        fn()
        calls[name] = max(1, int(ROUND_SECONDS / max(time.process_time() - started, 1e-7)))
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            started = time.process_time()
            for _ in range(calls[name]):
                fn()
            times[name].append((time.process_time() - started) / calls[name])
    return {name: statistics.median(values) for name, values in times.items()}


@dataclass
class Case:
    """One scatter job; ``run(extra)`` computes it on torch-scatter (True) or torch's ops (False)."""

    name: str
    sizes: str
    run: Callable[[bool], torch.Tensor]
    leaf: torch.Tensor | None = None  # the input a backward pass differentiates (None: forward only)
    pyg: Callable[[], torch.Tensor] | None = None  # PyG's own path, where the model goes through PyG


@dataclass
class Timing:
    case: str
    sizes: str
    passes: str
    torch_s: float
    extra_s: float
    pyg_s: float | None = None

    @property
    def ratio(self) -> float:
        return self.extra_s / self.torch_s


def upstream_gradient(case: Case) -> torch.Tensor:
    """The same made-up gradient of the output for every path."""
    with torch.no_grad():
        shape = case.run(False).shape
    return torch.randn(shape, generator=torch.Generator().manual_seed(1))


def check_same(case: Case) -> None:
    """Both paths (and PyG's) give the same values and gradients, or the figures compare different work."""
    paths = [lambda: case.run(False), lambda: case.run(True)] + ([case.pyg] if case.pyg else [])
    outputs = [fn().detach() for fn in paths]
    for other in outputs[1:]:
        torch.testing.assert_close(other, outputs[0], rtol=1e-5, atol=1e-5)
    if case.leaf is None:
        return
    grad, grads = upstream_gradient(case), []
    for fn in paths:
        case.leaf.grad = None
        fn().backward(grad)
        grads.append(case.leaf.grad.clone())
    case.leaf.grad = None
    for other in grads[1:]:
        torch.testing.assert_close(other, grads[0], rtol=1e-5, atol=1e-5)


def time_case(case: Case, repeats: int) -> list[Timing]:
    """Forward alone (no autograd, as in prediction) and forward + backward (as in training)."""
    check_same(case)
    out: list[Timing] = []

    def forward(fn: Callable[[], torch.Tensor]) -> Callable[[], object]:
        def call() -> object:
            with torch.no_grad():
                return fn()
        return call

    fns = {"torch": forward(lambda: case.run(False)), "extra": forward(lambda: case.run(True))}
    if case.pyg is not None:
        fns["pyg"] = forward(case.pyg)
    got = median_seconds(fns, repeats)
    out.append(Timing(case.name, case.sizes, "forward", got["torch"], got["extra"], got.get("pyg")))
    if case.leaf is None:
        return out
    grad = upstream_gradient(case)

    def backward(fn: Callable[[], torch.Tensor]) -> Callable[[], object]:
        def call() -> object:
            case.leaf.grad = None
            fn().backward(grad)
            return case.leaf.grad
        return call

    fns = {"torch": backward(lambda: case.run(False)), "extra": backward(lambda: case.run(True))}
    if case.pyg is not None:
        fns["pyg"] = backward(case.pyg)
    got = median_seconds(fns, repeats)
    out.append(Timing(case.name, case.sizes, "forward + backward", got["torch"], got["extra"],
                      got.get("pyg")))
    return out


# --------------------------------------------------------------------------------------------------
# The kit's scatter work


def tile_pooling_case(label: str, examples: list[TileExample], hidden: int, gen: torch.Generator) -> Case:
    """``TileRanker.encode_graphs``'s pooling: mean and max of each kernel's node states."""
    sizes = torch.tensor([e.num_nodes for e in examples])
    ptr = torch.cat([torch.zeros(1, dtype=torch.int64), sizes.cumsum(0)])
    x = torch.randn(int(ptr[-1]), hidden, generator=gen, requires_grad=True)

    def run(extra: bool) -> torch.Tensor:
        with scatter_path(extra):
            return torch.cat([accel.segment(x, ptr, reduce="mean"),
                              accel.segment(x, ptr, reduce="max")], dim=-1)

    return Case(f"tile pooling, {label}",
                f"{len(examples)} kernels, {int(ptr[-1]):,} nodes, h={hidden}", run, x)


def neighbour_mean_case(label: str, example: LayoutExample, batch: int, hidden: int,
                        gen: torch.Generator) -> Case:
    """One ``BidirectionalSAGE`` layer's two neighbour means on a (B, n, h) batch of configs."""
    edges = example.inputs.edge_index
    n = example.num_nodes
    x = torch.randn(batch, n, hidden, generator=gen, requires_grad=True)
    producer, consumer = edges[0], edges[1]
    pyg_mean = MeanAggregation()

    def run(extra: bool) -> torch.Tensor:
        with scatter_path(extra):
            down = accel.scatter(x[:, producer], consumer, dim=1, dim_size=n, reduce="mean")
            up = accel.scatter(x[:, consumer], producer, dim=1, dim_size=n, reduce="mean")
        return down + up

    def pyg() -> torch.Tensor:
        return (pyg_mean(x[:, producer], consumer, dim_size=n, dim=1)
                + pyg_mean(x[:, consumer], producer, dim_size=n, dim=1))

    sizes = f"B={batch} x {n:,} nodes, {edges.shape[1]:,} edges, h={hidden}"
    return Case(f"neighbour mean (both directions), {label}", sizes, run, x, pyg)


def row_scatter_case(label: str, example: LayoutExample, batch: int, hidden: int,
                     gen: torch.Generator) -> Case:
    """``LayoutRanker.forward_encoded``: each (config, configurable node) contribution onto its node."""
    ids = example.inputs.config_node_ids
    n = example.num_nodes
    node_state = torch.randn(n, hidden, generator=gen)
    contribution = torch.randn(batch, ids.shape[0], hidden, generator=gen, requires_grad=True)

    def run(extra: bool) -> torch.Tensor:
        if extra:
            return node_state + torch_scatter.scatter(contribution, ids, dim=1, dim_size=n, reduce="sum")
        # the model's code
        return node_state.unsqueeze(0).expand(batch, -1, -1).index_add(1, ids, contribution)

    return Case(f"(node, config) row scatter, {label}",
                f"B={batch} x {ids.shape[0]:,} rows into {n:,} nodes, "
                f"h={hidden}", run, contribution)


def scatter_kernels(fn: Callable[[], object]) -> int:
    """How many torch-scatter kernels one call of ``fn`` runs (torch's profiler names them
    ``torch_scatter::``)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    return sum(1 for event in prof.events() if event.name.startswith("torch_scatter::"))


def step_timings(label: str, step: Callable[[], torch.Tensor], model: torch.nn.Module, sizes: str,
                 repeats: int) -> tuple[Timing, int, int]:
    """A whole training step on each path (the same weights and batch); and its torch-scatter kernels."""
    def call(extra: bool) -> Callable[[], object]:
        def run() -> object:
            with scatter_path(extra):
                model.zero_grad(set_to_none=True)
                loss = step()
                loss.backward()
            return loss
        return run

    with scatter_path(True):
        loss_extra = step()
    with scatter_path(False):
        loss_torch = step()
    torch.testing.assert_close(loss_extra, loss_torch, rtol=1e-4, atol=1e-5)
    got = median_seconds({"torch": call(False), "extra": call(True)}, repeats)
    return (Timing(f"training step, {label}", sizes, "forward + loss + backward", got["torch"], got["extra"]),
            scatter_kernels(call(True)), scatter_kernels(call(False)))


# --------------------------------------------------------------------------------------------------
# Inputs


def small_competition_examples(competition: Path) -> tuple[list[TileExample], LayoutExample]:
    """The tile:xla training kernels, and the largest layout:xla:random training graph after pruning."""
    public = competition / "public"
    tiles = load_examples(iter_split(public, get_collection("tile:xla"), "train"), transform=None,
                          compress=True)
    layouts = load_examples(iter_split(public, get_collection("layout:xla:random"), "train"),
                            transform=OneHop(), compress=True)
    return tiles, max(layouts, key=lambda e: e.num_nodes)


def realscale_example() -> LayoutExample:
    """The largest xla graph's size with 64 configs, pruned like the GNN prunes (OneHop)."""
    graph = xla_layout_graph(num_configs=64)
    return layout_example("realscale", graph, transform=OneHop(), compress=False)


# --------------------------------------------------------------------------------------------------
# Report


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return f"{seconds * 1e3:.3f}" if seconds < 0.01 else f"{seconds * 1e3:.1f}"


def timing_table(rows: list[Timing]) -> str:
    lines = ["| work | sizes | pass | torch's ops (CPU ms) | torch-scatter (CPU ms) | "
             "torch-scatter / torch | PyG (CPU ms) |",
             "|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row.case} | {row.sizes} | {row.passes} | {_ms(row.torch_s)} | {_ms(row.extra_s)} | "
                     f"**{row.ratio:.2f}** | {_ms(row.pyg_s)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--competition", type=Path, default=ROOT / "data" / "demo",
                        help="the small embedded competition (built here when absent)")
    parser.add_argument("--repeats", type=int, default=7, help="timed rounds per case (median)")
    parser.add_argument("--threads", type=int, default=DEFAULTS.num_threads or torch.get_num_threads(),
                        help="torch CPU threads (default: the GNN's, %(default)s)")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.threads < 1:
        parser.error("--repeats and --threads must be >= 1")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    hidden, batch = DEFAULTS.hidden, DEFAULTS.layout_configs_per_graph

    tiles, small_layout = small_competition_examples(ensure_competition(args.competition, seed=0))
    rng = np.random.default_rng(0)
    step_tiles = [tiles[i] for i in rng.choice(len(tiles), size=DEFAULTS.tile_graphs_per_step, replace=False)]
    real_layout = realscale_example()
    print(f"torch {torch.__version__}, torch-scatter {torch_scatter.__version__}, {args.threads} thread(s), "
          f"{args.repeats} rounds per case; small competition in {args.competition}\n")

    cases = [
        tile_pooling_case("one training step", step_tiles, hidden, gen),
        tile_pooling_case("every tile:xla training kernel", tiles, hidden, gen),
        neighbour_mean_case("small competition's largest pruned layout graph", small_layout, batch,
                            hidden, gen),
        neighbour_mean_case("real-size pruned xla graph", real_layout, batch, hidden, gen),
        row_scatter_case("small competition's largest pruned layout graph", small_layout, batch, hidden, gen),
        row_scatter_case("real-size pruned xla graph", real_layout, batch, hidden, gen),
    ]
    rows: list[Timing] = []
    for case in cases:
        print(f"timing {case.name} ...", file=sys.stderr, flush=True)
        rows.extend(time_case(case, args.repeats))

    steps, kernels = [], []
    tile_model = TileRanker.from_settings(replace(DEFAULTS, hidden=hidden))
    configs = [torch.from_numpy(rng.choice(e.num_configs,
                                           size=min(e.num_configs, DEFAULTS.tile_configs_per_graph),
                                           replace=False)) for e in step_tiles]
    tile = tile_batch(step_tiles, configs)
    print("timing the tile training step ...", file=sys.stderr, flush=True)
    timing, with_extra, without = step_timings(
        "tile", lambda: ranking_loss(DEFAULTS, tile_model(tile), tile.runtime, tile.config_graph), tile_model,
        f"{len(step_tiles)} kernels x <= {DEFAULTS.tile_configs_per_graph} configs", args.repeats)
    steps.append(timing)
    kernels.append(("tile", with_extra, without))
    for label, example in (("layout, small competition's largest graph", small_layout),
                           ("layout, real-size pruned xla graph", real_layout)):
        model = LayoutRanker.from_settings(replace(DEFAULTS, hidden=hidden, fusion="early",
                                                   config_attention=False))
        index = torch.from_numpy(rng.choice(example.num_configs, size=min(example.num_configs, batch),
                                            replace=False))
        digits, runtime = example.configs.digits(index), example.runtime[index]
        print(f"timing the {label} training step ...", file=sys.stderr, flush=True)
        timing, with_extra, without = step_timings(
            label, lambda m=model, e=example, d=digits, r=runtime: ranking_loss(DEFAULTS, m(e.inputs, d), r),
            model, f"B={len(index)} x {example.num_nodes:,} nodes", args.repeats)
        steps.append(timing)
        kernels.append((label, with_extra, without))

    print("Scatter work, median CPU ms per call; below 1 in the ratio column means torch-scatter is faster. "
          "torch's ops:")
    print("solutions.compute.accel's fallback (index_add_ + bincount for means, scatter_reduce_ or "
          "segment_reduce for max),")
    print("and for the row scatter the model's own index_add.\n")
    print(timing_table(rows))
    print("\nWhole training steps with solutions.compute.accel on either path (same weights and batch):\n")
    print(timing_table(steps))
    print("\ntorch-scatter kernels run per training step (torch profiler), with / without "
          "solutions.compute.accel's extra:")
    for label, with_extra, without in kernels:
        print(f"- {label}: {with_extra} / {without}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
