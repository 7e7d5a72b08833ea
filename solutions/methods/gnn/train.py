"""Training the GNN rankers: ranking losses, the loops, and batched prediction (settings: ``settings.py``).

**Loss.** A pairwise hinge (``pairwise_hinge_loss``): for every pair of configs of the same graph
whose runtimes differ, ``max(0, margin + s_faster - s_slower)``, averaged over the pairs; the closest
smooth-ish surrogate of Kendall tau, which counts exactly these pairs, each with the same weight, and
blind to the scale of the runtimes. Tied runtimes form no pair (why the hinge: docs/defaults.md).

**Steps.** What differs by kind is one ``KindPlan``, built once from the task
(``kind_plan``). Graphs with a config per configurable node (layout): ``config.layout_graphs()`` graphs
per step (4 unless ``layout_graphs_per_step`` says otherwise; 1 with early fusion or Graph Segment
Training), ``layout_configs_per_graph`` of each graph's (distinct) configs sampled without
replacement; with intermediate fusion the step's graphs are scored in one pass as one disjoint graph
(``LayoutRanker.score_graphs``), and the step's loss is the mean of the graphs' losses. An epoch is one
pass over the training graphs in a random order, and at least ``layout_min_epoch_steps`` graphs
trained (over all processes; each process takes its share): a split of fewer graphs is passed over
again within the epoch (each graph as often as the others, give or take one), so that a model trained
on one real graph's configs still takes enough steps (docs/gnn.md, "Several graphs a step"). Graphs with one
config per run (tile): ``tile_graphs_per_step`` kernels per step as one disjoint graph, up to
``tile_configs_per_graph`` configs of each; pairs only form within a kernel.

**Selection.** After every ``eval_every`` epochs the model is scored on the validation split with
the official per-graph metric (``competition.metrics``; layout graphs on a fixed sample of at most
``layout_valid_configs`` configs so that selection stays cheap), and the best weights are kept. With
``average_epochs`` what is scored and kept is an exponential moving average of the weights over
about that many epochs (``torch.optim.swa_utils.AveragedModel``), which swings less between
evaluations than the live weights and stays nearer the first steps' weights (docs/gnn.md, "Averaged
weights"). Training stops after ``epochs``, after ``patience`` evaluations without improvement, or
when the time budget runs out, whichever comes first.

**Graph Segment Training** (``training="gst"``, layout only; ``solutions.methods.gnn.gst``): each step
back-propagates through ``segments_per_step`` random segments of at most ``segment_size`` nodes and
takes the other segments' pooled states from a table of historical values (``stale_dropout``: the
chance that one is left out). Prediction and validation still run the full graph.

**Several processes** (``solutions.compute.distributed``; ``torchrun``): each rank trains on its shard
of the graphs with the model wrapped in DistributedDataParallel; ranks take the same number of
steps, and validation scores and stopping decisions are all-reduced, so every rank keeps the same
weights.
"""

from __future__ import annotations

import copy
import functools
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch.optim.adamw import adamw

from competition.progress import progress as progress_bar
from competition.tasks import Task
from solutions.compute import distributed
from solutions.kinds import CONFIGS_PER_NODE, kind_of
from solutions.methods.base import report_validation
from solutions.methods.gnn.data import LayoutExample, TileExample, layout_batch, tile_batch
from solutions.methods.gnn.gst import SegmentTraining, gst_layout_scores
from solutions.methods.gnn.model import LayoutRanker, TileRanker, context_index
from solutions.methods.gnn.settings import GNNConfig
from solutions.methods.selection import selection_examples

# --------------------------------------------------------------------------------------------------
# Losses


def _same_group(n: int, groups: torch.Tensor | None, device: torch.device) -> torch.Tensor:
    if groups is None:
        return torch.ones(n, n, dtype=torch.bool, device=device)
    return groups[:, None] == groups[None, :]


def pairwise_hinge_loss(scores: torch.Tensor, runtimes: torch.Tensor, groups: torch.Tensor | None = None,
                        *, margin: float = 0.1) -> torch.Tensor:
    """Mean of ``max(0, margin + s_i - s_j)`` over pairs of one group with ``runtime_i < runtime_j``.

    Scores are runtime-like (lower = faster), so a pair costs nothing once the faster config scores
    at least ``margin`` lower. Equal runtimes form no pair; with no pair at all the loss is 0 (and
    still differentiable).

    Shapes: scores (B,), runtimes (B,), groups (B,) int64 graph of each config or None (one graph)
    -> scalar.
    """
    faster = (runtimes[:, None] < runtimes[None, :]) & _same_group(scores.shape[0], groups, scores.device)
    if not faster.any():
        return scores.sum() * 0.0
    cost = torch.relu(margin + scores[:, None] - scores[None, :])
    return cost[faster].mean()


