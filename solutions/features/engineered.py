"""Engineered features for the gradient-boosted ranker (and the geometry the heuristic uses).

One row per config: graph-level features (the same for every config of a graph), then config
features, then (optionally) the config features again centred on the graph's mean, so that a tree
threshold means "more than this graph's typical config" rather than an absolute level shared by
graphs of very different sizes.

The ideas, in TPU terms (TPU arrays live in (8, 128) tiles: the minor-most dimension is padded to a
multiple of 128 lanes and the second-minor to a multiple of 8 sublanes):

- **tile** (``config_feat``, 24-d): the 24 bounds log-scaled; output tile vs the kernel's output shape
  (the root of the entry computation): per-dimension ratio, tile count, padding waste of ragged last
  tiles, lane/sublane padding of a tile, working-set bytes; and the heuristic's cost estimate.
- **layout** (``node_config_feat``, (c, nc, 18)): per config, aggregates over the configurable nodes
  for each of the output / input / kernel layout vectors: how many nodes put each dimension minor-most,
  agreement with the layout the neighbours expect (a configurable producer's chosen output layout,
  otherwise the layout recorded in ``node_feat``), lane/sublane padding of the tensors, bytes that
  would need a relayout copy, the share of unset (-1) vectors; agreement with the graph's most common
  row per node; and the heuristic's cost estimate.

Node feature columns are used by name through ``NODE_COLUMN`` (``competition.data.hlo.NODE_FEATURE_INDEX``,
the column map the featurizer writes), never by position.

Every value is finite: logs are taken of clipped non-negative numbers (``*_product`` columns reach
1e8+ and wrap negative as int64 in the released data), non-finite inputs map to 0, and the final
matrix is clipped to +-1e30 before its float32 cast.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from competition.data.compact import pack_layout_vector_codes
from competition.data.graphs import Graph, LayoutGraph, TileGraph
from competition.data.hlo import (
    CONFIGURABLE_OPCODES,
    ELEMENT_BYTES,
    NODE_FEATURE_INDEX,
    OPCODE_IDS,
    TILE_CONFIG_NAMES,
)
from competition.tasks import LAYOUT_CONFIG_DIM

CHUNK_VALUES = 1 << 22  # layout config values per pass: ~32 MB per int64 intermediate
FEATURE_LIMIT = 1e30  # features are clipped to +-this before the float32 cast
FEATURE_VERSION = 1  # bump when a feature's definition changes: saved models then refuse to load

NODE_COLUMN = NODE_FEATURE_INDEX  # node_feat column name -> position
TILE_COLUMN: dict[str, int] = {name: i for i, name in enumerate(TILE_CONFIG_NAMES)}

MAX_DIMS = 6  # dimensions per shape / layout vector / tile-bound block
SHAPE_DIMS = np.array([NODE_COLUMN[f"shape_dimensions_{i}"] for i in range(MAX_DIMS)])
SHAPE_PRODUCT = NODE_COLUMN["shape_dimensions_product"]
MINOR_TO_MAJOR = np.array([NODE_COLUMN[f"layout_minor_to_major_{i}"] for i in range(MAX_DIMS)])
IS_ROOT = NODE_COLUMN["is_root"]
TILE_OUTPUT_BOUNDS = np.array([TILE_COLUMN[f"output_bounds_{i}"] for i in range(MAX_DIMS)])
TILE_BOUND_PRODUCTS = {part: TILE_COLUMN[f"{part}_bounds_product"] for part in ("kernel", "output", "input")}

# Element types that hold data, with their one-hot column and size (tuple/token/opaque/invalid hold none).
_DATA_TYPES = [t for t, size in ELEMENT_BYTES.items() if size > 0]
_ELEMENT_TYPE_COLUMNS = np.array([NODE_COLUMN[f"shape_element_type_is_{t}"] for t in _DATA_TYPES])
_ELEMENT_TYPE_BYTES = np.array([ELEMENT_BYTES[t] for t in _DATA_TYPES], dtype=np.float64)

LANES, SUBLANES = 128, 8  # a TPU vreg tile: minor dim padded to 128, second-minor to 8
# Per-grid-step overhead of a tiled kernel, in element-operations (~0.35 us at ~2e5 elements/us).
TILE_STEP_OVERHEAD = 65536.0
VMEM_BYTES = 16 * 2**20  # on-chip scratch a tile's working set should fit in (v4: 16-32 MiB)

CONFIGURABLE_KINDS = CONFIGURABLE_OPCODES  # convolution, dot, reshape
LAYOUT_VECTORS = ("output", "input", "kernel")
# Opcodes counted in the graph-level histogram: compute-heavy, layout-sensitive and data-movement ops.
GRAPH_OPCODES = (
    "convolution", "dot", "reshape", "transpose", "copy", "bitcast", "broadcast", "reduce", "reduce-window",
    "fusion", "parameter", "constant", "add", "multiply", "subtract", "divide", "maximum", "exponential",
    "tanh", "rsqrt", "select", "compare", "convert", "concatenate", "slice", "dynamic-slice",
    "dynamic-update-slice", "pad", "gather", "scatter", "get-tuple-element", "tuple", "while", "all-reduce",
)


@dataclass(frozen=True)
class FeatureSettings:
    """What ``config_features`` computes; saved next to a model so predictions use the same features."""

    task: str  # "tile" or "layout"
    center_per_graph: bool = True  # append the config features minus their per-graph mean
    # One representative per tied group of configurable nodes (nodes whose settings are identical in
    # every config of the graph; ``tied_groups``): faster, and a group counts once in the means.
    collapse_tied_nodes: bool = False
    # The 11th place's layout features (``WINNER_FEATURE_NAMES``): mismatch counts over configurable
    # and two-hop links, minor-dimension alignment bins, padding sums, how often a config repeats.
    winner_features: bool = False
    version: int = FEATURE_VERSION

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FeatureSettings:  # settings saved before a field existed get its default
        if data.get("version") != FEATURE_VERSION:
            raise ValueError(
                f"saved features are version {data.get('version')}, this code computes version {FEATURE_VERSION}; "
                "retrain the model"
            )
        return cls(**data)


# --------------------------------------------------------------------------------------------------
# Small numeric helpers


def _log(values: np.ndarray | float) -> np.ndarray:
    """log1p of values clipped at 0, in float64: safe for wrapped (negative) int64 products."""
    return np.log1p(np.clip(np.asarray(values, dtype=np.float64), 0.0, None))


def _finite(values: np.ndarray) -> np.ndarray:
    return np.nan_to_num(values.astype(np.float64, copy=False), nan=0.0, posinf=0.0, neginf=0.0)


def _layout_values(values: np.ndarray) -> np.ndarray:
    """Layout slots as int64 in -1..5 (dimension indices, -1 = unset); anything else is clipped there."""
    return np.rint(np.clip(_finite(np.asarray(values)), -1, MAX_DIMS - 1)).astype(np.int64)


def config_chunks(num_configs: int, num_configurable: int) -> Iterator[slice]:
    """Slices of the config axis holding about ``CHUNK_VALUES`` layout values each (at least 1 config)."""
    step = max(1, CHUNK_VALUES // max(1, num_configurable * LAYOUT_CONFIG_DIM))
    for start in range(0, num_configs, step):
        yield slice(start, min(num_configs, start + step))


def _pad_factor(size: np.ndarray, multiple: int) -> np.ndarray:
    """How much padding a dimension of ``size`` gets when rounded up to ``multiple`` (>= 1; 1 for size <= 0)."""
    size = np.maximum(size, 1.0)
    return np.ceil(size / multiple) * multiple / size


def _element_bytes(node_feat: np.ndarray) -> np.ndarray:
    """(n,) bytes per element from the element-type one-hot columns (4 when none is set)."""
    onehot = _finite(node_feat[:, _ELEMENT_TYPE_COLUMNS])
    found = onehot.sum(axis=1) > 0
    return np.where(found, onehot @ _ELEMENT_TYPE_BYTES / np.maximum(onehot.sum(axis=1), 1), 4.0)


def node_shapes(node_feat: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Shape facts of every node from its features.

    Returns:
        ``(dims, elements, rank)``: (n, 6) float64 first six dimension sizes, (n,) float64 element count
        (the ``shape_dimensions_product`` column, or the product of the six dims when that column is not
        a positive number), (n,) int64 count of non-zero leading dims.
    """
    dims = np.clip(_finite(node_feat[:, SHAPE_DIMS]), 0.0, None)
    product = _finite(node_feat[:, SHAPE_PRODUCT])
    nonzero = dims > 0
    rank = nonzero.sum(axis=1)
    fallback = np.where(nonzero, dims, 1.0).prod(axis=1) * (rank > 0)
    elements = np.where(product > 0, product, fallback)
    return dims, elements, rank.astype(np.int64)


