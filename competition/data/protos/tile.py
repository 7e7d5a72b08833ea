"""Tile kernels: one ``TuningData`` -> one ``TileGraph`` per kernel.

The tile part of the TpuGraphs featurizer (docs/featurizer.md, Tile configs):

- kernels with more than one run, all with a tile config; runs with no error and runtime > 1;
- 24 values per config (first 6 bounds, sum, product of kernel/output/input; empty product 0);
- normaliser = runtime of the first kept default run;
- file names ``<proto stem>_<fingerprint as signed 64-bit hex>``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from competition.data.graphs import TileGraph
from competition.data.hlo import TILE_CONFIG_NAMES
from competition.data.protos.module import Message, ModuleGraph, encode_module, leading_sum_product

logger = logging.getLogger(__name__)

TILE_CONFIG_FEATURE_NAMES = TILE_CONFIG_NAMES  # the name callers of the featurizer know


def tile_config_row(run: Message) -> list[int]:
    """24 values of a run's tile config: kernel/output/input bounds, first 6 + sum + product (empty: 0)."""
    tile = run["op_config"]["tile_size_config"]
    row: list[int] = []
    for part in ("kernel_bounds", "output_bounds", "input_bounds"):
        row.extend(leading_sum_product(tile[part], 6, empty_product=0))
    return row


def tile_skip_reason(module_tuning: Message) -> str | None:
    """Why a kernel is left out (upstream rules), or None when it is featurized."""
    runs = module_tuning["runs"]
    if len(runs) <= 1:
        return f"{len(runs)} run(s) (needs more than one)"
    if module_tuning["module"] is None:
        return "no HLO module"
    for i, run in enumerate(runs):
        if run["op_config"] is None or run["op_config"]["tile_size_config"] is None:
            return f"run {i} has no tile size config"
    return None


@dataclass
class TileKernel:
    """One featurized kernel: its file name, its graph and its default run's config (the normaliser's)."""

    name: str
    graph: TileGraph
    default: np.ndarray  # (24,) float32


def featurize_tile_kernel(module_tuning: Message, *,
                          where: str = "ModuleTuningData") -> tuple[TileGraph, np.ndarray]:
    """One decoded ``ModuleTuningData`` of a tile kernel -> ``TileGraph`` (configs in proto order) and the
    config of its first kept default run, the one whose runtime normalises the others.

    The caller has checked ``tile_skip_reason`` is None. Raises ``ValueError`` when no run is kept or
    no kept run is the default (the upstream featurizer refuses the file then).
    """
    runs = module_tuning["runs"]
    kept = [
        i
        for i, run in enumerate(runs)
        if not run["error"] and run["profile"] is not None and run["profile"]["compute_time_ns"] > 1
    ]
    default = next((i for i in kept if runs[i]["is_default"]), None)
    if default is None:
        raise ValueError(
            f"{where}: no usable default run ({len(kept)} of {len(runs)} runs kept): the runtime "
            "normaliser is undefined"
        )
    graph = encode_module(module_tuning["module"], where=f"{where}.module")
    runtimes = np.asarray([runs[i]["profile"]["compute_time_ns"] for i in kept], dtype=np.int64)
    config_feat = np.asarray([tile_config_row(runs[i]) for i in kept], dtype=np.int64).reshape(len(kept), 24)
    normalizers = np.full(len(kept), runs[default]["profile"]["compute_time_ns"], dtype=np.int64)
    tile = _tile_graph(graph, config_feat.astype(np.float32), runtimes, normalizers)
    return tile, tile.config_feat[kept.index(default)]


def module_tile_graph(module: Message, *, where: str = "HloModuleProto") -> TileGraph:
    """A plain module as a tile kernel without configs (its graph only)."""
    empty = np.zeros(0, dtype=np.int64)
    return _tile_graph(encode_module(module, where=where), np.zeros((0, 24), dtype=np.float32), empty, empty)


def _tile_graph(graph: ModuleGraph, configs: np.ndarray, runtimes: np.ndarray,
                normalizers: np.ndarray) -> TileGraph:
    return TileGraph(node_feat=graph.node_feat, node_opcode=graph.node_opcode, edge_index=graph.edge_index,
                     config_runtime=runtimes, config_feat=configs, config_runtime_normalizers=normalizers)


def kernel_name(stem: str, fingerprint: int) -> str:
    """File stem of a tile kernel: ``<proto stem>_<fingerprint as signed 64-bit hex>``.

    Inferred from the released stems (e.g. ``alexnet_train_batch_32_-1bae27a41d70f4dc``).

    >>> kernel_name("resnet", 0xF758AA847A9184C5)
    'resnet_-8a7557b856e7b3b'
    """
    signed = fingerprint - (1 << 64) if fingerprint >= 1 << 63 else fingerprint
    return f"{stem}_{'-' if signed < 0 else ''}{abs(signed):x}"


def tile_kernels(tuning: Message, stem: str, *,
                 where: str = "TuningData") -> tuple[list[TileKernel], list[str]]:
    """A decoded ``TuningData`` -> each featurized kernel in proto order, and one line per kernel left out
    saying why."""
    out: list[TileKernel] = []
    skipped: list[str] = []
    seen: dict[str, int] = {}
    for m, module_tuning in enumerate(tuning["modules"]):
        module_tuning = {**module_tuning, "runs": list(module_tuning["runs"])}  # decode the runs once
        module_name = module_tuning["module"]["name"] if module_tuning["module"] is not None else "?"
        here = f"{where}.modules[{m}] ({module_name})"
        reason = tile_skip_reason(module_tuning)
        if reason is not None:
            skipped.append(f"{here}: {reason}")
            logger.info("%s: skipped: %s", here, reason)
            continue
        name = kernel_name(stem, module_tuning["fingerprint"])
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:  # two kernels with one fingerprint: keep both files apart
            name = f"{name}_{seen[name]}"
        out.append(TileKernel(name, *featurize_tile_kernel(module_tuning, where=here)))
    return out, skipped


def featurize_tile(tuning: Message, stem: str, *,
                   where: str = "TuningData") -> tuple[list[tuple[str, TileGraph]], list[str]]:
    """``tile_kernels`` as ``(name, TileGraph)`` pairs, and the kernels left out."""
    kernels, skipped = tile_kernels(tuning, stem, where=where)
    return [(kernel.name, kernel.graph) for kernel in kernels], skipped