def grouped_hinge_loss(scores: torch.Tensor, runtimes: torch.Tensor, padding: torch.Tensor | None = None, *,
                       margin: float = 0.1) -> torch.Tensor:
    """``pairwise_hinge_loss`` of each row: the configs of one graph per row, (G, B) -> (G,).

    ``padding`` (G, B) True where an entry is filler: it forms no pair. A row without a pair has loss 0.
    """
    faster = runtimes[:, :, None] < runtimes[:, None, :]
    if padding is not None:
        faster = faster & ~padding[:, :, None] & ~padding[:, None, :]
    cost = torch.relu(margin + scores[:, :, None] - scores[:, None, :]) * faster
    return cost.sum(dim=(1, 2)) / faster.sum(dim=(1, 2)).clamp(min=1)


def ranking_loss(config: GNNConfig, scores: torch.Tensor, runtimes: torch.Tensor,
                 groups: torch.Tensor | None = None) -> torch.Tensor:
    return pairwise_hinge_loss(scores, runtimes, groups, margin=config.margin)


# --------------------------------------------------------------------------------------------------
# Prediction


@torch.no_grad()
def predict_layout(model: LayoutRanker, example: LayoutExample, *, device: torch.device,
                   batch_nodes: int = 1 << 18, dedup_rows: bool = True) -> np.ndarray:
    """Scores of every kept config of one layout graph (the graph encoded once): -> (c,) float64."""
    model.eval()
    inputs = example.inputs.to(device)
    node_state = model.encode_nodes(inputs)
    # rows of node states per config: every node with early fusion, the configurable ones with intermediate
    width = example.num_nodes if model.fusion == "early" else int(inputs.config_node_ids.shape[0])
    chunk = max(1, batch_nodes // max(1, width))
    context = None
    if model.config_attention and example.num_configs:  # the same peers for every chunk
        peers = context_index(example.num_configs, model.attention_context)
        context = model.pool_configs(inputs, node_state, example.configs.digits(peers).to(device),
                                     dedup_rows=dedup_rows,
                                     engineered=example.engineered_rows(peers, device))
    out = []
    for start in range(0, example.num_configs, chunk):
        index = torch.arange(start, min(example.num_configs, start + chunk))
        digits = example.configs.digits(index).to(device)
        out.append(model.forward_encoded(inputs, node_state, digits, dedup_rows=dedup_rows, context=context,
                                         engineered=example.engineered_rows(index, device)).cpu())
    return torch.cat(out).double().numpy() if out else np.zeros(0)


@torch.no_grad()
def predict_tile(model: TileRanker, example: TileExample, *, device: torch.device, batch_nodes: int = 0,
                 dedup_rows: bool = True) -> np.ndarray:
    """Scores of every kept config of one kernel (a kernel is one pass: ``batch_nodes`` and
    ``dedup_rows`` do not apply): -> (c,) float64."""
    model.eval()
    batch = tile_batch([example], [torch.arange(example.num_configs)]).to(device)
    return model(batch).cpu().double().numpy()


# --------------------------------------------------------------------------------------------------
# Validation with the official metric


def layout_selection_sample(example: LayoutExample, max_configs: int,
                            rng: np.random.Generator) -> LayoutExample:
    """A copy of a labeled example holding at most ``max_configs`` of its configs (a fixed sample)."""
    if example.num_configs <= max_configs:
        return example
    index = torch.from_numpy(np.sort(rng.choice(example.num_configs, size=max_configs, replace=False)))
    return LayoutExample(
        row_id=example.row_id, inputs=example.inputs,
        configs=example.configs.subset(index),
        runtime=example.runtime[index], config_inverse=None, pruning=example.pruning,
        engineered=example.engineered_rows(index),
    )


def score_examples(predict: Callable[[object], np.ndarray], examples: Sequence[LayoutExample | TileExample],
                   task: Task) -> float:
    """Mean official per-graph score of ``predict`` over labeled examples (their kept configs; tile
    runtimes are already normalized, so the normalizers are ones)."""
    scores = []
    for example in examples:
        order = np.argsort(predict(example), kind="stable")
        runtime = example.runtime.numpy()
        scores.append(task.score_graph(order, runtime,
                                       np.ones_like(runtime) if task.has_normalizers else None))
    return float(np.mean(scores)) if scores else 0.0


# --------------------------------------------------------------------------------------------------
# The loops


@dataclass
class TrainResult:
    """What a training run ends with: the best weights and how it got there."""

    best_state: dict
    best_epoch: int  # 0 = before any training step
    best_score: float | None  # None when there was nothing to validate on
    history: list[dict] = field(default_factory=list)  # one entry per evaluation
    steps: int = 0
    seconds: float = 0.0
    stopped: str = "epochs"  # "epochs", "patience", "time budget" or "selected epoch" (stop_after)
    world_size: int = 1  # training processes (torch.distributed ranks)
    train_graphs: int = 0  # training graphs this process trained on (its shard)
    gst: dict | None = None  # Graph Segment Training facts (segments, table size), None for full-graph


def _cosine(step: int, total: int) -> float:
    """LR multiplier: cosine from 1 to 0.1 over ``total`` steps."""
    progress = min(1.0, step / max(1, total))
    return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress))


