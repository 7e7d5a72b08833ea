"""``tpugraphs rank --explain``: which of a candidate's changes carry its predicted gain.

A candidate changes several tensors' layouts at once. ``explain`` applies each change alone to the
reference, scores every such config with the same model(s) that ranked the candidates
(``solutions.rank.scoring.Scorer``, in the ranking's context), and lists the changes by predicted gain
(the reference's score minus the config's; lower scores are faster) with the share of the whole
candidate's gain each carries. Then it builds the smallest set it can that reaches ``TARGET`` (90 %) of
that gain, greedily: starting from the reference, it adds at each step the change that brings the set's
predicted gain highest, and stops at the first set that reaches the target. Changes interact, so the
shares need not add up to 100 % and the set may hold a change that is worth little alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solutions.kinds.program import Program, RankError
from solutions.rank.scoring import Scorer

TARGET = 0.9  # the share of the candidate's predicted gain the minimal set reaches


@dataclass
class Explanation:
    """A candidate taken apart: each change's gain alone, and the greedy set reaching ``TARGET``."""

    candidate: int  # the candidate's index
    rank: int | None  # its predicted place
    reference_score: float
    candidate_score: float
    changes: list[dict] = field(default_factory=list)  # best first; each with score, gain, share, in_set
    minimal_set: list[int] = field(default_factory=list)  # positions in ``changes``, in the order added
    set_score: float | None = None
    set_share: float | None = None  # the set's share of the candidate's gain (None: no gain)
    reached: bool = False  # the set reaches TARGET of the candidate's gain
    config: np.ndarray | None = None  # the reference with the minimal set applied

    @property
    def gain(self) -> float:
        return self.reference_score - self.candidate_score

    def to_json(self) -> list[dict]:
        return [{key: change[key] for key in ("instruction", "opcode", "tensor", "shape", "from", "to",
                                              "predicted_score", "predicted_gain", "share", "in_minimal_set",
                                              "source", "text", "node")} for change in self.changes]

    def summary_json(self) -> dict:
        return {"candidate": self.candidate, "rank": self.rank, "reference_score": self.reference_score,
                "candidate_score": self.candidate_score, "predicted_gain": self.gain,
                "target_share": TARGET, "minimal_set_size": len(self.minimal_set),
                "minimal_set_score": self.set_score, "minimal_set_share": self.set_share,
                "reached": self.reached, "changes": len(self.changes)}


def explain(program: Program, scorer: Scorer, reference: np.ndarray, candidate: np.ndarray, *,
            index: int, rank: int | None) -> Explanation:
    """Take ``candidate`` apart against ``reference`` (see the module's docstring)."""
    kind = program.kind
    singles = kind.single_changes(candidate, reference, program)
    if not singles:
        raise RankError(f"candidate {index} is the reference itself: it changes nothing to explain")
    anchors = np.stack([reference, candidate]).astype(np.float32)
    scores, beside = scorer.score(np.stack([config for _, config in singles]).astype(np.float32), anchors)
    reference_score, candidate_score = float(beside[0, 0]), float(beside[0, 1])
    gain = reference_score - candidate_score
    rows = []
    for (change, _), score, (ref, cand) in zip(singles, scores, beside, strict=True):
        single_gain, whole = float(ref - score), float(ref - cand)  # against the anchors of its own call
        rows.append(dict(change, predicted_score=float(score), predicted_gain=single_gain,
                         share=single_gain / whole if whole > 0 else None, in_minimal_set=False))
    order = sorted(range(len(rows)), key=lambda i: (-rows[i]["predicted_gain"], i))
    result = Explanation(candidate=index, rank=rank, reference_score=reference_score,
                         candidate_score=candidate_score, changes=[rows[i] for i in order])
    if gain <= 0:
        return result  # not predicted faster than the reference: there is no gain to reach
    chosen, set_score, set_share = _greedy(program, scorer, reference, candidate, order)
    for position in chosen:
        result.changes[position]["in_minimal_set"] = True
    result.minimal_set = chosen
    result.set_score, result.set_share = set_score, set_share
    result.reached = set_share >= TARGET - 1e-12
    result.config = kind.with_changes(candidate, reference, program, [order[p] for p in chosen])
    return result


def _greedy(program: Program, scorer: Scorer, reference: np.ndarray, candidate: np.ndarray,
            order: list[int]) -> tuple[list[int], float, float]:
    """Positions (in the best-first list) of the greedy set, in the order added, its score and its share
    of the candidate's gain: each step scores the set so far plus each remaining change and keeps the
    one whose set has the largest share; it stops at the first set reaching ``TARGET``, or with every
    change in."""
    kind = program.kind
    anchors = np.stack([reference, candidate]).astype(np.float32)
    chosen: list[int] = []
    remaining = list(range(len(order)))
    score, share = float("nan"), 0.0
    while remaining:
        trials = [kind.with_changes(candidate, reference, program, [order[p] for p in chosen + [r]])
                  for r in remaining]
        scores, beside = scorer.score(np.stack(trials).astype(np.float32), anchors)
        whole = beside[:, 0] - beside[:, 1]  # the candidate's gain in each trial's call
        shares = np.where(whole > 0, (beside[:, 0] - scores) / np.where(whole > 0, whole, 1.0), -np.inf)
        pick = int(np.argmax(shares))
        chosen.append(remaining.pop(pick))
        score, share = float(scores[pick]), float(shares[pick])
        if share >= TARGET - 1e-12:
            break
    return chosen, score, share
