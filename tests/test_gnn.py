"""solutions.methods.gnn and features.log_scale: shapes, losses, preprocessing, and short fits on the tiny
competition."""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
import torch
from graph_builders import example_graph
from hypothesis import given, settings
from hypothesis import strategies as st

from competition.collections import COLLECTION_BY_NAME
from competition.data.graphs import LayoutGraph, TileGraph, iter_split
from solutions.features.log_scale import scale_node_features, scale_tile_config_features, signed_log1p
from solutions.methods.base import FitOptions, SplitSource
from solutions.methods.gnn import GNNRanker
from solutions.methods.gnn.config_store import ConfigStore, most_common_rows
from solutions.methods.gnn.data import (
    config_vector_width,
    layout_example,
    load_examples,
    make_example,
    tile_batch,
    tile_example,
)
from solutions.methods.gnn.model import LayoutRanker, TileRanker, output_slot_features
from solutions.methods.gnn.ranker import FORMAT_VERSION
from solutions.methods.gnn.settings import GNNConfig
from solutions.methods.gnn.train import pairwise_hinge_loss, predict_layout, train
from solutions.pruning import ConfigurableOnly, KHopToConsumers, MergeDroppedRuns, OneHop
from solutions.settings.schema import SettingError
from solutions.store.saved import SavedModelError

FAST = {"layout_epochs": 2, "tile_epochs": 2, "hidden": 16, "layers": 2, "layout_valid_configs": 16}
ONEHOP = OneHop()  # the default pruning (GNNConfig().pruning)
TILE, LAYOUT = COLLECTION_BY_NAME["tile:xla"], COLLECTION_BY_NAME["layout:xla:random"]


# -- hand-made graphs --------------------------------------------------------------------------------


def layout_graph(num_configs: int = 6, seed: int = 0, duplicates: bool = True) -> LayoutGraph:
    """The pruning module's 8-node example with random configs on its 2 configurable nodes."""
    rng = np.random.default_rng(seed)
    graph = example_graph()
    feat = np.zeros((graph.num_nodes, 140), np.float32)
    feat[:, 21:24] = rng.integers(1, 300, size=(graph.num_nodes, 3))  # shape dimensions, rank 3
    feat[:, 134:137] = [2, 1, 0]  # default layout minor_to_major
    configs = np.full((num_configs, 2, 18), -1, np.float32)
    configs[:, :, :3] = np.stack([rng.permutation(3)
                                  for _ in range(2 * num_configs)]).reshape(num_configs, 2, 3)
    configs[:, :, 6:9] = np.stack([rng.permutation(3)
                                   for _ in range(2 * num_configs)]).reshape(num_configs, 2, 3)
    runtime = rng.integers(1000, 2000, size=num_configs)
    if duplicates:
        configs[1], runtime[1] = configs[0], runtime[0] + 7  # config 1 repeats config 0, measured slower
    return LayoutGraph(feat, graph.node_opcode, graph.edge_index, runtime.astype(np.int64), configs,
                       graph.node_config_ids, graph.node_splits)


def tile_graph(num_nodes: int = 5, num_configs: int = 7, seed: int = 0) -> TileGraph:
    rng = np.random.default_rng(seed)
    edges = np.array([[i, i - 1] for i in range(1, num_nodes)], np.int64).reshape(-1, 2)
    runtime = rng.integers(100, 200, size=num_configs).astype(np.int64)
    return TileGraph(
        rng.random((num_nodes, 140), dtype=np.float32) * 1e6,
        rng.integers(1, 120, num_nodes).astype(np.uint8), edges,
        runtime, rng.integers(0, 64, (num_configs, 24)).astype(np.float32),
        np.full(num_configs, 150, np.int64),
    )


# -- features ----------------------------------------------------------------------------------------


