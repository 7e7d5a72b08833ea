"""``GNNRanker``: the GNN as a ``RankingMethod`` (fit on one collection, predict, save, load)."""

from __future__ import annotations

import json
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
from competition.tasks import TILE_CONFIG_DIM, Task
from solutions import distributed, heuristic_blend
from solutions.features.engineered import FEATURE_VERSION, FEATURES, changes_since
from solutions.features.layout import layout_feature_names
from solutions.gnn.data import TILE_GEOMETRY_COLUMNS, LayoutExample, TileExample, make_example
from solutions.gnn.model import HEURISTIC_COLUMN, LayoutRanker, TileRanker
from solutions.gnn.settings import GNNConfig
from solutions.gnn.train import TrainResult, layout_selection_sample, predict_layout, predict_tile, train
from solutions.method import (
    FitOptions,
    SavedModelError,
    SplitSource,
    read_saved_json,
    unreadable_model_file,
    with_random_search,
)
from solutions.pruning import NO_PRUNING, GraphTransform, PruningNameError, parse_pruning
from solutions.selection import (
    CROSS_VALIDATION,
    SelectionPlan,
    cv_fold_of,
    min_configs,
    plan_selection,
    selection_examples,
)
from solutions.settings import SettingError, check_names

MODEL_FILE = "gnn.pt"
META_FILE = "gnn.json"
# 4: config also records the layout model's fusion and cross-config attention ("fusion",
# "config_layers", "config_attention") and whether tile models read the engineered tiling columns
# ("tile_geometry"); older models (still read) had none of these.
# 3 (still read): config also records the training mode ("training": "full" or "gst", and the GST settings).
# 2 (still read; trained full-graph): config["pruning"] records the pruning name. 1 (still read): only
# "prune" and the transform's long name, which was always OneHop's, since every version-1 kit pruned
# with OneHop.
FORMAT_VERSION = 4
# A model that blends in the heuristic's order (heuristic_blend) is written as version 5, which kits
# that would drop the weight refuse; every other model stays readable by them as version 4.
BLEND_FORMAT_VERSION = 5
READABLE_VERSIONS = (1, 2, 3, 4, 5)
BLEND_CONFIGS = 1024  # heuristic_blend: configs of each valid graph its weight is chosen on
# the model every version < 4 saved: early fusion, no attention, raw tile config features
BEFORE_VERSION_4 = {"fusion": "early", "config_attention": False, "tile_geometry": False}
# Settings added after a model format was fixed: a saved config without one was trained without it,
# whatever the default has become since.
ADDED_SETTINGS = {"engineered_features": False, "work_pooling": False}
LEGACY_PRUNING = {"one_hop": "onehop"}  # version 1's "pruning" field (transform.name) -> pruning name


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


