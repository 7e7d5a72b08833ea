"""Layout config features (``node_config_feat``, (c, nc, 18)): per config, aggregates over the
configurable nodes for each of the output / input / kernel layout vectors: how many nodes put each
dimension minor-most, agreement with the layout the neighbours expect (a configurable producer's
chosen output layout, otherwise the layout recorded in ``node_feat``), lane/sublane padding of the
tensors, bytes that would need a relayout copy, the share of unset (-1) vectors; agreement with the
graph's most common row per node; and the heuristic's cost estimate."""

from __future__ import annotations

import numpy as np

from competition.data.graphs import LayoutGraph
from solutions.features.layout_geometry import LayoutContext, layout_context, layout_geometry
from solutions.features.shapes import (
    CONFIGURABLE_KINDS,
    LANES,
    MAX_DIMS,
    SUBLANES,
    config_chunks,
    crop_layout,
    finite,
    log_size,
    pad_factor,
)

LAYOUT_VECTORS = ("output", "input", "kernel")


def layout_feature_names() -> list[str]:
    names = []
    for vector in LAYOUT_VECTORS:
        names += [f"{vector}_{name}" for name in (
            "match_expected", "match_expected_weighted", "log_mismatch_elements", "minor_is_expected",
            "descending", "unset", "log_padded_elements", "mean_log_padding", "mean_log_minor_size",
            "mean_log_second_minor_size")]
        names += [f"{vector}_minor_dim_{d}" for d in range(MAX_DIMS)]
    for vector in LAYOUT_VECTORS[:2]:
        for kind in CONFIGURABLE_KINDS:
            names += [f"{vector}_{name}_{kind}" for name in (
                "match_expected", "descending", "minor_is_expected", "log_padded_elements")]
    names += ["configurable_link_agreement", "configurable_link_agreement_weighted", "plain_link_agreement",
              "matches_mode", "matches_mode_weighted", "heuristic_log_cost"]
    return names


def _weighted_mean(values: np.ndarray, weights: np.ndarray, total: np.ndarray | None = None) -> np.ndarray:
    """Mean over the node axis (1) of (c, nc) values with (nc,) or (c, nc) weights; 0 with no weight.

    ``total``: ``weights`` summed over the nodes, (c,) or scalar, when the caller has it already (several
    columns share one set of weights)."""
    if total is None:
        total = _total(weights)
    return (values * weights).sum(axis=1) / np.where(total > 0, total, 1.0)


def _total(weights: np.ndarray) -> np.ndarray:
    """Node-axis sum of (nc,) or (c, nc) weights: per config, or one number when every config shares them."""
    return weights.sum(axis=-1)


def _minor_dim_shares(minor: np.ndarray, active: np.ndarray, total: np.ndarray) -> list[np.ndarray]:
    """For each dimension d, the active nodes' share putting d minor-most: ``_weighted_mean(minor == d,
    active)`` for every d in one counting pass instead of one pass per dimension (exact: the sums count
    0/1 values)."""
    c = minor.shape[0]
    slot = np.where(active > 0, minor, -1) + 1  # 0: inactive or unset, 1 + d: dimension d
    counts = np.bincount((np.arange(c)[:, None] * (MAX_DIMS + 1) + slot).reshape(-1),
                         minlength=c * (MAX_DIMS + 1)).reshape(c, MAX_DIMS + 1)
    denominator = np.where(total > 0, total, 1.0)
    return [counts[:, d + 1] / denominator for d in range(MAX_DIMS)]


def layout_features(graph: LayoutGraph, context: LayoutContext | None = None, *,
                    configs: np.ndarray | None = None) -> np.ndarray:
    """(c', len(layout_feature_names())) float64 per-config features of a layout graph.

    ``configs``: (c',) indices of the configs to featurize, in that order (default: all c). Configs
    are read and processed in chunks (``config_chunks``), so a 100k-config graph never builds its
    full (c, nc, 3, 6) int64 intermediates at once, and a graph whose ``node_config_feat`` is memory-
    mapped (``competition.data.processed_cache.CachedLayoutGraph``) is read a chunk at a time.
    """
    context = context if context is not None else layout_context(graph)
    feat = graph.node_config_feat
    index = np.arange(feat.shape[0]) if configs is None else np.asarray(configs, dtype=np.int64)
    if index.shape[0] == 0:
        return np.zeros((0, len(layout_feature_names())))
    parts = [_layout_chunk_features(feat[index[part]], context)
             for part in config_chunks(index.shape[0], context.num_configurable)]
    return finite(np.concatenate(parts, axis=0))


