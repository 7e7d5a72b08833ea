"""Graphs and configs as tensors for the GNN: pruned, scaled, configs stored compactly.

One ``TileExample`` or ``LayoutExample`` per npz file, built once before training and kept on the
CPU (a step moves what it samples to the device). The preprocessing is what makes the GNN cheap:

- **Pruning** (layout): the ``transform`` given (None: none), which ``GNNRanker`` reads from its
  ``pruning`` setting (by default ``solutions.pruning.OneHop``: the configurable nodes and their
  neighbours); the configs only touch those, and message passing runs once per config, so its cost
  falls with the node count (docs/competition.md). A saved model records its own pruning.
- **Config deduplication** (``compress=True``): identical configs of a training graph are merged and
  get the fastest of their measured runtimes (``deduplicate_configs(policy="min")``: re-measuring
  the same binary only adds noise, which slows a run down). At prediction the model scores each
  distinct config once and the score is copied to its duplicates (``config_inverse``).
- **Compact config storage** (``compress=True``): a layout config tensor is kept base-7 packed,
  (c, nc, 3) int32 instead of (c, nc, 18) float32 (6x smaller; ``competition.data.compact``), and the
  sampled configs are decoded on the fly into slot digits. Without compression it is kept as the
  released float32 array. Both give the same digits (``ConfigStore.digits``; the stores are in
  ``solutions.methods.gnn.config_store``).
- **Processed cache** (``cached_layout_example``, used when ``FitOptions.cache_dir`` is set): the
  configs stay in ``competition.data.processed_cache``'s memory-mapped int8 file and each step reads only the
  configs it samples (``CachedConfigStore``); deduplication and the common rows are computed from
  per-config codes built chunk by chunk, so memory does not grow with the config count beyond a few
  int64 per config (one (c, nc) int64 code array while the example is built). ``make_example`` takes
  this path for a ``CachedLayoutGraph`` (what ``SplitSource.graphs(cache_dir)`` yields), in training
  and in prediction alike.

Tensor conventions: edges are PyG's (2, m) ``[source, target]`` with source = producer and
target = consumer (the released rows are ``[consumer, producer]``, docs/competition.md, Data format),
so a plain ``MessagePassing`` layer sends each value downstream to its users, and the flipped edges
upstream.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np
import torch

from competition.data.compact import LAYOUT_VALUE_MIN, pack_layout_vector_codes
from competition.data.graphs import Graph, LayoutGraph, TileGraph
from competition.data.processed_cache import CachedGraph
from competition.tasks import LAYOUT_CONFIG_DIM, Task
from solutions.compute.accel import group_sizes
from solutions.features.dedup import deduplicate_configs
from solutions.features.log_scale import scale_node_features
from solutions.kinds import CONFIGS_PER_NODE, kind_of
from solutions.methods.gnn.config_store import (
    CachedConfigStore,
    ConfigStore,
    most_common_config,
    most_common_rows,
)
from solutions.methods.gnn.engineered import engineered_layout_features, kept_configs, sample_training_configs
from solutions.pruning import GraphTransform, PruningStats


def graph_tensors(node_feat: np.ndarray, node_opcode: np.ndarray, edge_index: np.ndarray
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Released node arrays -> (scaled features (n, 140) float32, opcodes (n,) int64, edges (2, m) int64).

    Edges come out PyG-style, ``[producer, consumer]`` (the released rows are ``[consumer, producer]``).
    """
    feat = torch.from_numpy(scale_node_features(node_feat))
    opcode = torch.from_numpy(np.asarray(node_opcode, dtype=np.int64))
    edges = torch.from_numpy(np.ascontiguousarray(np.asarray(edge_index, dtype=np.int64)[:, ::-1].T))
    return feat, opcode, edges


