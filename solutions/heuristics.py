"""A non-learned rule of thumb: estimate the memory traffic a config causes, in TPU terms.

Nothing here looks at a runtime: ``fit`` learns nothing, and the rule is the same for every graph.
It predicts a cost in "elements touched" (lower = faster) from two facts about TPUs:

1. **Arrays are stored in (8, 128) tiles.** The minor-most dimension of an array (the first entry of
   its ``minor_to_major`` layout) is padded to a multiple of 128 lanes and the second-minor to a
   multiple of 8 sublanes. A layout that puts a dimension of size 3 minor-most stores (and moves)
   128/3 ~ 43x more bytes than the data; a tile of 100 lanes computes 28 % padding.
2. **Work has fixed overheads.** Every step of a tiled kernel costs a roughly fixed time (DMA set-up,
   pipeline bubbles), and a tile whose working set overflows on-chip memory (VMEM) spills.
   A layout that disagrees with the layout its producer wrote (or its consumer reads) needs a
   relayout copy: the tensor is read and written once more.

The rules (the numbers are priors, not fitted):

- **tile** (``solutions.features.tile.tile_geometry``): cost = (elements computed, padding of ragged
  last tiles and the (8, 128) padding of the tile included + 65,536 element-operations per grid step)
  x max(1, working-set bytes / 16 MiB). Large tiles that divide the output shape win; tiles so large
  that they do not fit on chip lose.
- **layout** (``solutions.features.layout_geometry``): cost = sum over the configurable nodes'
  output / input / kernel tensors of their padded size in the chosen layout, x3 for each tensor whose
  chosen layout disagrees with what its neighbour provides: a configurable producer's chosen output
  layout, else the layout recorded in ``node_feat`` (for outputs: only when some consumer is not
  configurable; configurable consumers are checked on their own inputs). An unset (-1) vector leaves
  the choice to the compiler, assumed to pick what the neighbour expects (else the default
  descending layout): never a disagreement.

Where it helps and where it does not (rule vs random per collection, and how often configs tie):
BENCHMARKS.md, "The heuristic: rule vs random".
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from competition.collections import Collection
from competition.data.graphs import Graph, TileGraph
from solutions.features.layout_geometry import layout_context, layout_geometry
from solutions.features.shapes import config_chunks
from solutions.features.tile import tile_geometry
from solutions.method import FitOptions, SplitSource

HEURISTIC_FILE = "heuristic.json"
RULE_VERSION = 1


def tile_cost(graph: TileGraph) -> np.ndarray:
    """(c,) estimated cost of each tile config (element-operations), lower = faster."""
    return tile_geometry(graph).cost()


def layout_cost(graph: Graph) -> np.ndarray:
    """(c,) estimated elements touched by each layout config, lower = faster."""
    context = layout_context(graph)
    feat = graph.node_config_feat
    parts = [layout_geometry(feat[part], context).cost() for part in config_chunks(*feat.shape[:2])]
    return np.concatenate(parts) if parts else np.zeros(0)


# The rule of each task kind, by task name.
COST_RULES = {"tile": tile_cost, "layout": layout_cost}


class HeuristicMethod:
    """The rule of thumb above as a ``RankingMethod``: same predictions whatever it was fitted on."""

    name = "heuristic"
    learned = False

    def fit(self, collection: Collection, train: SplitSource, valid: SplitSource,
            options: FitOptions) -> None:
        """Nothing to learn (the rule uses no runtimes)."""

    def predict(self, collection: Collection, graph: Graph) -> np.ndarray:
        """(c,) float64 log of the estimated cost, lower = faster.

        A task kind without a rule in ``COST_RULES`` gets the same cost for every config: the ranking is
        then the config order, a valid row whatever the kind.
        """
        rule = COST_RULES.get(graph.task.name)
        cost = rule(graph) if rule is not None else np.zeros(graph.num_configs)
        return np.log1p(np.nan_to_num(cost, nan=0.0, posinf=np.finfo(np.float64).max))

    def save(self, path: Path) -> None:
        """Write ``path/heuristic.json`` (the rule version; ``path`` is a directory, created if needed)."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        (path / HEURISTIC_FILE).write_text(json.dumps({"method": self.name,
                                                       "rule_version": RULE_VERSION}) + "\n")

    @classmethod
    def load(cls, path: Path) -> HeuristicMethod:
        data = json.loads((Path(path) / HEURISTIC_FILE).read_text())
        if data.get("rule_version") != RULE_VERSION:
            raise ValueError(f"{path}: saved heuristic rule version {data.get('rule_version')}, this code "
                             f"has {RULE_VERSION}")
        return cls()
