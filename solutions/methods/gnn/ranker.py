"""``GNNRanker``: the GNN as a ``RankingMethod`` (fit on one collection, predict, save, load)."""

from __future__ import annotations

import random
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from competition.collections import Collection, get_collection
from competition.data.graphs import Graph, load_graph
from competition.data.processed_cache import build_cache, split_cache_dir
from competition.progress import progress
from competition.tasks import Task
from solutions.compute import distributed
from solutions.features.layout import layout_feature_names
from solutions.kinds.features import FEATURE_VERSION
from solutions.methods.base import FitOptions, SplitSource, validation_listener
from solutions.methods.gnn.data import LayoutExample, TileExample, make_example
from solutions.methods.gnn.model import LayoutRanker, TileRanker
from solutions.methods.gnn.settings import SETTINGS, GNNConfig
from solutions.methods.gnn.train import KindPlan, TrainResult, kind_plan, train
from solutions.methods.selection import (
    CROSS_VALIDATION,
    SelectionPlan,
    cv_fold_of,
    min_configs,
    plan_selection,
)
from solutions.pruning import GraphTransform, parse_pruning
from solutions.settings.schema import SettingError, check_names
from solutions.store.saved import ModelFile, SavedMeta

MODEL_FILE = "gnn.pt"
META_FILE = "gnn.json"
# The one saved-model format this kit reads and writes (gnn.json: the resolved settings, the collection,
# the training facts; gnn.pt: the weights). A file of any other format is refused, naming the command
# that retrains it.
FORMAT_VERSION = 6
SAVED = ModelFile("gnn", META_FILE, FORMAT_VERSION)


@contextmanager
def _torch_threads(num_threads: int | None):
    """Run with ``num_threads`` CPU threads, restoring the previous setting afterwards."""
    if num_threads is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(num_threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def torch_device(name: str) -> torch.device:
    """``"cpu"``, ``"cuda"``, ``"cuda:1"`` -> a device; ValueError when CUDA is asked for but absent."""
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {name!r} asked for, but torch sees no CUDA GPU here; use --device cpu")
    return device


@contextmanager
def seeded(seed: int):
    """Seed Python, numpy and torch, and use deterministic kernels where torch has them, for one block.

    The global determinism switch is restored afterwards (it would otherwise leak into the caller).
    On a CPU with a fixed thread count this makes a fit reproducible bit for bit; on a GPU, kernels
    without a deterministic version only warn (``warn_only``).
    """
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    before, before_warn = (torch.are_deterministic_algorithms_enabled(),
                           torch.is_deterministic_algorithms_warn_only_enabled())
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before, warn_only=before_warn)


