"""The graph operations behind the pruning transforms: node masks, induced subgraphs, merged runs.

Everything here works on arrays and knows nothing of transform names: ``solutions.pruning.transforms``
wraps these operations as named, composable objects. Usable directly, e.g. to prune to a mask of
your own (``prune_to_selection(graph, keep)``) or to label the components of any undirected graph.

- ``PruningStats`` and ``PruneResult``: what every operation returns (the pruned graph, the node
  mapping both ways, sizes before and after; ``PruneResult.gather`` maps any per-node array);
- ``configurable_mask``, ``neighbourhood_mask``: which nodes a selection keeps;
- ``prune_to_selection``: the subgraph induced by a node mask;
- ``merge_dropped_runs``: a node mask, with each connected run of dropped nodes merged into one node;
- ``connected_components``: scipy's C labelling when scipy is installed (``WITH_SCIPY``), a numpy
  hook-and-shortcut labelling otherwise; both give the same partition.

Neighbourhoods grow by frontier (one boolean gather per hop over all edges); nothing loops over
nodes in Python. The conventions of every result are listed in ``solutions.pruning``.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

import numpy as np

from competition.data.graphs import LayoutGraph

# opcode of merged nodes: 0 is "unknown" in the released opcode table (docs/competition.md)
VIRTUAL_OPCODE = 0
AGGREGATES = ("mean", "sum")

# Optional extra, detected once: scipy's C connected components; a numpy labelling otherwise.
# Tests and benchmarks switch it off here (``graph_ops.WITH_SCIPY = False``) to run the numpy path.
WITH_SCIPY = importlib.util.find_spec("scipy") is not None


# --------------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class PruningStats:
    """Sizes before and after pruning, for reports."""

    nodes_before: int
    nodes_after: int
    edges_before: int
    edges_after: int
    configurable: int

    @classmethod
    def of(cls, before: LayoutGraph, after: LayoutGraph) -> PruningStats:
        return cls(before.num_nodes, after.num_nodes, before.num_edges, after.num_edges,
                   before.num_configurable_nodes)

    @property
    def node_ratio(self) -> float:
        """Fraction of nodes kept (1.0 for an empty input)."""
        return self.nodes_after / self.nodes_before if self.nodes_before else 1.0

    @property
    def edge_ratio(self) -> float:
        """Fraction of edges kept (1.0 for an input without edges)."""
        return self.edges_after / self.edges_before if self.edges_before else 1.0

    @property
    def node_reduction(self) -> float:
        """How many times fewer nodes (``inf`` when none are left)."""
        return self.nodes_before / self.nodes_after if self.nodes_after else float("inf")

    @property
    def edge_reduction(self) -> float:
        """How many times fewer edges (``inf`` when none are left)."""
        return self.edges_before / self.edges_after if self.edges_after else float("inf")

    def as_dict(self) -> dict[str, float]:
        return {
            "nodes_before": self.nodes_before,
            "nodes_after": self.nodes_after,
            "edges_before": self.edges_before,
            "edges_after": self.edges_after,
            "configurable": self.configurable,
            "node_reduction": self.node_reduction,
            "edge_reduction": self.edge_reduction,
        }

    def summary(self) -> str:
        """``'43,615 -> 9,294 nodes (4.7x), 72,000 -> 6,372 edges (11.3x)'``."""
        return (
            f"{self.nodes_before:,} -> {self.nodes_after:,} nodes ({_times(self.node_reduction)}), "
            f"{self.edges_before:,} -> {self.edges_after:,} edges ({_times(self.edge_reduction)})"
        )


def _times(reduction: float) -> str:
    return "all removed" if reduction == float("inf") else f"{reduction:.1f}x"


@dataclass(frozen=True)
class PruneResult:
    """A pruned graph and how its nodes relate to the input's.

    A node of the pruned graph is either a kept input node or a virtual node standing for a run of
    dropped input nodes (``MergeDroppedRuns`` only).
    """

    graph: LayoutGraph  # the pruned graph
    old_to_new: np.ndarray  # (n_old,) int64: pruned node standing for each input node; -1 = dropped
    new_to_old: np.ndarray  # (n_new,) int64: input node of each kept node; -1 = virtual node
    stats: PruningStats

    @property
    def is_virtual(self) -> np.ndarray:
        """(n_new,) bool: nodes that stand for merged runs rather than one input node."""
        return self.new_to_old < 0

    @property
    def member_counts(self) -> np.ndarray:
        """(n_new,) int64: input nodes each pruned node stands for (1 for a kept node)."""
        members = self.old_to_new[self.old_to_new >= 0]
        return np.bincount(members, minlength=self.graph.num_nodes).astype(np.int64)

    @property
    def is_topological(self) -> bool:
        """Whether every edge ``[u, v]`` of the pruned graph still has ``u > v``."""
        edges = self.graph.edge_index
        return bool((edges[:, 0] > edges[:, 1]).all())

    def gather(self, values: np.ndarray, *, aggregate: str = "mean") -> np.ndarray:
        """Per-node values of the input graph -> per-node values of the pruned graph.

        Kept nodes take their own row; a virtual node takes the ``aggregate`` (``"mean"`` or ``"sum"``,
        accumulated in float64) over the input nodes it stands for. (After ``Compose`` with two merges,
        ``graph.node_feat`` of a virtual node aggregates the intermediate graph's nodes, a mean of
        means, while ``gather`` aggregates the original members directly.)

        Shapes: (n_old, ...) -> (n_new, ...); float dtypes are kept, integer rows of virtual nodes
        make the result float64.
        """
        if aggregate not in AGGREGATES:
            raise ValueError(f"unknown aggregate {aggregate!r}; expected one of {', '.join(AGGREGATES)}")
        values = np.asarray(values)
        if values.shape[:1] != self.old_to_new.shape:
            raise ValueError(f"values has shape {values.shape}; expected ({self.old_to_new.shape[0]}, ...) "
                             "per input node")
        if not self.is_virtual.any():
            return values[self.new_to_old]
        return _gather_with_virtual(values, self.old_to_new, self.new_to_old, aggregate)



# --------------------------------------------------------------------------------------------------
# Node masks, subgraphs, merged runs


def configurable_mask(graph: LayoutGraph) -> np.ndarray:
    """(n,) bool: True at the configurable nodes."""
    mask = np.zeros(graph.num_nodes, dtype=bool)
    mask[graph.node_config_ids] = True
    return mask


def neighbourhood_mask(graph: LayoutGraph, *, consumer_hops: int, producer_hops: int) -> np.ndarray:
    """(n,) bool: configurable nodes and the nodes within the given hops of one, per direction.

    Grown by frontier: each hop is one boolean gather over all edges (O(m)), no loop over nodes.
    """
    seeds = configurable_mask(graph)
    consumers, producers = graph.edge_index[:, 0], graph.edge_index[:, 1]
    reached = seeds.copy()
    for sources, targets, hops in ((producers, consumers, consumer_hops),
                                   (consumers, producers, producer_hops)):
        # Each direction has its own visited set: a node reached toward consumers must still be
        # expanded when the producer search reaches it.
        seen, frontier = seeds.copy(), seeds
        for _ in range(hops):
            step = np.zeros_like(seeds)
            step[targets[frontier[sources]]] = True
            frontier = step & ~seen
            if not frontier.any():
                break
            seen |= frontier
        reached |= seen
    return reached


def check_layout_graph(graph: object) -> None:
    """TypeError unless ``graph`` is a ``LayoutGraph``: the only kind with configurable nodes to prune
    toward."""
    task = getattr(graph, "task", None)
    if task is None or not task.has_configurable_nodes:  # nothing to prune toward
        raise TypeError(
            "pruning takes a LayoutGraph (tile graphs have no configurable nodes to prune toward), got "
            f"{type(graph).__name__}"
        )


def _remap_edges(edges: np.ndarray, old_to_new: np.ndarray, num_new: int) -> np.ndarray:
    """Map edge ends, drop edges touching dropped nodes and self-loops, deduplicate and sort by (u, v)."""
    mapped = old_to_new[edges]
    mapped = mapped[(mapped >= 0).all(axis=1) & (mapped[:, 0] != mapped[:, 1])]
    keys = np.unique(mapped[:, 0] * num_new + mapped[:, 1])  # one int64 key per row: sorts as (u, v)
    return np.stack([keys // max(num_new, 1), keys % max(num_new, 1)], axis=1).astype(np.int64)


def _remap_splits(node_splits: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Computation starts in the new numbering: the first new node at or after each old start.

    ``positions`` (n_new,) ascending: the input position each new node takes (x.5 for a virtual node
    placed right after input node x).
    """
    starts = np.searchsorted(positions, node_splits.reshape(-1), side="left")
    return np.unique(starts).astype(np.int64).reshape(1, -1)