def resolve_device(name: str) -> torch.device:
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
    """Message passing over the computation graph with a ranking loss (``solutions.gnn``).

    Arguments:
        config: a ``GNNConfig``; keyword arguments override single fields
            (``GNNRanker(layout_epochs=40, hidden=128)``), which is how ``tpugraphs solve --param``
            reaches them.

    ``fit`` prunes layout graphs with the ``pruning`` setting (``config.pruning``, default ``onehop``;
    ``--no-prune`` is ``pruning=none``), the one holder of the pruning, and uses ``options.compress`` (config
    deduplication, packed config storage, distinct (node, row) pairs computed once),
    ``options.device``, ``options.seed``, ``options.progress`` and ``options.time_budget_s``;
    ``predict`` preprocesses each graph the same way the training graphs were. ``save`` records the
    pruning the model was trained with and ``load`` rebuilds it, so a saved model predicts with its
    own pruning whatever the kit's default has become (or is refused, naming the file, when this kit
    does not know that pruning).

    With ``options.cache_dir``, layout train and valid graphs are read through the processed cache
    (``competition.data.processed_cache``, built once per file under
    ``cache_dir/<collection subpath>/<split>/<stem>`` and reused while fresh): the configs stay memory-mapped
    on disk and each step reads only those it samples, so fitting on 100k-config graphs does not hold their
    float32 tensors. The fit is the same as without the cache (same examples, same digits, same sampling).
    ``predict`` takes the same path when the runner hands it a cached graph (a ``CachedLayoutGraph``, in runs
    with a cache folder).

    ``config.training="gst"`` trains layout models with Graph Segment Training (``solutions.gnn.gst``;
    its embedding tables go under ``options.cache_dir`` when set, in memory otherwise); prediction is
    the same full-graph pass either way. ``save`` records the training mode.

    In a torch.distributed run (``torchrun``, ``solutions.distributed``) ``fit`` loads only this
    rank's shard of the train and valid graphs, says how many on stdout, and trains data-parallel.
    """

    name = "gnn"
    settings_class = GNNConfig  # the schema of --param (solutions.settings)

    @classmethod
    def param_table(cls) -> tuple[list, str]:
        """The settings ``--param`` accepts, for ``tpugraphs solve --list-params``."""
        from solutions.gnn.settings import COLLECTION_DEFAULTS
        from solutions.params import describe

        differ = [f"{name}: " + ", ".join(f"{k}={v!r}" for k, v in values.items())
                  for name, values in COLLECTION_DEFAULTS.items() if values]
        note = ("collections that start from other defaults (a --param still wins):\n  " + "\n  ".join(differ)
                if differ else "")
        return describe(GNNConfig), note

    def __init__(self, config: GNNConfig | None = None, **params: object) -> None:
        check_names(GNNConfig, params, self.name)  # SettingError naming the closest setting
        # each value checked by the schema (SettingError)
        self.config = replace(config or GNNConfig(), **params)
        # Without a whole config, fit starts from the collection's defaults (COLLECTION_DEFAULTS) with
        # these settings on top; a config given whole is used as it is.
        self.overrides: dict | None = dict(params) if config is None else None
        self.model: LayoutRanker | TileRanker | None = None
        self.collection: Collection | None = None
        self.compress = True
        self.device = torch.device("cpu")
        self.result: TrainResult | None = None
        self.pruning_summary: dict | None = None
        self.selection: dict | None = None  # how the epoch was chosen (SelectionPlan.to_json, + cv figures)
        self.trained_on: list[str] = []  # the collections whose train graphs the model learned from
        # heuristic_blend: the weight of the heuristic's order in the ranking (0: the network's own), and
        # each weight's mean validation score (None: not chosen)
        self.blend_weight = 0.0
        self.blend_scores: dict[float, float] | None = None

    @classmethod
    def settings_for(cls, collection_name: str, params: dict) -> GNNConfig:
        """The settings ``fit`` will use on a collection with these ``--param`` values (checked now)."""
        check_names(GNNConfig, params, cls.name)
        return GNNConfig.for_collection(collection_name, **params)

    @property
    def transform(self) -> GraphTransform | None:
        """The pruning transform of layout graphs (None: no pruning), read from ``config.pruning``."""
        return parse_pruning(self.config.pruning)

    @property
    def training_mode(self) -> str:
        """``full`` or ``gst``: segment training needs configs per node (tile models train full-graph)."""
        per_graph = self.collection is not None and not self.collection.task.config_per_node
        return "full" if per_graph else self.config.training

    # -- RankingMethod -------------------------------------------------------------------------

    def fit(self, collection: Collection, train_split: SplitSource, valid: SplitSource,
            options: FitOptions) -> None:
        if self.overrides is not None:
            self.config = GNNConfig.for_collection(collection.name, **self.overrides)
        self.collection, self.compress = collection, options.compress
        self.device = resolve_device(options.device)
        world = distributed.current()
        if self.config.learn_from_random_search:
            train_split = with_random_search(train_split)
        self.trained_on = train_split.collection_names
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
            if self.config.heuristic_blend and isinstance(self.model, LayoutRanker):
                self._choose_blend(collection, valid_examples, options.seed)

    def _choose_blend(self, collection: Collection, examples: list, seed: int) -> None:
        """``heuristic_blend``: the weight whose blend of the network's order and the heuristic's scores
        the valid graphs (every process's; ``BLEND_CONFIGS`` configs of each at most) best."""
        rng = np.random.default_rng([seed, 11])  # a fixed sample, apart from the one selection drew
        sampled = [layout_selection_sample(e, BLEND_CONFIGS, rng)
                   for e in selection_examples(examples, collection.task)]
        batch, dedup = self.config.predict_batch_nodes, self.compress
        graphs = [(predict_layout(self.model, e, device=self.device, batch_nodes=batch, dedup_rows=dedup),
                   e.engineered[:, HEURISTIC_COLUMN].numpy(), e.runtime.numpy()) for e in sampled]
        *totals, count = distributed.all_sum([*heuristic_blend.score_sums(collection.task, graphs),
                                              float(len(graphs))])
        self.blend_weight, means = heuristic_blend.best_weight(totals, count)
        self.blend_scores = means or None  # None: no valid graph to choose on, the network's own order

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
            result = train(self._build(collection).to(self.device), kept, held, self.config,
                           seed=options.seed, device=self.device, dedup_rows=options.compress, progress=False,
                           time_budget_s=budget.left(), description=f"gnn {collection.name} fold {k}")
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
        if self.model is None:
            raise RuntimeError("GNNRanker.predict called before fit or load")
        if self.collection is not None and collection.task != self.collection.task:
            raise ValueError(f"this model was trained on {self.collection.name}; it cannot rank "
                             f"{collection.name} graphs")
        with _torch_threads(self.config.num_threads):
            transform = self.transform
            example = make_example("", graph, prune=transform is not None, compress=self.compress,
                                   transform=transform, tile_geometry=self.config.tile_geometry,
                                   find_tied=self.config.tied_links,
                                   engineered=self.config.engineered_features,
                                   node_work=self.config.work_pooling)
            if isinstance(example, TileExample):
                scores = predict_tile(self.model, example, device=self.device)
            else:
                scores = predict_layout(self.model, example, device=self.device,
                                        batch_nodes=self.config.predict_batch_nodes, dedup_rows=self.compress)
                if self.blend_weight:
                    scores = heuristic_blend.blend(scores, example.engineered[:, HEURISTIC_COLUMN].numpy(),
                                                   self.blend_weight)
        return example.expand(scores)

    def save(self, path: Path) -> None:
        """Write ``gnn.pt`` (weights) and ``gnn.json`` (settings, collection, training history) into ``path``.

        ``config.pruning`` in ``gnn.json`` is the pruning the model was trained with (``none`` after
        ``--no-prune``); ``pruning`` is that transform's full name, for readers (None for tile models).
        ``config`` holds every setting as the schema checked it (``solutions.gnn.settings``); ``load``
        checks it again, so a hand-edited file is refused naming the setting.
        """
        if self.model is None or self.collection is None:
            raise RuntimeError("GNNRanker.save called before fit")
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        torch.save({k: v.detach().cpu() for k, v in self.model.state_dict().items()}, path / MODEL_FILE)
        meta = {
            "format_version": BLEND_FORMAT_VERSION if self.blend_weight else FORMAT_VERSION,
            "method": self.name,
            "collection": self.collection.name,
            "prune": self.transform is not None,
            "pruning": self.transform.name
            if self.transform is not None and self.collection.task.config_per_node else None,
            "compress": self.compress,
            "config": self.config.to_dict(),
            "training": None if self.result is None else {
                "best_epoch": self.result.best_epoch, "best_valid": self.result.best_score,
                "steps": self.result.steps, "seconds": round(self.result.seconds, 3),
                "stopped": self.result.stopped, "history": self.result.history,
                "mode": self.training_mode, "world_size": self.result.world_size, "gst": self.result.gst,
            },
            "pruning_summary": self.pruning_summary,
            "heuristic_blend": self._blend_facts(),
        }
        if isinstance(self.model, LayoutRanker) and self.model.engineered is not None:
            meta["engineered_columns"] = engineered_columns()
        (path / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> GNNRanker:
        """Read what ``save`` wrote; predicts on the CPU (``set_device`` to move it).

        The model predicts with the pruning it was trained with, read from the file (never the current
        default). ``SavedModelError`` (naming the file) for a format version or a pruning name this
        kit does not know.
        """
        path = Path(path)
        meta_path, model_path = path / META_FILE, path / MODEL_FILE
        if not meta_path.is_file() or not model_path.is_file():
            raise FileNotFoundError(f"{path}: no saved gnn model here (expected {META_FILE} and "
                                    f"{MODEL_FILE})")
        meta = read_saved_json(meta_path)
        if meta.get("format_version") not in READABLE_VERSIONS:
            raise SavedModelError(f"{meta_path}: format version {meta.get('format_version')!r}; "
                                  f"this kit reads {', '.join(map(str, READABLE_VERSIONS))}")
        config = {**ADDED_SETTINGS, **meta["config"]}
        config["pruning"] = _saved_pruning(meta, meta_path)
        if meta["format_version"] < 4:  # whatever today's defaults, these models had no fusion choice
            config.update(BEFORE_VERSION_4)
        try:
            ranker = cls(GNNConfig(**config))
        except (SettingError, TypeError) as exc:  # a hand-edited or foreign file
            raise SavedModelError(f"{meta_path}: {exc}; retrain the model") from None
        ranker.collection = get_collection(meta["collection"])
        ranker.compress = bool(meta["compress"])
        ranker.pruning_summary = meta.get("pruning_summary")
        ranker.model = ranker._build(ranker.collection)
        if isinstance(ranker.model, LayoutRanker) and ranker.model.engineered is not None:
            _check_engineered_columns(meta.get("engineered_columns"), meta_path)
        ranker.blend_weight = _saved_blend_weight(meta, meta_path)
        try:  # a truncated file, or the weights of another network
            ranker.model.load_state_dict(torch.load(model_path, map_location="cpu", weights_only=True))
        except Exception as exc:  # torch raises RuntimeError, EOFError or pickle's errors here
            raise unreadable_model_file(model_path, "torch", exc) from None
        ranker.model.eval()
        return ranker

    def summary(self) -> dict:
        """Facts for the runner's report: training outcome and pruning totals."""
        out: dict = {"prune": self.transform is not None, "pruning_name": self.config.pruning,
                     "compress": self.compress, "pruning": self.pruning_summary,
                     "training": self.training_mode, "trained_on": self.trained_on}
        if self.result is not None:
            out.update(best_epoch=self.result.best_epoch, selection_score=self.result.best_score,
                       steps=self.result.steps, train_seconds=round(self.result.seconds, 3),
                       stopped=self.result.stopped, world_size=self.result.world_size,
                       train_graphs_this_rank=self.result.train_graphs)
            if self.result.gst is not None:
                out["gst"] = self.result.gst
        if self.selection is not None:
            out["selection"] = self.selection
        if self.config.heuristic_blend and isinstance(self.model, LayoutRanker):
            out["heuristic_blend"] = self._blend_facts()
        return out

    def _blend_facts(self) -> dict:
        """The heuristic's weight in the ranking, and each weight's validation score (None: not chosen)."""
        return {"weight": self.blend_weight,
                "valid_scores": None if self.blend_scores is None
                else {str(w): round(score, 6) for w, score in self.blend_scores.items()}}

    def set_device(self, device: str) -> None:
        """Predict on ``device`` from now on (after ``load``, which reads onto the CPU)."""
        self.device = resolve_device(device)
        if self.model is not None:
            self.model.to(self.device)

    # -- helpers -------------------------------------------------------------------------------

    def _build(self, collection: Collection) -> LayoutRanker | TileRanker:
        """The network of the collection's task kind (a table: a kind without one is refused)."""
        builders = {"tile": self._tile_network, "layout": self._layout_network}
        if collection.task.name not in builders:
            raise ValueError(f"{collection.name}: the gnn has no network for {collection.task.name} graphs; "
                             f"it models {', '.join(builders)}")
        return builders[collection.task.name]()

    def _tile_network(self) -> TileRanker:
        config_dim = TILE_CONFIG_DIM + (TILE_GEOMETRY_COLUMNS if self.config.tile_geometry else 0)
        return TileRanker.from_settings(self.config, config_dim)

    def _layout_network(self) -> LayoutRanker:
        return LayoutRanker.from_settings(self.config)

    def _load(self, source: SplitSource, options: FitOptions, split: str,
              world: distributed.World | None = None) -> list[LayoutExample | TileExample]:
        world = world or distributed.World()
        cached = options.cache_dir is not None and source.collection.task.config_per_node
        pairs = (source.graphs(options.cache_dir) if not world.active
                 else _shard(source, options.cache_dir, world))
        graphs = progress(pairs, total=len(world.shard(len(source))), unit="graph", leave=False,
                          desc=f"loading {source.collection.name} {split}{' (cached)' if cached else ''}",
                          enabled=options.progress and world.main)
        transform = self.transform
        # Training and selection draw samples of a graph's configs: both get the capped examples.
        return [make_example(row_id, graph, prune=transform is not None, compress=options.compress,
                             transform=transform, tile_geometry=self.config.tile_geometry,
                             find_tied=self.config.tied_links, engineered=self.config.engineered_features,
                             node_work=self.config.work_pooling,
                             max_configs=self.config.max_train_configs if self.config.engineered_features
                             else None)
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
        if cache_dir is None or not task.config_per_node:
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


def _check_engineered_columns(saved: dict | None, meta_path: Path) -> None:
    """SavedModelError unless the model's engineered features are the ones this kit computes."""
    now = engineered_columns()
    same_names = isinstance(saved, dict) and saved.get("names") == now["names"]
    if same_names and FEATURES.computes_the_same("layout", saved.get("version")):
        return
    if not isinstance(saved, dict):
        raise SavedModelError(f"{meta_path}: the model reads engineered layout features but the file does "
                              f"not record which; retrain the model")
    names = list(saved.get("names") or [])
    if same_names:  # the same columns, one of them computed differently since: say which
        differs = changes_since("layout", saved.get("version")) or "the same columns"
    else:
        differs = next((f"column {i}: {a!r} saved, {b!r} now" for i, (a, b) in
                        enumerate(zip(names, now["names"], strict=False)) if a != b),
                       f"{len(names)} columns saved, {len(now['names'])} now")
    raise SavedModelError(f"{meta_path}: trained on engineered layout features (version "
                          f"{saved.get('version')!r}) that this kit computes differently (version "
                          f"{now['version']}; {differs}); retrain the model")


def _saved_blend_weight(meta: dict, meta_path: Path) -> float:
    """The heuristic's weight in a saved model's ranking (0 before format 5 and without the setting);
    SavedModelError for a weight that is not a non-negative number."""
    facts = meta.get("heuristic_blend") or {}
    weight = facts.get("weight", 0.0) if isinstance(facts, dict) else None
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight < float("inf"):
        raise SavedModelError(f"{meta_path}: heuristic_blend.weight is {weight!r}, not a non-negative number "
                              "(the heuristic's weight in the ranking); write the model again")
    return float(weight)


def _saved_pruning(meta: dict, meta_path: Path) -> str:
    """The pruning name a saved model was trained with; SavedModelError when this kit cannot rebuild it."""
    if meta["format_version"] == 1:  # before pruning was a setting: "prune" and the transform's long name
        if not meta.get("prune"):
            return NO_PRUNING
        saved = meta.get("pruning")
        name = "onehop" if saved is None else LEGACY_PRUNING.get(saved, saved)  # None: a tile model
    else:
        name = meta["config"].get("pruning")
        if name is None:
            raise SavedModelError(f"{meta_path}: no pruning recorded (config.pruning is missing); "
                                  "retrain the model")
    try:
        parse_pruning(name)
    except PruningNameError as exc:
        raise SavedModelError(
            f"{meta_path}: the model was trained with pruning {name!r}, which this kit cannot rebuild "
            f"({str(exc).removeprefix(f'pruning {name!r}: ')}); retrain it, or predict with the kit that "
            f"trained it") from None
    return name


def _pruning_summary(examples: list) -> dict | None:
    """Total node and edge counts before and after pruning over the training graphs."""
    stats = [e.pruning for e in examples if isinstance(e, LayoutExample) and e.pruning is not None]
    if not stats:
        return None
    before_n, after_n = sum(s.nodes_before for s in stats), sum(s.nodes_after for s in stats)
    before_m, after_m = sum(s.edges_before for s in stats), sum(s.edges_after for s in stats)
    return {
        "graphs": len(stats), "nodes_before": before_n, "nodes_after": after_n,
        "edges_before": before_m, "edges_after": after_m,
        "node_reduction": before_n / max(1, after_n), "edge_reduction": before_m / max(1, after_m),
    }
