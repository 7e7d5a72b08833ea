"""How fast the gnn trains: the 1.0 training step against today's, per phase, with the achieved GFLOP/s.

1. **The machine's matmul rate**: ``torch.matmul`` of float32 squares (1,024 and 2,048) and at the
   shape of the model's node layers (rows x hidden by hidden x hidden), on the gnn's one torch thread
   (``num_threads``): the ceiling a step's arithmetic could reach.
2. **Training steps, before and after**, per collection (default ``layout:nlp:random`` and
   ``tile:xla`` of the ``small`` embedded competition, loaded as the gnn loads them: ``make_example``
   with the default pruning, deduplication and engineered features; the default ``GNNConfig`` of each
   collection, so ``layout:xla:random`` includes its moving average):
   - *before*: the 1.0 step (``as_1_0``): PyTorch Geometric's ``SAGEConv`` in every
     ``BidirectionalSAGE`` (loaded with the same weights), the embeddings called as modules,
     ``clip_grad_norm_`` over ``model.parameters()``, ``torch.optim.AdamW`` over the parameter tensors
     and ``AveragedModel.update_parameters`` (``ParameterUpdate(..., flat=False)``, what 1.0 ran);
   - *after*: the kit's step (``solutions.methods.gnn.train``: ``MeanSAGE`` layers, embeddings looked up
     with ``index_select``, ``ParameterUpdate`` over ``FlatParameters``).
   Both start from the same weights and seed and draw the same graphs and configs; ``--rounds``
   interleaved rounds of ``--steps`` steps (the order alternates), each step split into forward
   (the step function: configs drawn, model, loss), backward, optimizer (clipping, AdamW, schedule,
   average) and other (choosing the graphs, clearing the gradients, reading the loss), in wall and
   CPU time (``time.thread_time``: the machine is shared, and CPU time is what a loaded machine
   does not inflate as much). The ratio is before / after per round (above 1: faster now). Last,
   whether the two runs hold the same bytes after the same steps (a pure rewrite must).
3. **Achieved GFLOP/s**: the floating-point operations of a step (forward and backward, counted by
   ``torch.utils.flop_counter.FlopCounterMode``) over the step's time, against (1).
4. **Whole runs** (``--baseline-tree DIR``, a checkout of the code before): ``tpugraphs solve --method
   gnn --collection C`` with this tree and with DIR, alternately, each in a fresh process: wall and
   CPU seconds (the children's user + system time), and whether the submissions are the same bytes;
   and the start-up: importing the gnn's ranker and training loop in a fresh process (CPU seconds,
   the best of three, each tree alternately).

5. **Several graphs per step** (layout collections; ``--graphs-per-step G``, default 4): per graph
   trained, the 1.0 step, today's step of one graph (``layout_graphs_per_step=1``) and the step of G
   graphs (the graphs scored in one pass as one disjoint graph; G = 4 is the default of every layout
   fit, docs/gnn.md, "Several graphs a step"), interleaved rounds, each training on about as many
   graphs a round. Sections (2)-(4) compare one graph a step, 1.0's and today's: the same graphs, so
   the same bytes after the same steps (a whole run, (4), trains at the defaults).

Prints markdown tables.

usage: python -m benchmarks.bench_gnn_speed [--data PUBLIC_DIR] [--collection NAME ...] [--steps 100]
       [--rounds 3] [--baseline-tree DIR] [--graphs-per-step 4] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import hashlib
import itertools
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import torch

from benchmarks.bench_fusion import synchronize
from competition.collections import get_collection
from competition.data.locate import find_data
from competition.tasks import Task
from solutions.methods.base import SplitSource
from solutions.methods.gnn import train as training
from solutions.methods.gnn.data import Edges, make_example
from solutions.methods.gnn.model import BidirectionalSAGE, LayoutRanker, NodeEncoder
from solutions.methods.gnn.settings import SETTINGS, GNNConfig
from solutions.pruning import parse_pruning

ROOT = Path(__file__).resolve().parents[1]
CPU = torch.device("cpu")
COLLECTIONS = ["layout:nlp:random", "tile:xla"]
PHASES = ("forward", "backward", "optimizer", "other")
VARIANTS = ("before", "after")


# --------------------------------------------------------------------------------------------------
# The 1.0 step, rebuilt for comparison


class PyGBidirectionalSAGE(torch.nn.Module):
    """The 1.0 ``BidirectionalSAGE``: two ``torch_geometric.nn.SAGEConv(aggr="mean")`` (the second on the
    reversed edges), then LayerNorm, GELU, dropout and the residual, with a lean layer's weights and
    the same parameter names."""

    def __init__(self, lean: BidirectionalSAGE) -> None:
        super().__init__()
        from torch_geometric.nn import SAGEConv

        width = lean.norm.normalized_shape[0]
        self.down = SAGEConv(width, width, aggr="mean")
        self.up = SAGEConv(width, width, aggr="mean", root_weight=False)
        self.norm, self.act, self.dropout = lean.norm, lean.act, lean.dropout
        self.load_state_dict(lean.state_dict())

    def forward(self, x: torch.Tensor, edges: Edges | torch.Tensor) -> torch.Tensor:
        edge_index = edges if isinstance(edges, torch.Tensor) else edges.index  # 1.0 read the edges alone
        message = self.down(x, edge_index) + self.up(x, edge_index.flip(0))
        return x + self.dropout(self.act(self.norm(message)))


def _copy(model: torch.nn.Module) -> torch.nn.Module:
    copied = copy.deepcopy(model)
    copied.task = model.task  # the task itself, not a copy (kinds are found by it)
    return copied


class NodeEncoder10(NodeEncoder):
    """1.0's node encoder: the opcode embedding called as a module (one backward call per index)."""

    def opcodes(self, node_opcode: torch.Tensor) -> torch.Tensor:
        return self.opcode(node_opcode)


