"""One set of settings fitted and scored as ``tpugraphs solve`` would: a model per seed, built with the
collection's resolved settings (``MethodInfo.build``), fitted on the train split with the given valid
graphs for model selection, then each graph of another set ranked and scored with the official metric.
What a trial runs, and what the held-out comparison runs for the best trial and the defaults."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from competition.collections import Collection
from competition.predictions import ranking_from_predictions
from solutions.methods.base import FitOptions, SplitSource, validation_listener
from solutions.methods.registry import MethodInfo
from solutions.solve.runner import graph_score


class DivergedError(RuntimeError):
    """A fitted model gave a non-finite score: the settings diverged (the trial fails, the study goes on)."""


@dataclass(frozen=True)
class Scored:
    """Per-graph scores (the mean over seeds), each seed's mean, and the seconds it took."""

    graph_scores: np.ndarray  # (g,) in the order of the scored source
    seed_scores: list[float]
    seconds: float

    @property
    def score(self) -> float:
        return float(np.mean(self.graph_scores))


def fit_and_score(info: MethodInfo, collection: Collection, data_dir: Path, params: Mapping[str, object], *,
                  select_on: SplitSource, score_on: SplitSource, options: FitOptions, seeds: Sequence[int],
                  listener: Callable[[int, float], None] | None = None) -> Scored:
    """Fit one model per seed on the train split (selecting on ``select_on``) and score ``score_on``.

    ``listener`` hears the first seed's selection scores (``validation_listener``); it may raise to stop
    the fit (a pruned trial). ``SettingError`` for settings the schema refuses together.
    """
    started = time.perf_counter()
    train = SplitSource(data_dir, collection, "train")
    per_seed = []
    for i, seed in enumerate(seeds):
        model = info.build(collection, params)
        seeded = replace(options, seed=int(seed))
        if listener is not None and i == 0:
            with validation_listener(listener):
                model.fit(collection, train, select_on, seeded)
        else:
            model.fit(collection, train, select_on, seeded)
        per_seed.append(_graph_scores(model, info.name, collection, score_on, options))
    scores = np.mean(np.stack(per_seed), axis=0)
    return Scored(scores, [float(np.mean(s)) for s in per_seed], time.perf_counter() - started)


def _graph_scores(model, method: str, collection: Collection, source: SplitSource,
                  options: FitOptions) -> np.ndarray:
    scores = []
    for row_id, graph in source.graphs(options.cache_dir):
        values = np.asarray(model.predict(collection, graph), dtype=np.float64)
        if values.shape != (graph.num_configs,):
            raise DivergedError(f"method {method} gave scores of shape {values.shape} for {row_id}")
        if not np.isfinite(values).all():
            raise DivergedError(f"method {method} gave non-finite scores for {row_id} (training diverged)")
        scores.append(graph_score(collection, ranking_from_predictions(collection, values), graph))
    return np.asarray(scores, dtype=np.float64)
