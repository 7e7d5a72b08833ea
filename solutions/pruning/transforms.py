"""The pruning transforms: which nodes a layout graph keeps, each a named, registered step.

=================================  ============================================================
``ConfigurableOnly(keep_edges)``   configurable nodes only; no edges (default) or the edges
                                   between two configurable nodes
``OneHop()``                       configurable nodes and every neighbour, both directions
                                   (1st place: 6.2x fewer nodes on layout:xla:random)
``KHopToConsumers(k, producers)``  configurable nodes, nodes within ``k`` hops toward consumers
                                   and optionally ``producers`` hops toward producers
``MergeDroppedRuns(selection)``    the nodes ``selection`` keeps, plus one virtual node per
                                   connected run of dropped nodes (3rd place)
=================================  ============================================================

Each wraps an operation of ``graph_ops`` and is registered under a pruning name (``base``). The
examples use ``example_graph()``, the 8-node graph drawn in ``solutions.pruning`` (built in
``tests/graph_builders.py``).
"""

from __future__ import annotations

import numpy as np

from competition.data.graphs import LayoutGraph
from solutions.pruning.base import (
    STEPS,
    GraphTransform,
    NodeSelection,
    no_args,
    parse_count,
    parse_step,
    register_step,
)
from solutions.pruning.graph_ops import (
    AGGREGATES,
    VIRTUAL_OPCODE,
    PruneResult,
    check_layout_graph,
    configurable_mask,
    merge_dropped_runs,
    neighbourhood_mask,
    prune_to_selection,
)


@register_step
class ConfigurableOnly(NodeSelection):
    """Keep only the configurable nodes. Pruning names ``configurable`` and ``configurable:edges``.

    Arguments:
        keep_edges: False (default): no edges at all, the winners' "configurable nodes only" variant
            (a set model over configurable nodes). True: keep the edges whose two ends are both
            configurable (rare: a configurable node directly consuming another one).

    >>> pruned = ConfigurableOnly().prune(example_graph())
    >>> pruned.new_to_old, pruned.graph.node_config_ids, pruned.graph.edge_index.shape
    (array([2, 6]), array([0, 1]), (0, 2))
    """

    keyword = "configurable"
    syntax = ("configurable", "configurable:edges")
    summary = "configurable nodes only, without edges (:edges keeps the edges between two of them)"

    def __init__(self, keep_edges: bool = False) -> None:
        self.keep_edges = bool(keep_edges)

    @property
    def name(self) -> str:
        return f"configurable_only(keep_edges={self.keep_edges})"

    @property
    def setting(self) -> str:
        return "configurable:edges" if self.keep_edges else "configurable"

    @classmethod
    def from_args(cls, args: list[str]) -> ConfigurableOnly:
        if args not in ([], ["edges"]):
            raise ValueError(f"configurable takes nothing or ':edges', got {':'.join(args)!r}")
        return cls(keep_edges=bool(args))

    def select(self, graph: LayoutGraph) -> np.ndarray:
        return configurable_mask(graph)

    def prune(self, graph: LayoutGraph) -> PruneResult:
        check_layout_graph(graph)
        return prune_to_selection(graph, self.select(graph), keep_edges=self.keep_edges)


@register_step
class OneHop(NodeSelection):
    """Keep the configurable nodes and every node adjacent to one, in both directions (1st place).

    Pruning name ``onehop``: the GNN's default (``solutions.methods.gnn.settings.DEFAULT_PRUNING``).

    Adjacent means one edge away: the producers a configurable node reads and the consumers of its
    output. Edges between any two kept nodes are kept.

    >>> pruned = OneHop().prune(example_graph())   # node 4 (negate) touches no configurable node
    >>> pruned.new_to_old
    array([0, 1, 2, 3, 5, 6, 7])
    >>> pruned.graph.edge_index.tolist()
    [[2, 0], [2, 1], [3, 2], [4, 0], [5, 1], [5, 4], [6, 5]]
    >>> pruned.graph.node_config_ids
    array([2, 5])
    """

    keyword = "onehop"
    syntax = ("onehop",)
    summary = "configurable nodes and every neighbour, both directions (the gnn's default)"

    @property
    def name(self) -> str:
        return "one_hop"

    @property
    def setting(self) -> str:
        return "onehop"

    @classmethod
    def from_args(cls, args: list[str]) -> OneHop:
        return no_args("onehop", args, cls)

    def select(self, graph: LayoutGraph) -> np.ndarray:
        return neighbourhood_mask(graph, consumer_hops=1, producer_hops=1)