class GNNRanker:
    """Message passing over the computation graph with a ranking loss (``solutions.methods.gnn``).

    Arguments:
        config: a ``GNNConfig`` (its class defaults when None); keyword arguments override single fields
            (``GNNRanker(layout_epochs=40, hidden=128)``). ``GNNRanker.for_collection(collection,
            **params)`` starts from the collection's defaults (``gnn.settings.SETTINGS``), as
            ``tpugraphs solve`` does.

    ``fit`` prunes layout graphs with the ``pruning`` setting (``config.pruning``, default ``onehop``;
    ``--no-prune`` is ``pruning=none``), the one holder of the pruning, and uses ``options.compress`` (config
    deduplication, packed config storage, distinct (node, row) pairs computed once),
    ``options.device``, ``options.seed``, ``options.progress`` and ``options.time_budget_s``;
    ``predict`` preprocesses each graph the same way the training graphs were. ``save`` records the
    settings the model was trained with (its pruning among them) and ``load`` rebuilds them, so a saved
    model predicts with its own pruning whatever the kit's default has become.

    With ``options.cache_dir``, layout train and valid graphs are read through the processed cache
    (``competition.data.processed_cache``, built once per file under
    ``cache_dir/<collection subpath>/<split>/<stem>`` and reused while fresh): the configs stay memory-mapped
    on disk and each step reads only those it samples, so fitting on 100k-config graphs does not hold their
    float32 tensors. The fit is the same as without the cache (same examples, same digits, same sampling).
    ``predict`` takes the same path when the runner hands it a cached graph (a ``CachedLayoutGraph``, in runs
    with a cache folder).

    ``config.training="gst"`` trains layout models with Graph Segment Training (``solutions.methods.gnn.gst``;
    its embedding tables go under ``options.cache_dir`` when set, in memory otherwise); prediction is
    the same full-graph pass either way. ``save`` records the training mode.

    In a torch.distributed run (``torchrun``, ``solutions.compute.distributed``) ``fit`` loads only this
    rank's shard of the train and valid graphs, says how many on stdout, and trains data-parallel.
    """

    name = "gnn"

    def __init__(self, config: GNNConfig | None = None, **params: object) -> None:
        """``config`` (the class defaults when None) with ``params`` on top, each checked by the schema
        (``SettingError`` naming the closest setting); ``for_collection`` starts from a collection's
        defaults instead."""
        check_names(GNNConfig, params, self.name)
        self.config = replace(config or GNNConfig(), **params)
        self.model: LayoutRanker | TileRanker | None = None
        self.collection: Collection | None = None
        self.plan: KindPlan | None = None  # what differs by the collection's kind (set by fit and load)
        self.compress = True
        self.device = torch.device("cpu")
        self.result: TrainResult | None = None
        self.pruning_summary: dict | None = None
        self.selection: dict | None = None  # how the epoch was chosen (SelectionPlan.to_json, + cv figures)

    @classmethod
    def for_collection(cls, collection: Collection, **params: object) -> GNNRanker:
        """A ranker with the settings ``collection`` is fitted with (``SETTINGS.resolve``: its defaults,
        then ``params``)."""
        return cls(SETTINGS.resolve(collection, params))

    @property
    def transform(self) -> GraphTransform | None:
        """The pruning transform of layout graphs (None: no pruning), read from ``config.pruning``."""
        return parse_pruning(self.config.pruning)

    @property
    def training_mode(self) -> str:
        """``full`` or ``gst``: segment training applies to graphs with configs per node only."""
        segments = self.plan is None or self.plan.segment_training
        return self.config.training if segments else "full"

    # -- RankingMethod -------------------------------------------------------------------------

    def fit(self, collection: Collection, train_split: SplitSource, valid: SplitSource,
            options: FitOptions) -> None:
        """Load the examples, choose how the epoch is selected, train (``solutions.methods.gnn.train``)."""
        self.collection, self.compress = collection, options.compress
        self.plan = kind_plan(collection.task, self.config)
        self.device = torch_device(options.device)
        world = distributed.current()
        with _torch_threads(self.config.num_threads), seeded(options.seed):
            train_examples = self._load(train_split, options, "train", world)
            valid_examples = self._load(valid, options, "valid", world)
            if world.active:  # each rank says what it holds (its shard of the graphs)
                print(f"[rank {world.rank}/{world.size}] {collection.name}: {len(train_examples)} of "
                      f"{len(train_split)} train graphs, {len(valid_examples)} of {len(valid)} valid graphs",
                      flush=True)
            self.pruning_summary = _pruning_summary(train_examples)
            plan = _selection_plan(valid_examples, collection.task)
            self.selection = plan.to_json()
            stop_after = None
            budget = _Budget(options.time_budget_s)  # one training budget for the folds and the final run
            if plan.mode == CROSS_VALIDATION:  # the few informative valid kernels choose nothing
                stop_after, folds, score = self._cross_validated_epoch(collection, train_examples,
                                                                       options, budget)
                self.selection.update(cv_folds=folds, cv_best_epoch=stop_after, cv_score=score)
                valid_examples = []
            self.model = self._build(collection).to(self.device)
            self.result = train(
                self.model, train_examples, valid_examples, self.config, seed=options.seed,
                device=self.device, dedup_rows=options.compress, progress=options.progress and world.main,
                time_budget_s=budget.left(), description=f"gnn {collection.name}",
                table_dir=None if options.cache_dir is None else Path(options.cache_dir),
                stop_after=stop_after,
            )
            self.model.load_state_dict(self.result.best_state)

    def _cross_validated_epoch(self, collection: Collection, examples: list, options: FitOptions,
                               budget: _Budget) -> tuple[int | None, int, float | None]:
        """The epoch with the best mean official score over ``CV_FOLDS`` folds of the train graphs (each
        fold trained on the others, scored every ``eval_every`` epochs), the folds used, and that score.

        (None, 0, None) when there are too few train graphs to hold any out: the last epoch is kept.
        """
        fold = cv_fold_of(len(examples), np.random.default_rng([int(options.seed), 7]))
        curves = []
        for k in np.unique(fold):
            held = [e for e, f in zip(examples, fold, strict=True) if f == k]
            kept = [e for e, f in zip(examples, fold, strict=True) if f != k]
            if not kept or not held:
                continue
            with validation_listener(None):  # a fold's scores are not the fit's
                result = train(self._build(collection).to(self.device), kept, held, self.config,
                               seed=options.seed, device=self.device, dedup_rows=options.compress,
                               progress=False, time_budget_s=budget.left(),
                               description=f"gnn {collection.name} fold {k}")
            curves.append({h["epoch"]: h["valid"] for h in result.history if h["epoch"] > 0})
        if not curves:
            return None, 0, None
        epochs = sorted(set.intersection(*(set(c) for c in curves)))  # a time budget may cut folds short
        if not epochs:
            return None, len(curves), None
        mean = {e: float(np.mean([c[e] for c in curves])) for e in epochs}
        best = max(epochs, key=lambda e: (mean[e], -e))  # the earliest of equal scores
        return best, len(curves), mean[best]

    def predict(self, collection: Collection, graph: Graph) -> np.ndarray:
        if self.model is None or self.plan is None:
            raise RuntimeError("GNNRanker.predict called before fit or load")
        if self.collection is not None and collection.task != self.collection.task:
            raise ValueError(f"this model was trained on {self.collection.name}; it cannot rank "
                             f"{collection.name} graphs")
        with _torch_threads(self.config.num_threads):
            example = make_example("", graph, transform=self.transform, compress=self.compress,
                                   engineered=self.config.engineered_features)
            scores = self.plan.predict(self.model, example, device=self.device,
                                       batch_nodes=self.config.predict_batch_nodes, dedup_rows=self.compress)
        return example.expand(scores)

    def save(self, path: Path) -> None:
        """Write ``gnn.pt`` (weights) and ``gnn.json`` (the resolved settings, the collection, the training
        facts) into ``path``.

        ``config`` holds every setting as the schema checked it (``gnn.settings``; the pruning
        the model was trained with is ``config.pruning``); ``load`` checks it again, so a hand-edited
        file is refused naming the setting.
        """
        if self.model is None or self.collection is None:
            raise RuntimeError("GNNRanker.save called before fit")
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        torch.save({k: v.detach().cpu() for k, v in self.model.state_dict().items()}, path / MODEL_FILE)
        fields = {
            "collection": self.collection.name,
            "compress": self.compress,
            "config": self.config.to_dict(),
            "training": None if self.result is None else {
                "best_epoch": self.result.best_epoch, "best_valid": self.result.best_score,
                "steps": self.result.steps, "seconds": round(self.result.seconds, 3),
                "stopped": self.result.stopped, "history": self.result.history,
                "mode": self.training_mode, "world_size": self.result.world_size, "gst": self.result.gst,
            },
            "pruning_summary": self.pruning_summary,
        }
        if self.model.engineered_features:
            fields["engineered_columns"] = engineered_columns()
        SAVED.write(path, fields)

    @classmethod
    def load(cls, path: Path) -> GNNRanker:
        """Read what ``save`` wrote; predicts on the CPU (``set_device`` to move it), with the settings
        (the pruning among them) read from the file. ``SavedModelError``, one line naming the file, what
        differs and the command that retrains the model, for another format or feature version or a
        setting this kit refuses."""
        path = Path(path)
        meta_path, model_path = path / META_FILE, path / MODEL_FILE
        if not meta_path.is_file() or not model_path.is_file():
            raise FileNotFoundError(f"{path}: no saved gnn model here (expected {META_FILE} and "
                                    f"{MODEL_FILE})")
        meta = SAVED.read(path)
        meta.require("config", GNNConfig.field_names())

        def rebuilt() -> GNNRanker:
            ranker = cls(GNNConfig(**meta["config"]))
            ranker.collection = get_collection(meta["collection"])
            return ranker

        ranker = meta.rebuild(rebuilt, SettingError)
        ranker.compress = bool(meta["compress"])
        ranker.pruning_summary = meta.get("pruning_summary")
        ranker.plan = kind_plan(ranker.collection.task, ranker.config)
        ranker.model = ranker._build(ranker.collection)
        if ranker.model.engineered_features:
            _check_engineered_columns(meta)
        # a truncated file, or the weights of another network: torch raises RuntimeError, EOFError or
        # pickle's errors here
        state = meta.weights(model_path, "torch", lambda: torch.load(model_path, map_location="cpu",
                                                                     weights_only=True), Exception)
        meta.weights(model_path, "torch", lambda: ranker.model.load_state_dict(state), Exception)
        ranker.model.eval()
        return ranker

    def summary(self) -> dict:
        """Facts for the runner's report: training outcome and pruning (its name and totals)."""
        out: dict = {"pruning": {"name": self.config.pruning, **(self.pruning_summary or {})},
                     "compress": self.compress, "training": self.training_mode}
        if self.result is not None:
            out.update(best_epoch=self.result.best_epoch, selection_score=self.result.best_score,
                       steps=self.result.steps, train_seconds=round(self.result.seconds, 3),
                       stopped=self.result.stopped, world_size=self.result.world_size,
                       train_graphs_this_rank=self.result.train_graphs)
            if self.result.gst is not None:
                out["gst"] = self.result.gst
        if self.selection is not None:
            out["selection"] = self.selection
        return out

    def set_device(self, device: str) -> None:
        """Predict on ``device`` from now on (after ``load``, which reads onto the CPU)."""
        self.device = torch_device(device)
        if self.model is not None:
            self.model.to(self.device)

    # -- helpers -------------------------------------------------------------------------------

    def _build(self, collection: Collection) -> LayoutRanker | TileRanker:
        """The network of the collection's task kind (``KindPlan.network``)."""
        return kind_plan(collection.task, self.config).network(self.config)

    def _load(self, source: SplitSource, options: FitOptions, split: str,
              world: distributed.World | None = None) -> list[LayoutExample | TileExample]:
        world = world or distributed.World()
        cached = options.cache_dir is not None and source.collection.task.cached
        pairs = (source.graphs(options.cache_dir) if not world.active
                 else _shard(source, options.cache_dir, world))
        graphs = progress(pairs, total=len(world.shard(len(source))), unit="graph", leave=False,
                          desc=f"loading {source.collection.name} {split}{' (cached)' if cached else ''}",
                          enabled=options.progress and world.main)
        transform = self.transform
        # Training and selection draw samples of a graph's configs: both get the capped examples.
        cap = self.config.layout_max_train_configs if self.config.engineered_features else None
        return [make_example(row_id, graph, transform=transform, compress=options.compress,
                             engineered=self.config.engineered_features, max_configs=cap)
                for row_id, graph in graphs]


