"""Graph Segment Training (GST) of the layout GNN: back-propagate through a few segments per step.

GST is the TpuGraphs paper's answer to layout graphs too large for one device (Phothilimthana et al.,
"TpuGraphs: A Performance Prediction Dataset on Large Tensor Computational Graphs", arXiv:2308.13490;
the method itself: Cao et al., "Learning Large Graph Property Prediction via Graph Segment
Training", arXiv:2305.12322). Full-graph training keeps every node's activations of every sampled
config for the backward pass: (B configs x n nodes x h) per tensor, several tensors per layer, which
for the largest xla graph unpruned (43,615 nodes) is gigabytes per step. GST bounds it by the
segment size instead of the graph size.

**Segments** (``graph_segments``): each graph is cut into segments of at most ``segment_size`` nodes
along its topological order (the released node order is topological; a pruned graph whose order is
not is sorted first), so most edges stay inside a segment. When the graph's HLO computations
(``node_splits``) are each at most ``segment_size`` nodes, segments are whole computations packed in
order; a larger computation is cut into equal runs. Message passing runs inside a segment only
(edges between segments are cut during training).

**A step** (``gst_layout_loss``): sample ``layout_configs_per_graph`` configs as usual, pick
``segments_per_step`` segments at random, and run them with gradients: each gives per config the
mean and the max of its node states, which is all the model's pooling needs (the graph's mean is
the size-weighted mean of segment means, its max the max of segment maxes). Every other segment
contributes its *historical* mean and max for that config from the ``EmbeddingTable``, written the
last time that (config, segment) pair was computed, with no gradient. **Stale-embedding dropout**
drops each historical entry with probability ``stale_dropout`` (it is left out of the mean and the
max); an entry never computed yet is always left out. The fresh segments' values are written back
after the step. A segment without configurable nodes has the same value for every config and is
written for all of them at once.

**Inference** runs the unchanged full-graph model (``LayoutRanker.forward``, every edge kept): the
saved weights are an ordinary layout model, and validation during training scores the full graph
too. Training sees segment-local neighbourhoods; the edges it never saw (those crossing a segment
boundary) are a small share when segments follow the topological order.

**The table** holds, per graph, a (configs x segments x 2 x h) float16 array and a filled flag per
(config, segment): 4h bytes per pair, e.g. 10,000 configs x 44 segments x h = 32 -> 56 MB. It
lives in memory, or (``table_dir``: ``--cache-dir``) in memory-mapped files in a folder of its own
under the cache directory, removed when training ends; only the pages of the configs a step touches
are read.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from solutions.methods.gnn.data import LayoutExample, LayoutInputs
from solutions.methods.gnn.model import LayoutRanker

FLOAT16_MAX = float(np.finfo(np.float16).max)


# --------------------------------------------------------------------------------------------------
# Segments


def topological_order(num_nodes: int, edge_index: np.ndarray) -> np.ndarray:
    """Node ids in an order where every producer comes before its consumers: (n,) int64.

    ``edge_index`` is (2, m) ``[producer, consumer]``. The identity when the ids already are one
    (released graphs are); otherwise Kahn's algorithm one level at a time, smallest id first within a
    level. Nodes on a cycle (not a DAG: never in HLO) are appended in id order.
    """
    producer, consumer = np.asarray(edge_index[0], np.int64), np.asarray(edge_index[1], np.int64)
    if producer.size == 0 or bool((producer < consumer).all()):
        return np.arange(num_nodes, dtype=np.int64)
    indegree = np.bincount(consumer, minlength=num_nodes)
    order_by_producer = np.argsort(producer, kind="stable")
    starts = np.searchsorted(producer[order_by_producer], np.arange(num_nodes + 1))
    placed = np.zeros(num_nodes, dtype=bool)
    levels, frontier = [], np.flatnonzero(indegree == 0)
    while frontier.size:
        levels.append(frontier)
        placed[frontier] = True
        out = np.concatenate([order_by_producer[starts[u]:starts[u + 1]] for u in frontier])
        targets = consumer[out]
        np.subtract.at(indegree, targets, 1)
        frontier = np.unique(targets[indegree[targets] == 0])
    levels.append(np.flatnonzero(~placed))
    return np.concatenate(levels).astype(np.int64)


def _equal_runs(nodes: np.ndarray, segment_size: int) -> list[np.ndarray]:
    """``nodes`` cut into the fewest runs of at most ``segment_size``, of near-equal sizes."""
    parts = -(-nodes.shape[0] // segment_size)
    return [run for run in np.array_split(nodes, max(1, parts)) if run.size]


def graph_segments(num_nodes: int, edge_index: np.ndarray, node_splits: np.ndarray | None,
                   segment_size: int) -> list[np.ndarray]:
    """The segments of one graph: a list of sorted (s,) int64 node-id arrays covering every node once.

    At most ``segment_size`` nodes each. Whole HLO computations (``node_splits``, start offsets) packed
    in order when the node order is topological and every computation fits; otherwise runs of the
    topological order. A graph of at most ``segment_size`` nodes is one segment.
    """
    if segment_size < 1:
        raise ValueError(f"segment_size must be >= 1, got {segment_size}")
    if num_nodes <= segment_size:
        return [np.arange(num_nodes, dtype=np.int64)]
    order = topological_order(num_nodes, edge_index)
    identity = bool((order == np.arange(num_nodes)).all())
    starts = None if node_splits is None else np.unique(np.asarray(node_splits, np.int64).reshape(-1))
    if identity and starts is not None and starts.size > 1:
        starts = starts[(starts >= 0) & (starts < num_nodes)]
        bounds = np.concatenate([[0], starts[starts > 0], [num_nodes]])
        sizes = np.diff(bounds)
        if sizes.max() <= segment_size:
            segments, first = [], 0
            for start, end in zip(bounds[:-1], bounds[1:], strict=True):
                if end - first > segment_size:  # the computation does not fit: close the segment before it
                    segments.append(np.arange(first, start, dtype=np.int64))
                    first = start
            segments.append(np.arange(first, num_nodes, dtype=np.int64))
            return segments
    return [np.sort(run) for run in _equal_runs(order, segment_size)]


@dataclass
class Segment:
    """One segment of a layout graph, as the model reads it.

    Shapes: s nodes, k configurable nodes in the segment.
    """

    inputs: LayoutInputs  # the induced subgraph (local ids; edges inside the segment only)
    config_slots: torch.Tensor  # (k,) int64 positions of its configurable nodes among the graph's nc

    @property
    def num_nodes(self) -> int:
        return self.inputs.num_nodes


def segment_example(example: LayoutExample, segment_size: int) -> list[Segment]:
    """Cut one layout example into ``Segment`` s (``graph_segments``)."""
    inputs = example.inputs
    n = inputs.num_nodes
    edges = inputs.edge_index.numpy()
    parts = graph_segments(n, edges, example.node_splits, segment_size)
    owner = np.empty(n, dtype=np.int64)
    local = np.empty(n, dtype=np.int64)
    for s, nodes in enumerate(parts):
        owner[nodes], local[nodes] = s, np.arange(nodes.shape[0])
    inside = owner[edges[0]] == owner[edges[1]]
    edge_owner = owner[edges[0]]
    config_ids = inputs.config_node_ids.numpy()
    config_owner = owner[config_ids]
    segments = []
    for s, nodes in enumerate(parts):
        seg_edges = edges[:, inside & (edge_owner == s)]
        slots = np.flatnonzero(config_owner == s)
        index = torch.from_numpy(nodes)
        segments.append(Segment(
            inputs=LayoutInputs(
                node_feat=inputs.node_feat[index], node_opcode=inputs.node_opcode[index],
                edge_index=torch.from_numpy(local[seg_edges]),
                config_node_ids=torch.from_numpy(local[config_ids[slots]]),
                common_rows=inputs.common_rows[torch.from_numpy(slots)],
            ),
            config_slots=torch.from_numpy(slots),
        ))
    return segments


# --------------------------------------------------------------------------------------------------
# The historical embedding table


class EmbeddingTable:
    """Historical pooled node states of one graph: per (config, segment), the mean and the max (h each).

    Stored float16 (stale values are approximations anyway; half the bytes), in memory or in a
    memory-mapped file under ``folder``. ``filled`` says which pairs were ever written.
    """

    def __init__(self, num_configs: int, num_segments: int, hidden: int, folder: Path | None = None,
                 name: str = "table") -> None:
        shape = (num_configs, num_segments, 2, hidden)
        if folder is None:
            self.values = np.zeros(shape, dtype=np.float16)
            self.filled = np.zeros((num_configs, num_segments), dtype=bool)
        else:  # sparse files: pages never written take no disk and read as zeros
            self.values = np.lib.format.open_memmap(folder / f"{name}.values.npy", mode="w+",
                                                    dtype=np.float16, shape=shape)
            self.filled = np.lib.format.open_memmap(folder / f"{name}.filled.npy", mode="w+", dtype=bool,
                                                    shape=shape[:2])

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes + self.filled.nbytes)

    def read(self, configs: np.ndarray,
             segments: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(B,) configs, (S',) segments -> mean (B, S', h), max (B, S', h) float32, filled (B, S') bool."""
        values = self.values[configs][:, segments].astype(np.float32)
        filled = self.filled[configs][:, segments]
        return torch.from_numpy(values[:, :, 0]), torch.from_numpy(values[:, :, 1]), torch.from_numpy(filled)

    def write(self, configs: np.ndarray | None, segment: int, mean: torch.Tensor,
              maximum: torch.Tensor) -> None:
        """Store (B, h) mean and max of ``segment`` for ``configs`` (B,); None: (1, h) for every config."""
        pooled = torch.stack([mean, maximum], dim=1).detach().float().clamp(-FLOAT16_MAX, FLOAT16_MAX)
        pooled = pooled.cpu().numpy().astype(np.float16)
        if configs is None:
            self.values[:, segment] = pooled[0]
            self.filled[:, segment] = True
        else:
            self.values[configs, segment] = pooled
            self.filled[configs, segment] = True