def test_scaling_is_monotone_and_signed():
    x = np.array([-1e9, -5.0, -1.0, 0.0, 0.5, 1.0, 1e3, 1e8, 3e9])
    y = signed_log1p(x)
    assert y.dtype == np.float32 and np.all(np.diff(y) > 0) and y[3] == 0.0
    np.testing.assert_allclose(signed_log1p(-x), -y)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: scale_node_features(np.zeros((3, 139))), r"expected \(n, 140\)"),
    (lambda: scale_node_features(np.zeros(140)), r"expected \(n, 140\)"),
    (lambda: scale_tile_config_features(np.zeros((3, 18))), r"expected \(c, 24\)"),
])
def test_scaling_refuses_wrong_shapes(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# -- preprocessing -----------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**16), c=st.integers(1, 5), nc=st.integers(1, 4))
def test_packed_and_released_configs_decode_to_the_same_digits(seed, c, nc):
    configs = np.random.default_rng(seed).integers(-1, 6, size=(c, nc, 18)).astype(np.float32)
    packed, plain = (ConfigStore.from_configs(configs, packed=True),
                     ConfigStore.from_configs(configs, packed=False))
    assert packed.nbytes * 6 == plain.nbytes  # 3 int32 instead of 18 float32 per row
    index = torch.arange(c).flip(0)
    assert torch.equal(packed.digits(index), plain.digits(index))
    assert torch.equal(packed.digits(), torch.from_numpy(configs.astype(np.int64) + 1))


def test_most_common_rows_picks_the_mode_per_node():
    configs = np.full((4, 2, 18), -1, np.float32)
    configs[:3, 0, 0] = 1  # node 0: [1, -1, ...] three times, [-1, ...] once
    configs[0, 1, 0], configs[1, 1, 0] = 2, 3  # node 1: rows [2], [3], [-1], [-1] -> the unset row
    rows = most_common_rows(configs)
    assert rows.shape == (2, 18) and rows[0, 0] == 2 and rows[1, 0] == 0 and (rows[:, 1:] == 0).all()


def test_layout_example_prunes_and_deduplicates_with_the_min_runtime():
    graph = layout_graph()
    full = layout_example("g", graph, transform=None, compress=False)
    small = layout_example("g", graph, transform=ONEHOP, compress=True)
    assert full.num_nodes == 8 and small.num_nodes == 7  # OneHop drops the negate node
    assert full.num_configs == 6 and small.num_configs == 5  # configs 0 and 1 are one distinct config
    assert small.runtime[0] == min(graph.config_runtime[0], graph.config_runtime[1])
    assert small.expand(np.arange(5.0)).tolist() == [0, 0, 1, 2, 3, 4]
    assert full.expand(np.arange(6.0)).tolist() == list(range(6))
    # the configurable nodes are the same nodes after renumbering
    kept = small.pruning
    assert (kept.nodes_before, kept.nodes_after, kept.edges_before, kept.edges_after) == (8, 7, 9, 7)
    torch.testing.assert_close(full.inputs.node_feat[full.inputs.config_node_ids],
                               small.inputs.node_feat[small.inputs.config_node_ids])


def test_unlabeled_graphs_have_no_runtime():
    graph = layout_graph()
    graph.config_runtime[:] = 0  # a test file
    example = layout_example("g", graph, transform=ONEHOP, compress=True)
    assert example.runtime is None and example.num_configs == 5
    tile = tile_graph()
    tile.config_runtime[:] = 0
    assert tile_example("t", tile, compress=True).runtime is None


def test_tile_batch_offsets_edges_and_groups_configs():
    examples = [tile_example(f"t{i}", tile_graph(num_nodes=n, seed=i), compress=False)
                for i, n in enumerate((3, 5))]
    batch = tile_batch(examples, [torch.tensor([0, 2]), torch.tensor([1, 3, 4])])
    assert batch.ptr.tolist() == [0, 3, 8] and batch.node_feat.shape == (8, 140)
    assert batch.edge_index[:, 2:].min() >= 3  # the second graph's edges point into its own nodes
    assert batch.config_graph.tolist() == [0, 0, 1, 1, 1]
    assert batch.config_feat.shape == (5, config_vector_width(TILE.task))


# -- model shapes ------------------------------------------------------------------------------------


def test_layout_ranker_shapes_and_row_dedup_changes_nothing():
    torch.manual_seed(0)
    example = layout_example("g", layout_graph(num_configs=9), transform=ONEHOP, compress=False)
    model = LayoutRanker.from_settings(GNNConfig(hidden=8, layers=2, fusion="early", config_attention=False,
                                                 engineered_features=False)).eval()
    digits = example.configs.digits()  # (9, nc=2, 18)
    state = model.encode_nodes(example.inputs)
    assert state.shape == (example.num_nodes, 8)
    assert model.encode_configs(example.inputs, state, digits).shape == (9, 2, 8)
    with torch.no_grad():
        scores = model(example.inputs, digits)
        assert scores.shape == (9,)
        torch.testing.assert_close(scores, model(example.inputs, digits, dedup_rows=False))
        # a config's score does not depend on the other configs of the batch
        torch.testing.assert_close(scores[3:4], model(example.inputs, digits[3:4]))
    # chunked prediction equals one pass
    one_pass = predict_layout(model, example, device=torch.device("cpu"))
    chunked = predict_layout(model, example, device=torch.device("cpu"), batch_nodes=1)
    np.testing.assert_allclose(one_pass, chunked, rtol=1e-5, atol=1e-6)


def test_output_slot_features_look_up_sizes_and_defaults():
    feat = torch.zeros(1, 140)
    feat[0, 21:24] = torch.log1p(torch.tensor([4.0, 128.0, 8.0]))  # shape (4, 128, 8)
    feat[0, 134:137] = torch.log1p(torch.tensor([2.0, 1.0, 0.0]))  # default minor_to_major {2, 1, 0}
    digits = torch.zeros(1, 18, dtype=torch.int64)
    digits[0, :3] = torch.tensor([2, 1, 0]) + 1  # output layout {2, 1, 0}, as digits (value + 1)
    out = output_slot_features(feat, digits)
    assert out.shape == (1, 12)
    torch.testing.assert_close(out[0, :3], torch.log1p(torch.tensor([8.0, 128.0, 4.0])))
    assert out[0, 3:6].tolist() == [0.0, 0.0, 0.0]  # unset slots name no dimension
    assert out[0, 6:].tolist() == [1.0] * 6  # the default layout, and unset where the default is unset
    digits[0, :3] = torch.tensor([0, 1, 2]) + 1  # {0, 1, 2}: only the middle slot agrees with the default
    out = output_slot_features(feat, digits)
    torch.testing.assert_close(out[0, :3], torch.log1p(torch.tensor([4.0, 128.0, 8.0])))
    assert out[0, 6:9].tolist() == [0.0, 1.0, 0.0]


def test_tile_ranker_shapes():
    examples = [tile_example(f"t{i}", tile_graph(num_nodes=n, seed=i), compress=False)
                for i, n in enumerate((3, 6))]
    batch = tile_batch(examples, [torch.arange(7), torch.arange(4)])
    model = TileRanker.from_settings(GNNConfig(hidden=8, layers=2))
    assert model.encode_graphs(batch.node_feat, batch.node_opcode, batch.edge_index,
                               batch.ptr).shape == (2, 8)
    assert model(batch).shape == (11,)


# -- losses ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("scores", "runtimes", "expected"), [
    ([0.0, 1.0, 2.0], [1, 2, 3], 0.0),  # right order, gaps >= margin: no cost
    ([0.0, 0.05, 2.0], [1, 2, 3], (0.05 + 0 + 0) / 3),  # right order, one gap below the margin
    ([2.0, 1.0, 0.0], [1, 2, 3], (1.1 + 2.1 + 1.1) / 3),  # reversed
    ([5.0, 0.0], [7, 7], 0.0),  # equal runtimes form no pair
    ([1.0, 0.0, 3.0], [2, 1, 2], (0.0 + 0.0) / 2),  # the tie between configs 0 and 2 is no pair
])
def test_pairwise_hinge_on_hand_made_cases(scores, runtimes, expected):
    loss = pairwise_hinge_loss(torch.tensor(scores), torch.tensor(runtimes, dtype=torch.float64), margin=0.1)
    assert loss.item() == pytest.approx(expected)


def test_pairs_only_form_within_a_graph():
    scores, runtimes = torch.tensor([0.0, 1.0, 5.0, 0.0]), torch.tensor([1.0, 2.0, 1.0, 2.0])
    groups = torch.tensor([0, 0, 1, 1])
    # graph 0 is right (no cost), graph 1 backwards by 5: (0 + 5.1) / 2 pairs
    assert pairwise_hinge_loss(scores, runtimes, groups).item() == pytest.approx(2.55)
    # without groups, the cross-graph pairs count too
    assert pairwise_hinge_loss(scores, runtimes).item() != pytest.approx(2.55)


def test_losses_have_gradients_even_without_pairs():
    scores = torch.zeros(3, requires_grad=True)
    loss = pairwise_hinge_loss(scores, torch.ones(3))
    loss.backward()
    assert loss.item() == 0.0 and scores.grad is not None


# -- settings ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("params", "error", "message"), [
    ({"loss": "listmle"}, SettingError, "setting loss: --method gnn has no such setting"),
    ({"hidden": 0}, SettingError, "hidden must be an integer >= 1"),
    ({"layout_configs_per_graph": 1}, SettingError, "layout_configs_per_graph must be an integer >= 2"),
    ({"configs_per_graph": 8}, SettingError, "did you mean (layout|tile)_configs_per_graph\\?"),
    ({"nonsense": 3}, SettingError, "setting nonsense: --method gnn has no such setting"),
    ({"hiden": 3}, SettingError, "did you mean hidden?"),
])
def test_bad_settings(params, error, message):
    with pytest.raises(error, match=message):
        GNNRanker(**params)


# -- fitting on the tiny competition -----------------------------------------------------------------


def fit(tiny_competition, collection, params: dict | None = None, **options) -> GNNRanker:
    public = tiny_competition / "public"
    ranker = GNNRanker.for_collection(collection, **FAST, **(params or {}))  # as tpugraphs solve builds it
    ranker.fit(collection, SplitSource(public, collection, "train"), SplitSource(public, collection, "valid"),
               FitOptions(progress=False, **options))
    return ranker


