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
    """The two-stage bootstrap written out draw by draw and unit by unit (the same random numbers, drawn
    as the fast path draws them: the units of every draw, then a uniform number per place)."""
    diff = np.asarray(new, float) - np.asarray(base, float)
    rng = np.random.default_rng(seed)
    count, most = len(groups), max(len(g) for g in groups)
    picked = rng.integers(0, count, size=(draws, count))
    uniform = rng.random((draws, count, most))
    means = []
    for d in range(draws):
        values = []
        for j in range(count):
            unit = groups[picked[d, j]]
            values += [diff[unit[int(uniform[d, j, k] * len(unit))]] for k in range(len(unit))]
        means.append(sum(values) / len(values))
    return np.quantile(means, [0.025, 0.975])


UNEQUAL = ["draw 0", "draw 0", "draw 1", "draw 2", "draw 2", "draw 2"]


@pytest.mark.parametrize(("units", "runs"), [(["draw 0"] * 3 + ["draw 1"] * 3 + ["draw 2"] * 3, 9), (None, 5),
                                             (["competition 0", "competition 1"], 2), (UNEQUAL, 6)])
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
    (["draw 0"] * 3, 3, [3], "draw"),  # one unit: its runs are all there is to resample
    (["draw 0", "draw 0", "draw 1"], 3, [2, 1], "draw"),  # units of unequal size
    (None, 3, [1, 1, 1], "run"),  # no units: each run stands alone
    ([], 3, [1, 1, 1], "run"),
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


def test_grouping_runs_into_units_widens_the_interval_to_what_the_units_alone_give():
    """Runs equal within their unit and different between units: the units are all the information, so
    the two-stage interval is the bootstrap of the unit means, wider than resampling the runs."""
    unit_means = np.array([0.3, -0.1, 0.5, 0.0])
    runs = np.repeat(unit_means, 3)
    units = [f"draw {k}" for k in range(4) for _ in range(3)]
    groups, _ = unit_groups(units, len(runs))
    two_stage = paired_difference(np.zeros(12), runs, groups, draws=500, seed=3)
    units_only = paired_difference(np.zeros(4), unit_means, unit_groups(None, 4)[0], draws=500, seed=3)
    runs_only = paired_difference(np.zeros(12), runs, unit_groups(None, 12)[0], draws=500, seed=3)
    assert (two_stage.low, two_stage.high) == pytest.approx((units_only.low, units_only.high))
    assert two_stage.high - two_stage.low > 1.4 * (runs_only.high - runs_only.low)


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
    assert [(p.graph, p.unit_count, p.unit_word, p.ahead, p.level, p.behind) for p in pairs] == [
        (g1, 2, "draw", 2, 0, 0), (g2, 2, "draw", 0, 0, 2)]
    assert [p.difference.estimate for p in pairs] == pytest.approx([0.1, -0.1])
    only_gbdt = f"transfer {g3}: only gbdt was measured there"
    assert notes == [f"within {g3}: not paired, gbdt has 2 runs and gnn 4, or their units differ (not the "
                     "same bench_real run?)", only_gbdt]
    assert compare_cells(cells, "gbdt", "gnn", protocols=["transfer"]) == ([], [only_gbdt])
    text = compare_real.report(pairs, notes, "gbdt", "gnn")
    assert "| layout:xla:default | 2 | +0.000 [" in text  # the collection row: the mean of +0.1 and -0.1
    assert "fewer than 10 graphs" in text and text.endswith("only gbdt was measured there")
    assert "| 2 / 0 / 0 draws |" in text
    assert "(2 draws: a bootstrap over fewer than 10 units is too narrow" in text


@pytest.mark.parametrize(("base", "new", "protocols", "message"), [
    ("gbdt", "magic", None, "no method 'magic' in these results (they hold gbdt, gnn)"),
    ("gbdt", "gbdt", None, "both sides are 'gbdt': name two different methods"),
    ("gbdt", "gnn", ["within", "withn"], "no protocol 'withn' (bench_real's are transfer, within, across)"),
])
def test_a_comparison_that_cannot_be_made_says_why(base, new, protocols, message):
    cells = [_cell("layout:xla:default:train/a", m, [0.1, 0.2]) for m in ("gbdt", "gnn")]
    with pytest.raises(CompareError, match=message.replace("(", r"\(").replace(")", r"\)")):
        compare_cells(cells, base, new, protocols=protocols)


