"""solutions.pruning: hand-made graphs, slow Python-set references, properties on random DAGs, names."""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np
import pytest
from graph_builders import example_graph, layout_graph_from_edges
from hypothesis import given, settings
from hypothesis import strategies as st
from real_protos import LAYOUT_PROTO, needs_realdata

from benchmarks.realscale import XLA_CONFIGURABLE, XLA_EDGES, XLA_NODES, xla_layout_graph
from competition.data.graphs import LayoutGraph, TileGraph
from solutions import pruning
from solutions.pruning import (
    TRANSFORM_VERSION,
    Compose,
    ConfigurableOnly,
    GraphTransform,
    KHopToConsumers,
    MergeDroppedRuns,
    NodeSelection,
    OneHop,
    PruningStats,
    connected_components,
    graph_ops,
    prune_to_selection,
)

SELECTIONS = [ConfigurableOnly(), ConfigurableOnly(keep_edges=True), OneHop(), KHopToConsumers(0),
              KHopToConsumers(2), KHopToConsumers(3, producers=2)]
MERGES = [MergeDroppedRuns(), MergeDroppedRuns(OneHop()),
          MergeDroppedRuns(KHopToConsumers(1), aggregate="sum", opcode=7)]


# -- slow, obvious references (Python sets and dicts) ----------------------------------------------


def edge_list(graph: LayoutGraph) -> list[tuple[int, int]]:
    return [(int(u), int(v)) for u, v in graph.edge_index]


def ref_within_hops(graph: LayoutGraph, consumer_hops: int, producer_hops: int) -> set[int]:
    consumers, producers = defaultdict(set), defaultdict(set)
    for u, v in edge_list(graph):
        consumers[v].add(u)
        producers[u].add(v)
    seeds = set(graph.node_config_ids.tolist())
    kept = set(seeds)
    for neighbours, hops in ((consumers, consumer_hops), (producers, producer_hops)):
        frontier = set(seeds)
        for _ in range(hops):
            frontier = {w for x in frontier for w in neighbours[x]}
            kept |= frontier
    return kept


def ref_one_hop(graph: LayoutGraph) -> set[int]:
    configurable = set(graph.node_config_ids.tolist())
    kept = set(configurable)
    for u, v in edge_list(graph):
        if u in configurable:
            kept.add(v)
        if v in configurable:
            kept.add(u)
    return kept


def ref_kept(transform, graph: LayoutGraph) -> set[int]:
    if isinstance(transform, ConfigurableOnly):
        return set(graph.node_config_ids.tolist())
    if isinstance(transform, OneHop):
        return ref_one_hop(graph)
    return ref_within_hops(graph, transform.k, transform.producers)


def ref_induced_edges(graph: LayoutGraph, kept: set[int], keep_edges: bool = True) -> list[list[int]]:
    new_id = {old: new for new, old in enumerate(sorted(kept))}
    if not keep_edges:
        return []
    return [list(e)
            for e in sorted({(new_id[u], new_id[v]) for u, v in edge_list(graph) if u in kept and v in kept})]


def ref_merge(graph: LayoutGraph, kept: set[int]) -> tuple[list[int], list[list[int]], list[float]]:
    """(old_to_new, edges, sorted positions) of merging each run of dropped nodes, by depth-first search."""
    dropped = [x for x in range(graph.num_nodes) if x not in kept]
    adjacency = defaultdict(set)
    for u, v in edge_list(graph):
        if u not in kept and v not in kept:
            adjacency[u].add(v)
            adjacency[v].add(u)
    run_first: dict[int, int] = {}
    for start in dropped:  # ascending: the first node seen of a run is its first member
        if start in run_first:
            continue
        stack = [start]
        run_first[start] = start
        while stack:
            x = stack.pop()
            for y in adjacency[x]:
                if y not in run_first:
                    run_first[y] = start
                    stack.append(y)
    # placement: after the last kept node the run reads, if that is later than its first member
    # and earlier than the first kept node reading the run; else at its first member
    reads, read_by = defaultdict(set), defaultdict(set)
    for u, v in edge_list(graph):
        if u not in kept and v in kept:
            reads[run_first[u]].add(v)
        if u in kept and v not in kept:
            read_by[run_first[v]].add(u)
    place = {}
    for first in set(run_first.values()):
        last_read, first_reader = max(reads[first], default=-1), min(read_by[first], default=graph.num_nodes)
        place[first] = last_read + 0.5 if first < last_read < first_reader else first
    items = sorted([(float(x), x) for x in kept] + [(place[first], first) for first in place])
    new_id = {key: i for i, (_, key) in enumerate(items)}
    old_to_new = [new_id[x] if x in kept else new_id[run_first[x]] for x in range(graph.num_nodes)]
    edges = {(old_to_new[u], old_to_new[v]) for u, v in edge_list(graph)}
    return old_to_new, [list(e) for e in sorted(e for e in edges if e[0] != e[1])], [p for p, _ in items]