class SegmentTraining:
    """What GST keeps across steps: each training graph's segments and embedding table.

    Built lazily, graph by graph, on first use. ``table_dir``: a folder (the cache directory) in which
    a private sub-folder holds the tables as memory-mapped files; ``close`` removes it.
    """

    def __init__(self, segment_size: int, hidden: int, table_dir: Path | None = None) -> None:
        self.segment_size, self.hidden = segment_size, hidden
        self.folder = None
        if table_dir is not None:
            Path(table_dir).mkdir(parents=True, exist_ok=True)
            self.folder = Path(tempfile.mkdtemp(prefix="gst-tables-", dir=table_dir))
        self._segments: dict[int, list[Segment]] = {}
        self._tables: dict[int, EmbeddingTable] = {}

    def segments(self, key: int, example: LayoutExample) -> list[Segment]:
        if key not in self._segments:
            self._segments[key] = segment_example(example, self.segment_size)
        return self._segments[key]

    def graph(self, key: int, example: LayoutExample) -> tuple[list[Segment], EmbeddingTable]:
        """The segments and the embedding table of training graph ``key`` (made on first use)."""
        segments = self.segments(key, example)
        if key not in self._tables:
            self._tables[key] = EmbeddingTable(example.num_configs, len(segments), self.hidden, self.folder,
                                               name=str(key))
        return segments, self._tables[key]

    def prepare(self, examples: list[LayoutExample]) -> bool:
        """Cut every graph into segments now (the tables stay unallocated); whether a segment lacks
        configurable nodes (its steps then leave the config parameters without a gradient)."""
        config_free = False
        for key, example in enumerate(examples):
            segments = self.segments(key, example)
            config_free |= any(not segment.config_slots.numel() for segment in segments)
        return config_free

    @property
    def num_segments(self) -> int:
        """Segments over the graphs trained on so far."""
        return sum(len(segments) for segments in self._segments.values())

    @property
    def table_bytes(self) -> int:
        return sum(table.nbytes for table in self._tables.values())

    def close(self) -> None:
        self._segments.clear()
        self._tables.clear()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


