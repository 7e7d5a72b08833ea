"""What the engineered features compute for a task kind: one ``FeaturePlan``, chosen once from what the
task says of its files and configs (``competition.tasks``: ``config_per_node``, ``npz_spec``), never
from its name.

- configs per configurable node (layout rows): the layout features (``solutions.features.layout``)
  and the configurable nodes' graph facts (``LAYOUT_ROWS``);
- one config per graph held as the 24 tile columns (``config_feat``, the member the tiling features
  read): the tiling features (``solutions.features.tile``) and the kernel's output facts
  (``TILE_BOUNDS``);
- one config per graph of any other columns: each column's signed log and the kernel's output facts.

The heuristic (``solutions.heuristics``) has a rule for the first two plans.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np

from competition.data.graphs import Graph
from competition.tasks import TILE_CONFIG_DIM, Task, get_task
from solutions.features.graph_facts import KERNEL_FACTS, LAYOUT_FACTS, GraphFacts
from solutions.features.layout import layout_feature_names, layout_features
from solutions.features.log_scale import signed_log1p
from solutions.features.tile import tile_feature_names, tile_features


@dataclass(frozen=True)
class FeaturePlan:
    """The features and the cost rule of one kind of configs."""

    configs: str  # what the configs are, in words (for messages)
    graph_facts: GraphFacts
    config_names: Callable[[], list[str]]
    # (graph, configs or None for all) -> (c', len(config_names())) float64
    config_features: Callable[[Graph, np.ndarray | None], np.ndarray]


LAYOUT_ROWS = FeaturePlan("layout rows of the configurable nodes", LAYOUT_FACTS, layout_feature_names,
                          lambda graph, configs: layout_features(graph, configs=configs))
TILE_BOUNDS = FeaturePlan(
    "tile bounds", KERNEL_FACTS, tile_feature_names,
    lambda graph, configs: tile_features(graph if configs is None else graph.select_configs(configs)))


# The npz member the tiling features read (``TileGraph.config_feat``), as a task's file spec holds it.
TILE_COLUMNS = ("config_feat", (np.dtype(np.float32), ("c", TILE_CONFIG_DIM)))


def config_width(task: Task) -> int:
    """Columns of one config of ``task`` (a layout row's 18 for configs per node), from its file spec."""
    return int(task.npz_spec[task.config_key][1][-1])


def _plain_columns(task: Task) -> FeaturePlan:
    names = [f"log_config_{i}" for i in range(config_width(task))]

    def features(graph: Graph, configs: np.ndarray | None) -> np.ndarray:
        values = graph.configs if configs is None else graph.configs[configs]
        return signed_log1p(np.asarray(values, dtype=np.float64)).astype(np.float64)

    return FeaturePlan(f"{task.name} config columns", KERNEL_FACTS, lambda: list(names), features)


@cache
def feature_plan(task: Task | str) -> FeaturePlan:
    """The plan of ``task``'s configs (a task or its name)."""
    task = get_task(task) if isinstance(task, str) else task
    if task.config_per_node:
        return LAYOUT_ROWS
    key, spec = TILE_COLUMNS
    if task.config_key == key and task.npz_spec.get(key) == spec:
        return TILE_BOUNDS
    return _plain_columns(task)