def _assemble(
    graph: LayoutGraph,
    *,
    positions: np.ndarray,
    old_to_new: np.ndarray,
    new_to_old: np.ndarray,
    node_feat: np.ndarray,
    node_opcode: np.ndarray,
    edge_index: np.ndarray,
) -> PruneResult:
    pruned = LayoutGraph(
        node_feat=node_feat,
        node_opcode=node_opcode,
        edge_index=edge_index,
        config_runtime=graph.config_runtime,
        node_config_feat=graph.node_config_feat,
        node_config_ids=old_to_new[graph.node_config_ids].astype(np.int64),
        node_splits=_remap_splits(graph.node_splits, positions),
    )
    return PruneResult(pruned, old_to_new, new_to_old, PruningStats.of(graph, pruned))


def prune_to_selection(graph: LayoutGraph, keep: np.ndarray, *, keep_edges: bool = True) -> PruneResult:
    """The subgraph induced by the nodes where ``keep`` is True (configurable nodes are always added).

    Arguments:
        graph: the input layout graph.
        keep: (n,) bool mask of nodes to keep.
        keep_edges: keep the edges between kept nodes (True) or drop every edge (False).
    """
    keep = np.asarray(keep, dtype=bool).copy()
    if keep.shape != (graph.num_nodes,):
        raise ValueError(f"keep has shape {keep.shape}; expected ({graph.num_nodes},), one flag per node")
    keep[graph.node_config_ids] = True
    new_to_old = np.flatnonzero(keep).astype(np.int64)
    old_to_new = np.full(graph.num_nodes, -1, dtype=np.int64)
    old_to_new[new_to_old] = np.arange(new_to_old.shape[0])
    edges = _remap_edges(graph.edge_index, old_to_new,
                         new_to_old.shape[0]) if keep_edges else np.zeros((0, 2), np.int64)
    return _assemble(
        graph,
        positions=new_to_old,
        old_to_new=old_to_new,
        new_to_old=new_to_old,
        node_feat=graph.node_feat[new_to_old],
        node_opcode=graph.node_opcode[new_to_old],
        edge_index=edges,
    )


