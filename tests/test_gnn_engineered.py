"""The layout gnn's engineered, graph-relative config features (``engineered_features``; methods/gnn)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from test_gnn import FAST, LAYOUT, ONEHOP, layout_graph

from competition.data.graphs import iter_split, save_graph
from competition.data.processed_cache import build_cache
from solutions.features.layout import layout_features
from solutions.kinds.features import standardized
from solutions.methods.base import FitOptions, SplitSource
from solutions.methods.gnn import GNNRanker
from solutions.methods.gnn.data import LayoutExample, make_example
from solutions.methods.gnn.engineered import (
    ENGINEERED_LAYOUT_COLUMNS,
    ENGINEERED_Z_LIMIT,
    engineered_layout_features,
)
from solutions.methods.gnn.model import LayoutRanker
from solutions.methods.gnn.settings import GNNConfig
from solutions.methods.gnn.train import layout_selection_sample, predict_layout
from solutions.store.saved import SavedModelError

CPU = torch.device("cpu")


def test_engineered_rows_follow_the_deduplicated_configs():
    graph = layout_graph(num_configs=12, seed=3)  # config 1 repeats config 0
    example = make_example("g", graph, transform=ONEHOP, compress=True, engineered=True)
    assert example.num_configs == 11 and example.engineered.shape == (11, ENGINEERED_LAYOUT_COLUMNS)
    # the slow, obvious reference: featurize every file config, keep the first of each distinct one,
    # then z-score over the distinct configs
    distinct = [0] + list(range(2, 12))
    want = standardized(layout_features(graph)[distinct])
    want = np.clip(want, -ENGINEERED_Z_LIMIT, ENGINEERED_Z_LIMIT)
    np.testing.assert_allclose(example.engineered.numpy(), want, rtol=1e-5, atol=1e-5)
    # z-scores within the graph: every column is centred, and spread 1 unless constant
    values = example.engineered.numpy().astype(np.float64)
    np.testing.assert_allclose(values.mean(axis=0), 0, atol=1e-5)
    spread = values.std(axis=0)
    assert np.all((np.abs(spread - 1) < 1e-4) | (spread < 1e-6)) and (spread > 0.5).any()
    # without deduplication every file config keeps its own row
    plain = make_example("g", graph, transform=None, compress=False, engineered=True)
    assert plain.engineered.shape == (12, ENGINEERED_LAYOUT_COLUMNS)
    torch.testing.assert_close(plain.engineered[0], plain.engineered[1])


def test_engineered_rows_are_off_by_default_and_kept_by_the_validation_sample():
    graph = layout_graph(num_configs=30, seed=4, duplicates=False)
    assert make_example("g", graph, transform=ONEHOP, compress=True).engineered is None
    example = make_example("g", graph, transform=ONEHOP, compress=True, engineered=True)
    sample = layout_selection_sample(example, 10, np.random.default_rng(0))
    assert sample.num_configs == 10 and sample.engineered.shape == (10, ENGINEERED_LAYOUT_COLUMNS)
    for row, digits in zip(sample.engineered, sample.configs.digits(), strict=True):
        match = (example.configs.digits() == digits).all(dim=(1, 2)).nonzero().flatten()
        torch.testing.assert_close(row, example.engineered[match[0]])


def test_cached_graphs_get_the_same_engineered_rows(tmp_path):
    graph = layout_graph(num_configs=40, seed=5)
    graph.node_config_feat[7], graph.config_runtime[7] = graph.node_config_feat[3], 1  # a faster duplicate
    save_graph(graph, tmp_path / "g.npz")
    cached = build_cache(tmp_path / "g.npz", tmp_path / "cache").layout_view()
    want = make_example("g", graph, transform=ONEHOP, compress=True, engineered=True)
    got = make_example("g", cached, transform=ONEHOP, compress=True, engineered=True)
    torch.testing.assert_close(got.engineered, want.engineered, rtol=0, atol=0)
    assert cached.cache._config_map is None  # the memory map is released again


def test_engineered_rows_of_a_graph_without_configs():
    graph = layout_graph(num_configs=3, seed=6)
    empty = graph.select_configs(np.zeros(0, dtype=np.int64))
    assert engineered_layout_features(empty).shape == (0, ENGINEERED_LAYOUT_COLUMNS)


def chunked_prediction_case(fusion: str) -> tuple[LayoutExample, LayoutRanker]:
    """A 40-config example with engineered rows and a small model that reads them (seeded); also the
    GPU tests' case."""
    torch.manual_seed(0)
    example = make_example("g", layout_graph(num_configs=40, duplicates=False), transform=ONEHOP,
                           compress=True, engineered=True)
    model = LayoutRanker.from_settings(GNNConfig(hidden=8, layers=2, fusion=fusion, engineered_features=True,
                                                 layout_configs_per_graph=6)).eval()
    return example, model


