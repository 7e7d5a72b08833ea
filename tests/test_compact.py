"""competition.data.compact: int8 and base-7 storage of layout configs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from competition.data import compact
from competition.data.compact import (
    PACKED_VECTOR_LIMIT,
    check_layout_configs,
    from_int8,
    layout_row_codes,
    pack_layout_configs,
    pack_layout_vector_codes,
    storage_bytes,
    to_int8,
    unpack_layout_configs,
)

SEED = 20231


def layout_configs(max_configs: int = 6, max_nodes: int = 5):
    """Hypothesis strategy: (c, nc, 18) float32 with values in -1..5."""
    shapes = st.tuples(st.integers(0, max_configs), st.integers(0, max_nodes), st.just(18))
    return shapes.flatmap(lambda shape: arrays(np.int8, shape, elements=st.integers(-1, 5))).map(
        lambda a: a.astype(np.float32)
    )


def random_configs(shape=(7, 4, 18), seed=SEED) -> np.ndarray:
    return np.random.default_rng(seed).integers(-1, 6, size=shape).astype(np.float32)


def slow_pack(vector) -> int:
    """The definition, digit by digit."""
    code = 0
    for value in vector:
        code = code * 7 + (int(value) + 1)
    return code


# -- known values ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("vector", "code"),
    [
        ([-1] * 6, 0),
        ([5] * 6, 7**6 - 1),
        ([0, 1, -1, -1, -1, -1], 1 * 7**5 + 2 * 7**4),
        ([-1, -1, -1, -1, -1, 0], 1),
        ([2, 0, 1, -1, -1, -1], 3 * 7**5 + 1 * 7**4 + 2 * 7**3),
    ],
)
def test_pack_known_vectors(vector, code):
    row = np.array(vector * 3, np.float32)
    assert pack_layout_configs(row).tolist() == [code, code, code]
    assert slow_pack(vector) == code


def test_shapes_and_dtypes():
    feat = random_configs()
    packed = pack_layout_configs(feat)
    assert packed.shape == (7, 4, 3) and packed.dtype == np.int32
    unpacked = unpack_layout_configs(packed)
    assert unpacked.shape == (7, 4, 18) and unpacked.dtype == np.float32
    small = to_int8(feat)
    assert small.shape == feat.shape and small.dtype == np.int8 and small.nbytes * 4 == feat.nbytes
    assert from_int8(small).dtype == np.float32
    codes = pack_layout_vector_codes(feat)
    assert codes.shape == (7, 4) and codes.dtype == np.int64


def test_any_leading_shape():
    feat = random_configs((2, 3, 5, 18))
    assert pack_layout_configs(feat).shape == (2, 3, 5, 3)
    assert pack_layout_configs(feat[0, 0, 0]).shape == (3,)
    np.testing.assert_array_equal(unpack_layout_configs(pack_layout_configs(feat)), feat)


def test_integer_input_packs_like_float():
    feat = random_configs()
    np.testing.assert_array_equal(pack_layout_configs(to_int8(feat)), pack_layout_configs(feat))
    np.testing.assert_array_equal(pack_layout_configs(feat.astype(np.int64)), pack_layout_configs(feat))


def test_matches_slow_definition():
    feat = random_configs((5, 3, 18))
    packed = pack_layout_configs(feat)
    for c in range(5):
        for n in range(3):
            for v in range(3):
                assert packed[c, n, v] == slow_pack(feat[c, n, 6 * v : 6 * v + 6])


def test_codes_of_a_memory_mapped_int8_tensor(tmp_path, monkeypatch):
    """The cache's int8 memmap packs to the codes of the released float32 tensor, chunk by chunk."""
    feat = random_configs((50, 7, 18))
    np.save(tmp_path / "configs.npy", to_int8(feat))
    mapped = np.load(tmp_path / "configs.npy", mmap_mode="r")
    monkeypatch.setattr(compact, "_CHUNK_ELEMENTS", 40)
    np.testing.assert_array_equal(pack_layout_vector_codes(mapped), pack_layout_vector_codes(feat))
    np.testing.assert_array_equal(pack_layout_configs(mapped), pack_layout_configs(feat))


def test_storage_sizes_at_the_largest_graph():
    sizes = storage_bytes(100_040, 121)
    assert sizes["float32"] == 100_040 * 121 * 18 * 4
    assert sizes["float32"] == 4 * sizes["int8"] == 6 * sizes["packed_int32"]


def test_chunked_work_gives_the_same_answer(monkeypatch):
    feat = random_configs((50, 7, 18))
    def every(x):
        return (pack_layout_configs(x), to_int8(x), unpack_layout_configs(pack_layout_configs(x)),
                pack_layout_vector_codes(x))

    whole = every(feat)
    monkeypatch.setattr(compact, "_CHUNK_ELEMENTS", 40)  # many small chunks, boundaries mid-config
    chunked = every(feat)
    for a, b in zip(whole, chunked, strict=True):
        np.testing.assert_array_equal(a, b)


