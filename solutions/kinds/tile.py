"""The tile kind's adapter: kernels with one 24-d config (tile bounds) per run.

Features: the tiling facts (``solutions.features.tile``: how the tile divides the output, padding, tile
count, working set against VMEM) and the kernel's output facts; the heuristic's rule (elements computed
with their padding, per-step overhead, spills: ``solutions.methods.heuristic``); the gnn's network per
graph, reading each config's signed log and its tiling facts; ``rank`` on a TuningData's kernels.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from competition.data.graphs import Graph, TileGraph
from competition.tasks import TILE, TILE_CONFIG_DIM
from solutions.features.log_scale import signed_log1p
from solutions.features.tile import tile_feature_names, tile_features, tile_geometry
from solutions.kinds import ConfigsPerGraph, register
from solutions.kinds.layout_space import SLOTS
from solutions.kinds.program import Program, RankError, modal_setting

TILE_TENSORS = ("kernel", "output", "input")  # config_feat: 8 columns each, the first 6 bounds, sum, product
TILE_BLOCK = 8
# engineered columns after the 24 raw ones of a tile config
TILE_GEOMETRY_COLUMNS = len(tile_feature_names()) - TILE_CONFIG_DIM


def tile_cost(graph: TileGraph) -> np.ndarray:
    """(c,) estimated cost of each tile config (element-operations), lower = faster."""
    return tile_geometry(graph).cost()


class TileKind(ConfigsPerGraph):
    def __init__(self) -> None:
        super().__init__(TILE)
        self.configs = "tile bounds"
        self.collection = "tile:xla"
        self.noun = "tile kernel"
        self.candidate_options = ("--configs FILE (an npz of the released format or a .npy of shape "
                                  "(configs, 24))")

    sample_refusal = ("--sample draws layout configs only: a tile kernel's configs are the tile sizes the "
                      "TPU compiler's search lists for that kernel, a list the dataset does not describe and "
                      "no public rule reproduces; rank the kernel's measured configs or give --configs FILE")

    def config_feature_names(self) -> list[str]:
        return tile_feature_names()

    def config_features(self, graph: Graph, configs: np.ndarray | None = None) -> np.ndarray:
        return tile_features(graph if configs is None else graph.select_configs(configs))

    def config_vector_width(self) -> int:
        return self.config_width() + TILE_GEOMETRY_COLUMNS

    def config_vectors(self, graph: Graph) -> np.ndarray:
        """Each column's signed log, then the engineered tiling facts of ``tile_features`` (signed-log
        scaled) -> (c, config_vector_width()) float32."""
        scaled = signed_log1p(np.asarray(graph.configs))
        engineered = tile_features(graph)[:, TILE_CONFIG_DIM:]  # the first 24 are log1p(config_feat) again
        return np.concatenate([scaled, signed_log1p(engineered)], axis=1)

    def heuristic_cost(self, graph: Graph) -> np.ndarray:
        return tile_cost(graph)

    def from_tuning(self, path: Path, tuning: dict, kernel: str | None) -> Program:
        from competition.data.protos.tile import tile_kernels

        kernels, skipped = tile_kernels(tuning, path.stem)
        names = [k.name for k in kernels]
        listed = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        if not kernels:
            raise RankError(f"{path}: a TuningData with no kernel to rank ({len(skipped)} left out by the "
                            "featurizer's rules; tpugraphs featurize -v says why)")
        if kernel is None and len(kernels) > 1:
            raise RankError(f"{path}: a TuningData of {len(kernels)} tile kernels; pick one with --kernel "
                            f"NAME ({listed})")
        chosen = kernels[0] if kernel is None else next((k for k in kernels if k.name == kernel), None)
        if chosen is None:
            raise RankError(f"{path}: no kernel named {kernel!r}; its kernels: {listed}")
        return Program(path, chosen.graph, chosen.default, "TuningData", kernel=chosen.name)

    def from_module(self, path: Path, module: dict, message: str) -> Program:
        from competition.data.protos.tile import module_tile_graph

        return Program(path, module_tile_graph(module, where=message), None, message)

    def problem(self, values: np.ndarray, program: Program) -> str | None:
        bad = ~np.isfinite(values) | (values < 0) | (values != np.round(values))
        if not bad.any():
            return None
        c, column = (int(i) for i in np.argwhere(bad)[0])
        tensor = TILE_TENSORS[column // TILE_BLOCK]
        return (f"config {c}, column {column} ({tensor}) holds {values[c, column]:g}; tile values are tile "
                "bounds and their sums and products: whole numbers >= 0")

    def changes(self, config: np.ndarray, reference: np.ndarray, program: Program) -> list[dict]:
        """Per tensor, the tile bounds (the first 6; 0: no such dimension) that differ from ``reference``."""
        units = (len(TILE_TENSORS), TILE_BLOCK)
        new, old = config.reshape(units), reference.reshape(units)
        out = []
        for t in np.flatnonzero((new != old).any(axis=1)):
            before, after = _bounds(old[t]), _bounds(new[t])
            text = f"{TILE_TENSORS[t]} tile {_tile_words(after)} instead of {_tile_words(before)}"
            out.append({"tensor": TILE_TENSORS[t], "from": before, "to": after, "text": text})
        return out

    def modal(self, configs: np.ndarray) -> np.ndarray:
        return modal_setting(configs[:, None, :])[0]


def _bounds(block: np.ndarray) -> list[int]:
    values = [int(v) for v in block[:SLOTS]]
    while values and values[-1] == 0:
        values.pop()
    return values


def _tile_words(bounds: list[int]) -> str:
    return "x".join(str(b) for b in bounds) if bounds else "unset"


TILE_KIND = register(TileKind())