# --------------------------------------------------------------------------------------------------
# One step


def segment_pool(model: LayoutRanker, segment: Segment, digits: torch.Tensor, *, device: torch.device,
                 dedup_rows: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and max of a segment's node states for each config: (B, nc, 18) digits -> (B, h), (B, h).

    A segment without configurable nodes is computed once and broadcast to every config.
    """
    inputs = segment.inputs.to(device)
    batch = digits.shape[0]
    # no configurable node: one config's worth (every config gives the same states)
    local = digits[:, segment.config_slots.to(device)] if segment.config_slots.numel() else digits[:1, :0]
    x = model.propagate(inputs, model.encode_nodes(inputs), local, dedup_rows=dedup_rows)
    mean, maximum = x.mean(dim=1), x.amax(dim=1)
    return mean.expand(batch, -1), maximum.expand(batch, -1)


def gst_layout_scores(model: LayoutRanker, example: LayoutExample, segments: list[Segment],
                      table: EmbeddingTable, index: torch.Tensor, *, segments_per_step: int,
                      stale_dropout: float, rng: np.random.Generator, device: torch.device,
                      dedup_rows: bool) -> torch.Tensor:
    """Scores (B,) of the configs ``index`` (B,) with ``segments_per_step`` fresh segments, the rest
    historical.

    Writes the fresh segments' values into ``table``.
    """
    digits = example.configs.digits(index).to(device)
    configs = index.numpy()
    fresh = np.sort(rng.choice(len(segments), size=min(segments_per_step, len(segments)), replace=False))
    total, count, maxima = None, torch.zeros((), device=device), []
    for s in fresh:
        segment = segments[s]
        mean, maximum = segment_pool(model, segment, digits, device=device, dedup_rows=dedup_rows)
        weighted = mean * segment.num_nodes
        total = weighted if total is None else total + weighted
        count = count + segment.num_nodes
        maxima.append(maximum)
        if segment.config_slots.numel():
            table.write(configs, int(s), mean, maximum)
        else:  # the same value for every config
            table.write(None, int(s), mean[:1], maximum[:1])
    count = count.expand(len(configs))
    maximum = torch.stack(maxima).amax(dim=0)
    stale = np.setdiff1d(np.arange(len(segments)), fresh)
    if stale.size:
        old_mean, old_max, filled = table.read(configs, stale)
        keep = filled & torch.from_numpy(rng.random(filled.shape) >= stale_dropout)
        sizes = torch.tensor([segments[s].num_nodes for s in stale], dtype=old_mean.dtype)
        weight = (keep * sizes).to(device)  # (B, S')
        total = total + (old_mean.to(device) * weight.unsqueeze(-1)).sum(dim=1)
        count = count + weight.sum(dim=1)
        old_max = old_max.to(device).masked_fill(~keep.to(device).unsqueeze(-1), -torch.inf)
        maximum = torch.maximum(maximum, old_max.amax(dim=1))
    mean = total / count.unsqueeze(-1)
    engineered = example.engineered_rows(index, device)
    return (model.score_pooled(model.add_engineered(torch.cat([mean, maximum], dim=-1), engineered))
            + model.prior(engineered))
