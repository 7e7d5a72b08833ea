"""The gradient-boosted ranker: LightGBM ``lambdarank`` per collection on engineered features.

One model per collection; the graphs of a collection are the queries, their configs the documents.

- **Rows**: the graph's distinct configs (``options.compress``: duplicates merged with the ``min``
  runtime policy of ``solutions.dedup``), at most ``max_configs_per_graph`` of them drawn at
  random per graph (seeded from ``options.seed``), featurized by
  ``solutions.features.engineered.config_features``.
- **Queries**: a tile graph is one query. A layout graph's drawn configs are shuffled and cut into
  queries of ``query_size`` (64): lambdarank without truncation costs O(group size^2) per round, and
  random groups of 64 are an unbiased sample of the graph's pairs at 1/16 of the cost of groups of
  1000 (the winners also trained on 32-128 configs per graph at a time).
- **Labels**: lambdarank wants integer relevance, so each config's runtime rank within its graph is
  cut into ``label_levels`` (30) equal-count buckets, fastest = highest. Tile ranks the metric's
  ``runtime / normalizer``.
- **Objective**: ``lambdarank``: pairwise logistic gradients weighted by how much swapping the pair
  changes NDCG. Tile: NDCG at 5 with exponential gains (the metric only sees the top 5). Layout: every
  pair counts for Kendall tau, so gains are linear in the label (``label_gain = 0, 1, 2, ...``) and
  lambdas are not truncated. Compared by 4-fold cross-validation over the train+valid graphs of the
  small embedded competition, ``rank_xendcg`` and pointwise regression on the within-graph rank
  percentile scored the same within noise (+-0.01 tau) on the layout collections, xendcg a little
  lower on layout:xla:default (0.245 vs 0.269); lambdarank is kept as the ranking loss the winners
  found best (docs/competition.md, What the winners did). ``objective`` switches between them and
  ``pairwise`` (``solutions.gbdt.pairwise``, a LightGBM custom objective): RankNet's logistic loss over
  every pair of a query's configs with differing runtimes, each pair weighed the same, as Kendall tau
  counts them (lambdarank weighs pairs by their NDCG change instead); labels are the exact
  within-graph rank percentile, queries as above (``query_size=none``: a graph's drawn configs are one
  query, all their pairs scored; more than ``pairwise_max_pairs`` pairs are sampled each round).
  Model selection is unchanged (the official metric through ``feval``). BENCHMARKS.md has its effect.
- **Model selection** on the valid split with the official metric (``competition.metrics``: tile
  slowdown of the top 5, Kendall tau of the full ordering, averaged over graphs), computed every
  round from LightGBM's running valid scores (``feval``) on features made exactly as ``predict``
  makes them. The best round is chosen among rounds >= ``min_boost_round`` (100), and training
  stops ``early_stopping_rounds`` (50) after it: the valid splits are small (8 layout graphs, one
  of them with 2 configs), and plain early stopping picked rounds 2..27 on the default collections
  where cross-validation kept improving up to round 300 (see ``_best_round``). Valid graphs with
  more than ``max_valid_configs_per_graph`` configs are subsampled (the score is then an estimate).
  Only informative valid graphs choose the round (``solutions.selection``): a tile kernel with
  fewer than 6 configs scores 1.0 whatever the model, so it is left out; when fewer than 5
  informative tile kernels remain, the round count is chosen by 4-fold cross-validation over the train
  graphs (mean official score per round over the held-out folds) and the model is refitted on all
  of them. ``summary()["selection"]`` records which, and ``tpugraphs solve`` prints it.
- **Options measured, off by default**: ``collapse_tied_nodes`` (one representative per tied
  layout group, ``solutions.features.layout_geometry.tied_groups``) and ``winner_features`` (the 11th place's features,
  ``solutions.features.layout.WINNER_FEATURE_NAMES``); BENCHMARKS.md has their effect on the small competition.
- **Deterministic**: ``deterministic=True``, ``num_threads`` fixed (2), every seed derived from
  ``options.seed``: the same data and seed give the same model and predictions.
- ``options.time_budget_s`` ends training early (keeping the best round so far). It prunes nothing
  (features read the whole graph once; nothing scales with its size per round).
- ``options.cache_dir``: layout train and valid graphs are read through the processed cache
  (``SplitSource.graphs``), and so are the graphs ``predict`` gets from the runner: deduplication
  keys and features read the memory-mapped int8 configs a chunk at a time, so a 100k-config graph
  costs its (c, nc) int64 row codes and (c, F) features, never its 872 MB float32 tensor. The model
  is the same with and without the cache.

``predict`` returns minus the model's score (LightGBM ranks high = relevant; the kit wants
lower = faster), computed once per distinct config and scattered back to duplicates.
``save(path)`` writes ``path/model.txt`` (LightGBM's text format, cut at the best round) and
``path/settings.json`` (feature settings, training settings and feature names, checked on ``load``).

lightgbm is imported only when a model is trained or loaded, so ``solutions.features.engineered`` (used by
the heuristic) stays importable without it.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from competition.collections import Collection
from competition.data.compact import pack_layout_vector_codes
from competition.data.graphs import Graph
from competition.tasks import Task, get_task
from solutions.dedup import deduplicate_configs
from solutions.features.engineered import FeatureSettings, config_features, feature_names
from solutions.method import FitOptions, SavedModelError, SplitSource
from solutions.selection import CROSS_VALIDATION, cv_fold_of, informative_graphs, plan_selection
from solutions.settings import SettingError, check_names, check_settings, setting

logger = logging.getLogger(__name__)

MODEL_FILE = "model.txt"
SETTINGS_FILE = "settings.json"
MAX_QUERY_SIZE = 10_000  # LightGBM refuses ranking queries larger than this
OBJECTIVES = ("lambdarank", "rank_xendcg", "regression", "pairwise")
# Objectives trained on the within-graph rank percentile (every runtime difference kept) rather than
# on relevance buckets: pairwise needs each pair of differing runtimes to differ in label.
EXACT_ORDER_LABELS = ("regression", "pairwise")


@dataclass(frozen=True)
class GBDTSettings:
    """Training settings, each with its type, range, default and meaning (``solutions.settings``);
    ``for_task`` gives the defaults used by ``tpugraphs solve --method gbdt``."""

    objective: str = setting(
        "lambdarank", "lambdarank, rank_xendcg, regression (pointwise, on the within-graph rank) or pairwise "
        "(logistic loss over all pairs of a query, each pair of differing runtimes weighed the same: gbdt/pairwise.py)",
        choices=OBJECTIVES)
    label_levels: int = setting(30, "relevance buckets of the runtime rank (<= 31 with exponential gains)",
                                low=2, high=10_000)
    linear_gain: bool = setting(True, "label_gain = 0, 1, 2, ... (every pair counts) instead of 2**label - 1")
    ndcg_at: int | None = setting(None, "lambdarank truncation: top-k the lambdas focus on (none = whole group)", low=1)
    max_configs_per_graph: int = setting(1000, "configs drawn per training graph (after deduplication)", low=1)
    query_size: int | None = setting(64, "a graph's drawn configs are cut into random queries of this size "
                                     "(none: one query per graph)", low=1, high=MAX_QUERY_SIZE)
    max_valid_configs_per_graph: int = setting(4000, "configs scored per valid graph for early stopping", low=1)
    num_boost_round: int = setting(300, "boosting rounds at most", low=1)
    min_boost_round: int = setting(100, "the best round is chosen among rounds >= this (valid sets are small)", low=0)
    early_stopping_rounds: int = setting(50, "stop when the best round is this far behind (counted after the "
                                         "minimum)", low=1)
    learning_rate: float = setting(0.1, "shrinkage of each tree", low=0, low_open=True)
    num_leaves: int = setting(31, "leaves per tree", low=2, high=131_072)
    min_data_in_leaf: int = setting(20, "rows a leaf needs at least", low=0)
    feature_fraction: float = setting(0.8, "share of the features each tree may use", low=0, high=1, low_open=True)
    bagging_fraction: float = setting(0.8, "share of the rows each tree is fitted on", low=0, high=1, low_open=True)
    lambda_l2: float = setting(1.0, "L2 regularisation of leaf values", low=0)
    max_bin: int = setting(63, "histogram bins per feature", low=2)
    pairwise_max_pairs: int = setting(1_000_000, "objective=pairwise: a query with more pairs uses this many drawn "
                                      "at random", low=1)
    num_threads: int = setting(2, "LightGBM threads (fixed, so a seed gives the same model on any machine)", low=1)
    center_per_graph: bool = setting(True, "also give each config feature minus its graph's mean")
    collapse_tied_nodes: bool = setting(False, "layout: one representative per tied node group "
                                        "(features.layout_geometry.tied_groups)")
    winner_features: bool = setting(False, "layout: the 11th place's features (features.layout.WINNER_FEATURE_NAMES)")

    def __post_init__(self) -> None:
        check_settings(self)
        if not self.linear_gain and self.label_levels > 31:
            raise SettingError(f"setting label_levels={self.label_levels} with linear_gain=false: LightGBM allows at "
                               f"most 31 levels with exponential gains; lower label_levels or add linear_gain=true")

    @classmethod
    def for_task(cls, task: Task | str) -> GBDTSettings:
        top_k = (get_task(task) if isinstance(task, str) else task).top_k
        if top_k is not None:  # a metric of the top k listed (tile): NDCG at k
            return cls(label_levels=30, linear_gain=False, ndcg_at=top_k, max_configs_per_graph=1000,
                       query_size=None)
        return cls()

    def lightgbm_params(self, seed: int, max_group: int) -> dict[str, Any]:
        params: dict[str, Any] = {
            "objective": self.objective,
            "metric": "None",  # early stopping uses the official metric through feval
            "learning_rate": self.learning_rate,
            "num_leaves": self.num_leaves,
            "min_data_in_leaf": self.min_data_in_leaf,
            "feature_fraction": self.feature_fraction,
            "bagging_fraction": self.bagging_fraction,
            "bagging_freq": 1 if self.bagging_fraction < 1 else 0,
            "lambda_l2": self.lambda_l2,
            "max_bin": self.max_bin,
            "num_threads": self.num_threads,
            "deterministic": True,
            "force_row_wise": True,  # measured 1.7x faster than col-wise on these matrices
            "seed": seed,
            "verbosity": -1,
        }
        if self.objective == "pairwise":  # lightgbm >= 4 takes a callable objective in params
            from solutions.gbdt.pairwise import PairwiseObjective

            params["objective"] = PairwiseObjective(self.pairwise_max_pairs, seed)
        if self.objective == "lambdarank":
            params["lambdarank_truncation_level"] = self.ndcg_at or max(1, max_group)
            if self.linear_gain:
                params["label_gain"] = list(range(self.label_levels))
        return params


def relevance_labels(target: np.ndarray, levels: int) -> np.ndarray:
    """(n,) int32 relevance of each config within one graph: rank buckets, fastest = ``levels - 1``.

    Ties share the best rank of their group. A graph with fewer configs than ``levels`` uses one
    level per rank.

    >>> relevance_labels(np.array([30, 10, 20, 10]), 4).tolist()
    [0, 3, 1, 3]
    """
    n = target.shape[0]
    if n == 0:
        return np.zeros(0, np.int32)
    rank = np.searchsorted(np.sort(target), target, side="left")  # 0 = fastest; ties share the lowest
    buckets = min(levels, n)
    return ((n - 1 - rank) * buckets // n).astype(np.int32)


def within_graph_percentile(target: np.ndarray) -> np.ndarray:
    """(n,) float rank of each config in [0, 1], 1 = fastest (the pointwise regression target)."""
    n = target.shape[0]
    rank = np.searchsorted(np.sort(target), target, side="left")
    return 1.0 - rank / max(n - 1, 1)


@dataclass
class _Queries:
    """Feature rows of many graphs, graph-major, with what the metric needs per row."""

    features: list[np.ndarray] = field(default_factory=list)  # (c_g, F) float32 per graph
    labels: list[np.ndarray] = field(default_factory=list)  # (c_g,) relevance or regression target
    runtimes: list[np.ndarray] = field(default_factory=list)  # (c_g,) runtimes (tile: raw)
    normalizers: list[np.ndarray] = field(default_factory=list)  # (c_g,) tile normalizers (ones for layout)
    graphs: list[int] = field(default_factory=list)  # which graph of the split each query comes from

    def subset(self, keep: Iterable[int]) -> _Queries:
        """The queries numbered ``keep``, in that order."""
        keep = list(keep)
        return _Queries([self.features[i] for i in keep], [self.labels[i] for i in keep],
                        [self.runtimes[i] for i in keep], [self.normalizers[i] for i in keep],
                        [self.graphs[i] for i in keep])

    def __len__(self) -> int:
        return len(self.features)

    @property
    def sizes(self) -> np.ndarray:
        return np.array([f.shape[0] for f in self.features], dtype=np.int64)

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)


def _tile_target(graph: Graph) -> np.ndarray:
    return graph.ranking_target()  # tile: runtime / normalizer; layout: the runtime


def _config_keys(graph: Graph) -> np.ndarray:
    """What tells a graph's configs apart: tile (c, 24) features, layout (c, nc) int64 row codes.

    Layout codes are packed a chunk of configs at a time, so a memory-mapped cached graph is never
    read whole (the same groups as deduplicating the (c, nc, 18) tensor itself).
    """
    return pack_layout_vector_codes(graph.configs) if graph.task.config_per_node else graph.configs


class GBDTRanker:
    """LightGBM ranker on engineered features, one per collection (see the module docstring)."""

    name = "gbdt"
    settings_class = GBDTSettings  # the schema of --param (solutions.settings)
    learned = True

    @classmethod
    def param_table(cls) -> tuple[list, str]:
        """The settings ``--param`` accepts, for ``tpugraphs solve --list-params``."""
        from solutions.params import describe

        layout, tile = GBDTSettings.for_task("layout"), GBDTSettings.for_task("tile")
        differ = [f"{f.name}={getattr(tile, f.name)!r}" for f in fields(GBDTSettings)
                  if getattr(tile, f.name) != getattr(layout, f.name)]
        note = f"tile:xla starts from other defaults: {', '.join(differ)}" if differ else ""
        return describe(GBDTSettings, layout), note

    @classmethod
    def settings_for(cls, collection_name: str, params: dict) -> GBDTSettings:
        """The settings ``fit`` will use on a collection with these ``--param`` values (checked now)."""
        from competition.collections import get_collection

        check_names(GBDTSettings, params, cls.name)
        return replace(GBDTSettings.for_task(get_collection(collection_name).task.name), **params)

    def __init__(self, settings: GBDTSettings | None = None, **overrides: Any) -> None:
        """``settings``: all training settings (default: ``GBDTSettings.for_task`` of the collection fitted);
        ``overrides``: single settings changed on top of those, e.g. ``GBDTRanker(num_boost_round=500)``
        (what ``tpugraphs solve --method gbdt --param num_boost_round=500`` passes)."""
        check_names(GBDTSettings, overrides, self.name)  # SettingError naming the closest setting
        if settings is not None or overrides:  # check the values now, not after loading the data
            replace(settings or GBDTSettings(), **overrides)
        self.base_settings = settings  # None: the defaults of the task fitted (GBDTSettings.for_task)
        self.overrides = overrides
        self.settings: GBDTSettings | None = settings  # what the model was (or will be) trained with
        self.collection_name: str | None = None
        self.features: FeatureSettings | None = None
        self.booster = None  # lightgbm.Booster once fitted or loaded
        self.best_iteration: int | None = None
        self.history: dict[str, list[float]] = {}  # valid metric per boosting round
        self.selection: dict | None = None  # how the round was chosen (SelectionPlan.to_json, + cv figures)

    # ------------------------------------------------------------------------------------------
    # Training

    def fit(self, collection: Collection, train: SplitSource, valid: SplitSource, options: FitOptions) -> None:
        """Train on ``train``; stop early on the official metric of ``valid`` (when it has graphs)."""
        import_lightgbm()  # fail before reading any data when lightgbm is missing

        started = time.perf_counter()
        settings = replace(self.base_settings or GBDTSettings.for_task(collection.task.name), **self.overrides)
        self.settings = settings
        self.collection_name = collection.name
        self.features = FeatureSettings(task=collection.task.name, center_per_graph=settings.center_per_graph,
                                        collapse_tied_nodes=settings.collapse_tied_nodes,
                                        winner_features=settings.winner_features)
        rng = np.random.default_rng([int(options.seed) & 0xFFFFFFFF, 0x6BD7])
        train_rows = self._training_queries(
            _progress(train, options, f"{collection.name} train features"), rng, compress=options.compress
        )
        if not len(train_rows):
            raise ValueError(f"{collection.name}: the train split has no graph with a config to learn from")
        valid_rows = self._validation_queries(_progress(valid, options, f"{collection.name} valid features"), rng)
        logger.info("%s: %d train rows in %d queries, %d valid rows (features in %.1f s)", collection.name,
                    int(train_rows.sizes.sum()), len(train_rows), int(valid_rows.sizes.sum()),
                    time.perf_counter() - started)
        # Only graphs whose score depends on the model choose the round (solutions.selection).
        plan = plan_selection(valid_rows.sizes, collection.task)
        valid_rows = valid_rows.subset(np.flatnonzero(informative_graphs(valid_rows.sizes, collection.task)))
        self.selection = plan.to_json()
        self.history = {}
        rounds = settings.num_boost_round
        if plan.mode == CROSS_VALIDATION:
            rounds, folds = self._cross_validated_rounds(collection, train_rows, settings, options, started, rng)
            self.selection["cv_folds"] = folds
            self.selection["cv_best_round"] = rounds
            valid_rows = _Queries()  # the few informative valid graphs do not choose anything
        logger.info("%s: %s", collection.name, plan.note)
        self.booster = self._train(collection, train_rows, valid_rows, settings, options, started, rounds)
        curve = _valid_curve(self.history)
        self.best_iteration = _best_round(curve, settings.min_boost_round) if curve else self.booster.current_iteration()
        logger.info("%s: %d rounds kept, fitted in %.1f s", collection.name, self.best_iteration,
                    time.perf_counter() - started)

    def _train(self, collection: Collection, train_rows: _Queries, valid_rows: _Queries, settings: GBDTSettings,
               options: FitOptions, started: float, rounds: int, history: dict | None = None):
        """One LightGBM run on ``train_rows``, scored every round on ``valid_rows`` (when it has queries)
        into ``history`` (default ``self.history``) and stopped on its plateau."""
        lgb = import_lightgbm()
        history = self.history if history is None else history
        params = settings.lightgbm_params(seed=int(options.seed), max_group=int(train_rows.sizes.max()))
        ranking = settings.objective != "regression"
        dataset_params: dict[str, Any] = {"max_bin": settings.max_bin, "verbosity": -1}
        train_data = {"data": np.concatenate(train_rows.features), "label": np.concatenate(train_rows.labels),
                      "group": train_rows.sizes if ranking else None, "feature_name": feature_names(self.features),
                      "free_raw_data": True, "params": dataset_params}
        train_set = lgb.Dataset(**train_data)
        if settings.objective == "pairwise" and not _has_splittable_feature(train_set):
            # A custom objective makes LightGBM reset the booster's objective, and that reset fails a
            # check when every feature was pre-filtered as unsplittable (fewer rows than 2 *
            # min_data_in_leaf, e.g. a fold of the tiny competition). Kept, they are never split
            # either: the trees are single leaves, as the built-in objectives give on such data.
            dataset_params["feature_pre_filter"] = False
            train_set = lgb.Dataset(**train_data)
        del train_data
        callbacks = [lgb.record_evaluation(history)]
        if options.time_budget_s is not None:
            callbacks.append(_time_budget(started, options.time_budget_s))
        valid_sets, feval = [], None
        if len(valid_rows):
            valid_set = lgb.Dataset(
                np.concatenate(valid_rows.features), label=np.concatenate(valid_rows.labels),
                group=valid_rows.sizes if ranking else None, reference=train_set,
                params=dataset_params if "feature_pre_filter" in dataset_params else None,
            )
            valid_sets, feval = [valid_set], _official_metric(collection, valid_rows)
            callbacks.append(_plateau_stopping(history, settings.min_boost_round, settings.early_stopping_rounds))
        return lgb.train(
            params, train_set, num_boost_round=rounds, valid_sets=valid_sets,
            valid_names=["valid"] if valid_sets else None, feval=feval, callbacks=callbacks,
            keep_training_booster=True,  # every round stays available; best_iteration picks below
        )

    def _cross_validated_rounds(self, collection: Collection, train_rows: _Queries, settings: GBDTSettings,
                                options: FitOptions, started: float, rng: np.random.Generator) -> tuple[int, int]:
        """The round count with the best mean official score over ``CV_FOLDS`` folds of the train graphs
        (each fold trained on the others for every round, no early stopping), and the folds used."""
        graph_ids = np.unique(train_rows.graphs)
        fold_of_graph = dict(zip(graph_ids.tolist(), cv_fold_of(graph_ids.size, rng).tolist(), strict=True))
        fold = np.array([fold_of_graph[g] for g in train_rows.graphs])
        curves = []
        for k in np.unique(fold):
            held, kept = np.flatnonzero(fold == k), np.flatnonzero(fold != k)
            if not kept.size:
                continue
            no_stopping = replace(settings, early_stopping_rounds=settings.num_boost_round)
            history: dict = {}
            self._train(collection, train_rows.subset(kept), train_rows.subset(held), no_stopping, options,
                        started, settings.num_boost_round, history)
            curves.append(_valid_curve(history))
        if not curves:  # a single train graph: nothing to hold out
            return settings.num_boost_round, 0
        length = min(len(c) for c in curves)  # a time budget may have cut the later folds short
        mean_curve = np.mean([c[:length] for c in curves], axis=0).tolist()
        self.selection["cv_score"] = float(max(mean_curve[min(settings.min_boost_round, length) - 1:]))
        return _best_round(mean_curve, settings.min_boost_round), len(curves)

    def summary(self) -> dict:
        """Facts for the runner's report: the rounds kept and how they were chosen."""
        return {"best_iteration": self.best_iteration, "selection": self.selection}

    def _training_queries(self, graphs: Iterable[tuple[str, Graph]], rng: np.random.Generator, *, compress: bool) -> _Queries:
        settings = self.settings
        cap = min(settings.max_configs_per_graph, MAX_QUERY_SIZE)
        rows = _Queries()
        for graph_number, (_, graph) in enumerate(graphs):
            target = _tile_target(graph)
            if compress:
                dedup = deduplicate_configs(_config_keys(graph), target, policy="min")
                configs, target = dedup.unique_index, dedup.runtime.astype(np.float64)
            else:
                configs = np.arange(graph.num_configs)
            if configs.shape[0] < 2:
                continue  # nothing to rank
            if configs.shape[0] > cap:
                keep = np.sort(rng.choice(configs.shape[0], size=cap, replace=False))
                configs, target = configs[keep], target[keep]
            features = config_features(graph, self.features, configs=configs)
            if settings.objective in EXACT_ORDER_LABELS:
                labels = within_graph_percentile(target)
            else:
                labels = relevance_labels(target, settings.label_levels)
            # Lambdarank costs O(group size^2) per round without truncation: random queries of
            # query_size configs give an unbiased sample of the graph's pairs at a fraction of the cost.
            order = rng.permutation(configs.shape[0]) if settings.query_size else np.arange(configs.shape[0])
            step = settings.query_size or configs.shape[0]
            for start in range(0, order.shape[0], step):
                part = order[start : start + step]
                if part.shape[0] < 2:
                    continue
                rows.features.append(features[part])
                rows.labels.append(labels[part])
                rows.runtimes.append(target[part])
                rows.normalizers.append(np.ones(part.shape[0]))
                rows.graphs.append(graph_number)
        return rows

    def _validation_queries(self, graphs: Iterable[tuple[str, Graph]], rng: np.random.Generator) -> _Queries:
        """Valid graphs featurized exactly as ``predict`` does, with every config's own runtime (the
        official metric sees duplicates too)."""
        cap = min(self.settings.max_valid_configs_per_graph, MAX_QUERY_SIZE)
        rows = _Queries()
        for graph_number, (_, graph) in enumerate(graphs):
            if graph.num_configs == 0:
                continue
            configs = np.arange(graph.num_configs)
            if configs.shape[0] > cap:
                configs = np.sort(rng.choice(configs.shape[0], size=cap, replace=False))
            runtime = graph.config_runtime[configs]
            if not (runtime > 0).all():
                raise ValueError("valid graphs must carry measured runtimes (test files have all-zero runtimes)")
            rows.features.append(self._prediction_features(graph)[configs])
            target = _tile_target(graph)[configs]
            rows.labels.append(within_graph_percentile(target) if self.settings.objective in EXACT_ORDER_LABELS
                               else relevance_labels(target, self.settings.label_levels))
            rows.runtimes.append(runtime)
            rows.normalizers.append(np.ones_like(runtime) if graph.normalizers is None
                                    else graph.normalizers[configs])
            rows.graphs.append(graph_number)
        return rows

    # ------------------------------------------------------------------------------------------
    # Prediction

    def predict(self, collection: Collection, graph: Graph) -> np.ndarray:
        """(c,) float64 predicted runtime-like scores, lower = faster."""
        if self.booster is None or self.features is None:
            raise RuntimeError("GBDTRanker.predict called before fit or load")
        if collection.name != self.collection_name:
            raise ValueError(f"this model was trained on {self.collection_name}, not {collection.name}")
        if graph.num_configs == 0:
            return np.zeros(0)
        dedup = deduplicate_configs(_config_keys(graph))
        features = config_features(graph, self.features, configs=dedup.unique_index)
        score = self.booster.predict(features, num_iteration=self.best_iteration,
                                     num_threads=self.settings.num_threads)
        return -dedup.expand(np.asarray(score, dtype=np.float64))

    def _prediction_features(self, graph: Graph) -> np.ndarray:
        """(c, F) the features ``predict`` scores: computed per distinct config (so the per-graph
        centring is over distinct configs, as in training), then given to every duplicate."""
        dedup = deduplicate_configs(_config_keys(graph))
        return dedup.expand(config_features(graph, self.features, configs=dedup.unique_index))

    # ------------------------------------------------------------------------------------------
    # Persistence

    def save(self, path: Path) -> None:
        """Write ``path/model.txt`` and ``path/settings.json`` (``path`` is a directory, created if needed)."""
        if self.booster is None:
            raise RuntimeError("GBDTRanker.save called before fit")
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.booster.save_model(str(path / MODEL_FILE), num_iteration=self.best_iteration)
        meta = {
            "method": self.name,
            "collection": self.collection_name,
            "best_iteration": self.best_iteration,
            "features": self.features.to_json(),
            "feature_names": feature_names(self.features),
            "settings": asdict(self.settings),
        }
        (path / SETTINGS_FILE).write_text(json.dumps(meta, indent=2) + "\n")

    @classmethod
    def load(cls, path: Path) -> GBDTRanker:
        """Read a model written by ``save``; refuses one whose features this code computes differently."""
        lgb = import_lightgbm()

        path = Path(path)
        meta = json.loads((path / SETTINGS_FILE).read_text())
        features = FeatureSettings.from_json(meta["features"])
        if meta["feature_names"] != feature_names(features):
            raise ValueError(f"{path / SETTINGS_FILE}: the saved feature names differ from this code's; retrain")
        try:
            ranker = cls(settings=replace(GBDTSettings(), **meta["settings"]))
        except (SettingError, TypeError) as exc:  # a hand-edited or foreign file
            raise SavedModelError(f"{path / SETTINGS_FILE}: {exc}; retrain the model") from None
        ranker.collection_name = meta["collection"]
        ranker.features = features
        ranker.booster = lgb.Booster(model_file=str(path / MODEL_FILE))
        ranker.best_iteration = ranker.booster.current_iteration()  # saved truncated at the best round
        return ranker


