"""``work_pooling``: the layout gnn averages its configurable nodes' states weighted by each node's share
of the graph's roofline time (docs/gnn.md). The shares against a slow reference on the shipped proto;
even shares pool as the plain mean; the setting is checked, saved and loaded, and a model built without
it stays as it was."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from real_protos import LAYOUT_PROTO, needs_realdata
from test_gnn import FAST, layout_graph

from competition.collections import COLLECTION_BY_NAME
from competition.data.graphs import iter_split, save_graph
from competition.data.hlo import OPCODE_IDS
from competition.data.processed_cache import build_cache
from competition.data.protos.featurize import featurize_file
from solutions.features.layout_geometry import (
    MACS_PER_ELEMENT,
    configurable_kinds,
    configurable_work,
    layout_context,
    matrix_terms,
)
from solutions.features.shapes import node_shapes
from solutions.gnn import GNNRanker
from solutions.gnn.data import make_example, work_shares
from solutions.gnn.model import LayoutRanker
from solutions.gnn.settings import GNNConfig
from solutions.method import FitOptions, SplitSource
from solutions.pruning import parse_pruning
from solutions.settings import SettingError

DEFAULT = COLLECTION_BY_NAME["layout:xla:default"]


def _slow_work(graph) -> np.ndarray:
    """Each configurable node's roofline at no padding, edge by edge: a convolution or dot the longer of
    sqrt(output x operand x operand elements) and (output + its two operands) elements moved; any other
    node its output and every operand moved."""
    _, elements, _ = node_shapes(graph.node_feat)
    matrix = {OPCODE_IDS["convolution"], OPCODE_IDS["dot"]}
    out = []
    for node in graph.node_config_ids:
        operands = [int(p) for c, p in graph.edge_index if c == node]
        if int(graph.node_opcode[node]) in matrix and operands:
            a, b = (operands + operands)[:2] if len(operands) == 1 else operands[:2]
            moved = elements[node] + elements[a] + elements[b]
            out.append(max(np.sqrt(elements[node] * elements[a] * elements[b]), MACS_PER_ELEMENT * moved))
        else:
            out.append(MACS_PER_ELEMENT * (elements[node] + sum(elements[p] for p in operands)))
    return np.array(out)


@needs_realdata(LAYOUT_PROTO)
def test_the_work_of_the_proto_s_configurable_nodes_matches_a_slow_reference():
    [(_, graph)] = featurize_file(LAYOUT_PROTO)
    work = configurable_work(graph)
    np.testing.assert_allclose(work, _slow_work(graph), rtol=1e-12)
    # the heuristic's context reads its matrix work from the same helper, and the work is its roofline
    context = layout_context(graph)
    elements = node_shapes(graph.node_feat)[1]
    mxu_work, operand_elements = matrix_terms(graph, configurable_kinds(graph), elements)
    np.testing.assert_array_equal(mxu_work, context.mxu_work)
    np.testing.assert_array_equal(operand_elements, context.operand_elements)
    matrix = context.mxu_work > 0
    assert matrix.any()
    np.testing.assert_allclose(work[matrix], np.maximum(context.mxu_work, MACS_PER_ELEMENT * (
        context.tensor_elements[:, 0] + context.operand_elements))[matrix], rtol=1e-12)
    shares = work_shares(graph)
    assert shares.dtype == np.float32 and shares.shape == (graph.node_config_ids.shape[0],)
    assert shares.min() >= 0 and shares.sum() == pytest.approx(1.0, abs=1e-5)
    # the convolutions carry most of the proto's roofline time
    assert shares[matrix].sum() > 0.5


def test_examples_carry_the_shares_only_when_asked_and_keep_them_on_the_way_to_a_device():
    graph = layout_graph(num_configs=9)
    plain = make_example("g", graph, prune=True, compress=True)
    assert plain.inputs.node_weight is None
    weighed = make_example("g", graph, prune=True, compress=True, node_work=True)
    np.testing.assert_array_equal(weighed.inputs.node_weight.numpy(), work_shares(graph))
    moved = weighed.inputs.to("meta")
    assert moved.node_weight is not None and moved.node_weight.shape == weighed.inputs.node_weight.shape


@needs_realdata(LAYOUT_PROTO)
@pytest.mark.parametrize("pruning", ["khop:1", "configurable"])
def test_the_shares_are_the_unpruned_graph_s_whatever_the_pruning_drops(pruning):
    """A pruning that drops a node's operands would change its traffic: the shares are read before it,
    in the order of the configurable nodes the pruned graph keeps."""
    [(_, graph)] = featurize_file(LAYOUT_PROTO)
    transform = parse_pruning(pruning)
    assert transform is not None
    pruned = transform.prune(graph).graph
    assert not np.allclose(work_shares(pruned), work_shares(graph))  # this pruning would change them
    example = make_example("g", graph, prune=True, compress=True, transform=transform, node_work=True)
    assert example.inputs.node_weight.shape == example.inputs.config_node_ids.shape
    np.testing.assert_array_equal(example.inputs.node_weight.numpy(), work_shares(graph))


def test_a_graph_read_through_the_processed_cache_gets_the_same_shares(tmp_path):
    graph = layout_graph(num_configs=40, seed=5)
    save_graph(graph, tmp_path / "g.npz")
    cached = build_cache(tmp_path / "g.npz", tmp_path / "cache").layout_view()
    example = make_example("g", cached, prune=True, compress=True, node_work=True)
    np.testing.assert_array_equal(example.inputs.node_weight.numpy(), work_shares(graph))


def _model(work_pooling: bool) -> LayoutRanker:
    torch.manual_seed(0)
    return LayoutRanker.from_settings(GNNConfig(hidden=8, layers=2, config_attention=False,
                                                engineered_features=False, work_pooling=work_pooling)).eval()


def test_even_shares_pool_as_the_mean_and_uneven_ones_differ():
    example = make_example("g", layout_graph(num_configs=9), prune=True, compress=False, node_work=True)
    digits = example.configs.digits()
    nc = digits.shape[1]
    plain, weighed = _model(False), _model(True)
    weighed.load_state_dict(plain.state_dict())  # the same weights: only the pooling differs
    with torch.no_grad():
        expected = plain(example.inputs, digits)
        example.inputs.node_weight = torch.full((nc,), 1.0 / nc)
        torch.testing.assert_close(weighed(example.inputs, digits), expected)
        example.inputs.node_weight = torch.tensor([0.9] + [0.1 / (nc - 1)] * (nc - 1))
        assert not torch.allclose(weighed(example.inputs, digits), expected)


def test_a_work_pooling_model_refuses_inputs_without_shares():
    example = make_example("g", layout_graph(num_configs=9), prune=True, compress=False)
    with pytest.raises(ValueError, match=r"node_work=True"):
        _model(True)(example.inputs, example.configs.digits())


@pytest.mark.parametrize(("params", "message"), [
    ({"work_pooling": True, "fusion": "early", "config_attention": False}, "add fusion=intermediate"),
    ({"work_pooling": "sometimes"}, "work_pooling"),
])
def test_bad_settings_are_refused(params, message):
    with pytest.raises(SettingError, match=message):
        GNNConfig(**params)


def test_a_fitted_model_saves_and_loads_its_pooling(tiny_competition, tmp_path):
    public = tiny_competition / "public"
    ranker = GNNRanker(**FAST, work_pooling=True)
    ranker.fit(DEFAULT, SplitSource(public, DEFAULT, "train"), SplitSource(public, DEFAULT, "valid"),
               FitOptions(progress=False))
    assert ranker.model.work_pooling
    ranker.save(tmp_path / "model")
    loaded = GNNRanker.load(tmp_path / "model")
    assert loaded.config.work_pooling and loaded.model.work_pooling
    for _, graph in iter_split(public, DEFAULT, "test"):
        np.testing.assert_array_equal(loaded.predict(DEFAULT, graph), ranker.predict(DEFAULT, graph))


def test_a_model_saved_before_the_setting_loads_without_it(tiny_competition, tmp_path):
    """(The class default is off too; the saved file's missing setting must still read as off if the
    default changes: ``ADDED_SETTINGS``.)"""
    public = tiny_competition / "public"
    ranker = GNNRanker(**FAST, work_pooling=False)
    ranker.fit(DEFAULT, SplitSource(public, DEFAULT, "train"), SplitSource(public, DEFAULT, "valid"),
               FitOptions(progress=False))
    ranker.save(tmp_path / "model")
    meta_path = tmp_path / "model" / "gnn.json"
    meta = json.loads(meta_path.read_text())
    del meta["config"]["work_pooling"]  # as a kit before the setting wrote it
    meta_path.write_text(json.dumps(meta))
    loaded = GNNRanker.load(tmp_path / "model")
    assert not loaded.config.work_pooling and not loaded.model.work_pooling
