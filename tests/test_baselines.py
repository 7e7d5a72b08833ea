"""The non-learned methods: RandomMethod (seeded per graph) and HeuristicMethod (TPU rule of thumb)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from graph_builders import layout_row, node_features

from competition.collections import COLLECTION_BY_NAME, COLLECTIONS
from competition.data.graphs import LayoutGraph, TileGraph, iter_split
from competition.data.hlo import OPCODE_IDS
from solutions.features.layout_geometry import MACS_PER_ELEMENT
from solutions.kinds.layout import layout_cost
from solutions.kinds.tile import tile_cost
from solutions.methods.base import FitOptions, RankingMethod, SplitSource
from solutions.methods.heuristic import HeuristicMethod
from solutions.methods.random import RandomMethod, graph_fingerprint, random_rows, sample_rows
from solutions.store.saved import SavedModelError

TILE = COLLECTION_BY_NAME["tile:xla"]
LAYOUT = COLLECTION_BY_NAME["layout:xla:random"]


def _f32_node_features(shapes: list[list[int]]) -> np.ndarray:
    return node_features(shapes, f32=True)


def tile_graph(output_bounds: list[list[int]], shape=(256, 512)) -> TileGraph:
    """A parameter -> exponential kernel with output ``shape``; one config per output tile bound row."""
    c = len(output_bounds)
    config = np.zeros((c, 24), np.float32)
    for i, bounds in enumerate(output_bounds):
        config[i, 8 : 8 + len(bounds)] = bounds
        config[i, 14], config[i, 15] = sum(bounds), np.prod(bounds)
    return TileGraph(
        node_feat=_f32_node_features([list(shape), list(shape)]),
        node_opcode=np.array([OPCODE_IDS["parameter"], OPCODE_IDS["exponential"]], np.uint8),
        edge_index=np.array([[1, 0]], np.int64),
        config_runtime=np.arange(1, c + 1, dtype=np.int64) * 100,
        config_feat=config,
        config_runtime_normalizers=np.full(c, 100, np.int64),
    )


def layout_graph(configs: np.ndarray, out_shape: tuple[int, int] = (384, 512), k: int = 3) -> LayoutGraph:
    """param (m, k) -> dot* (m, n) <- param (k, n); dot* -> negate -> tuple, (m, n) = ``out_shape``.
    ``configs``: (c, 1, 18)."""
    c = configs.shape[0]
    m, n = out_shape
    return LayoutGraph(
        node_feat=_f32_node_features([[m, k], [k, n], [m, n], [m, n], [m, n]]),
        node_opcode=np.array([OPCODE_IDS[o] for o in ("parameter", "parameter", "dot", "negate", "tuple")],
                             np.uint8),
        edge_index=np.array([[2, 0], [2, 1], [3, 2], [4, 3]], np.int64),
        config_runtime=np.arange(1, c + 1, dtype=np.int64),
        node_config_feat=configs.astype(np.float32),
        node_config_ids=np.array([2], np.int64),
        node_splits=np.array([[0]], np.int64),
    )


def reshape_graph(configs: np.ndarray) -> LayoutGraph:
    """param (32, 4, 128) -> reshape* (128, 128) -> negate -> tuple. ``configs``: (c, 1, 18)."""
    c = configs.shape[0]
    return LayoutGraph(
        node_feat=_f32_node_features([[32, 4, 128], [128, 128], [128, 128], [128, 128]]),
        node_opcode=np.array([OPCODE_IDS[o] for o in ("parameter", "reshape", "negate", "tuple")], np.uint8),
        edge_index=np.array([[1, 0], [2, 1], [3, 2]], np.int64),
        config_runtime=np.arange(1, c + 1, dtype=np.int64),
        node_config_feat=configs.astype(np.float32),
        node_config_ids=np.array([1], np.int64),
        node_splits=np.array([[0]], np.int64),
    )


# --------------------------------------------------------------------------------------------------
# RandomMethod


def test_methods_satisfy_the_protocol():
    assert isinstance(RandomMethod(), RankingMethod)
    assert isinstance(HeuristicMethod(), RankingMethod)


def test_random_is_deterministic_per_seed_and_graph():
    graph = tile_graph([[8, 128]] * 50)
    first = RandomMethod(seed=3).predict(TILE, graph)
    assert first.shape == (50,) and np.isfinite(first).all()
    np.testing.assert_array_equal(first, RandomMethod(seed=3).predict(TILE, graph))
    assert not np.array_equal(first, RandomMethod(seed=4).predict(TILE, graph))


def test_random_does_not_depend_on_prediction_order():
    a, b = tile_graph([[8, 128]] * 20), tile_graph([[8, 128]] * 20, shape=(64, 128))
    method = RandomMethod(seed=1)
    a_first, b_second = method.predict(TILE, a), method.predict(TILE, b)
    other = RandomMethod(seed=1)
    b_first, a_second = other.predict(TILE, b), other.predict(TILE, a)
    np.testing.assert_array_equal(a_first, a_second)
    np.testing.assert_array_equal(b_first, b_second)
    assert graph_fingerprint(a) != graph_fingerprint(b)


def test_random_fit_takes_the_seed_and_save_load_round_trips(tmp_path: Path):
    method = RandomMethod()
    method.fit(TILE, None, None, FitOptions(seed=7))  # type: ignore[arg-type]  (nothing is read)
    method.save(tmp_path / "model")
    loaded = RandomMethod.load(tmp_path / "model")
    assert loaded.seed == 7
    graph = layout_graph(np.full((5, 1, 18), -1))
    np.testing.assert_array_equal(loaded.predict(LAYOUT, graph), method.predict(LAYOUT, graph))


def test_random_handles_a_graph_without_configs():
    assert RandomMethod().predict(TILE, tile_graph([])).shape == (0,)


def test_row_helpers_still_work_for_the_demo(tiny_competition: Path):
    public = tiny_competition / "public"
    sample, random = sample_rows(public), random_rows(public, seed=0)
    assert sample.keys() == random.keys() and sample
    for row_id, row in random.items():
        assert len(row) == len(set(row.tolist())) == len(sample[row_id])
        if not row_id.startswith("tile:"):  # a layout row is a full permutation
            assert sorted(row.tolist()) == sorted(sample[row_id].tolist())


# --------------------------------------------------------------------------------------------------
# HeuristicMethod


def test_tile_rule_prefers_large_dividing_lane_aligned_tiles():
    cost = tile_cost(tile_graph([[8, 128], [64, 512], [100, 300], [3, 5], [256, 512]]))
    # a big tile that divides (256, 512) beats a ragged one, and both beat tiny or lane-padded tiles
    assert cost[1] < cost[2] < cost[0] < cost[3]
    assert cost[4] <= cost[1]


def test_tile_rule_penalises_tiles_that_overflow_on_chip_memory():
    small, huge = tile_graph([[256, 512]], shape=(256, 512)), tile_graph([[4096, 4096]], shape=(4096, 4096))
    per_element = tile_cost(huge)[0] / (4096 * 4096), tile_cost(small)[0] / (256 * 512)
    assert per_element[0] > per_element[1]


def test_layout_rule_charges_a_memory_bound_dots_padded_output():
    """A (100, 3) x (3, 256) dot does 76,800 multiply-adds and moves 27,000+ elements: memory-bound, so
    it costs its padded output written plus its operands read, at the roofline's MACs per element."""
    configs = np.array([
        [layout_row([1, 0], [1, 0], [1, 0])],  # minor 256 (no lane padding), second-minor 100 -> 104
        [layout_row([0, 1], [1, 0], [1, 0])],  # minor 100 -> 128 lanes: 28 % more
    ])
    cost = layout_cost(layout_graph(configs, out_shape=(100, 256)))
    operands = 100 * 3 + 3 * 256
    np.testing.assert_allclose(cost, [MACS_PER_ELEMENT * (104 * 256 + operands),
                                      MACS_PER_ELEMENT * (128 * 256 + operands)])


