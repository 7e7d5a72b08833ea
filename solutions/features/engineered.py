"""The feature matrix of the gradient-boosted ranker: one row per config, under ``FeatureSettings``.

A row holds graph-level features (the same for every config of a graph, ``graph_facts``), then config
features (what ``kinds.feature_plan`` chooses for the task's configs: ``tile``, ``layout``, or each
column's signed log), then (optionally) the config features again centred on the graph's
mean, so that a tree threshold means "more than this graph's typical config" rather than an absolute
level shared by graphs of very different sizes. The final matrix is clipped to +-1e30 before its
float32 cast.

The other modules of ``solutions.features``: ``shapes`` (node columns, shapes, TPU tiling),
``tile`` (tile features and geometry), ``layout_geometry`` (what the layout features and the
heuristic read of a layout graph), ``layout`` (layout features) and ``kinds`` (which of them a task's
configs get).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from competition.data.graphs import Graph
from solutions.features.graph_facts import graph_feature_names, graph_features
from solutions.features.kinds import feature_plan
from solutions.versions import VersionLog

FEATURE_LIMIT = 1e30  # features are clipped to +-this before the float32 cast
FEATURE_VERSION = 4  # bump when a feature's definition changes (and say what in FEATURE_CHANGES)
# What each version changed, and in which task's features: a model saved by another version refuses to
# load, naming its version, what changed for its task, and the command that retrains it.
FEATURE_CHANGES = VersionLog(FEATURE_VERSION, {
    2: ("layout", "heuristic_log_cost follows the heuristic's layout rule 2"),
    3: ("layout", "heuristic_log_cost follows the heuristic's layout rule 3, a roofline"),
    4: ("layout", "the input and kernel features of a node whose configs set fewer slots than its "
                  "operands' rank (a 4-D or 5-D convolution) read those operands instead of none"),
})


def changes_since(task: str, version: object) -> str:
    """What changed in ``task``'s features after a saved ``version``, for the message of a model that
    refuses to load ("" when this code records nothing, or the version is not a whole number)."""
    return "; ".join(f"version {v}: {what}" for v, _, what in FEATURE_CHANGES.changes_since(task, version))


@dataclass(frozen=True)
class FeatureSettings:
    """What ``config_features`` computes; saved next to a model so predictions use the same features."""

    task: str  # the task's name (competition.tasks)
    center_per_graph: bool = True  # append the config features minus their per-graph mean
    # Append each config feature as a z-score within its graph: a graph-relative scale, so a tree
    # learnt on graphs where a quantity varies by 30 % still splits a graph where it varies by 0.01 %.
    scale_per_graph: bool = False
    version: int = FEATURE_VERSION

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FeatureSettings:
        """The settings a model saved; ValueError (one line) for features of another version."""
        version = data.get("version")
        if not FEATURE_CHANGES.is_current(version):  # 4.0, "4" or True are not version 4 either
            changed = changes_since(str(data.get("task")), version)
            raise ValueError(f"saved features are version {version!r}, this code computes version "
                             f"{FEATURE_VERSION}{f' ({changed})' if changed else ''}")
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"saved feature settings {', '.join(unknown)} are not this code's")
        return cls(**data)


def feature_names(settings: FeatureSettings) -> list[str]:
    """Column names of ``config_features`` under ``settings``."""
    plan = feature_plan(settings.task)
    config = plan.config_names()
    names = [f"graph_{name}" for name in graph_feature_names(plan.graph_facts)] + config
    if settings.center_per_graph:
        names += [f"{name}_centered" for name in config]
    if settings.scale_per_graph:
        names += [f"{name}_scaled" for name in config]
    return names


def config_features(graph: Graph, settings: FeatureSettings, *,
                    configs: np.ndarray | None = None) -> np.ndarray:
    """(c', F) float32 feature matrix of a graph's configs, F = len(feature_names(settings)).

    Args:
        graph: a graph of the task ``settings.task`` names.
        settings: which features.
        configs: optional (c',) indices of the configs to featurize (default: all); the per-graph
            centring uses the mean over exactly these configs.
    """
    if graph.task.name != settings.task:
        raise ValueError(f"a {graph.task.name} graph given to {settings.task} features")
    plan = feature_plan(graph.task)
    config = plan.config_features(graph, configs)
    shared = np.broadcast_to(graph_features(graph, plan.graph_facts),
                             (config.shape[0], len(graph_feature_names(plan.graph_facts))))
    blocks = [shared, config]
    if settings.center_per_graph:
        blocks.append(config - config.mean(axis=0, keepdims=True) if config.shape[0] else config)
    if settings.scale_per_graph:
        blocks.append(standardized(config))
    # Garbage inputs (e.g. a dim of 1e-30 under a tile bound of 1e30) must not overflow float32.
    return np.clip(np.concatenate(blocks, axis=1), -FEATURE_LIMIT, FEATURE_LIMIT).astype(np.float32)


def standardized(values: np.ndarray) -> np.ndarray:
    """Each column of (c, F) ``values`` as z-scores over its rows; a column constant up to rounding is 0."""
    if not values.shape[0]:
        return values
    mean = values.mean(axis=0, keepdims=True)
    spread = values.std(axis=0, keepdims=True)
    # float64 sums of ~1e8 elements are exact to ~1e-15 relative; a spread below 1e-12 of the
    # column's size is rounding, not a difference between configs.
    varies = spread > 1e-12 * (np.abs(mean) + 1.0)
    return np.where(varies, (values - mean) / np.where(varies, spread, 1.0), 0.0)


def select_configs(graph: Graph, configs: np.ndarray) -> Graph:
    """The same graph keeping only ``configs`` (indices into its config axis; ``Graph.select_configs``)."""
    return graph.select_configs(configs)