def _entry_root(graph: Graph) -> int:
    """Position of the kernel's output node: the last node flagged ``is_root`` (the entry computation's)."""
    roots = np.flatnonzero(graph.node_feat[:, IS_ROOT] > 0)
    return int(roots[-1]) if roots.size else graph.num_nodes - 1


# --------------------------------------------------------------------------------------------------
# Graph-level features


# Graph facts of each task kind beyond the shared ones, by task name (``feature_kinds`` lists the kinds).
_GRAPH_NAMES_OF_KIND = {
    "tile": [*(f"output_dim_{i}" for i in range(MAX_DIMS)),
             "output_rank", "log_output_elements", "log_output_bytes", "log_parameter_elements"],
    "layout": ["log_configurable", "configurable_fraction", "log_computations",
               *(f"configurable_{kind}" for kind in CONFIGURABLE_KINDS), "log_configurable_elements"],
}


def feature_kinds() -> tuple[str, ...]:
    """The task kinds (task names) these features describe."""
    return tuple(_GRAPH_NAMES_OF_KIND)


def _check_kind(task: str) -> None:
    if task not in _GRAPH_NAMES_OF_KIND:
        raise ValueError(f"no engineered features for {task} graphs; they describe {', '.join(feature_kinds())}")


def graph_feature_names(task: str) -> list[str]:
    _check_kind(task)
    names = ["log_nodes", "log_edges", "edges_per_node", "log_total_elements", "log_total_bytes",
             "log_max_elements", "log_conv_dot_elements"]
    names += [f"opcode_count_{op}" for op in GRAPH_OPCODES]
    return names + _GRAPH_NAMES_OF_KIND[task]