@dataclass(frozen=True)
class Edges:
    """A graph's edges as message passing reads them, in both directions, with what each direction's
    mean over neighbours divides by: counted once per graph (``of``) rather than in every layer of
    every step (docs/gnn.md, "Training speed").

    Shapes: index (2, m) int64 ``[producer, consumer]``; producers, consumers (n,) float32: how many
    producers each node reads and how many consumers read it, clamped at 1 (``group_sizes``).
    """

    index: torch.Tensor
    producers: torch.Tensor
    consumers: torch.Tensor

    @classmethod
    def of(cls, edge_index: torch.Tensor, num_nodes: int) -> Edges:
        return cls(edge_index, group_sizes(edge_index[1], num_nodes), group_sizes(edge_index[0], num_nodes))

    def to(self, device: torch.device | str) -> Edges:
        return Edges(self.index.to(device), self.producers.to(device), self.consumers.to(device))


# --------------------------------------------------------------------------------------------------
# Examples


@dataclass
class LayoutInputs:
    """The config-independent tensors of one layout graph (what the model reads besides the configs).

    Shapes: n nodes and m edges (after pruning), nc configurable nodes.
    """

    node_feat: torch.Tensor  # (n, 140) float32, scaled
    node_opcode: torch.Tensor  # (n,) int64
    edge_index: torch.Tensor  # (2, m) int64, [producer, consumer]
    config_node_ids: torch.Tensor  # (nc,) int64 positions of the configurable nodes
    common_rows: torch.Tensor  # (nc, 18) int64 digits: each configurable node's most frequent row
    # (2, e) int64 [producer, consumer] links between configurable nodes (indices 0..nc-1), computed
    # on first use by ``config_links`` (intermediate fusion reads them)
    links: torch.Tensor | None = None
    # ``Edges`` of edge_index and of the links, made on first use by ``edges`` and ``config_edges``
    graph_edges: Edges | None = None
    link_edges: Edges | None = None

    @property
    def num_nodes(self) -> int:
        return int(self.node_opcode.shape[0])

    def config_links(self) -> torch.Tensor:
        """``links``, computed once (see ``configurable_links``)."""
        if self.links is None:
            self.links = configurable_links(self.edge_index, self.config_node_ids, self.num_nodes)
        return self.links

    def edges(self) -> Edges:
        """The graph's ``Edges``, made once (again for a copy given other edges)."""
        if self.graph_edges is None or self.graph_edges.index is not self.edge_index:
            self.graph_edges = Edges.of(self.edge_index, self.num_nodes)
        return self.graph_edges

    def config_edges(self) -> Edges:
        """The links' ``Edges`` over the nc configurable nodes, made once (again for a copy given other
        links)."""
        links = self.config_links()
        if self.link_edges is None or self.link_edges.index is not links:
            self.link_edges = Edges.of(links, int(self.config_node_ids.shape[0]))
        return self.link_edges

    def to(self, device: torch.device | str) -> LayoutInputs:
        if self.node_feat.device == torch.device(device):
            return self  # keeps the links and edges made on it for the next step
        # made once here, not on every step's copy
        graph_edges, link_edges = self.edges().to(device), self.config_edges().to(device)
        return LayoutInputs(self.node_feat.to(device), self.node_opcode.to(device),
                            graph_edges.index, self.config_node_ids.to(device), self.common_rows.to(device),
                            link_edges.index, graph_edges, link_edges)