class LayoutRanker10(LayoutRanker):
    """1.0's row embedding: the (slot, digit) embedding called as a module."""

    def slot_digits(self, digits: torch.Tensor) -> torch.Tensor:
        return self.slot_digit(digits + self.slot_offsets).sum(dim=-2)


def as_1_0(model: torch.nn.Module) -> torch.nn.Module:
    """A copy of ``model`` computing as 1.0 did, with the same weights: its ``BidirectionalSAGE`` layers
    the 1.0 ones (``PyGBidirectionalSAGE``), its embeddings called as modules."""
    copied = _copy(model)
    if isinstance(copied, LayoutRanker):
        copied.__class__ = LayoutRanker10
    for parent in list(copied.modules()):
        if type(parent) is NodeEncoder:
            parent.__class__ = NodeEncoder10
        for name, child in list(parent.named_children()):
            if isinstance(child, BidirectionalSAGE):
                setattr(parent, name, PyGBidirectionalSAGE(child))
    return copied


# --------------------------------------------------------------------------------------------------
# Timed steps


@dataclass
class StepTimes:
    """Seconds per phase over the steps of one round, wall and CPU."""

    steps: int = 0
    graphs: int = 0  # graphs trained on (a step of several graphs counts each)
    wall: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))
    cpu: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))

    def per_step_ms(self, clock: str = "wall") -> dict[str, float]:
        times = self.wall if clock == "wall" else self.cpu
        out = {phase: 1e3 * seconds / max(1, self.steps) for phase, seconds in times.items()}
        out["step"] = sum(out[p] for p in PHASES)
        return out

    def per_graph_ms(self, clock: str = "wall") -> float:
        times = self.wall if clock == "wall" else self.cpu
        return 1e3 * sum(times.values()) / max(1, self.graphs)


