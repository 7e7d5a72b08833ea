"""The gradient-boosted ranker: features (shapes, names, finiteness), labels, the official-metric
early stopping, learning an obvious signal, determinism and save/load."""

from __future__ import annotations

import json
import re
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from graph_builders import PRODUCT, SHAPE, node_features
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from competition.collections import COLLECTION_BY_NAME, COLLECTIONS, Collection
from competition.data.graphs import LayoutGraph, TileGraph, iter_split, save_graph
from competition.data.hlo import OPCODE_IDS
from competition.data.tree import split_dir
from competition.metrics import kendall_tau_score, tile_slowdown_score
from competition.predictions import ranking_from_predictions
from competition.tasks import LAYOUT as LAYOUT_TASK
from competition.tasks import TILE as TILE_TASK
from solutions.features.graph_facts import graph_feature_names
from solutions.features.layout import layout_feature_names, layout_features
from solutions.features.layout_geometry import layout_context, tied_groups
from solutions.features.tile import tile_feature_names
from solutions.kinds import kind_of
from solutions.kinds.features import (
    FEATURE_VERSION,
    FeatureSettings,
    config_features,
    feature_names,
    standardized,
)
from solutions.methods.base import FitOptions, RankingMethod, SplitSource
from solutions.methods.gbdt import GBDTRanker, pairwise
from solutions.methods.gbdt.boosting import best_round, has_splittable_feature, official_metric
from solutions.methods.gbdt.pairwise import PairwiseObjective, pairwise_gradients, pairwise_loss
from solutions.methods.gbdt.queries import Queries, relevance_labels
from solutions.methods.heuristic import HeuristicMethod
from solutions.methods.random import RandomMethod
from solutions.methods.selection import CROSS_VALIDATION, CV_FOLDS, VALID, cv_fold_of, plan_selection
from solutions.settings.schema import SettingError
from solutions.solve.runner import graph_score
from solutions.store.saved import SavedModelError

TILE = COLLECTION_BY_NAME["tile:xla"]
LAYOUT = COLLECTION_BY_NAME["layout:xla:random"]
# Small and quick: the tests check behaviour, not the tuned defaults.
FAST = {"num_boost_round": 40, "min_boost_round": 10, "early_stopping_rounds": 10, "num_threads": 1}


def make_tile_graph(rng: np.random.Generator, c: int, *, labelled: bool = True) -> TileGraph:
    """A two-node kernel whose runtime falls with the output tile's size: the signal is obvious."""
    shape = [int(rng.choice([64, 128, 256])), int(rng.choice([128, 256, 512]))]
    bounds = np.stack([rng.choice([1, 2, 4, 8, 16, 32, 64], size=c), rng.choice([8, 32, 64, 128], size=c)], 1)
    config = np.zeros((c, 24), np.float32)
    config[:, 8:10] = bounds
    config[:, 14], config[:, 15] = bounds.sum(1), bounds.prod(1)
    runtime = (1e7 / bounds.prod(1) * rng.uniform(0.98, 1.02, size=c)).astype(np.int64) + 1
    return TileGraph(
        node_feat=node_features([shape, shape]),
        node_opcode=np.array([OPCODE_IDS["parameter"], OPCODE_IDS["exponential"]], np.uint8),
        edge_index=np.array([[1, 0]], np.int64),
        config_runtime=runtime if labelled else np.zeros(c, np.int64),
        config_feat=config,
        config_runtime_normalizers=np.full(c, int(runtime.max(initial=1)), np.int64),
    )


def make_layout_graph(rng: np.random.Generator, c: int, nc: int = 4) -> LayoutGraph:
    """A chain of ``nc`` configurable 2-D nodes; runtime = number of nodes whose output minor dim is 0."""
    n = nc + 2  # parameter, nc configurable nodes, tuple
    shapes = [[int(rng.choice([64, 256])), int(rng.choice([128, 512]))] for _ in range(n)]
    opcodes = [OPCODE_IDS["parameter"]] + [OPCODE_IDS[rng.choice(["dot", "reshape"])] for _ in range(nc)]
    opcodes.append(OPCODE_IDS["tuple"])
    edges = np.array([[i + 1, i] for i in range(n - 1)], np.int64)
    feat = np.full((c, nc, 18), -1, np.float32)
    minor = rng.integers(0, 2, size=(c, nc))
    feat[:, :, 0], feat[:, :, 1] = minor, 1 - minor  # output layout [1, 0] or [0, 1]
    feat[:, :, 6], feat[:, :, 7] = 1, 0  # input layout [1, 0]
    slow = (minor == 0).sum(1)
    runtime = (1000 + 100 * slow + rng.integers(0, 10, size=c)).astype(np.int64)
    return LayoutGraph(
        node_feat=node_features(shapes), node_opcode=np.array(opcodes, np.uint8), edge_index=edges,
        config_runtime=runtime, node_config_feat=feat, node_config_ids=np.arange(1, nc + 1, dtype=np.int64),
        node_splits=np.array([[0]], np.int64),
    )