def _layout_chunk_features(feat: np.ndarray, context: LayoutContext) -> np.ndarray:
    c, nc = feat.shape[:2]
    if nc == 0:
        return np.zeros((c, len(layout_feature_names())))
    geometry = layout_geometry(feat, context)
    size_weight = np.log1p(context.tensor_elements)  # (nc, 3): big tensors count more, but not all
    columns: list[np.ndarray] = []
    by_kind = []
    for vector in range(3):
        active = geometry.active[:, :, vector].astype(np.float64)  # (c, nc)
        weight = size_weight[:, vector] * active
        active_total = _total(active)
        chosen = geometry.layouts[:, :, vector]
        match = (~geometry.mismatch[:, :, vector]).astype(np.float64)
        elements = context.tensor_elements[:, vector]
        rank = context.rank[:, vector]
        descending = (chosen == crop_layout(rank[:, None] - 1 - np.arange(MAX_DIMS), rank)).all(axis=-1)
        minor = chosen[..., 0]  # as given: -1 = unset
        minor_expected = (minor != -1) & (minor == context.expected[:, vector, 0])
        minor_size, second_size = geometry.minor_size[:, :, vector], geometry.second_size[:, :, vector]
        padded = geometry.padded_elements[:, :, vector] * active
        columns += [
            _weighted_mean(match, active, active_total),
            _weighted_mean(match, weight),
            log_size((geometry.mismatch[:, :, vector] * elements).sum(axis=1)),
            _weighted_mean(minor_expected.astype(np.float64), active, active_total),
            _weighted_mean(descending.astype(np.float64), active, active_total),
            _weighted_mean((minor == -1).astype(np.float64), active, active_total),
            log_size(padded.sum(axis=1)),
            _weighted_mean(np.log(pad_factor(minor_size, LANES) * pad_factor(second_size, SUBLANES)), active,
                           active_total),
            _weighted_mean(log_size(minor_size), active, active_total),
            _weighted_mean(log_size(second_size), active, active_total),
        ]
        columns += _minor_dim_shares(minor, active, active_total)
        if vector < 2:  # output and input, per kind of node: a layout costs a dot what it does not a reshape
            by_kind.append((match, descending, minor_expected, padded, active))
    for match, descending, minor_expected, padded, active in by_kind:
        for k in range(len(CONFIGURABLE_KINDS)):
            of_kind = active * (context.kind == k)
            kind_total = _total(of_kind)
            columns += [
                _weighted_mean(match, of_kind, kind_total),
                _weighted_mean(descending.astype(np.float64), of_kind, kind_total),
                _weighted_mean(minor_expected.astype(np.float64), of_kind, kind_total),
                log_size((padded * of_kind).sum(axis=1)),
            ]

    # Producer -> consumer links: agreement of operand layouts with what their producer provides.
    link_active = geometry.active[:, :, 1:] & (geometry.layouts[:, :, 1:, 0] != -1)
    link_match = (~geometry.mismatch[:, :, 1:]).astype(np.float64)
    configurable_link = link_active & (context.producer[None, :, 1:] >= 0)
    plain_link = link_active & (context.producer[None, :, 1:] < 0)
    link_weight = size_weight[None, :, 1:] * configurable_link
    columns += [
        _ratio((link_match * configurable_link).sum(axis=(1, 2)), configurable_link.sum(axis=(1, 2))),
        _ratio((link_match * link_weight).sum(axis=(1, 2)), link_weight.sum(axis=(1, 2))),
        _ratio((link_match * plain_link).sum(axis=(1, 2)), plain_link.sum(axis=(1, 2))),
    ]
    matches_mode = (geometry.codes() == context.mode_codes[None]).astype(np.float64)
    columns += [
        matches_mode.mean(axis=1),
        _weighted_mean(matches_mode, size_weight[:, 0]),
        log_size(geometry.cost()),
    ]
    return np.stack(columns, axis=1)


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    return numerator / np.where(denominator > 0, denominator, 1.0)


