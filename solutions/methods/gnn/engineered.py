"""The layout gnn's engineered config features (``GNNConfig.engineered_features``) and the sample of
configs a large training graph keeps (``GNNConfig.layout_max_train_configs``).

The features are the gbdt ranker's per-config layout features (``solutions.features.layout``) as
z-scores within the graph: graph-relative, so the same value means the same thing in a program whose
padding varies by 30 % between configs and in one where it varies by 0.01 % (docs/gnn.md).
"""

from __future__ import annotations

import numpy as np
import torch

from competition.data.graphs import LayoutGraph
from solutions.features.layout import layout_feature_names, layout_features
from solutions.kinds.features import standardized

ENGINEERED_LAYOUT_COLUMNS = len(layout_feature_names())  # what engineered_layout_features gives per config

# Engineered layout features are z-scores: a config 10 spreads from its graph's mean is already an
# outlier, and a bound keeps one odd config from dominating a step.
ENGINEERED_Z_LIMIT = 10.0


def engineered_layout_features(graph: LayoutGraph, configs: np.ndarray | None = None) -> torch.Tensor:
    """The gbdt's per-config layout features (``solutions.features.layout``) as z-scores within the
    graph, over ``configs`` (default: all): (c', ENGINEERED_LAYOUT_COLUMNS) float32.

    Read on the unpruned graph (the features look at every producer and consumer); see the module
    docstring for why graph-relative (docs/journal/2026-11-27-what-real-runtimes-teach.md, "Version 3
    and graph-relative features").
    """
    values = standardized(layout_features(graph, configs=configs))
    return torch.from_numpy(np.clip(values, -ENGINEERED_Z_LIMIT, ENGINEERED_Z_LIMIT).astype(np.float32))


def sample_training_configs(num_configs: int, size: int) -> np.ndarray:
    """The fixed sample (sorted, the same every run) of ``size`` of a training graph's ``num_configs``
    kept configs. Training draws ``layout_configs_per_graph`` x ``layout_epochs`` configs of a graph
    (more in a split of fewer than ``layout_min_epoch_steps`` graphs), so a sample of a few thousand
    holds about what training would see anyway, and the per-config work done before training (the
    engineered features) stays bounded on graphs of 100,000 configs. The same sample for every seed."""
    return np.sort(np.random.default_rng(0).choice(num_configs, size=size, replace=False))


def kept_configs(inverse: np.ndarray | None) -> np.ndarray | None:
    """One file config of each kept config (duplicates are identical configs), in kept order."""
    return None if inverse is None else np.unique(inverse, return_index=True)[1]
