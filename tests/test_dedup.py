"""solutions.features.dedup: config deduplication, distinct (node, config) rows, compute-once-scatter-back."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.realscale import write_nlp_npz
from competition.data.compact import pack_layout_configs
from competition.data.graphs import load_graph
from solutions.features import dedup
from solutions.features.dedup import (
    POLICIES,
    apply_unique,
    deduplicate_configs,
    unique_node_config_pairs,
    unique_node_config_rows,
    unique_row_index,
)

SEED = 7


# -- slow, obvious references ----------------------------------------------------------------------


def slow_groups(configs: np.ndarray) -> tuple[list[int], list[int]]:
    """O(c^2): each config's group is the first earlier config equal to it."""
    flat = configs.reshape(configs.shape[0], int(np.prod(configs.shape[1:])))
    firsts: list[int] = []
    inverse: list[int] = []
    for i in range(flat.shape[0]):
        for k, j in enumerate(firsts):
            if np.array_equal(flat[i], flat[j]):
                inverse.append(k)
                break
        else:
            inverse.append(len(firsts))
            firsts.append(i)
    return firsts, inverse


def slow_runtime(runtimes: np.ndarray, inverse: list[int], policy: str) -> list[float]:
    groups: dict[int, list[int]] = {}
    for i, k in enumerate(inverse):
        groups.setdefault(k, []).append(int(runtimes[i]))
    pick = {"min": min, "mean": np.mean, "median": np.median, "first": lambda r: r[0]}[policy]
    return [float(pick(groups[k])) for k in range(len(groups))]


def duplicated_configs(draw_or_rng, shape: tuple[int, ...], alphabet: int, low: int = -1) -> np.ndarray:
    """Configs drawn from a tiny alphabet, so duplicates are common."""
    return draw_or_rng.integers(low, low + alphabet, size=shape).astype(np.float32)


# -- deduplicate_configs against the reference -----------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    c=st.integers(0, 40),
    nc=st.integers(1, 3),
    alphabet=st.integers(1, 3),
    layout=st.booleans(),
    policy=st.sampled_from(POLICIES),
)
def test_matches_slow_reference(seed, c, nc, alphabet, layout, policy):
    rng = np.random.default_rng(seed)
    if layout:
        configs = duplicated_configs(rng, (c, nc, 18), alphabet)
        configs[:, :, alphabet:] = -1  # few varying slots: many duplicate configs
    else:
        configs = duplicated_configs(rng, (c, 24), alphabet, low=0)
        configs[:, 2:] = 1.0
    runtimes = rng.integers(1000, 1010, size=c)
    result = deduplicate_configs(configs, runtimes, policy=policy)
    firsts, inverse = slow_groups(configs)
    assert result.unique_index.tolist() == firsts
    assert result.inverse.tolist() == inverse
    assert result.counts.tolist() == np.bincount(np.asarray(inverse, int), minlength=len(firsts)).tolist()
    np.testing.assert_allclose(result.runtime.astype(float), slow_runtime(runtimes, inverse, policy))
    np.testing.assert_array_equal(configs[result.unique_index][result.inverse], configs)
    assert result.num_unique == len(firsts) and result.num_configs == c


def test_known_example_and_policies():
    configs = np.array([[1, 2], [3, 4], [1, 2], [1, 2], [3, 4]], np.float32)
    runtimes = np.array([105, 200, 100, 104, 202])
    expected = {"min": [100, 200], "mean": [103.0, 201.0], "median": [104.0, 201.0], "first": [105, 200]}
    for policy, runtime in expected.items():
        result = deduplicate_configs(configs, runtimes, policy=policy)
        assert result.unique_index.tolist() == [0, 1]
        assert result.inverse.tolist() == [0, 1, 0, 0, 1]
        assert result.counts.tolist() == [3, 2]
        assert result.runtime.tolist() == runtime
    assert deduplicate_configs(configs, runtimes).policy == "min"
    assert deduplicate_configs(configs, runtimes, policy="min").runtime.dtype == np.int64
    assert deduplicate_configs(configs, runtimes, policy="mean").runtime.dtype == np.float64


def test_layout_float_packed_and_int8_agree():
    rng = np.random.default_rng(SEED)
    feat = duplicated_configs(rng, (60, 4, 18), 2)
    feat[:, :, 2:] = -1
    runtimes = rng.integers(0, 100, size=60)
    as_float = deduplicate_configs(feat, runtimes)
    as_packed = deduplicate_configs(pack_layout_configs(feat), runtimes)
    as_int8 = deduplicate_configs(feat.astype(np.int8), runtimes)
    for other in (as_packed, as_int8):
        np.testing.assert_array_equal(as_float.inverse, other.inverse)
        np.testing.assert_array_equal(as_float.runtime, other.runtime)