def merge_dropped_runs(
    graph: LayoutGraph, keep: np.ndarray, *, aggregate: str = "mean", opcode: int = VIRTUAL_OPCODE
) -> PruneResult:
    """Keep the nodes where ``keep`` is True; merge each connected run of the others into one node.

    See ``solutions.pruning.transforms.MergeDroppedRuns`` for the rules (features, opcode, order).
    """
    keep = np.asarray(keep, dtype=bool).copy()
    if keep.shape != (graph.num_nodes,):
        raise ValueError(f"keep has shape {keep.shape}; expected ({graph.num_nodes},), one flag per node")
    keep[graph.node_config_ids] = True
    kept_ids, dropped_ids = np.flatnonzero(keep), np.flatnonzero(~keep)

    # Runs: components of the subgraph of dropped nodes, numbered by their first member.
    dropped_index = np.cumsum(~keep) - 1  # position among dropped nodes
    edges = graph.edge_index
    inside = ~keep[edges[:, 0]] & ~keep[edges[:, 1]]
    labels = connected_components(dropped_ids.shape[0], dropped_index[edges[inside, 0]],
                                  dropped_index[edges[inside, 1]])
    _, first_member, run_of_dropped = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(first_member, kind="stable")  # run ids by first member (dropped_ids ascend)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.shape[0])
    run_of_dropped = rank[run_of_dropped.reshape(-1)]
    run_first = dropped_ids[first_member[order]]  # (r,) input position of each run's first member

    # Placement (see MergeDroppedRuns): a run moves to just after the last kept node it reads when
    # its first member comes earlier and the move keeps it before the first kept node reading it.
    num_runs = run_first.shape[0]
    run_of = np.full(graph.num_nodes, -1, dtype=np.int64)
    run_of[dropped_ids] = run_of_dropped
    u, v = edges[:, 0], edges[:, 1]
    reads = ~keep[u] & keep[v]  # a member consumes a kept node
    last_read = np.full(num_runs, -1, dtype=np.int64)
    np.maximum.at(last_read, run_of[u[reads]], v[reads])
    read_by = keep[u] & ~keep[v]  # a kept node consumes a member
    first_reader = np.full(num_runs, graph.num_nodes, dtype=np.int64)
    np.minimum.at(first_reader, run_of[v[read_by]], u[read_by])
    movable = (last_read > run_first) & (last_read < first_reader)
    run_position = np.where(movable, last_read + 0.5, run_first)

    # New order: kept nodes and runs by position (ties between runs: by first member).
    positions = np.concatenate([kept_ids, run_position]).astype(np.float64)
    new_order = np.lexsort((np.concatenate([kept_ids, run_first]), positions))
    new_id = np.empty_like(new_order)
    new_id[new_order] = np.arange(new_order.shape[0])
    num_new = positions.shape[0]
    old_to_new = np.empty(graph.num_nodes, dtype=np.int64)
    old_to_new[kept_ids] = new_id[: kept_ids.shape[0]]
    old_to_new[dropped_ids] = new_id[kept_ids.shape[0] :][run_of_dropped]
    new_to_old = np.full(num_new, -1, dtype=np.int64)
    new_to_old[new_id[: kept_ids.shape[0]]] = kept_ids

    node_feat = _gather_with_virtual(graph.node_feat, old_to_new, new_to_old, aggregate).astype(np.float32)
    node_opcode = np.full(num_new, opcode, dtype=np.uint8)
    node_opcode[new_to_old >= 0] = graph.node_opcode[new_to_old[new_to_old >= 0]]
    return _assemble(
        graph,
        positions=positions[new_order],
        old_to_new=old_to_new,
        new_to_old=new_to_old,
        node_feat=node_feat,
        node_opcode=node_opcode,
        edge_index=_remap_edges(edges, old_to_new, num_new),
    )


