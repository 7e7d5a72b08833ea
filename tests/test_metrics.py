"""Tests for competition/metrics/: hand-worked values, slow references, properties, bad inputs.

The references here are deliberately naive: an O(n^2) pairwise Kendall tau-b, scipy's kendalltau on
ranks, and a plain loop for the tile score. The fast batch functions must agree with all of them.
Random cases use a fixed seed, overridable with TPUGRAPHS_TEST_SEED.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau

from competition.collections import COLLECTIONS
from competition.metrics import (
    KENDALL_TAU,
    TILE_SLOWDOWN,
    kendall_tau_score,
    kendall_tau_scores,
    pack_ragged,
    pack_top_configs,
    tile_slowdown_score,
    tile_slowdown_scores,
)

SEED = int(os.environ.get("TPUGRAPHS_TEST_SEED", "0"))
HYPOTHESIS = settings(max_examples=60, deadline=None)


# ---------------------------------------------------------------------------------------------
# Slow, obviously correct references.


def ranks_of(order: np.ndarray) -> np.ndarray:
    ranks = np.empty(len(order), dtype=np.int64)
    ranks[np.asarray(order)] = np.arange(len(order))
    return ranks


def pairwise_tau_b(order, runtimes) -> float:
    """Kendall tau-b by looking at every pair: O(n^2). 0.0 where undefined (the kit's rule)."""
    x = ranks_of(np.asarray(order))
    y = np.asarray(runtimes, dtype=np.float64)
    n = len(y)
    concordant = discordant = tied_x = tied_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
            tied_x += dx == 0
            tied_y += dy == 0
            concordant += dx * dy > 0
            discordant += dx * dy < 0
    total = n * (n - 1) // 2
    denominator = math.sqrt((total - tied_x) * (total - tied_y))
    return (concordant - discordant) / denominator if denominator else 0.0


def pairwise_tau_b_numpy(order, runtimes) -> float:
    """The same O(n^2) pair count with a sign matrix, for sizes where Python loops are too slow."""
    x = ranks_of(np.asarray(order)).astype(np.float64)
    y = np.asarray(runtimes, dtype=np.float64)
    upper = np.triu(np.ones((len(y), len(y)), dtype=bool), k=1)
    sx = np.sign(x[:, None] - x[None, :])[upper]
    sy = np.sign(y[:, None] - y[None, :])[upper]
    denominator = math.sqrt(float(np.sum(sx != 0)) * float(np.sum(sy != 0)))
    return float(np.sum(sx * sy)) / denominator if denominator else 0.0


def scipy_tau(order, runtimes) -> float:
    """scipy.stats.kendalltau on ranks; the undefined cases mapped to 0.0 as the kit decides."""
    runtimes = np.asarray(runtimes)
    if len(runtimes) < 2 or np.all(runtimes == runtimes[0]):
        return 0.0
    return float(kendalltau(ranks_of(np.asarray(order)), runtimes).statistic)


def reference_tile(top_configs, runtimes, normalizers, k=5) -> float:
    y = [r / m for r, m in zip(runtimes, normalizers, strict=True)]
    listed = [y[i] for i in list(top_configs)[:k] if i != -1]
    return 2 - min(listed) / min(y)


def random_layout_batch(rng, n_graphs, max_size, n_values):
    """Per-graph (order, runtimes) pairs; runtimes drawn from n_values distinct levels (ties)."""
    graphs = []
    for _ in range(n_graphs):
        n = int(rng.integers(0, max_size + 1))
        runtimes = rng.integers(1, n_values + 1, size=n) * 1000 + 7
        graphs.append((rng.permutation(n), runtimes))
    return graphs


def random_tile_batch(rng, n_graphs, max_size, n_values, k=5):
    graphs = []
    for _ in range(n_graphs):
        n = int(rng.integers(1, max_size + 1))
        runtimes = rng.integers(1, n_values + 1, size=n) * 100
        normalizers = rng.integers(1, 4, size=n) * 1000
        top = rng.choice(n, size=min(k, n), replace=False)
        graphs.append((top, runtimes, normalizers))
    return graphs


def pack_layout(graphs):
    orders, offsets = pack_ragged([order for order, _ in graphs], dtype=np.int64)
    runtimes, _ = pack_ragged([runtimes for _, runtimes in graphs], dtype=np.int64)
    return orders, runtimes, offsets


def pack_tile(graphs, k=5):
    top = pack_top_configs([t for t, _, _ in graphs], k=k)
    runtimes, offsets = pack_ragged([r for _, r, _ in graphs], dtype=np.int64)
    normalizers, _ = pack_ragged([m for _, _, m in graphs], dtype=np.int64)
    return top, runtimes, normalizers, offsets


# ---------------------------------------------------------------------------------------------
# Kendall tau: hand-worked values.

# Config i runs in RUNTIMES[i] ns; the submission lists configs fastest first as ORDER.
TRAP_ORDER = [1, 7, 3, 4, 0, 6, 2, 5]
TRAP_RUNTIMES = [3, 1, 8, 2, 5, 6, 7, 4]


def test_tau_uses_ranks_not_the_ordering():
    # Ranks: config 1 is listed first (rank 0), config 7 second (rank 1), ...
    assert ranks_of(np.array(TRAP_ORDER)).tolist() == [4, 0, 6, 2, 3, 7, 5, 1]
    # 23 concordant and 5 discordant pairs of 28: (23 - 5) / 28.
    assert kendall_tau_score(TRAP_ORDER, TRAP_RUNTIMES) == pytest.approx(18 / 28)
    assert round(kendall_tau_score(TRAP_ORDER, TRAP_RUNTIMES), 3) == 0.643
    # The classic bug, tau between the ordering itself and the runtimes, gives (11 - 17) / 28.
    buggy = kendalltau(TRAP_ORDER, TRAP_RUNTIMES).statistic
    assert buggy == pytest.approx(-6 / 28)
    assert round(buggy, 3) == -0.214


def test_trap_is_invisible_when_runtimes_are_sorted():
    # Why the example shuffles runtimes: a permutation and its inverse have the same number of
    # inversions, so with runtimes increasing in config index the bug gives the right number.
    order = np.array(TRAP_ORDER)
    runtimes = np.arange(1, 9) * 10
    assert kendalltau(order, runtimes).statistic == pytest.approx(kendall_tau_score(order, runtimes))


@pytest.mark.parametrize(
    ("order", "runtimes", "expected"),
    [
        ([0, 1, 2, 3], [10, 20, 30, 40], 1.0),  # true order
        ([3, 2, 1, 0], [10, 20, 30, 40], -1.0),  # its reverse
        ([2, 0, 1], [20, 30, 10], 1.0),  # true order of shuffled runtimes
        ([0, 2, 1], [10, 20, 30], 1 / 3),  # one discordant pair of three
        ([0, 1], [5, 9], 1.0),  # n = 2
        ([1, 0], [5, 9], -1.0),
        ([0, 1, 2], [10, 10, 20], 2 / math.sqrt(3 * 2)),  # tie: 2 concordant, 1 tied pair
        ([2, 1, 0], [10, 10, 20], -2 / math.sqrt(3 * 2)),
        ([0, 1, 2, 3], [10, 10, 20, 20], 4 / math.sqrt(6 * 4)),  # two tie groups
    ],
)
def test_tau_hand_worked(order, runtimes, expected):
    assert kendall_tau_score(order, runtimes) == pytest.approx(expected, abs=1e-15)
    assert pairwise_tau_b(order, runtimes) == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize(
    ("order", "runtimes"),
    [
        ([], []),  # no config
        ([0], [123]),  # n = 1
        ([0, 1], [7, 7]),  # n = 2, tied
        ([3, 1, 0, 2], [5, 5, 5, 5]),  # all equal
    ],
)
def test_tau_undefined_cases_score_zero(order, runtimes):
    score = kendall_tau_score(order, runtimes)
    assert score == 0.0
    assert isinstance(score, float)


def test_tau_undefined_where_scipy_gives_nan():
    assert math.isnan(kendalltau([0, 1, 2], [5, 5, 5]).statistic)
    assert kendall_tau_score([0, 1, 2], [5, 5, 5]) == 0.0


def test_tau_batch_hand_worked_and_undefined():
    graphs = [
        ([0, 1, 2], [10, 20, 30]),  # 1
        ([2, 1, 0], [10, 20, 30]),  # -1
        ([0], [4]),  # n = 1: 0
        ([], []),  # n = 0: 0
        ([1, 0], [3, 3]),  # all equal: 0
        (TRAP_ORDER, TRAP_RUNTIMES),  # 18/28
    ]
    scores = kendall_tau_scores(*pack_layout(graphs))
    assert scores.dtype == np.float64
    np.testing.assert_allclose(scores, [1.0, -1.0, 0.0, 0.0, 0.0, 18 / 28], atol=1e-15)


def test_tau_batch_empty():
    scores = kendall_tau_scores(np.zeros(0, np.int64), np.zeros(0, np.int64), np.array([0]))
    assert scores.shape == (0,) and scores.dtype == np.float64


def test_tau_batch_all_graphs_empty():
    scores = kendall_tau_scores(np.zeros(0, np.int64), np.zeros(0, np.int64), np.array([0, 0, 0]))
    assert scores.tolist() == [0.0, 0.0]


def test_tau_batch_many_graphs():
    # More than 65,536 graphs: the within-graph sort can no longer use 16-bit graph keys.
    rng = np.random.default_rng(SEED)
    n_graphs = 70_000
    runtimes = rng.integers(1, 4, size=2 * n_graphs)
    orders = np.tile([0, 1], n_graphs)
    first, second = runtimes[0::2], runtimes[1::2]
    expected = np.sign(second - first).astype(np.float64)  # n = 2: +1, -1, or 0 when tied
    scores = kendall_tau_scores(orders, runtimes, np.arange(0, 2 * n_graphs + 1, 2))
    np.testing.assert_array_equal(scores, expected)


def test_tau_runtime_dtypes_agree():
    rng = np.random.default_rng(SEED)
    order, runtimes = rng.permutation(50), rng.integers(1, 20, 50)
    expected = kendall_tau_score(order, runtimes)
    for dtype in (np.int32, np.int64, np.uint64, np.float32, np.float64):
        assert kendall_tau_score(order.astype(np.int32), runtimes.astype(dtype)) == expected


# ---------------------------------------------------------------------------------------------
# Kendall tau: fast paths against the references.


def test_tau_per_graph_matches_pairwise_reference_small():
    rng = np.random.default_rng(SEED)
    for _ in range(200):
        n = int(rng.integers(0, 13))
        order, runtimes = rng.permutation(n), rng.integers(1, int(rng.integers(1, 6)) + 1, n)
        expected = pairwise_tau_b(order, runtimes)
        assert kendall_tau_score(order, runtimes) == pytest.approx(expected, abs=1e-12)
        assert scipy_tau(order, runtimes) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("n_values", [1, 2, 3, 10, 1_000_000])  # heavy ties .. almost none
def test_tau_batch_matches_references(n_values):
    rng = np.random.default_rng([SEED, n_values])
    for _ in range(10):
        graphs = random_layout_batch(rng, n_graphs=int(rng.integers(1, 9)), max_size=300, n_values=n_values)
        scores = kendall_tau_scores(*pack_layout(graphs))
        assert scores.shape == (len(graphs),)
        for score, (order, runtimes) in zip(scores, graphs, strict=True):
            assert score == pytest.approx(scipy_tau(order, runtimes), abs=1e-12)
            assert score == pytest.approx(pairwise_tau_b_numpy(order, runtimes), abs=1e-12)
            assert score == kendall_tau_score(order, runtimes)


def test_tau_batch_kaggle_sized_layout():
    # 50 graphs x 1000 configs, as in a test-set submission; mixed spreads of runtimes.
    rng = np.random.default_rng(SEED)
    graphs = []
    for g in range(50):
        runtimes = rng.integers(10**6, 10**6 + (10 if g % 3 == 0 else 10**6), size=1000)
        truth = np.argsort(runtimes, kind="stable")
        shuffled_positions = np.argsort(np.arange(1000) + rng.normal(0, 50 * (g % 7), 1000))
        graphs.append((truth[shuffled_positions], runtimes))
    scores = kendall_tau_scores(*pack_layout(graphs))
    expected = [scipy_tau(order, runtimes) for order, runtimes in graphs]
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-12)
    assert scores.min() < 0.9 and scores.max() > 0.99  # the cases span a range of quality


