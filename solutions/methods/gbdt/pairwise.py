"""The ``pairwise`` objective of the gbdt: RankNet's logistic loss over every pair of a query's configs.

Kendall tau counts every pair of configs with differing runtimes once. LightGBM's ``lambdarank``
weighs a pair by how much swapping it changes NDCG (and may truncate to the top of the list), so it
cares most about the fastest configs. This objective weighs every such pair the same:

- **Loss of one query** of ``n`` configs with scores ``s`` (high = fast) and labels ``y`` (high =
  fast; equal labels = tied runtimes): over the ``P`` unordered pairs ``(i, j)`` with ``y_i > y_j``,
  ``n * mean log(1 + exp(-(s_i - s_j)))``. Tied pairs are left out (Kendall tau does not count
  them). The factor ``n`` keeps each row's gradient of order 1 (every config is in about ``n / 2``
  of the ``P ~ n^2 / 2`` pairs), as in a pointwise loss, so the learning rate, ``lambda_l2`` and
  LightGBM's minimum leaf hessian keep the meaning they have with the other objectives. Queries
  are summed, so a graph weighs as many configs as were drawn from it (as with lambdarank on
  queries of ``query_size``).
- **Gradient and hessian** (the hessian's diagonal, as LightGBM takes it): with
  ``q = sigmoid(-(s_i - s_j))``, the pair adds ``-w q`` to ``grad_i``, ``+w q`` to ``grad_j`` and
  ``w q (1 - q)`` to both hessians, ``w = n / P``.
- **All pairs, vectorised**: queries of the same size are stacked and their ``(m, m)`` score
  differences computed at once, in chunks of at most ``CHUNK_ENTRIES`` matrix entries (so a query of
  10,000 configs costs 100 chunks of 1M entries, never a 10,000^2 matrix at once). The matrices are
  float32 and the row sums float64; labels are replaced by their dense ranks first, so ties and
  order are exact.
- **Sampled pairs for huge queries**: a query with more than ``max_pairs`` pairs (``n (n - 1) / 2``;
  default 1,000,000, i.e. more than 1,414 configs) uses ``max_pairs`` pairs drawn uniformly at random
  each round (with replacement, from a generator seeded by the training seed, so the same seed gives
  the same model); the mean over the drawn pairs of differing labels estimates the mean over all of
  them (unbiased when no labels tie; with ties, a ratio estimate whose bias shrinks as 1 / max_pairs). The
  gbdt's default queries (64 configs for layout, one kernel of at most 1000 configs for tile) never reach it;
  ``query_size=null`` with more than 1,414 configs drawn per graph does.

``pairwise_gradients`` is the function; ``PairwiseObjective`` wraps it as LightGBM's custom
objective (``params["objective"] = PairwiseObjective(...)``, lightgbm >= 4), reading labels and
query sizes from the training ``Dataset``. numpy only.
"""

from __future__ import annotations

import numpy as np

CHUNK_ENTRIES = 1 << 20  # score differences computed at once (8 MiB of float64 per array)
DEFAULT_MAX_PAIRS = 1_000_000