def write_split(data_dir: Path, collection: Collection, split: str, graphs: list) -> SplitSource:
    for i, graph in enumerate(graphs):
        save_graph(graph, split_dir(data_dir, collection, split) / f"g{i:03d}.npz")
    return SplitSource(data_dir, collection, split)


@pytest.fixture(scope="module")
def signal_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Tile and layout graphs whose runtime is an obvious function of one config feature."""
    data_dir = tmp_path_factory.mktemp("gbdt_signal")
    rng = np.random.default_rng(0)
    for split, count in (("train", 24), ("valid", 6), ("test", 6)):
        write_split(data_dir, TILE, split,
                    [make_tile_graph(rng, int(rng.integers(20, 60))) for _ in range(count)])
        write_split(data_dir, LAYOUT, split,
                    [make_layout_graph(rng, int(rng.integers(30, 80))) for _ in range(count)])
    return data_dir


def _fit(data_dir: Path, collection: Collection, seed: int = 0, **settings) -> GBDTRanker:
    ranker = GBDTRanker.for_collection(collection, **{**FAST, **settings})  # as tpugraphs solve builds it
    ranker.fit(collection, SplitSource(data_dir, collection, "train"),
               SplitSource(data_dir, collection, "valid"), FitOptions(seed=seed, progress=False))
    return ranker


def _mean_score(method, collection: Collection, data_dir: Path, split: str = "test") -> float:
    scores = []
    for _, graph in iter_split(data_dir, collection, split):
        order = ranking_from_predictions(collection, method.predict(collection, graph))
        if collection.task.name == "tile":
            scores.append(tile_slowdown_score(order, graph.config_runtime, graph.config_runtime_normalizers))
        else:
            scores.append(kendall_tau_score(order, graph.config_runtime))
    return float(np.mean(scores))


# --------------------------------------------------------------------------------------------------
# Features


@pytest.mark.parametrize("task", ["tile", "layout"])
@pytest.mark.parametrize("center", [True, False])
def test_feature_matrix_shape_matches_the_names(task: str, center: bool):
    rng = np.random.default_rng(1)
    graph = make_tile_graph(rng, 7) if task == "tile" else make_layout_graph(rng, 7)
    settings = FeatureSettings(task=task, center_per_graph=center)
    names = feature_names(settings)
    config_names = tile_feature_names() if task == "tile" else layout_feature_names()
    assert len(names) == len(set(names)) == (
        len(graph_feature_names(kind_of(task).graph_facts)) + len(config_names) * (2 if center else 1))
    features = config_features(graph, settings)
    assert features.shape == (7, len(names)) and features.dtype == np.float32
    assert np.isfinite(features).all()
    subset = config_features(graph, settings, configs=np.array([4, 1]))
    assert subset.shape == (2, len(names))
    if not center:  # without centring a config's row does not depend on the others
        np.testing.assert_array_equal(subset, features[[4, 1]])


@given(arrays(np.float64, st.tuples(st.integers(2, 30), st.integers(1, 4)),
              elements=st.floats(-1e3, 1e3)),
       st.floats(1e-3, 1e3), st.floats(-1e3, 1e3))
@example(np.array([[0.0], [6e-5], [3e-5], [1e-5]]), 1e-3, 512.0)  # the shift swamps the spread
@settings(max_examples=60, deadline=None)
def test_per_graph_z_scores_do_not_depend_on_the_scale_a_graph_varies_on(values, scale, shift):
    """The point of ``scale_per_graph``: a real graph whose summed padding varies by 0.001 % gets the
    same z-scores as a synthetic one varying by 30 %, so a tree split learnt on one applies to the other."""
    z = standardized(values)
    moved_values = values * scale + shift
    moved = standardized(moved_values)
    # A spread below 1e-12 of the column's size (+1) is rounding and reads as constant; compare the
    # columns both sides treat as varying.
    varies = (z != 0).any(axis=0) & (moved != 0).any(axis=0)
    # Building the input already rounds each entry by up to eps of its size, which the z-scores see
    # relative to the column's spread; beyond that the two must agree.
    eps, spread = np.finfo(np.float64).eps, values.std(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rounding = 8 * eps * (np.abs(moved_values).max(axis=0) / (spread * scale)
                              + np.abs(values).max(axis=0) / spread)
    assert (np.abs(z - moved)[:, varies] <= 1e-9 + rounding[varies]).all()
    np.testing.assert_allclose(z[:, varies].mean(axis=0), 0, atol=1e-9)
    np.testing.assert_allclose(z[:, varies].std(axis=0), 1, atol=1e-9)
    constant = values.std(axis=0) <= 1e-12 * (np.abs(values.mean(axis=0)) + 1)
    assert (z[:, constant] == 0).all()  # a constant column carries nothing: zeros, never a division by 0


def test_a_sum_that_varies_by_a_millionth_is_scaled_and_the_matrix_gains_its_block():
    column = 24.0 + np.array([0.0, 1e-6, 2e-6, -1e-6])[:, None]  # log of a 3e10-element padded total
    np.testing.assert_allclose(standardized(column).std(), 1.0)
    assert (standardized(np.full((5, 1), 24.0)) == 0).all()
    graph = make_layout_graph(np.random.default_rng(3), 6)
    plain = FeatureSettings(task="layout")
    scaled = FeatureSettings(task="layout", scale_per_graph=True)
    names = feature_names(scaled)
    assert names[: len(feature_names(plain))] == feature_names(plain)
    assert len(names) == len(feature_names(plain)) + len(layout_feature_names())
    assert all(name.endswith("_scaled") for name in names[len(feature_names(plain)):])
    features = config_features(graph, scaled)
    np.testing.assert_array_equal(features[:, : len(feature_names(plain))], config_features(graph, plain))
    assert features.shape == (6, len(names)) and np.isfinite(features).all()


def test_layout_features_of_a_cached_graph_read_in_chunks_equal_the_loaded_ones(tmp_path, monkeypatch):
    """A memory-mapped int8 graph (the processed cache) featurized chunk by chunk from an index, against
    the released float32 graph with its configs selected first (the obvious way)."""
    from competition.data.graphs import save_graph
    from competition.data.processed_cache import build_cache
    from solutions.features import shapes
    from solutions.kinds.features import select_configs

    graph = make_layout_graph(np.random.default_rng(4), 40)
    save_graph(graph, tmp_path / "g.npz")
    view = build_cache(tmp_path / "g.npz", tmp_path / "cache").layout_view()
    configs = np.array([39, 3, 3, 0, 17, 25, 8])  # any order, repeats allowed
    monkeypatch.setattr(shapes, "CHUNK_VALUES", 1)  # one config per chunk
    want = layout_features(select_configs(graph, configs), layout_context(graph))
    np.testing.assert_array_equal(layout_features(view, configs=configs), want)
    settings = FeatureSettings(task="layout")
    np.testing.assert_array_equal(config_features(view, settings, configs=configs),
                                  config_features(graph, settings, configs=configs))


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 6), st.integers(0, 9), st.integers(0, 2**16))
def test_minor_dimension_shares_counted_in_one_pass_equal_one_mean_per_dimension(c, nc, seed):
    from solutions.features.layout import _minor_dim_shares, _weighted_mean
    from solutions.features.shapes import MAX_DIMS

    rng = np.random.default_rng(seed)
    minor = rng.integers(-1, MAX_DIMS, size=(c, nc))
    active = (rng.random((c, nc)) < 0.7).astype(np.float64)
    fast = _minor_dim_shares(minor, active, active.sum(axis=1))
    slow = [_weighted_mean((minor == d).astype(np.float64), active) for d in range(MAX_DIMS)]
    for got, want in zip(fast, slow, strict=True):
        np.testing.assert_array_equal(got, want)


def test_layout_values_of_integer_configs_equal_those_of_the_released_floats():
    from solutions.features.shapes import layout_values

    floats = np.random.default_rng(0).integers(-1, 6, size=(5, 4, 18)).astype(np.float32)
    for integers in (floats.astype(np.int8), floats.astype(np.int64)):
        np.testing.assert_array_equal(layout_values(integers), layout_values(floats))
    assert layout_values(np.array([7, -3], np.int8)).tolist() == [5, -1]  # clipped like the floats


@pytest.mark.parametrize("value", [1e8, 3e12, 1e30, -9.2e18, np.inf, np.nan])
def test_features_stay_finite_on_huge_or_broken_node_features(value: float):
    rng = np.random.default_rng(2)
    for graph, task in ((make_tile_graph(rng, 5), "tile"), (make_layout_graph(rng, 5), "layout")):
        graph.node_feat[:, PRODUCT] = value  # products reach 1e8+ and wrap negative as int64
        graph.node_feat[:, SHAPE[0]] = value
        features = config_features(graph, FeatureSettings(task=task))
        assert np.isfinite(features).all()


def test_features_of_huge_tile_bounds_are_finite():
    graph = make_tile_graph(np.random.default_rng(3), 4)
    graph.config_feat[:] = 1e12
    assert np.isfinite(config_features(graph, FeatureSettings(task="tile"))).all()


def test_features_of_graphs_without_configs_or_configurable_nodes():
    rng = np.random.default_rng(4)
    empty_tile = make_tile_graph(rng, 0)
    assert config_features(empty_tile, FeatureSettings(task="tile")).shape == (
        0, len(feature_names(FeatureSettings("tile"))))
    layout = make_layout_graph(rng, 3)
    layout.node_config_feat = np.zeros((3, 0, 18), np.float32)
    layout.node_config_ids = np.zeros(0, np.int64)
    features = config_features(layout, FeatureSettings(task="layout"))
    assert (features.shape == (3, len(feature_names(FeatureSettings("layout"))))
            and np.isfinite(features).all())
    assert HeuristicMethod().predict(LAYOUT, layout).tolist() == [0.0, 0.0, 0.0]  # nothing to configure
    assert HeuristicMethod().predict(TILE, empty_tile).shape == (0,)


def test_feature_task_must_match_the_graph():
    with pytest.raises(ValueError, match="a tile graph given to layout features"):
        config_features(make_tile_graph(np.random.default_rng(5), 3), FeatureSettings(task="layout"))


@pytest.mark.parametrize("version", [1, 3, 5, "4", True, None, 4.0])
@pytest.mark.parametrize("task", ["tile", "layout"])
def test_feature_settings_of_another_version_are_refused(task, version):
    saved = {"task": task, "center_per_graph": True, "version": version}
    whole = isinstance(version, int) and not isinstance(version, bool)
    shown = str(version) if whole else f"{version!r} (not a whole number)"
    with pytest.raises(ValueError, match=f"saved features are version {re.escape(shown)}, this "
                                         f"code computes version {FEATURE_VERSION}"):
        FeatureSettings.from_json(saved)
    saved["version"] = FEATURE_VERSION
    assert FeatureSettings.from_json(saved) == FeatureSettings(task=task, center_per_graph=True)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda meta: meta.pop("format_version"), "a gbdt model of format version None; this kit reads format "),
    (lambda meta: meta.update(format_version=1), "a gbdt model of format version 1; this kit reads format "),
    (lambda meta: meta["features"].update(winner_features=False),
     "saved feature settings winner_features are not this code's"),
    (lambda meta: meta["settings"].update(learn_from_random_search=False), "learn_from_random_search"),
])
def test_a_saved_model_of_another_format_is_refused_in_one_line(signal_data: Path, tmp_path: Path, edit,
                                                                 message):
    _fit(signal_data, TILE).save(tmp_path / "gbdt")
    meta_path = tmp_path / "gbdt" / "settings.json"
    meta = json.loads(meta_path.read_text())
    edit(meta)
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(SavedModelError) as caught:
        GBDTRanker.load(tmp_path / "gbdt")
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert str(caught.value).endswith("; retrain it: tpugraphs solve --method gbdt --collection tile:xla "
                                      "--data PUBLIC_DIR --out SUB.csv")


def test_a_saved_model_of_another_feature_version_is_refused_in_one_line(signal_data: Path, tmp_path: Path):
    _fit(signal_data, TILE).save(tmp_path / "gbdt")
    meta_path = tmp_path / "gbdt" / "settings.json"
    meta = json.loads(meta_path.read_text())
    meta["features"]["version"] = FEATURE_VERSION - 1
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(SavedModelError) as caught:
        GBDTRanker.load(tmp_path / "gbdt")
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{meta_path}: saved features are version "
                                                      f"{FEATURE_VERSION - 1}, this code computes version")
    assert message.endswith("; retrain it: tpugraphs solve --method gbdt --collection tile:xla --data "
                            "PUBLIC_DIR --out SUB.csv")


# --------------------------------------------------------------------------------------------------
# Labels and the early-stopping metric


def test_relevance_labels_rank_fastest_highest():
    assert relevance_labels(np.array([30, 10, 20, 10]), 4).tolist() == [0, 3, 1, 3]
    labels = relevance_labels(np.arange(1000, 0, -1), 30)
    assert labels.min() == 0 and labels.max() == 29 and (np.diff(labels) >= 0).all()
    assert relevance_labels(np.array([5.0]), 30).tolist() == [0]
    assert relevance_labels(np.zeros(0), 30).shape == (0,)


@settings(max_examples=60, deadline=None)
@given(arrays(np.int64, st.integers(1, 60), elements=st.integers(1, 20)), st.integers(2, 31))
def test_relevance_labels_are_monotone_in_runtime(runtime: np.ndarray, levels: int):
    labels = relevance_labels(runtime, levels)
    order = np.argsort(runtime, kind="stable")
    assert (np.diff(labels[order]) <= 0).all()  # slower never gets a higher label
    assert labels.min() >= 0 and labels.max() < levels
    assert labels[np.argmin(runtime)] == min(levels, runtime.shape[0]) - 1  # the fastest gets the top label
    same = runtime[:, None] == runtime[None, :]
    assert (labels[:, None] == labels[None, :])[same].all()  # ties share a label


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_features_and_heuristic_are_finite_for_any_node_features(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    graph = make_tile_graph(rng, 4) if data.draw(st.booleans()) else make_layout_graph(rng, 4)
    values = st.floats(allow_nan=True, allow_infinity=True, width=32)
    graph.node_feat = data.draw(arrays(np.float32, graph.node_feat.shape, elements=values))
    task = "tile" if isinstance(graph, TileGraph) else "layout"
    assert np.isfinite(config_features(graph, FeatureSettings(task=task))).all()
    collection = TILE if task == "tile" else LAYOUT
    assert np.isfinite(HeuristicMethod().predict(collection, graph)).all()  # shares the geometry


def test_best_round_ignores_rounds_before_the_minimum():
    assert best_round([0.9, 0.1, 0.3, 0.2], 2) == 3
    assert best_round([0.9, 0.1, 0.3, 0.2], 1) == 1
    assert best_round([0.5, 0.6], 10) == 2  # fewer rounds than the minimum: the last one


@pytest.mark.parametrize("collection", [TILE, LAYOUT], ids=lambda c: c.name)
def test_early_stopping_metric_is_theofficial_metric(collection: Collection):
    """The vectorised feval agrees with the per-graph reference functions (ties included)."""
    rng = np.random.default_rng(6)
    rows, scores, per_graph = Queries(), [], []
    for n in (2, 7, 30, 1):
        runtime = rng.integers(1, 6, size=n) * 100  # many ties
        normalizer = rng.integers(90, 110, size=n) if collection.task.name == "tile" else np.ones(n, np.int64)
        score = rng.integers(0, 4, size=n).astype(np.float64)  # ties in the model's scores too
        rows.features.append(np.zeros((n, 1), np.float32))
        rows.labels.append(np.zeros(n))
        rows.runtimes.append(runtime)
        rows.normalizers.append(normalizer)
        scores.append(score)
        order = ranking_from_predictions(collection, -score)  # the model scores high = fast
        if collection.task.name == "tile":
            per_graph.append(tile_slowdown_score(order, runtime, normalizer))
        else:
            per_graph.append(kendall_tau_score(order, runtime))
    name, value, higher_is_better = official_metric(collection, rows)(np.concatenate(scores), None)
    assert higher_is_better and name == ("tile_slowdown" if collection.task.name == "tile" else "kendall_tau")
    assert value == pytest.approx(np.mean(per_graph))


# --------------------------------------------------------------------------------------------------
# The ranker


def test_ranker_satisfies_the_protocol():
    assert isinstance(GBDTRanker(), RankingMethod)


@pytest.mark.parametrize(("overrides", "error", "message"), [
    ({"num_rounds": 3}, SettingError, "setting num_rounds: --method gbdt has no such setting; did you mean "
                                      "num_boost_round?"),
    ({"objective": "nope"}, SettingError,
     "setting objective=nope: unknown; objective must be one of lambdarank, rank_xendcg, regression, "
     "pairwise"),
    ({"objective": "Pairwise"}, SettingError, "setting objective=Pairwise: unknown (did you mean pairwise?)"),
    ({"linear_gain": False, "label_levels": 40}, SettingError, "at most 31 levels with exponential gains"),
    ({"pairwise_max_pairs": 0}, SettingError, "pairwise_max_pairs must be an integer >= 1"),
    ({"num_boost_round": 0}, SettingError, "num_boost_round must be an integer >= 1"),
    ({"max_bin": 1}, SettingError, "max_bin must be an integer >= 2"),
    ({"learning_rate": -1}, SettingError, "learning_rate must be a number > 0"),
])
def test_bad_settings_are_refused_with_their_name(overrides: dict, error: type, message: str):
    with pytest.raises(error) as caught:
        GBDTRanker(**overrides)
    assert message in str(caught.value)


def test_constructor_overrides_are_checked_and_applied(signal_data: Path):
    with pytest.raises(SettingError, match="setting num_rounds: --method gbdt has no such setting"):
        GBDTRanker(num_rounds=3)
    ranker = GBDTRanker.for_collection(TILE, **{**FAST, "num_boost_round": 12, "min_boost_round": 12})
    assert ranker.settings.num_boost_round == 12 and ranker.settings.ndcg_at == 5  # resolved before fit
    assert GBDTRanker(num_boost_round=12).settings.ndcg_at is None  # the class defaults, no collection's
    ranker.fit(TILE, SplitSource(signal_data, TILE, "train"), SplitSource(signal_data, TILE, "valid"),
               FitOptions(progress=False))
    assert ranker.settings.num_boost_round == 12 and ranker.settings.ndcg_at == 5  # tile defaults kept
    assert ranker.best_iteration == 12


@pytest.mark.parametrize("collection", [TILE, LAYOUT], ids=lambda c: c.name)
def test_ranker_learns_an_obvious_signal_and_beats_random(signal_data: Path, collection: Collection):
    ranker = _fit(signal_data, collection)
    learned = _mean_score(ranker, collection, signal_data)
    floor = np.mean([_mean_score(RandomMethod(seed), collection, signal_data) for seed in range(3)])
    if collection.task.name == "tile":
        assert learned > floor and learned > 0.97
    else:
        assert learned > floor + 0.5 and learned > 0.6  # within-count ties cap tau near 0.73
    assert ranker.best_iteration is not None and ranker.best_iteration >= 1
    assert len(ranker.history["valid"]) == 1  # the official metric was tracked on the valid split


def test_same_seed_same_predictions_and_save_load_round_trip(signal_data: Path, tmp_path: Path):
    first, second = _fit(signal_data, LAYOUT, seed=3), _fit(signal_data, LAYOUT, seed=3)
    _, graph = next(iter_split(signal_data, LAYOUT, "test"))
    predicted = first.predict(LAYOUT, graph)
    assert predicted.shape == (graph.num_configs,) and np.isfinite(predicted).all()
    np.testing.assert_array_equal(predicted, second.predict(LAYOUT, graph))
    first.save(tmp_path / "gbdt")
    assert {p.name for p in (tmp_path / "gbdt").iterdir()} == {"model.txt", "settings.json"}
    loaded = GBDTRanker.load(tmp_path / "gbdt")
    np.testing.assert_array_equal(loaded.predict(LAYOUT, graph), predicted)
    assert loaded.best_iteration == first.best_iteration


def test_duplicate_configs_get_the_same_prediction(signal_data: Path):
    ranker = _fit(signal_data, TILE)
    graph = make_tile_graph(np.random.default_rng(7), 10, labelled=False)  # test files carry no runtimes
    for key in ("config_feat",):
        setattr(graph, key, np.concatenate([getattr(graph, key), getattr(graph, key)[:3]]))
    graph.config_runtime = np.zeros(13, np.int64)
    graph.config_runtime_normalizers = np.zeros(13, np.int64)
    predicted = ranker.predict(TILE, graph)
    assert predicted.shape == (13,)
    np.testing.assert_array_equal(predicted[10:], predicted[:3])


def test_predict_refuses_misuse(signal_data: Path):
    with pytest.raises(RuntimeError, match="before fit or load"):
        GBDTRanker().predict(TILE, make_tile_graph(np.random.default_rng(8), 3))
    ranker = _fit(signal_data, TILE)
    with pytest.raises(ValueError, match="trained on tile:xla, not layout:xla:random"):
        ranker.predict(LAYOUT, make_layout_graph(np.random.default_rng(8), 3))


def test_load_refuses_features_this_code_does_not_compute(signal_data: Path, tmp_path: Path):
    _fit(signal_data, TILE).save(tmp_path)
    settings = (tmp_path / "settings.json").read_text().replace(
        '"graph_log_nodes"', '"graph_log_nodes_old"', 1)
    (tmp_path / "settings.json").write_text(settings)
    with pytest.raises(ValueError, match="feature names differ"):
        GBDTRanker.load(tmp_path)


@pytest.mark.parametrize("objective", ["rank_xendcg", "regression", "pairwise"])
def test_other_objectives_train_and_predict(signal_data: Path, objective: str):
    # Two seeds: on 6 test graphs one rank_xendcg fit (its gammas are random) can land at 0.50
    # while others reach 0.70.
    scores = [_mean_score(_fit(signal_data, LAYOUT, seed=seed, objective=objective), LAYOUT, signal_data)
              for seed in (0, 1)]
    assert np.mean(scores) > 0.5


def test_fit_without_valid_graphs_cross_validates_the_rounds(signal_data: Path, tmp_path: Path):
    empty_valid = tmp_path / "npz_all" / "npz" / "tile" / "xla" / "valid"
    empty_valid.mkdir(parents=True)
    ranker = GBDTRanker.for_collection(TILE, **FAST)
    ranker.fit(TILE, SplitSource(signal_data, TILE, "train"), SplitSource(tmp_path, TILE, "valid"),
               FitOptions(progress=False))
    selection = ranker.summary()["selection"]
    assert selection["mode"] == CROSS_VALIDATION and selection["valid_graphs"] == 0
    assert selection["cv_folds"] == CV_FOLDS
    # The refit on every train graph keeps exactly the round count cross-validation chose.
    assert ranker.best_iteration == selection["cv_best_round"]
    assert FAST["min_boost_round"] <= ranker.best_iteration <= FAST["num_boost_round"]
    assert _mean_score(ranker, TILE, signal_data) > 0.5


def _tile_split_with_config_counts(data_dir: Path, split: str, counts: list[int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    write_split(data_dir, TILE, split, [make_tile_graph(rng, c) for c in counts])


def test_tiny_valid_kernels_do_not_choose_the_round(signal_data: Path, tmp_path: Path):
    """Valid kernels of <= 5 configs always score 1.0: they are ignored, and with too few others left
    the rounds come from cross-validation, as the report says."""
    _tile_split_with_config_counts(tmp_path, "valid", [3, 4, 5, 2, 5, 3, 40], seed=1)
    ranker = GBDTRanker.for_collection(TILE, **FAST)
    ranker.fit(TILE, SplitSource(signal_data, TILE, "train"), SplitSource(tmp_path, TILE, "valid"),
               FitOptions(progress=False))
    selection = ranker.summary()["selection"]
    assert (selection["mode"], selection["valid_graphs"], selection["informative_graphs"]) == \
        (CROSS_VALIDATION, 7, 1)
    assert selection["note"].startswith("only 1 of the 7 valid kernels have 6 or more configs")
    assert selection["note"].endswith("chosen by 4-fold cross-validation over the train kernels")
    assert ranker.history == {}  # the one informative valid kernel scored nothing either


def test_enough_informative_valid_kernels_select_on_valid_without_the_tiny_ones(signal_data: Path,
                                                                                tmp_path: Path):
    counts = [3, 4, 30, 25, 40, 33, 28]
    _tile_split_with_config_counts(tmp_path, "valid", counts, seed=2)
    ranker = GBDTRanker.for_collection(TILE, **FAST)
    ranker.fit(TILE, SplitSource(signal_data, TILE, "train"), SplitSource(tmp_path, TILE, "valid"),
               FitOptions(progress=False))
    selection = ranker.summary()["selection"]
    assert (selection["mode"], selection["informative_graphs"]) == (VALID, 5)
    assert "2 with fewer than 6 configs ignored" in selection["note"]
    # The curve is the mean over the 5 informative kernels only: a slow reference recomputes round 1.
    big = [i for i, c in enumerate(counts) if c >= 6]
    graphs = [g for _, g in SplitSource(tmp_path, TILE, "valid")]
    one_round = GBDTRanker.load(_saved_first_round(ranker, tmp_path / "m"))
    expected = np.mean([graph_score(TILE, ranking_from_predictions(TILE, one_round.predict(TILE, graphs[i])),
                                    graphs[i]) for i in big])
    assert ranker.history["valid"][TILE.metric][0] == pytest.approx(expected)


def _saved_first_round(ranker: GBDTRanker, path: Path) -> Path:
    best = ranker.best_iteration
    ranker.best_iteration = 1
    ranker.save(path)
    ranker.best_iteration = best
    return path


@pytest.mark.parametrize("counts, task, mode, used", [
    ([], TILE_TASK, CROSS_VALIDATION, 0),
    ([5, 5, 5, 5, 5, 5], TILE_TASK, CROSS_VALIDATION, 0),
    ([6, 6, 6, 6, 6], TILE_TASK, VALID, 5),
    ([6, 6, 6, 6, 2], TILE_TASK, CROSS_VALIDATION, 4),
    ([2, 2, 2, 2, 2], LAYOUT_TASK, VALID, 5),
    ([1, 2, 2, 2, 2], LAYOUT_TASK, VALID, 4),  # layout keeps its valid split
    ([], LAYOUT_TASK, VALID, 0),
])
def test_plan_selection_table(counts: list[int], task, mode: str, used: int):
    plan = plan_selection(counts, task)
    assert (plan.mode, plan.informative_graphs, plan.valid_graphs) == (mode, used, len(counts))


def test_cv_folds_cover_every_graph_evenly():
    for n in (1, 3, 4, 10, 17):
        fold = cv_fold_of(n, np.random.default_rng(0))
        sizes = np.bincount(fold)
        assert fold.shape == (n,) and sizes.sum() == n and sizes.max() - sizes.min() <= 1
        assert sizes.size == min(CV_FOLDS, n)


@pytest.mark.parametrize("collection", COLLECTIONS, ids=lambda c: c.name)
def test_ranker_on_the_tiny_competition(tiny_competition: Path, collection: Collection):
    """Hand-made graphs are regular; the embedded competition has real-looking ones (all opcodes, big
    shapes)."""
    public = tiny_competition / "public"
    ranker = _fit(public, collection)
    for split in ("valid", "test"):
        for _, graph in iter_split(public, collection, split):
            predicted = ranker.predict(collection, graph)
            assert predicted.shape == (graph.num_configs,) and np.isfinite(predicted).all()


# -- tied layout groups (issue 14, item 5) ------------------------------------------------------------


def _tied_reference(codes: np.ndarray) -> list[int]:
    """Slow: the first node whose column of codes equals each node's."""
    return [next(k for k in range(codes.shape[1]) if np.array_equal(codes[:, k], codes[:, j]))
            for j in range(codes.shape[1])]