def test_tau_large_graph_has_no_integer_overflow():
    # n = 70,000 gives n (n - 1) / 2 = 2.4e9 pairs, beyond int32.
    rng = np.random.default_rng(SEED)
    n = 70_000
    runtimes = rng.integers(1, 5000, n)
    order = np.argsort(runtimes + rng.integers(0, 2000, n), kind="stable")
    assert kendall_tau_score(order, runtimes) == pytest.approx(scipy_tau(order, runtimes), abs=1e-12)
    assert kendall_tau_score(np.argsort(runtimes, kind="stable"), runtimes) == pytest.approx(
        scipy_tau(np.argsort(runtimes, kind="stable"), runtimes), abs=1e-12
    )


# ---------------------------------------------------------------------------------------------
# Tile slowdown: hand-worked values and the batch against a loop.


@pytest.mark.parametrize(
    ("top", "runtimes", "normalizers", "k", "expected"),
    [
        ([1], [4, 2, 8], [2, 2, 2], 1, 1.0),  # best listed
        ([0], [4, 2, 8], [2, 2, 2], 1, 0.0),  # 2 - 2/1
        ([2], [4, 2, 8], [2, 2, 2], 1, -2.0),  # 2 - 4/1: below zero
        ([2, 0], [4, 2, 8], [2, 2, 2], 2, 0.0),  # the best of the listed counts
        ([0, 2, 1], [4, 2, 8], [2, 2, 2], 5, 1.0),  # fewer than k configs: all listed
        ([0], [10, 12], [10, 20], 1, 2 - 1 / 0.6),  # normalizers decide which config is best
        ([1], [10, 12], [10, 20], 1, 1.0),
        ([1], [3, 3, 6], [1, 1, 1], 1, 1.0),  # duplicated minimum: either one is the best
        ([0], [3, 3, 6], [1, 1, 1], 1, 1.0),
        ([5, 4, 3, 2, 1, 0], [1, 2, 3, 4, 5, 6], [1] * 6, 5, 0.0),  # the 6th index does not count
        ([5, 4, 3, 2, 1, 99], [1, 2, 3, 4, 5, 6], [1] * 6, 5, 0.0),  # nor is it checked
        ([0], [7], [7], 5, 1.0),  # one config
    ],
)
def test_tile_hand_worked(top, runtimes, normalizers, k, expected):
    assert tile_slowdown_score(top, runtimes, normalizers, k=k) == pytest.approx(expected, abs=1e-15)
    assert reference_tile(top, runtimes, normalizers, k) == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize(("max_size", "n_values"), [(4, 2), (4, 100), (12, 3), (300, 1000)])
