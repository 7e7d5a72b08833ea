"""Tile config features (``config_feat``, 24-d): the 24 bounds log-scaled; output tile vs the
kernel's output shape (the root of the entry computation): per-dimension ratio, tile count, padding
waste of ragged last tiles, lane/sublane padding of a tile, working-set bytes; and the heuristic's
cost estimate (``TileGeometry.cost``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from competition.data.graphs import TileGraph
from competition.data.hlo import TILE_CONFIG_NAMES
from solutions.features.shapes import (
    LANES,
    MAX_DIMS,
    MINOR_TO_MAJOR,
    SUBLANES,
    bytes_per_element,
    entry_root,
    finite,
    layout_values,
    log_size,
    node_shapes,
    pad_factor,
)

TILE_COLUMN: dict[str, int] = {name: i for i, name in enumerate(TILE_CONFIG_NAMES)}
TILE_OUTPUT_BOUNDS = np.array([TILE_COLUMN[f"output_bounds_{i}"] for i in range(MAX_DIMS)])
TILE_BOUND_PRODUCTS = {part: TILE_COLUMN[f"{part}_bounds_product"] for part in ("kernel", "output", "input")}

# Per-grid-step overhead of a tiled kernel, in element-operations (~0.35 us at ~2e5 elements/us).
TILE_STEP_OVERHEAD = 65536.0
VMEM_BYTES = 16 * 2**20  # on-chip scratch a tile's working set should fit in (v4: 16-32 MiB)


def tile_feature_names() -> list[str]:
    names = [f"log_{name}" for name in TILE_CONFIG_NAMES]
    names += [f"output_tile_ratio_{i}" for i in range(MAX_DIMS)]
    names += ["log_tile_count", "log_ragged_waste", "tile_divides_fraction", "log_lane_padding",
              "log_working_set_bytes", "vmem_overflow", "log_input_over_output", "log_kernel_times_output",
              "heuristic_log_cost"]
    return names


@dataclass(frozen=True)
class TileGeometry:
    """The output tiling of each config of a tile graph; shapes (c,) unless noted."""

    ratio: np.ndarray  # (c, 6) output tile bound / output dim, 0 where either is absent
    tile_count: np.ndarray  # number of output tiles (grid steps)
    ragged_waste: np.ndarray  # padded output volume of whole tiles / output volume (>= 1)
    divides_fraction: np.ndarray  # share of the tiled dims whose size the tile divides
    lane_padding: np.ndarray  # (8, 128) padding factor of one output tile (>= 1)
    working_set_bytes: np.ndarray  # bytes of one output + input + kernel tile
    padded_elements: np.ndarray  # elements computed, padding included

    def cost(self) -> np.ndarray:
        """The heuristic's estimate, in element-operations: computed elements (padding included), a
        fixed overhead per grid step, times the factor by which the working set overflows VMEM."""
        overflow = np.maximum(1.0, self.working_set_bytes / VMEM_BYTES)
        return (self.padded_elements + self.tile_count * TILE_STEP_OVERHEAD) * overflow


def tile_geometry(graph: TileGraph) -> TileGeometry:
    """Output tiling facts of every config, from the tile bounds and the kernel's output node."""
    config = np.clip(finite(graph.config_feat), 0.0, None)  # (c, 24)
    c = config.shape[0]
    bounds = config[:, TILE_OUTPUT_BOUNDS]  # (c, 6)
    if graph.num_nodes:
        root = entry_root(graph)
        dims, elements, _ = node_shapes(graph.node_feat[root : root + 1])
        shape, out_elements = dims[0], float(elements[0])
        minor_to_major = layout_values(graph.node_feat[root, MINOR_TO_MAJOR])
        element_bytes = float(bytes_per_element(graph.node_feat[root : root + 1])[0])
    else:
        shape, out_elements, minor_to_major, element_bytes = np.zeros(MAX_DIMS), 0.0, np.arange(MAX_DIMS), 4.0
    tiled = (bounds > 0) & (shape > 0)  # (c, 6) dims the tile bounds cover
    safe_bounds = np.where(tiled, bounds, 1.0)
    ratio = np.where(tiled, bounds / np.where(shape > 0, shape, 1.0), 0.0)
    steps = np.where(tiled, np.ceil(shape / safe_bounds), 1.0)
    tile_count = steps.prod(axis=1)
    covered = np.where(tiled, steps * safe_bounds, np.where(shape > 0, shape, 1.0)).prod(axis=1)
    exact = np.where(shape > 0, shape, 1.0).prod()
    ragged_waste = covered / max(exact, 1.0)
    n_tiled = tiled.sum(axis=1)
    divides = (tiled & (np.mod(shape, safe_bounds) == 0)).sum(axis=1) / np.maximum(n_tiled, 1)
    # The output's own layout says which logical dims are minor-most (lanes) and second-minor (sublanes).
    rank = int((shape > 0).sum())
    minor = int(minor_to_major[0]) if rank >= 1 and 0 <= minor_to_major[0] < MAX_DIMS else MAX_DIMS - 1
    second = int(minor_to_major[1]) if rank >= 2 and 0 <= minor_to_major[1] < MAX_DIMS else None
    lane = pad_factor(np.where(tiled[:, minor], bounds[:, minor], shape[minor]), LANES)
    sublane = 1.0
    if second is not None:
        sublane = pad_factor(np.where(tiled[:, second], bounds[:, second], shape[second]), SUBLANES)
    lane_padding = lane * sublane
    products = {part: config[:, col] for part, col in TILE_BOUND_PRODUCTS.items()}
    output_tile = np.where(tiled, bounds, 1.0).prod(axis=1) * (n_tiled > 0)
    working_set = (output_tile + products["input"] + products["kernel"]) * element_bytes
    padded = np.maximum(out_elements, exact) * ragged_waste * lane_padding if c else np.zeros(0)
    return TileGeometry(
        ratio=ratio, tile_count=tile_count, ragged_waste=ragged_waste, divides_fraction=divides,
        lane_padding=lane_padding, working_set_bytes=working_set, padded_elements=padded,
    )


def tile_features(graph: TileGraph) -> np.ndarray:
    """(c, len(tile_feature_names())) float64 per-config features of a tile graph."""
    config = np.clip(finite(graph.config_feat), 0.0, None)
    geometry = tile_geometry(graph)
    products = {part: config[:, col] for part, col in TILE_BOUND_PRODUCTS.items()}
    columns = [
        np.log1p(config),
        geometry.ratio,
        np.log(geometry.tile_count)[:, None],
        np.log(geometry.ragged_waste)[:, None],
        geometry.divides_fraction[:, None],
        np.log(geometry.lane_padding)[:, None],
        log_size(geometry.working_set_bytes)[:, None],
        np.log(np.maximum(1.0, geometry.working_set_bytes / VMEM_BYTES))[:, None],
        (log_size(products["input"]) - log_size(products["output"]))[:, None],
        (log_size(products["kernel"]) + log_size(products["output"]))[:, None],
        log_size(geometry.cost())[:, None],
    ]
    return finite(np.concatenate(columns, axis=1))