def configurable_links(edge_index: torch.Tensor, config_node_ids: torch.Tensor,
                       num_nodes: int) -> torch.Tensor:
    """Producer -> consumer links between configurable nodes, directly or through one other node.

    A layout cost arises where a tensor changes layout between the node that writes it and the node
    that reads it; between two configurable nodes that is either a direct edge or a path through one
    non-configurable node (a reshape, a bitcast, an elementwise op that keeps the layout). Those are
    the pairs whose settings interact, so intermediate fusion mixes their row embeddings.

    Shapes: edge_index (2, m) ``[producer, consumer]``, config_node_ids (nc,) -> (2, e) int64 in
    0..nc-1, sorted, without duplicates or self-links.
    """
    position = torch.full((num_nodes,), -1, dtype=torch.int64, device=edge_index.device)
    position[config_node_ids] = torch.arange(config_node_ids.shape[0], device=edge_index.device)
    producer, consumer = edge_index
    p_slot, c_slot = position[producer], position[consumer]
    direct = torch.stack([p_slot, c_slot])[:, (p_slot >= 0) & (c_slot >= 0)]
    # configurable -> w -> configurable with w not configurable: join the two edge lists on w
    into = (p_slot >= 0) & (c_slot < 0)  # configurable producer feeding a plain node w = consumer
    out_of = (p_slot < 0) & (c_slot >= 0)  # plain node w = producer feeding a configurable consumer
    w_in, src = consumer[into], p_slot[into]
    w_out, dst = producer[out_of], c_slot[out_of]
    order = torch.argsort(w_out, stable=True)
    w_out, dst = w_out[order], dst[order]
    start = torch.searchsorted(w_out, w_in)
    count = torch.searchsorted(w_out, w_in, right=True) - start
    src = torch.repeat_interleave(src, count)
    offsets = torch.arange(int(count.sum()), device=edge_index.device) - torch.repeat_interleave(
        torch.cumsum(count, 0) - count, count)
    through = torch.stack([src, dst[torch.repeat_interleave(start, count) + offsets]])
    links = torch.cat([direct, through], dim=1)
    links = links[:, links[0] != links[1]]
    nc = max(1, int(config_node_ids.shape[0]))
    keys = torch.unique(links[0] * nc + links[1])
    return torch.stack([keys // nc, keys % nc])


@dataclass
class LayoutExample:
    """One layout graph ready for the model.

    Shapes: c configs kept (the distinct ones when deduplicated), c0 configs in the file.
    """

    row_id: str
    inputs: LayoutInputs
    configs: ConfigStore | CachedConfigStore  # c configs
    runtime: torch.Tensor | None  # (c,) float64 ns (min over duplicates); None for unlabeled graphs
    config_inverse: np.ndarray | None  # (c0,) int64 kept config of each file config; None = identity
    pruning: PruningStats | None = None
    # (k,) int64 start offsets of the HLO computations (after pruning); Graph Segment Training reads them
    node_splits: np.ndarray | None = None
    # (c, ENGINEERED_LAYOUT_COLUMNS) float32: each kept config's engineered layout features as z-scores
    # within the graph (``solutions.methods.gnn.engineered``); None unless the model reads them
    engineered: torch.Tensor | None = None

    @property
    def num_nodes(self) -> int:
        return self.inputs.num_nodes

    @property
    def num_configs(self) -> int:
        return self.configs.num_configs

    def expand(self, per_config: np.ndarray) -> np.ndarray:
        """Scores of the kept configs -> scores of every config of the file: (c,) -> (c0,)."""
        return per_config if self.config_inverse is None else per_config[self.config_inverse]

    def engineered_rows(self, index: torch.Tensor, device: torch.device | str = "cpu") -> torch.Tensor | None:
        """The engineered features of kept configs ``index`` (B,) -> (B, F) on ``device``; None without
        them."""
        return None if self.engineered is None else self.engineered[index].to(device)


@dataclass
class TileExample:
    """One tile kernel ready for the model. Shapes: n nodes, m edges, c configs kept."""

    row_id: str
    node_feat: torch.Tensor  # (n, 140) float32, scaled
    node_opcode: torch.Tensor  # (n,) int64
    edge_index: torch.Tensor  # (2, m) int64, [producer, consumer]
    config_feat: torch.Tensor  # (c, config_vector_width(task)) float32, scaled (config_vectors)
    # (c,) float64 runtime / normalizer (what the metric ranks); None if unlabeled
    runtime: torch.Tensor | None
    config_inverse: np.ndarray | None = None  # (c0,) int64 kept config of each file config; None = identity
    pruning: PruningStats | None = None  # kernels are never pruned

    @property
    def num_nodes(self) -> int:
        return int(self.node_opcode.shape[0])

    @property
    def num_configs(self) -> int:
        return int(self.config_feat.shape[0])

    def expand(self, per_config: np.ndarray) -> np.ndarray:
        return per_config if self.config_inverse is None else per_config[self.config_inverse]


def _labeled(runtime: np.ndarray) -> bool:
    """Test files carry all-zero runtimes (docs/competition.md, Data format: Test files): those are not
    labels."""
    return runtime.size > 0 and bool((runtime > 0).all())


def layout_example(row_id: str, graph: LayoutGraph, *, transform: GraphTransform | None,
                   compress: bool) -> LayoutExample:
    """Prune (with ``transform``; None: not), scale and pack one layout graph (the module docstring says
    what each step does)."""
    stats = None
    if transform is not None:
        result = transform.prune(graph)
        graph, stats = result.graph, result.stats
    feat, opcode, edges = graph_tensors(graph.node_feat, graph.node_opcode, graph.edge_index)
    codes = pack_layout_vector_codes(graph.node_config_feat)  # (c, nc): the common rows
    inputs = LayoutInputs(feat, opcode, edges,
                          torch.from_numpy(np.asarray(graph.node_config_ids, dtype=np.int64)),
                          torch.from_numpy(most_common_rows(graph.node_config_feat, codes)))
    del codes
    configs, runtime = graph.node_config_feat, graph.config_runtime
    labeled = _labeled(runtime)
    inverse = None
    if compress:
        dedup = deduplicate_configs(configs, runtime if labeled else None, policy="min")
        if dedup.num_unique < dedup.num_configs:
            configs, inverse = configs[dedup.unique_index], dedup.inverse
            runtime = dedup.runtime if labeled else runtime[dedup.unique_index]
    return LayoutExample(
        row_id=row_id,
        inputs=inputs,
        configs=ConfigStore.from_configs(configs, packed=compress),
        runtime=torch.from_numpy(runtime.astype(np.float64)) if labeled else None,
        config_inverse=inverse,
        pruning=stats,
        node_splits=np.asarray(graph.node_splits, dtype=np.int64).reshape(-1),
    )


def cached_layout_example(row_id: str, graph: CachedGraph, *, transform: GraphTransform | None,
                          compress: bool) -> LayoutExample:
    """``layout_example`` for a graph in the processed cache: the same example, configs left on disk.

    Pruning, scaling, deduplication (same distinct configs, same min runtimes, same order) and the
    common rows match ``layout_example`` on the released graph exactly, and ``digits`` gives the same
    values; only the config storage differs (a ``CachedConfigStore`` instead of a ``ConfigStore``).
    """
    arrays = graph.graph_arrays()
    runtime = arrays.pop("config_runtime")
    nc = graph.num_configurable
    # Pruning and scaling read only the node arrays: the skeleton carries no configs.
    skeleton = LayoutGraph(node_config_feat=np.zeros((0, nc, LAYOUT_CONFIG_DIM), np.float32),
                           config_runtime=runtime[:0], **arrays)
    stats = None
    if transform is not None:
        result = transform.prune(skeleton)
        skeleton, stats = result.graph, result.stats
    feat, opcode, edges = graph_tensors(skeleton.node_feat, skeleton.node_opcode, skeleton.edge_index)
    try:
        # (c, nc) int64, packed a chunk of configs at a time: the int8 tensor is never held whole.
        codes = pack_layout_vector_codes(graph.node_config_feat)
        if graph.num_configs:
            first = most_common_config(codes)
            common = graph.node_config_feat[first, np.arange(nc)].astype(np.int64) - LAYOUT_VALUE_MIN
        else:
            common = np.zeros((nc, LAYOUT_CONFIG_DIM), dtype=np.int64)
    finally:
        graph.close()
    inputs = LayoutInputs(feat, opcode, edges,
                          torch.from_numpy(np.asarray(skeleton.node_config_ids, dtype=np.int64)),
                          torch.from_numpy(common))
    labeled = _labeled(runtime)
    rows, inverse = np.arange(graph.num_configs, dtype=np.int64), None
    if compress:
        dedup = deduplicate_configs(codes, runtime if labeled else None, policy="min")
        if dedup.num_unique < dedup.num_configs:
            rows, inverse = dedup.unique_index.astype(np.int64), dedup.inverse
            runtime = dedup.runtime if labeled else runtime[dedup.unique_index]
    del codes
    return LayoutExample(
        row_id=row_id,
        inputs=inputs,
        configs=CachedConfigStore(graph, rows),
        runtime=torch.from_numpy(runtime.astype(np.float64)) if labeled else None,
        config_inverse=inverse,
        pruning=stats,
        node_splits=np.asarray(skeleton.node_splits, dtype=np.int64).reshape(-1),
    )


def config_vector_width(task: Task) -> int:
    """Columns of what the model reads per config of a kind with one config per graph (its adapter's
    ``Kind.config_vector_width``)."""
    return kind_of(task).config_vector_width()


def config_vectors(graph: Graph) -> np.ndarray:
    """What the model reads per config of a kind with one config per graph (its adapter's
    ``Kind.config_vectors``: each column's signed log, and for tile bounds the tiling facts)."""
    return kind_of(graph.task).config_vectors(graph)


def tile_example(row_id: str, graph: Graph, *, compress: bool) -> TileExample:
    """Scale one graph of a kind with one config per graph (a tile kernel); with ``compress``, identical
    configs are merged (min runtime)."""
    feat, opcode, edges = graph_tensors(graph.node_feat, graph.node_opcode, graph.edge_index)
    kind = kind_of(graph.task)
    config_tensor = kind.config_vectors(graph)
    normalizers = graph.normalizers
    labeled = _labeled(graph.config_runtime) and (normalizers is None or _labeled(normalizers))
    target = graph.ranking_target().astype(np.float64) if labeled else None
    inverse = None
    if compress:
        dedup = deduplicate_configs(kind.config_keys(graph), target, policy="min")
        if dedup.num_unique < dedup.num_configs:
            config_tensor, inverse = config_tensor[dedup.unique_index], dedup.inverse
            target = dedup.runtime if labeled else None
    return TileExample(
        row_id=row_id,
        node_feat=feat,
        node_opcode=opcode,
        edge_index=edges,
        config_feat=torch.from_numpy(np.ascontiguousarray(config_tensor)),
        runtime=torch.from_numpy(np.asarray(target, dtype=np.float64)) if labeled else None,
        config_inverse=inverse,
    )


def full_layout_example(row_id: str, graph: LayoutGraph, *, transform: GraphTransform | None, compress: bool,
                        engineered: bool = False, max_configs: int | None = None) -> LayoutExample:
    """The example of one layout graph; a graph read from the processed cache keeps its configs there.

    Pruned with ``transform`` (None: not), and with ``engineered`` each kept config's engineered
    features (``solutions.methods.gnn.engineered``). ``max_configs`` (training graphs): a labelled graph with
    more kept configs keeps a fixed random sample of that many
    (``solutions.methods.gnn.engineered.sample_training_configs``); its scores then no longer cover the file's
    configs, so never pass it for a graph to be predicted.
    """
    cache = getattr(graph, "cache", None)  # a graph read through the processed cache
    if cache is not None:
        example = cached_layout_example(row_id, cache, transform=transform, compress=compress)
    else:
        example = layout_example(row_id, graph, transform=transform, compress=compress)
    rows = kept_configs(example.config_inverse)  # a file config of each kept one (None: all)
    if max_configs is not None and example.runtime is not None and example.num_configs > max_configs:
        keep = sample_training_configs(example.num_configs, max_configs)
        rows = keep if rows is None else rows[keep]
        example = replace(example, configs=example.configs.keep(keep), runtime=example.runtime[keep],
                          config_inverse=None)
    if engineered:
        try:
            example.engineered = engineered_layout_features(graph, rows)
        finally:
            if cache is not None:
                cache.close()  # the pass over the configs mapped them all; release them
    return example


def make_example(row_id: str, graph: TileGraph | LayoutGraph, *, transform: GraphTransform | None,
                 compress: bool, engineered: bool = False,
                 max_configs: int | None = None) -> TileExample | LayoutExample:
    """The example of one graph: ``full_layout_example`` for a graph with a config per configurable node
    (the arguments are its own), ``tile_example`` for one with a config per graph (never pruned)."""
    if kind_of(graph.task).gnn_family == CONFIGS_PER_NODE:
        return full_layout_example(row_id, graph, transform=transform, compress=compress,
                                   engineered=engineered, max_configs=max_configs)
    return tile_example(row_id, graph, compress=compress)


def load_examples(graphs: Iterable[tuple[str, TileGraph | LayoutGraph]], *, transform: GraphTransform | None,
                  compress: bool) -> list[TileExample | LayoutExample]:
    """``make_example`` over ``(row_id, graph)`` pairs, e.g. a ``SplitSource``."""
    return [make_example(row_id, graph, transform=transform, compress=compress) for row_id, graph in graphs]


# --------------------------------------------------------------------------------------------------
# Batches of graphs


def offsets(sizes: list[int]) -> torch.Tensor:
    """CSR offsets of consecutive runs of ``sizes`` rows: (G,) -> (G + 1,) int64 from 0."""
    counts = torch.tensor(sizes, dtype=torch.int64)
    return torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(counts, 0)])