def ref_components(num_nodes: int, a, b) -> list[frozenset[int]]:
    parent = list(range(num_nodes))

    def find(x: int) -> int:
        while parent[x] != x:
            x = parent[x]
        return x

    for x, y in zip(a, b, strict=True):
        parent[find(int(x))] = find(int(y))
    groups = defaultdict(set)
    for x in range(num_nodes):
        groups[find(x)].add(x)
    return sorted(frozenset(g) for g in groups.values())


def partition(labels: np.ndarray) -> list[frozenset[int]]:
    groups = defaultdict(set)
    for x, label in enumerate(labels.tolist()):
        groups[label].add(x)
    return sorted(frozenset(g) for g in groups.values())


# -- random DAGs -----------------------------------------------------------------------------------


@st.composite
def layout_graphs(draw, max_nodes: int = 22) -> LayoutGraph:
    """Random DAGs in the released conventions (u > v); duplicate edges allowed, to test dedup."""
    n = draw(st.integers(1, max_nodes))
    pairs = [(u, v) for u in range(n) for v in range(u)]
    edges = draw(st.lists(st.sampled_from(pairs), max_size=3 * n)) if pairs else []
    config_ids = sorted(draw(st.sets(st.integers(0, n - 1), max_size=max(1, n // 3))))
    splits = sorted({0} | draw(st.sets(st.integers(1, n), max_size=3)))
    return layout_graph_from_edges(n, edges, config_ids, num_configs=2, node_splits=splits, seed=n)


def check_conventions(graph_in: LayoutGraph, result: pruning.PruneResult) -> None:
    """What every transform promises."""
    out = result.graph
    n_new = out.num_nodes
    assert out.node_feat.shape == (n_new, 140) and out.node_feat.dtype == np.float32
    assert out.node_opcode.shape == (n_new,) and out.node_opcode.dtype == np.uint8
    assert out.edge_index.dtype == np.int64 and out.edge_index.shape[1] == 2
    edges = out.edge_index
    if len(edges):
        assert edges.min() >= 0 and edges.max() < n_new
        assert (edges[:, 0] != edges[:, 1]).all()
        keys = edges[:, 0] * n_new + edges[:, 1]
        assert (np.diff(keys) > 0).all(), "edges must be sorted by (u, v) and unique"
    # every configurable node kept, in order, configs untouched
    ids = out.node_config_ids
    assert ids.dtype == np.int64
    np.testing.assert_array_equal(ids, result.old_to_new[graph_in.node_config_ids])
    np.testing.assert_array_equal(result.new_to_old[ids], graph_in.node_config_ids)
    assert (np.diff(ids) > 0).all()
    assert out.node_config_feat is graph_in.node_config_feat and out.config_runtime is graph_in.config_runtime
    # mappings agree with each other and the features
    kept = result.new_to_old >= 0
    np.testing.assert_array_equal(result.old_to_new[result.new_to_old[kept]], np.flatnonzero(kept))
    np.testing.assert_array_equal(out.node_feat[kept], graph_in.node_feat[result.new_to_old[kept]])
    np.testing.assert_array_equal(out.node_opcode[kept], graph_in.node_opcode[result.new_to_old[kept]])
    assert (np.diff(result.new_to_old[kept]) > 0).all(), "kept nodes keep their relative order"
    # splits: increasing offsets from 0, each the first new node of a computation
    splits = out.node_splits
    assert (splits.shape[0] == 1 and splits[0, 0] == 0 and (np.diff(splits[0]) > 0).all()
            and splits[0, -1] <= n_new)
    assert result.stats == PruningStats.of(graph_in, out)


def ref_splits(graph_in: LayoutGraph, positions: list[int]) -> list[int]:
    """The first new node at or after each old start, duplicates dropped."""
    starts = graph_in.node_splits.reshape(-1).tolist()
    return sorted({sum(1 for p in positions if p < s) for s in starts})


@settings(max_examples=80, deadline=None)
@given(layout_graphs(), st.sampled_from(SELECTIONS))
def test_selections_match_the_set_reference(graph, transform):
    result = transform.prune(graph)
    check_conventions(graph, result)
    kept = ref_kept(transform, graph)
    assert result.new_to_old.tolist() == sorted(kept)
    assert result.graph.edge_index.tolist() == ref_induced_edges(graph, kept,
                                                                 getattr(transform, "keep_edges", True))
    assert result.is_topological  # induced subgraphs keep u > v
    assert (result.old_to_new >= 0).sum() == len(kept)
    assert result.graph.node_splits[0].tolist() == ref_splits(graph, sorted(kept))
    assert not result.is_virtual.any() and (result.member_counts == 1).all()


@settings(max_examples=60, deadline=None)
@given(layout_graphs())
def test_one_hop_keeps_exactly_the_neighbour_set(graph):
    kept = ref_one_hop(graph)
    assert OneHop().prune(graph).new_to_old.tolist() == sorted(kept)
    assert KHopToConsumers(1, producers=1).prune(graph).new_to_old.tolist() == sorted(kept)


@settings(max_examples=40, deadline=None)
@given(layout_graphs(), st.sampled_from(SELECTIONS))
def test_selections_are_idempotent(graph, transform):
    once = transform(graph)
    twice = transform(once)
    for key, value in once.arrays().items():
        np.testing.assert_array_equal(value, twice.arrays()[key], err_msg=key)


@settings(max_examples=80, deadline=None)
@given(layout_graphs(), st.sampled_from(MERGES), st.booleans())
def test_merge_matches_the_reference(graph, transform, with_scipy):
    pruning_with_scipy = graph_ops.WITH_SCIPY
    graph_ops.WITH_SCIPY = with_scipy  # both component labellings; restored below
    try:
        result = transform.prune(graph)
    finally:
        graph_ops.WITH_SCIPY = pruning_with_scipy
    check_conventions(graph, result)
    kept = ref_kept(transform.selection, graph)
    old_to_new, edges, positions = ref_merge(graph, kept)
    assert result.old_to_new.tolist() == old_to_new
    assert result.graph.edge_index.tolist() == edges
    out, virtual = result.graph, result.is_virtual
    assert (result.new_to_old >= 0).sum() == len(kept)
    # virtual nodes: opcode, aggregated features, member counts
    assert (out.node_opcode[virtual] == transform.opcode).all()
    members = result.member_counts
    assert (members.sum() == graph.num_nodes and (members[~virtual] == 1).all()
            and (members[virtual] >= 1).all())
    for node in np.flatnonzero(virtual):
        feats = graph.node_feat[result.old_to_new == node].astype(np.float64)
        expected = feats.mean(axis=0) if transform.aggregate == "mean" else feats.sum(axis=0)
        np.testing.assert_allclose(out.node_feat[node], expected.astype(np.float32), rtol=1e-6)
    # the order promise: edges into a kept consumer keep u > v
    consumer_kept = ~virtual[out.edge_index[:, 0]]
    assert (out.edge_index[consumer_kept, 0] > out.edge_index[consumer_kept, 1]).all()
    assert result.is_topological == bool((out.edge_index[:, 0] > out.edge_index[:, 1]).all())
    assert out.node_splits[0].tolist() == ref_splits(graph, positions)
    # u > v everywhere unless a run reads a kept node at or after one that reads the run
    assert result.is_topological or any(
        max((v for u, v in edge_list(graph) if result.old_to_new[u] == node and v in kept), default=-1)
        >= min((u for u, v in edge_list(graph) if result.old_to_new[v] == node and u in kept),
               default=graph.num_nodes)
        for node in np.flatnonzero(virtual)
    )


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 30).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, max(n - 1, 0)), st.integers(0, max(n - 1, 0))), max_size=2 * n)
)))
def test_component_labellings_agree(case):
    n, pairs = case
    if n == 0:
        pairs = []
    a = np.array([p[0] for p in pairs], np.int64)
    b = np.array([p[1] for p in pairs], np.int64)
    expected = ref_components(n, a, b)
    assert partition(connected_components(n, a, b, use_scipy=False)) == expected
    assert partition(connected_components(n, a, b, use_scipy=True)) == expected