def _trainable(example: LayoutExample | TileExample) -> bool:
    runtime = example.runtime
    return runtime is not None and runtime.numel() >= 2 and bool((runtime != runtime[0]).any())


@dataclass(frozen=True)
class KindPlan:
    """What differs between task kinds in building, training and applying the gnn, chosen once from
    the task (``kind_plan``): the methods below read it and never test a kind."""

    network: Callable[[GNNConfig], LayoutRanker | TileRanker]  # builds the task's model from the settings
    epochs: int
    graphs_per_step: int
    min_graphs_per_epoch: int  # an epoch passes over the graphs again up to this many (0: once)
    valid_configs: int | None  # configs of a validation graph scored in selection (None: all)
    step: Callable[..., torch.Tensor]  # (model, [(index, example)], config, rng, device, dedup_rows) -> loss
    predict: Callable[..., np.ndarray]  # predict_layout or predict_tile
    segment_training: bool  # Graph Segment Training applies (it segments per-node configs)


def kind_plan(task: Task, config: GNNConfig) -> KindPlan:
    """The plan of ``task``'s graphs: one config per configurable node (layout) or per graph (tile)."""
    if kind_of(task).gnn_family == CONFIGS_PER_NODE:
        return KindPlan(functools.partial(LayoutRanker.from_settings, task=task), config.layout_epochs,
                        config.layout_graphs(),
                        config.layout_min_epoch_steps, config.layout_valid_configs, _layout_step,
                        predict_layout, True)
    return KindPlan(functools.partial(TileRanker.from_settings, task=task), config.tile_epochs,
                    config.tile_graphs_per_step, 0, None, _tile_step, predict_tile, False)


@dataclass
class _Run:
    """One training run's moving parts (what ``train`` sets up and ``_epoch`` uses)."""

    model: LayoutRanker | TileRanker
    examples: list
    config: GNNConfig
    plan: KindPlan
    rng: np.random.Generator
    device: torch.device
    dedup_rows: bool
    most: int  # the most training graphs any process holds
    steps_per_epoch: int
    update: ParameterUpdate
    step: torch.nn.Module
    averaged: torch.optim.swa_utils.AveragedModel | None
    gst: SegmentTraining | None


