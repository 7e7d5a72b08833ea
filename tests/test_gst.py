"""Graph Segment Training (solutions.methods.gnn.gst): segments, the embedding table, and GST fits on the tiny
competition."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from competition.collections import COLLECTION_BY_NAME
from competition.data.graphs import LayoutGraph, iter_split
from solutions.methods.base import FitOptions, SplitSource
from solutions.methods.gnn import GNNRanker
from solutions.methods.gnn.data import LayoutInputs, layout_example, make_example
from solutions.methods.gnn.gst import (
    EmbeddingTable,
    SegmentTraining,
    graph_segments,
    gst_layout_scores,
    segment_example,
    topological_order,
)
from solutions.methods.gnn.model import LayoutRanker
from solutions.methods.gnn.ranker import FORMAT_VERSION
from solutions.methods.gnn.settings import GNNConfig

LAYOUT = COLLECTION_BY_NAME["layout:nlp:random"]
FAST = {"layout_epochs": 2, "hidden": 16, "layers": 2, "layout_valid_configs": 16}


def random_dag(rng: np.random.Generator, n: int, m: int) -> np.ndarray:
    """(2, m') [producer, consumer] edges with producer < consumer (node ids in topological order)."""
    a, b = rng.integers(0, n, size=(2, m))
    keep = a != b
    edges = np.unique(np.stack([np.minimum(a, b), np.maximum(a, b)])[:, keep], axis=1)
    return edges.astype(np.int64)


def layout_graph(rng: np.random.Generator, n: int = 60, nc: int = 12, c: int = 20,
                 splits: tuple[int, ...] = (0,)) -> LayoutGraph:
    edges = random_dag(rng, n, 2 * n)  # [producer, consumer]
    config_ids = np.sort(rng.choice(n, size=nc, replace=False)).astype(np.int64)
    return LayoutGraph(
        node_feat=rng.integers(0, 5, size=(n, 140)).astype(np.float32),
        node_opcode=rng.integers(1, 120, size=n).astype(np.uint8),
        edge_index=np.ascontiguousarray(edges[::-1].T),  # released rows: [consumer, producer]
        config_runtime=rng.integers(100, 10_000, size=c).astype(np.int64),
        node_config_feat=rng.integers(-1, 6, size=(c, nc, 18)).astype(np.float32),
        node_config_ids=config_ids,
        node_splits=np.asarray(splits, dtype=np.int64).reshape(1, -1),
    )


# -- segments ----------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 80))
def test_topological_order_puts_producers_first_whatever_the_ids(seed, n):
    rng = np.random.default_rng(seed)
    edges = random_dag(rng, n, 3 * n)
    relabel = rng.permutation(n)  # the same DAG under shuffled ids
    order = topological_order(n, relabel[edges])
    assert sorted(order.tolist()) == list(range(n))
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)
    shuffled = relabel[edges]
    assert (position[shuffled[0]] < position[shuffled[1]]).all()
    np.testing.assert_array_equal(topological_order(n, edges), np.arange(n))  # already topological


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 120), size=st.integers(1, 50))
def test_segments_cover_every_node_once_and_respect_the_size(seed, n, size):
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.choice(np.arange(1, max(2, n)), size=min(n - 1, rng.integers(0, 6)),
                              replace=False)) if n > 1 else []
    segments = graph_segments(n, random_dag(rng, n, 2 * n), np.concatenate([[0], cuts]), size)
    nodes = np.concatenate(segments)
    assert sorted(nodes.tolist()) == list(range(n))
    assert all(0 < s.size <= size for s in segments)
    assert len(segments) >= -(-n // size)


def test_whole_computations_are_packed_when_each_fits():
    edges = random_dag(np.random.default_rng(0), 100, 200)
    segments = graph_segments(100, edges, np.array([0, 30, 55, 70, 95]), 40)
    assert [(s[0], s[-1] + 1) for s in segments] == [(0, 30), (30, 70), (70, 100)]  # no computation is cut
    # a computation larger than a segment: runs of the topological order instead
    runs = graph_segments(100, edges, np.array([0, 60]), 40)
    assert [s.size for s in runs] == [34, 33, 33]
    (whole,) = graph_segments(100, edges, None, 100)
    np.testing.assert_array_equal(whole, np.arange(100))


def test_segments_keep_only_their_inside_edges_and_configurable_nodes():
    graph = layout_graph(np.random.default_rng(1))
    example = layout_example("g", graph, transform=None, compress=True)
    segments = segment_example(example, 25)
    assert sum(s.num_nodes for s in segments) == example.num_nodes
    assert sorted(torch.cat([s.config_slots for s in segments]).tolist()) == list(range(12))
    inside = sum(s.inputs.edge_index.shape[1] for s in segments)
    assert 0 < inside <= example.inputs.edge_index.shape[1]
    for s in segments:
        assert s.inputs.edge_index.numel() == 0 or int(s.inputs.edge_index.max()) < s.num_nodes
        np.testing.assert_array_equal(s.inputs.common_rows, example.inputs.common_rows[s.config_slots])


# -- one step against the full-graph model ---------------------------------------------------------------


def cut_inputs(example, segments) -> LayoutInputs:
    """The example's inputs with every edge between two segments removed (what GST's segments see)."""
    owner = torch.empty(example.num_nodes, dtype=torch.int64)
    nodes = graph_segments(example.num_nodes, example.inputs.edge_index.numpy(), example.node_splits, 25)
    for i, part in enumerate(nodes):
        owner[torch.from_numpy(part)] = i
    edges = example.inputs.edge_index
    keep = owner[edges[0]] == owner[edges[1]]
    inputs = example.inputs
    return LayoutInputs(inputs.node_feat, inputs.node_opcode, edges[:, keep], inputs.config_node_ids,
                        inputs.common_rows)


@pytest.mark.parametrize("engineered", [False, True], ids=["plain", "engineered"])
def test_all_segments_fresh_equals_the_full_model_on_the_cut_graph(engineered):
    torch.manual_seed(0)
    example = make_example("g", layout_graph(np.random.default_rng(2)), transform=None, compress=True,
                           engineered=engineered)
    segments = segment_example(example, 25)
    model = LayoutRanker.from_settings(GNNConfig(hidden=8, layers=2, fusion="early", config_attention=False,
                                                 engineered_features=engineered)).eval()
    index = torch.arange(example.num_configs)
    table = EmbeddingTable(example.num_configs, len(segments), 8)
    scores = gst_layout_scores(model, example, segments, table, index, segments_per_step=len(segments),
                               stale_dropout=0.0, rng=np.random.default_rng(0), device=torch.device("cpu"),
                               dedup_rows=True)
    reference = model(cut_inputs(example, segments), example.configs.digits(index),
                      engineered=example.engineered)
    torch.testing.assert_close(scores, reference, rtol=1e-5, atol=1e-5)
    assert table.filled.all()  # every fresh value was written


def test_historical_values_stand_in_for_segments_not_recomputed():
    torch.manual_seed(0)
    example = layout_example("g", layout_graph(np.random.default_rng(3)), transform=None, compress=True)
    segments = segment_example(example, 25)
    model = LayoutRanker.from_settings(GNNConfig(hidden=8, layers=2, fusion="early", config_attention=False,
                                                 engineered_features=False)).eval()
    index = torch.arange(example.num_configs)
    table = EmbeddingTable(example.num_configs, len(segments), 8)
    common = {"stale_dropout": 0.0, "device": torch.device("cpu"), "dedup_rows": True}
    with torch.no_grad():
        fresh = gst_layout_scores(model, example, segments, table, index, segments_per_step=len(segments),
                                  rng=np.random.default_rng(0), **common)
        # one fresh segment, the others from the table (float16): the same scores, within rounding
        partial = gst_layout_scores(model, example, segments, table, index, segments_per_step=1,
                                    rng=np.random.default_rng(1), **common)
    torch.testing.assert_close(partial, fresh, rtol=0, atol=2e-2)
    empty = EmbeddingTable(example.num_configs, len(segments), 8)  # nothing stored yet: fresh segments only
    with torch.no_grad():
        alone = gst_layout_scores(model, example, segments, empty, index, segments_per_step=1,
                                  rng=np.random.default_rng(1), **common)
    assert not torch.allclose(alone, fresh, atol=2e-2)
    assert (empty.filled.sum(axis=1) == 1).all()  # the one fresh segment was stored, for every config


def test_stale_dropout_leaves_historical_values_out():
    example = layout_example("g", layout_graph(np.random.default_rng(4)), transform=None, compress=True)
    segments = segment_example(example, 25)
    model = LayoutRanker.from_settings(GNNConfig(hidden=8, layers=2, fusion="early", config_attention=False,
                                                 engineered_features=False)).eval()
    index = torch.arange(example.num_configs)
    table = EmbeddingTable(example.num_configs, len(segments), 8)
    table.values[:] = 100.0  # absurd stored values: they move the scores only when used
    table.filled[:] = True
    common = {"segments_per_step": 1, "device": torch.device("cpu"), "dedup_rows": True}
    with torch.no_grad():
        used = gst_layout_scores(model, example, segments, table, index, stale_dropout=0.0,
                                 rng=np.random.default_rng(5), **common)
        table.filled[:] = False
        unused = gst_layout_scores(model, example, segments, table, index, stale_dropout=0.0,
                                   rng=np.random.default_rng(5), **common)
        table.filled[:] = True
        dropped = gst_layout_scores(model, example, segments, table, index, stale_dropout=0.999999,
                                    rng=np.random.default_rng(5), **common)
    assert not torch.allclose(used, unused)
    torch.testing.assert_close(dropped, unused)


def test_a_segment_without_configurable_nodes_is_stored_for_every_config():
    table = EmbeddingTable(5, 3, 4)
    table.write(None, 1, torch.ones(1, 4), 2 * torch.ones(1, 4))
    assert table.filled[:, 1].all() and not table.filled[:, [0, 2]].any()
    mean, maximum, filled = table.read(np.array([0, 4]), np.array([1]))
    assert mean.shape == (2, 1, 4) and (mean == 1).all() and (maximum == 2).all() and filled.all()


def test_tables_in_a_folder_are_files_removed_on_close(tmp_path):
    training = SegmentTraining(25, 8, tmp_path)
    example = layout_example("g", layout_graph(np.random.default_rng(5)), transform=None, compress=True)
    _, table = training.graph(0, example)
    assert isinstance(table.values, np.memmap) and list(tmp_path.glob("gst-tables-*/0.values.npy"))
    assert training.table_bytes == table.nbytes > 0
    training.close()
    assert list(tmp_path.iterdir()) == []


# -- settings and fits -------------------------------------------------------------------------------


@pytest.mark.parametrize(("params", "message"), [
    ({"training": "segments"}, "setting training=segments: unknown; training must be one of full, gst"),
    ({"segment_size": 0}, "segment_size must be an integer >= 1"),
    ({"segments_per_step": 0}, "segments_per_step must be an integer >= 1"),
    ({"stale_dropout": 1.0}, "stale_dropout must be a number >= 0 and < 1"),
    ({"training": "gst", "fusion": "intermediate"}, "intermediate fusion passes messages once per graph"),
])
def test_bad_gst_settings(params, message):
    with pytest.raises(ValueError, match=message):
        GNNRanker(**params)


def fit(tiny, **params) -> GNNRanker:
    public = tiny / "public"
    options = params.pop("_options", {})
    ranker = GNNRanker(**FAST, **params)
    ranker.fit(LAYOUT, SplitSource(public, LAYOUT, "train"), SplitSource(public, LAYOUT, "valid"),
               FitOptions(progress=False, **options))
    return ranker


def test_one_segment_per_graph_is_full_graph_training(tiny_competition):
    """With segments as large as the graphs nothing is historical: GST reduces to full-graph training
    (of early fusion, which training=gst needs)."""
    full = fit(tiny_competition, fusion="early")
    gst = fit(tiny_competition, training="gst", fusion="early", segment_size=100_000)
    assert gst.config.fusion == "early"
    for _, graph in iter_split(tiny_competition / "public", LAYOUT, "test"):
        np.testing.assert_allclose(gst.predict(LAYOUT, graph), full.predict(LAYOUT, graph), rtol=1e-4,
                                   atol=1e-5)


@pytest.mark.slow
def test_gst_unpruned_fit_saves_its_mode_and_predicts_every_config(tiny_competition, tmp_path):
    ranker = fit(tiny_competition, training="gst", fusion="early", segment_size=64, segments_per_step=2,
                 pruning="none")
    summary = ranker.summary()
    assert (summary["training"] == "gst" and summary["gst"]["segments"] > 3
            and summary["gst"]["table"] == "memory")
    assert ranker.result.steps > 0
    ranker.save(tmp_path / "model")
    meta = json.loads((tmp_path / "model" / "gnn.json").read_text())
    assert meta["format_version"] == FORMAT_VERSION and meta["config"]["training"] == "gst"
    assert meta["config"]["segment_size"] == 64 and meta["training"]["mode"] == "gst"
    loaded = GNNRanker.load(tmp_path / "model")
    assert loaded.config.training == "gst" and loaded.training_mode == "gst"
    for _, graph in iter_split(tiny_competition / "public", LAYOUT, "test"):
        scores = loaded.predict(LAYOUT, graph)
        assert scores.shape == (graph.num_configs,) and np.isfinite(scores).all()
        np.testing.assert_array_equal(scores, ranker.predict(LAYOUT, graph))


@pytest.mark.slow
def test_tables_in_the_cache_folder_give_the_same_model(tiny_competition, tmp_path):
    params = {"training": "gst", "fusion": "early", "segment_size": 64, "pruning": "none"}
    memory = fit(tiny_competition, **params)
    cached = fit(tiny_competition, **params, _options={"cache_dir": tmp_path / "cache"})
    assert cached.summary()["gst"]["table"] == "cache directory"
    assert not list((tmp_path / "cache").glob("gst-tables-*"))  # removed once training ended
    for _, graph in iter_split(tiny_competition / "public", LAYOUT, "test"):
        np.testing.assert_array_equal(cached.predict(LAYOUT, graph), memory.predict(LAYOUT, graph))