def test_component_labelling_on_a_long_path():
    """A path numbered against the hooking order: many rounds for a naive min-label propagation."""
    n = 2001
    order = np.concatenate([np.arange(0, n, 2), np.arange(1, n, 2)[::-1]])
    labels = connected_components(n, order[:-1], order[1:], use_scipy=False)
    assert len(set(labels.tolist())) == 1


# -- hand-made graphs, expectations listed by hand -------------------------------------------------


def test_example_graph_configurable_only():
    graph = example_graph()
    result = ConfigurableOnly().prune(graph)
    assert result.new_to_old.tolist() == [2, 6]
    assert result.old_to_new.tolist() == [-1, -1, 0, -1, -1, -1, 1, -1]
    assert result.graph.edge_index.shape == (0, 2)
    assert result.graph.node_config_ids.tolist() == [0, 1]
    assert result.graph.node_splits.tolist() == [[0, 1]]  # node 6 starts the second computation (5..7)
    assert result.graph.node_feat[:, 0].tolist() == [2.0, 6.0]
    # 2, 6 not adjacent
    assert ConfigurableOnly(keep_edges=True).prune(graph).graph.edge_index.shape == (0, 2)


def test_example_graph_one_hop():
    result = OneHop().prune(example_graph())
    assert result.new_to_old.tolist() == [0, 1, 2, 3, 5, 6, 7]
    assert result.graph.edge_index.tolist() == [[2, 0], [2, 1], [3, 2], [4, 0], [5, 1], [5, 4], [6, 5]]
    assert result.graph.node_config_ids.tolist() == [2, 5]
    assert result.graph.node_splits.tolist() == [[0, 4]]
    assert result.graph.node_opcode.tolist() == [1, 2, 3, 4, 6, 7, 8]
    assert result.stats == PruningStats(8, 7, 9, 7, 2)