def _shard(source: SplitSource, cache_dir: Path | None, world: distributed.World):
    """``SplitSource.graphs`` for this rank's files only (file i goes to rank i mod size).

    Only the shard's files are read, and only their caches built, so ranks sharing a cache folder
    never build the same cache at once.
    """
    entries = source.entries()
    task = source.collection.task
    for i in world.shard(len(entries)):
        collection, path = entries[i]
        row_id = collection.row_id(path.stem)
        if cache_dir is None or not task.cached:
            yield row_id, load_graph(path, task.name)
            continue
        cached = build_cache(path, split_cache_dir(cache_dir, collection, source.split) / path.stem)
        try:
            yield row_id, cached.layout_view()
        finally:
            cached.close()


class _Budget:
    """``FitOptions.time_budget_s`` shared by the trainings of one fit (cross-validation folds, then the
    final run), counted from when it is made; None: no budget."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds, self.started = seconds, time.perf_counter()

    def left(self) -> float | None:
        """What is left of it, at least a moment (a spent budget still lets a training take one step)."""
        if self.seconds is None:
            return None
        return max(1e-6, self.seconds - (time.perf_counter() - self.started))


def _selection_plan(valid_examples: list, task: Task) -> SelectionPlan:
    """``plan_selection`` over the labeled valid examples of every rank (the same plan on each)."""
    counts = [e.num_configs for e in valid_examples if e.runtime is not None]
    need = min_configs(task)
    informative, offered = (int(v)
                            for v in distributed.all_sum([sum(c >= need for c in counts), len(counts)]))
    return plan_selection([need] * informative + [0] * (offered - informative), task)


def engineered_columns() -> dict:
    """What a layout model with engineered features was trained on: the feature version and names."""
    return {"version": FEATURE_VERSION, "names": layout_feature_names()}


def _check_engineered_columns(meta: SavedMeta) -> None:
    """SavedModelError unless the model's engineered features are the ones this kit computes."""
    saved, now = meta.get("engineered_columns"), engineered_columns()
    if saved == now:
        return
    version = saved.get("version") if isinstance(saved, dict) else None
    columns = "the same columns" if isinstance(saved, dict) and saved.get("names") == now["names"] else \
        "other columns"
    raise meta.refusal(f"trained on engineered layout features of version {version!r} ({columns}); this "
                       f"kit computes version {now['version']}")


def _pruning_summary(examples: list) -> dict | None:
    """Total node and edge counts before and after pruning over the training graphs."""
    stats = [e.pruning for e in examples if e.pruning is not None]
    if not stats:
        return None
    before_n, after_n = sum(s.nodes_before for s in stats), sum(s.nodes_after for s in stats)
    before_m, after_m = sum(s.edges_before for s in stats), sum(s.edges_after for s in stats)
    return {
        "graphs": len(stats), "nodes_before": before_n, "nodes_after": after_n,
        "edges_before": before_m, "edges_after": after_m,
        "node_reduction": before_n / max(1, after_n), "edge_reduction": before_m / max(1, after_m),
    }
