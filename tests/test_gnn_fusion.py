"""Intermediate fusion and cross-config attention of the layout GNN (solutions/methods/gnn/model.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_gnn import FAST, LAYOUT, ONEHOP, layout_graph

from benchmarks.bench_real import VARIANTS
from competition.data.graphs import iter_split
from solutions.methods.base import FitOptions, SplitSource
from solutions.methods.gnn import GNNRanker
from solutions.methods.gnn.data import configurable_links, layout_example
from solutions.methods.gnn.model import ConfigAttention, LayoutRanker, context_index
from solutions.methods.gnn.ranker import FORMAT_VERSION
from solutions.methods.gnn.settings import GNNConfig
from solutions.methods.gnn.train import predict_layout
from solutions.settings.schema import SettingError

CPU = torch.device("cpu")


def slow_links(edges: list[tuple[int, int]], configurable: list[int]) -> set[tuple[int, int]]:
    """The obvious definition: producer -> consumer between configurable nodes, direct or via one plain
    node."""
    slot = {node: i for i, node in enumerate(configurable)}
    links = set()
    for p, c in edges:
        if p in slot and c in slot:
            links.add((slot[p], slot[c]))
        if p in slot and c not in slot:
            for p2, c2 in edges:
                if p2 == c and c2 in slot:
                    links.add((slot[p], slot[c2]))
    return {(a, b) for a, b in links if a != b}


@st.composite
def dags(draw):
    n = draw(st.integers(2, 14))
    pairs = [(v, u) for u in range(n) for v in range(u)]  # producer v < consumer u
    edges = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=30))
    configurable = sorted(draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=n)))
    return n, edges, configurable


@settings(max_examples=150, deadline=None)
@given(dags())
def test_configurable_links_match_the_obvious_definition(case):
    n, edges, configurable = case
    edge_index = torch.tensor(edges, dtype=torch.int64).reshape(-1, 2).T.contiguous()
    links = configurable_links(edge_index, torch.tensor(configurable, dtype=torch.int64), n)
    got = {(int(a), int(b)) for a, b in links.T}
    assert got == slow_links(edges, configurable)
    keys = (links[0] * len(configurable) + links[1]).tolist()
    assert keys == sorted(set(keys))  # sorted, no duplicates


@pytest.mark.parametrize("attention", [False, True], ids=["plain", "attention"])
@pytest.mark.parametrize("fusion", ["early", "intermediate"])
def test_chunked_prediction_equals_one_pass(fusion, attention):
    torch.manual_seed(0)
    example = layout_example("g", layout_graph(num_configs=40, duplicates=False), transform=ONEHOP,
                             compress=True)
    model = LayoutRanker.from_settings(GNNConfig(hidden=8, layers=2, fusion=fusion,
                                                 config_attention=attention, layout_configs_per_graph=6,
                                                 engineered_features=False)).eval()
    one_pass = predict_layout(model, example, device=CPU)
    chunked = predict_layout(model, example, device=CPU, batch_nodes=1)
    assert one_pass.shape == (example.num_configs,) and np.isfinite(one_pass).all()
    np.testing.assert_allclose(one_pass, chunked, rtol=1e-5, atol=1e-6)
    with torch.no_grad():  # row deduplication changes nothing on either path
        digits = example.configs.digits()
        torch.testing.assert_close(model(example.inputs, digits),
                                   model(example.inputs, digits, dedup_rows=False))


def test_intermediate_fusion_scores_depend_on_the_configs_only_through_configurable_nodes():
    torch.manual_seed(0)
    example = layout_example("g", layout_graph(num_configs=12, duplicates=False), transform=None,
                             compress=True)
    model = LayoutRanker.from_settings(GNNConfig(hidden=8, layers=2, config_attention=False,
                                                 engineered_features=False)).eval()
    with torch.no_grad():
        state = model.encode_nodes(example.inputs)  # message passing done once, config-free
        digits = example.configs.digits()
        scores = model.forward_encoded(example.inputs, state, digits)
        # a config's score does not depend on the other configs of the batch (no attention)
        torch.testing.assert_close(scores[5:6], model.forward_encoded(example.inputs, state, digits[5:6]))
        assert scores.std() > 0  # the configs are told apart


def test_attention_lets_a_config_see_its_peers():
    torch.manual_seed(0)
    attention = ConfigAttention(8).eval()
    queries = torch.randn(5, 8)
    with torch.no_grad():
        alone = attention(queries[:1])
        with_peers = attention(queries)[:1]
        assert not torch.allclose(alone, with_peers)
        # with a fixed context, a query's output does not depend on the other queries
        context = torch.randn(7, 8)
        torch.testing.assert_close(attention(queries, context)[2:3], attention(queries[2:3], context))


def test_context_index_is_a_fixed_sample():
    assert context_index(5, 32).tolist() == [0, 1, 2, 3, 4]
    first, again = context_index(1000, 32), context_index(1000, 32)
    assert first.tolist() == again.tolist() and len(set(first.tolist())) == 32
    assert first.tolist() == sorted(first.tolist())


@pytest.mark.parametrize(("params", "message"), [
    ({"fusion": "late"}, "setting fusion=late: unknown; fusion must be one of early, intermediate"),
    ({"fusion": "intermediate", "training": "gst"}, "intermediate fusion passes messages once per graph"),
    ({"training": "gst"}, "training=gst with fusion=intermediate: .* add fusion=early"),  # no silent switch
    ({"config_layers": -1}, "config_layers must be an integer >= 0"),
])
def test_bad_fusion_settings(params, message):
    with pytest.raises(ValueError, match=message):
        GNNConfig(**params)


@pytest.mark.parametrize("params", [
    {"fusion": "intermediate"},
    {"fusion": "intermediate", "config_attention": True, "config_layers": 2},
    {"fusion": "early", "config_attention": True},
], ids=["intermediate", "intermediate+attention", "early+attention"])
def test_fit_save_load_predict(tiny_competition, tmp_path, params):
    public = tiny_competition / "public"
    ranker = GNNRanker(**{**FAST, **params})
    ranker.fit(LAYOUT, SplitSource(public, LAYOUT, "train"), SplitSource(public, LAYOUT, "valid"),
               FitOptions(progress=False))
    graphs = list(iter_split(public, LAYOUT, "test"))
    predictions = [ranker.predict(LAYOUT, graph) for _, graph in graphs]
    ranker.save(tmp_path / "model")
    meta = json.loads((tmp_path / "model" / "gnn.json").read_text())
    assert meta["format_version"] == FORMAT_VERSION
    assert {k: meta["config"][k] for k in params} == params
    loaded = GNNRanker.load(tmp_path / "model")
    assert (loaded.model.fusion == params["fusion"]
            and loaded.model.config_attention == loaded.config.config_attention)
    for (_, graph), scores in zip(graphs, predictions, strict=True):
        assert scores.shape == (graph.num_configs,) and np.isfinite(scores).all()
        np.testing.assert_array_equal(loaded.predict(LAYOUT, graph), scores)


# -- tile columns and per-collection defaults ----------------------------------------------


def test_tile_geometry_columns_follow_the_deduplicated_configs():
    from test_gnn import tile_graph

    from solutions.features.log_scale import scale_tile_config_features
    from solutions.features.tile import tile_features
    from solutions.kinds.tile import TILE_GEOMETRY_COLUMNS
    from solutions.methods.gnn.data import config_vector_width, config_vectors, tile_example

    graph = tile_graph(num_configs=9)
    graph.config_feat[4] = graph.config_feat[2]  # a duplicate: merged by compress
    example = tile_example("t", graph, compress=True)
    width = config_vector_width(graph.task)
    assert example.config_feat.shape == (8, width) == (8, 24 + TILE_GEOMETRY_COLUMNS)
    full = config_vectors(graph)
    assert np.isfinite(full).all()
    np.testing.assert_array_equal(full[:, :24], scale_tile_config_features(graph.config_feat))
    # each kept config carries its own engineered row (the same columns gbdt reads, signed-log scaled)
    for i, row in enumerate(full):
        np.testing.assert_array_equal(example.config_feat[example.config_inverse[i]].numpy(), row)
    assert tile_features(graph).shape[1] == 24 + TILE_GEOMETRY_COLUMNS


def test_a_tile_model_saves_and_loads(tiny_competition, tmp_path):
    from test_gnn import TILE

    public = tiny_competition / "public"
    ranker = GNNRanker(**FAST)
    ranker.fit(TILE, SplitSource(public, TILE, "train"), SplitSource(public, TILE, "valid"),
               FitOptions(progress=False))
    ranker.save(tmp_path / "model")
    loaded = GNNRanker.load(tmp_path / "model")
    assert loaded.config == ranker.config
    for _, graph in iter_split(public, TILE, "test"):
        np.testing.assert_array_equal(loaded.predict(TILE, graph), ranker.predict(TILE, graph))


def test_collections_start_from_their_own_defaults_and_a_param_wins(tiny_competition, tmp_path, monkeypatch):
    """The runner builds each collection's method from its resolved settings (MethodInfo.build); the
    model records them, and loads with them whatever today's table says."""
    from solutions.methods.gnn import settings as settings_module
    from solutions.methods.registry import get_method
    from solutions.settings.schema import MethodSettings

    monkeypatch.setitem(settings_module.COLLECTION_DEFAULTS, LAYOUT.name,
                        {"margin": 0.5, "fusion": "early"})
    assert "layout:xla:random: margin=0.5, fusion=early" in settings_module.SETTINGS.defaults_note()
    public = tiny_competition / "public"
    splits = SplitSource(public, LAYOUT, "train"), SplitSource(public, LAYOUT, "valid")
    default = get_method("gnn").build(LAYOUT, FAST)
    assert (default.config.margin, default.config.fusion) == (0.5, "early")  # resolved before fit
    default.fit(LAYOUT, *splits, FitOptions(progress=False))
    assert (default.config.margin, default.config.fusion) == (0.5, "early")
    chosen = GNNRanker.for_collection(LAYOUT, **FAST, margin=0.1)
    assert (chosen.config.margin, chosen.config.fusion) == (0.1, "early")
    whole = GNNRanker(GNNConfig(**FAST))  # a whole config is used as it is: the class defaults
    assert (whole.config.margin, whole.config.fusion) == (0.1, "intermediate")
    assert not hasattr(whole, "overrides")  # a ranker holds its settings, and nothing beside them
    assert isinstance(settings_module.SETTINGS, MethodSettings)
    default.save(tmp_path / "model")
    monkeypatch.setitem(settings_module.COLLECTION_DEFAULTS, LAYOUT.name, {})
    loaded = GNNRanker.load(tmp_path / "model")  # the saved settings, whatever today's table says
    assert (loaded.config.margin, loaded.config.fusion) == (0.5, "early")