def test_example_graph_k_hops():
    graph = example_graph()
    assert KHopToConsumers(1).prune(graph).new_to_old.tolist() == [2, 3, 6, 7]
    result = KHopToConsumers(2).prune(graph)
    assert result.new_to_old.tolist() == [2, 3, 4, 6, 7]
    assert result.graph.edge_index.tolist() == [[1, 0], [2, 1], [4, 3]]
    assert result.graph.node_config_ids.tolist() == [0, 3]
    assert KHopToConsumers(5).prune(graph).new_to_old.tolist() == [2, 3, 4, 5, 6, 7]
    assert KHopToConsumers(0, producers=1).prune(graph).new_to_old.tolist() == [0, 1, 2, 5, 6]
    assert KHopToConsumers(0).prune(graph).new_to_old.tolist() == [2, 6]


def test_directions_grow_separately():
    """Node 2 is a consumer of 0 and a producer of 3: the producer search must still expand it."""
    graph = layout_graph_from_edges(4, [(2, 0), (2, 1), (3, 2)], [0, 3])
    assert KHopToConsumers(1, producers=2).prune(graph).new_to_old.tolist() == [0, 1, 2, 3]
    assert KHopToConsumers(1, producers=1).prune(graph).new_to_old.tolist() == [0, 2, 3]
    assert KHopToConsumers(0, producers=2).prune(graph).new_to_old.tolist() == [0, 1, 2, 3]


def test_example_graph_merge_configurable_only():
    result = MergeDroppedRuns().prune(example_graph())
    # runs of dropped nodes: {0, 3, 4, 5} (via 5-0, 4-3, 5-4), {1}, {7}
    assert result.old_to_new.tolist() == [0, 1, 2, 0, 0, 0, 3, 4]
    assert result.new_to_old.tolist() == [-1, -1, 2, 6, -1]
    assert result.graph.edge_index.tolist() == [[0, 2], [2, 0], [2, 1], [3, 0], [3, 1], [4, 3]]
    assert not result.is_topological  # run {0, 3, 4, 5} feeds and consumes node 2: a 2-cycle
    assert result.member_counts.tolist() == [4, 1, 1, 1, 1]
    assert result.graph.node_opcode.tolist() == [0, 0, 3, 7, 0]
    assert result.graph.node_feat[:, 0].tolist() == [3.0, 1.0, 2.0, 6.0, 7.0]
    assert result.graph.node_config_ids.tolist() == [2, 3]
    # virtual 0 in computation 1; node 6 opens the second
    assert result.graph.node_splits.tolist() == [[0, 3]]


def test_merge_moves_a_run_after_the_kept_node_it_reads():
    """Run {0, 2} reads node 1 and is read by node 3: placed between them, not at node 0."""
    graph = layout_graph_from_edges(4, [(2, 0), (2, 1), (3, 2)], [1, 3], node_splits=(0, 2))
    result = MergeDroppedRuns().prune(graph)
    assert result.new_to_old.tolist() == [1, -1, 3]
    assert result.old_to_new.tolist() == [1, 0, 1, 2]
    assert result.graph.edge_index.tolist() == [[1, 0], [2, 1]]
    assert result.is_topological
    # the run (at 1.5) joins computation 0; 3 opens the next
    assert result.graph.node_splits.tolist() == [[0, 2]]


def test_merge_cannot_order_a_run_between_crossed_kept_nodes():
    """Run {0, 3, 4} reads node 2 but node 1 reads it: no order keeping 1 before 2 works."""
    graph = layout_graph_from_edges(4, [(1, 0), (2, 1), (3, 2)], [1, 2])
    result = MergeDroppedRuns().prune(graph)
    assert result.old_to_new.tolist() == [0, 1, 2, 3]  # without 4, runs {0} and {3} are separate: fine
    assert result.is_topological
    crossed = layout_graph_from_edges(5, [(1, 0), (2, 1), (3, 2), (4, 0), (4, 3)], [1, 2])
    result = MergeDroppedRuns().prune(crossed)  # run {0, 3, 4}: read by 1, reads 2
    assert result.old_to_new.tolist() == [0, 1, 2, 0, 0]
    assert result.graph.edge_index.tolist() == [[0, 2], [1, 0], [2, 1]]
    assert not result.is_topological


