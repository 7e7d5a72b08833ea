"""A trained model's layout ranking blended with the heuristic's, at the weight validation prefers.

After training, a learned method scores its validation graphs with ``z(model) + w x z(heuristic)``
(both as z-scores within the graph, both higher = slower) for each weight ``w`` of ``WEIGHTS``, keeps
the weight whose blend scores best (the smallest of equal scores: 0 keeps the model's own ranking),
and ranks every graph it predicts with that blend. The heuristic is the kit's rule
(``solutions.heuristics``); the gnn reads its estimate from its engineered ``heuristic_log_cost`` row
input (the rule's log cost as a z-score within the graph, clipped at +-10: the rule's order), so the
rule is not run a second time. (gbdt, which already starts from the heuristic's order, gained
0.01 at most on the real graphs with it, in a scratch measurement: it does not use it.)

Off by default (the gnn's ``--param heuristic_blend=true`` turns it on), measured and not adopted
(docs/gnn.md, "Blending in the heuristic's order"): trained on the embedded competition, the gnn's
``layout:xla:default`` validation asked for the blend in 14 of 15 fits, and on the real default
searches at hand it ranked `unet_3d.4x4.bf16` and the shipped proto better (+0.06, +0.05) and
`unet3d`, where the heuristic is near zero, worse (-0.03; -0.08 trained on the other real program);
trained on a real graph's own configs, validation kept the network alone. The weight is chosen on
the validation split, never on test labels.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from competition.tasks import Task
from solutions.features.engineered import standardized

WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)  # 0: the model alone; 4: the heuristic, ties broken by the model


def blend(scores: np.ndarray, heuristic: np.ndarray, weight: float) -> np.ndarray:
    """The blended prediction (higher = slower): the model's scores themselves when ``weight`` is 0;
    otherwise both as z-scores within the graph (the features' ``standardized``: a column that does not
    vary is 0), the heuristic's times ``weight``, added."""
    if not weight:
        return np.asarray(scores)
    columns = standardized(np.column_stack([scores, heuristic]).astype(np.float64))
    return columns[:, 0] + weight * columns[:, 1]


Graphs = Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]]  # (model scores, heuristic estimates, runtimes)


def score_sums(task: Task, valid: Graphs) -> list[float]:
    """For each weight of ``WEIGHTS``, the sum over the valid graphs (``(model scores, heuristic
    estimates, runtimes)`` each) of its blend's official score: sums, so that the processes of a
    distributed run can add theirs before ``best_weight``."""
    graphs = [(np.asarray(s), np.asarray(h), np.asarray(r, dtype=np.float64)) for s, h, r in valid]
    return [float(sum(task.score_graph(np.argsort(blend(s, h, w), kind="stable"), r, None)
                      for s, h, r in graphs)) for w in WEIGHTS]


def best_weight(totals: Sequence[float], count: float) -> tuple[float, dict[float, float]]:
    """From ``score_sums`` over ``count`` valid graphs (every process's, added): the weight with the best
    mean score, the smallest of equal ones, and each weight's mean; 0 (the model alone) and {} without
    a valid graph."""
    if not count:
        return 0.0, {}
    means = {w: total / count for w, total in zip(WEIGHTS, totals, strict=True)}
    return max(WEIGHTS, key=lambda w: (round(means[w], 12), -w)), means