def train(
    model: LayoutRanker | TileRanker,
    train_examples: Sequence[LayoutExample | TileExample],
    valid_examples: Sequence[LayoutExample | TileExample],
    config: GNNConfig,
    *,
    seed: int,
    device: torch.device,
    dedup_rows: bool = True,
    progress: bool = True,
    time_budget_s: float | None = None,
    description: str = "gnn",
    table_dir: Path | None = None,
    stop_after: int | None = None,
) -> TrainResult:
    """Train ``model`` with the ranking loss and keep the weights with the best validation score.

    What differs by kind comes from ``kind_plan(model.task, config)``. ``valid_examples`` must be
    labeled; layout ones are subsampled to ``config.layout_valid_configs`` configs each (fixed by
    ``seed``). ``table_dir``: where Graph Segment Training keeps its embedding tables (None: in memory).
    ``stop_after``: end after this epoch and keep its weights (the learning-rate schedule still planned
    for every epoch), how a cross-validated epoch count is refitted.

    In a torch.distributed run (``solutions.compute.distributed``) the examples are this rank's shard;
    every rank must call ``train`` with the same settings.
    """
    world = distributed.current()
    run, valid_examples = _start(model, train_examples, valid_examples, config, seed, device, dedup_rows,
                                 table_dir)
    validate = distributed.all_sum([len(valid_examples)])[0] > 0  # the same decision on every rank
    judged = model if run.averaged is None else run.averaged.module  # what selection scores and keeps

    def valid_score() -> float:
        return _mean_over_ranks(lambda e: run.plan.predict(judged, e, device=device,
                                                           batch_nodes=config.predict_batch_nodes,
                                                           dedup_rows=dedup_rows), valid_examples, model.task)

    started = time.perf_counter()
    best = valid_score() if validate else None
    result = TrainResult(copy.deepcopy(judged.state_dict()), 0, best,
                         [{"epoch": 0, "loss": None, "valid": best, "seconds": 0.0}],
                         world_size=world.size, train_graphs=len(run.examples))
    stale, epoch = 0, 0
    bar = progress_bar(range(1, run.plan.epochs + 1), desc=description, unit="epoch", enabled=progress,
                       leave=False)
    try:
        for epoch in bar:
            losses = _epoch(run, result, started, time_budget_s)
            if stop_after is not None and epoch >= stop_after and result.stopped == "epochs":
                result.stopped = "selected epoch"
            last = epoch == run.plan.epochs or result.stopped in ("time budget", "selected epoch")
            if validate and (epoch % config.eval_every == 0 or last):
                score = valid_score()
                mean_loss = distributed.all_sum([float(np.mean(losses))])[0] / world.size
                result.history.append({"epoch": epoch, "loss": mean_loss, "valid": score,
                                       "seconds": round(time.perf_counter() - started, 3)})
                report_validation(epoch, score)  # tpugraphs tune listens (the folds of a cv: nobody)
                if score > result.best_score:
                    result.best_score, result.best_epoch, stale = score, epoch, 0
                    result.best_state = copy.deepcopy(judged.state_dict())
                else:
                    stale += 1
                bar.set_postfix(loss=f"{mean_loss:.4f}", valid=f"{score:.4f}",
                                best=f"{result.best_score:.4f}")
                if config.patience is not None and stale >= config.patience:
                    result.stopped = "patience"
            if result.stopped != "epochs":
                break
    finally:
        bar.close()
        run.update.close()
        if run.gst is not None:
            result.gst = {"segments": run.gst.num_segments, "table_mb": round(run.gst.table_bytes / 2**20, 3),
                          "table": "memory" if table_dir is None else "cache directory"}
            run.gst.close()
    if not validate:  # nothing to select on: the last weights
        result.best_state, result.best_epoch = copy.deepcopy(judged.state_dict()), epoch
    result.seconds = time.perf_counter() - started
    return result


def _start(model: LayoutRanker | TileRanker, train_examples: Sequence, valid_examples: Sequence,
           config: GNNConfig, seed: int, device: torch.device, dedup_rows: bool,
           table_dir: Path | None) -> tuple[_Run, list]:
    """A training run set up: the trainable graphs, the validation sample, the optimiser and schedule,
    Graph Segment Training's tables and the weight average; and the labeled validation examples."""
    world = distributed.current()
    plan = kind_plan(model.task, config)
    rng = np.random.default_rng(seed if world.rank == 0 else [seed, world.rank])
    examples = [e for e in train_examples if _trainable(e)]
    fewest, most = (int(v) for v in _all_min_max(len(examples)))
    if not most:
        raise ValueError("no training graph has two configs with different runtimes; nothing to learn from")
    if not fewest:
        raise ValueError(f"{world.size} training processes but a process holds no training graph with two "
                         f"different runtimes ({most} at most per process); use fewer processes")
    if plan.valid_configs is not None:
        valid_examples = [layout_selection_sample(e, plan.valid_configs, rng) for e in valid_examples]
    # unlabeled graphs, and those too small to choose an epoch (tiny tile kernels), select nothing
    valid_examples = selection_examples([e for e in valid_examples if e.runtime is not None], model.task)
    # each step of each process takes graphs_per_step graphs; the minimum counts them over all processes
    graphs = max(most, math.ceil(plan.min_graphs_per_epoch / world.size))
    steps_per_epoch = math.ceil(graphs / plan.graphs_per_step)
    total_steps = plan.epochs * steps_per_epoch
    gst = (SegmentTraining(config.segment_size, config.hidden, table_dir)
           if plan.segment_training and config.training == "gst" else None)
    # A GST segment without configurable nodes leaves the config parameters unused in its step:
    # DistributedDataParallel must then look for unused parameters (on every rank alike).
    config_free = gst is not None and distributed.all_max([float(gst.prepare(examples))])[0] > 0
    # So does a layout graph without any; AdamW then skips those parameters, which the flat update
    # cannot (every rank decides alike).
    unused = config_free or distributed.all_max([float(any(map(_leaves_parameters_unused, examples)))])[0] > 0
    update = ParameterUpdate(model, config, total_steps, steps_per_epoch, flat=not unused)
    # One module call per step, so that DistributedDataParallel sees the forward it must synchronise.
    step = distributed.data_parallel(_TrainingStep(model), find_unused_parameters=config_free)
    return _Run(model, examples, config, plan, rng, device, dedup_rows, most, steps_per_epoch, update, step,
                update.averaged, gst), valid_examples