def second_graph() -> LayoutGraph:
    """Two computations (0..3, 4..6), a duplicate edge, one configurable node (3)."""
    edges = [(1, 0), (2, 1), (3, 2), (3, 2), (4, 0), (5, 4), (6, 3), (6, 5)]
    return layout_graph_from_edges(7, edges, [3], node_splits=(0, 4))


def test_second_graph_by_hand():
    graph = second_graph()
    one_hop = OneHop().prune(graph)
    assert one_hop.new_to_old.tolist() == [2, 3, 6]
    assert one_hop.graph.edge_index.tolist() == [[1, 0], [2, 1]]  # the duplicate 3 -> 2 appears once
    assert one_hop.graph.node_splits.tolist() == [[0, 2]]

    only = ConfigurableOnly().prune(graph)
    assert only.graph.node_splits.tolist() == [[0, 1]]  # computation 2 is empty: its start is the end

    merged = MergeDroppedRuns(OneHop()).prune(graph)  # run {0, 1, 4, 5} becomes node 0
    assert merged.old_to_new.tolist() == [0, 0, 1, 2, 0, 0, 3]
    assert merged.graph.edge_index.tolist() == [[1, 0], [2, 1], [3, 0], [3, 2]]
    assert merged.is_topological
    assert merged.graph.node_feat[0, 0] == pytest.approx((0 + 1 + 4 + 5) / 4)
    summed = MergeDroppedRuns(OneHop(), aggregate="sum", opcode=200).prune(graph).graph
    assert summed.node_feat[0, 0] == 10.0 and summed.node_opcode[0] == 200


def test_graph_without_edges_or_configurable_nodes():
    lonely = layout_graph_from_edges(4, [], [1, 3])
    for transform in [*SELECTIONS, *MERGES]:
        check_conventions(lonely, transform.prune(lonely))
    nothing = layout_graph_from_edges(3, [(1, 0), (2, 1)], [])
    assert OneHop()(nothing).num_nodes == 0
    merged = MergeDroppedRuns().prune(nothing)
    assert merged.graph.num_nodes == 1 and merged.old_to_new.tolist() == [0, 0, 0]
    assert OneHop().prune(nothing).stats.summary() == "3 -> 0 nodes (all removed), 2 -> 0 edges (all removed)"


# -- gather, compose, names ------------------------------------------------------------------------


def test_gather():
    graph = example_graph()
    values = np.arange(8, dtype=np.int64) * 10
    one_hop = OneHop().prune(graph)
    assert one_hop.gather(values).tolist() == [0, 10, 20, 30, 50, 60, 70]
    merged = MergeDroppedRuns().prune(graph)
    assert merged.gather(values).tolist() == [30.0, 10.0, 20.0, 60.0, 70.0]  # mean of 0, 30, 40, 50
    assert merged.gather(values, aggregate="sum").tolist() == [120.0, 10.0, 20.0, 60.0, 70.0]
    np.testing.assert_array_equal(merged.gather(graph.node_feat), merged.graph.node_feat)
    with pytest.raises(ValueError, match=r"values has shape \(3,\); expected \(8, \.\.\.\) per input node"):
        merged.gather(np.zeros(3))
    with pytest.raises(ValueError, match="unknown aggregate 'max'"):
        merged.gather(values, aggregate="max")


@settings(max_examples=40, deadline=None)
@given(layout_graphs(), st.lists(st.sampled_from([*SELECTIONS, *MERGES]), max_size=3))
def test_compose_chains_mappings(graph, transforms):
    composed = Compose(transforms).prune(graph)
    current, old_to_new, new_to_old = graph, np.arange(graph.num_nodes), np.arange(graph.num_nodes)
    for transform in transforms:
        step = transform.prune(current)
        old_to_new = np.array([step.old_to_new[i] if i >= 0 else -1 for i in old_to_new], np.int64)
        new_to_old = np.array([new_to_old[i] if i >= 0 else -1 for i in step.new_to_old], np.int64)
        current = step.graph
    for key, value in current.arrays().items():
        np.testing.assert_array_equal(composed.graph.arrays()[key], value, err_msg=key)
    assert composed.old_to_new.tolist() == old_to_new.tolist()
    assert composed.new_to_old.tolist() == new_to_old.tolist()
    assert composed.stats == PruningStats.of(graph, current)