def test_duplicate_fraction_and_expand():
    configs = np.array([[0], [0], [0], [1]], np.float32)
    result = deduplicate_configs(configs, None)
    assert result.runtime is None
    assert result.duplicate_fraction == pytest.approx(0.5)
    np.testing.assert_array_equal(result.expand(np.array([10.0, 20.0])), [10, 10, 10, 20])
    with pytest.raises(ValueError, match=r"expected 2 values \(one per distinct config\), got shape \(3,\)"):
        result.expand(np.zeros(3))


def test_no_configs():
    result = deduplicate_configs(np.zeros((0, 24), np.float32), np.zeros(0, np.int64), policy="median")
    assert result.num_unique == 0 and result.runtime.shape == (0,) and result.duplicate_fraction == 0.0


def test_signed_zero_is_one_value_and_nan_rows_match_bitwise():
    configs = np.array([[0.0, 1.0], [-0.0, 1.0], [np.nan, 1.0], [np.nan, 1.0]], np.float32)
    assert deduplicate_configs(configs).inverse.tolist() == [0, 0, 1, 1]


def test_hash_collisions_fall_back_to_the_exact_path(monkeypatch):
    rng = np.random.default_rng(SEED)
    configs = duplicated_configs(rng, (200, 24), 2, low=0)
    runtimes = rng.integers(0, 1000, size=200)
    honest = deduplicate_configs(configs, runtimes)
    calls = []
    exact = dedup._unique_rows_exact

    def counted_exact(words):
        calls.append(1)
        return exact(words)

    monkeypatch.setattr(dedup, "_hash_rows", lambda words: np.zeros(words.shape[0], np.uint64))
    monkeypatch.setattr(dedup, "_unique_rows_exact", counted_exact)
    colliding = deduplicate_configs(configs, runtimes)
    assert calls == [1]
    np.testing.assert_array_equal(honest.unique_index, colliding.unique_index)
    np.testing.assert_array_equal(honest.inverse, colliding.inverse)
    np.testing.assert_array_equal(honest.runtime, colliding.runtime)


@pytest.mark.parametrize("block_words", [1, 5, 64])
def test_rows_are_hashed_and_checked_a_block_at_a_time_with_the_same_groups(monkeypatch, block_words):
    rng = np.random.default_rng(SEED)
    configs = duplicated_configs(rng, (120, 4, 18), 2)
    configs[:, :, 2:] = -1
    runtimes = rng.integers(0, 1000, size=120)
    monkeypatch.setattr(dedup, "_BLOCK_WORDS", block_words)  # blocks of 1 row, 1 row, 16 rows
    result = deduplicate_configs(configs, runtimes)
    firsts, inverse = slow_groups(configs)
    assert result.unique_index.tolist() == firsts and result.inverse.tolist() == inverse
    np.testing.assert_allclose(result.runtime, slow_runtime(runtimes, inverse, "min"))


def test_a_collision_in_a_later_block_is_still_caught(monkeypatch):
    rows = np.zeros((40, 3), np.int64)
    rows[37] = [1, 2, 3]  # differs from the rest, in the last block of 8-row blocks
    monkeypatch.setattr(dedup, "_BLOCK_WORDS", 24)
    monkeypatch.setattr(dedup, "_hash_rows", lambda words: np.zeros(words.shape[0], np.uint64))
    first, inverse = unique_row_index(rows)
    assert first.tolist() == [0, 37] and inverse.tolist() == [0] * 37 + [1, 0, 0]


def test_unique_row_index_any_dtype_and_width():
    rows = np.array([[1, 2, 3], [1, 2, 3], [0, 0, 0]], np.int16)  # 6 bytes a row: padded to 8
    assert [a.tolist() for a in unique_row_index(rows)] == [[0, 2], [0, 0, 1]]
    first, inverse = unique_row_index(np.array([5, 3, 5]))  # 1-D: one value per row
    assert first.tolist() == [0, 1] and inverse.tolist() == [0, 1, 0]
    first, inverse = unique_row_index(np.zeros((3, 0)))  # empty rows are all equal
    assert first.tolist() == [0] and inverse.tolist() == [0, 0, 0]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"policy": "max"}, ValueError,
         r"unknown duplicate-runtime policy 'max'; expected one of min, mean, median, first"),
        ({"runtimes": np.zeros(4)}, ValueError,
         r"runtimes has shape \(4,\) but there are 3 configs; expected \(3,\)"),
        ({"config_matrix_rows": np.float32(3)}, ValueError, r"must have a config axis first"),
        (
            {"config_matrix_rows": np.full((3, 2, 18), 0.5, np.float32)},
            ValueError,
            r"node_config_feat\[0, 0, 0\] = 0\.5 .*integers in -1..5",
        ),
    ],
)
def test_bad_input(kwargs, error, message):
    args = {"config_matrix_rows": np.zeros((3, 24), np.float32), "runtimes": np.zeros(3, np.int64), **kwargs}
    with pytest.raises(error, match=message):
        deduplicate_configs(**args)