def graph_features(graph: Graph) -> np.ndarray:
    """(len(graph_feature_names(task)),) float64 features of the whole graph, shared by its configs."""
    n, m = graph.num_nodes, graph.num_edges
    dims, elements, rank = node_shapes(graph.node_feat)
    nbytes = elements * _element_bytes(graph.node_feat)
    opcodes = graph.node_opcode.astype(np.int64)
    counts = np.bincount(opcodes, minlength=max(OPCODE_IDS.values()) + 1)
    heavy = np.isin(opcodes, [OPCODE_IDS["convolution"], OPCODE_IDS["dot"]])
    values = [np.log1p(n), np.log1p(m), m / max(n, 1), _log(elements.sum()), _log(nbytes.sum()),
              _log(elements.max(initial=0.0)), _log(elements[heavy].sum())]
    values += [np.log1p(counts[OPCODE_IDS[op]]) for op in GRAPH_OPCODES]
    _check_kind(graph.task.name)
    values += _GRAPH_FACTS_OF_KIND[graph.task.name](graph, dims, elements, rank, nbytes, opcodes)
    return _finite(np.asarray(values, dtype=np.float64))


def _tile_graph_facts(graph: TileGraph, dims: np.ndarray, elements: np.ndarray, rank: np.ndarray,
                      nbytes: np.ndarray, opcodes: np.ndarray) -> list:
    """The kernel's output (the entry computation's root) and its parameters."""
    root = _entry_root(graph) if graph.num_nodes else None
    if root is None:
        return [0.0] * MAX_DIMS + [0.0, 0.0, 0.0, 0.0]
    is_param = opcodes == OPCODE_IDS["parameter"]
    return (list(_log(dims[root])) + [rank[root], _log(elements[root]), _log(nbytes[root])]
            + [_log(elements[is_param].sum())])


def _layout_graph_facts(graph: LayoutGraph, dims: np.ndarray, elements: np.ndarray, rank: np.ndarray,
                        nbytes: np.ndarray, opcodes: np.ndarray) -> list:
    """The configurable nodes: how many, of which kinds, how large; the computations."""
    nc, n = graph.num_configurable_nodes, graph.num_nodes
    kinds = opcodes[graph.node_config_ids]
    values = [np.log1p(nc), nc / max(n, 1), np.log1p(graph.computation_starts.shape[0])]
    values += [np.log1p((kinds == OPCODE_IDS[kind]).sum()) for kind in CONFIGURABLE_KINDS]
    return values + [_log(elements[graph.node_config_ids].sum())]


_GRAPH_FACTS_OF_KIND = {"tile": _tile_graph_facts, "layout": _layout_graph_facts}


# --------------------------------------------------------------------------------------------------
# Tile configs


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
    config = np.clip(_finite(graph.config_feat), 0.0, None)  # (c, 24)
    c = config.shape[0]
    bounds = config[:, TILE_OUTPUT_BOUNDS]  # (c, 6)
    if graph.num_nodes:
        root = _entry_root(graph)
        dims, elements, _ = node_shapes(graph.node_feat[root : root + 1])
        shape, out_elements = dims[0], float(elements[0])
        minor_to_major = _layout_values(graph.node_feat[root, MINOR_TO_MAJOR])
        element_bytes = float(_element_bytes(graph.node_feat[root : root + 1])[0])
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
    lane = _pad_factor(np.where(tiled[:, minor], bounds[:, minor], shape[minor]), LANES)
    sublane = 1.0
    if second is not None:
        sublane = _pad_factor(np.where(tiled[:, second], bounds[:, second], shape[second]), SUBLANES)
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
    config = np.clip(_finite(graph.config_feat), 0.0, None)
    geometry = tile_geometry(graph)
    products = {part: config[:, col] for part, col in TILE_BOUND_PRODUCTS.items()}
    columns = [
        np.log1p(config),
        geometry.ratio,
        np.log(geometry.tile_count)[:, None],
        np.log(geometry.ragged_waste)[:, None],
        geometry.divides_fraction[:, None],
        np.log(geometry.lane_padding)[:, None],
        _log(geometry.working_set_bytes)[:, None],
        np.log(np.maximum(1.0, geometry.working_set_bytes / VMEM_BYTES))[:, None],
        (_log(products["input"]) - _log(products["output"]))[:, None],
        (_log(products["kernel"]) + _log(products["output"]))[:, None],
        _log(geometry.cost())[:, None],
    ]
    return _finite(np.concatenate(columns, axis=1))


