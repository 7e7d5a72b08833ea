"""The paired sign-flip test: is B - A more than the graphs' own noise?

If A and B were interchangeable (the same method twice, two seeds, two small perturbations of one
ranking), each graph's difference ``d = b - a`` would be as likely to be ``-d``. The test flips the
signs of the differences and asks how often the flipped statistic is at least as far from 0 as the
observed one: per collection ``mean(d_c)``, overall the official combination ``sum_c mean(d_c) / K``.
Its two-sided p value is exact under that hypothesis for any number of graphs and any shape of the
scores: every one of the ``2^G`` sign patterns is enumerated when there are at most ``EXACT_LIMIT``
of them (8 graphs: 256), else ``draws`` random patterns are drawn from a seeded generator and
``p = (1 + #{as extreme}) / (1 + draws)``, which keeps the test's level (Phipson and Smyth, 2010).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

EXACT_LIMIT = 2**12  # sign patterns enumerated in full up to this many (12 graphs)

__all__ = ["EXACT_LIMIT", "sign_flip_p_values"]


def _all_patterns(g: int) -> np.ndarray:
    """Every sign pattern of ``g`` graphs: ``(2^g, g)`` of +-1."""
    bits = (np.arange(2**g)[:, None] >> np.arange(g)[None, :]) & 1
    return 1.0 - 2.0 * bits


def _p_value(observed: float, flipped: np.ndarray, exact: bool, scale: float) -> float:
    # A flipped statistic equal to the observed one up to float rounding counts as "as extreme".
    extreme = int(np.sum(np.abs(flipped) >= abs(observed) - 1e-12 * max(scale, 1e-300)))
    return extreme / flipped.size if exact else (1 + extreme) / (1 + flipped.size)


def sign_flip_p_values(diffs: Mapping[str, np.ndarray], *, draws: int,
                       seed: int) -> tuple[float, dict[str, float]]:
    """Two-sided sign-flip p values of B - A == 0: overall (mean of collection means) and per collection.

    ``diffs[c]``: ``(G_c,)`` per-graph differences B - A. Identical submissions give 1.0 everywhere.
    """
    rng = np.random.default_rng(seed)
    arrays = {name: np.asarray(d, dtype=np.float64) for name, d in diffs.items()}
    per_collection: dict[str, float] = {}
    exact_flips, random_flips = {}, {}
    for name, d in arrays.items():
        scale = float(np.sum(np.abs(d))) / d.size
        if 2**d.size <= EXACT_LIMIT:
            exact_flips[name] = _all_patterns(d.size) @ d / d.size
            per_collection[name] = _p_value(float(np.mean(d)), exact_flips[name], True, scale)
        else:
            random_flips[name] = rng.choice([-1.0, 1.0], size=(draws, d.size)) @ d / d.size
            per_collection[name] = _p_value(float(np.mean(d)), random_flips[name], False, scale)
    observed = float(np.mean([np.mean(d) for d in arrays.values()]))
    scale = float(np.mean([np.sum(np.abs(d)) / d.size for d in arrays.values()]))
    if not random_flips and np.prod([m.size for m in exact_flips.values()]) <= EXACT_LIMIT:
        # Every joint pattern: each collection's patterns against every other's.
        grids = np.meshgrid(*[exact_flips[name] for name in arrays], indexing="ij")
        overall = np.mean(np.stack([grid.ravel() for grid in grids]), axis=0)
        return _p_value(observed, overall, True, scale), per_collection
    overall = np.mean(np.stack([
        random_flips[name] if name in random_flips
        else rng.choice([-1.0, 1.0], size=(draws, d.size)) @ d / d.size
        for name, d in arrays.items()]), axis=0)
    return _p_value(observed, overall, False, scale), per_collection