def test_tile_batch_matches_loop(max_size, n_values):
    rng = np.random.default_rng([SEED, max_size, n_values])
    for _ in range(10):
        graphs = random_tile_batch(rng, int(rng.integers(1, 30)), max_size, n_values)
        top, runtimes, normalizers, offsets = pack_tile(graphs)
        scores = tile_slowdown_scores(top, runtimes, normalizers, offsets)
        expected = [reference_tile(*graph) for graph in graphs]
        np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-12)
        assert [tile_slowdown_score(*graph) for graph in graphs] == scores.tolist()


def test_tile_batch_padding_and_k_larger_than_graphs():
    # Graphs of 1..4 configs with k = 5: rows list them all and pad with -1.
    graphs = [
        ([0], [5], [5]),
        ([1, 0], [6, 3], [1, 1]),
        ([0, 2, 1], [2, 4, 1], [1, 1, 1]),
        ([3, 2, 1, 0], [9, 8, 7, 6], [1, 1, 1, 1]),
    ]
    top, runtimes, normalizers, offsets = pack_tile(graphs)
    assert top[0].tolist() == [0, -1, -1, -1, -1]
    np.testing.assert_array_equal(tile_slowdown_scores(top, runtimes, normalizers, offsets), [1.0] * 4)
    # k = 1: only the first listed index counts.
    scores = tile_slowdown_scores(top, runtimes, normalizers, offsets, k=1)
    np.testing.assert_allclose(scores, [1.0, 1.0, 2 - 2 / 1, 1.0])