def test_only_the_xla_random_search_starts_from_the_heuristic_and_gives_way_to_the_persons_settings():
    """heuristic_prior=3 and average_epochs=20 are layout:xla:random's defaults alone (docs/defaults.md);
    a --param wins, a person's engineered_features=false makes the prior give way instead of a refusal
    while the average stays, and an error that is the person's own is still refused, in their terms."""
    from competition.collections import get_collection
    from solutions.methods.gnn.settings import SETTINGS

    def resolve(name: str, **params: object) -> GNNConfig:
        return SETTINGS.resolve(get_collection(name), params)

    random_search = resolve("layout:xla:random")
    assert (random_search.heuristic_prior, random_search.average_epochs) == (3.0, 20.0)
    for name in ("tile:xla", "layout:xla:default", "layout:nlp:default", "layout:nlp:random"):
        other = resolve(name)
        assert (other.heuristic_prior, other.average_epochs) == (0.0, 0.0)
    assert resolve("layout:xla:random", heuristic_prior=0).heuristic_prior == 0.0
    assert resolve("layout:xla:random", heuristic_prior=10).heuristic_prior == 10.0
    assert resolve("layout:xla:random", average_epochs=0).average_epochs == 0.0
    plain = resolve("layout:xla:random", engineered_features=False)
    assert (plain.engineered_features, plain.heuristic_prior, plain.average_epochs) == (False, 0.0, 20.0)
    former = resolve("layout:xla:random", **VARIANTS["gnn-former"][1])
    assert (former.engineered_features, former.heuristic_prior, former.fusion, former.average_epochs) \
        == (False, 0.0, "early", 0.0)
    with pytest.raises(SettingError, match="add engineered_features=true") as refused:
        resolve("layout:xla:random", engineered_features=False, heuristic_prior=1)
    assert "heuristic_prior=1" in str(refused.value) and "3.0" not in str(refused.value)