@settings(max_examples=60, deadline=None)
@given(arrays(np.int64, st.tuples(st.integers(1, 6), st.integers(0, 7)), elements=st.integers(0, 2)))
def test_tied_groups_match_the_slow_reference(codes: np.ndarray):
    assert tied_groups(codes).tolist() == _tied_reference(codes)


def test_layout_features_of_some_configs_are_those_rows_of_all(tiny_competition: Path):
    _, graph = next(iter(iter_split(tiny_competition / "public", COLLECTION_BY_NAME["layout:nlp:default"],
                                    "train")))
    full = layout_features(graph)
    assert full.shape == (graph.num_configs, len(layout_feature_names())) and np.isfinite(full).all()
    some = np.array([graph.num_configs - 1, 0])
    np.testing.assert_allclose(layout_features(graph, configs=some), full[some])


# -- the pairwise objective (issue 14, item 2) --------------------------------------------------------


def _pairwise_reference(scores: np.ndarray, labels: np.ndarray,
                        sizes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Slow and obvious: a loop over every pair of every query; a query's loss is its size times the mean
    of log(1 + exp(-(s_fast - s_slow))) over its pairs of differing labels."""
    grad, hess = np.zeros(len(scores)), np.zeros(len(scores))
    start = 0
    for n in sizes:
        pairs = [(i, j) for i in range(start, start + n) for j in range(start, start + n)
                 if labels[i] > labels[j]]
        for fast, slow in pairs:
            q = 1.0 / (1.0 + np.exp(scores[fast] - scores[slow]))  # d loss / d (s_slow - s_fast)
            weight = n / len(pairs)
            grad[fast] -= weight * q
            grad[slow] += weight * q
            hess[fast] += weight * q * (1 - q)
            hess[slow] += weight * q * (1 - q)
        start += n
    return grad, hess


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_pairwise_gradients_match_the_slow_reference(data):
    sizes = data.draw(st.lists(st.integers(0, 9), min_size=1, max_size=6))
    n = sum(sizes)
    scores = data.draw(arrays(np.float64, n, elements=st.floats(-30, 30)))
    labels = data.draw(arrays(np.float64, n, elements=st.integers(0, 3)))  # few levels: many ties
    chunk = data.draw(st.sampled_from([1, 5, 64, pairwise.CHUNK_ENTRIES]))  # every chunking path
    with mock.patch.object(pairwise, "CHUNK_ENTRIES", chunk):
        grad, hess = pairwise_gradients(scores, labels, np.array(sizes, np.int64))
    expected_grad, expected_hess = _pairwise_reference(scores, labels, sizes)
    # The pair matrices are float32 (as LightGBM takes gradients): a score of 30 is exact to 2e-6.
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(hess, expected_hess, rtol=1e-5, atol=1e-4)
    assert (hess >= 0).all()


def test_pairwise_gradient_is_the_derivative_of_the_loss():
    rng = np.random.default_rng(3)
    sizes = np.array([6, 1, 9, 4])
    scores, labels = rng.normal(size=20), rng.integers(0, 4, size=20).astype(float)
    grad, hess = pairwise_gradients(scores, labels, sizes)
    step = np.eye(20) * 1e-5
    numeric = [(pairwise_loss(scores + step[k], labels, sizes)
                - pairwise_loss(scores - step[k], labels, sizes)) / 2e-5
               for k in range(20)]
    np.testing.assert_allclose(grad, numeric, atol=1e-5)
    # A query of all-tied labels (or of one config) has no pair: no gradient at all.
    tied, _ = pairwise_gradients(scores[:6], np.ones(6), np.array([6]))
    assert not tied.any()


def test_pairwise_samples_pairs_of_huge_queries_without_bias():
    rng = np.random.default_rng(4)
    sizes = np.array([50, 10])  # 1225 and 45 pairs: with max_pairs=1000 only the first is sampled
    scores, labels = rng.normal(size=60), rng.permutation(60).astype(float)  # no ties
    exact_grad, exact_hess = pairwise_gradients(scores, labels, sizes)
    draws = [pairwise_gradients(scores, labels, sizes, max_pairs=1000, rng=np.random.default_rng(seed))
             for seed in range(400)]
    mean_grad, mean_hess = np.mean([g for g, _ in draws], axis=0), np.mean([h for _, h in draws], axis=0)
    # Each draw's gradient of a row has a standard deviation of about 0.1; the mean of 400, 0.005.
    np.testing.assert_allclose(mean_grad, exact_grad, atol=0.03)
    np.testing.assert_allclose(mean_hess, exact_hess, atol=0.03)
    np.testing.assert_array_equal(draws[0][0][50:], exact_grad[50:])  # the small query stays exact
    assert not np.array_equal(draws[0][0][:50], exact_grad[:50])
    again = pairwise_gradients(scores, labels, sizes, max_pairs=1000, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(again[0], draws[0][0])  # the same seed draws the same pairs
    with pytest.raises(ValueError,
                       match="a query of 50 configs has more than 400 pairs: sampling them needs an rng"):
        pairwise_gradients(scores, labels, sizes, max_pairs=400)
    with pytest.raises(ValueError, match="must both hold the 60 rows"):
        pairwise_gradients(scores[:59], labels[:59], sizes)
    assert "max_pairs=7" in repr(PairwiseObjective(7))


def test_pairwise_objective_on_the_tiny_competition(tiny_competition: Path, tmp_path: Path):
    """objective=pairwise trains, stops on the official metric, predicts, saves and loads,
    deterministically."""
    public = tiny_competition / "public"
    for collection in (COLLECTION_BY_NAME["tile:xla"], COLLECTION_BY_NAME["layout:nlp:random"]):
        ranker = _fit(public, collection, objective="pairwise")
        again = _fit(public, collection, objective="pairwise")
        assert ranker.settings.objective == "pairwise"
        assert ranker.history == {} or collection.metric in ranker.history["valid"]
        ranker.save(tmp_path / collection.name)
        loaded = GBDTRanker.load(tmp_path / collection.name)
        assert loaded.settings.objective == "pairwise"
        for split in ("valid", "test"):
            for _, graph in iter_split(public, collection, split):
                predicted = ranker.predict(collection, graph)
                assert predicted.shape == (graph.num_configs,) and np.isfinite(predicted).all()
                np.testing.assert_array_equal(again.predict(collection, graph), predicted)
                np.testing.assert_array_equal(loaded.predict(collection, graph), predicted)


def test_a_dataset_too_small_to_split_is_detected():
    """What makes the pairwise fit keep LightGBM's pre-filtered features (see GBDTRanker._train)."""
    import lightgbm as lgb

    rng = np.random.default_rng(5)
    few, many = rng.normal(size=(30, 3)), rng.normal(size=(200, 3))
    assert not has_splittable_feature(lgb.Dataset(few, label=np.zeros(30), params={"verbosity": -1}))
    assert has_splittable_feature(lgb.Dataset(many, label=np.zeros(200), params={"verbosity": -1}))


def test_take_features_moves_the_rows_into_one_matrix_without_holding_them_twice():
    from solutions.methods.gbdt.queries import Queries

    rng = np.random.default_rng(0)
    parts = [rng.random((n, 3)).astype(np.float32) for n in (4, 1, 7, 2)] * 20  # more parts than NPY_MAXARGS
    queries = Queries(features=list(parts), labels=[np.zeros(len(p)) for p in parts])
    taken = queries.take_features()
    np.testing.assert_array_equal(taken, np.concatenate(parts))
    assert taken.dtype == np.float32 and queries.features == []