@pytest.mark.parametrize("fusion", ["early", "intermediate"])
def test_chunked_prediction_with_engineered_rows_equals_one_pass(fusion):
    example, model = chunked_prediction_case(fusion)
    one_pass = predict_layout(model, example, device=CPU)
    chunked = predict_layout(model, example, device=CPU, batch_nodes=1)
    assert np.isfinite(one_pass).all()
    np.testing.assert_allclose(one_pass, chunked, rtol=1e-5, atol=1e-6)


def test_the_engineered_rows_change_the_scores():
    torch.manual_seed(0)
    example = make_example("g", layout_graph(num_configs=20, duplicates=False), transform=ONEHOP,
                           compress=True, engineered=True)
    model = LayoutRanker.from_settings(GNNConfig(hidden=8, layers=2, config_attention=False,
                                                 engineered_features=True)).eval()
    digits = example.configs.digits()
    with torch.no_grad():
        scores = model(example.inputs, digits, engineered=example.engineered)
        shuffled = model(example.inputs, digits, engineered=example.engineered.flip(0))
    assert not torch.allclose(scores, shuffled)


@pytest.mark.parametrize(("reads", "given", "message"), [
    (True, False, rf"reads {ENGINEERED_LAYOUT_COLUMNS} engineered feature columns per config, and was given "
                  r"none; build the examples with make_example\(..., engineered=True\)"),
    (False, True, rf"reads 0 engineered feature columns per config, and was given "
                  rf"{ENGINEERED_LAYOUT_COLUMNS}"),
])
def test_a_model_and_its_examples_must_agree_on_engineered_rows(reads, given, message):
    example = make_example("g", layout_graph(), transform=ONEHOP, compress=True, engineered=given)
    model = LayoutRanker.from_settings(GNNConfig(hidden=8, layers=2, engineered_features=reads))
    with pytest.raises(ValueError, match=message):
        predict_layout(model, example, device=CPU)


@pytest.mark.parametrize("params", [
    {"engineered_features": True},
    {"engineered_features": True, "fusion": "early", "config_attention": False, "training": "gst",
     "segment_size": 8},
], ids=["intermediate", "gst"])
def test_fit_save_load_predict_with_engineered_rows(tiny_competition, tmp_path, params):
    public = tiny_competition / "public"
    ranker = GNNRanker(**{**FAST, **params})
    ranker.fit(LAYOUT, SplitSource(public, LAYOUT, "train"), SplitSource(public, LAYOUT, "valid"),
               FitOptions(progress=False))
    assert ranker.model.engineered is not None and ranker.result.steps > 0
    graphs = list(iter_split(public, LAYOUT, "test"))
    predictions = [ranker.predict(LAYOUT, graph) for _, graph in graphs]
    ranker.save(tmp_path / "model")
    assert json.loads((tmp_path / "model" / "gnn.json").read_text())["config"]["engineered_features"] is True
    loaded = GNNRanker.load(tmp_path / "model")
    for (_, graph), scores in zip(graphs, predictions, strict=True):
        assert scores.shape == (graph.num_configs,) and np.isfinite(scores).all()
        np.testing.assert_array_equal(loaded.predict(LAYOUT, graph), scores)



def test_a_model_that_lacks_a_setting_is_refused_not_filled_in(tiny_competition, tmp_path):
    public = tiny_competition / "public"
    ranker = GNNRanker(**{**FAST, "engineered_features": False})
    ranker.fit(LAYOUT, SplitSource(public, LAYOUT, "train"), SplitSource(public, LAYOUT, "valid"),
               FitOptions(progress=False))
    ranker.save(tmp_path / "model")
    meta_path = tmp_path / "model" / "gnn.json"
    meta = json.loads(meta_path.read_text())
    del meta["config"]["engineered_features"]  # what a kit before the setting wrote
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(SavedModelError, match=r"gnn\.json: config lacks the setting engineered_features; "
                                              r"retrain it: tpugraphs solve --method gnn"):
        GNNRanker.load(tmp_path / "model")