@pytest.mark.parametrize("collection", [TILE, LAYOUT], ids=lambda c: c.name)
def test_fit_predict_save_load(tiny_competition, tmp_path, collection):
    ranker = fit(tiny_competition, collection)
    assert ranker.result.history[0]["epoch"] == 0 and ranker.result.steps > 0
    graphs = list(iter_split(tiny_competition / "public", collection, "test"))
    predictions = [ranker.predict(collection, graph) for _, graph in graphs]
    for (_, graph), scores in zip(graphs, predictions, strict=True):
        assert scores.shape == (graph.num_configs,) and np.isfinite(scores).all()
    ranker.save(tmp_path / "model")
    loaded = GNNRanker.load(tmp_path / "model")
    assert loaded.config == ranker.config and loaded.transform == ranker.transform
    for (_, graph), scores in zip(graphs, predictions, strict=True):
        np.testing.assert_array_equal(loaded.predict(collection, graph), scores)


def test_same_seed_same_model(tiny_competition):
    graph = next(iter_split(tiny_competition / "public", LAYOUT, "test"))[1]
    first, second = fit(tiny_competition, LAYOUT, seed=3), fit(tiny_competition, LAYOUT, seed=3)
    np.testing.assert_array_equal(first.predict(LAYOUT, graph), second.predict(LAYOUT, graph))


@pytest.mark.parametrize(("prune", "compress"), [(False, False), (True, False), (False, True)])
def test_pruned_and_unpruned_pipelines_rank_every_config(tiny_competition, prune, compress):
    reference = fit(tiny_competition, LAYOUT)  # prune and compress on
    other = fit(tiny_competition, LAYOUT, {} if prune else {"pruning": "none"}, compress=compress)
    for _, graph in iter_split(tiny_competition / "public", LAYOUT, "test"):
        a, b = reference.predict(LAYOUT, graph), other.predict(LAYOUT, graph)
        assert a.shape == b.shape == (graph.num_configs,) and np.isfinite(b).all()
    summary = reference.pruning_summary
    assert (summary["nodes_after"] < summary["nodes_before"]
            and summary["edges_after"] < summary["edges_before"])
    assert (other.pruning_summary is not None) == prune


def test_a_layout_model_refuses_tile_graphs(tiny_competition):
    ranker = fit(tiny_competition, LAYOUT)
    with pytest.raises(ValueError, match="trained on layout:xla:random"):
        ranker.predict(TILE, tile_graph())


def test_load_names_what_is_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="no saved gnn model"):
        GNNRanker.load(tmp_path)


def test_cuda_is_refused_clearly_when_absent(tiny_competition):
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(ValueError, match="no CUDA GPU"):
        fit(tiny_competition, TILE, device="cuda")



# -- the training loop's stopping rules --------------------------------------------------------------


def hand_made_layout_examples(count: int) -> list:
    return [make_example(f"g{i}", layout_graph(num_configs=12, seed=i), transform=ONEHOP, compress=True,
                         engineered=True)
            for i in range(count)]


def test_training_stops_on_the_time_budget():
    model = LayoutRanker.from_settings(GNNConfig(hidden=8, layers=1, fusion="early", config_attention=False))
    result = train(model, hand_made_layout_examples(3), hand_made_layout_examples(1),
                   GNNConfig(layout_epochs=5), seed=0, device=torch.device("cpu"), progress=False,
                   time_budget_s=1e-9)
    assert result.stopped == "time budget" and result.steps == 1
    assert [h["epoch"] for h in result.history] == [0, 1]  # still validated once before stopping


def test_training_stops_on_patience_and_keeps_the_best_weights():
    model = LayoutRanker.from_settings(GNNConfig(hidden=8, layers=1, fusion="early", config_attention=False))
    config = GNNConfig(layout_epochs=10, lr=0.0, eval_every=1, patience=2)  # lr 0: nothing ever improves
    result = train(model, hand_made_layout_examples(3), hand_made_layout_examples(2), config,
                   seed=0, device=torch.device("cpu"), progress=False)
    assert result.stopped == "patience" and result.best_epoch == 0 and len(result.history) == 3


def test_without_validation_graphs_the_last_weights_are_kept():
    model = LayoutRanker.from_settings(GNNConfig(hidden=8, layers=1, fusion="early", config_attention=False))
    result = train(model, hand_made_layout_examples(2), [],
                   GNNConfig(fusion="early", layout_epochs=3, layout_min_epoch_steps=1), seed=0,
                   device=torch.device("cpu"), progress=False)
    assert result.best_score is None and result.best_epoch == 3 and result.steps == 6


def _small_model() -> LayoutRanker:
    torch.manual_seed(0)
    return LayoutRanker.from_settings(GNNConfig(hidden=8, layers=1, fusion="early", config_attention=False))


def _weights_apart(a: dict, b: dict) -> float:
    return max(float((a[k].double() - b[k].double()).abs().max()) for k in a if a[k].is_floating_point())


def test_a_moving_average_shorter_than_a_step_keeps_the_weights_themselves():
    examples = hand_made_layout_examples(2)
    config = GNNConfig(layout_epochs=3, layout_min_epoch_steps=1)
    plain = train(_small_model(), examples, [], config, seed=0, device=torch.device("cpu"), progress=False)
    short = train(_small_model(), examples, [], replace(config, average_epochs=0.01), seed=0,
                  device=torch.device("cpu"), progress=False)
    assert _weights_apart(plain.best_state, short.best_state) == 0.0


@pytest.mark.parametrize("average_epochs", [1.0, 1e9])
def test_the_moving_average_follows_its_rule_step_by_step(monkeypatch, average_epochs):
    """Against a float64 reference from the weights after every step: the average starts from the
    first step's weights and each later step moves it 1 / horizon of the way, so an endless horizon
    keeps the first step's weights."""
    from solutions.methods.gnn import train as train_module

    steps: list[dict] = []
    real_update = train_module.ParameterUpdate.update_average

    def update_and_record(self):
        # the weights the average moves toward (its module's names are the model's)
        names = [k for k, _ in self.averaged.module.named_parameters()]
        weights = zip(names, self.parameters.params, strict=True)
        steps.append({k: p.detach().double().clone() for k, p in weights})
        real_update(self)

    monkeypatch.setattr(train_module.ParameterUpdate, "update_average", update_and_record)
    config = GNNConfig(layout_epochs=4, layout_min_epoch_steps=2, lr=0.05, average_epochs=average_epochs,
                       layout_graphs_per_step=1)
    result = train(_small_model(), hand_made_layout_examples(1), [], config, seed=0,
                   device=torch.device("cpu"), progress=False)
    assert len(steps) == result.steps == 8
    share = 1 / (average_epochs * 2)  # 2 steps an epoch
    expected = dict(steps[0])
    for weights in steps[1:]:
        expected = {k: (1 - share) * expected[k] + share * weights[k] for k in expected}
    assert _weights_apart(expected, result.best_state) < 1e-6
    assert _weights_apart(result.best_state, steps[-1]) > 1e-4  # not simply the last weights
    if average_epochs > 100:
        assert _weights_apart(steps[0], result.best_state) < 1e-6