# ----------------------------------------------------------------------------------------------
# Helpers


def import_lightgbm():
    """Import lightgbm with OpenMP threads that sleep while they wait (unless the user chose otherwise).

    LightGBM's OpenMP threads spin by default. On a machine whose cores are busy with other work (the
    demo trains a GNN too; CI runners are shared) two spinning threads made a 100-round fit take 33 s
    instead of 0.6 s on the 2-core development machine; with ``OMP_WAIT_POLICY=PASSIVE`` it took 0.65 s.
    The variable is read when the OpenMP runtime starts, so it is set before the first import.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import lightgbm

    return lightgbm



def _progress(source: SplitSource, options: FitOptions, description: str) -> Iterable[tuple[str, Graph]]:
    """The split's graphs (through the processed cache when ``options.cache_dir`` is set), with a bar."""
    from competition.progress import progress

    return progress(source.graphs(options.cache_dir), total=len(source), desc=description, unit="graph",
                    leave=False, enabled=options.progress)


def _official_metric(collection: Collection, rows: _Queries):
    """A LightGBM ``feval`` giving the mean official score of the valid graphs (higher = better).

    Each graph's row is written by the task's own ``row_from_predictions`` (the same function every
    submission goes through) and scored by the task's batch metric, so early stopping optimises
    exactly the number ``tpugraphs score`` prints.
    """
    task = collection.task
    offsets = rows.offsets
    runtimes = np.concatenate(rows.runtimes)
    normalizers = np.concatenate(rows.normalizers) if task.has_normalizers else None
    labels = task.prepare_labels(runtimes, normalizers, offsets)
    bounds = list(zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True))

    def feval(preds: np.ndarray, _data) -> tuple[str, float, bool]:
        # LightGBM scores higher = faster; a row ranks lower predicted runtime first.
        ranked = [task.row_from_predictions(-preds[start:end]) for start, end in bounds]
        return collection.metric, float(task.score_graphs(ranked, labels).mean()), True

    return feval


