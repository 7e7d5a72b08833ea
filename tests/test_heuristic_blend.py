"""A learned ranking blended with the heuristic's at the weight validation prefers
(``solutions/heuristic_blend.py``), and the gnn's use of it (``heuristic_blend``)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_gnn import FAST, LAYOUT, edited_copy, fit, layout_predictions

from competition.collections import COLLECTION_BY_NAME
from competition.data.graphs import iter_split
from competition.tasks import LAYOUT as LAYOUT_TASK
from solutions import heuristic_blend
from solutions.gnn import GNNRanker
from solutions.gnn.settings import GNNConfig
from solutions.method import SavedModelError
from solutions.settings import SettingError


def _choose(valid):
    valid = list(valid)
    return heuristic_blend.best_weight(heuristic_blend.score_sums(LAYOUT_TASK, valid), len(valid))


def _tau(predicted, runtimes) -> float:
    return LAYOUT_TASK.score_graph(np.argsort(predicted, kind="stable"), np.asarray(runtimes, float), None)


def test_weight_zero_keeps_the_models_scores_and_a_weight_adds_z_scores():
    scores, heuristic = np.array([3.0, 1.0, 2.0]), np.array([10.0, 30.0, 20.0])
    assert heuristic_blend.blend(scores, heuristic, 0.0) is scores
    z = lambda v: (v - v.mean()) / v.std()  # noqa: E731
    np.testing.assert_allclose(heuristic_blend.blend(scores, heuristic, 2.0), z(scores) + 2 * z(heuristic))
    z_scores = heuristic_blend.blend(scores, np.full(3, 7.0), 2.0)  # a heuristic that does not vary adds 0
    np.testing.assert_allclose(z_scores, z(scores))


def test_validation_chooses_the_heuristic_when_it_knows_and_the_model_when_it_does():
    rng = np.random.default_rng(0)
    runtimes = [rng.permutation(40).astype(float) + 1 for _ in range(3)]
    knows = [(rng.normal(size=40), r, r) for r in runtimes]  # the heuristic is the runtime
    weight, scores = _choose(knows)
    assert weight == max(heuristic_blend.WEIGHTS) and set(scores) == set(heuristic_blend.WEIGHTS)
    model_knows = [(r, rng.normal(size=40), r) for r in runtimes]
    assert _choose(model_knows)[0] == 0.0
    assert _choose([]) == (0.0, {})


def test_equal_scores_keep_the_smallest_weight():
    # score sums over 2 graphs, one per weight of WEIGHTS (0, 0.25, 0.5, 1, 2, 4)
    assert heuristic_blend.best_weight([1.0, 1.0, 0.8, 0.8, 0.2, 0.0], 2) == (0.0, {
        0.0: 0.5, 0.25: 0.5, 0.5: 0.4, 1.0: 0.4, 2.0: 0.1, 4.0: 0.0})
    assert heuristic_blend.best_weight([0.8, 1.0, 1.2, 1.2, 0.0, 1.2], 2)[0] == 0.5
    assert heuristic_blend.best_weight([0.0] * 6, 0) == (0.0, {})  # no valid graph on any process


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 30), st.integers(1, 4), st.integers(0, 10_000))
def test_each_weights_score_is_its_blends_mean_tau(configs, graphs, seed):
    """Against the obvious computation: every graph's tau of every weight's blend, averaged."""
    rng = np.random.default_rng(seed)
    valid = [(rng.normal(size=configs), rng.integers(0, 5, size=configs).astype(float),
              rng.integers(1, 9, size=configs).astype(float)) for _ in range(graphs)]
    weight, scores = _choose(valid)
    z = lambda v: (v - v.mean()) / v.std() if v.std() > 0 else 0 * v  # noqa: E731
    for w in heuristic_blend.WEIGHTS:
        want = np.mean([_tau(s if w == 0 else z(s) + w * z(h), r) for s, h, r in valid])
        assert scores[w] == pytest.approx(want)
    assert scores[weight] == pytest.approx(max(scores.values()))


# -- the gnn ----------------------------------------------------------------------------------------


def test_the_gnn_setting_needs_the_engineered_heuristic():
    with pytest.raises(SettingError, match="heuristic_blend=true reads the engineered heuristic_log_cost"):
        GNNConfig(heuristic_blend=True, engineered_features=False)


DEFAULT_SEARCH = COLLECTION_BY_NAME["layout:xla:default"]  # no prior: the network's own order is its own


@pytest.fixture(scope="module")
def blended(tiny_competition):
    """A layout model trained with heuristic_blend (tests set its weight)."""
    ranker = fit(tiny_competition, DEFAULT_SEARCH, {"heuristic_blend": True})
    assert ranker.blend_weight in heuristic_blend.WEIGHTS and set(ranker.blend_scores) == set(
        heuristic_blend.WEIGHTS)
    assert ranker.blend_scores[ranker.blend_weight] == max(ranker.blend_scores.values())
    return ranker


def test_the_gnn_ranks_by_the_blend_it_chose(blended, tiny_competition):
    """Weight 0 is the network's own order; a weight that drowns the network is the heuristic's order
    (read here from the heuristic method itself), ties broken by the network."""
    from solutions.heuristics import HeuristicMethod

    graphs = list(iter_split(tiny_competition / "public", DEFAULT_SEARCH, "test"))
    rule = HeuristicMethod()
    blended.blend_weight = 0.0
    own = layout_predictions(blended, graphs, DEFAULT_SEARCH)
    blended.blend_weight = 1e6
    drowned = layout_predictions(blended, graphs, DEFAULT_SEARCH)
    blended.blend_weight = 1.0
    halfway = layout_predictions(blended, graphs, DEFAULT_SEARCH)
    orders = {name: [tuple(np.argsort(p, kind="stable")) for p in runs]
              for name, runs in (("own", own), ("drowned", drowned), ("halfway", halfway))}
    for (_, graph), heuristic_order in zip(graphs, drowned, strict=True):
        cost = np.asarray(rule.predict(DEFAULT_SEARCH, graph), dtype=np.float64)
        faster = cost[:, None] < cost[None, :] - 1e-9 * np.abs(cost[None, :])
        assert np.all(heuristic_order[:, None] < heuristic_order[None, :], where=faster)
    # halfway is neither end: on some graph its order is the network's no more, nor the rule's
    assert orders["halfway"] != orders["own"] and orders["halfway"] != orders["drowned"]


def test_the_gnn_saves_and_reloads_its_weight(blended, tiny_competition, tmp_path):
    blended.blend_weight = 2.0
    blended.save(tmp_path / "model")
    meta = json.loads((tmp_path / "model" / "gnn.json").read_text())
    assert meta["heuristic_blend"]["weight"] == 2.0 and meta["format_version"] == 5  # a kit of 4 refuses it
    assert set(meta["heuristic_blend"]["valid_scores"]) == {str(w) for w in heuristic_blend.WEIGHTS}
    graphs = list(iter_split(tiny_competition / "public", DEFAULT_SEARCH, "test"))
    loaded = GNNRanker.load(tmp_path / "model")
    assert loaded.blend_weight == 2.0
    before, after = (layout_predictions(r, graphs, DEFAULT_SEARCH) for r in (blended, loaded))
    for want, got in zip(before, after, strict=True):
        np.testing.assert_allclose(got, want)
    assert blended.summary()["heuristic_blend"]["weight"] == 2.0


@pytest.mark.parametrize(("edit", "message"), [
    (lambda meta: meta["heuristic_blend"].update(weight="big"), r"heuristic_blend\.weight is 'big', not a "
                                                                 r"non-negative number"),
    (lambda meta: meta["heuristic_blend"].update(weight=-1), r"heuristic_blend\.weight is -1"),
    (lambda meta: meta["heuristic_blend"].update(weight=True), r"heuristic_blend\.weight is True"),
    (lambda meta: meta.update(heuristic_blend=[1]), r"heuristic_blend\.weight is None"),
])
def test_a_saved_weight_that_is_not_a_weight_is_refused(blended, tmp_path, edit, message):
    blended.save(tmp_path / "saved")
    copy, meta_path = edited_copy(tmp_path / "saved", tmp_path, edit)
    with pytest.raises(SavedModelError, match=message) as caught:
        GNNRanker.load(copy)
    assert str(meta_path) in str(caught.value)


def test_a_model_that_does_not_blend_stays_readable_by_kits_of_format_4(blended, tmp_path):
    blended.blend_weight = 0.0
    blended.save(tmp_path / "model")
    meta = json.loads((tmp_path / "model" / "gnn.json").read_text())
    assert meta["format_version"] == 4 and meta["heuristic_blend"]["weight"] == 0.0


def test_with_no_valid_graph_the_network_keeps_its_own_order(blended):
    import copy

    ranker = copy.copy(blended)  # the module's model, its blend facts its own
    ranker._choose_blend(DEFAULT_SEARCH, [], seed=0)
    assert ranker.blend_weight == 0.0 and ranker.blend_scores is None
    assert ranker.summary()["heuristic_blend"] == {"weight": 0.0, "valid_scores": None}


def test_a_model_saved_before_the_blend_ranks_by_its_own_order(blended, tmp_path):
    blended.blend_weight = 4.0
    blended.save(tmp_path / "model")
    copy, _ = edited_copy(tmp_path / "model", tmp_path, lambda meta: (meta.pop("heuristic_blend"),
                                                                      meta.update(format_version=4)))
    assert GNNRanker.load(copy).blend_weight == 0.0


def test_without_the_setting_nothing_is_blended(tiny_competition):
    ranker = fit(tiny_competition, LAYOUT)
    assert ranker.blend_weight == 0.0 and ranker.blend_scores is None
    assert "heuristic_blend" not in ranker.summary() and FAST
