"""The gradient-boosted ranker (``GBDTRanker``): LightGBM ``lambdarank`` per collection on engineered
features; the graphs of a collection are the queries, their configs the documents.

``fit`` builds the queries (``solutions.methods.gbdt.queries``), trains with the settings of
``solutions.methods.gbdt.settings`` and keeps the round the official metric of the valid split (or
cross-validation over the train graphs) chooses (``solutions.methods.gbdt.boosting``). With
``heuristic_prior`` every config starts from minus k times its z-scored heuristic estimate (LightGBM's
``init_score``) and the trees learn what to change in that order. ``predict`` returns minus the model's
score, that starting score included (LightGBM ranks high = relevant; the kit wants lower = faster),
computed once per distinct config and scattered back to duplicates. ``save(path)`` writes ``path/model.txt``
(LightGBM's text format, cut at the best round) and ``path/settings.json`` (feature settings,
training settings and feature names, checked on ``load``).

How it trains and why: docs/gbdt.md; what each choice measured: BENCHMARKS.md. lightgbm is imported
only when a model is trained or loaded, so ``solutions.features`` (used by the heuristic) stays
importable without it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from competition.collections import Collection
from competition.data.graphs import Graph
from solutions.kinds.features import FeatureSettings, feature_names
from solutions.methods.base import FitOptions, SplitSource
from solutions.methods.gbdt.boosting import (
    best_round,
    has_splittable_feature,
    import_lightgbm,
    official_metric,
    plateau_stopping,
    reporting,
    time_budget,
    valid_curve,
)
from solutions.methods.gbdt.queries import (
    Queries,
    distinct_config_features,
    training_queries,
    validation_queries,
)
from solutions.methods.gbdt.settings import SETTINGS, GBDTSettings
from solutions.methods.selection import CROSS_VALIDATION, cv_fold_of, informative_graphs, plan_selection
from solutions.settings.schema import SettingError, check_names
from solutions.store.saved import ModelFile

logger = logging.getLogger(__name__)

MODEL_FILE = "model.txt"
SETTINGS_FILE = "settings.json"
# The one saved-model format this kit reads and writes (settings.json: the resolved settings, the feature
# settings and names, the collection; model.txt: LightGBM's text format). Any other is refused, naming
# the command that retrains it.
FORMAT_VERSION = 2
SAVED = ModelFile("gbdt", SETTINGS_FILE, FORMAT_VERSION)


class GBDTRanker:
    """LightGBM ranker on engineered features, one per collection (see the module docstring)."""

    name = "gbdt"
    learned = True

    def __init__(self, settings: GBDTSettings | None = None, **overrides: Any) -> None:
        """``settings`` (the class defaults when None) with ``overrides`` on top, e.g.
        ``GBDTRanker(num_boost_round=500)``, each checked now (``SettingError`` naming the closest
        setting); ``for_collection`` starts from a collection's defaults instead, as ``tpugraphs solve``
        does."""
        check_names(GBDTSettings, overrides, self.name)
        self.settings: GBDTSettings = replace(settings or GBDTSettings(), **overrides)
        self.collection_name: str | None = None
        self.features: FeatureSettings | None = None
        self.booster = None  # lightgbm.Booster once fitted or loaded
        self.best_iteration: int | None = None
        self.history: dict[str, list[float]] = {}  # valid metric per boosting round
        self.selection: dict | None = None  # how the round was chosen (SelectionPlan.to_json, + cv figures)

    @classmethod
    def for_collection(cls, collection: Collection, **overrides: Any) -> GBDTRanker:
        """A ranker with the settings ``collection`` is fitted with (``SETTINGS.resolve``)."""
        return cls(SETTINGS.resolve(collection, overrides))

    # ------------------------------------------------------------------------------------------
    # Training

    def fit(self, collection: Collection, train: SplitSource, valid: SplitSource,
            options: FitOptions) -> None:
        """Train on ``train``; stop early on the official metric of ``valid`` (when it has graphs)."""
        import_lightgbm()  # fail before reading any data when lightgbm is missing

        started = time.perf_counter()
        settings = self.settings
        self.collection_name = collection.name
        self.features = FeatureSettings(task=collection.task.name, center_per_graph=settings.center_per_graph,
                                        scale_per_graph=settings.scale_per_graph)
        rng = np.random.default_rng([int(options.seed) & 0xFFFFFFFF, 0x6BD7])
        train_rows = training_queries(_progress(train, options, f"{collection.name} train features"),
                                      settings, self.features, rng, compress=options.compress)
        if not len(train_rows):
            raise ValueError(f"{collection.name}: the train split has no graph with a config to learn from")
        valid_rows = validation_queries(_progress(valid, options, f"{collection.name} valid features"),
                                        settings, self.features, rng)
        logger.info("%s: %d train rows in %d queries, %d valid rows (features in %.1f s)", collection.name,
                    int(train_rows.sizes.sum()), len(train_rows), int(valid_rows.sizes.sum()),
                    time.perf_counter() - started)
        # Only graphs whose score depends on the model choose the round (solutions.methods.selection).
        plan = plan_selection(valid_rows.sizes, collection.task)
        valid_rows = valid_rows.subset(np.flatnonzero(informative_graphs(valid_rows.sizes, collection.task)))
        self.selection = plan.to_json()
        self.history = {}
        rounds = settings.num_boost_round
        if plan.mode == CROSS_VALIDATION:
            rounds, folds = self._cross_validated_rounds(collection, train_rows, settings, options, started,
                                                         rng)
            self.selection["cv_folds"] = folds
            self.selection["cv_best_round"] = rounds
            valid_rows = Queries()  # the few informative valid graphs do not choose anything
        logger.info("%s: %s", collection.name, plan.note)
        self.booster = self._train(collection, train_rows, valid_rows, settings, options, started, rounds,
                                   last_use=True)
        curve = valid_curve(self.history)
        self.best_iteration = (best_round(curve, settings.min_boost_round) if curve
                               else self.booster.current_iteration())
        logger.info("%s: %d rounds kept, fitted in %.1f s", collection.name, self.best_iteration,
                    time.perf_counter() - started)

    def _train(self, collection: Collection, train_rows: Queries, valid_rows: Queries, settings: GBDTSettings,
               options: FitOptions, started: float, rounds: int, history: dict | None = None,
               last_use: bool = False):
        """One LightGBM run on ``train_rows``, scored every round on ``valid_rows`` (when it has queries)
        into ``history`` (default ``self.history``) and stopped on its plateau. ``last_use``: the caller
        needs no more of ``train_rows``' features, which are moved into one matrix, not copied."""
        lgb = import_lightgbm()
        history = self.history if history is None else history
        sizes = train_rows.sizes
        params = settings.lightgbm_params(seed=int(options.seed), max_group=int(sizes.max()))
        ranking = settings.objective != "regression"
        dataset_params: dict[str, Any] = {"max_bin": settings.max_bin, "verbosity": -1}
        train_x = train_rows.take_features() if last_use else np.concatenate(train_rows.features)
        train_data = {"data": train_x, "label": np.concatenate(train_rows.labels),
                      "group": sizes if ranking else None,
                      "init_score": self._prior(train_x),
                      "feature_name": feature_names(self.features),
                      "free_raw_data": True, "params": dataset_params}
        train_set = lgb.Dataset(**train_data)
        if settings.objective == "pairwise" and not has_splittable_feature(train_set):
            # A custom objective makes LightGBM reset the booster's objective, and that reset fails a
            # check when every feature was pre-filtered as unsplittable (fewer rows than 2 *
            # min_data_in_leaf, e.g. a fold of the tiny competition). Kept, they are never split
            # either: the trees are single leaves, as the built-in objectives give on such data.
            dataset_params["feature_pre_filter"] = False
            train_set = lgb.Dataset(**train_data)
        del train_data, train_x
        callbacks = [lgb.record_evaluation(history)]
        if options.time_budget_s is not None:
            callbacks.append(time_budget(started, options.time_budget_s))
        valid_sets, feval = [], None
        if len(valid_rows):
            valid_x = np.concatenate(valid_rows.features)
            valid_set = lgb.Dataset(
                valid_x, label=np.concatenate(valid_rows.labels), init_score=self._prior(valid_x),
                group=valid_rows.sizes if ranking else None, reference=train_set,
                params=dataset_params if "feature_pre_filter" in dataset_params else None,
            )
            valid_sets, feval = [valid_set], official_metric(collection, valid_rows)
            callbacks.append(plateau_stopping(history, settings.min_boost_round,
                                              settings.early_stopping_rounds))
            if history is self.history:  # the final training, not a cross-validation fold
                callbacks.append(reporting(history))
        return lgb.train(
            params, train_set, num_boost_round=rounds, valid_sets=valid_sets,
            valid_names=["valid"] if valid_sets else None, feval=feval, callbacks=callbacks,
            keep_training_booster=True,  # every round stays available; best_iteration picks below
        )

    def _cross_validated_rounds(self, collection: Collection, train_rows: Queries, settings: GBDTSettings,
                                options: FitOptions, started: float,
                                rng: np.random.Generator) -> tuple[int, int]:
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
            curves.append(valid_curve(history))
        if not curves:  # a single train graph: nothing to hold out
            return settings.num_boost_round, 0
        length = min(len(c) for c in curves)  # a time budget may have cut the later folds short
        mean_curve = np.mean([c[:length] for c in curves], axis=0).tolist()
        self.selection["cv_score"] = float(max(mean_curve[min(settings.min_boost_round, length) - 1:]))
        return best_round(mean_curve, settings.min_boost_round), len(curves)

    def summary(self) -> dict:
        """Facts for the runner's report: the rounds kept and how they were chosen."""
        return {"best_iteration": self.best_iteration, "selection": self.selection}

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
        dedup, features = distinct_config_features(graph, self.features)  # scored once per distinct config
        score = self.booster.predict(features, num_iteration=self.best_iteration,
                                     num_threads=self.settings.num_threads)
        prior = self._prior(features)
        if prior is not None:
            score = score + prior
        return -dedup.expand(np.asarray(score, dtype=np.float64))

    def _prior(self, features: np.ndarray) -> np.ndarray | None:
        """The initial scores of ``heuristic_prior`` (higher = faster, as LightGBM ranks), None when off."""
        if not self.settings.heuristic_prior:
            return None
        column = feature_names(self.features).index("heuristic_log_cost_scaled")
        return -self.settings.heuristic_prior * features[:, column].astype(np.float64)

    # ------------------------------------------------------------------------------------------
    # Persistence

    def save(self, path: Path) -> None:
        """Write ``path/model.txt`` and ``path/settings.json`` (``path`` is a directory, created if
        needed)."""
        if self.booster is None:
            raise RuntimeError("GBDTRanker.save called before fit")
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.booster.save_model(str(path / MODEL_FILE), num_iteration=self.best_iteration)
        SAVED.write(path, {
            "collection": self.collection_name,
            "best_iteration": self.best_iteration,
            "features": self.features.to_json(),
            "feature_names": feature_names(self.features),
            "settings": asdict(self.settings),
        })

    @classmethod
    def load(cls, path: Path) -> GBDTRanker:
        """Read a model written by ``save``; refuses one whose features this code computes differently."""
        lgb = import_lightgbm()

        path = Path(path)
        meta = SAVED.read(path)
        # another feature version: its columns mean something else here
        features = meta.rebuild(lambda: FeatureSettings.from_json(meta["features"]))
        if meta["feature_names"] != feature_names(features):
            raise meta.refusal("the saved feature names differ from this code's")
        meta.require("settings", [f.name for f in fields(GBDTSettings)])
        ranker = meta.rebuild(lambda: cls(GBDTSettings(**meta["settings"])), SettingError)
        ranker.collection_name = meta["collection"]
        ranker.features = features
        ranker.booster = meta.weights(path / MODEL_FILE, "LightGBM",
                                      lambda: lgb.Booster(model_file=str(path / MODEL_FILE)),
                                      lgb.basic.LightGBMError, OSError)
        ranker.best_iteration = ranker.booster.current_iteration()  # saved truncated at the best round
        return ranker


def _progress(source: SplitSource, options: FitOptions, description: str) -> Iterable[tuple[str, Graph]]:
    """The split's graphs (through the processed cache when ``options.cache_dir`` is set), with a bar."""
    from competition.progress import progress

    return progress(source.graphs(options.cache_dir), total=len(source), desc=description, unit="graph",
                    leave=False, enabled=options.progress)

