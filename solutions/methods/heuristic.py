"""A non-learned rule of thumb: estimate what a config costs, in TPU terms.

Nothing here looks at a runtime: ``fit`` learns nothing, and the rule is the same for every graph.
It predicts a cost (lower = faster) from what TPUs do with arrays:

1. **Arrays are stored in (8, 128) tiles.** The minor-most dimension of an array (the first entry of
   its ``minor_to_major`` layout) is padded to a multiple of 128 lanes and the second-minor to a
   multiple of 8 sublanes. A layout that puts a dimension of size 3 minor-most stores (and moves)
   128/3 ~ 43x more bytes than the data; a tile of 100 lanes computes 28 % padding.
2. **Work has fixed overheads.** Every step of a tiled kernel costs a roughly fixed time (DMA set-up,
   pipeline bubbles), and a tile whose working set overflows on-chip memory (VMEM) spills.
3. **A reshape moves no bytes when it is a bitcast**: when both of its layouts keep the elements in
   the same order in memory. Otherwise it is a copy.
4. **The matrix unit computes padded tiles too.** A convolution or dot whose output is padded by a
   quarter does a quarter more work, so the same padding costs in proportion to the work behind it;
   a node is bound by its work or by its bytes, whichever takes longer (a roofline).

The rules (the numbers are priors, not fitted):

- **tile** (``solutions.kinds.tile.tile_cost``, from ``solutions.features.tile.tile_geometry``):
  cost = (elements computed, padding of ragged last tiles and the (8, 128) padding of the tile
  included + 65,536 element-operations per grid step)
  x max(1, working-set bytes / 16 MiB). Large tiles that divide the output shape win; tiles so large
  that they do not fit on chip lose.
- **layout** (``solutions.kinds.layout.layout_cost``, from ``solutions.features.layout_geometry``;
  rule 3): cost = sum over the configurable convolutions and dots of a roofline: the longer of their
  matrix work (multiply-adds, estimated from
  the output's and the two operands' sizes) times the padding of the output tiles they compute in the
  chosen layout, and their memory traffic (padded output written, operands read as they arrive, so
  operand settings change nothing) at TPU v3's 137 multiply-adds per element moved; plus, for every
  reshape whose two layouts do not make it a bitcast, a copy of its padded input and output. An unset
  (-1) vector leaves the choice to the compiler, assumed to pick what the neighbour expects (else the
  default descending layout) and a bitcast.

Why rule 3, and what rules 1 and 2 measured: docs/defaults.md and
docs/journal/2026-11-26-heuristic-layout-rules-2-and-3.md.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from competition.collections import Collection
from competition.data.graphs import Graph
from competition.tasks import TASKS
from solutions.kinds import KindError, kind_of
from solutions.methods.base import FitOptions, SplitSource
from solutions.store.saved import ModelFile, SavedModelError, is_version, shown_version

HEURISTIC_FILE = "heuristic.json"
RULE_VERSION = 3  # bump when a kind's rule changes: heuristics saved before refuse to load
SAVED = ModelFile("heuristic", HEURISTIC_FILE, indent=None)



class HeuristicMethod:
    """The rule of thumb above as a ``RankingMethod``: same predictions whatever it was fitted on."""

    name = "heuristic"
    learned = False

    def __init__(self, task: str | None = None) -> None:
        self.task = task  # the task it was fitted for: saved, so a rule change elsewhere leaves it loadable

    def fit(self, collection: Collection, train: SplitSource, valid: SplitSource,
            options: FitOptions) -> None:
        """Nothing to learn (the rule uses no runtimes); remembers the collection's task."""
        self.task = collection.task.name

    def predict(self, collection: Collection, graph: Graph) -> np.ndarray:
        """(c,) float64 log of the estimated cost, lower = faster.

        The rule is the kind's (``solutions.kinds``: ``Kind.heuristic_cost``). A task kind without one
        gets the same cost for every config: the ranking is then the config order, a valid row whatever
        the kind.
        """
        try:
            cost = kind_of(graph.task).heuristic_cost(graph)
        except KindError:
            cost = None
        if cost is None:
            cost = np.zeros(graph.num_configs)
        return np.log1p(np.nan_to_num(cost, nan=0.0, posinf=np.finfo(np.float64).max))

    def save(self, path: Path) -> None:
        """Write ``path/heuristic.json`` (the rule version and task; ``path`` is a directory, created if
        needed)."""
        task = {} if self.task is None else {"task": self.task}
        SAVED.write(path, {"rule_version": RULE_VERSION, **task})

    @classmethod
    def load(cls, path: Path) -> HeuristicMethod:
        """The saved heuristic, when it was saved with this code's rule version (SavedModelError, one line
        naming both versions, otherwise)."""
        meta = SAVED.read(path)
        version, task = meta.get("rule_version"), meta.get("task")
        task = task if isinstance(task, str) and task in TASKS else None  # unrecorded or unknown
        if not is_version(version, RULE_VERSION):
            raise SavedModelError(f"{meta.file}: saved heuristic rule version {shown_version(version)}, this "
                                  f"code has {RULE_VERSION}; run without --predict-only to write this rule's "
                                  "(it learns nothing: that is instant)")
        return cls(task)