class Runner:
    """One training run, stepped on demand as ``train`` steps it (``_start``'s set-up, ``_epoch``'s
    order of graphs)."""

    def __init__(self, model: torch.nn.Module, examples: list, config: GNNConfig, *, reference: bool,
                 seed: int = 0, device: torch.device = CPU) -> None:
        model.to(device)
        self.run, _ = training._start(model, examples, [], config, seed, device, True, None)
        if reference:  # the 1.0 update (tensor by tensor) instead of the flat one
            self.run.update.close()
            total_steps = self.run.plan.epochs * self.run.steps_per_epoch
            self.run.update = training.ParameterUpdate(model, config, total_steps, self.run.steps_per_epoch,
                                                       flat=False)
            self.run.averaged = self.run.update.averaged
        self.model = model
        self.chosen = self._chosen()
        self.torch_rng = torch.get_rng_state()  # dropout's draws: each run its own, from the same start
        model.train()

    def _chosen(self) -> Iterator[list]:
        while True:  # epoch after epoch, as train draws them
            yield from training.epoch_steps(self.run)

    def steps(self, count: int, times: StepTimes | None = None) -> None:
        times = times or StepTimes()
        clock = _Clock(times, self.run.device)
        with torch.random.fork_rng(devices=[]):
            torch.set_rng_state(self.torch_rng)
            self._steps(count, times, clock)
            self.torch_rng = torch.get_rng_state()

    def _steps(self, count: int, times: StepTimes, clock: _Clock) -> None:
        run = self.run
        for _ in range(count):
            clock.start()
            chosen = next(self.chosen)
            run.update.zero_grad()
            clock.lap("other")
            loss = run.step(run.plan.step, chosen, run.config, run.rng, run.device, run.dedup_rows)
            clock.lap("forward")
            loss.backward()
            clock.lap("backward")
            run.update.step()
            clock.lap("optimizer")
            float(loss.detach())
            clock.lap("other")
            times.steps += 1
            times.graphs += len(chosen)

    def weights(self) -> dict[str, torch.Tensor]:
        """Every parameter, and the average's when there is one (the 1.0 names)."""
        out = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        if self.run.averaged is not None:
            out.update({f"averaged.{k}": v.detach().clone()
                        for k, v in self.run.averaged.module.state_dict().items()})
        return out


class _Clock:
    """Wall and CPU time per phase; on a GPU each reading waits for the queued kernels (the wall time is
    the figure there: the CPU time is only the host's)."""

    def __init__(self, times: StepTimes, device: torch.device = CPU) -> None:
        self.times = times
        self.wall = self.cpu = 0.0
        self.device = device

    def start(self) -> None:
        synchronize(self.device)
        self.wall, self.cpu = time.perf_counter(), time.thread_time()

    def lap(self, phase: str) -> None:
        synchronize(self.device)
        wall, cpu = time.perf_counter(), time.thread_time()
        self.times.wall[phase] += wall - self.wall
        self.times.cpu[phase] += cpu - self.cpu
        self.wall, self.cpu = wall, cpu


def step_flops(runner: Runner, steps: int = 5) -> float:
    """Floating-point operations of one step's forward and backward (mean over ``steps``)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        runner.steps(steps)
    return counter.get_total_flops() / steps


def graphs_a_step(config: GNNConfig, graphs: int) -> GNNConfig:
    """``config`` training ``graphs`` layout graphs a step (1: as 1.0 did; tile settings unchanged)."""
    return dataclasses.replace(config, layout_graphs_per_step=graphs)


def compare_steps(examples: list, config: GNNConfig, task: Task, *, steps: int, rounds: int, seed: int = 0,
                  warmup: int = 10, device: torch.device = CPU) -> dict:
    """Section (2) on one collection's examples: per-round ``StepTimes`` of both variants, whether
    their weights agree after the same steps, and the step's FLOPs."""
    config = graphs_a_step(config, 1)  # the same graphs for both: what a step costs, and the same bytes
    torch.manual_seed(seed)
    model = training.kind_plan(task, config).network(config)
    runners = {"before": Runner(as_1_0(model), examples, config, reference=True, seed=seed,
                                device=device),
               "after": Runner(model, examples, config, reference=False, seed=seed, device=device)}
    for runner in runners.values():
        runner.steps(warmup)
    results: dict[str, list[StepTimes]] = {v: [] for v in VARIANTS}
    for r in range(rounds):
        for variant in (VARIANTS if r % 2 == 0 else VARIANTS[::-1]):
            times = StepTimes()
            runners[variant].steps(steps, times)
            results[variant].append(times)
    before, after = runners["before"].weights(), runners["after"].weights()
    same = before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    apart = max(float((before[k].double() - after[k].double()).abs().max()) for k in before)
    return {"times": results, "identical": same, "max_apart": apart,
            "steps_compared": warmup + steps * rounds, "flops": step_flops(runners["after"]),
            "graphs": len(runners["after"].run.examples)}