# --------------------------------------------------------------------------------------------------
# Layout configs


@dataclass(frozen=True)
class LayoutContext:
    """What the layout features need from a graph besides its configs; computed once per graph.

    Shapes: nc configurable nodes; vectors are (output, input, kernel).
    """

    tensor_dims: np.ndarray  # (nc, 3, 6) float64 dims of the output / input operand / kernel operand
    tensor_elements: np.ndarray  # (nc, 3) float64 element counts (0 where the tensor is unknown)
    rank: np.ndarray  # (nc, 3) int64 slots a vector sets (max over configs of its non -1 slots)
    expected: np.ndarray  # (nc, 3, 6) int64 layout the neighbours expect, -1 beyond the rank
    producer: np.ndarray  # (nc, 3) int64 configurable index whose output feeds this vector, -1 if none
    has_plain_consumer: np.ndarray  # (nc,) bool: some consumer is not configurable
    kind: np.ndarray  # (nc,) int64 index into CONFIGURABLE_KINDS, -1 for another opcode
    mode_codes: np.ndarray  # (nc,) int64 most common packed 18-d row of each node over the graph's configs
    # (nc,) int64 configurable node whose settings each node's copy: itself, or the first node of its
    # tied group (identical 18-d row in every config of the graph)
    representative: np.ndarray | None = None
    # (nc, 3) int64 configurable node reached through one non-configurable operand (a two-hop link), -1 if none
    two_hop: np.ndarray | None = None
    config_repeats: np.ndarray | None = None  # (c,) how many configs of the graph share each config's settings

    @property
    def num_configurable(self) -> int:
        return int(self.rank.shape[0])

    def collapsed(self) -> tuple[LayoutContext, np.ndarray]:
        """This context on the representatives of the tied groups only, and their node positions.

        A producer link to a tied node is redirected to its representative, whose chosen layouts
        are the same in every config, so the mismatch counts of the kept nodes do not change.
        """
        if self.representative is None:
            raise ValueError("this context was built without tied groups")
        keep = np.flatnonzero(self.representative == np.arange(self.num_configurable))
        position = np.full(self.num_configurable, -1, dtype=np.int64)
        position[keep] = np.arange(keep.size)
        producer = self.producer[keep]
        producer = _redirect(producer, self.representative, position)
        return LayoutContext(
            tensor_dims=self.tensor_dims[keep], tensor_elements=self.tensor_elements[keep], rank=self.rank[keep],
            expected=self.expected[keep], producer=producer, has_plain_consumer=self.has_plain_consumer[keep],
            kind=self.kind[keep], mode_codes=self.mode_codes[keep], representative=np.arange(keep.size),
            two_hop=None if self.two_hop is None else _redirect(self.two_hop[keep], self.representative, position),
            config_repeats=self.config_repeats,
        ), keep


def _redirect(links: np.ndarray, representative: np.ndarray, position: np.ndarray) -> np.ndarray:
    """Configurable node links (-1 = none) pointed at their group's representative, as kept positions."""
    linked = links >= 0
    return np.where(linked, position[representative[np.where(linked, links, 0)]], -1)


def tied_groups(codes: np.ndarray) -> np.ndarray:
    """(nc,) the first node of each node's tied group, from (c, nc) packed rows of every config.

    >>> tied_groups(np.array([[1, 2, 1, 3], [4, 5, 4, 5]])).tolist()
    [0, 1, 0, 3]
    """
    if codes.shape[1] == 0:
        return np.zeros(0, dtype=np.int64)
    _, first, inverse = np.unique(codes.T, axis=0, return_index=True, return_inverse=True)
    return first[inverse.reshape(-1)].astype(np.int64)


