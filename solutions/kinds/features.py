"""The feature matrix of the gradient-boosted ranker: one row per config, under ``FeatureSettings``.

A row holds graph-level features (the same for every config of a graph, ``graph_facts``), then config
features (what the task kind's adapter computes, ``solutions.kinds``: tiling facts, layout rows, or
each column's signed log), then (optionally) the config features again centred on the graph's
mean, so that a tree threshold means "more than this graph's typical config" rather than an absolute
level shared by graphs of very different sizes. The final matrix is clipped to +-1e30 before its
float32 cast.

Built from ``solutions.features``: ``graph_facts``, ``shapes`` (node columns, shapes, TPU tiling),
``tile`` (tile features and geometry), ``layout_geometry`` (what the layout features and the heuristic
read of a layout graph) and ``layout`` (layout features); which of them a task's configs get is the
kind's adapter's to say. The gnn reads ``standardized`` and ``FEATURE_VERSION`` from here too.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from competition.data.graphs import Graph
from solutions.features.graph_facts import graph_feature_names, graph_features
from solutions.kinds import kind_of
from solutions.store.saved import is_version, shown_version

FEATURE_LIMIT = 1e30  # features are clipped to +-this before the float32 cast
FEATURE_VERSION = 4  # bump when a feature's definition changes: models saved before refuse to load


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
        if not is_version(version, FEATURE_VERSION):
            raise ValueError(f"saved features are version {shown_version(version)}, this code computes "
                             f"version {FEATURE_VERSION}")
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"saved feature settings {', '.join(unknown)} are not this code's")
        return cls(**data)


def feature_names(settings: FeatureSettings) -> list[str]:
    """Column names of ``config_features`` under ``settings``."""
    kind = kind_of(settings.task)
    config = kind.config_feature_names()
    names = [f"graph_{name}" for name in graph_feature_names(kind.graph_facts)] + config
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
    kind = kind_of(graph.task)
    config = kind.config_features(graph, configs)
    shared = np.broadcast_to(graph_features(graph, kind.graph_facts),
                             (config.shape[0], len(graph_feature_names(kind.graph_facts))))
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