# -- properties ------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(layout_configs())
def test_round_trips(feat):
    packed = pack_layout_configs(feat)
    assert packed.dtype == np.int32 and packed.shape == (*feat.shape[:-1], 3)
    assert packed.size == 0 or (packed.min() >= 0 and packed.max() < PACKED_VECTOR_LIMIT)
    np.testing.assert_array_equal(unpack_layout_configs(packed), feat)
    np.testing.assert_array_equal(from_int8(to_int8(feat)), feat)


@settings(max_examples=60, deadline=None)
@given(layout_configs(max_configs=8, max_nodes=3))
def test_codes_are_equal_exactly_when_rows_are(feat):
    rows = feat.reshape(-1, 18)
    codes = pack_layout_vector_codes(rows)
    same_rows = (rows[:, None, :] == rows[None, :, :]).all(axis=-1)
    np.testing.assert_array_equal(codes[:, None] == codes[None, :], same_rows)
    assert codes.size == 0 or (codes.min() >= 0 and codes.max() < 7**18)


@settings(max_examples=60, deadline=None)
@given(layout_configs(max_configs=8, max_nodes=4))
def test_unchecked_row_codes_equal_the_checked_ones(feat):
    # the layout features pack rows they converted already; the codes must be the checked function's
    expected = pack_layout_vector_codes(feat)
    for values in (feat, feat.astype(np.int64), feat.astype(np.int8)):
        codes = layout_row_codes(values)
        assert codes.shape == expected.shape and codes.dtype == np.int64
        np.testing.assert_array_equal(codes, expected)


@settings(max_examples=60, deadline=None)
@given(layout_configs(max_configs=10, max_nodes=2))
def test_packed_order_is_lexicographic(feat):
    vectors = feat.reshape(-1, 6)
    codes = pack_layout_configs(feat).reshape(-1)
    by_code = np.argsort(codes, kind="stable")
    by_values = np.lexsort(vectors.T[::-1])  # first slot most significant
    np.testing.assert_array_equal(codes[by_code], codes[by_values])


# -- bad input -------------------------------------------------------------------------------------


def _with(value, position=(0, 1, 5)):
    feat = random_configs((2, 3, 18))
    feat[position] = value
    return feat


@pytest.mark.parametrize("function",
                         [pack_layout_configs, to_int8, check_layout_configs, pack_layout_vector_codes])
@pytest.mark.parametrize(
    ("feat", "message"),
    [
        (_with(2.5),
         r"node_config_feat\[0, 1, 5\] = .*2\.5.*config 0, configurable node 1, output layout slot "
         r"5.*integers in -1..5"),
        (_with(6.0, (1, 2, 7)),
         r"node_config_feat\[1, 2, 7\] = .*6\.0.*config 1, configurable node 2, input layout slot 1"),
        (_with(-2.0, (0, 0, 17)), r"node_config_feat\[0, 0, 17\] = .*-2\.0.*kernel layout slot 5"),
        (_with(np.nan), r"node_config_feat\[0, 1, 5\] = .*nan"),
        (_with(np.inf), r"node_config_feat\[0, 1, 5\] = .*inf"),
        (random_configs((2, 3, 17)), r"shape \(2, 3, 17\); its last axis must have size 18"),
        (np.zeros((2, 3, 18), dtype="U1"), r"dtype <U1; expected a float or integer array"),
    ],
)
def test_bad_values_are_named(function, feat, message):
    with pytest.raises(ValueError, match=message):
        function(feat)


def test_bad_integer_value_is_named():
    feat = to_int8(random_configs((2, 3, 18)))
    feat[1, 0, 12] = 7
    with pytest.raises(ValueError, match=r"node_config_feat\[1, 0, 12\] = .*7.*kernel layout slot 0"):
        pack_layout_configs(feat)


def test_first_bad_value_is_found_in_a_later_chunk(monkeypatch):
    monkeypatch.setattr(compact, "_CHUNK_ELEMENTS", 40)
    feat = random_configs((30, 4, 18))
    feat[21, 3, 9] = 0.5
    feat[25, 0, 0] = 9.0
    for function in (pack_layout_configs, to_int8, check_layout_configs, pack_layout_vector_codes):
        with pytest.raises(ValueError, match=r"node_config_feat\[21, 3, 9\] = .*0\.5"):
            function(feat)


def test_name_argument_is_used():
    with pytest.raises(ValueError, match=r"^graph\.npz node_config_feat\[0, 1, 5\]"):
        pack_layout_configs(_with(3.5), name="graph.npz node_config_feat")


@pytest.mark.parametrize(
    ("packed", "message"),
    [
        (np.array([[[0, 117_649, 0]]], np.int32),
         r"packed\[0, 0, 1\] = 117649: packed layout vectors must lie in 0..117648"),
        (np.array([[[0, 1, -1]]], np.int64), r"packed\[0, 0, 2\] = -1"),
        (np.zeros((2, 3), np.float32), r"dtype float32; packed layout vectors are integers"),
        (np.zeros((2, 4), np.int32), r"shape \(2, 4\); its last axis must have size 3"),
    ],
)
def test_unpack_rejects(packed, message):
    with pytest.raises(ValueError, match=message):
        unpack_layout_configs(packed)


def test_from_int8_rejects_floats():
    with pytest.raises(ValueError, match="expected an integer array from to_int8, got dtype float32"):
        from_int8(random_configs())