def _crop(layout: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """(..., 6) layouts with slots at or beyond ``rank`` (...,) set to -1."""
    slots = np.arange(MAX_DIMS)
    return np.where(slots < rank[..., None], layout, -1)


def _column_modes(codes: np.ndarray) -> np.ndarray:
    """(nc,) most common value of each column of (c, nc) codes (the smallest among equally common)."""
    modes = np.zeros(codes.shape[1], dtype=np.int64)
    for j in range(codes.shape[1]):
        values, counts = np.unique(codes[:, j], return_counts=True)
        modes[j] = values[np.argmax(counts)]
    return modes


def layout_context(graph: LayoutGraph) -> LayoutContext:
    """Per-graph facts for the layout features: tensor shapes, expected layouts, producer links.

    Operands are found through the edges (``[consumer, producer]``). The released edges are sorted
    and deduplicated, so operand order is lost: the input vector is matched to the first producer
    whose rank equals the vector's rank, the kernel vector to the next one (the same one when there
    is only one). A producer that is itself configurable is linked by index, so its chosen output
    layout is compared per config; otherwise its ``node_feat`` layout is what the vector should match.

    Tried and dropped: also linking a configurable node found up to 3 producers further up through
    same-rank elementwise-like nodes (XLA lets those take their operand's layout). On train+valid
    of the small embedded competition it lowered the heuristic (layout:xla:random tau 0.306 -> 0.289)
    and the ranker's 4-fold cross-validated tau (0.424 -> 0.409).
    """
    feat = graph.node_config_feat
    ids = graph.node_config_ids.astype(np.int64)
    nc = ids.shape[0]
    dims, elements, node_rank = node_shapes(graph.node_feat)
    node_layout = _layout_values(graph.node_feat[:, MINOR_TO_MAJOR])
    config_index = np.full(graph.num_nodes, -1, dtype=np.int64)
    config_index[ids] = np.arange(nc)

    # One pass over the configs (a memory-mapped cached graph is read once): vector ranks and row codes.
    rank = np.zeros((nc, 3), dtype=np.int64)
    codes = np.empty(feat.shape[:2], dtype=np.int64)
    for part in config_chunks(*feat.shape[:2]):
        chunk = feat[part]
        vectors = chunk.reshape(part.stop - part.start, nc, 3, MAX_DIMS)
        rank = np.maximum(rank, (vectors != -1).sum(axis=-1).max(axis=0, initial=0))
        codes[part] = pack_layout_vector_codes(chunk)

    tensor_dims = np.zeros((nc, 3, MAX_DIMS))
    tensor_elements = np.zeros((nc, 3))
    expected = np.full((nc, 3, MAX_DIMS), -1, dtype=np.int64)
    producer = np.full((nc, 3), -1, dtype=np.int64)
    two_hop = np.full((nc, 3), -1, dtype=np.int64)
    tensor_dims[:, 0], tensor_elements[:, 0] = dims[ids], elements[ids]
    expected[:, 0] = _crop(node_layout[ids], rank[:, 0])

    edges = graph.edge_index
    consumers, producers = edges[:, 0], edges[:, 1]
    starts = np.searchsorted(consumers, ids, side="left")
    stops = np.searchsorted(consumers, ids, side="right")
    for j in range(nc):
        operands = list(producers[starts[j] : stops[j]])
        used: set[int] = set()
        for vector in (1, 2):
            r = rank[j, vector]
            if r == 0:
                continue
            matching = [v for v in operands if node_rank[v] == r]
            if not matching:
                continue
            fresh = [v for v in matching if v not in used]
            v = int(fresh[0] if fresh else matching[0])
            used.add(v)
            tensor_dims[j, vector], tensor_elements[j, vector] = dims[v], elements[v]
            producer[j, vector] = config_index[v]
            expected[j, vector] = _crop(node_layout[v], np.int64(r))
            if config_index[v] < 0:  # a plain operand: is a configurable node of the same rank behind it?
                behind = producers[np.searchsorted(consumers, v, "left") : np.searchsorted(consumers, v, "right")]
                found = [int(config_index[u]) for u in behind if config_index[u] >= 0 and node_rank[u] == r]
                two_hop[j, vector] = found[0] if found else -1

    # Consumers of each configurable node: producers column equals its id (edges sorted by consumer only).
    consumer_is_plain = config_index[consumers] < 0
    has_plain_consumer = np.zeros(nc, dtype=bool)
    linked = config_index[producers]
    has_plain_consumer[linked[(linked >= 0) & consumer_is_plain]] = True

    kind_of_opcode = {OPCODE_IDS[k]: i for i, k in enumerate(CONFIGURABLE_KINDS)}
    kind = np.array([kind_of_opcode.get(int(op), -1) for op in graph.node_opcode[ids]], dtype=np.int64)
    mode_codes = _column_modes(codes) if feat.shape[0] else np.zeros(nc, np.int64)
    return LayoutContext(
        tensor_dims=tensor_dims, tensor_elements=tensor_elements, rank=rank, expected=expected,
        producer=producer, has_plain_consumer=has_plain_consumer, kind=kind, mode_codes=mode_codes,
        representative=tied_groups(codes) if feat.shape[0] else np.arange(nc), two_hop=two_hop,
        config_repeats=_repeats(codes),
    )


def _repeats(codes: np.ndarray) -> np.ndarray:
    """(c,) how many configs have exactly each config's (c, nc) row (a default search revisits fast ones)."""
    if codes.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    _, inverse, counts = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    return counts[inverse.reshape(-1)]


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


WINNER_FEATURE_NAMES = [
    "configurable_link_mismatches", "plain_link_mismatches", "two_hop_mismatches", "two_hop_agreement",
    "minor_multiple_of_128", "minor_multiple_of_8_only", "minor_unaligned", "second_minor_multiple_of_8",
    "log_padding_sum", "log_config_repeats",
]


@dataclass(frozen=True)
class LayoutGeometry:
    """Per config and configurable node: padding and relayout facts; shapes (c, nc, 3)."""

    active: np.ndarray  # bool: the node has this vector (rank > 0)
    padded_elements: np.ndarray  # tensor elements after (8, 128) padding in the chosen layout
    mismatch: np.ndarray  # bool: the chosen layout differs from what the neighbour provides / expects
    minor_size: np.ndarray  # float64 size of the minor-most dimension (for an unset vector: as assumed)
    second_size: np.ndarray  # float64 size of the second-minor dimension (1 when rank < 2)
    layouts: np.ndarray  # (c, nc, 3, 6) int64 the chosen layouts as given (-1 = unset)

    def cost(self) -> np.ndarray:
        """(c,) the heuristic's estimate in elements moved: every configured tensor is touched once in
        its padded layout, and a mismatched one is copied (read + write) once more."""
        per_tensor = self.padded_elements * (1.0 + 2.0 * self.mismatch)
        return (per_tensor * self.active).sum(axis=(1, 2))


def layout_geometry(node_config_feat: np.ndarray, context: LayoutContext) -> LayoutGeometry:
    """Padding and agreement of every (config, node, vector) of a chunk of configs (c, nc, 18)."""
    c, nc = node_config_feat.shape[:2]
    layouts = _layout_values(node_config_feat).reshape(c, nc, 3, MAX_DIMS)
    active = np.broadcast_to(context.rank > 0, (c, nc, 3))
    # What each vector should agree with: a configurable producer's chosen output, else the fixed layout.
    expected = np.broadcast_to(context.expected, (c, nc, 3, MAX_DIMS)).copy()
    for vector in (1, 2):
        linked = np.flatnonzero(context.producer[:, vector] >= 0)
        if linked.size:
            source = layouts[:, context.producer[linked, vector], 0]
            expected[:, linked, vector] = _crop(source, context.rank[linked, vector])
    # An unset vector (-1 slots) leaves the choice to the compiler: not counted as a mismatch.
    chosen = _crop(layouts, context.rank)
    # Unknown on either side (unset vector, operand not found, producer's output unset): no mismatch.
    known = (chosen[..., 0] != -1) & (expected[..., 0] != -1)
    mismatch = known & (chosen != expected).any(axis=-1)
    output_free = ~context.has_plain_consumer  # configurable consumers are checked on their own input
    mismatch[:, :, 0] &= ~output_free[None, :]

    # An unset vector is the compiler's choice: assume it picks what the neighbour expects, else the
    # default descending layout, when estimating padding.
    descending = _crop(context.rank[..., None] - 1 - np.arange(MAX_DIMS), context.rank)  # (nc, 3, 6)
    fallback = np.where(expected[..., :1] != -1, expected, descending[None])
    effective = np.where(chosen[..., :1] == -1, fallback, chosen)
    minor = effective[..., 0]
    second = np.where(context.rank[None] >= 2, effective[..., 1], -1)
    dims = np.broadcast_to(context.tensor_dims, (c, nc, 3, MAX_DIMS))
    minor_size = np.take_along_axis(dims, np.clip(minor, 0, MAX_DIMS - 1)[..., None], axis=-1)[..., 0]
    second_size = np.take_along_axis(dims, np.clip(second, 0, MAX_DIMS - 1)[..., None], axis=-1)[..., 0]
    minor_size = np.where(minor >= 0, minor_size, 1.0)
    second_size = np.where(second >= 0, second_size, 1.0)
    padding = _pad_factor(minor_size, LANES) * _pad_factor(second_size, SUBLANES)
    padded = context.tensor_elements[None] * padding
    return LayoutGeometry(active=active, padded_elements=padded, mismatch=mismatch, minor_size=minor_size,
                          second_size=second_size, layouts=chosen)


def _weighted_mean(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Mean over the node axis (1) of (c, nc) values with (nc,) or (c, nc) weights; 0 with no weight."""
    total = np.broadcast_to(weights, values.shape).sum(axis=1)
    return (values * weights).sum(axis=1) / np.where(total > 0, total, 1.0)


def layout_features(graph: LayoutGraph, context: LayoutContext | None = None, *,
                    configs: np.ndarray | None = None, collapse_tied_nodes: bool = False,
                    winner_features: bool = False) -> np.ndarray:
    """(c', len(layout_feature_names())) float64 per-config features of a layout graph.

    ``configs``: (c',) indices of the configs to featurize, in that order (default: all c). Configs
    are read and processed in chunks (``config_chunks``), so a 100k-config graph never builds its
    full (c, nc, 3, 6) int64 intermediates at once, and a graph whose ``node_config_feat`` is memory-
    mapped (``competition.data.processed_cache.CachedLayoutGraph``) is read a chunk at a time.

    ``collapse_tied_nodes``: featurize one representative per tied group (``tied_groups``) only.
    ``winner_features``: append the ``WINNER_FEATURE_NAMES`` columns.
    """
    context = context if context is not None else layout_context(graph)
    feat = graph.node_config_feat
    index = np.arange(feat.shape[0]) if configs is None else np.asarray(configs, dtype=np.int64)
    width = len(layout_feature_names()) + (len(WINNER_FEATURE_NAMES) if winner_features else 0)
    if index.shape[0] == 0:
        return np.zeros((0, width))
    nodes = None
    if collapse_tied_nodes:
        context, nodes = context.collapsed()
    parts = []
    for part in config_chunks(index.shape[0], context.num_configurable):
        chunk = feat[index[part]]
        chunk = chunk if nodes is None else chunk[:, nodes]
        block = _layout_chunk_features(chunk, context)
        if winner_features:
            block = np.concatenate([block, _winner_features(chunk, context, index[part])], axis=1)
        parts.append(block)
    return _finite(np.concatenate(parts, axis=0))


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
        chosen = geometry.layouts[:, :, vector]
        match = (~geometry.mismatch[:, :, vector]).astype(np.float64)
        elements = context.tensor_elements[:, vector]
        rank = context.rank[:, vector]
        descending = (chosen == _crop(rank[:, None] - 1 - np.arange(MAX_DIMS), rank)).all(axis=-1)
        minor = chosen[..., 0]  # as given: -1 = unset
        minor_expected = (minor != -1) & (minor == context.expected[:, vector, 0])
        minor_size, second_size = geometry.minor_size[:, :, vector], geometry.second_size[:, :, vector]
        padded = geometry.padded_elements[:, :, vector] * active
        columns += [
            _weighted_mean(match, active),
            _weighted_mean(match, weight),
            _log((geometry.mismatch[:, :, vector] * elements).sum(axis=1)),
            _weighted_mean(minor_expected.astype(np.float64), active),
            _weighted_mean(descending.astype(np.float64), active),
            _weighted_mean((minor == -1).astype(np.float64), active),
            _log(padded.sum(axis=1)),
            _weighted_mean(np.log(_pad_factor(minor_size, LANES) * _pad_factor(second_size, SUBLANES)), active),
            _weighted_mean(_log(minor_size), active),
            _weighted_mean(_log(second_size), active),
        ]
        columns += [_weighted_mean((minor == d).astype(np.float64), active) for d in range(MAX_DIMS)]
        if vector < 2:  # output and input, per kind of node: a layout costs a dot what it does not a reshape
            by_kind.append((match, descending, minor_expected, padded, active))
    for match, descending, minor_expected, padded, active in by_kind:
        for k in range(len(CONFIGURABLE_KINDS)):
            of_kind = active * (context.kind == k)
            columns += [
                _weighted_mean(match, of_kind),
                _weighted_mean(descending.astype(np.float64), of_kind),
                _weighted_mean(minor_expected.astype(np.float64), of_kind),
                _log((padded * of_kind).sum(axis=1)),
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
    matches_mode = (pack_layout_vector_codes(feat) == context.mode_codes[None]).astype(np.float64)
    columns += [
        matches_mode.mean(axis=1),
        _weighted_mean(matches_mode, size_weight[:, 0]),
        _log(geometry.cost()),
    ]
    return np.stack(columns, axis=1)


def _winner_features(feat: np.ndarray, context: LayoutContext, configs: np.ndarray) -> np.ndarray:
    """The ``WINNER_FEATURE_NAMES`` columns of a chunk of configs (c, nc, 18) (11th place's write-up)."""
    c, nc = feat.shape[:2]
    if nc == 0:
        return np.zeros((c, len(WINNER_FEATURE_NAMES)))
    geometry = layout_geometry(feat, context)
    operands = geometry.active[:, :, 1:] & (geometry.layouts[:, :, 1:, 0] != -1)
    mismatch = geometry.mismatch[:, :, 1:]
    configurable = operands & (context.producer[None, :, 1:] >= 0)
    plain = operands & (context.producer[None, :, 1:] < 0)
    # Two hops: the operand's layout against the configurable node behind the plain one (a copy if they differ).
    two_hop = np.zeros((c,)), np.zeros((c,))
    links = context.two_hop[:, 1:] if context.two_hop is not None else np.full((nc, 2), -1)
    rows, vectors = np.nonzero(links >= 0)
    if rows.size:
        source = geometry.layouts[:, links[rows, vectors], 0]  # (c, k, 6) the far node's chosen output
        ranks = context.rank[rows, vectors + 1]
        far = _crop(source, ranks)
        near = geometry.layouts[:, rows, vectors + 1]
        known = (far[..., 0] != -1) & (near[..., 0] != -1)
        differ = known & (far != near).any(axis=-1)
        two_hop = differ.sum(axis=1).astype(np.float64), _ratio((known & ~differ).sum(axis=1), known.sum(axis=1))
    active = geometry.active
    minor, second = geometry.minor_size, geometry.second_size
    of_128 = active & (np.mod(minor, LANES) == 0)
    of_8 = active & (np.mod(minor, SUBLANES) == 0) & ~of_128
    count = np.maximum(active.sum(axis=(1, 2)), 1)
    raw = np.broadcast_to(context.tensor_elements[None], geometry.padded_elements.shape)
    repeats = context.config_repeats[configs] if context.config_repeats is not None else np.ones(c)
    return np.stack([
        (mismatch & configurable).sum(axis=(1, 2)).astype(np.float64),
        (mismatch & plain).sum(axis=(1, 2)).astype(np.float64),
        two_hop[0], two_hop[1],
        of_128.sum(axis=(1, 2)) / count,
        of_8.sum(axis=(1, 2)) / count,
        (active & ~of_128 & ~of_8).sum(axis=(1, 2)) / count,
        (active & (np.mod(second, SUBLANES) == 0)).sum(axis=(1, 2)) / count,
        _log(((geometry.padded_elements - raw) * active).sum(axis=(1, 2))),
        np.log(np.maximum(repeats, 1)).astype(np.float64),
    ], axis=1)


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    return numerator / np.where(denominator > 0, denominator, 1.0)


# --------------------------------------------------------------------------------------------------
# The full matrix


def _config_feature_names(settings: FeatureSettings) -> list[str]:
    _check_kind(settings.task)
    return {"tile": tile_feature_names,
            "layout": lambda: layout_feature_names() + (WINNER_FEATURE_NAMES if settings.winner_features else [])
            }[settings.task]()


def _tile_config_features(graph: TileGraph, settings: FeatureSettings, configs: np.ndarray | None) -> np.ndarray:
    return tile_features(graph if configs is None else graph.select_configs(configs))


def _layout_config_features(graph: LayoutGraph, settings: FeatureSettings, configs: np.ndarray | None) -> np.ndarray:
    return layout_features(graph, layout_context(graph), configs=configs,
                           collapse_tied_nodes=settings.collapse_tied_nodes,
                           winner_features=settings.winner_features)


_CONFIG_FEATURES_OF_KIND = {"tile": _tile_config_features, "layout": _layout_config_features}


def feature_names(settings: FeatureSettings) -> list[str]:
    """Column names of ``config_features`` under ``settings``."""
    config = _config_feature_names(settings)
    names = [f"graph_{name}" for name in graph_feature_names(settings.task)] + config
    if settings.center_per_graph:
        names += [f"{name}_centered" for name in config]
    return names


def config_features(graph: Graph, settings: FeatureSettings, *, configs: np.ndarray | None = None) -> np.ndarray:
    """(c', F) float32 feature matrix of a graph's configs, F = len(feature_names(settings)).

    Args:
        graph: a tile or layout graph matching ``settings.task``.
        settings: which features.
        configs: optional (c',) indices of the configs to featurize (default: all); the per-graph
            centring uses the mean over exactly these configs.
    """
    if graph.task.name != settings.task:
        raise ValueError(f"a {graph.task.name} graph given to {settings.task} features")
    _check_kind(settings.task)
    config = _CONFIG_FEATURES_OF_KIND[settings.task](graph, settings, configs)
    shared = np.broadcast_to(graph_features(graph), (config.shape[0], len(graph_feature_names(settings.task))))
    blocks = [shared, config]
    if settings.center_per_graph:
        blocks.append(config - config.mean(axis=0, keepdims=True) if config.shape[0] else config)
    # Garbage inputs (e.g. a dim of 1e-30 under a tile bound of 1e30) must not overflow float32.
    return np.clip(np.concatenate(blocks, axis=1), -FEATURE_LIMIT, FEATURE_LIMIT).astype(np.float32)


def select_configs(graph: Graph, configs: np.ndarray) -> Graph:
    """The same graph keeping only ``configs`` (indices into its config axis; ``Graph.select_configs``)."""
    return graph.select_configs(configs)