def test_layout_rule_charges_a_compute_bound_dots_work_times_its_output_padding():
    """A (1000, 1024) x (1024, 1024) dot: 2^30 x 1000/1024 multiply-adds against ~3 million elements moved,
    so compute-bound; an output tile padded by 2.4 % makes the matrix unit do 2.4 % more work."""
    configs = np.array([
        [layout_row([1, 0], [1, 0], [1, 0])],  # minor 1024, second-minor 1000 (a multiple of 8): no padding
        [layout_row([0, 1], [1, 0], [1, 0])],  # minor 1000 -> 1024 lanes
    ])
    cost = layout_cost(layout_graph(configs, out_shape=(1000, 1024), k=1024))
    work = 1000 * 1024 * 1024
    np.testing.assert_allclose(cost, [work, work * 1024 / 1000])


def test_layout_rule_weighs_padding_by_the_work_behind_it():
    """Rule 3's point (BENCHMARKS.md, "The heuristic"): the same padded output costs more behind more
    matrix work. Rule 2 charged padded elements alone, so both dots below cost it the same."""
    rows = np.array([[layout_row([1, 0], [1, 0], [1, 0])], [layout_row([0, 1], [1, 0], [1, 0])]])
    shallow = np.diff(layout_cost(layout_graph(rows, out_shape=(1000, 1024), k=256)))[0]
    deep = np.diff(layout_cost(layout_graph(rows, out_shape=(1000, 1024), k=4096)))[0]
    assert deep > 10 * shallow > 0