# -- distinct (node, config) rows ------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), c=st.integers(0, 12), nc=st.integers(0, 5), alphabet=st.integers(1, 3))
def test_unique_node_config_rows_matches_reference(seed, c, nc, alphabet):
    rng = np.random.default_rng(seed)
    feat = duplicated_configs(rng, (c, nc, 18), alphabet)
    feat[:, :, 3:] = -1
    rows, inverse = unique_node_config_rows(feat)
    reference = sorted({tuple(r) for r in feat.reshape(-1, 18).tolist()})  # lexicographic, like the codes
    assert rows.dtype == np.float32 and inverse.shape == (c, nc) and inverse.dtype == np.int64
    assert rows.tolist() == [list(r) for r in reference]
    np.testing.assert_array_equal(rows[inverse], feat)

    pair_rows, nodes, pair_inverse = unique_node_config_pairs(feat)
    reference_pairs = sorted({(j, tuple(feat[i, j].tolist())) for i in range(c) for j in range(nc)})
    assert list(zip(nodes.tolist(), map(tuple, pair_rows.tolist()), strict=True)) == reference_pairs
    np.testing.assert_array_equal(pair_rows[pair_inverse], feat)
    np.testing.assert_array_equal(nodes[pair_inverse], np.broadcast_to(np.arange(nc), (c, nc)))


def test_unique_node_config_rows_rejects_bad_shape():
    with pytest.raises(ValueError, match=r"shape \(3, 18\); expected \(c, nc, 18\)"):
        unique_node_config_rows(np.zeros((3, 18), np.float32))


# -- apply_unique ----------------------------------------------------------------------------------


def test_apply_unique_calls_once_per_distinct_row_and_scatters_back():
    rng = np.random.default_rng(SEED)
    rows = rng.integers(0, 2, size=(30, 5, 3)).astype(np.float32)
    seen = []

    def network(batch: np.ndarray) -> np.ndarray:
        seen.append(batch.copy())
        return np.stack([batch.sum(axis=1), batch.max(axis=1)], axis=1)  # (u, 2)

    out = apply_unique(network, rows)
    assert len(seen) == 1 and len(seen[0]) == len({tuple(r) for r in rows.reshape(-1, 3).tolist()})
    assert out.shape == (30, 5, 2)
    np.testing.assert_array_equal(out, np.stack([rows.sum(axis=-1), rows.max(axis=-1)], axis=-1))


def test_apply_unique_checks_its_inputs():
    with pytest.raises(ValueError,
                       match=r"fn returned shape \(1,\) for 2 distinct rows; expected \(2, \.\.\.\)"):
        apply_unique(lambda r: np.zeros(1), np.array([[0, 1], [1, 0]]))
    with pytest.raises(ValueError,
                       match=r"rows has shape \(3,\); expected \(\.\.\., d\) with at least 2 axes"):
        apply_unique(lambda r: r, np.zeros(3))


# -- real scale ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_largest_nlp_config_tensor_packed():
    """100,040 configs x 121 nodes, packed (145 MB): the path for the largest released file."""
    rng = np.random.default_rng(SEED)
    pool = rng.integers(0, 117_649, size=(2000, 121, 3), dtype=np.int32)
    which = rng.integers(0, 2000, size=100_040)
    which[:2000] = np.arange(2000)
    packed = pool[which]
    runtimes = rng.integers(10**8, 10**9, size=100_040)
    result = deduplicate_configs(packed, runtimes)
    assert result.num_unique == 2000 and result.duplicate_fraction > 0.98
    np.testing.assert_array_equal(result.unique_index, np.arange(2000))
    np.testing.assert_array_equal(result.inverse, which)
    assert result.runtime[0] == runtimes[which == 0].min()


def test_realscale_nlp_file_round_trip(tmp_path):
    """The streamed npz writer at a small size: loadable, checked, 2,000 distinct configs."""
    path = write_nlp_npz(tmp_path / "nlp.npz", num_configs=2500, num_nodes=300, chunk_configs=700)
    graph = load_graph(path)
    assert graph.node_config_feat.shape == (2500, 121, 18) and graph.node_config_feat.dtype == np.float32
    result = deduplicate_configs(graph.node_config_feat, graph.config_runtime)
    assert result.num_unique == 2000
    ratio = graph.config_runtime / result.runtime[result.inverse]
    assert ratio.min() >= 1.0 and ratio.max() <= 1.0045  # duplicates within ~0.4 %
    rows, inverse = unique_node_config_rows(graph.node_config_feat)
    np.testing.assert_array_equal(rows[inverse], graph.node_config_feat)
    assert len(rows) <= 121 * 8


def test_dedup_memory_benchmark_measures_both_ways_and_restores_the_block_size(monkeypatch):
    from benchmarks.bench_pruning import bench_dedup_memory

    monkeypatch.setattr(dedup, "_BLOCK_WORDS", 1 << 15)  # 256 KiB blocks: 34 MiB of keys is then many blocks
    blocks = dedup._BLOCK_WORDS
    table, met = bench_dedup_memory(configs=2_000, distinct=1_200)
    assert met and blocks == dedup._BLOCK_WORDS
    assert "the kit" in table and "baseline" in table
