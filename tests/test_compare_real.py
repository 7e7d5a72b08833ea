"""Paired comparisons of two methods of a real-data run (``benchmarks/compare_real.py``)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks import compare_real
from benchmarks.compare_real import CompareError, compare_cells, paired_difference, unit_groups


def _slow_paired_difference(base, new, groups, draws, seed):
    """The two-stage bootstrap written out draw by draw, with the same random numbers."""
    diff = np.asarray(new, float) - np.asarray(base, float)
    rng = np.random.default_rng(seed)
    count, size = len(groups), len(groups[0])
    picked = rng.integers(0, count, size=(draws, count))
    within = rng.integers(0, size, size=(draws, count, size))
    means = []
    for d in range(draws):
        values = [diff[groups[picked[d, j]][within[d, j, k]]] for j in range(count) for k in range(size)]
        means.append(sum(values) / len(values))
    return np.quantile(means, [0.025, 0.975])


@pytest.mark.parametrize(("units", "runs"), [(["draw 0"] * 3 + ["draw 1"] * 3 + ["draw 2"] * 3, 9),
                                             (None, 5), (["competition 0", "competition 1"], 2)])
def test_the_two_stage_bootstrap_matches_a_draw_by_draw_reference(units, runs):
    rng = np.random.default_rng(1)
    base, new = rng.normal(size=runs), rng.normal(size=runs)
    groups, _ = unit_groups(units, runs)
    interval = paired_difference(base, new, groups, draws=300, seed=4)
    assert interval.estimate == pytest.approx(np.mean(new - base))
    assert [interval.low, interval.high] == pytest.approx(_slow_paired_difference(base, new, groups, 300, 4))


@pytest.mark.parametrize(("units", "runs", "sizes", "word"), [
    (["competition 0", "competition 0", "competition 1", "competition 1"], 4, [2, 2], "competition"),
    (["draw 0", "draw 1", "draw 0", "draw 1"], 4, [2, 2], "draw"),  # grouped by label, not position
    (None, 3, [1, 1, 1], "run"),  # results written before runs carried units
    ([], 3, [1, 1, 1], "run"),
    (["draw 0"] * 3, 3, [1, 1, 1], "run"),  # one unit: nothing to resample but the runs
    (["draw 0", "draw 0", "draw 1"], 3, [1, 1, 1], "run"),  # units of unequal size
    (["draw 0", "draw 1"], 3, [1, 1, 1], "run"),  # fewer labels than runs
])
def test_runs_fall_into_units_or_stand_alone(units, runs, sizes, word):
    groups, unit = unit_groups(units, runs)
    assert [len(g) for g in groups] == sizes and unit == word
    assert sorted(np.concatenate(groups).tolist()) == list(range(runs))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=2, max_size=12), st.floats(-0.5, 0.5), st.integers(0, 99))
def test_a_constant_shift_is_found_exactly_and_swapping_the_sides_mirrors_the_interval(base, shift, seed):
    base = np.asarray(base)
    groups, _ = unit_groups(None, len(base))
    shifted = paired_difference(base, base + shift, groups, draws=200, seed=seed)
    assert shifted.estimate == pytest.approx(shift) and shifted.low == pytest.approx(shift)
    assert shifted.high == pytest.approx(shift)
    other = np.roll(base, 1)
    forward = paired_difference(base, other, groups, draws=200, seed=seed)
    backward = paired_difference(other, base, groups, draws=200, seed=seed)
    assert backward.estimate == pytest.approx(-forward.estimate)
    assert (backward.low, backward.high) == pytest.approx((-forward.high, -forward.low))
    assert forward.low <= forward.estimate <= forward.high


def _cell(graph, method, runs, protocol="within", units=None):
    return {"graph": graph, "method": method, "protocol": protocol, "runs": runs,
            "units": units if units is not None else [f"draw {k // 2}" for k in range(len(runs))]}


def test_compare_pairs_each_graph_and_names_what_it_leaves_out():
    g1, g2, g3 = ("layout:xla:default:train/a", "layout:xla:default:valid/b", "layout:xla:random:valid/c")
    cells = [_cell(g1, "gbdt", [0.1, 0.2, 0.3, 0.4]), _cell(g1, "gnn", [0.2, 0.2, 0.5, 0.5]),
             _cell(g2, "gbdt", [0.5, 0.5, 0.5, 0.5]), _cell(g2, "gnn", [0.4, 0.4, 0.4, 0.4]),
             _cell(g3, "gbdt", [0.1, 0.1]), _cell(g3, "gnn", [0.1, 0.1, 0.1, 0.1]),
             _cell(g3, "gbdt", [0.3], protocol="transfer"), _cell(g3, "random", [0.0], protocol="across")]
    pairs, notes = compare_cells(cells, "gbdt", "gnn")
    assert [(p.graph, p.units, p.unit, p.ahead) for p in pairs] == [(g1, 2, "draw", 2), (g2, 2, "draw", 0)]
    assert [p.difference.estimate for p in pairs] == pytest.approx([0.1, -0.1])
    only_gbdt = f"transfer {g3}: only gbdt was measured there"
    assert notes == [f"within {g3}: not paired, gbdt has 2 runs and gnn 4, or their units differ (not the "
                     "same bench_real run?)", only_gbdt]
    assert compare_cells(cells, "gbdt", "gnn", protocols=["transfer"]) == ([], [only_gbdt])
    text = compare_real.report(pairs, notes, "gbdt", "gnn")
    assert "| layout:xla:default | 2 | +0.000 [" in text  # the collection row: the mean of +0.1 and -0.1
    assert "fewer than 10 graphs" in text and text.endswith("only gbdt was measured there")


@pytest.mark.parametrize(("base", "new", "message"), [
    ("gbdt", "magic", "no method 'magic' in these results (they hold gbdt, gnn)"),
    ("gbdt", "gbdt", "both sides are 'gbdt': name two different methods"),
])
def test_a_comparison_that_cannot_be_made_says_why(base, new, message):
    cells = [_cell("layout:xla:default:train/a", m, [0.1, 0.2]) for m in ("gbdt", "gnn")]
    with pytest.raises(CompareError, match=message.replace("(", r"\(").replace(")", r"\)")):
        compare_cells(cells, base, new)


@pytest.mark.parametrize(("content", "message"), [
    (None, "no such file (bench_real writes data/bench-real/results.json"),
    ("{not json", "not a bench_real results file (Expecting property name"),
    ("[1, 2]", "not a bench_real results file (no list of cells"),
    ('{"cells": [{"graph": "g"}]}', "not a bench_real results file (no list of cells"),
    ('{"cells": [{"graph": "g", "method": "gbdt", "protocol": "within", "runs": [0.1]}]}',
     "no method 'gnn' in these results (they hold gbdt)"),
])
def test_the_command_line_refuses_bad_results_in_one_line(tmp_path, capsys, content, message):
    path = tmp_path / "results.json"
    if content is not None:
        path.write_text(content)
    assert compare_real.main([str(path), "gbdt", "gnn"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("compare_real: ") and message in err and len(err.strip().splitlines()) == 1
    if content is None or "Expecting" in message:
        assert str(path) in err


def test_the_command_line_prints_the_paired_tables(tmp_path, capsys):
    path = tmp_path / "results.json"
    cells = [_cell("layout:xla:random:valid/c", m, runs, protocol="transfer",
                   units=["competition 0", "competition 0", "competition 1", "competition 1"])
             for m, runs in (("gnn-live-weights", [0.6, 0.6, 0.6, 0.7]), ("gnn", [0.7, 0.6, 0.7, 0.7]))]
    path.write_text(json.dumps({"cells": cells}))
    assert compare_real.main([str(path), "gnn-live-weights", "gnn"]) == 0
    out = capsys.readouterr().out
    assert "### transfer: gnn - gnn-live-weights, paired run by run" in out
    assert "| layout:xla:random:valid/c | +0.625 | +0.675 | +0.050 [" in out
    assert "| 2 of 2 competitions |" in out