@pytest.mark.parametrize("average_epochs", [0.0, 2.0])
def test_the_kept_weights_score_what_selection_saw(average_epochs):
    from solutions.methods.gnn.train import score_examples

    config = GNNConfig(layout_epochs=6, eval_every=1, lr=0.05, layout_valid_configs=1000,
                       average_epochs=average_epochs)
    valid = hand_made_layout_examples(3)[1:]
    result = train(_small_model(), hand_made_layout_examples(2), valid, config, seed=0,
                   device=torch.device("cpu"), progress=False)
    model = _small_model()
    model.load_state_dict(result.best_state)
    score = score_examples(lambda e: predict_layout(model, e, device=torch.device("cpu")), valid, LAYOUT.task)
    assert score == pytest.approx(result.best_score)
    assert [h["valid"] for h in result.history if h["epoch"] == result.best_epoch] == [result.best_score]


@pytest.mark.parametrize("graphs, min_epoch_steps, steps_per_epoch", [
    (2, 1, 2),   # one pass over the graphs
    (2, 8, 8),   # few graphs: four passes within each epoch
    (3, 8, 8),   # passes do not divide the steps: the last one is cut short
    (9, 8, 9),   # more graphs than the minimum: one pass, as before
    (1, 5, 5),   # one graph (one real graph's configs, bench_real's within protocol)
])
def test_an_epoch_takes_at_least_min_epoch_steps_passing_over_few_graphs_evenly(
        monkeypatch, graphs, min_epoch_steps, steps_per_epoch):
    from solutions.methods.gnn import train as train_module

    seen: list[str] = []
    real_step = train_module._layout_step

    def recording_step(model, chosen, *args):
        seen.append(chosen[0][1].row_id)
        return real_step(model, chosen, *args)

    monkeypatch.setattr(train_module, "_layout_step", recording_step)
    model = LayoutRanker.from_settings(GNNConfig(hidden=8, layers=1, fusion="early", config_attention=False))
    epochs = 3
    result = train(model, hand_made_layout_examples(graphs), [],
                   GNNConfig(fusion="early", layout_epochs=epochs, layout_min_epoch_steps=min_epoch_steps),
                   seed=0, device=torch.device("cpu"), progress=False)
    assert result.steps == len(seen) == epochs * steps_per_epoch
    for epoch in range(epochs):
        counts = Counter(seen[epoch * steps_per_epoch:(epoch + 1) * steps_per_epoch])
        assert len(counts) == graphs  # every graph in every epoch
        assert max(counts.values()) - min(counts.values()) <= 1  # as often as the others, give or take one


def test_nothing_to_learn_is_an_error():
    example = make_example("flat", layout_graph(), transform=ONEHOP, compress=False, engineered=True)
    example.runtime[:] = 5.0  # all runtimes equal: no pair to rank
    with pytest.raises(ValueError, match="nothing to learn from"):
        train(LayoutRanker.from_settings(GNNConfig(hidden=8, layers=1, fusion="early",
                                                   config_attention=False)), [example], [], GNNConfig(),
              seed=0, device=torch.device("cpu"), progress=False)


# -- reading layout graphs through the processed cache (FitOptions.cache_dir) --------------------------


def test_cached_example_matches_the_in_memory_one(tmp_path):
    from competition.data.graphs import save_graph
    from competition.data.processed_cache import build_cache
    from solutions.methods.gnn.data import cached_layout_example

    graph = layout_graph(num_configs=40, seed=5)
    graph.node_config_feat[7], graph.config_runtime[7] = graph.node_config_feat[3], 1  # a faster duplicate
    save_graph(graph, tmp_path / "g.npz")
    cached = build_cache(tmp_path / "g.npz", tmp_path / "cache")
    for prune, compress in [(True, True), (False, False)]:
        want = layout_example("g", graph, transform=ONEHOP if prune else None, compress=compress)
        got = cached_layout_example("g", cached, transform=ONEHOP if prune else None, compress=compress)
        assert got.num_configs == want.num_configs and got.pruning == want.pruning
        for name in ("node_feat", "node_opcode", "edge_index", "config_node_ids", "common_rows"):
            torch.testing.assert_close(getattr(got.inputs, name), getattr(want.inputs, name), rtol=0, atol=0)
        torch.testing.assert_close(got.runtime, want.runtime, rtol=0, atol=0)
        np.testing.assert_array_equal(got.expand(np.arange(got.num_configs)),
                                      want.expand(np.arange(want.num_configs)))
        index = torch.tensor([4, 0, 4, got.num_configs - 1])
        torch.testing.assert_close(got.configs.digits(index), want.configs.digits(index), rtol=0, atol=0)
        torch.testing.assert_close(got.configs.subset(index).digits(), want.configs.digits(index),
                                   rtol=0, atol=0)
        assert cached._config_map is None  # every read closes the memory map again


def test_fit_through_the_cache_gives_the_same_model(tiny_competition, tmp_path):
    graphs = list(iter_split(tiny_competition / "public", LAYOUT, "test"))
    plain, cached = fit(tiny_competition, LAYOUT), fit(tiny_competition, LAYOUT, cache_dir=tmp_path / "cache")
    assert cached.result.history == [{**h, "seconds": c["seconds"]} for h, c in
                                     zip(plain.result.history, cached.result.history, strict=True)]
    for _, graph in graphs:
        np.testing.assert_array_equal(cached.predict(LAYOUT, graph), plain.predict(LAYOUT, graph))
    folder = tmp_path / "cache" / LAYOUT.subpath
    assert sorted(p.name for p in folder.iterdir()) == ["train", "valid"]  # test graphs come from the runner


def test_solve_reuses_the_cache_and_writes_the_same_submission(tiny_competition, tmp_path):
    from competition.cli import main
    from competition.data.processed_cache import MANIFEST_NAME

    public, quick = tiny_competition / "public", ["--param", "layout_epochs=2", "--param", "hidden=16",
                                                 "--param", "layers=2", "--param", "layout_valid_configs=16"]
    common = ["solve", "--data", str(public), "--collection", LAYOUT.name, "--quiet", *quick]
    assert main([*common, "--out", str(tmp_path / "plain.csv")]) == 0
    cache = tmp_path / "cache"
    assert main([*common, "--out", str(tmp_path / "cached.csv"), "--cache-dir", str(cache)]) == 0
    manifests = sorted((cache / LAYOUT.subpath).glob(f"*/*/{MANIFEST_NAME}"))
    # every split is read through the cache: train and valid in fit, valid and test in prediction
    assert manifests and {m.parent.parent.name for m in manifests} == {"train", "valid", "test"}
    built = {m: m.stat().st_mtime_ns for m in manifests}
    assert main([*common, "--out", str(tmp_path / "again.csv"), "--cache-dir", str(cache)]) == 0
    assert {m: m.stat().st_mtime_ns for m in manifests} == built  # reused, not rebuilt
    plain = (tmp_path / "plain.csv").read_bytes()
    assert (tmp_path / "cached.csv").read_bytes() == plain == (tmp_path / "again.csv").read_bytes()


# -- pruning is a setting, and a saved model remembers it ----------------------------------------------


def layout_predictions(ranker: GNNRanker, graphs: list, collection=LAYOUT) -> list[np.ndarray]:
    return [ranker.predict(collection, graph) for _, graph in graphs]


