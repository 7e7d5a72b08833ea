"""Feature scaling shared by the learned methods: what a model sees of ``node_feat`` and the configs.

Released ``node_feat`` columns span ten orders of magnitude: one-hot flags (0/1), dimension
indices (0..5), sizes (1..1e4) and the ``*_sum`` / ``*_product`` columns that reach 1e8 and more
(docs/competition.md, Data format). Fed raw, the products dominate every dot product and a network
learns nothing else.
The scaling here is ``sign(x) * log1p(|x|)``: stateless (nothing to fit, save or leak from the
validation split), monotone (orders inside a column are kept), the identity near 0 (flags and
indices stay almost as they are) and logarithmic for sizes, which is how runtimes depend on them.
A product becomes the sum of the log-sizes, so it is consistent with its column group.

Tile ``config_feat`` (tile bounds, sums and products) gets the same scaling. Layout
``node_config_feat`` is not scaled: its values are categorical dimension indices (-1..5) and are
embedded instead (``solutions.methods.gnn``).

Column groups are named by their first and last columns in ``competition.data.hlo`` (upstream README order):

>>> NODE_FEAT_COLUMNS["shape_dimensions"], NODE_FEAT_COLUMNS["layout_minor_to_major"]
(slice(21, 27, None), slice(134, 140, None))
>>> [round(float(v), 3) for v in signed_log1p(np.array([0.0, 1.0, -1.0, 1e8], np.float32))]
[0.0, 0.693, -0.693, 18.421]
"""

from __future__ import annotations

import numpy as np

from competition.data.hlo import NODE_FEATURE_NAMES
from competition.tasks import NODE_FEAT_DIM, TILE_CONFIG_DIM


def _span(names: tuple[str, ...], first: str, last: str) -> slice:
    """The columns from ``first`` to ``last`` (inclusive) of a column table of competition.data.hlo."""
    return slice(names.index(first), names.index(last) + 1)


#: Groups of ``node_feat`` columns a model may want by name (half-open ranges, README order).
NODE_FEAT_COLUMNS: dict[str, slice] = {
    "is_root": _span(NODE_FEATURE_NAMES, "is_root", "is_root"),
    "element_size_in_bits": _span(NODE_FEATURE_NAMES, "element_size_in_bits", "element_size_in_bits"),
    "element_type_one_hot": _span(NODE_FEATURE_NAMES, "shape_element_type_is_invalid_type",
                                  "shape_element_type_is_token"),
    # sizes of the (up to 6) output dimensions, 0-padded
    "shape_dimensions": _span(NODE_FEATURE_NAMES, "shape_dimensions_0", "shape_dimensions_5"),
    "shape_dimensions_sum_product": _span(NODE_FEATURE_NAMES, "shape_dimensions_sum",
                                          "shape_dimensions_product"),
    # e.g. reduce / transpose / broadcast dimensions
    "dimensions": _span(NODE_FEATURE_NAMES, "dimensions_0", "dimensions_5"),
    "window": _span(NODE_FEATURE_NAMES, "window_size_0", "window_window_reversal_false_count"),
    "convolution_dim_numbers": _span(NODE_FEATURE_NAMES, "convolution_dim_numbers_input_batch_dim",
                                     "convolution_dim_numbers_output_feature_dim"),
    # the compiled default layout of the output
    "layout_minor_to_major": _span(NODE_FEATURE_NAMES, "layout_minor_to_major_0", "layout_minor_to_major_5"),
}


def signed_log1p(values: np.ndarray) -> np.ndarray:
    """``sign(x) * log1p(|x|)`` elementwise, as float32 (computed in float64: exact for 1e8+)."""
    x = np.asarray(values, dtype=np.float64)
    return (np.sign(x) * np.log1p(np.abs(x))).astype(np.float32)


def scale_node_features(node_feat: np.ndarray) -> np.ndarray:
    """Released ``node_feat`` -> what a model reads.

    Shapes: (n, 140) float32 -> (n, 140) float32.
    """
    return _scale_columns(node_feat, "node_feat", "n", NODE_FEAT_DIM)


def scale_tile_config_features(config_feat: np.ndarray) -> np.ndarray:
    """Tile ``config_feat`` -> what a model reads.

    Shapes: (c, 24) float32 -> (c, 24) float32.
    """
    return _scale_columns(config_feat, "config_feat", "c", TILE_CONFIG_DIM)


def _scale_columns(values: np.ndarray, name: str, rows: str, columns: int) -> np.ndarray:
    """``signed_log1p`` of a (rows, columns) array; ValueError naming ``name`` for any other shape."""
    values = np.asarray(values)
    if values.ndim != 2 or values.shape[1] != columns:
        raise ValueError(f"{name} has shape {values.shape}; expected ({rows}, {columns})")
    return signed_log1p(values)