def _valid_curve(history: dict[str, dict[str, list[float]]]) -> list[float]:
    """The official valid score after each round so far (empty without a valid set)."""
    return next(iter(history.get("valid", {}).values()), [])


def _best_round(curve: list[float], min_rounds: int) -> int:
    """1-based round with the best score among rounds >= ``min_rounds`` (first of equals).

    Valid sets are small (7 to 20 layout graphs, one of them may hold 2 configs and swing a mean
    tau by 0.1), so an early peak is more likely noise than a better model: on 4-fold
    cross-validation over train+valid of the small embedded competition the official score still
    rose from round 100 to 300 on every collection, while early stopping on the valid split alone
    picked rounds 2..27 on the two default collections.
    """
    start = min(max(min_rounds, 1), len(curve)) - 1
    return start + int(np.argmax(curve[start:])) + 1


def _has_splittable_feature(train_set) -> bool:
    """Whether LightGBM kept any feature of ``train_set`` (constructed here); unused ones have 0 bins."""
    train_set.construct()
    return any(train_set.feature_num_bin(i) > 0 for i in range(train_set.num_feature()))


def _plateau_stopping(history: dict, min_rounds: int, patience: int):
    """A callback ending training once the best round (>= ``min_rounds``) is ``patience`` rounds old."""
    lgb = import_lightgbm()

    def callback(env) -> None:
        curve = _valid_curve(history)
        if len(curve) < max(min_rounds, 1):
            return
        best = _best_round(curve, min_rounds)
        if len(curve) - best >= patience:
            raise lgb.callback.EarlyStopException(best - 1, env.evaluation_result_list or [])

    callback.order = 30  # after record_evaluation (20) has stored this round's score
    return callback


def _time_budget(started: float, budget_s: float):
    """A callback that ends training once ``budget_s`` has passed (``fit`` then keeps the best round)."""
    lgb = import_lightgbm()

    def callback(env) -> None:
        if time.perf_counter() - started > budget_s:
            raise lgb.callback.EarlyStopException(env.iteration, env.evaluation_result_list or [])

    callback.order = 40
    return callback