def test_pruning_setting_is_canonical_and_checked():
    assert GNNConfig().pruning == "onehop" and GNNRanker().transform == OneHop()
    assert GNNConfig(pruning="khop:3:0").pruning == "khop:3"
    assert GNNConfig(pruning="merged:configurable").pruning == "merged"
    assert GNNRanker(pruning="none").transform is None
    assert GNNRanker(pruning="khop:2").transform == KHopToConsumers(2)
    with pytest.raises(SettingError,
                       match=r"setting pruning=twohop: unknown step 'twohop'; pruning must be a "):
        GNNRanker(pruning="twohop")


def test_make_example_honours_transform(tmp_path):
    from competition.data.graphs import save_graph
    from competition.data.processed_cache import build_cache

    graph = layout_graph(num_configs=12, seed=2)
    save_graph(graph, tmp_path / "g.npz")
    cached = build_cache(tmp_path / "g.npz", tmp_path / "cache").layout_view()
    for source in (graph, cached):
        for transform in (OneHop(), KHopToConsumers(2), ConfigurableOnly(), MergeDroppedRuns()):
            example = make_example("g", source, transform=transform, compress=True)
            want = transform.prune(graph)
            assert example.num_nodes == want.graph.num_nodes and example.pruning == want.stats
            assert example.inputs.edge_index.shape[1] == want.graph.num_edges
        unpruned = make_example("g", source, transform=None, compress=True)
        assert unpruned.num_nodes == graph.num_nodes and unpruned.pruning is None
    examples = load_examples([("a", graph), ("b", graph)], transform=ConfigurableOnly(), compress=False)
    assert [e.num_nodes for e in examples] == [2, 2]


def test_a_saved_model_records_its_pruning_once_and_predicts_with_it(tiny_competition, tmp_path):
    graphs = list(iter_split(tiny_competition / "public", LAYOUT, "test"))
    ranker = fit(tiny_competition, LAYOUT)  # trained with the default, onehop
    before = layout_predictions(ranker, graphs)
    ranker.save(tmp_path / "model")
    saved = json.loads((tmp_path / "model" / "gnn.json").read_text())
    assert saved["config"]["pruning"] == "onehop" and saved["format_version"] == FORMAT_VERSION
    assert "prune" not in saved and "pruning" not in saved  # one saved key: config.pruning
    loaded = GNNRanker.load(tmp_path / "model")
    assert loaded.config.pruning == "onehop" and loaded.transform == OneHop()
    for want, got in zip(before, layout_predictions(loaded, graphs), strict=True):
        np.testing.assert_array_equal(got, want)
    # what ignoring the saved pruning would have predicted: different
    loaded.config = replace(loaded.config, pruning="configurable")
    assert any(not np.array_equal(a, b)
               for a, b in zip(layout_predictions(loaded, graphs), before, strict=True))


