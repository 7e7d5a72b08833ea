"""Small hand-made graph pieces shared by the solution tests (and the pruning docstrings' example graph)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from competition.data.graphs import LayoutGraph
from competition.data.hlo import NODE_FEATURE_INDEX, NODE_FEATURE_NAMES
from competition.tasks import LAYOUT_CONFIG_DIM, NODE_FEAT_DIM

SHAPE = [NODE_FEATURE_INDEX[f"shape_dimensions_{i}"] for i in range(6)]
PRODUCT = NODE_FEATURE_INDEX["shape_dimensions_product"]
MINOR_TO_MAJOR = [NODE_FEATURE_INDEX[f"layout_minor_to_major_{i}"] for i in range(6)]
F32 = NODE_FEATURE_INDEX["shape_element_type_is_f32"]
IS_ROOT = NODE_FEATURE_INDEX["is_root"]


def node_features(shapes: list[list[int]], *, f32: bool = False) -> np.ndarray:
    """(n, 140) node features of tensors of the given shapes in the default (descending) layout.

    The last node is the root; ``f32`` sets the float32 element-type column of every node.
    """
    feat = np.zeros((len(shapes), len(NODE_FEATURE_NAMES)), np.float32)
    for i, shape in enumerate(shapes):
        feat[i, SHAPE[: len(shape)]] = shape
        feat[i, PRODUCT] = np.prod(shape)
        feat[i, MINOR_TO_MAJOR[: len(shape)]] = list(range(len(shape) - 1, -1, -1))
        if f32:
            feat[i, F32] = 1
    feat[-1, IS_ROOT] = 1
    return feat


def layout_row(output: list[int], operand: list[int], kernel: list[int]) -> list[int]:
    """One configurable node's 18 config values: each vector's given slots, the rest unset (-1)."""
    return [*output, *[-1] * (6 - len(output)), *operand, *[-1] * (6 - len(operand)),
            *kernel, *[-1] * (6 - len(kernel))]


def layout_graph_from_edges(
    num_nodes: int,
    edges: Sequence[tuple[int, int]] | np.ndarray,
    config_ids: Sequence[int] | np.ndarray,
    *,
    num_configs: int = 2,
    node_splits: Sequence[int] = (0,),
    seed: int = 0,
) -> LayoutGraph:
    """A small ``LayoutGraph`` from an edge list, for examples and tests.

    ``node_feat[:, 0]`` is the node id and ``node_opcode`` is ``1 + id % 120``, so nodes can be
    recognised after pruning; other features are seeded random integers. Edges are sorted.
    """
    rng = np.random.default_rng(seed)
    edge_index = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    edge_index = edge_index[np.lexsort((edge_index[:, 1], edge_index[:, 0]))]
    config_ids = np.asarray(config_ids, dtype=np.int64).reshape(-1)
    node_feat = rng.integers(0, 100, size=(num_nodes, NODE_FEAT_DIM)).astype(np.float32)
    node_feat[:, 0] = np.arange(num_nodes)
    return LayoutGraph(
        node_feat=node_feat,
        node_opcode=(1 + np.arange(num_nodes) % 120).astype(np.uint8),
        edge_index=edge_index,
        config_runtime=rng.integers(10**6, 10**7, size=num_configs).astype(np.int64),
        node_config_feat=rng.integers(-1, 6, size=(num_configs, config_ids.shape[0],
                                                   LAYOUT_CONFIG_DIM)).astype(np.float32),
        node_config_ids=config_ids,
        node_splits=np.asarray(node_splits, dtype=np.int64).reshape(1, -1),
    )


EXAMPLE_EDGES = [(2, 0), (2, 1), (3, 2), (4, 3), (5, 0), (5, 4), (6, 1), (6, 5), (7, 6)]


def example_graph() -> LayoutGraph:
    """The 8-node graph drawn in ``solutions.pruning``'s docstring (configurable nodes 2 and 6)."""
    return layout_graph_from_edges(8, EXAMPLE_EDGES, [2, 6], node_splits=(0, 5))