def test_names_and_cache_keys():
    transforms = [
        ConfigurableOnly(), ConfigurableOnly(keep_edges=True), OneHop(), KHopToConsumers(3),
        KHopToConsumers(5), KHopToConsumers(3, producers=1), MergeDroppedRuns(), MergeDroppedRuns(OneHop()),
        MergeDroppedRuns(aggregate="sum"), MergeDroppedRuns(opcode=3), Compose([OneHop()]),
        Compose([KHopToConsumers(3), OneHop()]), Compose([OneHop(), KHopToConsumers(3)]),
    ]
    keys = [t.cache_key for t in transforms]
    assert len(set(keys)) == len(keys), "different transforms must never share a cache key"
    assert all(key.endswith(f"-v{TRANSFORM_VERSION}") for key in keys)
    assert all(set(key) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
               for key in keys)
    assert KHopToConsumers(3).name == "khop_to_consumers(k=3,producers=0)"
    assert KHopToConsumers(3).cache_key == f"khop_to_consumers_k_3_producers_0-v{TRANSFORM_VERSION}"
    assert (MergeDroppedRuns().name
            == "merge_dropped_runs(configurable_only(keep_edges=False),aggregate=mean,opcode=0)")
    assert KHopToConsumers(3) == KHopToConsumers(k=3, producers=0) and hash(OneHop()) == hash(OneHop())
    assert repr(OneHop()) == "<OneHop one_hop>"


def test_transforms_are_callables_returning_graphs():
    graph = example_graph()
    for transform in [*SELECTIONS, *MERGES, Compose([OneHop(), MergeDroppedRuns()])]:
        assert isinstance(transform(graph), LayoutGraph)


# -- bad input -------------------------------------------------------------------------------------