@pytest.mark.parametrize(("params", "expected"), [
    ({"pruning": "khop:2+merged"}, "khop:2+merged"),
    ({"pruning": "none"}, "none"),  # what --no-prune gives
])
def test_save_load_round_trips_the_pruning(tiny_competition, tmp_path, params, expected):
    public = tiny_competition / "public"
    ranker = GNNRanker(**FAST, **params)
    ranker.fit(LAYOUT, SplitSource(public, LAYOUT, "train"), SplitSource(public, LAYOUT, "valid"),
               FitOptions(progress=False))
    report = ranker.summary()["pruning"]  # one report key: the name, and the totals when it pruned
    assert ranker.config.pruning == expected and report["name"] == expected
    assert ("nodes_before" in report) == (expected != "none")
    graphs = list(iter_split(public, LAYOUT, "test"))
    before = layout_predictions(ranker, graphs)
    ranker.save(tmp_path / "model")
    loaded = GNNRanker.load(tmp_path / "model")
    assert loaded.config.pruning == expected and loaded.config == ranker.config
    for want, got in zip(before, layout_predictions(loaded, graphs), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.fixture(scope="module")
def saved_layout_model(tiny_competition, tmp_path_factory):
    """A layout model saved once, with its test predictions; tests copy the folder before editing it."""
    folder = tmp_path_factory.mktemp("saved_gnn") / "model"
    ranker = fit(tiny_competition, LAYOUT, {"fusion": "early", "config_attention": False})
    ranker.save(folder)
    graphs = list(iter_split(tiny_competition / "public", LAYOUT, "test"))
    return folder, graphs, layout_predictions(ranker, graphs)


def edited_copy(folder, tmp_path, edit) -> tuple:
    import shutil

    copy = tmp_path / "edited"
    shutil.copytree(folder, copy)
    meta = json.loads((copy / "gnn.json").read_text())
    edit(meta)
    (copy / "gnn.json").write_text(json.dumps(meta))
    return copy, copy / "gnn.json"


RETRAIN = ("retrain it: tpugraphs solve --method gnn --collection layout:xla:random --data PUBLIC_DIR "
           "--out SUB.csv")


@pytest.mark.parametrize(("edit", "message"), [
    (lambda meta: meta["config"].update(pruning="fourhop"),
     r"gnn\.json: setting pruning=fourhop: unknown step 'fourhop'.*; retrain it: tpugraphs solve"),
    (lambda meta: meta["config"].update(pruning="khop:x"), r"pruning=khop:x.*must be an integer >= 0"),
    (lambda meta: meta["config"].update(pruning=3), r"setting pruning=3: not text"),
    (lambda meta: meta["config"].pop("pruning"), r"gnn\.json: config lacks the setting pruning; " + RETRAIN),
    (lambda meta: meta["config"].update(tied_links=True), r"gnn\.json: .*tied_links.*; " + RETRAIN),
    (lambda meta: meta.update(format_version=4),
     r"gnn\.json: a gnn model of format version 4; this kit reads format \d+ only; " + RETRAIN),
    (lambda meta: meta.update(format_version=None), r"a gnn model of format version None"),
    (lambda meta: meta["engineered_columns"].update(version=3),
     r"gnn\.json: trained on engineered layout features of version 3 \(the same columns\); this kit "
     r"computes version \d+; " + RETRAIN),
])
def test_a_model_of_another_format_or_feature_version_is_refused_in_one_line(saved_layout_model, tmp_path,
                                                                              edit, message):
    folder, _, _ = saved_layout_model
    copy, meta_path = edited_copy(folder, tmp_path, edit)
    with pytest.raises(SavedModelError, match=message) as caught:
        GNNRanker.load(copy)
    assert str(meta_path) in str(caught.value) and "\n" not in str(caught.value)


def test_predict_only_refuses_an_unknown_pruning_with_a_usage_error(tiny_competition, tmp_path, capsys):
    from competition.cli import main

    public = tiny_competition / "public"
    quick = ["--param", "layout_epochs=2", "--param", "hidden=16", "--param", "layers=2", "--param",
             "layout_valid_configs=16"]
    common = ["solve", "--data", str(public), "--collection", LAYOUT.name, "--quiet", "--out",
              str(tmp_path / "s.csv")]
    assert main([*common, *quick, "--param", "pruning=khop:2"]) == 0
    meta_path = tmp_path / "s.models" / "layout_xla_random" / "gnn.json"
    assert json.loads(meta_path.read_text())["config"]["pruning"] == "khop:2"
    first = (tmp_path / "s.csv").read_bytes()
    assert main([*common, "--predict-only"]) == 0 and (tmp_path / "s.csv").read_bytes() == first
    meta_path.write_text(meta_path.read_text().replace('"khop:2"', '"khop:2:x"'))
    capsys.readouterr()
    assert main([*common, "--predict-only"]) == 2
    err = capsys.readouterr().err
    assert f"{meta_path}: setting pruning=khop:2:x" in err and "retrain it: tpugraphs solve" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(("flags", "message"), [
    (["--param", "pruning=twohop"],
     "setting pruning=twohop: unknown step 'twohop'; pruning must be a pruning name"),
    (["--param", "pruning=null"], "setting pruning=null: unknown step 'null'"),
    (["--no-prune", "--param", "pruning=onehop"],
     "--no-prune and --param pruning=onehop contradict each other"),
])
def test_solve_refuses_bad_pruning_before_training(tiny_competition, tmp_path, capsys, flags, message):
    from competition.cli import main

    out = tmp_path / "s.csv"
    assert main(["solve", "--data", str(tiny_competition / "public"), "--out", str(out), "--quiet",
                 *flags]) == 2
    assert message in capsys.readouterr().err and not out.exists()
    assert not (tmp_path / "s.models").exists()


def test_pruning_names_are_documented():
    from pathlib import Path

    from solutions.pruning import pruning_names
    from solutions.solve import command as commands

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    listed = commands.help_lists()  # solve --help's list, from the pruning registry
    for spelling in pruning_names():
        assert spelling in listed, spelling
        assert f"`{spelling}`" in readme, spelling


# --------------------------------------------------------------------------------------------------
# The lean layers and the flat update give the 1.0 numbers (issue 68: speed without a score change)


@pytest.mark.parametrize("shape", [(40, 16), (5, 40, 16), (2, 3, 40, 16)])
@pytest.mark.parametrize("root_weight", [True, False])
def test_mean_sage_is_pyg_sage_conv_to_the_bit(shape, root_weight):
    """The same initial weights from a seed, the same state_dict keys (1.0 models load), and the same
    bytes forward and backward, on one graph and on a batch of configs of it."""
    from torch_geometric.nn import SAGEConv

    from solutions.methods.gnn.data import Edges
    from solutions.methods.gnn.model import MeanSAGE

    torch.manual_seed(7)
    pyg = SAGEConv(16, 16, aggr="mean", root_weight=root_weight)
    torch.manual_seed(7)
    lean = MeanSAGE(16, root_weight=root_weight)
    assert list(pyg.state_dict()) == list(lean.state_dict())
    pairs = zip(pyg.state_dict().values(), lean.state_dict().values(), strict=True)
    assert all(torch.equal(a, b) for a, b in pairs)
    generator = torch.Generator().manual_seed(1)
    edges = torch.randint(0, 40, (2, 90), generator=generator)
    edges[:, :6] = 3  # repeated edges and a node with many in-neighbours; others have none
    counted = Edges.of(edges, 40)  # the in-degrees counted once, as a graph's layers read them
    x = torch.randn(*shape, generator=generator)
    outputs, grads = [], []
    for layer, call in ((pyg, lambda v: pyg(v, edges)), (lean, lambda v: lean(v, edges[0], edges[1])),
                        (lean, lambda v: lean(v, edges[0], edges[1], counted.producers))):
        layer.zero_grad()
        v = x.clone().requires_grad_()
        out = call(v)
        (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum().backward()
        outputs.append(out)
        grads.append([v.grad, *(p.grad for p in layer.parameters())])
    for output, grad in zip(outputs[1:], grads[1:], strict=True):
        assert torch.equal(outputs[0], output)
        assert all(torch.equal(a, b) for a, b in zip(grads[0], grad, strict=True))


def test_a_graph_s_edges_are_counted_once_and_again_for_a_copy_with_other_edges():
    example = hand_made_layout_examples(1)[0]
    inputs = example.inputs
    edges = inputs.edges()
    assert inputs.edges() is edges and inputs.config_edges() is inputs.config_edges()
    assert torch.equal(edges.producers, torch.bincount(inputs.edge_index[1], minlength=inputs.num_nodes)
                       .clamp(min=1).float())
    assert torch.equal(edges.consumers, torch.bincount(inputs.edge_index[0], minlength=inputs.num_nodes)
                       .clamp(min=1).float())
    fewer = replace(inputs, edge_index=inputs.edge_index[:, :-1], links=None)
    assert fewer.edges().index is fewer.edge_index
    assert float(fewer.edges().producers.sum()) <= float(edges.producers.sum())
    assert fewer.config_edges().index is fewer.config_links()


def test_a_state_dict_saved_with_pyg_layers_loads_into_the_lean_model():
    from benchmarks.bench_gnn_speed import as_1_0

    torch.manual_seed(0)
    model = LayoutRanker.from_settings(GNNConfig())
    saved = as_1_0(model).state_dict()  # built with SAGEConv, as 1.0 did
    fresh = LayoutRanker.from_settings(GNNConfig())
    fresh.load_state_dict(saved)  # strict: every key the same
    assert all(torch.equal(fresh.state_dict()[k], v) for k, v in saved.items())


def test_the_gnn_model_and_ranker_import_no_torch_geometric():
    import subprocess
    import sys

    code = ("import sys; from solutions.methods.gnn.ranker import GNNRanker; "
            "print(sorted(m for m in sys.modules if m.startswith('torch_geometric'))[:3])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def _reference_steps(model, losses, config, steps_per_epoch):
    """The 1.0 update: AdamW over the parameter tensors, clip_grad_norm_, AveragedModel."""
    from solutions.methods.gnn import train as train_module

    averaged = train_module._moving_average(model, config.average_epochs, steps_per_epoch)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: train_module._cosine(s, len(losses)))
    for loss in losses:
        optimizer.zero_grad(set_to_none=True)
        loss(model).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        if averaged is not None:
            averaged.update_parameters(model)
    return model, averaged


@pytest.mark.parametrize("flat", [True, False])
@pytest.mark.parametrize("average_epochs, scale", [
    (0.0, 1.0),     # gradients mostly under the clipping norm
    (0.0, 1e3),     # every step clipped
    (2.0, 1e3),     # clipped, with the moving average
])
def test_the_flat_update_gives_the_per_tensor_update_to_the_bit(average_epochs, scale, flat):
    from solutions.methods.gnn.train import ParameterUpdate

    config = GNNConfig(hidden=8, layers=1, lr=0.05, average_epochs=average_epochs)
    examples = hand_made_layout_examples(2)
    generator = torch.Generator().manual_seed(3)
    indices = [torch.randperm(examples[i % 2].num_configs, generator=generator)[:6] for i in range(9)]

    def loss_of(example, index):
        def loss(model):
            scores = model(example.inputs, example.configs.digits(index),
                           engineered=example.engineered_rows(index))
            return scale * pairwise_hinge_loss(scores, example.runtime[index])
        return loss

    losses = [loss_of(examples[i % 2], index) for i, index in enumerate(indices)]
    torch.manual_seed(0)
    model = LayoutRanker.from_settings(config)
    reference, reference_average = _reference_steps(_copy_model(model), losses, config, steps_per_epoch=2)
    update = ParameterUpdate(model, config, total_steps=len(losses), steps_per_epoch=2, flat=flat)
    for loss in losses:
        update.zero_grad()
        loss(model).backward()
        update.step()
    update.close()
    assert _weights_apart(reference.state_dict(), model.state_dict()) == 0.0
    if average_epochs:
        averages = reference_average.module.state_dict(), update.averaged.module.state_dict()
        assert _weights_apart(*averages) == 0.0
    # closed: a storage per parameter again, and the flat gradient let go
    assert len({p.untyped_storage().data_ptr() for p in model.parameters()}) == len(list(model.parameters()))
    assert all(p.grad is None for p in model.parameters()) or not flat


def _copy_model(model):
    import copy

    copied = copy.deepcopy(model)
    copied.task = model.task
    return copied


@pytest.mark.parametrize("norm", [0.0, 0.5, 0.989, 0.991, 0.999999, 1.0, 1.000001, 1.5, 1e6,
                                  math.inf, math.nan])
def test_clipping_gives_clip_grad_norm_s_bytes_on_each_side_of_its_shortcut(norm):
    """ParameterUpdate.clip skips the per-tensor norms under NO_CLIP_BELOW of the clipping norm: at and
    around that margin, at the norm itself, far over it and on non-finite gradients it leaves the same
    gradients as clip_grad_norm_ over the tensors one by one."""
    from solutions.methods.gnn.train import NO_CLIP_BELOW, ParameterUpdate

    assert NO_CLIP_BELOW < 0.991
    torch.manual_seed(0)
    model = LayoutRanker.from_settings(GNNConfig(hidden=8, layers=1))
    reference = _copy_model(model)
    update = ParameterUpdate(model, GNNConfig(hidden=8, layers=1), total_steps=1, steps_per_epoch=1)
    generator = torch.Generator().manual_seed(1)
    raw = torch.randn(update.parameters.flat.numel(), generator=generator, dtype=torch.float64)
    grad = (raw / raw.norm() * norm).float() if math.isfinite(norm) else raw.float()
    if not math.isfinite(norm):
        grad[7] = norm
    update.parameters.flat.grad.copy_(grad)
    offset = 0
    for p in reference.parameters():
        p.grad = grad[offset : offset + p.numel()].view_as(p).clone()
        offset += p.numel()
    torch.nn.utils.clip_grad_norm_(reference.parameters(), update.max_norm)
    update.clip()
    want = torch.cat([p.grad.reshape(-1) for p in reference.parameters()])
    torch.testing.assert_close(update.parameters.flat.grad, want, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("shape", [(0,), (1,), (40,), (7, 18), (3, 5, 18)])
def test_lookup_is_the_embedding_to_the_bit(shape):
    """The node encoder's and the row network's embedding lookups (``lookup``): the module's values, and
    the same weight gradient bytes with indices repeated many times."""
    from solutions.methods.gnn.model import lookup

    torch.manual_seed(0)
    embedding = torch.nn.Embedding(9, 5)
    generator = torch.Generator().manual_seed(2)
    index = torch.randint(0, 9, shape, generator=generator)
    grads = []
    for call in (embedding, lambda i: lookup(embedding, i)):
        embedding.zero_grad(set_to_none=True)
        out = call(index)
        weights = torch.randn(out.shape, generator=torch.Generator().manual_seed(3))
        (out * weights).sum().backward()
        grads.append((out, embedding.weight.grad))
    assert grads[0][0].shape == grads[1][0].shape == (*shape, 5)
    assert torch.equal(grads[0][0], grads[1][0])
    assert torch.equal(grads[0][1], grads[1][1])


def test_flat_parameters_refuse_mixed_dtypes():
    from solutions.methods.gnn.train import FlatParameters

    module = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2).double())
    with pytest.raises(ValueError, match="one dtype and device"):
        FlatParameters(module)


def test_a_graph_without_configurable_nodes_keeps_the_update_tensor_by_tensor():
    """Its steps leave the config rows' layers without a gradient, which AdamW must skip (1.0 did)."""
    from solutions.methods.gnn.train import _start

    examples = hand_made_layout_examples(2)
    config = GNNConfig(hidden=8, layers=1)
    cpu = torch.device("cpu")
    flat, _ = _start(LayoutRanker.from_settings(config), examples, [], config, 0, cpu, True, None)
    assert flat.update.parameters is not None
    no_rows = torch.zeros(0, dtype=torch.long)
    bare = replace(examples[0], inputs=replace(examples[0].inputs, config_node_ids=no_rows))
    run, _ = _start(LayoutRanker.from_settings(config), [bare, examples[1]], [], config, 0, cpu, True, None)
    assert run.update.parameters is None


# -- several layout graphs per step (the variant kind_plan builds and bench_gnn_speed measures) --------


@pytest.mark.parametrize("attention", [True, False])
@pytest.mark.parametrize("config_layers", [0, 1])
def test_several_graphs_in_one_pass_score_as_each_alone(attention, config_layers):
    """score_graphs (the union of graphs, filler configs masked) against forward on each graph alone."""
    from solutions.methods.gnn.train import grouped_hinge_loss, side_by_side

    torch.manual_seed(0)
    examples = [make_example(f"g{i}", layout_graph(num_configs=n, seed=i), transform=ONEHOP, compress=True,
                             engineered=True) for i, n in enumerate((12, 5, 9))]
    assert len({e.num_configs for e in examples}) == 3  # the filler is exercised
    model = LayoutRanker.from_settings(GNNConfig(hidden=8, layers=2, config_attention=attention,
                                                 config_layers=config_layers, heuristic_prior=1.0))
    index = [torch.arange(e.num_configs) for e in examples]  # every config of each
    batch, digits, rows, padding, runtimes = side_by_side(examples, index, torch.device("cpu"),
                                                          engineered=True)
    assert padding.sum(dim=1).tolist() == [max(map(len, index)) - len(i) for i in index]
    together = model.score_graphs(batch, digits, engineered=rows, padding=padding)
    losses = grouped_hinge_loss(together, runtimes, padding, margin=0.1)
    alone_losses = []
    for g, (example, i) in enumerate(zip(examples, index, strict=True)):
        alone = model(example.inputs, example.configs.digits(i), engineered=example.engineered_rows(i))
        torch.testing.assert_close(together[g, : len(i)], alone, rtol=1e-5, atol=1e-6)
        alone_losses.append(pairwise_hinge_loss(alone, example.runtime[i], margin=0.1))
        torch.testing.assert_close(losses[g], alone_losses[-1], rtol=1e-5, atol=1e-6)
    losses.mean().backward()  # the filler configs get no gradient through the loss
    assert all(p.grad is None or torch.isfinite(p.grad).all() for p in model.parameters())
    # and the step learns what the graphs alone would teach: the same gradient as their mean loss
    together_grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    torch.stack(alone_losses).mean().backward()
    alone_grads = {n: p.grad for n, p in model.named_parameters() if p.grad is not None}
    assert together_grads.keys() == alone_grads.keys()
    for name, grad in alone_grads.items():
        torch.testing.assert_close(together_grads[name], grad, rtol=1e-4, atol=1e-6, msg=name)


@pytest.mark.parametrize(("scores", "runtimes", "padding", "expected"), [
    ([[0.0, 1.0, 2.0]], [[1, 2, 3]], None, [0.0]),
    ([[2.0, 1.0, 0.0]], [[1, 2, 3]], None, [(1.1 + 2.1 + 1.1) / 3]),
    ([[2.0, 1.0, 0.0]], [[1, 2, 3]], [[False, False, True]], [1.1]),  # the filler forms no pair
    ([[5.0, 0.0], [0.0, 1.0]], [[7, 7], [1, 2]], None, [0.0, 0.0]),  # a tie: no pair, loss 0
    ([[0.0, 5.0], [0.0, 0.0]], [[1, 2], [2, 1]], None, [0.0, 0.1]),  # rows never pair with each other
])
def test_grouped_hinge_is_the_pairwise_hinge_of_each_row(scores, runtimes, padding, expected):
    from solutions.methods.gnn.train import grouped_hinge_loss

    got = grouped_hinge_loss(torch.tensor(scores), torch.tensor(runtimes, dtype=torch.float64),
                             None if padding is None else torch.tensor(padding), margin=0.1)
    assert got.tolist() == pytest.approx(expected)


def test_a_step_of_several_graphs_is_the_mean_of_their_losses():
    """Graphs with and without configurable nodes in one step; every config sampled, so the draws do not
    matter (the loss ignores the order of a graph's configs)."""
    from solutions.methods.gnn.train import _layout_step

    torch.manual_seed(1)
    examples = hand_made_layout_examples(3)
    graph = layout_graph(num_configs=7, seed=5, duplicates=False)
    bare = make_example("bare", replace(graph, node_config_feat=graph.node_config_feat[:, :0],
                                        node_config_ids=graph.node_config_ids[:0]),
                        transform=None, compress=False, engineered=True)
    assert not bare.inputs.config_node_ids.numel() and bare.num_configs == 7
    config = GNNConfig(hidden=8, layers=1, layout_configs_per_graph=64)
    model = LayoutRanker.from_settings(config)
    chosen = list(enumerate([examples[1], bare, examples[2]]))
    cpu, rng = torch.device("cpu"), np.random.default_rng(0)
    step = _layout_step(model, chosen, config, rng, cpu, True)
    alone = [_layout_step(model, [pair], config, rng, cpu, True) for pair in chosen]
    torch.testing.assert_close(step, torch.stack(alone).mean(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("limit", [1, 0])
def test_rows_of_more_configurable_nodes_than_one_key_holds_are_deduplicated_too(monkeypatch, limit):
    # Four large graphs scored in one pass can hold more configurable nodes than the (node, row) key
    # tells apart; their rows are numbered first, and the row network still runs once per distinct pair.
    from solutions.methods.gnn import model as model_module

    torch.manual_seed(0)
    example = make_example("g", layout_graph(num_configs=9), transform=ONEHOP, compress=True,
                           engineered=False)
    model = LayoutRanker.from_settings(GNNConfig(hidden=8, layers=1, engineered_features=False))
    state, digits = model.encode_nodes(example.inputs), example.configs.digits()
    every_row = model.encode_configs(example.inputs, state, digits, dedup_rows=False)
    rows_run = []
    network = model._row_network
    monkeypatch.setattr(model, "_row_network",
                        lambda i, s, n, f: rows_run.append(len(n)) or network(i, s, n, f))
    torch.testing.assert_close(model.encode_configs(example.inputs, state, digits), every_row)
    monkeypatch.setattr(model_module, "MAX_DEDUP_NODES", limit)  # below the graph's 2 configurable nodes
    torch.testing.assert_close(model.encode_configs(example.inputs, state, digits), every_row)
    distinct = len(set(zip(torch.arange(digits.shape[1]).repeat(digits.shape[0]).tolist(),
                           map(tuple, digits.reshape(-1, digits.shape[-1]).tolist()), strict=True)))
    assert rows_run == [distinct, distinct] and distinct < digits.shape[0] * digits.shape[1]


def test_score_graphs_refuses_what_it_cannot_batch():
    example = hand_made_layout_examples(1)[0]
    from solutions.methods.gnn.data import layout_batch

    early = LayoutRanker.from_settings(GNNConfig(hidden=8, layers=1, fusion="early"))
    digits = example.configs.digits()
    with pytest.raises(ValueError, match="needs fusion=intermediate"):
        early.score_graphs(layout_batch([example.inputs]), digits)
    bare = replace(example.inputs, config_node_ids=torch.zeros(0, dtype=torch.long),
                   common_rows=torch.zeros(0, 18, dtype=torch.long), links=None)
    model = LayoutRanker.from_settings(GNNConfig(hidden=8, layers=1, engineered_features=False))
    with pytest.raises(ValueError, match="configurable nodes in every graph"):
        model.score_graphs(layout_batch([example.inputs, bare]), digits)


@pytest.mark.parametrize(("params", "graphs"), [
    ({}, 4), ({"layout_graphs_per_step": 1}, 1), ({"layout_graphs_per_step": 6}, 6),
    ({"fusion": "early"}, 1), ({"fusion": "early", "layout_graphs_per_step": 3}, 3),
    ({"fusion": "early", "training": "gst"}, 1),
    ({"fusion": "early", "training": "gst", "layout_graphs_per_step": 1}, 1),
])
def test_layout_graphs_a_step(params, graphs):
    """Unset: 4 with intermediate fusion, 1 with early fusion or Graph Segment Training (1.0's step)."""
    assert GNNConfig(**params).layout_graphs() == graphs


def test_graph_segment_training_refuses_several_graphs_per_step():
    with pytest.raises(SettingError, match="one layout graph at a time; add layout_graphs_per_step=1"):
        GNNConfig(training="gst", fusion="early", layout_graphs_per_step=2)


@pytest.mark.parametrize(("graphs", "sizes", "counts"), [(1, [1] * 8, [1, 1, 2, 2, 2]),
                                                         (3, [3, 3, 3], [1, 2, 2, 2, 2])])
def test_an_epoch_of_several_graphs_a_step_sees_every_graph(graphs, sizes, counts):
    """5 graphs, at least 8 an epoch (layout_min_epoch_steps), in full steps of ``graphs``: every graph
    once or twice; every step trains."""
    from solutions.methods.gnn.train import _start, epoch_steps

    config = GNNConfig(hidden=8, layers=1, layout_graphs_per_step=graphs)
    run, _ = _start(LayoutRanker.from_settings(config), hand_made_layout_examples(5), [], config, 0,
                    torch.device("cpu"), True, None)
    assert run.steps_per_epoch == math.ceil(8 / graphs)
    steps = list(epoch_steps(run))
    assert [len(chosen) for chosen in steps] == sizes
    assert sorted(Counter(i for chosen in steps for i, _ in chosen).values()) == counts
    for chosen in steps:
        loss = run.step(run.plan.step, chosen, config, run.rng, run.device, True)
        run.update.zero_grad()
        loss.backward()
        run.update.step()
        assert torch.isfinite(loss)
