"""competition.stats: intervals, paired comparison, shake-up and ensembles.

The fast paths (per-graph scores once, vectorised resampling) are checked against slow references
that rescore every graph of every draw with the readable per-graph metric, on hand-made solutions.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from competition import stats
from competition.cli import main
from competition.collections import COLLECTIONS, parse_row_id
from competition.metrics import kendall_tau_score, tile_slowdown_score
from competition.predictions import write_submission
from competition.scoring import load_solution, score_rows
from competition.stats import noise as stats_noise
from competition.stats.bootstrap import CollectionScores, GraphScores
from competition.stats.ensemble import EnsembleError, blend_row, ensemble, infer_expected, parse_weights
from competition.stats.shakeup import split_masks
from competition.submission import validate_submission
from competition.tasks import LAYOUT, TILE, TILE_TOP_K

# ---------------------------------------------------------------------------------------------
# A hand-made competition: graphs per collection, labels and three kinds of submissions.


def make_case(graphs: dict[str, int] | None = None, configs: int = 40, seed: int = 0):
    """Solution text and a dict of submissions (true / random / reversed rankings) as rows."""
    graphs = graphs or {c.name: 6 for c in COLLECTIONS}
    rng = np.random.default_rng(seed)
    lines = ["ID,Runtimes,Normalizers,Usage"]
    truth, noise, reverse, labels = {}, {}, {}, {}
    g = 0
    for collection in COLLECTIONS:
        for i in range(graphs.get(collection.name, 0)):
            row_id = f"{collection.name}:g{i:03d}"
            n = int(rng.integers(3, configs)) if collection.task.name == "tile" else configs
            runtime = rng.integers(100, 10_000, size=n)
            usage = "Public" if g % 2 == 0 else "Private"
            g += 1
            if collection.task.name == "tile":
                normalizer = np.full(n, 5000)
                lines.append(f"{row_id},{';'.join(map(str, runtime))},{';'.join(map(str, normalizer))},"
                             f"{usage}")
            else:
                lines.append(f"{row_id},{';'.join(map(str, runtime))},,{usage}")
            labels[row_id] = runtime
            order = np.argsort(runtime, kind="stable")
            shuffled = rng.permutation(n)
            k = TILE_TOP_K if collection.task.name == "tile" else n
            truth[row_id], noise[row_id], reverse[row_id] = order[:k], shuffled[:k], order[::-1][:k]
    # One Ignored graph: never scored, must never enter an interval.
    lines.append(f"layout:xla:random:ignored,{';'.join(['5', '6', '7'])},,Ignored")
    for rows in (truth, noise, reverse):
        rows["layout:xla:random:ignored"] = np.array([2, 1, 0])
    solution = load_solution("\n".join(lines).encode())
    return solution, {"truth": truth, "random": noise, "reverse": reverse}


@pytest.fixture(scope="module")
def case():
    return make_case()


# ---------------------------------------------------------------------------------------------
# Slow references: every draw rescored graph by graph with the per-graph metric functions.


def slow_graph_score(solution, row_id: str, ranking: np.ndarray) -> float:
    collection, _ = parse_row_id(row_id)
    labels = solution.labels[collection.name]
    g = labels.ids.index(row_id)
    runtimes = labels.runtimes[labels.offsets[g]:labels.offsets[g + 1]]
    if collection.task.name == "tile":
        normalizers = labels.normalizers[labels.offsets[g]:labels.offsets[g + 1]]
        return tile_slowdown_score(ranking, runtimes, normalizers)
    return kendall_tau_score(ranking, runtimes)


def slow_draws(solution, rows, scored: GraphScores, draws: int, seed: int) -> tuple[np.ndarray, dict]:
    """Overall and per-collection score of every bootstrap draw, rescoring each resampled graph."""
    indices = stats.draw_graph_indices({n: len(c) for n, c in scored.collections.items()}, draws, seed)
    per_collection = {name: np.empty(draws) for name in scored.collections}
    for d in range(draws):
        for name, c in scored.collections.items():
            picked = [c.ids[i] for i in indices[name][d]]
            per_collection[name][d] = sum(slow_graph_score(solution, i, rows[i])
                                          for i in picked) / len(picked)
    overall = np.array([np.mean([per_collection[n][d] for n in per_collection]) for d in range(draws)])
    return overall, per_collection


def quantiles(values: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    alpha = (1 - confidence) / 2
    return float(np.quantile(values, alpha)), float(np.quantile(values, 1 - alpha))


# ---------------------------------------------------------------------------------------------
# report


def test_report_matches_a_loop_that_rescores_each_draw(case):
    solution, subs = case
    rows = subs["random"]
    scored = stats.per_graph_scores(rows, solution)
    fast = stats.report(scored, draws=60, seed=3, method="percentile")
    overall, per_collection = slow_draws(solution, rows, scored, 60, 3)
    assert (fast.overall.low, fast.overall.high) == pytest.approx(quantiles(overall), abs=1e-12)
    for name, ci in fast.collections.items():
        assert (ci.low, ci.high) == pytest.approx(quantiles(per_collection[name]), abs=1e-12)


@pytest.mark.parametrize("usage", ["all", "Public", "Private"])
def test_point_estimates_are_the_official_scores(case, usage):
    solution, subs = case
    official = score_rows(subs["random"], solution)
    result = stats.report(stats.per_graph_scores(subs["random"], solution, usage=usage), draws=50)
    expected = {"all": (official.score, official.collections),
                "Public": (official.public, official.public_collections),
                "Private": (official.private, official.private_collections)}[usage]
    assert result.overall.estimate == pytest.approx(expected[0], abs=1e-12)
    assert {n: ci.estimate for n, ci in result.collections.items()} == pytest.approx(expected[1], abs=1e-12)
    assert all(ci.contains(ci.estimate) for ci in [result.overall, *result.collections.values()])


def test_ignored_rows_are_never_scored(case):
    solution, subs = case
    scored = stats.per_graph_scores(subs["random"], solution)
    assert "layout:xla:random:ignored" not in scored.collections["layout:xla:random"].ids
    assert len(scored.collections["layout:xla:random"]) == 6


@pytest.mark.parametrize("method", ["bootstrap-t", "percentile"])
def test_same_seed_same_numbers_other_seed_other_numbers(case, method):
    solution, subs = case
    scored = stats.per_graph_scores(subs["random"], solution)
    first, again = stats.report(scored, seed=7, method=method), stats.report(scored, seed=7, method=method)
    assert first.to_json_dict() == again.to_json_dict()
    assert stats.report(scored, seed=8, method=method).overall != first.overall


def test_the_t_interval_draws_nothing(case):
    solution, subs = case
    scored = stats.per_graph_scores(subs["random"], solution)
    assert stats.report(scored, seed=7).overall == stats.report(scored, seed=8, draws=3).overall


def test_report_json_keys_and_worst_graphs_first(case):
    solution, subs = case
    result = stats.report(stats.per_graph_scores(subs["random"], solution), draws=100).to_json_dict()
    assert {"score", "ci_low", "ci_high", "collections", "per_graph", "tile_best_in_top5"} <= set(result)
    assert set(result["collections"]["tile:xla"]) >= {"score", "ci_low", "ci_high", "graphs"}
    per_graph = result["per_graph"]
    assert len(per_graph) == 30
    assert [g["score"] for g in per_graph] == sorted(g["score"] for g in per_graph)
    assert set(per_graph[0]) >= {"id", "collection", "score", "configs"}


def test_tile_best_in_top5_share(case):
    solution, subs = case
    assert stats.report(stats.per_graph_scores(subs["truth"], solution), draws=10).tile_best_in_top5 == 1.0
    reverse = stats.report(stats.per_graph_scores(subs["reverse"], solution), draws=10)
    # every tile graph here has at least 3 configs of distinct runtimes
    assert reverse.tile_best_in_top5 == 0.0


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"draws": 0}, "draws must be a positive integer"),
    ({"draws": 2.5}, "draws must be a positive integer"),
    ({"confidence": 1.0}, "confidence must be between 0 and 1"),
    ({"confidence": 0}, "confidence must be between 0 and 1"),
])
def test_bad_bootstrap_arguments(case, kwargs, message):
    solution, subs = case
    with pytest.raises(ValueError, match=message):
        stats.report(stats.per_graph_scores(subs["random"], solution), **kwargs)


def test_a_single_graph_gives_a_zero_width_interval():
    overall, collections = stats.intervals({"tile:xla": [0.8]}, draws=100)
    assert overall == collections["tile:xla"] == stats.Interval(0.8, 0.8, 0.8)


# ---------------------------------------------------------------------------------------------
# compare


def test_identical_submissions_differ_by_exactly_zero(case):
    solution, subs = case
    a = stats.per_graph_scores(subs["random"], solution, name="a")
    b = stats.per_graph_scores(subs["random"], solution, name="b")
    result = stats.compare(a, b)
    assert result.overall.interval == stats.Interval(0.0, 0.0, 0.0)
    assert result.overall.p_b_better == 0.5
    assert all(d.p_b_better == 0.5 and d.interval.estimate == 0 for d in result.collections.values())
    assert all(d.p_value == d.p_sign_flip == 1.0 and not d.beyond_noise
               for d in [result.overall, *result.collections.values()])
    assert "within noise" in result.verdict()


def test_true_ranking_beats_random(case):
    solution, subs = case
    a = stats.per_graph_scores(subs["random"], solution, name="random")
    b = stats.per_graph_scores(subs["truth"], solution, name="truth")
    result = stats.compare(a, b)
    assert result.overall.p_b_better > 0.99
    assert result.overall.interval.low > 0
    assert result.verdict().startswith("B is better")
    assert result.overall.beyond_noise and result.overall.p_value < 0.05
    assert stats.compare(b, a).overall.p_b_better < 0.01


def test_compare_matches_a_loop_that_rescores_each_draw(case):
    solution, subs = case
    a = stats.per_graph_scores(subs["random"], solution)
    b = stats.per_graph_scores(subs["reverse"], solution)
    fast = stats.compare(a, b, draws=60, seed=5, method="percentile")
    overall_a, per_a = slow_draws(solution, subs["random"], a, 60, 5)
    overall_b, per_b = slow_draws(solution, subs["reverse"], b, 60, 5)
    diff = overall_b - overall_a
    assert (fast.overall.interval.low,
            fast.overall.interval.high) == pytest.approx(quantiles(diff), abs=1e-12)
    assert fast.overall.p_b_better == pytest.approx(np.mean(diff > 0) + 0.5 * np.mean(diff == 0))
    for name, d in fast.collections.items():
        assert (d.interval.low, d.interval.high) == pytest.approx(quantiles(per_b[name] - per_a[name]),
                                                                  abs=1e-12)


def test_compare_lists_graphs_by_difference(case):
    solution, subs = case
    result = stats.compare(stats.per_graph_scores(subs["random"], solution),
                           stats.per_graph_scores(subs["truth"], solution))
    differing = result.to_json_dict(top=5)["graphs_differing_most"]
    assert len(differing) == 5
    assert [abs(g["diff"]) for g in differing] == sorted((abs(g["diff"]) for g in differing), reverse=True)
    assert {"diff", "ci_low", "ci_high", "p_b_better", "collections"} <= set(result.to_json_dict())


def test_compare_refuses_different_graphs(case):
    solution, subs = case
    with pytest.raises(ValueError, match="not scored on the same graphs"):
        stats.compare(stats.per_graph_scores(subs["random"], solution, usage="Public"),
                      stats.per_graph_scores(subs["random"], solution, usage="Private"))


# ---------------------------------------------------------------------------------------------
# Properties on arbitrary per-graph scores


def _graph_scores(values: dict[str, list[float]], name: str = "s") -> GraphScores:
    return GraphScores(name, "all", {
        c: CollectionScores(c, tuple(f"{c}:{i}" for i in range(len(v))), np.array(v, dtype=np.float64),
                            np.full(len(v), 10), np.zeros(len(v), dtype=np.int8))
        for c, v in values.items()
    })


score_lists = st.dictionaries(
    st.sampled_from([c.name for c in COLLECTIONS]),
    st.lists(st.floats(-1, 1, allow_nan=False, allow_subnormal=False), min_size=1, max_size=12),
    min_size=1,
)


@settings(max_examples=60, deadline=None)
@given(score_lists, st.integers(0, 2**32 - 1))
def test_intervals_contain_the_estimate_and_shift_with_the_scores(values, seed):
    overall, collections = stats.intervals(values, draws=300, seed=seed)
    for ci in [overall, *collections.values()]:
        assert ci.low - 1e-12 <= ci.estimate <= ci.high + 1e-12
    shifted, _ = stats.intervals({c: [x + 0.5 for x in v] for c, v in values.items()}, draws=300, seed=seed)
    assert (shifted.low, shifted.high) == pytest.approx((overall.low + 0.5, overall.high + 0.5), abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(score_lists, st.data(), st.sampled_from(stats.INTERVAL_METHODS))
def test_swapping_a_and_b_negates_the_difference(values, data, method):
    other = {c: [data.draw(st.floats(-1, 1, allow_nan=False)) for _ in v] for c, v in values.items()}
    a, b = _graph_scores(values, "a"), _graph_scores(other, "b")
    ab, ba = stats.compare(a, b, draws=200, method=method), stats.compare(b, a, draws=200, method=method)
    assert ab.overall.interval.estimate == pytest.approx(-ba.overall.interval.estimate, abs=1e-12)
    assert ab.overall.p_b_better == pytest.approx(1 - ba.overall.p_b_better, abs=1e-9)
    assert ab.overall.interval.low == pytest.approx(-ba.overall.interval.high, abs=1e-9)
    assert ab.overall.p_sign_flip == pytest.approx(ba.overall.p_sign_flip, abs=1e-12)
    assert ab.overall.beyond_noise == ba.overall.beyond_noise


# ---------------------------------------------------------------------------------------------
# The t intervals, the sign-flip test, Holm and the notes on thin data


def test_t_intervals_are_the_textbook_ones():
    """Per collection mean +- t(G-1) s / sqrt(G); overall Welch-Satterthwaite over the collections."""
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    values = {"tile:xla": rng.normal(0.8, 0.1, 40), "layout:xla:default": rng.normal(0.2, 0.3, 8),
              "layout:nlp:random": rng.normal(0.4, 0.2, 5)}
    overall, per = stats.intervals(values, confidence=0.9)
    for name, v in values.items():
        low, high = scipy_stats.t.interval(0.9, v.size - 1, loc=v.mean(), scale=scipy_stats.sem(v))
        assert (per[name].low, per[name].high) == pytest.approx((low, high), abs=1e-10)
    var = [v.var(ddof=1) / v.size for v in values.values()]
    df = sum(var) ** 2 / sum(x**2 / (v.size - 1) for x, v in zip(var, values.values(), strict=True))
    half = scipy_stats.t.ppf(0.95, df) * np.sqrt(sum(var)) / len(values)
    mean = np.mean([v.mean() for v in values.values()])
    assert (overall.low, overall.high) == pytest.approx((mean - half, mean + half), abs=1e-10)
    assert stats.report(_graph_scores({k: list(v) for k, v in values.items()}),
                        confidence=0.9).to_json_dict()["df"] == pytest.approx(df)


def test_bootstrap_t_matches_a_loop():
    rng = np.random.default_rng(4)
    values = {"tile:xla": rng.exponential(1.0, 12), "layout:xla:random": rng.normal(0, 1, 8)}
    overall, per = stats.intervals(values, draws=300, seed=2, method="bootstrap-t")
    indices = stats.draw_graph_indices({k: v.size for k, v in values.items()}, 300, 2)
    t_all = []
    for name, v in values.items():
        se = v.std(ddof=1) / np.sqrt(v.size)
        t_star = [(v[i].mean() - v.mean()) / (v[i].std(ddof=1) / np.sqrt(v.size)) for i in indices[name]]
        low_q, high_q = np.quantile(t_star, [0.025, 0.975])
        expected = (v.mean() - high_q * se, v.mean() - low_q * se)
        assert (per[name].low, per[name].high) == pytest.approx(expected)
    for d in range(300):
        draws = {k: v[indices[k][d]] for k, v in values.items()}
        se_d = np.sqrt(sum(x.var(ddof=1) / x.size for x in draws.values())) / 2
        t_all.append((np.mean([x.mean() for x in draws.values()]) - overall.estimate) / se_d)
    se = np.sqrt(sum(v.var(ddof=1) / v.size for v in values.values())) / 2
    low_q, high_q = np.quantile(t_all, [0.025, 0.975])
    assert (overall.low, overall.high) == pytest.approx((overall.estimate - high_q * se,
                                                         overall.estimate - low_q * se))


def _brute_sign_flip(diffs: dict[str, np.ndarray]) -> float:
    from itertools import product

    observed = abs(np.mean([d.mean() for d in diffs.values()]))
    flat = np.concatenate(list(diffs.values()))
    sizes = [d.size for d in diffs.values()]
    extreme = 0
    for signs in product((-1.0, 1.0), repeat=flat.size):
        parts = np.split(np.array(signs) * flat, np.cumsum(sizes)[:-1])
        extreme += abs(np.mean([p.mean() for p in parts])) >= observed - 1e-12
    return extreme / 2**flat.size


@pytest.mark.parametrize("sizes", [(8,), (3, 4), (2, 2, 5)])
def test_sign_flip_test_enumerates_every_pattern(sizes):
    from competition.stats.sign_flip import sign_flip_p_values

    rng = np.random.default_rng(sum(sizes))
    names = [c.name for c in COLLECTIONS][:len(sizes)]
    diffs = {n: rng.normal(0.2, 1, g) for n, g in zip(names, sizes, strict=True)}
    overall, per = sign_flip_p_values(diffs, draws=100, seed=0)
    assert overall == pytest.approx(_brute_sign_flip(diffs))
    for name, d in diffs.items():
        assert per[name] == pytest.approx(_brute_sign_flip({name: d}))
    assert sign_flip_p_values({"tile:xla": np.ones(8)}, draws=10, seed=0)[1]["tile:xla"] == 2 / 256


def test_sign_flip_test_keeps_its_level_when_it_samples_patterns():
    """Over 40 graphs the patterns are drawn; p = (1 + as extreme) / (1 + draws) stays valid and
    is never 0."""
    from competition.stats.sign_flip import sign_flip_p_values

    rng = np.random.default_rng(9)
    p = np.array([sign_flip_p_values({"tile:xla": rng.normal(size=40)}, draws=199, seed=i)[0]
                  for i in range(400)])
    assert p.min() >= 1 / 200 and 0.02 <= np.mean(p < 0.05) <= 0.08


def test_verdict_needs_the_interval_and_the_sign_flip_test():
    """Five graphs all in B's favour: the t interval excludes 0, but 2 of 32 sign patterns are as
    extreme (p = 0.0625), so the exact test, and the verdict, do not call B better."""
    a = _graph_scores({"layout:xla:default": [0.1, 0.2, 0.3, 0.4, 0.5]}, "a")
    b = _graph_scores({"layout:xla:default": [0.2, 0.31, 0.39, 0.52, 0.6]}, "b")
    result = stats.compare(a, b)
    d = result.overall
    assert d.interval.low > 0 and d.p_sign_flip == pytest.approx(2 / 32)
    assert not d.beyond_noise and d.p_value == pytest.approx(2 / 32)
    assert "sign-flip test does not confirm it" in result.verdict()
    assert stats.compare(a, b, method="percentile").overall.beyond_noise  # the 1.0 rule: the interval alone


def test_holm_adjusts_as_published():
    # Holm (1979) step-down: sorted p times (m, m-1, ...), running maximum, capped at 1.
    assert stats.holm([0.01, 0.04, 0.03, 0.005]).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.holm([0.5, 0.9]).tolist() == pytest.approx([1.0, 1.0])
    assert stats.holm([]).size == 0


def test_within_noise_of_best_adjusts_over_every_pair(case):
    solution, subs = case
    scored = {k: stats.per_graph_scores(subs[k], solution, name=k) for k in ("truth", "random", "reverse")}
    scored["again"] = stats.per_graph_scores(subs["truth"], solution, name="again")
    verdict = stats.within_noise_of_best(scored)
    assert verdict.best == "truth" and verdict.pairs == 6
    assert verdict.mark("truth") == "*" and verdict.mark("again") == "~" and verdict.mark("random") == ""
    # Holm by hand over the six pairs: the k-th smallest p times (7 - k), running maximum.
    names = list(scored)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    raw = {pair: stats.compare(scored[pair[0]], scored[pair[1]]).overall.p_value for pair in pairs}
    running, adjusted = 0.0, {}
    for k, pair in enumerate(sorted(pairs, key=raw.get)):
        running = max(running, min(1.0, (len(pairs) - k) * raw[pair]))
        adjusted[pair] = running
    for other in ("random", "reverse", "again"):
        assert verdict.adjusted_p[other] == pytest.approx(adjusted[("truth", other)])
        assert verdict.within_noise(other) == (adjusted[("truth", other)] >= 0.05)
    with pytest.raises(ValueError, match="not scored on the same graphs"):
        stats.within_noise_of_best({"a": scored["truth"],
                                    "b": stats.per_graph_scores(subs["truth"], solution, usage="Public")})


def test_thin_collections_are_noted_in_the_table_and_the_json(case):
    solution, subs = case
    result = stats.report(stats.per_graph_scores(subs["random"], solution))
    as_json = result.to_json_dict()
    thin = as_json["collections"]["layout:xla:default"]["thin"]
    assert thin["graphs"] == 6 and thin["below"] == stats.THIN_GRAPHS == as_json["thin_graphs"]
    assert thin["measured_graphs"] == 6 and 0.5 < thin["measured_coverage"] <= 1
    note = f"6 graphs < 30: measured coverage {thin['measured_coverage']:.1%} at 6 layout graphs"
    assert note in result.format()
    compared = stats.compare(stats.per_graph_scores(subs["random"], solution),
                             stats.per_graph_scores(subs["truth"], solution))
    assert compared.to_json_dict()["collections"]["tile:xla"]["thin"]["task"] == "tile"
    assert "6 graphs < 30" in compared.format()
    other_level = stats.report(stats.per_graph_scores(subs["random"], solution), confidence=0.9)
    assert other_level.to_json_dict()["collections"]["tile:xla"]["thin"]["measured_coverage"] is None
    many = stats.report(_graph_scores({"tile:xla": [0.5] * 30}))
    assert many.to_json_dict()["collections"]["tile:xla"]["thin"] is None and "< 30" not in many.format()


def test_unknown_interval_method_is_refused(case):
    solution, subs = case
    with pytest.raises(ValueError, match="method must be one of t, bootstrap-t, percentile"):
        stats.report(stats.per_graph_scores(subs["random"], solution), method="bca")


# ---------------------------------------------------------------------------------------------
# shakeup


def test_shakeup_matches_a_loop_over_splits(case):
    solution, subs = case
    scored = [stats.per_graph_scores(subs[k], solution, name=k) for k in ("random", "truth", "reverse")]
    fast = stats.shakeup(scored, draws=40, seed=2)
    masks = split_masks({n: len(c) for n, c in scored[0].collections.items()}, 0.5, 40, 2)
    for d in range(40):
        for s, sub in enumerate(scored):
            public = np.mean([np.mean([x for x, m in zip(c.scores, masks[n][d], strict=True) if m])
                              for n, c in sub.collections.items()])
            private = np.mean([np.mean([x for x, m in zip(c.scores, masks[n][d], strict=True) if not m])
                               for n, c in sub.collections.items()])
            assert fast.public[d, s] == pytest.approx(public, abs=1e-12)
            assert fast.private[d, s] == pytest.approx(private, abs=1e-12)
    summary = fast.summary()
    assert summary[1]["best_on_private"] == 1.0 and summary[1]["chosen_by_public"] == 1.0
    assert fast.pick_is_best == 1.0 and fast.mean_regret == 0.0
    assert "select truth" in fast.advice()


def test_shakeup_splits_keep_the_share_per_collection():
    masks = split_masks({"tile:xla": 10, "layout:nlp:random": 3}, 0.3, 50, 0)
    assert (masks["tile:xla"].sum(axis=1) == 3).all()
    assert (masks["layout:nlp:random"].sum(axis=1) == 1).all()
    assert len({tuple(row) for row in masks["tile:xla"]}) > 20  # really random splits
    again = split_masks({"tile:xla": 10, "layout:nlp:random": 3}, 0.3, 50, 0)
    assert all((masks[n] == again[n]).all() for n in masks)


def test_shakeup_actual_split_is_the_official_public_and_private(case):
    solution, subs = case
    official = score_rows(subs["random"], solution)
    result = stats.shakeup([stats.per_graph_scores(subs["random"], solution)], draws=20)
    assert result.actual_public == pytest.approx([official.public])
    assert result.actual_private == pytest.approx([official.private])
    assert result.summary()[0]["chosen_by_public"] == 1.0
    assert result.advice() == ""


@pytest.mark.parametrize(("share", "sizes", "message"), [
    (0.0, {"tile:xla": 4}, "strictly between 0 and 1"),
    (1.0, {"tile:xla": 4}, "strictly between 0 and 1"),
    (0.5, {"tile:xla": 1}, "tile:xla has 1 scored graph"),
])
def test_shakeup_refuses_splits_it_cannot_make(share, sizes, message):
    with pytest.raises(ValueError, match=message):
        split_masks(sizes, share, 10, 0)


def test_shakeup_json_has_no_nan_when_a_board_is_empty():
    only_public = stats.GraphScores.from_arrays("a", {"tile:xla": [0.9, 1.0, 0.8]})  # every graph Public
    result = stats.shakeup([only_public], draws=10).to_json_dict()
    assert result["submissions"][0]["actual_private"] is None
    json.dumps(result, allow_nan=False)


# ---------------------------------------------------------------------------------------------
# ensemble


def test_blend_of_copies_is_the_input():
    ranking = np.array([3, 0, 2, 1, 4])
    for method in stats.METHODS:
        assert blend_row([ranking, ranking], np.ones(2), method, task=LAYOUT,
                         n_configs=5).tolist() == ranking.tolist()


def test_blend_layout_weights_and_ties():
    a, b = np.array([0, 1, 2, 3]), np.array([3, 2, 1, 0])
    # Equal weights: every config has mean position 1.5; ties follow the first input.
    assert blend_row([a, b], np.ones(2), "rank-mean", task=LAYOUT, n_configs=4).tolist() == [0, 1, 2, 3]
    assert blend_row([a, b], np.array([1.0, 2.0]), "rank-mean", task=LAYOUT,
                     n_configs=4).tolist() == [3, 2, 1, 0]
    assert blend_row([a, b], np.array([1.0, 2.0]), "borda", task=LAYOUT, n_configs=4).tolist() == [3, 2, 1, 0]


def test_tile_rank_mean_and_borda_differ_as_documented():
    # Config 9 is first for one input and unlisted by the other two; config 5 is 2nd for all three.
    first = np.array([9, 5, 1, 2, 3])
    second = third = np.array([0, 5, 6, 7, 8])
    rank_mean = blend_row([first, second, third], np.ones(3), "rank-mean", task=TILE, n_configs=100)
    borda = blend_row([first, second, third], np.ones(3), "borda", task=TILE, n_configs=100)
    # rank-mean, an unlisted config at position (5 + 99) / 2 = 52: 5 -> 1, 0 -> 17.3, 6 -> 18.7, 7 -> 19.3,
    # 8 -> 20, and the lone pick 9 -> 34.7 drops out of the top 5.
    assert rank_mean.tolist() == [5, 0, 6, 7, 8]
    # borda (5 - position points): 5 -> 12, 0 -> 10, 6 -> 6, 9 -> 5, 7 -> 4: the lone pick stays in.
    assert borda.tolist() == [5, 0, 6, 9, 7]
    assert len(rank_mean) == TILE_TOP_K


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 30), st.integers(1, 4), st.data())
def test_tile_blend_of_copies_keeps_the_top5(n, copies, data):
    ranking = np.array(data.draw(st.permutations(range(n))))[:TILE_TOP_K]
    for method in stats.METHODS:
        blended = blend_row([ranking] * copies, np.ones(copies), method, task=TILE, n_configs=n)
        assert blended.tolist() == ranking.tolist()


def test_ensemble_refuses_different_ids_and_names_them(case):
    solution, subs = case
    short = dict(subs["random"])
    del short["tile:xla:g000"]
    with pytest.raises(EnsembleError, match=r"short lacks 1 ID\(s\) that full cover\(s\): tile:xla:g000"):
        ensemble({"full": subs["truth"], "short": short}, solution.expected_configs())


@pytest.mark.parametrize(("text", "message"), [
    ("1,2", "lists 2 weight"), ("1,-1,1", "positive finite"), ("a,b,c", "comma-separated numbers"),
    ("1,nan,1", "positive finite"),
])
def test_bad_weights(text, message):
    with pytest.raises(EnsembleError, match=message):
        parse_weights(text, 3)


def test_ensemble_of_files_is_valid_and_scores(case, tmp_path):
    solution, subs = case
    paths = [write_submission(tmp_path / f"{k}.csv", subs[k]) for k in ("truth", "random", "reverse")]
    result = stats.ensemble_files(paths, tmp_path / "e.csv", weights=np.array([3.0, 1.0, 1.0]),
                                  expected=solution.expected_configs(), counts_from="solution")
    checked = validate_submission(result.out, solution.expected_configs())
    assert checked.ok and result.rows == len(subs["truth"])
    assert score_rows(checked.rows, solution).score > score_rows(subs["random"], solution).score


def test_inferred_counts_accept_what_the_data_accepts(case, tmp_path):
    solution, subs = case
    paths = [write_submission(tmp_path / f"{k}.csv", subs[k]) for k in ("truth", "random")]
    result = stats.ensemble_files(paths, tmp_path / "e.csv")
    assert result.counts_from == "inferred"
    assert validate_submission(result.out, solution.expected_configs()).ok


def test_inferred_counts_read_long_and_quoted_cells(tmp_path):
    path = tmp_path / "s.csv"
    permutation = ";".join(map(str, range(200_000)[::-1]))  # longer than the csv module's field limit
    path.write_text(f'ID,TopConfigs\nlayout:nlp:random:a,"{permutation}"\ntile:xla:b,3;0;9;1;2\njunk\n')
    assert infer_expected([path]) == {"layout:nlp:random:a": 200_000, "tile:xla:b": 10}


def test_ensemble_names_an_invalid_input(case, tmp_path):
    solution, subs = case
    good = write_submission(tmp_path / "good.csv", subs["truth"])
    bad = tmp_path / "bad.csv"
    bad.write_text(good.read_text().replace("tile:xla:g001,", "tile:xla:g001,0;0;", 1))
    with pytest.raises(EnsembleError,
                       match=r"bad.csv is not a valid submission:\n.*line \d+ \(ID tile:xla:g001\)"):
        stats.ensemble_files([good, bad], tmp_path / "e.csv", expected=solution.expected_configs())
    assert not (tmp_path / "e.csv").exists()


# ---------------------------------------------------------------------------------------------
# The commands


@pytest.fixture(scope="module")
def files(case, tmp_path_factory):
    solution, subs = case
    folder = tmp_path_factory.mktemp("stats_cli")
    solution_path = folder / "solution.csv"
    solution_path.write_text(_solution_text(solution))
    paths = {k: write_submission(folder / f"{k}.csv", rows) for k, rows in subs.items()}
    return folder, solution_path, paths


def _solution_text(solution) -> str:
    usage_names = {0: "Public", 1: "Private", 2: "Ignored"}
    lines = ["ID,Runtimes,Normalizers,Usage"]
    for labels in solution.labels.values():
        for g, row_id in enumerate(labels.ids):
            part = slice(labels.offsets[g], labels.offsets[g + 1])
            normalizers = (";".join(map(str, labels.normalizers[part])) if labels.normalizers is not None
                           else "")
            lines.append(f"{row_id},{';'.join(map(str, labels.runtimes[part]))},{normalizers},"
                         f"{usage_names[int(labels.usage[g])]}")
    return "\n".join(lines) + "\n"


def _json(capsys, argv) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_report_and_compare_json(files, capsys):
    _, solution, paths = files
    report = _json(capsys, ["report", str(paths["random"]), "--solution", str(solution), "--json",
                            "--bootstrap", "500", "--seed", "4"])
    assert (report["draws"] == 500 and report["seed"] == 4
            and report["ci_low"] <= report["score"] <= report["ci_high"])
    compared = _json(capsys,
                     ["compare", str(paths["random"]), str(paths["truth"]), "--solution", str(solution),
                      "--json"])
    assert compared["p_b_better"] > 0.99
    assert set(compared["collections"]["tile:xla"]) >= {"diff", "ci_low", "ci_high", "p_b_better"}


def test_cli_text_output(files, capsys):
    _, solution, paths = files
    assert main(["report", str(paths["truth"]), "--solution", str(solution), "--usage", "Public"]) == 0
    out = capsys.readouterr().out
    assert "95% interval" in out and "Public graphs only" in out and "worst 10 of 15 graphs" in out
    assert main(["shakeup", str(paths["truth"]), str(paths["random"]), "--solution", str(solution),
                 "--draws", "100"]) == 0
    assert f"select {paths['truth']}" in capsys.readouterr().out


# compare's text after the verdict: (A, B, --top, graphs listed, whether "the same on every graph" is said).
# "one_differs" is the true ranking with one layout graph reversed. --top 0 lists no graph and says
# nothing about them unless every graph really scores the same (it used to claim "the same" always).
COMPARE_GRAPH_LISTS = [
    ("random", "truth", "10", 10, False),
    ("random", "truth", "3", 3, False),
    ("random", "truth", "0", 0, False),
    ("truth", "one_differs", "10", 1, False),
    ("truth", "one_differs", "0", 0, False),
    ("truth", "truth", "10", 0, True),
    ("truth", "truth", "0", 0, True),
]


@pytest.mark.parametrize(("a", "b", "top", "listed", "same"), COMPARE_GRAPH_LISTS)
def test_cli_compare_lists_differing_graphs(case, files, capsys, a, b, top, listed, same):
    _, subs = case
    folder, solution, paths = files
    one = dict(subs["truth"])
    row_id = "layout:xla:default:g000"
    one[row_id] = subs["reverse"][row_id]
    paths = {**paths, "one_differs": write_submission(folder / "one_differs.csv", one)}
    assert main(["compare", str(paths[a]), str(paths[b]), "--solution", str(solution), "--top", top,
                 "--bootstrap", "50"]) == 0
    out = capsys.readouterr().out
    after = out.split("\n\n", 1)[1] if "\n\n" in out else ""
    rows = [line for line in after.splitlines()[2:] if line.strip()] if "differ most" in after else []
    assert len(rows) == listed, out
    assert ("differ most" in out) == (listed > 0)
    assert ("A and B score the same on every graph" in out) == same
    if listed == 1:
        assert rows[0].endswith(row_id)


def test_cli_shakeup_and_ensemble_json(files, capsys):
    folder, solution, paths = files
    shaken = _json(capsys, ["shakeup", str(paths["truth"]), str(paths["random"]), "--solution", str(solution),
                            "--draws", "200", "--public-share", "0.3", "--json"])
    assert shaken["public_share"] == 0.3 and len(shaken["submissions"]) == 2
    out = folder / "blend.csv"
    blended = _json(capsys, ["ensemble", str(paths["truth"]), str(paths["random"]), "--out", str(out),
                             "--solution", str(solution), "--weights", "2,1", "--method", "borda", "--json"])
    assert blended["counts_from"] == "solution" and [i["weight"] for i in blended["inputs"]] == [2.0, 1.0]
    assert set(blended["scores"]) == {str(paths["truth"]), str(paths["random"]), str(out)}


def test_cli_ensemble_takes_data_and_solution_together(tiny_competition, tmp_path, capsys):
    """The IDs and counts from --data, the scores from --solution; two folders of different graphs are
    refused (exit 1) with the IDs that differ."""
    public, solution = tiny_competition / "public", tiny_competition / "private" / "solution.csv"
    inputs = [tmp_path / "a.csv", tmp_path / "b.csv"]
    for path in inputs:
        path.write_bytes((public / "sample_submission.csv").read_bytes())
    out = tmp_path / "blend.csv"
    blended = _json(capsys, ["ensemble", *map(str, inputs), "--out", str(out), "--data", str(public),
                             "--solution", str(solution), "--json"])
    assert blended["counts_from"] == "data" and set(blended["scores"]) == {*map(str, inputs), str(out)}
    other = tmp_path / "other"
    from competition.data.synth import generate_competition

    generate_competition(other, scale="tiny", seed=1)
    out.unlink()
    assert main(["ensemble", *map(str, inputs), "--out", str(out), "--data", str(public), "--solution",
                 str(other / "private" / "solution.csv")]) == 1
    assert "are not the same test graphs: 24 IDs differ, e.g. layout:" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(("argv", "code", "message"), [
    (["report", "{missing}", "--solution", "{solution}"], 2, "no such file"),
    (["report", "{broken}", "--solution", "{solution}"], 1, "missing-id"),
    (["compare", "{truth}", "{broken}", "--solution", "{solution}"], 1, "broken.csv: INVALID submission"),
    (["report", "{truth}", "--solution", "{truth}"], 1, "unusable solution file"),
    (["ensemble", "{truth}", "{broken}", "--out", "{out}"], 1, "broken.csv lacks 1 ID(s) that"),
    (["ensemble", "{truth}", "{random}", "--out", "{out}", "--weights", "1"], 2, "lists 1 weight"),
    (["ensemble", "{truth}", "{random}", "--out", "{truth}"], 2, "is one of the inputs"),
    (["ensemble", "{truth}", "--out", "{out}"], 2, "at least 2 submissions"),
    (["shakeup", "{truth}", "{truth}", "--solution", "{solution}"], 2, "listed twice"),
])
def test_cli_refusals(files, capsys, argv, code, message):
    folder, solution, paths = files
    broken = folder / "broken.csv"
    broken.write_text("\n".join(paths["truth"].read_text().splitlines()[:-1]) + "\n")
    values = {"missing": folder / "nope.csv", "solution": solution, "broken": broken, "out": folder / "o.csv",
              **paths}
    assert main([a.format(**{k: str(v) for k, v in values.items()}) for a in argv]) == code
    assert message in capsys.readouterr().err
    assert not (folder / "o.csv").exists()


# ---------------------------------------------------------------------------------------------
# solve's validation intervals and make demo's noise marks (tiny competition)


@pytest.fixture(scope="module")
def solved_tiny(tiny_competition, tmp_path_factory):
    from solutions.methods.base import FitOptions
    from solutions.solve.runner import solve

    folder = tmp_path_factory.mktemp("solved")
    options = FitOptions(seed=0, progress=False)
    runs = {name: solve(tiny_competition / "public", method, folder / f"{name}.csv", options=options)
            for name, method in (("heuristic", "heuristic"), ("again", "heuristic"), ("random", "random"))}
    return tiny_competition, runs


def test_solve_reports_validation_intervals(solved_tiny):
    _, runs = solved_tiny
    report = runs["heuristic"]
    as_json = json.loads(json.dumps(report.to_json_dict()))
    assert as_json["validation_ci_low"] <= as_json["validation_score"] <= as_json["validation_ci_high"]
    overall, per_collection = stats.intervals({c.collection: c.valid_graph_scores
                                               for c in report.collections},
                                              draws=as_json["interval_draws"], seed=0)
    assert (as_json["validation_ci_low"], as_json["validation_ci_high"]) == (overall.low, overall.high)
    for entry in as_json["collections"]:
        assert len(entry["valid_graph_scores"]) == entry["valid_graphs"]
        assert entry["validation_score"] == pytest.approx(np.mean(entry["valid_graph_scores"]))
        assert (entry["validation_ci_low"], entry["validation_ci_high"]) == (
            per_collection[entry["collection"]].low, per_collection[entry["collection"]].high)
    assert "95% interval" in report.format_table()


def test_demo_table_marks_differences_within_noise(solved_tiny):
    from solutions.demo import noise_marks, results_table

    competition, runs = solved_tiny
    solution = load_solution(competition / "private" / "solution.csv")
    results = {name: (run, score_rows(validate_submission(run.submission, solution.expected_configs()).rows,
                                      solution)) for name, run in runs.items()}
    marks = noise_marks(results, solution)
    # The same method twice: identical scores, so the second is within noise of the first (the best).
    assert marks["heuristic"] == ("*", "*") and marks["again"] == ("~", "~")
    # Random against the best: Holm over the three pairs (2 graphs per layout collection here, too
    # few to set random apart: the 1.0 percentile bootstrap did, its intervals far too narrow).
    test = {name: stats.load_graph_scores(run.submission, solution, name=name) for name, run in runs.items()}
    assert marks["random"][1] == stats.within_noise_of_best(test).mark("random") == "~"
    table = results_table(results, marks)
    assert "~ within noise of the best" in table
    assert results_table(results).count("~") == 0


def test_demo_ends_with_how_its_models_rank_the_shipped_real_graph(solved_tiny):
    from competition.data.protos.featurize import featurize_file
    from competition.data.realdata import LAYOUT_PROTO
    from solutions.demo import real_data_line
    from solutions.features.dedup import deduplicate_configs
    from solutions.kinds.layout import layout_cost

    _, runs = solved_tiny
    line = real_data_line({"heuristic": runs["heuristic"].model_dir, "random": runs["random"].model_dir})
    assert "real data, one graph" in line and "112 measured configs" in line and "make bench-real" in line
    # The heuristic's tau on the real graph is the official metric of its own cost ranking.
    [(_, graph)] = featurize_file(LAYOUT_PROTO)
    expected = stats.layout_taus([np.log1p(layout_cost(graph))], [graph.config_runtime.astype(np.float64)])[0]
    assert f"heuristic {expected:+.2f} [" in line
    # And on the pairs beyond the graph's measurement noise, read from its configs measured twice.
    assert "On only the 41 % of its pairs of configs whose runtimes differ by more than the same " in line
    assert "config measured twice does (0.0030 %)" in line
    runtimes = graph.config_runtime.astype(np.float64)
    noise = stats_noise.repeat_noise(deduplicate_configs(graph.configs).inverse, runtimes)
    beyond = stats_noise.taus_beyond_noise([np.log1p(layout_cost(graph))], [runtimes], noise.level)[0]
    assert line.split("(0.0030 %):\n   ")[1].startswith(f"heuristic {beyond:+.2f} [")


def test_one_graph_tau_interval_is_the_metric_and_resamples_configs():
    from competition.metrics import kendall_tau_score

    rng = np.random.default_rng(3)
    runtimes = rng.uniform(1, 2, size=60)
    predicted = runtimes + rng.normal(0, 0.3, size=60)
    ci = stats.tau_interval([predicted], [runtimes], draws=400, seed=1)
    assert ci.estimate == pytest.approx(kendall_tau_score(np.argsort(predicted, kind="stable"), runtimes))
    assert ci.low < ci.estimate < ci.high
    assert stats.tau_interval([predicted], [runtimes], draws=400, seed=1) == ci  # seeded
    with pytest.raises(ValueError, match="run 0: 59 predictions for 60 runtimes"):
        stats.tau_interval([predicted[:-1]], [runtimes])


@pytest.mark.parametrize("tied", [False, True], ids=["distinct runtimes", "runtimes in 40 levels"])
def test_a_large_graphs_interval_resampled_in_part_agrees_with_resampling_every_config(tied):
    rng = np.random.default_rng(5)
    runtimes = rng.uniform(1, 2, size=8000)
    if tied:
        runtimes = np.round(runtimes * 40)
    predicted = runtimes + rng.normal(0, 0.4 * (40 if tied else 1), size=8000)
    full = stats.tau_interval([predicted], [runtimes], draws=400, seed=2, subsample=None)
    part = stats.tau_interval([predicted], [runtimes], draws=400, seed=2, subsample=1000)
    assert part.estimate == full.estimate
    # Unscaled, 1,000-config draws would spread sqrt(8) times wider; scaled, the ends agree to within the
    # noise of 400 draws.
    width = full.high - full.low
    assert abs(part.low - full.low) < 0.2 * width and abs(part.high - full.high) < 0.2 * width


def test_a_graph_within_the_subsample_is_resampled_whole_and_a_bad_subsample_is_refused():
    rng = np.random.default_rng(6)
    runtimes = rng.uniform(1, 2, size=300)
    runs = [runtimes + rng.normal(0, s, size=300) for s in (0.2, 0.5)]
    whole = stats.tau_interval(runs, [runtimes] * 2, draws=300, subsample=None)
    assert stats.tau_interval(runs, [runtimes] * 2, draws=300, subsample=300) == whole
    with pytest.raises(ValueError, match="subsample must be at least 2 configs, got 1"):
        stats.tau_interval(runs, [runtimes] * 2, subsample=1)


def test_shakeup_shows_whole_file_names_and_stats_label_its_three_figures(tiny_competition, tmp_path, capsys):
    import shutil

    from competition.cli import main

    long_name = tmp_path / ("a_submission_whose_name_is_longer_than_thirty_characters_" + "x" * 20 + ".csv")
    shutil.copy(tiny_competition / "public" / "sample_submission.csv", long_name)
    solution = str(tiny_competition / "private" / "solution.csv")
    assert main(["shakeup", str(long_name), "--solution", solution, "--draws", "20"]) == 0
    assert str(long_name) in capsys.readouterr().out  # never cut: the start often tells the files apart
    assert main(["stats", str(tiny_competition / "public"), "--collection", "tile:xla"]) == 0
    assert "| nodes (min / median / max) |" in capsys.readouterr().out