def test_a_setting_that_changed_nothing_is_level_and_one_unit_or_no_units_are_said():
    g = "layout:xla:default:train/a"
    same = [_cell(g, m, [0.4, 0.5, 0.6], units=["draw 0"] * 3) for m in ("gnn", "gnn-blend")]
    pairs, _ = compare_cells(same, "gnn", "gnn-blend")
    assert (pairs[0].ahead, pairs[0].level, pairs[0].behind) == (0, 1, 0)
    text = compare_real.report(pairs, [], "gnn", "gnn-blend")
    assert "| 0 / 1 / 0 draw |" in text and "(one draw: its interval holds the method seeds' spread" in text
    bare = [{**c, "units": []} for c in same]
    text = compare_real.report(compare_cells(bare, "gnn", "gnn-blend")[0], [], "gnn", "gnn-blend")
    assert "each run is resampled as if independent" in text and "0 / 3 / 0 runs" in text


@pytest.mark.parametrize(("content", "message"), [
    (None, "no such file (bench_real writes data/bench-real/results.json"),
    ("{not json", "not a bench_real results file (Expecting property name"),
    ("[1, 2]", "not a bench_real results file (no list of cells"),
    ('{"cells": [{"graph": "g"}]}', "not a bench_real results file (no list of cells"),
    ('{"cells": [{"graph": "g", "method": "gbdt", "protocol": "within", "runs": null}]}', "no list of"),
    ('{"cells": [{"graph": "g", "method": "gbdt", "protocol": "within", "runs": ["x"]}]}', "no list of"),
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
    assert "| 2 / 0 / 0 competitions |" in out


def test_results_written_before_cells_carried_units_get_them_back(tmp_path):
    """Their order is bench_real's: competition (or draw), then method seed."""
    path = tmp_path / "old.json"
    cells = [{"graph": "g", "method": "gbdt", "protocol": "transfer", "runs": [0.1] * 6},
             {"graph": "g", "method": "gbdt", "protocol": "within", "runs": [0.1] * 9},
             {"graph": "h", "method": "gbdt", "protocol": "within", "runs": [0.1] * 4}]  # counts do not fit
    path.write_text(json.dumps({"seeds": [0, 1, 2], "synth_seeds": "3,4", "draws": 3, "cells": cells}))
    transfer, within, odd = compare_real.read_cells(path)
    assert transfer["units"] == ["competition 3"] * 3 + ["competition 4"] * 3
    assert within["units"] == [f"draw {d}" for d in range(3) for _ in range(3)]
    assert odd["units"] is None


def _paired_rows(protocol, diffs_by_graph, units):
    return [compare_real.Paired(protocol, f"layout:xla:default:valid/g{k}", 0.0, float(np.mean(d)),
                                paired_difference(np.zeros(len(d)), d, unit_groups(units, len(d))[0]),
                                len(set(units)), "competition", 0, 0, tuple(d), tuple(units))
            for k, d in enumerate(diffs_by_graph)]


def test_a_collection_row_in_transfer_keeps_the_spread_its_graphs_share():
    """Every graph ranked by the same competitions' models: a competition that helps helps them all.
    With each graph's mean the same, resampling graphs alone would give a zero-width interval."""
    effects = np.array([0.10, -0.05, 0.20, 0.00, 0.15])  # per competition, the same on every graph
    units = [f"competition {c}" for c in range(5) for _ in range(3)]
    diffs = [np.repeat(effects, 3) + 0.001 * k for k in range(3)]
    rows = _paired_rows("transfer", diffs, units)
    ci = compare_real.collection_difference(rows, draws=400, seed=2)
    assert ci.estimate == pytest.approx(effects.mean() + 0.001)
    assert ci.high - ci.low > 0.1  # the competitions' spread, which the graphs share

    # The same figures by hand: the graphs drawn, then one draw of competitions (and seeds) for all.
    rng = np.random.default_rng(2)
    graphs = rng.integers(0, 3, size=(400, 3))
    comps = rng.integers(0, 5, size=(400, 5))
    places = rng.random((400, 5, 3))
    groups = unit_groups(units, 15)[0]
    means = [np.mean([diffs[g][groups[c][int(places[d, j, k] * 3)]] for g in graphs[d]
                      for j, c in enumerate(comps[d]) for k in range(3)]) for d in range(400)]
    assert (ci.low, ci.high) == pytest.approx(tuple(np.quantile(means, [0.025, 0.975])))


def test_within_graphs_each_graphs_draws_are_resampled_on_their_own():
    units = [f"draw {d}" for d in range(3) for _ in range(3)]
    rng = np.random.default_rng(5)
    diffs = [rng.normal(m, 0.05, size=9) for m in (0.0, 0.1, 0.3)]
    rows = _paired_rows("within", diffs, units)
    ci = compare_real.collection_difference(rows, draws=400, seed=1)
    assert ci.estimate == pytest.approx(np.mean([d.mean() for d in diffs]))
    assert ci.low < ci.estimate < ci.high
    # A graph resampled alone is its own two-stage interval; its neighbours' draws are not tied to it.
    alone = compare_real.collection_difference(rows[:1] * 2, draws=400, seed=1)
    assert alone.low < diffs[0].mean() < alone.high


def test_beyond_noise_pairs_the_same_runs_on_the_pairs_beyond_the_noise(tmp_path, capsys):
    def cell(graph, method, runs, beyond):
        found = _cell(graph, method, runs, protocol="within", units=["draw 0", "draw 1"])
        return found if beyond is None else {**found, "beyond_noise": {"runs": beyond}}

    path = tmp_path / "results.json"
    cells = [cell("layout:xla:default:valid/a", "gbdt", [0.4, 0.4], [0.9, 0.9]),
             cell("layout:xla:default:valid/a", "gnn", [0.3, 0.3], [0.9, 0.95]),
             cell("layout:xla:default:train/b", "gbdt", [0.5, 0.5], None),  # its noise is not known
             cell("layout:xla:default:train/b", "gnn", [0.6, 0.6], None),
             cell("layout:xla:default:proto/c", "gbdt", [0.1, 0.1], [0.5, float("nan")]),  # a run had no pair
             cell("layout:xla:default:proto/c", "gnn", [0.1, 0.1], [0.5, 0.6])]
    path.write_text(json.dumps({"cells": cells}))
    assert compare_real.main([str(path), "gbdt", "gnn", "--statistic", "beyond-noise"]) == 0
    out = capsys.readouterr().out
    assert ("### within: gnn - gbdt, paired run by run, on the pairs apart by more than the measurement "
            "noise") in out
    assert "| layout:xla:default:valid/a | +0.900 | +0.925 | +0.025 [" in out
    assert "left out: within layout:xla:default:train/b: its measurement noise is not known" in out
    assert "left out: within layout:xla:default:proto/c: a run had no pair of configs beyond the noise" in out
    assert compare_real.main([str(path), "gbdt", "gnn"]) == 0  # the official tau: every graph
    out = capsys.readouterr().out
    assert "| layout:xla:default:valid/a | +0.400 | +0.300 | -0.100 [" in out and "train/b |" in out
    former = [{key: value for key, value in c.items() if key != "beyond_noise"} for c in cells]
    path.write_text(json.dumps({"cells": former}))  # written before bench_real recorded them
    assert compare_real.main([str(path), "gbdt", "gnn", "--statistic", "beyond-noise"]) == 2
    err = capsys.readouterr().err
    assert "no cell carries scores on the pairs apart by more than the measurement noise" in err
    assert len(err.strip().splitlines()) == 1
    only_flat = [c for c in cells if c["graph"].endswith("/c")]  # every graph left out on that statistic
    expected = (r"on the pairs apart by more than the measurement noise: no method 'gbdt' in these results "
                r".*left out: within layout:xla:default:proto/c: a run had no pair")
    with pytest.raises(CompareError, match=expected):
        compare_real.compare_statistic(only_flat, "gbdt", "gnn", "beyond-noise")
    tile = [_cell("tile:xla:proto (8 kernels)", m, [0.9, 0.9]) for m in ("gbdt", "gnn")]
    _, notes = compare_real.statistic_cells(tile + cells, "beyond-noise")
    assert "within tile:xla:proto (8 kernels): a tile group, scored by its own metric" in notes
    with pytest.raises(CompareError, match="no statistic 'tau-c'"):
        compare_real.statistic_cells(cells, "tau-c")
    with pytest.raises(SystemExit) as usage:  # argparse's own usage error
        compare_real.main([str(path), "gbdt", "gnn", "--statistic", "tau-c"])
    assert usage.value.code == 2 and "invalid choice: 'tau-c'" in capsys.readouterr().err