def test_training_graphs_keep_a_fixed_sample_of_their_configs(tmp_path):
    graph = layout_graph(num_configs=40, seed=9)  # 37 distinct configs
    whole = make_example("g", graph, transform=ONEHOP, compress=True, engineered=True)
    capped = make_example("g", graph, transform=ONEHOP, compress=True, engineered=True, max_configs=10)
    again = make_example("g", graph, transform=ONEHOP, compress=True, engineered=True, max_configs=10)
    assert whole.num_configs == 37 and capped.num_configs == 10 and capped.config_inverse is None
    torch.testing.assert_close(capped.configs.digits(), again.configs.digits())  # the same sample every run
    # each kept config is one of the graph's, with its own (min) runtime and its engineered row computed
    # over the sample
    kept = [int((whole.configs.digits() == d).all(dim=(1, 2)).nonzero()[0]) for d in capped.configs.digits()]
    assert len(set(kept)) == 10
    torch.testing.assert_close(capped.runtime, whole.runtime[kept])
    file_rows = np.unique(whole.config_inverse, return_index=True)[1][kept]
    torch.testing.assert_close(capped.engineered, engineered_layout_features(graph, file_rows))
    # through the processed cache: the same sample, the configs left in the cache
    save_graph(graph, tmp_path / "g.npz")
    cached = build_cache(tmp_path / "g.npz", tmp_path / "cache").layout_view()
    through_cache = make_example("g", cached, transform=ONEHOP, compress=True, engineered=True,
                                 max_configs=10)
    assert type(through_cache.configs).__name__ == "CachedConfigStore"
    torch.testing.assert_close(through_cache.configs.digits(), capped.configs.digits(), rtol=0, atol=0)
    torch.testing.assert_close(through_cache.engineered, capped.engineered, rtol=0, atol=0)


def test_graphs_to_predict_and_small_graphs_keep_every_config():
    graph = layout_graph(num_configs=40, seed=9)  # 37 distinct configs
    assert make_example("g", graph, transform=ONEHOP, compress=True, max_configs=37).num_configs == 37
    graph.config_runtime[:] = 0  # a test file: its scores must cover every config
    test = make_example("g", graph, transform=ONEHOP, compress=True, engineered=True, max_configs=10)
    assert test.num_configs == 37 and test.expand(np.arange(37.0)).shape == (40,)


def test_max_train_configs_is_checked():
    assert GNNConfig().layout_max_train_configs == 4096
    assert GNNConfig(layout_max_train_configs=None).layout_max_train_configs is None
    with pytest.raises(ValueError, match="layout_max_train_configs"):
        GNNConfig(layout_max_train_configs=1)


RETRAIN = r"; retrain it: tpugraphs solve --method gnn --collection layout:xla:random --data PUBLIC_DIR"


@pytest.mark.parametrize(("edit", "message"), [
    (lambda meta: meta.pop("engineered_columns"),
     r"engineered layout features of version None \(other columns\); this kit computes version \d+"
     + RETRAIN),
    (lambda meta: meta["engineered_columns"]["names"].__setitem__(3, "renamed"),
     r"of version \d+ \(other columns\); this kit computes version \d+" + RETRAIN),
    (lambda meta: meta["engineered_columns"]["names"].pop(), r"\(other columns\)"),
    (lambda meta: meta["engineered_columns"].update(version=3),
     r"of version 3 \(the same columns\); this kit computes version \d+" + RETRAIN),
], ids=["missing", "renamed", "fewer", "version"])
def test_a_model_whose_engineered_columns_differ_is_refused(tiny_competition, tmp_path, edit, message):
    public = tiny_competition / "public"
    ranker = GNNRanker(**FAST)
    ranker.fit(LAYOUT, SplitSource(public, LAYOUT, "train"), SplitSource(public, LAYOUT, "valid"),
               FitOptions(progress=False))
    ranker.save(tmp_path / "model")
    meta_path = tmp_path / "model" / "gnn.json"
    meta = json.loads(meta_path.read_text())
    assert meta["engineered_columns"]["names"][0] == "output_match_expected"
    edit(meta)
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(SavedModelError, match=message):
        GNNRanker.load(tmp_path / "model")