def _epoch(run: _Run, result: TrainResult, started: float, time_budget_s: float | None) -> list[float]:
    """One epoch's steps (``result.steps`` and ``result.stopped`` updated); each step's loss."""
    run.model.train()
    world = distributed.current()
    step_function = run.plan.step if run.gst is None else functools.partial(_gst_step, run.gst)
    losses = []
    for chosen in epoch_steps(run):
        loss = run.step(step_function, chosen, run.config, run.rng, run.device, run.dedup_rows)
        run.update.zero_grad()
        loss.backward()
        run.update.step()
        losses.append(float(loss.detach()))
        result.steps += 1
        if time_budget_s is not None and _out_of_time(started, time_budget_s, world.active):
            result.stopped = "time budget"
            break
    return losses


class FlatParameters:
    """A module's trainable parameters as views of one flat tensor, their gradients as views of another.

    Elementwise updates (AdamW, scaling the gradients when clipping, the moving average) then run as
    one kernel over the flat tensor instead of one call per parameter tensor: at the defaults a
    model has about 60 small tensors, and per-tensor calls cost more than their arithmetic. Every
    element goes through the same arithmetic as before, so the weights come out the same.
    Backward accumulates into the gradient views (``zero_grad`` clears them all in one call); a
    parameter a step does not use gets a zero gradient instead of none. ``close`` gives each
    parameter its own storage again, so a flattened module saves and moves as before.

    Every trainable parameter must have the same dtype and device.
    """

    def __init__(self, module: torch.nn.Module) -> None:
        self.params = [p for p in module.parameters() if p.requires_grad]
        kinds = {(p.dtype, p.device) for p in self.params}
        if len(kinds) > 1:
            raise ValueError(f"flat parameters need one dtype and device; the module has "
                             f"{sorted(map(str, kinds))}")
        with torch.no_grad():
            self.flat = torch.nn.Parameter(torch.cat([p.detach().reshape(-1) for p in self.params]))
        self.flat.grad = torch.zeros_like(self.flat)
        offset = 0
        for p in self.params:
            size = p.numel()
            p.data = self.flat.data[offset : offset + size].view_as(p)
            p.grad = self.flat.grad[offset : offset + size].view_as(p)
            offset += size
        self.grads = [p.grad for p in self.params]  # the views, in the module's order

    def zero_grad(self) -> None:
        self.flat.grad.zero_()

    def close(self) -> None:
        """Each parameter in a storage of its own again (values kept), gradients dropped."""
        for p in self.params:
            p.data = p.data.clone()
            p.grad = None


NO_CLIP_BELOW = 0.99  # of the clipping norm: a flat-gradient norm under it skips clipping (`clip`)