def test_tile_batch_extra_columns_are_ignored():
    top = np.array([[1, 5, 4, 3, 2, 0, 99]])  # the best, config 0, comes 6th
    scores = tile_slowdown_scores(top, np.arange(1, 7), np.ones(6, np.int64), np.array([0, 6]))
    assert scores.tolist() == [2 - 2 / 1]


def test_tile_batch_empty():
    scores = tile_slowdown_scores(np.zeros((0, 5), np.int64), np.zeros(0), np.zeros(0), np.array([0]))
    assert scores.shape == (0,) and scores.dtype == np.float64
    assert tile_slowdown_scores([], [], [], [0]).shape == (0,)


def test_tile_batch_kaggle_sized():
    # 844 graphs of 2..~2400 configs, ~1M runtimes in all, as in the test set.
    rng = np.random.default_rng(SEED)
    sizes = rng.integers(2, 2400, 844)
    offsets = np.r_[0, np.cumsum(sizes)]
    runtimes = rng.integers(1000, 10**7, offsets[-1])
    normalizers = rng.integers(10**6, 2 * 10**6, offsets[-1])
    top = pack_top_configs([rng.choice(n, min(5, n), replace=False) for n in sizes])
    scores = tile_slowdown_scores(top, runtimes, normalizers, offsets)
    for g in rng.choice(844, 40, replace=False):
        part = slice(offsets[g], offsets[g + 1])
        assert scores[g] == tile_slowdown_score(top[g], runtimes[part], normalizers[part])