def compare_graphs_per_step(examples: list, config: GNNConfig, task: Task, *, graphs: int, steps: int,
                            rounds: int, seed: int = 0, warmup: int = 10,
                            device: torch.device = CPU) -> dict[str, list[StepTimes]]:
    """Section (5) on one layout collection: the 1.0 step, today's step of one graph and the variant step
    of ``graphs`` graphs (the setting ``layout_graphs_per_step``), from the same weights, ``rounds``
    interleaved rounds of ``steps`` steps each (the batched variant takes ``steps / graphs`` steps a
    round, so every variant trains on about as many graphs), on ``device``."""
    one = graphs_a_step(config, 1)
    torch.manual_seed(seed)
    model = training.kind_plan(task, one).network(one)
    runners = {"1.0": Runner(as_1_0(model), examples, one, reference=True, seed=seed, device=device),
               "1 graph": Runner(_copy(model), examples, one, reference=False, seed=seed, device=device),
               f"{graphs} graphs": Runner(_copy(model), examples,
                                          graphs_a_step(config, graphs),
                                          reference=False, seed=seed, device=device)}
    for runner in runners.values():
        runner.steps(warmup)
    results: dict[str, list[StepTimes]] = {v: [] for v in runners}
    for r in range(rounds):
        for variant in (list(runners) if r % 2 == 0 else list(runners)[::-1]):
            times = StepTimes()
            runners[variant].steps(max(1, steps // graphs) if variant.endswith(" graphs") else steps, times)
            results[variant].append(times)
    return results


# --------------------------------------------------------------------------------------------------
# The machine


def matmul_rates(shapes: list[tuple[int, int, int]], repeats: int = 5,
                 device: torch.device = CPU) -> dict[tuple[int, int, int], float]:
    """GFLOP/s of ``torch.matmul`` (m, k) x (k, n) per shape on ``device``: the best of ``repeats`` timed
    batches."""
    out = {}
    for m, k, n in shapes:
        a, b = torch.randn(m, k, device=device), torch.randn(k, n, device=device)
        calls = max(1, int((2e10 if device.type == "cuda" else 2e8) // (2 * m * k * n)))
        best = float("inf")
        for _ in range(repeats):
            synchronize(device)
            started = time.perf_counter()
            for _ in range(calls):
                torch.matmul(a, b)
            synchronize(device)
            best = min(best, (time.perf_counter() - started) / calls)
        out[(m, k, n)] = 2 * m * k * n / best / 1e9
    return out


# --------------------------------------------------------------------------------------------------
# Whole runs


def whole_run(tree: Path, data: Path, collection: str, out: Path) -> dict:
    """``tpugraphs solve --method gnn --collection C`` run from ``tree``: wall and CPU seconds, the
    submission's hash."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "competition.cli", "solve", "--method", "gnn", "--data",
                           str(data), "--collection", collection, "--out", str(out), "--quiet"],
                          cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True,
                          text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise RuntimeError(f"solve from {tree} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "sha": hashlib.sha256(out.read_bytes()).hexdigest()}


_IMPORT = """
import time
started = time.process_time()
try:
    from solutions.methods.gnn.ranker import GNNRanker
    from solutions.methods.gnn.train import train
except ModuleNotFoundError:  # a tree of 1.0's layout
    from solutions.gnn.ranker import GNNRanker
    from solutions.gnn.train import train
print(time.process_time() - started)
"""


def import_seconds(tree: Path) -> float:
    """CPU seconds a fresh process from ``tree`` spends importing the gnn's ranker and training loop."""
    done = subprocess.run([sys.executable, "-c", _IMPORT], cwd=tree,
                          env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True,
                          check=True)
    return float(done.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------------------------------
# Tables


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def step_table(name: str, result: dict, peak: float) -> str:
    """The per-phase split of (2) and the GFLOP/s of (3) for one collection."""
    rows = [f"**{name}** ({result['graphs']} training graphs; {result['times']['after'][0].steps} steps x "
            f"{len(result['times']['after'])} interleaved rounds; median per step)", "",
            "| step | clock | forward ms | backward ms | optimizer ms | other ms | step ms | GFLOP/s | "
            "of matmul peak |", "|---|---|---|---|---|---|---|---|---|"]
    for clock in ("wall", "cpu"):
        for variant in VARIANTS:
            per = [t.per_step_ms(clock) for t in result["times"][variant]]
            med = {k: _median([p[k] for p in per]) for k in (*PHASES, "step")}
            gflops = result["flops"] / (med["step"] / 1e3) / 1e9
            rows.append(f"| {variant} | {clock} | " + " | ".join(f"{med[p]:.2f}" for p in PHASES)
                        + f" | {med['step']:.2f} | {gflops:.2f} | {100 * gflops / peak:.1f} % |")
    ratios = {clock: [b.per_step_ms(clock)["step"] / a.per_step_ms(clock)["step"]
                      for b, a in zip(result["times"]["before"], result["times"]["after"], strict=True)]
              for clock in ("wall", "cpu")}
    rows += ["", f"Speed-up per step (before / after, per round): wall "
                 f"{', '.join(f'{r:.2f}x' for r in ratios['wall'])}; CPU "
                 f"{', '.join(f'{r:.2f}x' for r in ratios['cpu'])}. "
                 f"{result['flops'] / 1e6:.1f} MFLOP per step (forward + backward). Weights after "
                 f"{result['steps_compared']} steps: "
                 + ("the same bytes." if result["identical"] else
                    f"**differ** (at most {result['max_apart']:.3g} apart).")]
    return "\n".join(rows)


def graphs_table(name: str, results: dict[str, list[StepTimes]], clock: str = "cpu") -> str:
    """Section (5): per graph trained, each variant's median time and its speed-up over 1.0's, per round,
    by ``clock`` (``wall`` on a GPU)."""
    label = "CPU" if clock == "cpu" else "wall"
    out = [f"**{name}**, per graph trained (median of {len(results['1.0'])} interleaved rounds):", "",
           f"| step | ms per step ({label}) | graphs per step | ms per graph (wall) | ms per graph (CPU) | "
           f"1.0 / this, {label}, per round |", "|---|---|---|---|---|---|"]
    for variant, rounds in results.items():
        ratios = [b.per_graph_ms(clock) / t.per_graph_ms(clock)
                  for b, t in zip(results["1.0"], rounds, strict=True)]
        out.append(f"| {variant} | {_median([t.per_step_ms(clock)['step'] for t in rounds]):.2f} | "
                   f"{rounds[0].graphs / max(1, rounds[0].steps):.1f} | "
                   f"{_median([t.per_graph_ms('wall') for t in rounds]):.2f} | "
                   f"{_median([t.per_graph_ms('cpu') for t in rounds]):.2f} | "
                   + ", ".join(f"{r:.2f}x" for r in ratios) + " |")
    return "\n".join(out)


def whole_table(rows: list[tuple[str, dict, dict]]) -> str:
    out = ["| collection | before wall s | after wall s | before CPU s | after CPU s | CPU ratio | "
           "same submission |", "|---|---|---|---|---|---|---|"]
    for name, before, after in rows:
        out.append(f"| {name} | {before['wall']:.1f} | {after['wall']:.1f} | {before['cpu']:.1f} | "
                   f"{after['cpu']:.1f} | {before['cpu'] / after['cpu']:.2f}x | "
                   f"{'yes' if before['sha'] == after['sha'] else 'no'} |")
    return "\n".join(out)


def load_examples(data: Path, collection: str, config: GNNConfig, limit: int | None = None) -> list:
    """A collection's training graphs (the first ``limit``, or all) as the gnn loads them
    (``GNNRanker._load`` without a cache)."""
    source = SplitSource(data, get_collection(collection), "train")
    engineered = config.engineered_features
    cap = config.layout_max_train_configs if engineered else None
    return [make_example(row_id, graph, transform=parse_pruning(config.pruning), compress=True,
                         engineered=engineered, max_configs=cap)
            for row_id, graph in itertools.islice(source, limit)]


def _load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_gnn_speed", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", help="public data folder (default: the small embedded competition)")
    parser.add_argument("--collection", action="append",
                        help=f"repeatable (default: {', '.join(COLLECTIONS)})")
    parser.add_argument("--steps", type=int, default=100, help="steps per round and variant")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--baseline-tree", type=Path,
                        help="a checkout of the code before: also time whole 'tpugraphs solve' runs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--graphs-per-step", type=int, default=4,
                        help="(5): the layout step of this many graphs against one graph's (0: skip)")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                        help="where the steps of (2) and (5) and the matmul of (1) run (cuda: read the wall "
                             "times)")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no CUDA device here")
    clock = "wall" if device.type == "cuda" else "cpu"
    torch.set_num_threads(1)
    data = Path(args.data) if args.data else find_data(scale="small").public_dir
    collections = args.collection or COLLECTIONS
    print(f"torch {torch.__version__}, 1 torch thread, {os.cpu_count()} CPUs; load average at start "
          f"{_load_average()}")
    rates = matmul_rates([(1024, 1024, 1024), (2048, 2048, 2048), (768, 32, 32), (74, 172, 32)],
                         device=device)
    peak = max(rates.values())
    where = "one thread" if device.type == "cpu" else args.device
    print(f"\nmatmul GFLOP/s ({where}): " + ", ".join(f"{m}x{k} @ {k}x{n}: {r:.1f}"
                                                     for (m, k, n), r in rates.items()))
    for name in collections:
        collection = get_collection(name)
        config = SETTINGS.resolve(collection)
        examples = load_examples(data, name, config)
        result = compare_steps(examples, config, collection.task, steps=args.steps, rounds=args.rounds,
                               seed=args.seed, device=device)
        print()
        print(step_table(name, result, peak))
        if args.graphs_per_step and collection.task.name == "layout":
            print()
            print(graphs_table(name, compare_graphs_per_step(
                examples, config, collection.task, graphs=args.graphs_per_step, steps=args.steps,
                rounds=args.rounds, seed=args.seed, device=device), clock))
    if args.baseline_tree:
        rows = []
        with tempfile.TemporaryDirectory() as tmp:
            for name in collections:
                out = Path(tmp) / "sub.csv"
                before = whole_run(args.baseline_tree.resolve(), data.resolve(), name, out)
                after = whole_run(ROOT, data.resolve(), name, out)
                rows.append((name, before, after))
        print("\nWhole runs ('tpugraphs solve --method gnn --collection C', default settings):\n")
        print(whole_table(rows), flush=True)
        imports: dict[str, list[float]] = {"before": [], "after": []}
        for _ in range(3):
            imports["before"].append(import_seconds(args.baseline_tree.resolve()))
            imports["after"].append(import_seconds(ROOT))
        print(f"\nImporting the gnn's ranker and training loop: {min(imports['before']):.2f} s CPU before, "
              f"{min(imports['after']):.2f} s after (best of 3).")
    print(f"\n(load average at the end {_load_average()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