def _gather_with_virtual(values: np.ndarray, old_to_new: np.ndarray, new_to_old: np.ndarray,
                         aggregate: str) -> np.ndarray:
    """Rows of kept nodes copied; rows of virtual nodes aggregated over their members (float64)."""
    if aggregate not in AGGREGATES:
        raise ValueError(f"unknown aggregate {aggregate!r}; expected one of {', '.join(AGGREGATES)}")
    virtual = new_to_old < 0
    members = np.flatnonzero((old_to_new >= 0) & virtual[np.maximum(old_to_new, 0)])
    target = old_to_new[members]
    by_node = np.argsort(target, kind="stable")
    nodes, starts, counts = np.unique(target[by_node], return_index=True, return_counts=True)
    dtype = values.dtype if values.dtype.kind == "f" else np.float64
    out = np.zeros((new_to_old.shape[0], *values.shape[1:]), dtype=dtype)
    out[~virtual] = values[new_to_old[~virtual]]
    if nodes.size:
        sums = np.add.reduceat(values[members[by_node]], starts, axis=0, dtype=np.float64)
        if aggregate == "mean":
            sums /= counts.reshape(-1, *([1] * (values.ndim - 1)))
        out[nodes] = sums
    return out


def connected_components(num_nodes: int, a: np.ndarray, b: np.ndarray, *,
                         use_scipy: bool | None = None) -> np.ndarray:
    """Connected-component labels of an undirected graph given as edge ends ``a[i] -- b[i]``.

    Returns (num_nodes,) int64 labels; two nodes share a label exactly when they are connected.
    Label values are arbitrary (callers renumber). ``use_scipy`` defaults to ``WITH_SCIPY``.
    """
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    if num_nodes == 0:
        return np.zeros(0, np.int64)
    if use_scipy is None:
        use_scipy = WITH_SCIPY
    if use_scipy:
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import connected_components as scipy_components

        # int32 ones: duplicate edges are summed, and an int8 sum could wrap to 0 (a missing edge)
        adjacency = coo_matrix((np.ones(a.shape[0], np.int32), (a, b)), shape=(num_nodes, num_nodes))
        return scipy_components(adjacency, directed=False)[1].astype(np.int64)
    return _components_numpy(num_nodes, a, b)


def _components_numpy(num_nodes: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hook-and-shortcut labelling: each round hooks every root onto the smallest root it touches,
    then pointer-jumps until every node points at its root. parent[x] <= x always, so no cycles."""
    parent = np.arange(num_nodes, dtype=np.int64)
    while True:
        root_a, root_b = parent[a], parent[b]
        differ = root_a != root_b
        if not differ.any():
            return parent
        a, b = a[differ], b[differ]  # edges inside one component stay inside it: drop them
        low, high = np.minimum(root_a[differ], root_b[differ]), np.maximum(root_a[differ], root_b[differ])
        np.minimum.at(parent, high, low)
        while True:
            grand = parent[parent]
            if np.array_equal(grand, parent):
                break
            parent = grand