# ---------------------------------------------------------------------------------------------
# Properties.


@st.composite
def layout_graphs(draw, max_size=25, distinct=False):
    n = draw(st.integers(0, max_size))
    values = st.integers(1, 10**6) if distinct else st.integers(1, draw(st.sampled_from([1, 2, 3, 10**6])))
    runtimes = draw(st.lists(values, min_size=n, max_size=n, unique=distinct))
    order = draw(st.permutations(range(n)))
    return np.array(order, dtype=np.int64), np.array(runtimes, dtype=np.int64)


@st.composite
def tile_graphs(draw, max_size=12):
    n = draw(st.integers(1, max_size))
    runtimes = draw(st.lists(st.integers(1, 10**6), min_size=n, max_size=n))
    normalizers = draw(st.lists(st.integers(1, 10**6), min_size=n, max_size=n))
    top = draw(st.permutations(range(n)))[: min(5, n)]
    return np.array(top, dtype=np.int64), np.array(runtimes), np.array(normalizers)


@HYPOTHESIS
@given(st.lists(layout_graphs(), max_size=6), st.randoms(use_true_random=False))
def test_tau_batch_invariant_to_graph_order(graphs, random):
    scores = kendall_tau_scores(*pack_layout(graphs))
    shuffled = list(range(len(graphs)))
    random.shuffle(shuffled)
    reordered = kendall_tau_scores(*pack_layout([graphs[i] for i in shuffled]))
    np.testing.assert_array_equal(reordered, scores[shuffled])


@HYPOTHESIS
@given(st.lists(layout_graphs(), max_size=6))
def test_tau_in_range_finite_and_equal_to_per_graph(graphs):
    scores = kendall_tau_scores(*pack_layout(graphs))
    assert np.isfinite(scores).all()
    assert ((scores >= -1) & (scores <= 1)).all()
    for score, (order, runtimes) in zip(scores, graphs, strict=True):
        assert score == pytest.approx(pairwise_tau_b(order, runtimes), abs=1e-12)


