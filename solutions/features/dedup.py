"""Config and (node, config) deduplication: do the work once per distinct row, scatter back.

Duplicate configs are common in the released data (docs/competition.md, Data format and What the winners did):
identical ``node_config_feat`` matrices measured several times, with runtimes a few tenths of a percent apart;
some nlp graphs are over 98 % duplicates. Three tools:

- ``deduplicate_configs(rows, runtimes, policy=...)``: the distinct configs of one graph, each
  config's distinct id (``inverse``), and one runtime per distinct config chosen by a documented
  policy. Works on tile ``config_feat`` (c, 24) and layout ``node_config_feat`` (c, nc, 18).
- ``unique_node_config_rows(node_config_feat)``: the distinct 18-d (node, config) rows across the whole
  (c, nc) grid, so a per-row network runs once per distinct row (``unique_node_config_pairs`` keeps
  the node in the key, for networks that also read node state).
- ``apply_unique(fn, rows)``: the compute-once-scatter-back pattern in one call.

Finding duplicates never compares all pairs (an O(c^2) equality matrix is 10 GB at 100k configs).
Each row is hashed to one 64-bit key (every 8-byte word mixed with the splitmix64 finalizer, then a
weighted sum with fixed random odd weights), keys are deduplicated with ``np.unique`` (a sort,
O(c log c)), and every row is then compared with the representative of its key in one vectorised
pass (O(c * row size)). If that check ever finds a hash collision, the exact fallback runs:
``np.unique`` over the rows viewed as opaque byte strings. Either way the answer is exact.
Float rows are compared by value bits after folding -0.0 into 0.0; NaNs compare by bit pattern.
Layout rows are first packed to base-7 integer codes (``competition.data.compact``), which validates them
and makes keys 9x shorter than float32.

Distinct items are numbered in order of first occurrence (``unique_index`` ascending), so the
first config of the file stays first and results are deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from competition.data.compact import (
    LAYOUT_ROW_DIM,
    PACKED_VECTOR_LIMIT,
    pack_layout_vector_codes,
    unpack_layout_configs,
)
from competition.stats.noise import RepeatNoise, repeat_noise

POLICIES = ("min", "mean", "median", "first")
DEFAULT_POLICY = "min"

_HASH_SEED = 0x7E5C0DE  # fixed: keys (and so the fallback decision) are the same on every run


@dataclass(frozen=True)
class DedupResult:
    """Distinct configs of one graph and one runtime each.

    ``rows[unique_index][inverse]`` equals ``rows``; ``counts[k]`` configs share distinct id ``k``.
    """

    unique_index: np.ndarray  # (u,) int64: first occurrence of each distinct config, ascending
    inverse: np.ndarray  # (c,) int64: distinct id of every config, in 0..u-1
    counts: np.ndarray  # (u,) int64: how many configs share each distinct id
    runtime: np.ndarray | None  # (u,) aggregated runtime: int64 for min/first, float64 for mean/median
    policy: str

    @property
    def num_configs(self) -> int:
        return int(self.inverse.shape[0])

    @property
    def num_unique(self) -> int:
        return int(self.unique_index.shape[0])

    @property
    def duplicate_fraction(self) -> float:
        """Share of configs that repeat an earlier one (0.98 = 98 % of the configs are duplicates)."""
        return 1.0 - self.num_unique / self.num_configs if self.num_configs else 0.0

    def expand(self, per_unique: np.ndarray) -> np.ndarray:
        """Scatter values computed per distinct config back to every config: (u, ...) -> (c, ...)."""
        per_unique = np.asarray(per_unique)
        if per_unique.shape[:1] != (self.num_unique,):
            raise ValueError(f"expected {self.num_unique} values (one per distinct config), got shape "
                             f"{per_unique.shape}")
        return per_unique[self.inverse]


# --------------------------------------------------------------------------------------------------
# Exact row deduplication


def _as_rows(array: np.ndarray) -> np.ndarray:
    """(n, ...) -> (n, k), k the product of the other axes; unlike reshape(n, -1), fine when n == 0."""
    return array.reshape(array.shape[0], int(np.prod(array.shape[1:])))


def _splitmix64(words: np.ndarray) -> np.ndarray:
    """The splitmix64 finalizer, elementwise on uint64 (wrapping arithmetic): a cheap strong mixer."""
    z = words ^ (words >> np.uint64(30))
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return z


def _as_words(rows: np.ndarray) -> np.ndarray:
    """(n, k) array -> (n, w) uint64 view of each row's bytes (zero-padded to a multiple of 8)."""
    if rows.dtype.kind == "f":
        rows = rows + rows.dtype.type(0)  # -0.0 + 0.0 == +0.0: equal values get equal bytes
    raw = _as_rows(np.ascontiguousarray(rows).view(np.uint8))
    pad = (-raw.shape[1]) % 8
    if pad:
        raw = np.concatenate([raw, np.zeros((raw.shape[0], pad), np.uint8)], axis=1)
    return raw.view(np.uint64)


