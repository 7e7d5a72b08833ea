"""What every engineered feature reads of a graph: node columns by name, shapes, TPU tiling.

TPU arrays live in (8, 128) tiles: the minor-most dimension is padded to a multiple of 128 lanes and
the second-minor to a multiple of 8 sublanes (``LANES``, ``SUBLANES``, ``pad_factor``).

Node feature columns are used by name through ``NODE_COLUMN`` (``competition.data.hlo.NODE_FEATURE_INDEX``,
the column map the featurizer writes), never by position.

Every value is finite: logs are taken of clipped non-negative numbers (``log_size``: ``*_product``
columns reach 1e8+ and wrap negative as int64 in the released data) and non-finite inputs map to 0
(``finite``).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from competition.data.graphs import Graph
from competition.data.hlo import CONFIGURABLE_OPCODES, ELEMENT_BYTES, NODE_FEATURE_INDEX
from competition.tasks import LAYOUT_CONFIG_DIM

CHUNK_VALUES = 1 << 22  # layout config values per pass: ~32 MB per int64 intermediate

NODE_COLUMN = NODE_FEATURE_INDEX  # node_feat column name -> position

MAX_DIMS = 6  # dimensions per shape / layout vector / tile-bound block
SHAPE_DIMS = np.array([NODE_COLUMN[f"shape_dimensions_{i}"] for i in range(MAX_DIMS)])
SHAPE_PRODUCT = NODE_COLUMN["shape_dimensions_product"]
MINOR_TO_MAJOR = np.array([NODE_COLUMN[f"layout_minor_to_major_{i}"] for i in range(MAX_DIMS)])
IS_ROOT = NODE_COLUMN["is_root"]

# Element types that hold data, with their one-hot column and size (tuple/token/opaque/invalid hold none).
_DATA_TYPES = [t for t, size in ELEMENT_BYTES.items() if size > 0]
_ELEMENT_TYPE_COLUMNS = np.array([NODE_COLUMN[f"shape_element_type_is_{t}"] for t in _DATA_TYPES])
_ELEMENT_TYPE_BYTES = np.array([ELEMENT_BYTES[t] for t in _DATA_TYPES], dtype=np.float64)

LANES, SUBLANES = 128, 8  # a TPU vreg tile: minor dim padded to 128, second-minor to 8

CONFIGURABLE_KINDS = CONFIGURABLE_OPCODES  # convolution, dot, reshape


def log_size(values: np.ndarray | float) -> np.ndarray:
    """log1p of values clipped at 0, in float64: safe for wrapped (negative) int64 products."""
    return np.log1p(np.clip(np.asarray(values, dtype=np.float64), 0.0, None))


def finite(values: np.ndarray) -> np.ndarray:
    return np.nan_to_num(values.astype(np.float64, copy=False), nan=0.0, posinf=0.0, neginf=0.0)


def layout_values(values: np.ndarray) -> np.ndarray:
    """Layout slots as int64 in -1..5 (dimension indices, -1 = unset); anything else is clipped there."""
    values = np.asarray(values)
    if values.dtype.kind in "iub":  # the cache's int8 configs: no NaN to clear, nothing to round
        return np.clip(values.astype(np.int64), -1, MAX_DIMS - 1)
    return np.rint(np.clip(finite(values), -1, MAX_DIMS - 1)).astype(np.int64)


def config_chunks(num_configs: int, num_configurable: int) -> Iterator[slice]:
    """Slices of the config axis holding about ``CHUNK_VALUES`` layout values each (at least 1 config)."""
    step = max(1, CHUNK_VALUES // max(1, num_configurable * LAYOUT_CONFIG_DIM))
    for start in range(0, num_configs, step):
        yield slice(start, min(num_configs, start + step))


def pad_factor(size: np.ndarray, multiple: int) -> np.ndarray:
    """How much padding a dimension of ``size`` gets when rounded up to ``multiple``.

    >= 1; 1 for size <= 0.
    """
    size = np.maximum(size, 1.0)
    return np.ceil(size / multiple) * multiple / size


def bytes_per_element(node_feat: np.ndarray) -> np.ndarray:
    """(n,) bytes per element from the element-type one-hot columns (4 when none is set)."""
    onehot = finite(node_feat[:, _ELEMENT_TYPE_COLUMNS])
    found = onehot.sum(axis=1) > 0
    return np.where(found, onehot @ _ELEMENT_TYPE_BYTES / np.maximum(onehot.sum(axis=1), 1), 4.0)


def node_shapes(node_feat: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Shape facts of every node from its features.

    Returns:
        ``(dims, elements, rank)``: (n, 6) float64 first six dimension sizes, (n,) float64 element count
        (the ``shape_dimensions_product`` column, or the product of the six dims when that column is not
        a positive number), (n,) int64 count of non-zero leading dims.
    """
    dims = np.clip(finite(node_feat[:, SHAPE_DIMS]), 0.0, None)
    product = finite(node_feat[:, SHAPE_PRODUCT])
    nonzero = dims > 0
    rank = nonzero.sum(axis=1)
    fallback = np.where(nonzero, dims, 1.0).prod(axis=1) * (rank > 0)
    elements = np.where(product > 0, product, fallback)
    return dims, elements, rank.astype(np.int64)


def entry_root(graph: Graph) -> int:
    """Position of the kernel's output node: the last node flagged ``is_root`` (the entry computation's)."""
    roots = np.flatnonzero(graph.node_feat[:, IS_ROOT] > 0)
    return int(roots[-1]) if roots.size else graph.num_nodes - 1


def crop_layout(layout: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """(..., 6) layouts with slots at or beyond ``rank`` (...,) set to -1."""
    slots = np.arange(MAX_DIMS)
    return np.where(slots < rank[..., None], layout, -1)