class ParameterUpdate:
    """What follows a step's backward: the gradients clipped to a total norm of ``max_norm``, an AdamW
    step, the learning-rate schedule (cosine, ``_cosine``) and the moving average of the weights
    (``averaged``, ``_moving_average``, with ``config.average_epochs``).

    ``flat`` (the default): the same arithmetic as ``clip_grad_norm_``, ``torch.optim.AdamW`` and
    ``AveragedModel.update_parameters`` over the parameter tensors (the total norm is still the norm of
    the per-tensor norms; the rest is elementwise), run on the flat tensors of ``FlatParameters``: a
    handful of calls per step instead of several per parameter tensor. It gives every parameter a
    gradient each step, so where a step can leave parameters unused (AdamW skips those: no decay, no
    momentum), ``flat=False`` runs those three over the tensors one by one.
    """

    def __init__(self, model: torch.nn.Module, config: GNNConfig, total_steps: int, steps_per_epoch: int, *,
                 flat: bool = True, max_norm: float = 1.0) -> None:
        self.model = model
        self.averaged = _moving_average(model, config.average_epochs, steps_per_epoch)  # before flattening
        self.decay = _ema_decay(config.average_epochs, steps_per_epoch)
        self.parameters = FlatParameters(model) if flat else None
        self.average = (FlatParameters(self.averaged.module) if flat and self.averaged is not None else None)
        self.max_norm = max_norm
        tensors = [self.parameters.flat] if self.parameters is not None else list(model.parameters())
        self.optimizer = torch.optim.AdamW(tensors, lr=config.lr, weight_decay=config.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer,
                                                           lambda step: _cosine(step, total_steps))

    def zero_grad(self) -> None:
        if self.parameters is None:
            self.optimizer.zero_grad(set_to_none=True)
        else:
            self.parameters.zero_grad()

    def clip(self) -> None:
        if self.parameters is None:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_norm)
            return
        # Most steps are not clipped, and then clipping multiplies by exactly 1. One norm over the flat
        # gradient tells those steps apart: it differs from the per-tensor total below by rounding only
        # (about 1e-6 of the norm), far less than the 1 % margin, so under it the total is under the
        # clipping norm too and the gradients are left as they are, the same bytes. The per-tensor norms
        # (one call per tensor) run only near or over the norm, or on a non-finite gradient.
        if float(torch.linalg.vector_norm(self.parameters.flat.grad)) < NO_CLIP_BELOW * self.max_norm:
            return
        total = torch.nn.utils.get_total_norm(self.parameters.grads, 2.0)
        torch.nn.utils.clip_grads_with_norm_([self.parameters.flat], self.max_norm, total)

    def optimise(self) -> None:
        if self.parameters is None or not self.optimizer.state:  # the first step makes AdamW's state
            self.optimizer.step()
        else:
            self._adamw_step(self.parameters.flat)
        self.scheduler.step()

    @torch.no_grad()
    def _adamw_step(self, flat: torch.Tensor) -> None:
        """``self.optimizer.step()`` on the one flat tensor, as torch's functional AdamW
        (``torch.optim.adamw.adamw``, the function the optimizer calls, with its group's settings and
        state): the same arithmetic without the optimizer's per-step bookkeeping (hooks, the profiler's
        marks, gathering the group's tensors), which cost more than the update itself (docs/gnn.md,
        "Training speed")."""
        group, state = self.optimizer.param_groups[0], self.optimizer.state[flat]
        beta1, beta2 = group["betas"]
        adamw(
            [flat], [flat.grad], [state["exp_avg"]], [state["exp_avg_sq"]],
            [state["max_exp_avg_sq"]] if group["amsgrad"] else [], [state["step"]],
            foreach=group["foreach"], capturable=group["capturable"], differentiable=group["differentiable"],
            fused=group["fused"], amsgrad=group["amsgrad"], beta1=beta1, beta2=beta2, lr=group["lr"],
            weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"])

    @torch.no_grad()
    def update_average(self) -> None:
        if self.averaged is None:
            return
        if self.average is None:
            self.averaged.update_parameters(self.model)
            return
        if int(self.averaged.n_averaged) == 0:
            self.average.flat.copy_(self.parameters.flat)
        else:
            self.average.flat.lerp_(self.parameters.flat, 1 - self.decay)
        self.averaged.n_averaged += 1

    def step(self) -> None:
        """Clip, step, schedule, average: after ``loss.backward()``."""
        self.clip()
        self.optimise()
        self.update_average()

    def close(self) -> None:
        """The model (and its average) back to a storage per parameter."""
        for flattened in (self.parameters, self.average):
            if flattened is not None:
                flattened.close()


def _leaves_parameters_unused(example: LayoutExample | TileExample) -> bool:
    """Whether a step on ``example`` leaves some of the model's parameters without a gradient: a layout
    graph without configurable nodes never reaches the config rows' layers."""
    return isinstance(example, LayoutExample) and not example.inputs.config_node_ids.numel()


def _ema_decay(epochs: float, steps_per_epoch: int) -> float:
    """How much of the average each step keeps: an average over about ``epochs`` epochs."""
    return 1.0 - 1.0 / max(1.0, epochs * steps_per_epoch)


def epoch_steps(run: _Run) -> Iterator[list[tuple[int, LayoutExample | TileExample]]]:
    """The graphs of each step of one epoch, ``(index, example)`` pairs, drawn from ``run.rng``: a random
    order of the training graphs, made up to the most any process holds, and passed over again up to
    the epoch's minimum of graphs."""
    order = run.rng.permutation(len(run.examples))
    if len(order) < run.most:  # this rank's shard is short: repeat some of its graphs
        order = np.concatenate([order, run.rng.choice(len(run.examples), size=run.most - len(order))])
    graphs = run.steps_per_epoch * run.plan.graphs_per_step
    if run.plan.min_graphs_per_epoch:  # few graphs: pass over them again, up to the epoch's steps
        while len(order) < graphs:
            order = np.concatenate([order, run.rng.permutation(len(run.examples))])
        order = order[:graphs]
    for start in range(0, len(order), run.plan.graphs_per_step):
        yield [(int(i), run.examples[int(i)]) for i in order[start : start + run.plan.graphs_per_step]]


def _moving_average(model: torch.nn.Module, epochs: float,
                    steps_per_epoch: int) -> torch.optim.swa_utils.AveragedModel | None:
    """An exponential moving average of ``model``'s weights over about ``epochs`` epochs (None: 0).

    Each step moves the average 1 / (epochs x steps_per_epoch) of the way to the new weights, so the
    horizon is the same number of epochs whatever the split's size. It starts from the weights after
    the first step and keeps a share of them for a long time (1 / e after ``epochs`` epochs): what the
    real check rewarded is that anchoring, not only the smoothing (docs/gnn.md, "Averaged weights")."""
    if epochs <= 0:
        return None
    return torch.optim.swa_utils.AveragedModel(
        model, multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(_ema_decay(epochs, steps_per_epoch)))


class _TrainingStep(torch.nn.Module):
    """``step_function(model, *args)`` -> loss as the module's forward (what DistributedDataParallel
    wraps)."""

    def __init__(self, model: LayoutRanker | TileRanker) -> None:
        super().__init__()
        self.model = model

    def forward(self, step_function: Callable[..., torch.Tensor], *args: object) -> torch.Tensor:
        return step_function(self.model, *args)


def _all_min_max(count: int) -> tuple[float, float]:
    """The fewest and the most of ``count`` over the ranks."""
    negated_fewest, most = distributed.all_max([-count, count])
    return -negated_fewest, most


def _mean_over_ranks(predict: Callable[[object], np.ndarray], examples: Sequence[LayoutExample | TileExample],
                     task: Task) -> float:
    """The mean official score over every rank's validation graphs (``score_examples`` on one process)."""
    if not distributed.current().active:
        return score_examples(predict, examples, task)
    local = score_examples(predict, examples, task)
    total, count = distributed.all_sum([local * len(examples), len(examples)])
    return total / count if count else 0.0


def _out_of_time(started: float, budget_s: float, synchronise: bool) -> bool:
    """Whether the budget is spent; with several ranks, whether it is spent on any (they stop together)."""
    spent = time.perf_counter() - started > budget_s
    return bool(distributed.all_max([float(spent)])[0]) if synchronise else spent


def _sample(n: int, k: int, rng: np.random.Generator) -> torch.Tensor:
    return torch.from_numpy(rng.choice(n, size=min(n, k), replace=False).astype(np.int64))


def _layout_step(model: LayoutRanker, chosen: list[tuple[int, LayoutExample]], config: GNNConfig,
                 rng: np.random.Generator, device: torch.device, dedup_rows: bool) -> torch.Tensor:
    """The loss of one step: the mean of its graphs' ranking losses, each over
    ``layout_configs_per_graph`` of its configs. Several graphs with configurable nodes are scored in one
    pass where the model allows (``_batched_layout_losses``), the others one by one."""
    if len(chosen) == 1:
        return _one_layout_loss(model, chosen[0][1], config, rng, device, dedup_rows)
    batchable = [model.fusion == "intermediate" and bool(e.inputs.config_node_ids.numel()) for _, e in chosen]
    together = [e for (_, e), b in zip(chosen, batchable, strict=True) if b]
    alone = [e for (_, e), b in zip(chosen, batchable, strict=True) if not b]
    losses = [_one_layout_loss(model, e, config, rng, device, dedup_rows) for e in alone]
    if len(together) == 1:
        losses.append(_one_layout_loss(model, together[0], config, rng, device, dedup_rows))
    elif together:
        losses.append(_batched_layout_losses(model, together, config, rng, device, dedup_rows))
    return torch.cat([loss.reshape(-1) for loss in losses]).mean()


def _one_layout_loss(model: LayoutRanker, example: LayoutExample, config: GNNConfig, rng: np.random.Generator,
                     device: torch.device, dedup_rows: bool) -> torch.Tensor:
    index = _sample(example.num_configs, config.layout_configs_per_graph, rng)
    scores = model(example.inputs.to(device), example.configs.digits(index).to(device), dedup_rows=dedup_rows,
                   engineered=example.engineered_rows(index, device))
    return ranking_loss(config, scores, example.runtime[index].to(device))


def _batched_layout_losses(model: LayoutRanker, examples: list[LayoutExample], config: GNNConfig,
                           rng: np.random.Generator, device: torch.device, dedup_rows: bool) -> torch.Tensor:
    """Each graph's ranking loss (G,), the graphs scored in one pass (``LayoutRanker.score_graphs``). A
    graph with fewer configs than the others is filled up with copies of its first sampled config,
    which form no pair and are attended to by nobody."""
    indices = [_sample(e.num_configs, config.layout_configs_per_graph, rng) for e in examples]
    batch, digits, engineered, padding, runtimes = side_by_side(examples, indices, device,
                                                               engineered=model.engineered is not None)
    scores = model.score_graphs(batch, digits, dedup_rows=dedup_rows, engineered=engineered, padding=padding)
    return grouped_hinge_loss(scores, runtimes, padding, margin=config.margin)


def side_by_side(examples: list[LayoutExample], indices: list[torch.Tensor], device: torch.device, *,
                 engineered: bool) -> tuple:
    """What ``LayoutRanker.score_graphs`` reads for configs ``indices[g]`` of each labeled example, on
    ``device``: the ``LayoutBatch``, digits (B, NC, 18), engineered rows (G, B, F) or None, padding (G, B)
    and runtimes (G, B). B is the most configs of any graph; the others are filled up with copies of
    their first config, marked in ``padding``."""
    width = max(len(i) for i in indices)
    filled = [torch.cat([i, i[:1].expand(width - len(i))]) for i in indices]
    padding = torch.stack([torch.arange(width) >= len(i) for i in indices]).to(device)
    digits = torch.cat([e.configs.digits(i) for e, i in zip(examples, filled, strict=True)], dim=1)
    rows = (torch.stack([e.engineered_rows(i, device) for e, i in zip(examples, filled, strict=True)])
            if engineered else None)
    runtimes = torch.stack([e.runtime[i] for e, i in zip(examples, filled, strict=True)]).to(device)
    return (layout_batch([e.inputs for e in examples]).to(device), digits.to(device), rows, padding,
            runtimes)


def _gst_step(gst: SegmentTraining, model: LayoutRanker, chosen: list[tuple[int, LayoutExample]],
              config: GNNConfig, rng: np.random.Generator, device: torch.device,
              dedup_rows: bool) -> torch.Tensor:
    key, example = chosen[0]  # one graph per step, its segments' table kept under its index
    segments, table = gst.graph(key, example)
    index = _sample(example.num_configs, config.layout_configs_per_graph, rng)
    scores = gst_layout_scores(model, example, segments, table, index,
                               segments_per_step=config.segments_per_step,
                               stale_dropout=config.stale_dropout, rng=rng, device=device,
                               dedup_rows=dedup_rows)
    return ranking_loss(config, scores, example.runtime[index].to(device))


def _tile_step(model: TileRanker, chosen: list[tuple[int, TileExample]], config: GNNConfig,
               rng: np.random.Generator, device: torch.device, dedup_rows: bool) -> torch.Tensor:
    examples = [example for _, example in chosen]
    index = [_sample(e.num_configs, config.tile_configs_per_graph, rng) for e in examples]
    batch = tile_batch(examples, index).to(device)
    return ranking_loss(config, model(batch), batch.runtime, batch.config_graph)
