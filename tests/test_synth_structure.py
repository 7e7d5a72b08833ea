"""The structure the embedded competition shares with the real data, on the generator's side.

Menus of candidate settings, two layout slots for conv/dot tensors, layout groups tied in both searches,
re-measured configurations, the tile normaliser rule, and a cost model in which a setting costs through
its own tensor only. ``tests/test_description.py`` measures the same structure on whole data trees.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from competition.data.synth.layout import layout_space, measure_layout_runs
from competition.data.synth.models import build_program
from competition.data.synth.names import layout_specs


def _programs(source: str, count: int, nodes: int = 400):
    for i, spec in enumerate(layout_specs(np.random.default_rng(5), source, count)):
        rng = np.random.default_rng([5, i])
        graph = build_program(spec, rng, nodes)
        yield graph, layout_space(graph, rng), rng


@pytest.mark.parametrize("source", ["xla", "nlp"])
def test_layout_groups_are_tied_in_both_searches_and_menus_are_small(source):
    tied = []
    for graph, space, rng in _programs(source, 4):
        for search in ("default", "random"):
            runs = measure_layout_runs(graph, rng, search=search, source=source, n_configs=300, space=space)
            feat = runs.node_config_feat
            for g in range(space.groups):
                members = np.flatnonzero(space.group == g)
                assert all(np.array_equal(feat[:, members[0]], feat[:, j]) for j in members[1:])
            for j in range(feat.shape[1]):
                assert 1 <= len(np.unique(feat[:, j], axis=0)) <= 9
        tied.append(space.groups / max(len(space.config_ids), 1))
    assert np.median(tied) <= 0.6, tied


def test_random_search_repeats_configs_and_repeats_measure_almost_the_same():
    shares, spreads = [], {"default": [], "random": []}
    for graph, space, rng in _programs("xla", 5):
        for search in ("default", "random"):
            runs = measure_layout_runs(graph, rng, search=search, source="xla", n_configs=400, space=space)
            flat = runs.node_config_feat.reshape(len(runs.config_runtime), -1)
            _, inverse, counts = np.unique(flat, axis=0, return_inverse=True, return_counts=True)
            inverse = inverse.reshape(-1)
            if search == "random":
                shares.append(1 - len(counts) / len(flat))
            for group in np.flatnonzero(counts > 1):
                r = runs.config_runtime[inverse == group]
                spreads[search].append(r.max() / r.min() - 1)
    assert 0.1 <= np.median(shares) <= 0.5, shares
    assert max(spreads["default"]) < 2e-4 and np.median(spreads["default"]) < 5e-5
    assert max(spreads["random"]) < 5e-3 and 1e-5 < np.median(spreads["random"]) < 1e-3


def test_cost_model_completes_partial_layouts_like_a_loop():
    from competition.data.synth.cost_model.layout_cost import complete_layouts

    @settings(max_examples=60, deadline=None)
    @given(st.data())
    def check(data):
        k = data.draw(st.integers(1, 4))
        compiled = np.full((k, 6), -1, dtype=np.int64)
        settings_ = np.full((k, 6), -1, dtype=np.int64)
        for j in range(k):
            rank = data.draw(st.integers(0, 6))
            compiled[j, :rank] = data.draw(st.permutations(range(rank)))
            given_ = data.draw(st.integers(0, rank))
            settings_[j, :given_] = data.draw(st.permutations(range(rank)))[:given_]
        fast = complete_layouts(settings_, compiled)
        for j in range(k):
            head = [int(d) for d in settings_[j] if d >= 0]
            tail = [int(d) for d in compiled[j] if d >= 0 and d not in head]
            assert fast[j].tolist() == head + tail + [-1] * (6 - len(head) - len(tail))

    check()


def test_a_setting_costs_through_its_own_tensor_only():
    """Version 5: changing two groups costs exactly the sum of changing each, neighbours or not (in the
    real graphs with runtimes an additive model of the tensor settings fits exactly)."""
    from competition.data.synth.cost_model import layout_cost

    pairs = linked = 0
    for graph, space, rng in _programs("xla", 6):
        tables = layout_cost.layout_tables(graph, space.config_ids, 1.0, space.physics)
        runs = measure_layout_runs(graph, rng, search="random", source="xla", n_configs=40, space=space)
        defaults = space.default_setting()
        for gp in range(space.groups):
            for gq in range(gp + 1, space.groups):
                p, q = (np.flatnonzero(space.group == g)[0] for g in (gp, gq))
                configs = np.repeat(defaults[None], 4, axis=0)
                # each group takes a setting some measured configuration gave it
                configs[1, space.group == gp] = runs.node_config_feat[1, p]
                configs[2, space.group == gq] = runs.node_config_feat[2, q]
                configs[3, space.group == gp] = runs.node_config_feat[1, p]
                configs[3, space.group == gq] = runs.node_config_feat[2, q]
                base, only_p, only_q, both = layout_cost.layout_runtime(tables, configs)
                assert abs((both - base) - (only_p - base) - (only_q - base)) <= 1e-9 * base, (gp, gq)
                pairs += 1
                # a group that feeds the other's operand directly: where versions 2-4 charged a copy
                operands = {int(o) for n in np.flatnonzero(space.group == gq)
                            for o in graph.operands[int(space.config_ids[n])]}
                linked += any(int(space.config_ids[n]) in operands for n in np.flatnonzero(space.group == gp))
    assert pairs >= 20 and linked >= 1, (pairs, linked)