@HYPOTHESIS
@given(layout_graphs(max_size=40, distinct=True))
def test_tau_true_order_is_one_and_reverse_minus_one(graph):
    _, runtimes = graph
    true_order = np.argsort(runtimes)
    expected = 1.0 if len(runtimes) >= 2 else 0.0
    assert kendall_tau_score(true_order, runtimes) == expected
    assert kendall_tau_score(true_order[::-1], runtimes) == -expected


@HYPOTHESIS
@given(
    layout_graphs(max_size=40),
    st.sampled_from(
        [
            lambda x: 7 * x + 3,
            lambda x: x * x + 1,
            lambda x: np.sqrt(x.astype(np.float64)),
            lambda x: np.log(x.astype(np.float64)) + 1,
        ]
    ),
)
def test_tau_invariant_under_monotone_transforms(graph, transform):
    order, runtimes = graph
    assert kendall_tau_score(order, transform(runtimes)) == pytest.approx(
        kendall_tau_score(order, runtimes), abs=1e-12
    )


@HYPOTHESIS
@given(st.lists(tile_graphs(), min_size=1, max_size=6), st.randoms(use_true_random=False))
def test_tile_batch_invariant_to_graph_order(graphs, random):
    scores = tile_slowdown_scores(*pack_tile(graphs))
    shuffled = list(range(len(graphs)))
    random.shuffle(shuffled)
    reordered = tile_slowdown_scores(*pack_tile([graphs[i] for i in shuffled]))
    np.testing.assert_array_equal(reordered, scores[shuffled])


@HYPOTHESIS
@given(tile_graphs())
def test_tile_at_most_one_and_one_when_best_listed(graph):
    top, runtimes, normalizers = graph
    score = tile_slowdown_score(top, runtimes, normalizers)
    assert math.isfinite(score) and score <= 1.0
    best = int(np.argmin(runtimes / normalizers))
    assert (score == 1.0) == (runtimes[top] / normalizers[top] == (runtimes / normalizers)[best]).any()
    with_best = np.r_[best, top[top != best]][: len(top)]
    assert tile_slowdown_score(with_best, runtimes, normalizers) == 1.0


# ---------------------------------------------------------------------------------------------
# Bad input: every message, with the rule it names.


@pytest.mark.parametrize(
    ("order", "runtimes", "message"),
    [
        ([0, 0, 1], [1, 2, 3], r"order must be a full permutation of 0\.\.2; config 2 is missing"),
        ([0, 1, 3], [1, 2, 3], r"order must be a full permutation of 0\.\.2; position 2 holds 3"),
        ([-1, 0, 1], [1, 2, 3], r"order must be a full permutation of 0\.\.2; position 0 holds -1"),
        ([0, 1], [1, 2, 3], r"order and runtimes must have the same length .*got 2 and 3"),
        ([0, 1, 2], [1, -2, 3], r"runtimes must be positive \(measured times\); entry 1 is -2"),
        ([0, 1, 2], [0, 0, 0], r"runtimes must be positive .*all-zero runtimes mean unlabeled test data"),
        ([0, 1, 2], [1.0, np.nan, 3.0], r"runtimes must be finite; entry 1 is nan"),
        ([0, 1, 2], [1.0, 2.0, np.inf], r"runtimes must be finite; entry 2 is inf"),
        ([0.0, 1.0], [1, 2], r"order must hold integers; got dtype float64"),
        ([True, False], [1, 2], r"order must hold integers; got dtype bool"),
        ([0, 1], [[1, 2]], r"runtimes must be a 1-D array; got shape \(1, 2\)"),
        ([0, 1], ["a", "b"], r"runtimes must hold real numbers; got dtype <U1"),
    ],
)
def test_kendall_tau_score_rejects(order, runtimes, message):
    with pytest.raises(ValueError, match=message):
        kendall_tau_score(order, runtimes)