@dataclass
class TileBatch:
    """Several tile kernels as one disjoint graph, with the configs sampled from each.

    Shapes: G graphs, N nodes and M edges in all, B configs in all.
    """

    node_feat: torch.Tensor  # (N, 140) float32
    node_opcode: torch.Tensor  # (N,) int64
    edge_index: torch.Tensor  # (2, M) int64, offset per graph
    ptr: torch.Tensor  # (G + 1,) int64: graph g owns nodes ptr[g]:ptr[g + 1]
    config_feat: torch.Tensor  # (B, config_vector_width(task)) float32
    config_graph: torch.Tensor  # (B,) int64: graph of each config
    runtime: torch.Tensor | None  # (B,) float64 or None

    def to(self, device: torch.device | str) -> TileBatch:
        return TileBatch(*(None if t is None else t.to(device) for t in (
            self.node_feat, self.node_opcode, self.edge_index, self.ptr, self.config_feat, self.config_graph,
            self.runtime)))


def tile_batch(examples: list[TileExample], config_index: list[torch.Tensor]) -> TileBatch:
    """Stack kernels and the chosen configs of each (``config_index[g]``: (k_g,) int64)."""
    ptr = offsets([e.num_nodes for e in examples])
    edges = torch.cat([e.edge_index + ptr[g] for g, e in enumerate(examples)], dim=1)
    labeled = all(e.runtime is not None for e in examples)
    return TileBatch(
        node_feat=torch.cat([e.node_feat for e in examples]),
        node_opcode=torch.cat([e.node_opcode for e in examples]),
        edge_index=edges,
        ptr=ptr,
        config_feat=torch.cat([e.config_feat[i] for e, i in zip(examples, config_index, strict=True)]),
        config_graph=torch.cat(
            [torch.full((len(i),), g, dtype=torch.int64) for g, i in enumerate(config_index)]
        ),
        runtime=(
            torch.cat([e.runtime[i] for e, i in zip(examples, config_index, strict=True)])
            if labeled else None
        ),
    )