# -- model selection: the cross-validation fallback ---------------------------------------------------


def test_tile_with_too_few_informative_valid_kernels_cross_validates_the_epoch(tiny_competition):
    """The tiny competition's tile valid split has 3 kernels (fewer than 5 informative): the gnn picks
    its epoch by 4-fold cross-validation over the train kernels, keeps that epoch of a run on all of
    them, and the report says so."""
    from test_gnn import TILE

    from solutions.methods.selection import CROSS_VALIDATION, CV_FOLDS

    public = tiny_competition / "public"
    ranker = GNNRanker(**{**FAST, "tile_epochs": 4, "eval_every": 1})
    ranker.fit(TILE, SplitSource(public, TILE, "train"), SplitSource(public, TILE, "valid"),
               FitOptions(progress=False))
    selection = ranker.summary()["selection"]
    assert selection["mode"] == CROSS_VALIDATION and selection["cv_folds"] == CV_FOLDS
    assert selection["note"] == ("only 2 of the 3 valid kernels have 6 or more configs (a kernel with "
                                 "fewer scores about the same whatever the model), fewer than the 5 model "
                                 "selection needs, so the number of rounds or epochs was chosen by 4-fold "
                                 "cross-validation over the train kernels")
    assert 1 <= selection["cv_best_epoch"] <= 4 and selection["cv_score"] is not None
    assert ranker.result.best_epoch == selection["cv_best_epoch"]
    assert ranker.result.stopped in ("selected epoch", "epochs") and len(ranker.result.history) == 1
    # layout keeps its valid split whatever its size
    layout = GNNRanker(**FAST)
    layout.fit(LAYOUT, SplitSource(public, LAYOUT, "train"), SplitSource(public, LAYOUT, "valid"),
               FitOptions(progress=False))
    assert layout.summary()["selection"]["mode"] == "valid"


def test_cross_validation_folds_and_the_final_run_share_one_time_budget(tiny_competition, monkeypatch):
    """--time-budget bounds the whole fit's training: each run gets what the runs before it left."""
    from test_gnn import TILE

    from solutions.methods.gnn import ranker as ranker_module

    budgets = []
    real_train = ranker_module.train

    def recording_train(*args, time_budget_s=None, **kwargs):
        budgets.append(time_budget_s)
        return real_train(*args, time_budget_s=time_budget_s, **kwargs)

    monkeypatch.setattr(ranker_module, "train", recording_train)
    public = tiny_competition / "public"
    ranker = GNNRanker(**FAST)
    ranker.fit(TILE, SplitSource(public, TILE, "train"), SplitSource(public, TILE, "valid"),
               FitOptions(progress=False, time_budget_s=1000.0))
    assert ranker.summary()["selection"]["mode"] == "cross-validation" and len(budgets) == 5
    assert budgets == sorted(budgets, reverse=True) and budgets[0] <= 1000.0 and budgets[-1] < budgets[0]