@pytest.mark.parametrize(
    ("top", "runtimes", "normalizers", "k", "message"),
    [
        ([0, 3], [1, 2, 3], [1, 1, 1], 2, r"top_configs must hold config indices in 0\.\.2; entry 1 is 3"),
        ([0, -1], [1, 2, 3], [1, 1, 1], 2, r"top_configs must hold config indices in 0\.\.2; got -1"),
        ([0, -2], [1, 2, 3], [1, 1, 1], 2, r"top_configs must hold config indices in 0\.\.2; entry 1 is -2"),
        (
            [1, 1],
            [1, 2, 3],
            [1, 1, 1],
            2,
            r"top_configs must list distinct configs; config 1 is listed twice",
        ),
        ([0], [1, 2, 3], [1, 1, 1], 2, r"top_configs must list min\(k, n\) = 2 configs; got \[0\]"),
        ([0, 1], [1, 2, 3], [1, 1, 1], 5, r"must list min\(k, n\) = 3 configs; got \[0, 1\]"),
        ([0], [], [], 5, r"runtimes must list at least one config; got none"),
        ([0], [1, -2], [1, 1], 5, r"runtimes must be positive \(measured times\); entry 1 is -2"),
        ([0], [1, 2], [1, 0], 5, r"normalizers must be positive \(measured times\); entry 1 is 0"),
        ([0], [1, 2], [1, 2, 3], 5, r"runtimes and normalizers must have the same length .*got 2 and 3"),
        ([0.0], [1], [1], 5, r"top_configs must hold integers; got dtype float64"),
        ([0], [1], [1], 0, r"k must be a positive integer; got 0"),
        ([0], [1], [1], True, r"k must be a positive integer; got True"),
        ([0], [1], [1], 2.0, r"k must be a positive integer; got 2\.0"),
        (
            [0, 1],
            [1e-300, 1.0],
            [1e300, 1.0],
            5,
            r"runtimes / normalizers must be positive and finite; the ratio under- or overflows",
        ),
    ],
)
def test_tile_slowdown_score_rejects(top, runtimes, normalizers, k, message):
    with pytest.raises(ValueError, match=message):
        tile_slowdown_score(top, runtimes, normalizers, k=k)


def test_tile_overflowing_ratio_of_a_slow_config_is_harmless():
    # y = [inf, 1]: the slow config never decides a minimum, so the score stays defined.
    assert tile_slowdown_score([1, 0], [1e300, 1.0], [1e-300, 1.0]) == 1.0


@pytest.mark.parametrize(
    ("orders", "runtimes", "offsets", "message"),
    [
        (
            [0, 1, 0, 0, 2],
            [1] * 5,
            [0, 2, 5],
            r"orders of graph 1 must be a full permutation of 0\.\.2; config 1 is missing",
        ),
        (
            [0, 1, 0, 3, 2],
            [1] * 5,
            [0, 2, 5],
            r"orders of graph 1 must be a full permutation of 0\.\.2; position 1 holds 3",
        ),
        ([0, 1, 0], [1] * 4, [0, 2, 4], r"orders and runtimes must have the same length .*got 3 and 4"),
        ([0, 1], [1, 2], [1, 2], r"offsets must start at 0; got 1"),
        ([0, 1], [1, 2], [0, 3], r"offsets must end at the number of configs \(2\); got 3"),
        ([0, 1], [1, 2], [0, 2, 1, 2], r"offsets must not decrease; offsets\[2\] < offsets\[1\]"),
        ([0, 1], [1, 2], [], r"offsets must have G\+1 entries"),
        ([0, 1], [1, 2], [0.0, 2.0], r"offsets must hold integers; got dtype float64"),
        ([0, 1], [1, 2], [[0, 2]], r"offsets must be a 1-D array"),
        ([0, 1], [1, 0], [0, 2], r"runtimes must be positive"),
    ],
)
def test_kendall_tau_scores_rejects(orders, runtimes, offsets, message):
    with pytest.raises(ValueError, match=message):
        kendall_tau_scores(orders, runtimes, offsets)