def tile_graph() -> TileGraph:
    return TileGraph(
        node_feat=np.zeros((2, 140), np.float32), node_opcode=np.ones(2, np.uint8),
        edge_index=np.array([[1, 0]]), config_runtime=np.ones(1, np.int64),
        config_feat=np.zeros((1, 24), np.float32), config_runtime_normalizers=np.ones(1, np.int64),
    )


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: OneHop()(tile_graph()), TypeError,
         r"pruning takes a LayoutGraph \(tile graphs have no configurable"),
        (lambda: MergeDroppedRuns()(tile_graph()), TypeError, "got TileGraph"),
        (lambda: Compose([OneHop()])(tile_graph()), TypeError, "got TileGraph"),
        (lambda: KHopToConsumers(-1), ValueError, r"k and producers must be integers >= 0, got k=-1"),
        (lambda: KHopToConsumers(2.5), ValueError, r"got k=2\.5"),
        (lambda: KHopToConsumers(2, producers=-3), ValueError, r"producers=-3"),
        (lambda: MergeDroppedRuns(aggregate="max"), ValueError,
         r"unknown aggregate 'max'; expected one of mean, sum"),
        (lambda: MergeDroppedRuns(opcode=256), ValueError,
         r"opcode must fit node_opcode's uint8 \(0..255\), got 256"),
        (lambda: MergeDroppedRuns(Compose([])), TypeError, r"selection must be a node selection"),
        (lambda: Compose([OneHop(), "one_hop"]), TypeError,
         r"Compose takes pruning transforms, got 'one_hop'"),
        (lambda: prune_to_selection(example_graph(), np.ones(3, bool)), ValueError,
         r"keep has shape \(3,\); expected \(8,\), one flag per node"),
        (lambda: pruning.merge_dropped_runs(example_graph(), np.ones(9, bool)), ValueError,
         r"keep has shape \(9,\)"),
    ],
)
def test_bad_input(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_base_class_is_abstract():
    with pytest.raises(NotImplementedError):
        _ = GraphTransform().name
    with pytest.raises(NotImplementedError):
        GraphTransform().prune(example_graph())


def test_stats():
    stats = PruningStats(nodes_before=43_615, nodes_after=9_294, edges_before=72_000, edges_after=6_372,
                         configurable=2_250)
    assert (stats.node_reduction == pytest.approx(4.693, abs=1e-3)
            and stats.node_ratio == pytest.approx(0.2131, abs=1e-4))
    assert stats.edge_reduction == pytest.approx(11.3, abs=0.01)
    assert stats.summary() == "43,615 -> 9,294 nodes (4.7x), 72,000 -> 6,372 edges (11.3x)"
    assert stats.as_dict()["nodes_after"] == 9_294
    empty = PruningStats(0, 0, 0, 0, 0)
    assert empty.node_ratio == 1.0 and empty.edge_ratio == 1.0 and empty.edge_reduction == float("inf")


# -- real scale and real data ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def xla_graph() -> LayoutGraph:
    return xla_layout_graph()


def test_realscale_graph_has_the_real_extremes(xla_graph):
    assert (xla_graph.num_nodes, xla_graph.num_edges, xla_graph.num_configurable_nodes) == (
        XLA_NODES, XLA_EDGES, XLA_CONFIGURABLE)
    edges = xla_graph.edge_index
    assert (edges[:, 0] > edges[:, 1]).all()
    assert (np.diff(edges[:, 0] * XLA_NODES + edges[:, 1]) > 0).all()
    again = xla_layout_graph()
    for key, value in xla_graph.arrays().items():
        np.testing.assert_array_equal(value, again.arrays()[key], err_msg=key)
    assert set(np.unique(xla_graph.node_config_feat).tolist()) <= set(range(-1, 6))


def test_realscale_pruning_matches_references(xla_graph):
    result = OneHop().prune(xla_graph)
    check_conventions(xla_graph, result)
    assert result.new_to_old.tolist() == sorted(ref_one_hop(xla_graph))
    assert result.stats.node_reduction > 3
    merged = MergeDroppedRuns().prune(xla_graph)
    check_conventions(xla_graph, merged)
    assert merged.member_counts.sum() == XLA_NODES


@needs_realdata(LAYOUT_PROTO)
def test_real_layout_graph_reduction():
    featurize = pytest.importorskip("competition.data.protos.featurize",
                                    reason="the proto featurizer is not available")
    [(_, graph)] = featurize.featurize_file(LAYOUT_PROTO)
    assert (graph.num_nodes, graph.num_configurable_nodes) == (3163, 62)
    for transform in [*SELECTIONS, *MERGES]:
        result = transform.prune(graph)
        check_conventions(graph, result)
        if not isinstance(transform, MergeDroppedRuns):
            assert result.new_to_old.tolist() == sorted(ref_kept(transform, graph))
        else:
            old_to_new, edges, _ = ref_merge(graph, ref_kept(transform.selection, graph))
            assert result.old_to_new.tolist() == old_to_new and result.graph.edge_index.tolist() == edges
    stats = OneHop().prune(graph).stats
    assert (stats.nodes_after, stats.edges_after) == (223, 219)  # 14.2x fewer nodes, 23.3x fewer edges


# -- pruning names (the registry) ------------------------------------------------------------------

SELECTION_NAMES = ["configurable", "configurable:edges", "onehop", "khop:0", "khop:3", "khop:3:1", "khop:0:2"]
CANONICAL_NAMES = [
    *SELECTION_NAMES,
    "merged", *(f"merged:{name}" for name in SELECTION_NAMES if name != "configurable"),
    "onehop+merged", "khop:4+merged", "configurable:edges+khop:2:1",
    "khop:2+configurable:edges+merged:onehop",
]
BUILT = {  # name -> the transform it must build
    "configurable": ConfigurableOnly(), "configurable:edges": ConfigurableOnly(keep_edges=True),
    "onehop": OneHop(), "khop:0": KHopToConsumers(0), "khop:3": KHopToConsumers(3),
    "khop:3:1": KHopToConsumers(3, producers=1),
    "merged": MergeDroppedRuns(), "merged:onehop": MergeDroppedRuns(OneHop()),
    "merged:khop:3:1": MergeDroppedRuns(KHopToConsumers(3, producers=1)),
    "khop:4+merged": Compose([KHopToConsumers(4), MergeDroppedRuns()]),
}


@pytest.mark.parametrize("name", CANONICAL_NAMES)
def test_every_name_round_trips(name):
    transform = pruning.parse_pruning(name)
    assert transform.setting == name == pruning.pruning_setting(transform)
    assert pruning.parse_pruning(transform.setting) == transform  # same cache key: same transform
    graph = example_graph()
    check_conventions(graph, transform.prune(graph))


def test_names_build_the_transforms_they_say():
    for name, transform in BUILT.items():
        assert pruning.parse_pruning(name) == transform, name
        assert transform.setting == name
    assert pruning.parse_pruning("none") is None and pruning.pruning_setting(None) == "none"


def test_names_cover_every_registered_step():
    """Each registered step has a name in the canonical list, and every spelling is documented."""
    assert {name.split("+")[0].split(":")[0] for name in CANONICAL_NAMES} == set(pruning.STEPS)
    help_text = pruning.pruning_help()
    for spelling in pruning.pruning_names():
        assert f"``{spelling}``" in pruning.base.__doc__, spelling
        assert spelling in help_text and f"``{spelling}``" in pruning.__doc__, spelling


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([*SELECTIONS, *[t for t in MERGES if t.setting]]), min_size=1, max_size=3),
       layout_graphs())
