"""``heuristic_prior``: gbdt and the gnn start from the heuristic's order and learn what to change in it
(BENCHMARKS.md, "Real data"). With a huge prior and (next to) no learning, a model ranks as the
heuristic does; the setting survives save and load; it refuses to run without the column it reads."""

from __future__ import annotations

import numpy as np
import pytest
from test_gnn import FAST, LAYOUT

from competition.data.graphs import iter_split
from solutions.methods.base import FitOptions, SplitSource
from solutions.methods.gbdt import GBDTRanker
from solutions.methods.gnn import GNNRanker
from solutions.methods.heuristic import HeuristicMethod
from solutions.settings.schema import SettingError


def _fit(ranker, public):
    ranker.fit(LAYOUT, SplitSource(public, LAYOUT, "train"), SplitSource(public, LAYOUT, "valid"),
               FitOptions(progress=False))
    return ranker


def _agrees_with_the_heuristic(ranker, public, tmp_path) -> None:
    ranker.save(tmp_path / "model")
    loaded = type(ranker).load(tmp_path / "model")
    checked = 0
    for _, graph in iter_split(public, LAYOUT, "test"):
        heuristic = HeuristicMethod().predict(LAYOUT, graph)
        scores = ranker.predict(LAYOUT, graph)
        np.testing.assert_array_equal(loaded.predict(LAYOUT, graph), scores)
        if np.ptp(heuristic) > 0:
            # every pair the heuristic orders is ordered the same way (its ties may go either way)
            assert ((heuristic[:, None] < heuristic[None, :]) <= (scores[:, None] < scores[None, :])).all()
            checked += 1
    assert checked


@pytest.mark.parametrize("params", [
    {},
    {"fusion": "early", "config_attention": False, "training": "gst", "segment_size": 8},
], ids=["intermediate", "gst"])
def test_gnn_with_a_huge_prior_and_no_learning_ranks_as_the_heuristic(tiny_competition, tmp_path, params):
    public = tiny_competition / "public"
    ranker = _fit(GNNRanker(**{**FAST, **params, "lr": 0.0, "heuristic_prior": 1000.0}), public)
    assert ranker.model.heuristic_prior == 1000.0
    _agrees_with_the_heuristic(ranker, public, tmp_path)


def test_gbdt_with_a_huge_prior_and_one_round_ranks_as_the_heuristic(tiny_competition, tmp_path):
    public = tiny_competition / "public"
    ranker = _fit(GBDTRanker(num_boost_round=1, min_boost_round=1, num_threads=1, heuristic_prior=1000.0),
                  public)
    _agrees_with_the_heuristic(ranker, public, tmp_path)


@pytest.mark.parametrize(("method", "params", "message"), [
    (GNNRanker, {"heuristic_prior": 1.0, "engineered_features": False}, "add engineered_features=true"),
    (GBDTRanker, {"heuristic_prior": 1.0, "scale_per_graph": False}, "add scale_per_graph=true"),
    (GBDTRanker, {"heuristic_prior": -1.0}, "heuristic_prior"),
], ids=["gnn-without-engineered", "gbdt-without-z-scores", "gbdt-negative"])
def test_a_prior_without_its_column_is_refused(method, params, message):
    with pytest.raises(SettingError, match=message):
        method(**params)


def test_the_gnn_starts_xla_random_from_the_heuristic_unless_told_otherwise(tiny_competition, tmp_path):
    """layout:xla:random's collection defaults (docs/defaults.md): trained and saved with the prior;
    a person's engineered_features=false trains without it instead of being refused."""
    public = tiny_competition / "public"
    assert LAYOUT.name == "layout:xla:random"
    ranker = _fit(GNNRanker.for_collection(LAYOUT, **FAST), public)
    assert ranker.config.heuristic_prior == ranker.model.heuristic_prior == 3.0
    assert ranker.config.average_epochs == 20.0  # and selects on a moving average of the weights
    ranker.save(tmp_path / "model")
    assert GNNRanker.load(tmp_path / "model").model.heuristic_prior == 3.0
    plain = _fit(GNNRanker.for_collection(LAYOUT, **FAST, engineered_features=False), public)
    assert (plain.config.engineered_features, plain.model.heuristic_prior) == (False, 0.0)
