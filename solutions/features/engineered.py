"""The feature matrix of the gradient-boosted ranker: one row per config, under ``FeatureSettings``.

A row holds graph-level features (the same for every config of a graph, ``graph_facts``), then config
features (``tile`` or ``layout``), then (optionally) the config features again centred on the graph's
mean, so that a tree threshold means "more than this graph's typical config" rather than an absolute
level shared by graphs of very different sizes. The final matrix is clipped to +-1e30 before its
float32 cast.

The other modules of ``solutions.features``: ``shapes`` (node columns, shapes, TPU tiling),
``tile`` (tile features and geometry), ``layout_geometry`` (what the layout features and the
heuristic read of a layout graph) and ``layout`` (layout features).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from competition.data.graphs import Graph, LayoutGraph, TileGraph
from solutions.features.graph_facts import check_kind, graph_feature_names, graph_features
from solutions.features.layout import WINNER_FEATURE_NAMES, layout_feature_names, layout_features
from solutions.features.tile import tile_feature_names, tile_features
from solutions.versions import VersionLog

FEATURE_LIMIT = 1e30  # features are clipped to +-this before the float32 cast
FEATURE_VERSION = 4  # bump when a feature's definition changes (and say what in FEATURES)
# What each version changed, and in which task's features: a model saved before a change to its task's
# features refuses to load, naming the change; one whose task's features did not change loads (versions
# 2 to 4 changed layout features only, so a tile model saved by any version still loads: retraining
# one takes minutes for nothing).
FEATURES = VersionLog(FEATURE_VERSION, {
    2: ("layout", "heuristic_log_cost follows the heuristic's layout rule 2"),
    3: ("layout", "heuristic_log_cost follows the heuristic's layout rule 3, a roofline"),
    4: ("layout", "the input and kernel features of a node whose configs set fewer slots than its "
                  "operands' rank (a 4-D or 5-D convolution) read those operands instead of none"),
}, tasks=("tile", "layout"))


def changes_since(task: str, version: object) -> str:
    """What changed in ``task``'s features after a saved ``version``, for the message of a model that
    refuses to load ("" when this code records nothing, or the version is not a whole number)."""
    return "; ".join(f"version {v}: {what}" for v, _, what in FEATURES.changes_since(task, version))


@dataclass(frozen=True)
class FeatureSettings:
    """What ``config_features`` computes; saved next to a model so predictions use the same features."""

    task: str  # "tile" or "layout"
    center_per_graph: bool = True  # append the config features minus their per-graph mean
    # Append each config feature as a z-score within its graph: a graph-relative scale, so a tree
    # learnt on graphs where a quantity varies by 30 % still splits a graph where it varies by 0.01 %.
    scale_per_graph: bool = False
    # One representative per tied group of configurable nodes (nodes whose settings are identical in
    # every config of the graph; ``tied_groups``): faster, and a group counts once in the means.
    collapse_tied_nodes: bool = False
    # The 11th place's layout features (``WINNER_FEATURE_NAMES``): mismatch counts over configurable
    # and two-hop links, minor-dimension alignment bins, padding sums, how often a config repeats.
    winner_features: bool = False
    version: int = FEATURE_VERSION

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    # settings saved before a field existed get its default
    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FeatureSettings:
        version, task = data.get("version"), str(data.get("task"))
        if not FEATURES.computes_the_same(task, version):
            changed = changes_since(task, version)
            raise ValueError(f"saved features are version {version}, this code computes version "
                             f"{FEATURE_VERSION}{f' ({changed})' if changed else ''}; retrain the model")
        return cls(**{**data, "version": FEATURE_VERSION})  # the same features: saved again as this version


def _config_feature_names(settings: FeatureSettings) -> list[str]:
    check_kind(settings.task)
    return {"tile": tile_feature_names,
            "layout": lambda: layout_feature_names() + (WINNER_FEATURE_NAMES if settings.winner_features
                                                        else [])
            }[settings.task]()


def _tile_config_features(graph: TileGraph, settings: FeatureSettings,
                          configs: np.ndarray | None) -> np.ndarray:
    return tile_features(graph if configs is None else graph.select_configs(configs))


def _layout_config_features(graph: LayoutGraph, settings: FeatureSettings,
                            configs: np.ndarray | None) -> np.ndarray:
    return layout_features(graph, configs=configs,
                           collapse_tied_nodes=settings.collapse_tied_nodes,
                           winner_features=settings.winner_features)


_CONFIG_FEATURES_OF_KIND = {"tile": _tile_config_features, "layout": _layout_config_features}


def feature_names(settings: FeatureSettings) -> list[str]:
    """Column names of ``config_features`` under ``settings``."""
    config = _config_feature_names(settings)
    names = [f"graph_{name}" for name in graph_feature_names(settings.task)] + config
    if settings.center_per_graph:
        names += [f"{name}_centered" for name in config]
    if settings.scale_per_graph:
        names += [f"{name}_scaled" for name in config]
    return names


def config_features(graph: Graph, settings: FeatureSettings, *,
                    configs: np.ndarray | None = None) -> np.ndarray:
    """(c', F) float32 feature matrix of a graph's configs, F = len(feature_names(settings)).

    Args:
        graph: a tile or layout graph matching ``settings.task``.
        settings: which features.
        configs: optional (c',) indices of the configs to featurize (default: all); the per-graph
            centring uses the mean over exactly these configs.
    """
    if graph.task.name != settings.task:
        raise ValueError(f"a {graph.task.name} graph given to {settings.task} features")
    check_kind(settings.task)
    config = _CONFIG_FEATURES_OF_KIND[settings.task](graph, settings, configs)
    shared = np.broadcast_to(graph_features(graph),
                             (config.shape[0], len(graph_feature_names(settings.task))))
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