# --------------------------------------------------------------------------------------------------
# Layout batches


@dataclass
class LayoutBatch:
    """Several layout graphs as one disjoint graph (a step of several graphs, ``train.kind_plan``): their
    nodes, edges, configurable nodes and the links between those placed one graph after the other, so one
    pass of the model serves all of them (``LayoutRanker.score_graphs``).

    Shapes: G graphs, NC configurable nodes in all; ``inputs`` is the union as one ``LayoutInputs``
    (its ``links`` set).
    """

    inputs: LayoutInputs
    config_ptr: torch.Tensor  # (G + 1,) int64: graph g owns configurable nodes config_ptr[g]:config_ptr[g+1]

    def to(self, device: torch.device | str) -> LayoutBatch:
        return LayoutBatch(self.inputs.to(device), self.config_ptr.to(device))


def layout_batch(parts: list[LayoutInputs]) -> LayoutBatch:
    """The disjoint union of layout graphs (each graph's links computed once, then offset)."""
    nodes = offsets([p.num_nodes for p in parts])
    config_ptr = offsets([int(p.config_node_ids.shape[0]) for p in parts])
    union = LayoutInputs(
        node_feat=torch.cat([p.node_feat for p in parts]),
        node_opcode=torch.cat([p.node_opcode for p in parts]),
        edge_index=torch.cat([p.edge_index + nodes[g] for g, p in enumerate(parts)], dim=1),
        config_node_ids=torch.cat([p.config_node_ids + nodes[g] for g, p in enumerate(parts)]),
        common_rows=torch.cat([p.common_rows for p in parts]),
        links=torch.cat([p.config_links() + config_ptr[g] for g, p in enumerate(parts)], dim=1),
    )
    return LayoutBatch(union, config_ptr)
