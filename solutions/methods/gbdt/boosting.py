"""LightGBM's side of training the gbdt: importing it, the official metric it reports every round
(``official_metric``), the best round (``best_round``), the callbacks that end training
(``plateau_stopping``, ``time_budget``) and the one that tells a listener each round's score
(``reporting``). Why the round is chosen this way: docs/gbdt.md."""

from __future__ import annotations

import os
import time

import numpy as np

from competition.collections import Collection
from solutions.methods.base import report_validation
from solutions.methods.gbdt.queries import Queries


def import_lightgbm():
    """Import lightgbm with OpenMP threads that sleep while they wait (unless the user chose otherwise).

    LightGBM's OpenMP threads spin by default, which slows a fit many times over on a machine whose
    cores are busy with other work (the demo trains a GNN too; CI runners are shared; BENCHMARKS.md,
    gbdt: design choices). The variable is read when the OpenMP runtime starts, so it is set before the first
    import.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import lightgbm

    return lightgbm


def official_metric(collection: Collection, rows: Queries):
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


def valid_curve(history: dict[str, dict[str, list[float]]]) -> list[float]:
    """The official valid score after each round so far (empty without a valid set)."""
    return next(iter(history.get("valid", {}).values()), [])


def best_round(curve: list[float], min_rounds: int) -> int:
    """1-based round with the best score among rounds >= ``min_rounds`` (first of equals).

    Valid sets are small, so an early peak is more likely noise than a better model (docs/gbdt.md,
    Model selection).
    """
    start = min(max(min_rounds, 1), len(curve)) - 1
    return start + int(np.argmax(curve[start:])) + 1


def has_splittable_feature(train_set) -> bool:
    """Whether LightGBM kept any feature of ``train_set`` (constructed here); unused ones have 0 bins."""
    train_set.construct()
    return any(train_set.feature_num_bin(i) > 0 for i in range(train_set.num_feature()))


def plateau_stopping(history: dict, min_rounds: int, patience: int):
    """A callback ending training once the best round (>= ``min_rounds``) is ``patience`` rounds old."""
    lgb = import_lightgbm()

    def callback(env) -> None:
        curve = valid_curve(history)
        if len(curve) < max(min_rounds, 1):
            return
        best = best_round(curve, min_rounds)
        if len(curve) - best >= patience:
            raise lgb.callback.EarlyStopException(best - 1, env.evaluation_result_list or [])

    callback.order = 30  # after record_evaluation (20) has stored this round's score
    return callback


def time_budget(started: float, budget_s: float):
    """A callback that ends training once ``budget_s`` has passed (``fit`` then keeps the best round)."""
    lgb = import_lightgbm()

    def callback(env) -> None:
        if time.perf_counter() - started > budget_s:
            raise lgb.callback.EarlyStopException(env.iteration, env.evaluation_result_list or [])

    callback.order = 40
    return callback


def reporting(history: dict):
    """A callback handing each round's valid score to ``report_validation`` (``tpugraphs tune`` listens,
    to prune a hopeless trial; nothing else changes)."""

    def callback(env) -> None:
        curve = valid_curve(history)
        if curve:
            report_validation(len(curve), curve[-1])

    callback.order = 25  # after record_evaluation (20) has stored this round's score, before stopping (30)
    return callback