@register_step
class KHopToConsumers(NodeSelection):
    """Keep the configurable nodes and the nodes within ``k`` hops toward their consumers.

    Pruning names ``khop:K`` and ``khop:K:P`` (``k=K``, ``producers=P``).

    A layout choice is felt downstream: every user of a configurable node's output may need its
    operand relaid out (a copy/transpose). Following consumer edges ``k`` times (k = 3..5 in the
    winners' write-ups) keeps those users and their users. ``producers`` adds the nodes within that
    many hops toward producers (the operands whose layouts the node reads); the two directions grow
    separately from the configurable nodes (no zig-zag paths). ``KHopToConsumers(1, producers=1)``
    keeps the same nodes as ``OneHop()``.

    Arguments:
        k: hops toward consumers, >= 0 (0 keeps only the configurable nodes, with their edges).
        producers: hops toward producers, >= 0 (default 0: consumers only).

    >>> pruned = KHopToConsumers(2).prune(example_graph())   # 2 -> 3 -> 4, and 6 -> 7
    >>> pruned.new_to_old
    array([2, 3, 4, 6, 7])
    >>> pruned.graph.edge_index.tolist(), pruned.graph.node_config_ids
    ([[1, 0], [2, 1], [4, 3]], array([0, 3]))
    """

    keyword = "khop"
    syntax = ("khop:K", "khop:K:P")
    summary = "configurable nodes and those within K hops toward consumers (and P toward producers)"

    def __init__(self, k: int = 3, producers: int = 0) -> None:
        if int(k) != k or k < 0 or int(producers) != producers or producers < 0:
            raise ValueError(f"k and producers must be integers >= 0, got k={k!r}, producers={producers!r}")
        self.k, self.producers = int(k), int(producers)

    @property
    def name(self) -> str:
        return f"khop_to_consumers(k={self.k},producers={self.producers})"

    @property
    def setting(self) -> str:
        return f"khop:{self.k}:{self.producers}" if self.producers else f"khop:{self.k}"

    @classmethod
    def from_args(cls, args: list[str]) -> KHopToConsumers:
        if len(args) not in (1, 2):
            raise ValueError(f"khop takes K or K:P (khop:3, khop:3:1), got {':'.join(['khop', *args])!r}")
        k = parse_count(args[0], "khop's K (hops toward consumers)")
        producers = parse_count(args[1], "khop's P (hops toward producers)") if len(args) == 2 else 0
        return cls(k, producers=producers)

    def select(self, graph: LayoutGraph) -> np.ndarray:
        return neighbourhood_mask(graph, consumer_hops=self.k, producer_hops=self.producers)