def test_layout_rule_charges_neither_operand_settings_nor_disagreement():
    """A dot reads its operands as they arrive, and a layout that differs from its neighbour's costs
    nothing more (rule 1's x3 charge ranked every labelled real graph worse)."""
    configs = np.array([
        [layout_row([1, 0], [1, 0], [1, 0])],  # default layouts everywhere
        [layout_row([0, 1], [1, 0], [1, 0])],  # output minor dim 384 (3 x 128): no padding, disagrees
        [layout_row([1, 0], [0, 1], [0, 1])],  # operands disagree with their producers, minor dim 3
    ])
    cost = layout_cost(layout_graph(configs))
    assert cost[0] == cost[1] == cost[2] == MACS_PER_ELEMENT * (384 * 512 + 384 * 3 + 3 * 512)


# A copy reads the input and writes the output, both padded: the (128, 128) output never pads; the
# (32, 4, 128) input pads its second-minor 4 to 8 sublanes when 4 is second-minor (32 * 8 * 128).
@pytest.mark.parametrize(("output", "operand", "elements"), [
    ([1, 0], [2, 1, 0], 0),  # both row-major: a bitcast
    ([0, 1], [1, 0, 2], 0),  # both transposed the same way: the same bytes in the same order
    ([-1, -1], [1, 0, 2], 0),  # output left to the compiler: assumed to be the bitcast
    ([0, 1], [2, 1, 0], 128 * 128 + 32 * 8 * 128),  # only the output transposed
    ([1, 0], [2, 0, 1], 128 * 128 + 32 * 4 * 128),  # the merged (32, 4) pair stored 4-major: reordered
], ids=["row-major", "transposed-alike", "unset", "output-transposed", "merged-pair-reordered"])
def test_layout_rule_charges_a_reshape_only_when_it_copies(output, operand, elements):
    row = [*output, -1, -1, -1, -1, *operand, -1, -1, -1, *[-1] * 6]
    assert layout_cost(reshape_graph(np.array([[row]])))[0] == pytest.approx(MACS_PER_ELEMENT * elements)


def test_layout_rule_ignores_unset_vectors():
    configs = np.array([[layout_row([1, 0], [1, 0], [1, 0])], [[-1] * 18]])
    cost = layout_cost(layout_graph(configs))
    assert np.isfinite(cost).all() and cost[1] <= cost[0]


@pytest.mark.parametrize("collection", COLLECTIONS, ids=lambda c: c.name)
def test_heuristic_predicts_finite_scores_on_the_tiny_competition(tiny_competition: Path, collection):
    method = HeuristicMethod()
    source = SplitSource(tiny_competition / "public", collection, "train")
    method.fit(collection, source, source, FitOptions())
    for split in ("valid", "test"):
        for _, graph in iter_split(tiny_competition / "public", collection, split):
            predicted = method.predict(collection, graph)
            assert predicted.shape == (graph.num_configs,) and np.isfinite(predicted).all()


def test_heuristic_save_load(tmp_path: Path):
    HeuristicMethod().save(tmp_path)
    graph = tile_graph([[8, 128], [64, 512]])
    np.testing.assert_array_equal(HeuristicMethod.load(tmp_path).predict(TILE, graph),
                                  HeuristicMethod().predict(TILE, graph))
    (tmp_path / "heuristic.json").write_text('{"rule_version": 0}')
    with pytest.raises(ValueError, match="rule version 0"):
        HeuristicMethod.load(tmp_path)


def _saved_heuristic(path: Path, data: dict) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "heuristic.json").write_text(json.dumps({"method": "heuristic", **data}))
    return path


