"""Shake-up: how much the private score could move, and which submission to select.

Kaggle split the test rows at random into a Public part (the board during the competition) and a
Private part (the final ranking). ``shakeup`` replays that split ``draws`` times on the scored test
graphs, **within each collection** (each board keeps every collection, as the official score averages
collections): ``round(public_share * G_c)`` graphs of collection ``c`` go public (at least one, and at
least one stays private), the rest private. All submissions see the same splits, so their public and
private scores in one draw are comparable.

Reported for each submission: the spread of its private score over the splits; how often it has the
best public score (the one a competitor would pick by the board); how often it has the best private
score (the one they should have picked). Over all splits: how often the public pick is also the
private best, and the mean private score lost by picking on the public board (regret). Ties go to
the submission listed first. These probabilities hold **given the full test set**: the splits are of
these very graphs, so they say how far the public board can mislead about this test set, not how
the submissions would fare on other graphs (``report`` and ``compare`` answer that).

Per-graph scores come from ``competition.stats.bootstrap`` (the kit's scorer, computed once); a draw
costs one boolean mask and two matrix products per collection.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from competition.collections import COLLECTIONS
from competition.scoring import PRIVATE, PUBLIC
from competition.stats.bootstrap import DEFAULT_SEED, GraphScores

DEFAULT_SHAKEUP_DRAWS = 1000
DEFAULT_PUBLIC_SHARE = 0.5

__all__ = ["DEFAULT_PUBLIC_SHARE", "DEFAULT_SHAKEUP_DRAWS", "Shakeup", "public_counts", "shakeup",
           "split_masks"]


def public_counts(sizes: dict[str, int], public_share: float) -> dict[str, int]:
    """Graphs per collection on the public board; ValueError for a share or a collection that cannot split."""
    if not 0 < public_share < 1:
        raise ValueError("public share must be strictly between 0 and 1 (Kaggle's was about 0.5); got "
                         f"{public_share!r}")
    counts = {}
    for name, n in sizes.items():
        if n < 2:
            raise ValueError(f"collection {name} has {n} scored graph(s); a public/private split "
                             "needs at least 2")
        counts[name] = int(min(max(round(public_share * n), 1), n - 1))
    return counts


def split_masks(sizes: dict[str, int], public_share: float, draws: int, seed: int) -> dict[str, np.ndarray]:
    """One ``(draws, G_c)`` boolean matrix per collection, True where the graph is public in that draw.

    Drawn from one generator in the fixed collection order: the same seed gives the same splits.
    """
    counts = public_counts(sizes, public_share)
    rng = np.random.default_rng(seed)
    masks = {}
    for name in (c.name for c in COLLECTIONS if c.name in sizes):
        order = np.argsort(rng.random((draws, sizes[name])), axis=1)  # a random permutation per draw
        mask = np.zeros((draws, sizes[name]), dtype=bool)
        np.put_along_axis(mask, order[:, :counts[name]], True, axis=1)
        masks[name] = mask
    return masks


@dataclass
class Shakeup:
    """Public and private scores of every submission on every simulated split."""

    names: list[str]
    public: np.ndarray  # (draws, S) overall public score per split and submission
    private: np.ndarray  # (draws, S) overall private score
    actual_public: list[float]  # the solution's own split
    actual_private: list[float]
    public_share: float
    draws: int
    seed: int

    @property
    def picked(self) -> np.ndarray:
        """(draws,) the submission with the best public score in each split."""
        return np.argmax(self.public, axis=1)

    @property
    def best_private(self) -> np.ndarray:
        """(draws,) the submission with the best private score in each split."""
        return np.argmax(self.private, axis=1)

    def summary(self) -> list[dict]:
        picked, best = self.picked, self.best_private
        rows = []
        for s, name in enumerate(self.names):
            private = self.private[:, s]
            rows.append({
                "submission": name,
                "actual_public": _finite_or_none(self.actual_public[s]),
                "actual_private": _finite_or_none(self.actual_private[s]),
                "private_mean": float(private.mean()),
                "private_sd": float(private.std()),
                "private_p05": float(np.quantile(private, 0.05)),
                "private_p95": float(np.quantile(private, 0.95)),
                "gap_sd": float((self.private[:, s] - self.public[:, s]).std()),  # private - public
                "chosen_by_public": float(np.mean(picked == s)),
                "best_on_private": float(np.mean(best == s)),
            })
        return rows

    @property
    def pick_is_best(self) -> float:
        """Share of splits where the public pick is also the private best."""
        return float(np.mean(self.picked == self.best_private))

    @property
    def mean_regret(self) -> float:
        """Mean private score lost by picking the best public score instead of the best private one."""
        rows = np.arange(self.draws)
        return float(np.mean(self.private[rows, self.best_private] - self.private[rows, self.picked]))

    def advice(self) -> str:
        if len(self.names) == 1:
            return ""
        summary = self.summary()
        safest = max(summary, key=lambda row: (row["best_on_private"], row["private_mean"]))
        return (f"select {safest['submission']}: best private score in {safest['best_on_private']:.0%} of "
                f"the splits (mean private {safest['private_mean']:.4f}); picking by the public score finds "
                f"the private best in {self.pick_is_best:.0%} of them and loses {self.mean_regret:.4f} on "
                "average")

    def to_json_dict(self) -> dict:
        return {
            "public_share": self.public_share,
            "draws": self.draws,
            "seed": self.seed,
            "submissions": self.summary(),
            "pick_is_best": self.pick_is_best if len(self.names) > 1 else None,
            "mean_regret": self.mean_regret if len(self.names) > 1 else None,
            "advice": self.advice() or None,
        }

    def format(self) -> str:
        width = max(30, *(len(name) for name in self.names))  # whole names: they tell the files apart
        head = (f"{'submission':<{width}} {'public':>7} {'private':>7} {'sim. private mean':>17} {'sd':>6} "
                f"{'5%-95%':>15} {'chosen':>7} {'best':>6}")
        lines = [f"{self.draws} random public/private splits ({self.public_share:.0%} public within each "
                 f"collection, seed {self.seed})",
                 "public/private: the solution's own split; chosen: share of splits where the submission has "
                 "the best public score; best: share where it has the best private score", head,
                 "-" * len(head)]
        for row in self.summary():
            spread = f"{row['private_p05']:.4f}-{row['private_p95']:.4f}"
            actual = [f"{v:>7.4f}" if v is not None else f"{'-':>7}" for v in (row["actual_public"],
                                                                               row["actual_private"])]
            lines.append(f"{row['submission']:<{width}} {actual[0]} {actual[1]} "
                         f"{row['private_mean']:>17.4f} {row['private_sd']:>6.4f} {spread:>15} "
                         f"{row['chosen_by_public']:>7.0%} {row['best_on_private']:>6.0%}")
        if len(self.names) > 1:
            lines.append(self.advice())
        return "\n".join(lines)


def _finite_or_none(value: float) -> float | None:
    return value if np.isfinite(value) else None  # JSON has no NaN: a split without such rows is null


def _actual(scores: GraphScores, code: int) -> float:
    means = [c.scores[c.usage == code].mean() for c in scores.collections.values() if (c.usage == code).any()]
    return float(np.mean(means)) if means else float("nan")


def shakeup(submissions: Sequence[GraphScores], *, public_share: float = DEFAULT_PUBLIC_SHARE,
            draws: int = DEFAULT_SHAKEUP_DRAWS, seed: int = DEFAULT_SEED) -> Shakeup:
    """Simulate ``draws`` public/private splits of the scored graphs for every submission at once."""
    if not submissions:
        raise ValueError("shakeup needs at least one submission")
    if isinstance(draws, bool) or not isinstance(draws, int | np.integer) or draws < 1:
        raise ValueError(f"draws must be a positive integer; got {draws!r}")
    first = submissions[0]
    for other in submissions[1:]:
        if not first.same_graphs(other):
            raise ValueError(f"{first.name} and {other.name} were not scored on the same graphs")
    names = [c.name for c in COLLECTIONS if c.name in first.collections]
    if not names:
        raise ValueError("no scored graph to split")
    sizes = {name: len(first.collections[name]) for name in names}
    masks = split_masks(sizes, public_share, draws, seed)
    public = np.zeros((draws, len(submissions)))
    private = np.zeros((draws, len(submissions)))
    for name in names:
        scores = np.stack([s.collections[name].scores for s in submissions], axis=1)  # (G, S)
        mask = masks[name].astype(np.float64)
        n_public = masks[name][0].sum()
        public += mask @ scores / n_public
        private += (1.0 - mask) @ scores / (sizes[name] - n_public)
    public /= len(names)
    private /= len(names)
    return Shakeup(
        names=[s.name for s in submissions], public=public, private=private,
        actual_public=[_actual(s, PUBLIC) for s in submissions],
        actual_private=[_actual(s, PRIVATE) for s in submissions],
        public_share=public_share, draws=draws, seed=seed,
    )