@register_step
class MergeDroppedRuns(GraphTransform):
    """Keep what ``selection`` keeps and merge each connected run of dropped nodes into one node (3rd place).

    Pruning names ``merged`` (the default selection) and ``merged:SELECTION`` (``merged:onehop``,
    ``merged:khop:3``); the non-default ``aggregate`` and ``opcode`` have no name.

    A run is a connected component of the dropped nodes, edges taken in both directions and only
    between dropped nodes. Each run becomes one virtual node, connected to every kept node that one
    of its members was connected to, in the same direction (``[kept, virtual]`` when the kept node
    consumed a member's output, ``[virtual, kept]`` when a member consumed the kept node's output).
    Edges inside a run vanish; edges between kept nodes are all kept (the selection's own edge rule,
    e.g. ``ConfigurableOnly(keep_edges=False)``, does not apply here).

    Virtual node features: ``node_feat`` is the ``aggregate`` over the run's members of their raw
    features (``"mean"``, the default, keeps the virtual node on the scale of a real node, so the same
    log scaling applies downstream; ``"sum"`` adds them), accumulated in float64, stored float32; the
    number of members is ``PruneResult.member_counts``. ``node_opcode`` is ``opcode``: default 0,
    "unknown" in the released table (real nodes with an unrecognised opcode share it); pass an unused
    id such as 121 to give virtual nodes an embedding of their own.

    Order: kept nodes keep their relative order; each virtual node is placed among them so that
    ``u > v`` holds on its edges when possible. Virtual nodes only touch kept nodes, so each run is
    placed on its own: at its first (lowest) member's position, or, when that comes before a kept
    node the run reads, right after the last kept node it reads, provided that still precedes the
    first kept node reading the run. Hence every edge whose consumer is a kept node has ``u > v``,
    and every edge has ``u > v`` unless some run reads a kept node that comes at or after a kept
    node reading the run: no order keeping the kept nodes' order can serve both, and the merged
    graph can even have cycles (a run that both feeds and consumes a kept node becomes a 2-cycle).
    Such a run stays at its first member. Edges are re-sorted by ``(u, v)``; check
    ``PruneResult.is_topological`` before relying on ``u > v``.

    Arguments:
        selection: which nodes stay themselves (default ``ConfigurableOnly()``).
        aggregate: ``"mean"`` or ``"sum"`` for the virtual nodes' features.
        opcode: ``node_opcode`` of virtual nodes (0..255).

    >>> pruned = MergeDroppedRuns().prune(example_graph())
    >>> pruned.new_to_old       # runs {0, 3, 4, 5}, {1} and {7} become virtual nodes 0, 1 and 4
    array([-1, -1,  2,  6, -1])
    >>> pruned.old_to_new
    array([0, 1, 2, 0, 0, 0, 3, 4])
    >>> pruned.graph.edge_index.tolist(), pruned.is_topological
    ([[0, 2], [2, 0], [2, 1], [3, 0], [3, 1], [4, 3]], False)
    >>> pruned.graph.node_feat[0, 0]   # mean of node_feat[:, 0] (= node id) over members 0, 3, 4, 5
    np.float32(3.0)
    """

    keyword = "merged"
    syntax = ("merged", "merged:SELECTION")
    summary = ("configurable nodes (or what SELECTION, a name above, keeps), each connected run of "
               "the other nodes merged into one node")

    def __init__(
        self, selection: NodeSelection | None = None, *, aggregate: str = "mean", opcode: int = VIRTUAL_OPCODE
    ) -> None:
        if aggregate not in AGGREGATES:
            raise ValueError(f"unknown aggregate {aggregate!r}; expected one of {', '.join(AGGREGATES)}")
        if not 0 <= int(opcode) <= 255:
            raise ValueError(f"opcode must fit node_opcode's uint8 (0..255), got {opcode!r}")
        self.selection = selection if selection is not None else ConfigurableOnly()
        if not isinstance(self.selection, NodeSelection):
            raise TypeError("selection must be a node selection (ConfigurableOnly, OneHop, ...), got "
                            f"{selection!r}")
        self.aggregate, self.opcode = aggregate, int(opcode)

    @property
    def name(self) -> str:
        return f"merge_dropped_runs({self.selection.name},aggregate={self.aggregate},opcode={self.opcode})"

    @property
    def setting(self) -> str | None:
        selection = self.selection.setting
        if selection is None or self.aggregate != "mean" or self.opcode != VIRTUAL_OPCODE:
            return None
        return "merged" if self.selection == ConfigurableOnly() else f"merged:{selection}"

    @classmethod
    def from_args(cls, args: list[str]) -> MergeDroppedRuns:
        if not args:
            return cls()
        selection = parse_step(":".join(args))
        if not isinstance(selection, NodeSelection):
            raise ValueError(f"merged:SELECTION takes a node selection ({', '.join(_selection_names())}), "
                             f"got {':'.join(args)!r}")
        return cls(selection)

    def prune(self, graph: LayoutGraph) -> PruneResult:
        check_layout_graph(graph)
        return merge_dropped_runs(graph, self.selection.select(graph), aggregate=self.aggregate,
                                  opcode=self.opcode)


def _selection_names() -> list[str]:
    return [spelling for cls in STEPS.values() if issubclass(cls, NodeSelection) for spelling in cls.syntax]
