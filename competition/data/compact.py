"""Compact storage of layout configurations: int8 and base-7 packing.

A layout ``node_config_feat`` (c, nc, 18) float32 holds three 6-slot layout vectors per configurable
node (output, input, kernel), each slot a dimension index in 0..5 or -1 for "unset"
(docs/competition.md, Data format). Stored as float32 that is 4 bytes for a value that needs 3 bits. Two
compact forms:

- **int8** (``to_int8`` / ``from_int8``): the same array, 4x smaller, lossless.
- **base-7 packed** (``pack_layout_configs`` / ``unpack_layout_configs``): each 6-slot vector becomes
  one integer ``sum((slot_i + 1) * 7**(5 - i))`` in ``0 .. 7**6 - 1 = 117,648``, stored as int32:
  18 floats -> 3 ints, 6x smaller than float32. Slot 0 is the most significant digit, so comparing
  packed integers compares the vectors lexicographically (sorting packed rows sorts the layouts).
  ``pack_layout_vector_codes`` goes one step further for hashing and deduplication: the three
  packed vectors of a node become one int64 code ``< 7**18 ~ 1.6e15``.

Every packing entry point validates first: a value that is not an integer in -1..5 (NaN included)
raises ``ValueError`` naming the value and its position, e.g.
``node_config_feat[3, 17, 5] = 2.5 (config 3, configurable node 17, output layout slot 5): ...``.

Work is done in chunks along the first (config) axis, so packing the largest released graph
(100,040 configs x 121 nodes x 18 = 872 MB as float32) needs only the output plus one chunk of
temporaries. Numpy only: ``competition/`` never imports torch.

>>> feat = np.array([[[0, 1, -1, -1, -1, -1,  1, 0, -1, -1, -1, -1,  -1, -1, -1, -1, -1, -1]]], np.float32)
>>> packed = pack_layout_configs(feat)
>>> packed
array([[[21609, 36015,     0]]], dtype=int32)
>>> (0 + 1) * 7**5 + (1 + 1) * 7**4  # the output vector [0, 1, -1, -1, -1, -1]
21609
>>> bool((unpack_layout_configs(packed) == feat).all())
True
"""

from __future__ import annotations

import numpy as np

LAYOUT_VALUE_MIN = -1  # "unset"
LAYOUT_VALUE_MAX = 5
LAYOUT_BASE = LAYOUT_VALUE_MAX - LAYOUT_VALUE_MIN + 1  # 7 possible values per slot
LAYOUT_SLOTS = 6  # dimensions per layout vector
LAYOUT_VECTORS = ("output", "input", "kernel")  # the three 6-slot vectors of an 18-d row, in order
LAYOUT_ROW_DIM = LAYOUT_SLOTS * len(LAYOUT_VECTORS)  # 18
PACKED_VECTOR_LIMIT = LAYOUT_BASE**LAYOUT_SLOTS  # 117,649: packed vectors lie in 0 .. limit - 1

# Digit weights, most significant first. Packing is a float32 matmul: every partial sum is an integer
# below 7**6 < 2**24, so float32 arithmetic is exact and the BLAS path can be used.
_SLOT_WEIGHTS = LAYOUT_BASE ** np.arange(LAYOUT_SLOTS - 1, -1, -1, dtype=np.int64)  # (6,)
_VECTOR_WEIGHTS = PACKED_VECTOR_LIMIT ** np.arange(len(LAYOUT_VECTORS) - 1, -1, -1, dtype=np.int64)  # (3,)
_CHUNK_ELEMENTS = 1 << 22  # values processed per chunk (16 MB of float32 temporaries)


