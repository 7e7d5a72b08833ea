"""Several submissions at once: which are within noise of the best, the best being picked on the same data.

Marking every method whose comparison with the best "contains 0" reads m - 1 tests, each at 5 %, as
one, and the best was chosen because it came out on top of these very graphs. ``within_noise_of_best``
instead compares **every pair** of submissions (``compare``'s paired test on the final score: the t
interval and the exact sign-flip test must both reject) and adjusts the pairs' p values with Holm's
step-down method. A submission is marked *within noise of the best* unless its pair with the best is
rejected after the adjustment. Since the family holds every pair, whichever one the data make the
best, the chance that any submission is wrongly called worse than another stays at most
``1 - confidence`` (Holm's guarantee holds for any dependence between the tests).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from competition.stats.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_DRAWS, DEFAULT_SEED, GraphScores, compare

__all__ = ["WithinNoise", "holm", "within_noise_of_best"]


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p values, in the input order: reject where adjusted < alpha."""
    p = np.asarray(p_values, dtype=np.float64)
    m = p.size
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adjusted
    return out


@dataclass(frozen=True)
class WithinNoise:
    """The best submission and, for each other, Holm's adjusted p value of its pair with the best."""

    best: str
    adjusted_p: dict[str, float]  # method -> adjusted p of (best, method); the best itself is absent
    confidence: float
    pairs: int  # size of the family Holm adjusts over

    def within_noise(self, name: str) -> bool:
        """True for the best, and for a submission its pair with the best does not set apart."""
        return name == self.best or self.adjusted_p[name] >= 1 - self.confidence

    def mark(self, name: str) -> str:
        """``*`` the best, ``~`` within noise of it, ``""`` set apart from it."""
        return "*" if name == self.best else ("~" if self.within_noise(name) else "")


def within_noise_of_best(scores: Mapping[str, GraphScores], *, confidence: float = DEFAULT_CONFIDENCE,
                         draws: int = DEFAULT_DRAWS, seed: int = DEFAULT_SEED) -> WithinNoise:
    """The submission with the best official score and Holm's verdict on each other against it.

    Every submission must be scored on the same graphs (ValueError naming the first that is not).
    """
    names = list(scores)
    if not names:
        raise ValueError("no submissions to compare")
    first = scores[names[0]]
    for name in names[1:]:
        if not scores[name].same_graphs(first):
            raise ValueError(f"{name} and {names[0]} were not scored on the same graphs")
    best = max(names, key=lambda name: scores[name].score)  # ties: the first listed
    pairs = list(combinations(names, 2))
    p_values = [compare(scores[a], scores[b], draws=draws, seed=seed, confidence=confidence).overall.p_value
                for a, b in pairs]
    adjusted = dict(zip(pairs, holm(p_values), strict=True)) if pairs else {}
    against_best = {}
    for (a, b), p in adjusted.items():
        if best in (a, b):
            against_best[b if a == best else a] = float(p)
    return WithinNoise(best, against_best, confidence, len(pairs))
