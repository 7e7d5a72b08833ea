"""Feature scaling shared by the learned methods: what a model sees of ``node_feat`` and the configs.

Released ``node_feat`` columns span ten orders of magnitude: one-hot flags (0/1), dimension
indices (0..5), sizes (1..1e4) and the ``*_sum`` / ``*_product`` columns that reach 1e8 and more
(facts §2). Fed raw, the products dominate every dot product and a network learns nothing else.
The scaling here is ``sign(x) * log1p(|x|)``: stateless (nothing to fit, save or leak from the
validation split), monotone (orders inside a column are kept), the identity near 0 (flags and
indices stay almost as they are) and logarithmic for sizes, which is how runtimes depend on them.
A product becomes the sum of the log-sizes, so it is consistent with its column group.

Tile ``config_feat`` (tile bounds, sums and products) gets the same scaling. Layout
``node_config_feat`` is not scaled: its values are categorical dimension indices (-1..5) and are
embedded instead (``solutions.gnn``).

Column indices follow the upstream README order (checked against the released files):

>>> NODE_FEAT_COLUMNS["shape_dimensions"], NODE_FEAT_COLUMNS["layout_minor_to_major"]
(slice(21, 27, None), slice(134, 140, None))
>>> [round(float(v), 3) for v in signed_log1p(np.array([0.0, 1.0, -1.0, 1e8], np.float32))]
[0.0, 0.693, -0.693, 18.421]
"""

from __future__ import annotations

import numpy as np

from competition.graphs import NODE_FEAT_DIM, TILE_CONFIG_DIM

#: Groups of ``node_feat`` columns a model may want by name (half-open ranges, README order).
NODE_FEAT_COLUMNS: dict[str, slice] = {
    "is_root": slice(0, 1),
    "element_size_in_bits": slice(1, 2),
    "element_type_one_hot": slice(2, 21),
    "shape_dimensions": slice(21, 27),  # sizes of the (up to 6) output dimensions, 0-padded
    "shape_dimensions_sum_product": slice(27, 29),
    "dimensions": slice(31, 37),  # e.g. reduce / transpose / broadcast dimensions
    "window": slice(37, 93),
    "convolution_dim_numbers": slice(93, 107),
    "layout_minor_to_major": slice(134, 140),  # the compiled default layout of the output
}

#: Columns of tile ``config_feat``: kernel, output and input bounds, 6 dims + sum + product each.
TILE_CONFIG_COLUMNS: dict[str, slice] = {
    "kernel_bounds": slice(0, 8),
    "output_bounds": slice(8, 16),
    "input_bounds": slice(16, 24),
}


def signed_log1p(values: np.ndarray) -> np.ndarray:
    """``sign(x) * log1p(|x|)`` elementwise, as float32 (computed in float64: exact for 1e8+)."""
    x = np.asarray(values, dtype=np.float64)
    return (np.sign(x) * np.log1p(np.abs(x))).astype(np.float32)


def scale_node_features(node_feat: np.ndarray) -> np.ndarray:
    """Released ``node_feat`` -> what a model reads.

    Shapes: (n, 140) float32 -> (n, 140) float32.
    """
    node_feat = np.asarray(node_feat)
    if node_feat.ndim != 2 or node_feat.shape[1] != NODE_FEAT_DIM:
        raise ValueError(f"node_feat has shape {node_feat.shape}; expected (n, {NODE_FEAT_DIM})")
    return signed_log1p(node_feat)


def scale_tile_config_features(config_feat: np.ndarray) -> np.ndarray:
    """Tile ``config_feat`` -> what a model reads.

    Shapes: (c, 24) float32 -> (c, 24) float32.
    """
    config_feat = np.asarray(config_feat)
    if config_feat.ndim != 2 or config_feat.shape[1] != TILE_CONFIG_DIM:
        raise ValueError(f"config_feat has shape {config_feat.shape}; expected (c, {TILE_CONFIG_DIM})")
    return signed_log1p(config_feat)