def _chunks(num_rows: int, row_size: int):
    step = max(1, _CHUNK_ELEMENTS // max(1, row_size))
    for start in range(0, num_rows, step):
        yield slice(start, min(num_rows, start + step))


def _describe(shape: tuple[int, ...], flat_index: int, name: str, value: np.generic) -> str:
    """``name[i, j, k] = value (config i, configurable node j, output layout slot k)``."""
    index = tuple(int(i) for i in np.unravel_index(flat_index, shape))
    text = f"{name}[{', '.join(map(str, index))}] = {value.item()!r}"
    if len(shape) == 3 and shape[-1] == LAYOUT_ROW_DIM:
        vector, slot = divmod(index[2], LAYOUT_SLOTS)
        text += (f" (config {index[0]}, configurable node {index[1]}, {LAYOUT_VECTORS[vector]} layout "
                 f"slot {slot})")
    return text


def _check_last_axis(arr: np.ndarray, size: int, name: str) -> None:
    if arr.ndim < 1 or arr.shape[-1] != size:
        raise ValueError(f"{name} has shape {arr.shape}; its last axis must have size {size}")


def _config_rows(arr: np.ndarray) -> np.ndarray:
    """View (c, ...) as (c, values per config) (a 1-D array is one row); works for empty arrays."""
    if arr.ndim <= 1:
        return arr.reshape(1, -1)
    return arr.reshape(arr.shape[0], int(np.prod(arr.shape[1:])))


def check_layout_chunk(chunk: np.ndarray, offset: int, shape: tuple[int, ...], name: str) -> None:
    """Raise naming the first value of ``chunk`` that is not an integer in -1..5."""
    if chunk.dtype.kind in "iub":
        bad = (chunk < LAYOUT_VALUE_MIN) | (chunk > LAYOUT_VALUE_MAX)
    elif chunk.dtype.kind == "f":
        # NaN fails both range comparisons and lands in `bad`.
        bad = ~((chunk >= LAYOUT_VALUE_MIN) & (chunk <= LAYOUT_VALUE_MAX) & (chunk == np.floor(chunk)))
    else:
        raise ValueError(f"{name} has dtype {chunk.dtype}; expected a float or integer array")
    if bad.any():
        first = int(np.flatnonzero(bad.reshape(-1))[0])
        raise ValueError(
            f"{_describe(shape, offset + first, name, chunk.reshape(-1)[first])}: layout config values must "
            f"be integers in {LAYOUT_VALUE_MIN}..{LAYOUT_VALUE_MAX} (-1 = unset)"
        )


def check_layout_configs(node_config_feat: np.ndarray, *, name: str = "node_config_feat") -> None:
    """Raise ``ValueError`` naming the first value that is not an integer in -1..5 and its position.

    Arguments:
        node_config_feat: layout configs, shape (..., 18) (released: (c, nc, 18) float32); int8 and
            other integer dtypes are accepted too.
        name: how the array is called in the message.
    """
    arr = np.asarray(node_config_feat)
    _check_last_axis(arr, LAYOUT_ROW_DIM, name)
    flat = _config_rows(arr)
    row_size = flat.shape[1]
    for rows in _chunks(flat.shape[0], row_size):
        check_layout_chunk(flat[rows], rows.start * row_size, arr.shape, name)


def to_int8(node_config_feat: np.ndarray, *, name: str = "node_config_feat") -> np.ndarray:
    """The layout configs as int8 (same shape, 4x smaller than float32), validated.

    Shapes: (..., 18) float32 -> (..., 18) int8.
    """
    arr = np.asarray(node_config_feat)
    _check_last_axis(arr, LAYOUT_ROW_DIM, name)
    out = np.empty(arr.shape, dtype=np.int8)
    flat_in, flat_out = _config_rows(arr), out.reshape(-1)
    row_size = flat_in.shape[1]
    for rows in _chunks(flat_in.shape[0], row_size):
        chunk = flat_in[rows]
        check_layout_chunk(chunk, rows.start * row_size, arr.shape, name)
        flat_out[rows.start * row_size : rows.stop * row_size] = chunk.reshape(-1)
    return out


def from_int8(configs: np.ndarray) -> np.ndarray:
    """int8 layout configs back to the released float32 (same shape)."""
    arr = np.asarray(configs)
    if arr.dtype.kind not in "iu":
        raise ValueError(f"expected an integer array from to_int8, got dtype {arr.dtype}")
    return arr.astype(np.float32)


def _pack_vectors(vectors: np.ndarray, offset: int, shape: tuple[int, ...], name: str) -> np.ndarray:
    """(k, 6) layout vectors (slots -1..5, validated) -> (k,) int32 base-7 codes.

    ``offset`` is the flat position of ``vectors[0, 0]`` in the array of ``shape``, for the message.
    """
    check_layout_chunk(vectors, offset, shape, name)
    return _vector_codes(vectors)


def _vector_codes(vectors: np.ndarray) -> np.ndarray:
    """(k, 6) layout vectors already known to hold integers in -1..5 -> (k,) int32 base-7 codes."""
    digits = vectors.astype(np.float32) - LAYOUT_VALUE_MIN  # 0..6
    return (digits @ _SLOT_WEIGHTS.astype(np.float32)).astype(np.int32)


def pack_layout_configs(node_config_feat: np.ndarray, *, name: str = "node_config_feat") -> np.ndarray:
    """Pack each 6-slot layout vector into one base-7 integer, validated.

    ``packed = sum((slot_i + 1) * 7**(5 - i) for i in 0..5)``; -1 (unset) is digit 0.

    Arguments:
        node_config_feat: float32 (released) or integer (e.g. ``to_int8``, or the cache's memory-mapped
            int8) layout configs; read a chunk at a time.

    Shapes:
        (c, nc, 18) -> (c, nc, 3) int32 (any leading shape works: (..., 18) -> (..., 3)).
    """
    arr = np.asarray(node_config_feat)
    _check_last_axis(arr, LAYOUT_ROW_DIM, name)
    lead = arr.shape[:-1]
    vectors = arr.reshape(-1, LAYOUT_SLOTS)  # one row per 6-slot vector
    out = np.empty(vectors.shape[0], dtype=np.int32)
    for rows in _chunks(vectors.shape[0], LAYOUT_SLOTS):
        out[rows] = _pack_vectors(vectors[rows], rows.start * LAYOUT_SLOTS, arr.shape, name)
    return out.reshape(*lead, len(LAYOUT_VECTORS))


def unpack_layout_configs(packed: np.ndarray, *, name: str = "packed") -> np.ndarray:
    """Inverse of ``pack_layout_configs``.

    Shapes:
        (c, nc, 3) integer -> (c, nc, 18) float32 (any leading shape: (..., 3) -> (..., 18)).

    Raises ``ValueError`` naming the first entry that is not an integer in 0 .. 7**6 - 1.
    """
    arr = np.asarray(packed)
    _check_last_axis(arr, len(LAYOUT_VECTORS), name)
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{name} has dtype {arr.dtype}; packed layout vectors are integers")
    flat = arr.reshape(-1)
    out = np.empty((flat.shape[0], LAYOUT_SLOTS), dtype=np.float32)
    for rows in _chunks(flat.shape[0], LAYOUT_SLOTS):
        codes = flat[rows].astype(np.int64)
        bad = (codes < 0) | (codes >= PACKED_VECTOR_LIMIT)
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{_describe(arr.shape, rows.start + first, name, codes[first])}: packed layout vectors "
                f"must lie in 0..{PACKED_VECTOR_LIMIT - 1}"
            )
        digits = (codes[:, None] // _SLOT_WEIGHTS) % LAYOUT_BASE  # (rows, 6), most significant first
        out[rows] = digits + LAYOUT_VALUE_MIN
    return out.reshape(*arr.shape[:-1], LAYOUT_ROW_DIM)


def pack_layout_vector_codes(node_config_feat: np.ndarray, *, name: str = "node_config_feat") -> np.ndarray:
    """One int64 code per 18-d row (the three packed vectors as base-7**6 digits), validated.

    Two rows are equal exactly when their codes are equal, and codes order rows lexicographically:
    a 1-D key for ``np.unique`` / hashing. Rows are packed a chunk at a time, so the only array as
    large as the input's row count is the result (8 bytes per row): a memory-mapped (c, nc, 18) int8
    tensor of 100k configs is read once and never held whole.

    Shapes:
        (..., 18) -> (...) int64, values in 0 .. 7**18 - 1.
    """
    arr = np.asarray(node_config_feat)
    _check_last_axis(arr, LAYOUT_ROW_DIM, name)
    rows = arr.reshape(-1, LAYOUT_ROW_DIM)
    out = np.empty(rows.shape[0], dtype=np.int64)
    for part in _chunks(rows.shape[0], LAYOUT_ROW_DIM):
        check_layout_chunk(rows[part], part.start * LAYOUT_ROW_DIM, arr.shape, name)
        out[part] = layout_row_codes(rows[part])
    return out.reshape(arr.shape[:-1])


def layout_row_codes(values: np.ndarray) -> np.ndarray:
    """``pack_layout_vector_codes`` of (..., 18) values already known to be integers in -1..5, without
    the check: for callers that converted (and clipped) them already, such as the layout features.

    Shapes:
        (..., 18) -> (...) int64.
    """
    vectors = np.asarray(values).reshape(-1, LAYOUT_SLOTS)
    packed = _vector_codes(vectors).reshape(-1, len(LAYOUT_VECTORS)).astype(np.int64)
    return (packed @ _VECTOR_WEIGHTS).reshape(np.shape(values)[:-1])


def storage_bytes(num_configs: int, num_configurable: int) -> dict[str, int]:
    """Bytes a (c, nc, 18) config tensor takes in each form (for ``inspect``-style reports).

    >>> storage_bytes(100_040, 121)
    {'float32': 871548480, 'int8': 217887120, 'packed_int32': 145258080}
    """
    values = num_configs * num_configurable * LAYOUT_ROW_DIM
    return {
        "float32": values * 4,
        "int8": values,
        "packed_int32": num_configs * num_configurable * len(LAYOUT_VECTORS) * 4,
    }