# Rows are hashed and checked a block at a time: the mixer's temporaries are several copies of what
# they read, so hashing a large graph's keys whole (the largest xla graph measures 20,000 configs of
# 2,269 configurable nodes) would hold several times the keys' own memory at once.
_BLOCK_WORDS = 1 << 20  # 8 MiB of keys per block


def _row_blocks(num_rows: int, words_per_row: int) -> Iterator[slice]:
    step = max(1, _BLOCK_WORDS // max(words_per_row, 1))
    for start in range(0, num_rows, step):
        yield slice(start, min(num_rows, start + step))


def _hash_rows(words: np.ndarray) -> np.ndarray:
    """(n, w) uint64 -> (n,) uint64 row hashes."""
    weights = np.random.default_rng(_HASH_SEED).integers(0, 2**63, size=words.shape[1], dtype=np.uint64)
    weights |= np.uint64(1)
    hashes = np.empty(words.shape[0], np.uint64)
    for rows in _row_blocks(*words.shape):
        hashes[rows] = (_splitmix64(words[rows]) * weights).sum(axis=1, dtype=np.uint64)
    return hashes


def _rows_equal(words: np.ndarray, other_rows: np.ndarray) -> bool:
    """Whether every row of ``words`` equals row ``other_rows[i]`` of it (checked a block at a time)."""
    return all(np.array_equal(words[rows], words[other_rows[rows]]) for rows in _row_blocks(*words.shape))


def _first_occurrence_order(first: np.ndarray, inverse: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Renumber distinct ids (as np.unique sorts them) by first occurrence."""
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.shape[0])
    return first[order].astype(np.int64), rank[inverse.reshape(-1)].astype(np.int64)


def unique_row_index(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact distinct rows of a 2-D array without an all-pairs comparison.

    Arguments:
        rows: (n, k) array of any fixed-size dtype (a 1-D array is treated as (n, 1)).

    Returns:
        ``(unique_index, inverse)``: (u,) int64 first occurrence of every distinct row, ascending, and
        (n,) int64 distinct id of every row, so that ``rows[unique_index][inverse] == rows``.

    >>> unique_row_index(np.array([[1, 2], [3, 4], [1, 2], [5, 6], [3, 4]]))
    (array([0, 1, 3]), array([0, 1, 0, 2, 1]))
    """
    rows = _as_rows(np.asarray(rows))
    if rows.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    words = _as_words(rows)
    if words.shape[1] == 1:  # the key is the row itself: no hashing needed
        _, first, inverse = np.unique(words[:, 0], return_index=True, return_inverse=True)
        return _first_occurrence_order(first, inverse)
    _, first, inverse = np.unique(_hash_rows(words), return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    if _rows_equal(words, first[inverse]):
        return _first_occurrence_order(first, inverse)
    return _unique_rows_exact(words)  # a hash collision: rare, still exact


def _unique_rows_exact(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The collision fallback: sort the rows as opaque byte strings."""
    opaque = np.ascontiguousarray(words).view(np.dtype((np.void, words.shape[1] * 8))).reshape(-1)
    _, first, inverse = np.unique(opaque, return_index=True, return_inverse=True)
    return _first_occurrence_order(first, inverse)


# --------------------------------------------------------------------------------------------------
# Configs


def _config_keys(configs: np.ndarray) -> np.ndarray:
    """(c, ...) configs -> (c, k) rows whose equality is config equality.

    Layout ``node_config_feat`` (c, nc, 18) is packed to one int64 code per node first (validated:
    values must be integers in -1..5); anything else (tile (c, 24), packed (c, nc, 3)) is used as is.
    """
    if configs.ndim == 3 and configs.shape[-1] == LAYOUT_ROW_DIM:
        return pack_layout_vector_codes(configs, name="node_config_feat")
    return _as_rows(configs)


def _aggregate(runtimes: np.ndarray, inverse: np.ndarray, first: np.ndarray, counts: np.ndarray, policy: str):
    if policy == "first":
        return runtimes[first]
    if policy == "mean":
        return np.bincount(inverse, weights=runtimes.astype(np.float64), minlength=first.shape[0]) / counts
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    if policy == "min":
        by_group = runtimes[np.argsort(inverse, kind="stable")]
        return np.minimum.reduceat(by_group, starts)
    # median: sort by (group, runtime); the middle one or the mean of the middle two
    ordered = runtimes[np.lexsort((runtimes, inverse))].astype(np.float64)
    return (ordered[starts + (counts - 1) // 2] + ordered[starts + counts // 2]) / 2


def deduplicate_configs(
    config_matrix_rows: np.ndarray, runtimes: np.ndarray | None = None, *, policy: str = DEFAULT_POLICY
) -> DedupResult:
    """Group identical configs of one graph and give each group one runtime.

    Runtime policies for a group of identical configs:

    - ``"min"`` (default): the fastest measurement. Re-measuring the same binary only adds noise from
      interference (caches, clocks, other processes), which slows a run down and never speeds it up, so
      the minimum is the least noisy estimate of the config's own runtime; it is also an actually
      measured value (an integer number of nanoseconds), unlike a mean.
    - ``"mean"``: the average (float64); smooths noise when it is symmetric.
    - ``"median"``: the middle value (mean of the middle two for even counts; float64); robust to one
      outlier measurement.
    - ``"first"``: the runtime of the first occurrence in file order.

    Arguments:
        config_matrix_rows: the configs of one graph, first axis = config. Tile ``config_feat``
            (c, 24), layout ``node_config_feat`` (c, nc, 18) (validated and packed to integer codes
            first), or already packed layout configs (c, nc, 3); any other (c, ...) array is compared
            by value bytes.
        runtimes: (c,) measured runtimes (ns), or None when there are none (test files).
        policy: one of ``POLICIES``.

    Returns:
        ``DedupResult`` with ``unique_index`` (u,), ``inverse`` (c,), ``counts`` (u,), ``runtime`` (u,).

    >>> configs = np.array([[1, 2], [3, 4], [1, 2], [1, 2]], np.float32)
    >>> result = deduplicate_configs(configs, np.array([105, 200, 100, 103]))
    >>> result.unique_index, result.inverse, result.counts, result.runtime
    (array([0, 1]), array([0, 1, 0, 0]), array([3, 1]), array([100, 200]))
    >>> deduplicate_configs(configs, np.array([105, 200, 100, 103]), policy="median").runtime
    array([103., 200.])
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown duplicate-runtime policy {policy!r}; expected one of "
                         f"{', '.join(POLICIES)}")
    configs = np.asarray(config_matrix_rows)
    if configs.ndim < 1:
        raise ValueError("config_matrix_rows must have a config axis first, shape (c, ...)")
    if runtimes is not None:
        runtimes = np.asarray(runtimes)
        if runtimes.shape != configs.shape[:1]:
            raise ValueError(
                f"runtimes has shape {runtimes.shape} but there are {configs.shape[0]} configs; expected "
                f"({configs.shape[0]},)"
            )
    first, inverse = unique_row_index(_config_keys(configs))
    counts = np.bincount(inverse, minlength=first.shape[0]).astype(np.int64)
    if runtimes is None:
        runtime = None
    elif first.shape[0] == 0:  # no configs at all
        runtime = runtimes[:0]
    else:
        runtime = _aggregate(runtimes, inverse, first, counts, policy)
    return DedupResult(unique_index=first, inverse=inverse, counts=counts, runtime=runtime, policy=policy)


def repeat_noise_of(configs: np.ndarray, runtimes: np.ndarray) -> RepeatNoise | None:
    """The measurement noise of a labelled graph (``competition.stats.noise.repeat_noise``), its configs
    measured more than once found as ``deduplicate_configs`` finds them; None for fewer than two configs,
    runtimes that are not all measured (a test graph's zeros), or too few repeated measurements."""
    runtimes = np.asarray(runtimes, dtype=np.float64)
    if runtimes.shape[0] < 2 or not np.all(runtimes > 0):
        return None
    return repeat_noise(deduplicate_configs(configs).inverse, runtimes)


# --------------------------------------------------------------------------------------------------
# (node, config) rows


def unique_node_config_rows(node_config_feat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct 18-d rows of a layout config tensor, across configs and nodes.

    Distinct configs are found first (cheap: one key per config), then distinct rows among those,
    so a file with 98 % duplicate configs costs little more than its distinct configs.

    Arguments:
        node_config_feat: (c, nc, 18) layout configs (values integers in -1..5; validated).

    Returns:
        ``(unique_rows, inverse)``: (u, 18) float32 distinct rows, in lexicographic order of their
        values, and (c, nc) int64 with ``unique_rows[inverse] == node_config_feat``.

    >>> feat = np.full((2, 3, 18), -1, np.float32)
    >>> feat[:, 0, :2] = [0, 1]   # node 0 has output layout {0, 1} in both configs
    >>> feat[1, 2, :2] = [0, 1]   # node 2 takes the same row in config 1
    >>> rows, inverse = unique_node_config_rows(feat)
    >>> rows.shape, inverse
    ((2, 18), array([[1, 0, 0],
           [1, 0, 1]]))
    """
    feat = np.asarray(node_config_feat)
    if feat.ndim != 3 or feat.shape[-1] != LAYOUT_ROW_DIM:
        raise ValueError(f"node_config_feat has shape {feat.shape}; expected (c, nc, {LAYOUT_ROW_DIM})")
    codes = pack_layout_vector_codes(feat)  # (c, nc) int64, one per row; validates
    config_first, config_inverse = unique_row_index(codes)
    distinct_codes, row_inverse = np.unique(codes[config_first], return_inverse=True)
    inverse = row_inverse.reshape(config_first.shape[0], feat.shape[1])[config_inverse]
    return _unpack_codes(distinct_codes), inverse.astype(np.int64)


def unique_node_config_pairs(node_config_feat: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Like ``unique_node_config_rows`` but a row is distinct per configurable node.

    For a per-row network that also reads the node's own state (embedding, features): the same 18-d
    row on two different nodes is two pieces of work.

    Returns:
        ``(unique_rows, unique_nodes, inverse)``: (u, 18) float32, (u,) int64 configurable-node index
        (0..nc-1) of each distinct pair, sorted by node then row values, and (c, nc) int64 with
        ``unique_rows[inverse] == node_config_feat`` and ``unique_nodes[inverse[:, j]] == j``.
    """
    feat = np.asarray(node_config_feat)
    rows, row_inverse = unique_node_config_rows(feat)
    # Both factors are small ids, so node * num_rows + row fits int64 comfortably.
    pair_key = np.arange(feat.shape[1], dtype=np.int64)[None, :] * rows.shape[0] + row_inverse
    distinct_pairs, inverse = np.unique(pair_key, return_inverse=True)
    nodes, row_ids = np.divmod(distinct_pairs, max(1, rows.shape[0]))
    return rows[row_ids], nodes.astype(np.int64), inverse.reshape(pair_key.shape).astype(np.int64)


def _unpack_codes(codes: np.ndarray) -> np.ndarray:
    """(u,) int64 codes from ``pack_layout_vector_codes`` -> (u, 18) float32 rows."""
    packed = np.stack(
        [codes // PACKED_VECTOR_LIMIT**2, (codes // PACKED_VECTOR_LIMIT) % PACKED_VECTOR_LIMIT,
         codes % PACKED_VECTOR_LIMIT],
        axis=-1,
    )
    return unpack_layout_configs(packed)


def apply_unique(fn: Callable[[np.ndarray], np.ndarray], rows: np.ndarray) -> np.ndarray:
    """Call ``fn`` once on the distinct rows of ``rows`` and scatter its output back to every row.

    The pattern a model uses before an expensive per-row network (docs/competition.md, What the winners did):
    ``out = fn(unique_rows)[inverse]``.

    Arguments:
        fn: maps a (u, d) array of distinct rows to a (u, ...) array.
        rows: (..., d) array with at least 2 axes; rows are its last axis, the leading axes are
            flattened for ``fn`` and restored in the output.

    Returns:
        (..., *fn_output.shape[1:]): what ``fn(rows)`` would give row by row.

    >>> rows = np.array([[[0, 1], [2, 3]], [[0, 1], [0, 1]]])   # (2 configs, 2 nodes, d=2)
    >>> calls = []
    >>> def expensive(r):
    ...     calls.append(len(r))
    ...     return r.sum(axis=1) * 10
    >>> apply_unique(expensive, rows)
    array([[10, 50],
           [10, 10]])
    >>> calls   # two distinct rows, computed once each
    [2]
    """
    rows = np.asarray(rows)
    if rows.ndim < 2:
        raise ValueError(f"rows has shape {rows.shape}; expected (..., d) with at least 2 axes")
    flat = rows.reshape(-1, rows.shape[-1])
    first, inverse = unique_row_index(flat)
    out = np.asarray(fn(flat[first]))
    if out.shape[:1] != first.shape:
        raise ValueError(f"fn returned shape {out.shape} for {first.shape[0]} distinct rows; expected "
                         f"({first.shape[0]}, ...)")
    return out[inverse].reshape(*rows.shape[:-1], *out.shape[1:])