def test_transforms_rebuild_from_their_setting(transforms, graph):
    transform = transforms[0] if len(transforms) == 1 else Compose(transforms)
    rebuilt = pruning.parse_pruning(transform.setting)
    assert rebuilt.cache_key == transform.cache_key
    for key, value in transform(graph).arrays().items():
        np.testing.assert_array_equal(rebuilt(graph).arrays()[key], value, err_msg=key)


@pytest.mark.parametrize(("written", "canonical"), [
    ("khop:3:0", "khop:3"), ("merged:configurable", "merged"), (" onehop ", "onehop"),
    ("onehop + merged", "onehop+merged"), ("khop:007", "khop:7"),
])
def test_other_spellings_read_as_the_canonical_name(written, canonical):
    assert pruning.parse_pruning(written).setting == canonical


def test_nested_compose_flattens_and_unnamed_transforms_have_no_setting():
    nested = Compose([Compose([OneHop(), KHopToConsumers(2)]), MergeDroppedRuns()])
    assert nested.setting == "onehop+khop:2+merged"
    for unnamed in (MergeDroppedRuns(aggregate="sum"), MergeDroppedRuns(opcode=121), Compose([]),
                    Compose([OneHop(), MergeDroppedRuns(aggregate="sum")])):
        assert unnamed.setting is None
        with pytest.raises(ValueError, match="has no pruning name"):
            pruning.pruning_setting(unnamed)


VALID = (r"; valid names: none, configurable, configurable:edges, onehop, khop:K, khop:K:P, merged, "
         r"merged:SELECTION, or steps joined by '\+' \(e\.g\. onehop\+merged\)$")


@pytest.mark.parametrize(("name", "problem"), [
    ("", "the name is empty"),
    ("   ", "the name is empty"),
    ("twohop", "unknown step 'twohop'"),
    ("OneHop", "unknown step 'OneHop'"),
    ("one_hop", "unknown step 'one_hop'"),
    ("onehop:3", "onehop takes no arguments, got '3'"),
    ("khop", r"khop takes K or K:P \(khop:3, khop:3:1\), got 'khop'"),
    ("khop:1:2:3", "khop takes K or K:P .*got 'khop:1:2:3'"),
    ("khop:x", r"khop's K \(hops toward consumers\) must be an integer >= 0, got 'x'"),
    ("khop:-1", r"khop's K \(hops toward consumers\) must be an integer >= 0, got '-1'"),
    ("khop:2.5", r"khop's K \(hops toward consumers\) must be an integer >= 0, got '2[.]5'"),
    ("khop:2:y", r"khop's P \(hops toward producers\) must be an integer >= 0, got 'y'"),
    ("khop::1", "step 'khop::1' has an empty argument"),
    ("merged:", "step 'merged:' has an empty argument"),
    ("configurable:all", "configurable takes nothing or ':edges', got 'all'"),
    ("merged:merged", r"merged:SELECTION takes a node selection \(configurable, configurable:edges, onehop, "
                      r"khop:K, khop:K:P\), got 'merged'"),
    ("merged:none", "'none' cannot be combined with other steps"),
    ("none+onehop", "'none' cannot be combined with other steps"),
    ("onehop+none", "'none' cannot be combined with other steps"),
    ("onehop+", "a step is empty"),
    ("+onehop", "a step is empty"),
    ("onehop++merged", "a step is empty"),
    (":onehop", "step ':onehop' has no keyword before ':'"),
])
def test_bad_names(name, problem):
    with pytest.raises(pruning.PruningNameError, match=f"^pruning {re.escape(repr(name))}: {problem}{VALID}"):
        pruning.parse_pruning(name)


@pytest.mark.parametrize("value", [None, 3, True, ["onehop"]])
def test_a_name_must_be_text(value):
    with pytest.raises(pruning.PruningNameError,
                       match=f"^a pruning name is text, got {re.escape(repr(value))}; valid"):
        pruning.parse_pruning(value)


def test_registering_a_step_checks_its_description():
    class Nameless(NodeSelection):
        pass

    class Taken(NodeSelection):
        keyword, syntax, summary = "onehop", ("onehop",), "a second onehop"

    class Undescribed(NodeSelection):
        keyword = "undescribed"

    for cls, message in [(Nameless, "keyword must be a lower-case word"),
                         (Taken, "'onehop' is taken by OneHop"),
                         (Undescribed, "needs a syntax and a summary")]:
        with pytest.raises(ValueError, match=message):
            pruning.register_step(cls)
    assert pruning.STEPS["onehop"] is OneHop and "undescribed" not in pruning.STEPS
