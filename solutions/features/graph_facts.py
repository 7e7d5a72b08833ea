"""Graph-level features: the same for every config of a graph (size, opcode histogram, and the
facts that fit its configs: a kernel's output where a config is one per graph, the configurable nodes
where configs are per node; ``solutions.features.kinds`` chooses which)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from competition.data.graphs import Graph, LayoutGraph, TileGraph
from competition.data.hlo import OPCODE_IDS
from solutions.features.shapes import (
    CONFIGURABLE_KINDS,
    MAX_DIMS,
    bytes_per_element,
    entry_root,
    finite,
    log_size,
    node_shapes,
)

# Opcodes counted in the graph-level histogram: compute-heavy, layout-sensitive and data-movement ops.
GRAPH_OPCODES = (
    "convolution", "dot", "reshape", "transpose", "copy", "bitcast", "broadcast", "reduce", "reduce-window",
    "fusion", "parameter", "constant", "add", "multiply", "subtract", "divide", "maximum", "exponential",
    "tanh", "rsqrt", "select", "compare", "convert", "concatenate", "slice", "dynamic-slice",
    "dynamic-update-slice", "pad", "gather", "scatter", "get-tuple-element", "tuple", "while", "all-reduce",
)


SHARED_NAMES = ["log_nodes", "log_edges", "edges_per_node", "log_total_elements", "log_total_bytes",
                "log_max_elements", "log_conv_dot_elements", *(f"opcode_count_{op}" for op in GRAPH_OPCODES)]


@dataclass(frozen=True)
class GraphFacts:
    """The facts of a kind of graph beyond the shared ones: their names and how they are computed."""

    names: tuple[str, ...]
    # (graph, dims, elements, rank, nbytes, opcodes) -> one value per name
    compute: Callable[..., list]


def graph_feature_names(facts: GraphFacts) -> list[str]:
    """The names of ``graph_features``' columns under ``facts``."""
    return [*SHARED_NAMES, *facts.names]


def graph_features(graph: Graph, facts: GraphFacts) -> np.ndarray:
    """(len(graph_feature_names(facts)),) float64 features of the whole graph, shared by its configs."""
    n, m = graph.num_nodes, graph.num_edges
    dims, elements, rank = node_shapes(graph.node_feat)
    nbytes = elements * bytes_per_element(graph.node_feat)
    opcodes = graph.node_opcode.astype(np.int64)
    counts = np.bincount(opcodes, minlength=max(OPCODE_IDS.values()) + 1)
    heavy = np.isin(opcodes, [OPCODE_IDS["convolution"], OPCODE_IDS["dot"]])
    values = [np.log1p(n), np.log1p(m), m / max(n, 1), log_size(elements.sum()), log_size(nbytes.sum()),
              log_size(elements.max(initial=0.0)), log_size(elements[heavy].sum())]
    values += [np.log1p(counts[OPCODE_IDS[op]]) for op in GRAPH_OPCODES]
    values += facts.compute(graph, dims, elements, rank, nbytes, opcodes)
    return finite(np.asarray(values, dtype=np.float64))


def _kernel_facts(graph: TileGraph, dims: np.ndarray, elements: np.ndarray, rank: np.ndarray,
                  nbytes: np.ndarray, opcodes: np.ndarray) -> list:
    """The kernel's output (the entry computation's root) and its parameters."""
    root = entry_root(graph) if graph.num_nodes else None
    if root is None:
        return [0.0] * MAX_DIMS + [0.0, 0.0, 0.0, 0.0]
    is_param = opcodes == OPCODE_IDS["parameter"]
    return (list(log_size(dims[root])) + [rank[root], log_size(elements[root]), log_size(nbytes[root])]
            + [log_size(elements[is_param].sum())])


def _layout_facts(graph: LayoutGraph, dims: np.ndarray, elements: np.ndarray, rank: np.ndarray,
                  nbytes: np.ndarray, opcodes: np.ndarray) -> list:
    """The configurable nodes: how many, of which kinds, how large; the computations."""
    nc, n = graph.num_configurable_nodes, graph.num_nodes
    kinds = opcodes[graph.node_config_ids]
    values = [np.log1p(nc), nc / max(n, 1), np.log1p(graph.computation_starts.shape[0])]
    values += [np.log1p((kinds == OPCODE_IDS[kind]).sum()) for kind in CONFIGURABLE_KINDS]
    return values + [log_size(elements[graph.node_config_ids].sum())]


KERNEL_FACTS = GraphFacts((*(f"output_dim_{i}" for i in range(MAX_DIMS)), "output_rank",
                           "log_output_elements", "log_output_bytes", "log_parameter_elements"),
                          _kernel_facts)
LAYOUT_FACTS = GraphFacts(("log_configurable", "configurable_fraction", "log_computations",
                           *(f"configurable_{kind}" for kind in CONFIGURABLE_KINDS),
                           "log_configurable_elements"), _layout_facts)
