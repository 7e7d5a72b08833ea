"""Model selection that tiny validation graphs cannot fool (issue 14).

The tile metric looks at the top 5 configs only, so a kernel with 5 configs or fewer scores exactly
1.0 whatever the model predicts, and one with 6..7 configs nearly so. On real tile folds whose valid
kernels had 3 or fewer configs the valid score read 1.000 while the chosen model picked configs
several times slower than the best. Two rules follow:

- **Uninformative graphs are left out of selection**: a graph needs its task's
  ``informative_configs`` to count (a tile kernel 6, a layout graph 2: Kendall tau is undefined
  below that). The reported validation score (``tpugraphs solve``'s table) still covers every graph:
  only the choice of round or epoch ignores them.
- **Cross-validation fallback** (tile): when fewer than ``MIN_SELECTION_GRAPHS`` (5) valid kernels are
  left, the valid split has too little signal, and the learned methods choose their length by k-fold
  cross-validation over the train kernels instead: gbdt its number of rounds (then refits on all the
  kernels), the gnn its epoch (each fold trained on the others and scored every ``eval_every``
  epochs; then one run on all the kernels keeps the weights of the epoch with the best mean score).
  Layout selection keeps the valid split whatever its size (a layout graph's tau moves with every
  pair of its configs, and the valid splits hold 8 graphs on the small competition): the fallback
  was asked for the tile collection, whose real folds fooled the selection.

``plan_selection`` decides; the methods record the plan in their ``summary()`` (``solve``'s report
and ``--json``, under ``details.selection``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TypeVar

import numpy as np

from competition.tasks import Task

MIN_SELECTION_GRAPHS = 5  # fewer informative valid graphs than this: cross-validate on train instead
CV_FOLDS = 4

VALID = "valid"
CROSS_VALIDATION = "cross-validation"


def min_configs(task: Task) -> int:
    """Fewest configs a graph needs for its score to say anything about the model (the task's rule)."""
    return task.informative_configs


def informative_graphs(config_counts: Sequence[int], task: Task) -> np.ndarray:
    """(g,) bool: which graphs count for model selection.

    >>> from competition.tasks import TILE
    >>> informative_graphs([3, 6, 5, 40], TILE).tolist()
    [False, True, False, True]
    """
    counts = np.asarray(config_counts, dtype=np.int64).reshape(-1)
    return counts >= min_configs(task)


@dataclass(frozen=True)
class SelectionPlan:
    """How a model is selected, and why: what ``solve``'s report shows under ``details.selection``."""

    mode: str  # VALID or CROSS_VALIDATION
    valid_graphs: int  # labeled valid graphs offered
    informative_graphs: int  # of which count for selection
    min_configs: int  # the rule used
    note: str  # one sentence for the report

    def to_json(self) -> dict:
        return asdict(self)


def plan_selection(config_counts: Sequence[int], task: Task,
                   min_graphs: int = MIN_SELECTION_GRAPHS) -> SelectionPlan:
    """Select on the informative valid graphs, or cross-validate when fewer than ``min_graphs`` remain
    and the task allows it (``Task.cross_validates``: tile).

    >>> from competition.tasks import TILE
    >>> plan_selection([2, 3, 4, 9], TILE).mode
    'cross-validation'
    >>> plan_selection([12, 16, 10], TILE).note.split(",")[0]
    'the valid split has only 3 kernels'
    >>> plan_selection([10] * 5, TILE).mode
    'valid'
    """
    mask = informative_graphs(config_counts, task)
    used, offered, need = int(mask.sum()), int(mask.size), min_configs(task)
    ignored = offered - used
    if used == 0 and not task.cross_validates:
        return SelectionPlan(VALID, offered, used, need,
                             "no valid graph to select on: the last round or epoch is kept")
    if used >= min_graphs or not task.cross_validates:
        note = (f"selected on {used} valid graphs"
                + (f" ({ignored} with fewer than {need} configs ignored: their score is nearly constant)"
                   if ignored else ""))
        return SelectionPlan(VALID, offered, used, need, note)
    if used == offered:
        why = f"the valid split has only {offered} kernel{'s' if offered != 1 else ''}"
    else:  # some kernels have so few configs that every model scores about the same on them
        why = (f"only {used} of the {offered} valid kernels have {need} or more configs (a kernel with "
               f"fewer scores about the same whatever the model)")
    note = (f"{why}, fewer than the {min_graphs} model selection needs, so the number of rounds "
            f"or epochs was chosen by {CV_FOLDS}-fold cross-validation over the train kernels")
    return SelectionPlan(CROSS_VALIDATION, offered, used, need, note)


def cv_fold_of(graph_count: int, rng: np.random.Generator, folds: int = CV_FOLDS) -> np.ndarray:
    """(graph_count,) fold number of each graph: a seeded shuffle dealt round-robin (sizes differ by <= 1)."""
    fold = np.empty(graph_count, dtype=np.int64)
    fold[rng.permutation(graph_count)] = np.arange(graph_count) % max(1, min(folds, graph_count))
    return fold


Example = TypeVar("Example")


def selection_examples(examples: Sequence[Example], task: Task) -> list[Example]:
    """The labeled examples the gnn selects its epoch on: informative ones, or all when none is.

    An example has ``runtime`` (a tensor or array of its kept configs' runtimes, None if unlabeled).
    """
    labeled = [e for e in examples if getattr(e, "runtime", None) is not None]
    kept = [e for e in labeled if len(e.runtime) >= min_configs(task)]
    return kept or labeled