# A saved heuristic loads only when it was saved with this code's rule version; the refusal names both
# versions and the command that writes this rule's.
@pytest.mark.parametrize(("data", "refusal"), [
    ({"rule_version": 1, "task": "tile"}, r"rule version 1, this code has 3; run without --predict-only"),
    ({"rule_version": 2, "task": "tile"}, r"rule version 2, this code has 3; run without --predict-only"),
    ({"rule_version": 3, "task": "tile"}, None),
    ({"rule_version": 3, "task": "layout"}, None),
    ({"rule_version": 3}, None),
    ({"rule_version": 2, "task": "layout"}, r"rule version 2, this code has 3; run without --predict-only"),
    ({"rule_version": 1, "task": "layout"}, r"rule version 1, this code has 3; run without --predict-only"),
    ({"rule_version": 2}, r"rule version 2, this code has 3; run without --predict-only"),
    ({"rule_version": 4, "task": "tile"}, r"rule version 4, this code has 3; run without --predict-only"),
    ({"rule_version": "3", "task": "tile"}, r"rule version '3' \(not a whole number\), this code has 3; run"),
    ({"rule_version": True, "task": "tile"}, r"rule version True \(not a whole number\), this code has 3"),
    ({"rule_version": 1, "task": "mystery"}, r"rule version 1, this code has 3; run without --predict-only"),
], ids=["tile-1", "tile-2", "tile-3", "layout-3", "no-task-3", "layout-2", "layout-1", "no-task-2", "newer",
        "string", "bool", "unknown-task"])
def test_a_saved_heuristic_loads_only_at_this_rule_version(tmp_path, data, refusal):
    path = _saved_heuristic(tmp_path / "model", data)
    if refusal is None:
        assert HeuristicMethod.load(path).task == (data.get("task"))
    else:
        with pytest.raises(SavedModelError, match=refusal):
            HeuristicMethod.load(path)


def test_an_unreadable_saved_task_counts_as_unrecorded(tmp_path):
    (tmp_path / "heuristic.json").write_text('{"rule_version": 3, "task": ["tile"]}')
    assert HeuristicMethod.load(tmp_path).task is None


def test_a_fitted_heuristic_saves_its_task(tiny_competition, tmp_path):
    method = HeuristicMethod()
    public = tiny_competition / "public"
    method.fit(TILE, SplitSource(public, TILE, "train"), SplitSource(public, TILE, "valid"), FitOptions())
    method.save(tmp_path)
    assert json.loads((tmp_path / "heuristic.json").read_text()) == {"method": "heuristic", "rule_version": 3,
                                                                     "task": "tile"}


def _slow_rule_3(graph: LayoutGraph) -> np.ndarray:
    """Rule 3 node by node and config by config, the work counted from the shapes and edges directly;
    only the per-tensor padding and copy facts come from ``layout_geometry`` (tested on their own)."""
    from solutions.features.layout_geometry import layout_context, layout_geometry
    from solutions.features.shapes import node_shapes

    context = layout_context(graph)
    geometry = layout_geometry(graph.node_config_feat, context)
    _, elements, _ = node_shapes(graph.node_feat)
    cost = np.zeros(graph.num_configs)
    for j, node in enumerate(graph.node_config_ids.tolist()):
        opcode = int(graph.node_opcode[node])
        operands = sorted({int(p) for consumer, p in graph.edge_index.tolist() if consumer == node})
        mxu = opcode in (OPCODE_IDS["convolution"], OPCODE_IDS["dot"]) and operands
        a, b = (operands * 2)[:2] if mxu else (None, None)
        work = float(np.sqrt(elements[node] * elements[a] * elements[b])) if mxu else 0.0
        read = float(elements[a] + elements[b]) if mxu else 0.0
        for i in range(graph.num_configs):
            out = geometry.padded_elements[i, j, 0] if geometry.active[i, j, 0] else 0.0
            if opcode == OPCODE_IDS["reshape"]:
                both = out + (geometry.padded_elements[i, j, 1] if geometry.active[i, j, 1] else 0.0)
                cost[i] += MACS_PER_ELEMENT * both if geometry.reshape_copy[i, j] else 0.0
            else:
                waste = out / elements[node] if geometry.active[i, j, 0] and elements[node] > 0 else 1.0
                cost[i] += max(work * waste, MACS_PER_ELEMENT * (out + read))
    return cost


@pytest.mark.parametrize("collection", [c for c in COLLECTIONS if c.task.name == "layout"],
                         ids=lambda c: c.name)
def test_rule_3_matches_a_slow_reference_on_the_tiny_competition(tiny_competition: Path, collection):
    for _, graph in iter_split(tiny_competition / "public", collection, "valid"):
        np.testing.assert_allclose(layout_cost(graph), _slow_rule_3(graph), rtol=1e-9)
