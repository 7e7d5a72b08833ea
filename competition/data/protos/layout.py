"""Layout programs: one ``ModuleTuningData`` -> one ``LayoutGraph``; the configurable nodes of a plain module.

The layout part of the TpuGraphs featurizer (docs/featurizer.md, Layout configs):

- configs: runs with a module config, no error and a profile, in proto order; 18 values per
  configurable node starting at -1, the first 6 ``dims`` of up to 3 tensors (output, input, kernel);
  all runs dropped when none is the default;
- ``node_config_ids``: the proto's ``config_index_to_node``.

A plain HLO module (no tuning runs) has no ``config_index_to_node``; ``configurable_nodes`` picks them
by the dataset's rule: every convolution, dot and reshape, in node order.
"""

from __future__ import annotations

import numpy as np

from competition.data.graphs import LayoutGraph
from competition.data.hlo import CONFIGURABLE_OPCODES, LAYOUT_CONFIG_NAMES
from competition.data.protos.module import Message, ModuleGraph, encode_module

LAYOUT_CONFIG_FEATURE_NAMES = LAYOUT_CONFIG_NAMES  # the name callers of the featurizer know
LAYOUT_MAX_TENSORS, LAYOUT_MAX_DIMS, LAYOUT_PADDING = 3, 6, -1


def layout_config_row(node: Message) -> list[int]:
    """18 values of one configurable node: output/input/kernel layouts, first 6 dims each, -1 unset."""
    row = [LAYOUT_PADDING] * (LAYOUT_MAX_TENSORS * LAYOUT_MAX_DIMS)
    for t, tensor in enumerate(node["tensors"]):
        dims = tensor["dims"][:LAYOUT_MAX_DIMS]
        row[t * LAYOUT_MAX_DIMS : t * LAYOUT_MAX_DIMS + len(dims)] = dims
    return row


def featurize_layout(tuning: Message, *, where: str = "ModuleTuningData") -> LayoutGraph:
    """A decoded ``ModuleTuningData`` -> ``LayoutGraph`` with configs in proto order.

    Raises ``ValueError`` naming the run or node when the proto breaks a rule the upstream featurizer
    checks (no module, no configurable nodes, a run whose layout has the wrong number of nodes, more
    than 3 tensors per node, a non-positive runtime).
    """
    if tuning["module"] is None:
        raise ValueError(f"{where}: no 'module' (field 1): not a ModuleTuningData with an HLO module")
    config_ids = np.asarray(tuning["config_index_to_node"], dtype=np.uint64)
    if config_ids.size == 0:
        raise ValueError(f"{where}: 'config_index_to_node' (field 4) is empty: no configurable nodes")
    graph = encode_module(tuning["module"], where=f"{where}.module")
    num_nodes = len(graph.node_opcode)
    if config_ids.max() >= num_nodes:
        raise ValueError(
            f"{where}: config_index_to_node refers to node {int(config_ids.max())} but the module has "
            f"{num_nodes} instructions"
        )
    num_configurable = len(config_ids)

    # One pass over the runs, each decoded on its own (a file can hold 100,000 of them): keep runs with a
    # module config, no error and a profile, in proto order.
    runs = tuning["runs"]
    width = LAYOUT_MAX_TENSORS * LAYOUT_MAX_DIMS
    config_feat = np.empty((len(runs), num_configurable, width), dtype=np.float32)
    runtimes = np.empty(len(runs), dtype=np.int64)
    kept, has_default = 0, False
    for i, run in enumerate(runs):
        if run["module_config"] is None or run["error"] or run["profile"] is None:
            continue
        layout = run["module_config"]["layout_config"]
        if layout is None:
            raise ValueError(f"{where}.runs[{i}]: module_config has no layout_config")
        nodes = layout["nodes"]
        if len(nodes) != num_configurable:
            raise ValueError(
                f"{where}.runs[{i}]: layout_config has {len(nodes)} nodes but config_index_to_node "
                f"lists {num_configurable} configurable nodes"
            )
        for j, node in enumerate(nodes):
            if len(node["tensors"]) > LAYOUT_MAX_TENSORS:
                raise ValueError(
                    f"{where}.runs[{i}].module_config.layout_config.nodes[{j}]: "
                    f"{len(node['tensors'])} tensors, at most {LAYOUT_MAX_TENSORS} allowed"
                )
        config_feat[kept] = [layout_config_row(node) for node in nodes]
        runtime = run["profile"]["compute_time_ns"]
        if runtime <= 0:
            raise ValueError(f"{where}.runs[{i}]: usable run with compute_time_ns {runtime} (must be > 0)")
        runtimes[kept] = runtime
        has_default = has_default or run["is_default"]
        kept += 1
    if not has_default:
        kept = 0  # upstream drops every run when none is the default (no normaliser)
    # Shrink in place (no copy of a tensor that can reach 872 MB).
    config_feat.resize((kept, num_configurable, LAYOUT_MAX_TENSORS * LAYOUT_MAX_DIMS), refcheck=False)
    runtimes.resize(kept, refcheck=False)
    return _layout_graph(graph, config_ids.astype(np.int64), config_feat, runtimes)


def default_layout(tuning: Message) -> np.ndarray | None:
    """``(nc, 18)`` the setting of the proto's default run (measured or not), None without one."""
    for run in tuning["runs"]:
        config = run["module_config"]
        if run["is_default"] and config is not None and config["layout_config"] is not None:
            return np.asarray([layout_config_row(node) for node in config["layout_config"]["nodes"]],
                              dtype=np.float32)
    return None


def configurable_nodes(module: Message) -> np.ndarray:
    """Node positions of a plain module's configurable nodes: every convolution, dot and reshape, in node
    order (``competition.data.hlo.CONFIGURABLE_OPCODES``). The dataset's ``config_index_to_node`` is the
    compiler's list; the real program the kit ships lists exactly these (its 53 convolutions and 9
    reshapes, scalars included, nothing else)."""
    opcodes = [inst["opcode"] for comp in module["computations"] for inst in comp["instructions"]]
    return np.asarray([i for i, opcode in enumerate(opcodes) if opcode in CONFIGURABLE_OPCODES],
                      dtype=np.int64)


def module_layout_graph(module: Message, *, where: str = "HloModuleProto") -> LayoutGraph:
    """A plain module as a layout program without configs: its graph and ``configurable_nodes``.

    Raises ``ValueError`` when it has no configurable node (nothing to lay out).
    """
    config_ids = configurable_nodes(module)
    if config_ids.size == 0:
        raise ValueError(f"{where}: no convolution, dot or reshape: no configurable nodes to lay out (a tile "
                         "kernel? tpugraphs rank reads it as one with --collection tile:xla)")
    configs = np.zeros((0, len(config_ids), LAYOUT_MAX_TENSORS * LAYOUT_MAX_DIMS), dtype=np.float32)
    return _layout_graph(encode_module(module, where=where), config_ids, configs, np.zeros(0, dtype=np.int64))


def _layout_graph(graph: ModuleGraph, config_ids: np.ndarray, configs: np.ndarray,
                  runtimes: np.ndarray) -> LayoutGraph:
    return LayoutGraph(node_feat=graph.node_feat, node_opcode=graph.node_opcode, edge_index=graph.edge_index,
                       config_runtime=runtimes, node_config_feat=configs, node_config_ids=config_ids,
                       node_splits=graph.node_splits)
