"""Measurement noise of a layout graph, and Kendall's tau over the pairs of configs it cannot order.

A real layout graph often holds the same config measured more than once (the released searches repeat
configs; the layout proto the kit ships measures 20 of its configs two or three times: 22 pairs). Their
runtimes differ by the measurement's own noise, a tiny fraction of a runtime. Many pairs of *different*
configs differ by no more than that, most of them in default searches, where most configs tie at the
fastest runtime up to noise. The official metric counts every such pair, so on those graphs most of a
tau, and most of a difference between two models, is decided by how their orders happen to meet
runtimes that differ by less than a config's own repeated measurements do (the levels and shares
measured on the real graphs at hand: docs/statistics.md, "Measurement noise: the pairs a real graph
cannot order"; BENCHMARKS.md#real-data-make-bench-real).

The official tau is tau-b: concordant minus discordant pairs over sqrt(pairs x untied pairs), while the
tau here divides by the pairs it counts; so with no noise they agree only when no runtimes tie, and on a
graph with many exact ties part of the difference between the two readings is that denominator.

- ``repeat_noise``: from the configs measured more than once, the relative runtime difference that
  repeated measurements stay within (``NOISE_QUANTILE`` of their pairs);
- ``taus_beyond_noise``: per run, Kendall's tau over only the pairs whose runtimes differ by more than
  that level, relative to the faster: (concordant - discordant) / such pairs;
- ``beyond_noise_interval``: its mean over runs with the bootstrap interval of ``tau_interval``;
- ``pairs_beyond_noise``: the share of a graph's pairs that count.

It is a reading aid for comparing methods on real graphs (``benchmarks/bench_real.py`` reports it beside
the official tau), not a metric: submissions are scored on every pair (``competition.metrics``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from competition.stats.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_DRAWS, DEFAULT_SEED, Interval
from competition.stats.one_graph import SUBSAMPLE, resampled_interval

NOISE_QUANTILE = 0.95  # of the repeated measurements' relative differences
MIN_REPEAT_PAIRS = 10  # fewer pairs of repeated measurements give no noise level
MAX_GROUP = 200  # members of one repeated config whose pairs are counted (a seeded sample beyond)
EXACT_CONFIGS = 20_000  # a run of more configs is counted on a seeded sample of this many
ROWS_PER_CHUNK = 1024  # rows of the pair matrix held at once


@dataclass(frozen=True)
class RepeatNoise:
    """How far apart repeated measurements of one config are."""

    level: float  # relative runtime difference (0.0001 = 0.01 %) at NOISE_QUANTILE of the pairs below
    pairs: int  # pairs of measurements of the same config it rests on
    configs: int  # distinct configs measured more than once

    def percent(self) -> str:
        return f"{100 * self.level:.4f} %"


def _relative_gaps(values: np.ndarray) -> np.ndarray:
    """Every pair's |a - b| / min(a, b) of one config's repeated runtimes."""
    i, j = np.triu_indices(values.shape[0], 1)
    return np.abs(values[i] - values[j]) / np.minimum(values[i], values[j])


def repeat_noise(keys: np.ndarray, runtimes: np.ndarray, *, quantile: float = NOISE_QUANTILE,
                 min_pairs: int = MIN_REPEAT_PAIRS, seed: int = DEFAULT_SEED) -> RepeatNoise | None:
    """The noise of a graph's measurements, from its configs measured more than once; None when fewer
    than ``min_pairs`` pairs of repeated measurements exist.

    keys: (c,) or (c, k), equal rows = the same config (``solutions.features.dedup.repeat_noise_of`` passes
    ``deduplicate_configs(configs).inverse``); runtimes: (c,) positive. A config measured more than
    ``MAX_GROUP`` times counts the pairs of a seeded sample of that many.
    """
    keys = np.asarray(keys)
    runtimes = np.asarray(runtimes, dtype=np.float64)
    if keys.shape[0] != runtimes.shape[0]:
        raise ValueError(f"{keys.shape[0]} config keys for {runtimes.shape[0]} runtimes")
    if not 0 < quantile < 1:
        raise ValueError(f"quantile must be between 0 and 1; got {quantile!r}")
    if runtimes.size and not (np.isfinite(runtimes).all() and (runtimes > 0).all()):
        raise ValueError("runtimes must be finite and positive to measure relative noise")
    if not runtimes.size:
        return None
    _, group = np.unique(keys.reshape(keys.shape[0], -1), axis=0, return_inverse=True)
    group = group.reshape(-1)
    order = np.argsort(group, kind="stable")
    bounds = np.flatnonzero(np.diff(group[order])) + 1
    rng = np.random.default_rng(seed)
    gaps: list[np.ndarray] = []
    repeated = 0
    for members in np.split(order, bounds):
        if members.size < 2:
            continue
        repeated += 1
        if members.size > MAX_GROUP:
            members = rng.choice(members, size=MAX_GROUP, replace=False)
        gaps.append(_relative_gaps(runtimes[members]))
    count = int(sum(g.size for g in gaps))
    if count < min_pairs:
        return None
    return RepeatNoise(float(np.quantile(np.concatenate(gaps), quantile)), count, repeated)


def _slower_beyond(ordered: np.ndarray, noise: float) -> np.ndarray:
    """For runtimes sorted ascending: where the configs slower than each one by more than ``noise``
    (relative to it) begin; they are the rest of the sorted list from there."""
    return np.searchsorted(ordered, ordered * (1.0 + noise), side="right")


def pairs_beyond_noise(runtimes: np.ndarray, noise: float) -> float:
    """The share of a graph's pairs of configs whose runtimes differ by more than ``noise`` (NaN with
    fewer than two configs)."""
    ordered = np.sort(np.asarray(runtimes, dtype=np.float64))
    n = ordered.shape[0]
    if n < 2:
        return float("nan")
    return float((n - _slower_beyond(ordered, noise)).sum() / (n * (n - 1) / 2))


def _beyond_noise_tau(prediction: np.ndarray, runtime: np.ndarray, noise: float) -> float:
    """One run: tau over the pairs whose runtimes differ by more than ``noise`` (relative)."""
    n = runtime.shape[0]
    position = np.empty(n, dtype=np.int64)
    position[np.argsort(prediction, kind="stable")] = np.arange(n)  # as a submission row ranks them
    by_runtime = np.argsort(runtime, kind="stable")
    ordered, placed = runtime[by_runtime], position[by_runtime]
    start = _slower_beyond(ordered, noise)
    kept = int((n - start).sum())
    if not kept:
        return float("nan")
    columns = np.arange(n)
    concordant = 0
    for a in range(0, n, ROWS_PER_CHUNK):
        b = min(a + ROWS_PER_CHUNK, n)
        beyond = columns[None, :] >= start[a:b, None]
        concordant += int((beyond & (placed[None, :] > placed[a:b, None])).sum())
    return (2 * concordant - kept) / kept


def taus_beyond_noise(predictions: Sequence[np.ndarray], runtimes: Sequence[np.ndarray], noise: float, *,
                      seed: int = DEFAULT_SEED) -> np.ndarray:
    """Per run: Kendall's tau over the pairs of configs whose runtimes differ by more than ``noise``
    relative to the faster one (NaN for a run with no such pair).

    Predictions rank as ``layout_taus`` ranks them (fastest first, ties by position). With ``noise=0``
    every pair of differing runtimes counts, and on runtimes without ties this is the official tau. A
    run of more than ``EXACT_CONFIGS`` configs is counted on a seeded sample of that many (the value is
    ratio of pair counts, which the sample estimates nearly without bias; ``beyond_noise_interval``
    widens its interval to match). Runtimes must be finite and positive (the gaps are relative).
    """
    if noise < 0 or not np.isfinite(noise):
        raise ValueError(f"noise must be a finite relative difference >= 0; got {noise!r}")
    if len(predictions) != len(runtimes):
        raise ValueError(f"{len(predictions)} prediction arrays for {len(runtimes)} runtime arrays")
    rng = np.random.default_rng(seed)
    values = np.empty(len(runtimes))
    for k, (p, r) in enumerate(zip(predictions, runtimes, strict=True)):
        p, r = np.asarray(p), np.asarray(r, dtype=np.float64)
        if len(p) != len(r):
            raise ValueError(f"run {k}: {len(p)} predictions for {len(r)} runtimes")
        if not (np.isfinite(r).all() and (r > 0).all()):
            raise ValueError(f"run {k}: runtimes must be finite and positive to compare them relatively")
        if len(r) > EXACT_CONFIGS:
            pick = np.sort(rng.choice(len(r), size=EXACT_CONFIGS, replace=False))
            p, r = p[pick], r[pick]
        values[k] = _beyond_noise_tau(p, r, noise)
    return values


def beyond_noise_interval(predictions: Sequence[np.ndarray], runtimes: Sequence[np.ndarray], noise: float, *,
                          draws: int = DEFAULT_DRAWS, seed: int = DEFAULT_SEED,
                          confidence: float = DEFAULT_CONFIDENCE,
                          subsample: int | None = SUBSAMPLE) -> Interval:
    """The mean of ``taus_beyond_noise`` over runs, with ``tau_interval``'s bootstrap (configs and runs
    resampled, a run of more than ``subsample`` configs that many at a time). A run of more than
    ``EXACT_CONFIGS`` configs is valued on a sample of that many, so its spread is that of a graph of that
    size, not of its own (narrower) one."""
    def statistic(p: Sequence[np.ndarray], r: Sequence[np.ndarray]) -> np.ndarray:
        return taus_beyond_noise(p, r, noise, seed=seed)

    return resampled_interval(statistic, predictions, runtimes, draws=draws, seed=seed,
                              confidence=confidence, subsample=subsample, valued_at_most=EXACT_CONFIGS)