@pytest.mark.parametrize(
    ("top", "offsets", "message"),
    [
        (
            [[0, -1], [0, -1]],
            [0, 1, 2, 3],
            r"top_configs must have shape \(G, k\) = \(3, k\), one row per graph; got \(2, 2\)",
        ),
        (
            [[0, -1], [5, -1]],
            [0, 1, 3],
            r"top_configs of graph 1 must hold config indices in 0\.\.1; entry 0 is 5",
        ),
        (
            [[0, -1], [-1, 0]],
            [0, 1, 3],
            r"top_configs of graph 1 must list min\(k, n\) = 2 configs before any padding \(-1\); "
            r"got \[-1, 0\]",
        ),
        (
            [[0, -1], [1, -1]],
            [0, 1, 3],
            r"top_configs of graph 1 must list min\(k, n\) = 2 configs before any padding",
        ),
        (
            [[0, -1], [1, 1]],
            [0, 1, 3],
            r"top_configs of graph 1 must list distinct configs; config 1 is listed twice",
        ),
        ([[0, -1], [1, 0]], [0, 0, 3], r"every tile graph needs at least one config; graph 0 has none"),
        ([[0.0, 1.0], [1, 0]], [0, 1, 3], r"top_configs must hold integers; got dtype float64"),
        ([0, 1], [0, 2], r"top_configs must have shape \(G, k\) = \(1, k\), one row per graph; got \(2,\)"),
    ],
)
def test_tile_slowdown_scores_rejects(top, offsets, message):
    runtimes = np.arange(1, offsets[-1] + 1)
    with pytest.raises(ValueError, match=message):
        tile_slowdown_scores(np.array(top), runtimes, runtimes, np.array(offsets))


def test_tile_slowdown_scores_rejects_rows_without_graphs():
    with pytest.raises(
        ValueError, match=r"top_configs must have one row per graph; got shape \(1, 5\) for none"
    ):
        tile_slowdown_scores(np.zeros((1, 5), np.int64), [], [], [0])


def test_tile_slowdown_scores_rejects_overflowing_ratio():
    with pytest.raises(ValueError, match=r"runtimes / normalizers of graph 1 must be positive and finite"):
        tile_slowdown_scores([[0, -1], [0, 1]], [1.0, 1e-300, 1.0], [1.0, 1e300, 1.0], [0, 1, 3])


# ---------------------------------------------------------------------------------------------
# The table and the packing helpers.


def test_every_collection_names_a_metric_through_its_task():
    metrics_by_name = {c.task.metric.name: c.task.metric for c in COLLECTIONS}
    assert {c.metric for c in COLLECTIONS} == set(metrics_by_name) == {"kendall_tau", "tile_slowdown"}
    for key, metric in metrics_by_name.items():
        assert metric.name == key
        assert metric.higher_is_better and metric.direction == "higher is better"
        assert metric.range[1] == 1.0 and metric.range[0] < metric.range[1]
        assert "Batch:" in metric.expected_input and "offsets" in metric.expected_input
    assert KENDALL_TAU.range == (-1.0, 1.0)
    assert TILE_SLOWDOWN.range[0] == -math.inf


def test_metric_objects_functions_agree():
    tau = KENDALL_TAU
    assert tau.score(TRAP_ORDER, TRAP_RUNTIMES) == tau.scores(TRAP_ORDER, TRAP_RUNTIMES, [0, 8])[0]
    tile = TILE_SLOWDOWN
    assert tile.score([0], [2, 1], [1, 1], k=1) == tile.scores([[0]], [2, 1], [1, 1], [0, 2], k=1)[0] == 0.0


def test_pack_helpers():
    values, offsets = pack_ragged([[3, 1], [], [2]], dtype=np.int64)
    assert values.tolist() == [3, 1, 2] and offsets.tolist() == [0, 2, 2, 3]
    values, offsets = pack_ragged([])
    assert values.shape == (0,) and offsets.tolist() == [0]
    assert pack_top_configs([[1, 2, 3], []], k=2).tolist() == [[1, 2], [-1, -1]]
    assert pack_top_configs([], k=5).shape == (0, 5)