def _sigmoid_of_minus(z: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(z))`` without overflow, in place."""
    z *= 0.5
    np.tanh(z, out=z)
    z *= -0.5
    z += 0.5
    return z


def _exact(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(G, m) scores and labels of G queries of m configs -> (G, m) gradient and hessian sums over all
    pairs (unweighted) and (G,) the number of unordered pairs with differing labels.

    The pair matrices are float32 (LightGBM takes float32 gradients, and float32 matrices are faster
    to compute than float64 ones), the sums float64. ``labels`` must be exact in float32
    (``pairwise_gradients`` passes dense ranks; beyond 2**24 of them the labels stay float64).
    """
    g_count, m = scores.shape
    exact32 = labels.size == 0 or labels.max() < 2**24  # integer labels (ranks) up to 2**24 are exact
    scores, labels = scores.astype(np.float32), labels.astype(np.float32 if exact32 else np.float64)
    grad, hess = np.zeros((g_count, m)), np.zeros((g_count, m))
    pairs = np.zeros(g_count)
    per_query = m * m
    if per_query <= CHUNK_ENTRIES:  # whole queries per chunk
        step = max(1, CHUNK_ENTRIES // per_query)
        steps = [(slice(a, a + step), slice(0, m)) for a in range(0, g_count, step)]
    else:  # one query at a time, rows in chunks
        rows = max(1, CHUNK_ENTRIES // m)
        steps = [(slice(g, g + 1), slice(r, r + rows)) for g in range(g_count) for r in range(0, m, rows)]
    for queries, rows in steps:
        # sign[q, i, j] = +1 when config i is faster than j (higher label), -1 slower, 0 tied.
        sign = np.sign(labels[queries, rows, None] - labels[queries, None, :])
        q = scores[queries, rows, None] - scores[queries, None, :]
        q *= sign  # z > 0: the pair is ordered right
        q = _sigmoid_of_minus(q)
        # Row i holds d(loss of pair {i, j}) / d s_i for every j, so each row's sum is its gradient.
        grad[queries, rows] -= (sign * q).sum(axis=2, dtype=np.float64)
        q -= q * q  # q (1 - q)
        sign *= sign  # 1 where the labels differ
        q *= sign
        hess[queries, rows] += q.sum(axis=2, dtype=np.float64)
        pairs[queries] += sign.sum(axis=(1, 2), dtype=np.float64) / 2.0  # each unordered pair is seen twice
    return grad, hess, pairs


def _sampled(scores: np.ndarray, labels: np.ndarray, count: int,
             rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float]:
    """One query: gradient and hessian sums over ``count`` uniformly drawn pairs of distinct configs
    (unweighted) and how many of them had differing labels."""
    n = scores.shape[0]
    i = rng.integers(0, n, size=count)
    j = rng.integers(0, n - 1, size=count)
    j += j >= i  # uniform over the configs other than i
    sign = np.sign(labels[i] - labels[j])
    q = _sigmoid_of_minus(sign * (scores[i] - scores[j]))
    push = sign * q
    curvature = np.abs(sign) * q * (1.0 - q)
    grad = np.bincount(j, weights=push, minlength=n) - np.bincount(i, weights=push, minlength=n)
    hess = np.bincount(i, weights=curvature, minlength=n) + np.bincount(j, weights=curvature, minlength=n)
    return grad, hess, float(np.abs(sign).sum())


def pairwise_gradients(scores: np.ndarray, labels: np.ndarray, sizes: np.ndarray, *,
                       max_pairs: int = DEFAULT_MAX_PAIRS,
                       rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(N,) gradient and hessian of the summed query losses (module docstring) at ``scores``.

    ``scores`` and ``labels`` hold the rows of consecutive queries of ``sizes`` configs (high =
    fast for both). A query with more than ``max_pairs`` pairs is estimated from ``max_pairs`` pairs
    drawn with ``rng`` (required then). A query without two differing labels gets zeros.
    """
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)
    sizes = np.asarray(sizes, dtype=np.int64)
    if scores.shape != labels.shape or scores.shape[0] != int(sizes.sum()):
        raise ValueError(f"scores {scores.shape} and labels {labels.shape} must both hold the "
                         f"{int(sizes.sum())} rows of the queries")
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    grad, hess = np.zeros_like(scores), np.zeros_like(scores)
    # Dense ranks order the rows exactly as the labels do and stay exact in float32 (< 2**24 values).
    ranks = np.unique(labels, return_inverse=True)[1].reshape(-1).astype(np.float64)
    huge = sizes * (sizes - 1) // 2 > max_pairs
    for m in np.unique(sizes[~huge]):
        if m < 2:
            continue
        starts = offsets[:-1][(sizes == m) & ~huge]
        rows = starts[:, None] + np.arange(m)[None, :]  # (G, m) row numbers of the queries of this size
        g, h, pairs = _exact(scores[rows], ranks[rows])
        weight = np.divide(m, pairs, out=np.zeros_like(pairs), where=pairs > 0)[:, None]
        grad[rows], hess[rows] = g * weight, h * weight
    for number in np.flatnonzero(huge):
        if rng is None:
            raise ValueError(f"a query of {sizes[number]} configs has more than {max_pairs} pairs: "
                             f"sampling them needs an rng")
        start, end = offsets[number], offsets[number + 1]
        g, h, pairs = _sampled(scores[start:end], labels[start:end], max_pairs, rng)
        weight = (end - start) / pairs if pairs else 0.0
        grad[start:end], hess[start:end] = g * weight, h * weight
    return grad, hess


def pairwise_loss(scores: np.ndarray, labels: np.ndarray, sizes: np.ndarray) -> float:
    """The summed query losses over all pairs (no sampling), for checks; O(n^2) memory per query."""
    total, start = 0.0, 0
    for n in np.asarray(sizes, dtype=np.int64).tolist():
        s, y = (np.asarray(scores[start:start + n], np.float64),
                np.asarray(labels[start:start + n], np.float64))
        start += n
        faster = y[:, None] > y[None, :]
        if faster.any():
            total += n * float(np.logaddexp(0.0, -(s[:, None] - s[None, :]))[faster].mean())
    return total


class PairwiseObjective:
    """LightGBM's custom objective ``(preds, train_data) -> (grad, hess)`` for ``pairwise_gradients``.

    Labels (high = fast) and query sizes are read from the training ``Dataset`` (it must have a
    ``group``); pair sampling for huge queries draws from a generator seeded with ``seed``.
    """

    def __init__(self, max_pairs: int = DEFAULT_MAX_PAIRS, seed: int = 0) -> None:
        self.max_pairs = int(max_pairs)
        self.rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, 0x9A12])

    def __call__(self, preds: np.ndarray, train_data) -> tuple[np.ndarray, np.ndarray]:
        sizes = train_data.get_group()
        if sizes is None:
            raise ValueError("the pairwise objective needs query groups in the training Dataset")
        return pairwise_gradients(preds, train_data.get_label(), sizes, max_pairs=self.max_pairs,
                                  rng=self.rng)

    def __repr__(self) -> str:  # LightGBM may print the params
        return f"PairwiseObjective(max_pairs={self.max_pairs})"
