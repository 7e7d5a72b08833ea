"""The GNN rankers: GraphSAGE in both edge directions; layout configs join at the configurable nodes, tile
configs late.

Both models share a node encoder (opcode embedding + MLP over the log-scaled ``node_feat``) and a
stack of ``BidirectionalSAGE`` layers; they differ in where the configuration enters.

**Layout** (``LayoutRanker``): a config sets one 18-d layout row per configurable node, so it joins
at those nodes. By default (``fusion="intermediate"``, below) it joins after message passing; with
``fusion="early"`` it joins before it (layouts then interact along edges: a producer and its consumer
disagreeing on a layout costs a copy). Early fusion's work splits in two:

1. config-independent, once per graph: ``encode_nodes`` (n, h);
2. config-dependent, once per config, all configs of a step batched: each configurable node's row
   is embedded (slot-digit embeddings summed, then an MLP that also reads the node's state; each
   distinct (node, row) pair is computed once and scattered back, ``dedup_rows=True``), added to the
   node's state, and the message-passing layers run on a (B, n, h) tensor: PyG's static-graph
   batching, where the same ``edge_index`` serves every config, so no ``Batch`` of B graph copies
   is built. After graph pruning n is small (configurable nodes and their neighbours), which is
   what keeps B x n cheap.

Then mean + max pooling over the nodes and an MLP give one score per config.

**Intermediate fusion** (``fusion="intermediate"``): message passing runs once per graph, without
the configs; each config then only touches its configurable nodes: the row network reads the
message-passed state of its node, ``config_layers`` layers mix the rows of configurable nodes that
are linked (directly or through one plain node, ``solutions.methods.gnn.data.configurable_links``: where a
producer's and a consumer's layouts can disagree), and mean + max pooling over the configurable
nodes feeds the head. A config then costs O(nc) instead of O(n) (nc configurable of n nodes), so a
step can score many more configs.

**Cross-config attention** (``config_attention=True``): before the head, each config's pooled
vector attends to the pooled vectors of other configs of the same graph (one pre-norm transformer
block, no positions), so the head judges a config against its peers rather than alone; in
default-search graphs, where configs differ in a few nodes, that difference is what matters.
During training the peers are the configs of the step; at prediction they are a fixed sample of
``attention_context`` configs of the graph (``context_index``), the same for every config, so the
scores of every chunk of configs are comparable.

**Tile** (``TileRanker``): the config is one 24-d vector per kernel, so the kernel graph is
encoded once (message passing, then mean + max pooling and the output node's state) and configs
join late: an MLP scores ``[graph, config, graph * config]`` for every config (the upstream
baseline's "late join"; one graph pass serves hundreds of configs).

Scores are runtime-like: lower = faster. Only their order within a graph matters (the losses in
``solutions.methods.gnn.train`` are ranking losses).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from competition.data.compact import LAYOUT_SLOTS
from competition.data.graphs import MAX_OPCODE
from competition.tasks import LAYOUT, NODE_FEAT_DIM, TILE, TILE_CONFIG_DIM, Task
from solutions.compute.accel import scatter_mean, segment
from solutions.features.layout import layout_feature_names
from solutions.features.log_scale import NODE_FEAT_COLUMNS
from solutions.methods.gnn.config_store import LAYOUT_DIGITS, LAYOUT_SLOTS_PER_ROW
from solutions.methods.gnn.data import Edges, LayoutBatch, LayoutInputs, TileBatch, config_vector_width
from solutions.methods.gnn.engineered import ENGINEERED_LAYOUT_COLUMNS
from solutions.methods.gnn.settings import FUSIONS, GNNConfig


def mlp(sizes: list[int], *, dropout: float = 0.0) -> nn.Sequential:
    """Linear layers with GELU between them (none after the last)."""
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(nn.GELU())
            if dropout:
                layers.append(nn.Dropout(dropout))
    return nn.Sequential(*layers)


def lookup(embedding: nn.Embedding, index: torch.Tensor) -> torch.Tensor:
    """``embedding(index)`` for a plain embedding (no padding index, max_norm or sparse gradient): the
    same values, and in backward the same gradient bytes (both add the rows up in index order), in one
    ``index_add_`` rather than the embedding backward's one call per index, which on CPU cost about 4x
    more at a few thousand indices (docs/gnn.md, "Training speed").

    Shapes: index (...) int64 -> (..., embedding_dim)."""
    return embedding.weight.index_select(0, index.reshape(-1)).view(*index.shape, embedding.embedding_dim)


class NodeEncoder(nn.Module):
    """Config-independent node state: ``MLP([node_feat, opcode embedding])``.

    Arguments:
        hidden: output width h.
        opcode_dim: width of the opcode embedding (ids 0..120; 0 = unknown).

    Shapes: node_feat (n, 140) float32 (scaled, ``solutions.features.log_scale``), node_opcode (n,) int64
    -> (n, h).
    """

    def __init__(self, hidden: int, opcode_dim: int = 32) -> None:
        super().__init__()
        self.opcode = nn.Embedding(MAX_OPCODE + 1, opcode_dim)
        self.mlp = mlp([NODE_FEAT_DIM + opcode_dim, hidden, hidden])

    def forward(self, node_feat: torch.Tensor, node_opcode: torch.Tensor) -> torch.Tensor:
        return self.mlp(torch.cat([node_feat, self.opcodes(node_opcode)], dim=-1))

    def opcodes(self, node_opcode: torch.Tensor) -> torch.Tensor:
        """The opcode embedding: (n,) -> (n, opcode_dim)."""
        return lookup(self.opcode, node_opcode)


class _SAGELinear(nn.Linear):
    """``nn.Linear`` initialised as PyTorch Geometric's ``Linear`` (kaiming-uniform over the inputs,
    ``a = sqrt(5)``, then a uniform bias): the same draws, so a seed builds the same weights."""

    def reset_parameters(self) -> None:
        bound = math.sqrt(6 / ((1 + math.sqrt(5) ** 2) * self.in_features))
        self.weight.data.uniform_(-bound, bound)
        if self.bias is not None:
            bias_bound = 1.0 / math.sqrt(self.in_features)
            self.bias.data.uniform_(-bias_bound, bias_bound)


class MeanSAGE(nn.Module):
    """GraphSAGE with a mean over in-neighbours: ``lin_l(mean_{j -> i} x_j) + lin_r(x_i)``.

    What ``torch_geometric.nn.SAGEConv(h, h, aggr="mean")`` computes, with the same parameters
    (``lin_l.weight``, ``lin_l.bias``, ``lin_r.weight``: models saved with ``SAGEConv`` load), the same
    initial draws and the same arithmetic in the same order (gather the sources, add them up per target
    in edge order, divide by the in-degree clamped at 1, then the two linear maps), so it gives the same
    bytes forward and backward (``tests/test_gnn.py``); it skips ``MessagePassing``'s generic
    machinery, which cost more than the layer's arithmetic on pruned graphs, and PyTorch Geometric is
    not imported. ``root_weight=False``: no ``lin_r`` term.

    Shapes: x (..., n, h); source, target (m,) int64 node ids of the edges ``source -> target``;
    count (n,) float32 or None: each node's in-degree clamped at 1 (``Edges``; None: counted here)
    -> (..., n, h).
    """

    def __init__(self, hidden: int, *, root_weight: bool = True) -> None:
        super().__init__()
        self.lin_l = _SAGELinear(hidden, hidden)
        self.lin_r = _SAGELinear(hidden, hidden, bias=False) if root_weight else None
        self.reset_parameters()  # drawn again, as SAGEConv does after building its layers

    def reset_parameters(self) -> None:
        self.lin_l.reset_parameters()
        if self.lin_r is not None:
            self.lin_r.reset_parameters()

    def forward(self, x: torch.Tensor, source: torch.Tensor, target: torch.Tensor,
                count: torch.Tensor | None = None) -> torch.Tensor:
        if x.dim() == 2:
            mean = scatter_mean(x.index_select(0, source), target, dim=0, dim_size=x.shape[0], count=count)
        else:  # (..., n, h): gather and sum along the first dimension, where torch's CPU kernels
            # (forward and backward) copy whole rows, then back; every sum adds the same terms in
            # the same order, so the values do not change.
            nodes_first = x.movedim(-2, 0)
            mean = scatter_mean(nodes_first.index_select(0, source), target, dim=0,
                                dim_size=x.shape[-2], count=count).movedim(0, -2).contiguous()
        out = self.lin_l(mean)
        return out if self.lin_r is None else out + self.lin_r(x)


class BidirectionalSAGE(nn.Module):
    """One residual GraphSAGE layer over both edge directions.

    ``x' = x + dropout(GELU(LayerNorm(SAGE_down(x, E) + SAGE_up(x, E^T))))`` where ``SAGE_down``
    averages what each node's producers hold (edges ``[producer, consumer]``) and ``SAGE_up`` what
    its consumers hold: a layout decision is felt both by the operands a node reads and by the
    users of its output.

    Shapes: x (n, h) or (B, n, h) (the same graph for every leading index: PyG static batching);
    edges: the graph's ``Edges`` (made once per graph), or its edge_index (2, m) int64 -> same shape as x.
    """

    def __init__(self, hidden: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.down = MeanSAGE(hidden)
        self.up = MeanSAGE(hidden, root_weight=False)
        self.norm = nn.LayerNorm(hidden)
        self.act = nn.GELU()
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, edges: Edges | torch.Tensor) -> torch.Tensor:
        if isinstance(edges, torch.Tensor):
            edges = Edges.of(edges, x.shape[-2])
        producer, consumer = edges.index[0], edges.index[1]
        message = self.act(self.norm(self.down(x, producer, consumer, edges.producers)
                                     + self.up(x, consumer, producer, edges.consumers)))
        # dropout 0 keeps every value (and draws no random number): no call, no copy
        return x + (self.dropout(message) if self.dropout.p else message)


def output_slot_features(node_feat: torch.Tensor, digits: torch.Tensor) -> torch.Tensor:
    """What each output-layout slot of a config row names, read from the node's own features.

    A layout slot holds a dimension index; its cost depends on that dimension's size (a small
    dimension in the most minor position wastes vector lanes) and on whether it matches the layout
    the node already has (``layout_minor_to_major``: otherwise a conversion is needed). A network
    can learn this lookup from the digit embeddings and the node state, slowly; handing it the two
    looked-up values per slot makes it a linear fact.

    Shapes: node_feat (R, 140) scaled (``solutions.features.log_scale``), digits (R, 18) in 0..6 -> (R, 12):
    6 log-sizes (0 where the slot is unset) then 6 flags "slot equals the node's default layout".
    """
    dims = node_feat[:, NODE_FEAT_COLUMNS["shape_dimensions"]]  # (R, 6) log1p(size), 0 = no dimension
    output = digits[:, :LAYOUT_SLOTS]  # (R, 6) digit = dimension + 1, 0 = unset
    sizes = torch.gather(torch.cat([torch.zeros_like(dims[:, :1]), dims], dim=1), 1, output)
    rank = (dims > 0).sum(dim=1, keepdim=True)
    # node_feat holds log1p(minor_to_major) with unused slots 0-padded; back to digits, 0 = unset.
    default = torch.round(torch.expm1(node_feat[:, NODE_FEAT_COLUMNS["layout_minor_to_major"]])).long() + 1
    default = torch.where(torch.arange(LAYOUT_SLOTS, device=digits.device) < rank, default, 0)
    return torch.cat([sizes, (output == default).to(sizes.dtype)], dim=1)


def mean_max_pool(x: torch.Tensor, dim: int) -> torch.Tensor:
    """``[mean, max]`` over ``dim``: (..., n, h) -> (..., 2h) for dim = -2."""
    return torch.cat([x.mean(dim=dim), x.amax(dim=dim)], dim=-1)


MAX_DEDUP_NODES = (2**63 - 1) // 7**18 - 1  # configurable nodes a (node, row) key can tell apart (5,663)
HEURISTIC_COLUMN = layout_feature_names().index("heuristic_log_cost")  # of the engineered rows
ROW_FEATURES = 2 * LAYOUT_SLOTS + LAYOUT_SLOTS_PER_ROW  # output_slot_features + "differs from the common row"


class ConfigAttention(nn.Module):
    """One pre-norm transformer block across configs: queries (B, w) attend to context (K, w) -> (B, w).

    No positional encoding: the configs of a graph are a set. With ``context`` None the queries are
    their own context (a training step's batch). Several graphs at once: queries (G, B, w), each
    graph's configs attending to each other, ``padding`` (G, B) True where a config is filler (it is
    attended to by nobody) -> (G, B, w).
    """

    def __init__(self, width: int, heads: int = 4) -> None:
        super().__init__()
        heads = heads if width % heads == 0 else 1
        self.norm = nn.LayerNorm(width)
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm_ff = nn.LayerNorm(width)
        self.feed_forward = mlp([width, width, width])

    def forward(self, queries: torch.Tensor, context: torch.Tensor | None = None,
                padding: torch.Tensor | None = None) -> torch.Tensor:
        if queries.dim() == 3:  # (G, B, w): one batch entry per graph
            q = self.norm(queries)
            x = queries + self.attention(q, q, q, key_padding_mask=padding, need_weights=False)[0]
            return x + self.feed_forward(self.norm_ff(x))
        q = self.norm(queries).unsqueeze(0)
        kv = q if context is None else self.norm(context).unsqueeze(0)
        x = queries + self.attention(q, kv, kv, need_weights=False)[0].squeeze(0)
        return x + self.feed_forward(self.norm_ff(x))


def context_index(num_configs: int, size: int) -> torch.Tensor:
    """The fixed peers of attention at prediction: ``size`` configs of ``num_configs``, the same every
    time."""
    if num_configs <= size:
        return torch.arange(num_configs)
    generator = torch.Generator().manual_seed(0)
    return torch.sort(torch.randperm(num_configs, generator=generator)[:size]).values


class LayoutRanker(nn.Module):
    """Scores the configs of one layout graph: the config's rows join at the configurable nodes, before
    message passing (early fusion) or after it (intermediate fusion; the module docstring).

    ``LayoutRanker.from_settings(config)`` builds it from a ``GNNConfig``, which holds the one set of
    defaults; the constructor has none.

    Arguments:
        hidden: width h of every node state.
        layers: message-passing layers.
        dropout: dropout inside the layers and the head.
        row_features: also hand the row network ``output_slot_features`` and, per slot, whether the
            row differs from the node's most common row (``LayoutInputs.common_rows``).
        fusion: ``"early"`` (configs join before message passing) or ``"intermediate"`` (the graph
            is encoded once; see the module docstring).
        config_layers: intermediate fusion: layers mixing the rows of linked configurable nodes.
        config_attention: one cross-config attention block before the head.
        attention_context: configs of a graph the others attend to at prediction.
        engineered_features: columns of each config's engineered features (0: none). An MLP of them
            (``LayoutExample.engineered``: z-scores within the graph) is added to the config's pooled
            state, before attention and the head.
        heuristic_prior: added times the configs' heuristic_log_cost z-scores to their scores (``prior``).

    Shapes (forward): ``LayoutInputs`` of a graph with n nodes and nc configurable nodes, digits
    (B, nc, 18) int64 in 0..6 (``ConfigStore.digits``), engineered (B, engineered_features) float32 or
    None -> (B,) scores, lower = faster.
    """

    task: Task = LAYOUT  # the task kind whose graphs it ranks (from_settings sets the collection's)

    def __init__(self, *, hidden: int, layers: int, dropout: float, row_features: bool, fusion: str,
                 config_layers: int, config_attention: bool, attention_context: int,
                 engineered_features: int = 0, heuristic_prior: float = 0.0) -> None:
        super().__init__()
        if fusion not in FUSIONS:
            raise ValueError(f"unknown fusion {fusion!r}; expected one of {', '.join(FUSIONS)}")
        self.hidden = hidden
        self.row_features = row_features
        self.fusion = fusion
        self.attention_context = attention_context
        self.config_layers = nn.ModuleList(
            BidirectionalSAGE(hidden, dropout)
            for _ in range(config_layers if fusion == "intermediate" else 0))
        self.attention = ConfigAttention(2 * hidden) if config_attention else None
        self.nodes = NodeEncoder(hidden)
        # One embedding per (slot, digit): the sum over the 18 slots is a linear map of the one-hot row.
        self.slot_digit = nn.Embedding(LAYOUT_SLOTS_PER_ROW * LAYOUT_DIGITS, hidden)
        self.register_buffer("slot_offsets", torch.arange(LAYOUT_SLOTS_PER_ROW) * LAYOUT_DIGITS,
                             persistent=False)
        self.row = mlp([2 * hidden + (ROW_FEATURES if row_features else 0), hidden, hidden])
        self.layers = nn.ModuleList(BidirectionalSAGE(hidden, dropout) for _ in range(layers))
        self.head = mlp([2 * hidden, hidden, 1], dropout=dropout)
        self.engineered_features = engineered_features
        self.engineered = mlp([engineered_features, hidden, 2 * hidden]) if engineered_features else None
        if heuristic_prior and engineered_features != ENGINEERED_LAYOUT_COLUMNS:
            raise ValueError("heuristic_prior reads the engineered heuristic_log_cost column")
        self.heuristic_prior = float(heuristic_prior)

    @classmethod
    def from_settings(cls, config: GNNConfig, task: Task = LAYOUT) -> LayoutRanker:
        """The model of ``task``'s graphs a ``GNNConfig`` describes (attention context:
        ``layout_configs_per_graph``)."""
        model = cls(hidden=config.hidden, layers=config.layers, dropout=config.dropout,
                    row_features=config.row_features, fusion=config.fusion,
                    config_layers=config.config_layers, config_attention=config.config_attention,
                    attention_context=config.layout_configs_per_graph,
                    engineered_features=ENGINEERED_LAYOUT_COLUMNS if config.engineered_features else 0,
                    heuristic_prior=config.heuristic_prior)
        model.task = task
        return model

    def encode_nodes(self, inputs: LayoutInputs) -> torch.Tensor:
        """The config-independent part, computed once per graph: -> (n, h).

        Early fusion: the encoded nodes (message passing comes later, per config). Intermediate
        fusion: the nodes after message passing.
        """
        x = self.nodes(inputs.node_feat, inputs.node_opcode)
        if self.fusion == "intermediate":
            for layer in self.layers:
                x = layer(x, inputs.edges())
        return x

    @property
    def config_attention(self) -> bool:
        return self.attention is not None

    def slot_digits(self, digits: torch.Tensor) -> torch.Tensor:
        """Rows embedded: the sum over the 18 slots of each (slot, digit) embedding: (R, 18) -> (R, h)."""
        return lookup(self.slot_digit, digits + self.slot_offsets).sum(dim=-2)

    def _row_network(self, inputs: LayoutInputs, node_state: torch.Tensor, nodes: torch.Tensor,
                     digits: torch.Tensor) -> torch.Tensor:
        """Rows (R, 18) on configurable nodes ``nodes`` (R,) (0..nc-1) -> (R, h) contributions."""
        config_nodes = inputs.config_node_ids[nodes]
        parts = [node_state[config_nodes], self.slot_digits(digits)]
        if self.row_features:
            parts.append(output_slot_features(inputs.node_feat[config_nodes], digits))
            parts.append((digits != inputs.common_rows[nodes]).to(parts[0].dtype))
        return self.row(torch.cat(parts, dim=-1))

    def encode_configs(self, inputs: LayoutInputs, node_state: torch.Tensor, digits: torch.Tensor, *,
                       dedup_rows: bool = True) -> torch.Tensor:
        """Per-(config, configurable node) contribution: (n, h), (B, nc, 18) -> (B, nc, h).

        With ``dedup_rows`` the row network runs once per distinct (node, row) pair and the result
        is scattered back (default-search configs share most rows; the output is the same).
        """
        batch, nc = digits.shape[:2]
        nodes = torch.arange(nc, device=digits.device).expand(batch, nc).reshape(-1)
        flat = digits.reshape(-1, LAYOUT_SLOTS_PER_ROW)
        if not dedup_rows:
            return self._row_network(inputs, node_state, nodes, flat).reshape(batch, nc, -1)
        # Key of a (node, row) pair: the node, then the row's 18 base-7 digits (< 7**18 * nc < 2**63
        # for nc up to MAX_DEDUP_NODES configurable nodes; the released maximum is ~2,250 a graph).
        weights = LAYOUT_DIGITS ** torch.arange(LAYOUT_SLOTS_PER_ROW - 1, -1, -1, device=digits.device)
        row = (flat * weights).sum(dim=-1)
        if nc > MAX_DEDUP_NODES:
            # More nodes than that key holds (several large graphs scored in one pass): number the
            # distinct rows first, then key the node with the row's number (nc * rows < 2**63).
            distinct_rows, row = torch.unique(row, return_inverse=True)
            key = nodes * distinct_rows.numel() + row
        else:
            key = nodes * LAYOUT_DIGITS**LAYOUT_SLOTS_PER_ROW + row
        unique_keys, inverse = torch.unique(key, return_inverse=True)
        first = torch.full_like(unique_keys, flat.shape[0]).scatter_reduce(
            0, inverse, torch.arange(flat.shape[0], device=digits.device), reduce="amin")
        return (self._row_network(inputs, node_state, nodes[first], flat[first])[inverse]
                .reshape(batch, nc, -1))

    def propagate(self, inputs: LayoutInputs, node_state: torch.Tensor, digits: torch.Tensor, *,
                  dedup_rows: bool = True) -> torch.Tensor:
        """Node states of every config after message passing: (n, h), (B, nc, 18) -> (B, n, h)."""
        batch = digits.shape[0]
        x = node_state.unsqueeze(0).expand(batch, -1, -1)
        if digits.shape[1]:  # a GST segment may hold no configurable node
            contribution = self.encode_configs(inputs, node_state, digits, dedup_rows=dedup_rows)
            x = x.index_add(1, inputs.config_node_ids, contribution)  # (B, n, h); node_state untouched
        for layer in self.layers:
            x = layer(x, inputs.edges())
        return x

    def configurable_states(self, inputs: LayoutInputs, graph_state: torch.Tensor, digits: torch.Tensor, *,
                            dedup_rows: bool = True) -> torch.Tensor:
        """Intermediate fusion: the configurable nodes' states per config: (n, h), (B, nc, 18) ->
        (B, nc, h)."""
        x = graph_state[inputs.config_node_ids].unsqueeze(0) + self.encode_configs(
            inputs, graph_state, digits, dedup_rows=dedup_rows)
        if len(self.config_layers):
            links = inputs.config_edges()
            for layer in self.config_layers:
                x = layer(x, links)
        return x

    def pool_configs(self, inputs: LayoutInputs, node_state: torch.Tensor, digits: torch.Tensor, *,
                     dedup_rows: bool = True, engineered: torch.Tensor | None = None) -> torch.Tensor:
        """Each config's pooled ``[mean, max]`` state (its engineered features added, when the model reads
        them): ``encode_nodes``'s (n, h), (B, nc, 18), (B, F) -> (B, 2h)."""
        if self.fusion == "early":
            pooled = mean_max_pool(self.propagate(inputs, node_state, digits, dedup_rows=dedup_rows), dim=1)
        elif not digits.shape[1]:  # no configurable node: every config is the same graph
            pooled = mean_max_pool(node_state, dim=0).expand(digits.shape[0], -1)
        else:
            states = self.configurable_states(inputs, node_state, digits, dedup_rows=dedup_rows)
            pooled = mean_max_pool(states, dim=1)
        return self.add_engineered(pooled, engineered)

    def add_engineered(self, pooled: torch.Tensor, engineered: torch.Tensor | None) -> torch.Tensor:
        """``pooled`` (B, 2h) plus the MLP of the configs' engineered features (B, F), for a model that
        reads them; a model that does not must be given none."""
        if (self.engineered is None) != (engineered is None):
            raise ValueError(f"this layout model reads {self.engineered_features} engineered feature columns "
                             f"per config, and was given "
                             f"{'none' if engineered is None else engineered.shape[-1]}; build the examples "
                             f"with make_example(..., engineered={self.engineered is not None})")
        return pooled if self.engineered is None else pooled + self.engineered(engineered)

    def score_pooled(self, pooled: torch.Tensor, context: torch.Tensor | None = None) -> torch.Tensor:
        """The head on pooled states ``[mean, max]``: (B, 2h) -> (B,).

        With cross-config attention the configs first attend to ``context`` (K, 2h), pooled states
        of the same graph's configs (None: to each other).
        Graph Segment Training (``solutions.methods.gnn.gst``) pools segments separately and combines them
        into the same ``[mean, max]`` before calling this.
        """
        if self.attention is not None:
            pooled = self.attention(pooled, context)
        return self.head(pooled).squeeze(-1)

    def prior(self, engineered: torch.Tensor | None) -> torch.Tensor | float:
        """``heuristic_prior`` times the configs' heuristic_log_cost z-scores (B,), added to their scores
        (0 when off): the network then learns what to change in the heuristic's order."""
        if not self.heuristic_prior or engineered is None:
            return 0.0
        return self.heuristic_prior * engineered[..., HEURISTIC_COLUMN]

    def forward_encoded(self, inputs: LayoutInputs, node_state: torch.Tensor, digits: torch.Tensor, *,
                        dedup_rows: bool = True, context: torch.Tensor | None = None,
                        engineered: torch.Tensor | None = None) -> torch.Tensor:
        """Score configs given ``encode_nodes``'s output: (n, h), (B, nc, 18), (B, F) -> (B,)."""
        return self.score_pooled(self.pool_configs(inputs, node_state, digits, dedup_rows=dedup_rows,
                                                   engineered=engineered), context) + self.prior(engineered)

    def score_graphs(self, batch: LayoutBatch, digits: torch.Tensor, *, dedup_rows: bool = True,
                     engineered: torch.Tensor | None = None,
                     padding: torch.Tensor | None = None) -> torch.Tensor:
        """Several graphs' configs in one pass (intermediate fusion; every graph with configurable nodes):
        B configs of each graph, row b of ``digits`` holding config b of every graph side by side.

        What ``forward`` gives each graph alone, and the gradient of their mean loss, up to float
        rounding (the layers' matrix products run over more rows; ``tests/test_gnn.py``). ``padding``
        (G, B) marks filler configs of graphs with fewer than B: they are scored, and attended to by
        nobody.

        Shapes: ``LayoutBatch`` of G graphs with NC configurable nodes in all, digits (B, NC, 18),
        engineered (G, B, F) or None, padding (G, B) bool or None -> (G, B) scores, lower = faster.
        """
        if self.fusion != "intermediate":
            raise ValueError("score_graphs needs fusion=intermediate (early fusion scores one graph a pass)")
        counts = batch.config_ptr[1:] - batch.config_ptr[:-1]
        if bool((counts == 0).any()):
            raise ValueError("score_graphs needs configurable nodes in every graph of the batch")
        states = self.configurable_states(batch.inputs, self.encode_nodes(batch.inputs), digits,
                                          dedup_rows=dedup_rows)  # (B, NC, h)
        # Each graph's configurable nodes are a run along NC: pooled as forward pools one graph (a dense
        # mean and max of each run), which is about 4x faster, forward and backward, than a grouped scatter.
        pooled = torch.stack([mean_max_pool(run, dim=1) for run in states.split(counts.tolist(), dim=1)])
        pooled = self.add_engineered(pooled, engineered)
        if self.attention is not None:
            pooled = self.attention(pooled, padding=padding)
        return self.head(pooled).squeeze(-1) + self.prior(engineered)

    def forward(self, inputs: LayoutInputs, digits: torch.Tensor, *, dedup_rows: bool = True,
                engineered: torch.Tensor | None = None) -> torch.Tensor:
        return self.forward_encoded(inputs, self.encode_nodes(inputs), digits, dedup_rows=dedup_rows,
                                    engineered=engineered)


class TileRanker(nn.Module):
    """Scores tile configs: kernels encoded once, configs joined late.

    Arguments:
        hidden: width h of every node state.
        layers: message-passing layers.
        dropout: dropout inside the layers and the head.
        config_dim: columns of a config's features (``config_vector_width`` of its task).

    Shapes (forward): a ``TileBatch`` of G kernels and B configs -> (B,) scores, lower = faster.
    ``encode_graphs`` gives the (G, 3h) kernel embeddings ([mean, max, output node]).
    """

    task: Task = TILE  # the task kind whose graphs it ranks (from_settings sets the collection's)
    engineered_features = 0  # reads no engineered layout columns

    def __init__(self, *, hidden: int, layers: int, dropout: float,
                 config_dim: int = TILE_CONFIG_DIM) -> None:
        super().__init__()
        self.hidden = hidden
        self.nodes = NodeEncoder(hidden)
        self.layers = nn.ModuleList(BidirectionalSAGE(hidden, dropout) for _ in range(layers))
        self.graph_proj = nn.Linear(3 * hidden, hidden)
        self.config = mlp([config_dim, hidden, hidden])
        self.head = mlp([3 * hidden, 2 * hidden, hidden, 1], dropout=dropout)

    @classmethod
    def from_settings(cls, config: GNNConfig, task: Task = TILE) -> TileRanker:
        """The model of ``task``'s graphs a ``GNNConfig`` describes (``config_vector_width(task)``
        columns per config)."""
        model = cls(hidden=config.hidden, layers=config.layers, dropout=config.dropout,
                    config_dim=config_vector_width(task))
        model.task = task
        return model

    def encode_graphs(self, node_feat: torch.Tensor, node_opcode: torch.Tensor, edge_index: torch.Tensor,
                      ptr: torch.Tensor) -> torch.Tensor:
        """(N, 140), (N,), (2, M), (G + 1,) -> (G, h) kernel embeddings."""
        x = self.nodes(node_feat, node_opcode)
        edges = Edges.of(edge_index, x.shape[0])
        for layer in self.layers:
            x = layer(x, edges)
        # Nodes are in topological order, so each kernel's last node is its output (root).
        output_node = x[ptr[1:] - 1]
        pooled = torch.cat([segment(x, ptr, reduce="mean"), segment(x, ptr, reduce="max"),
                            output_node], dim=-1)
        return self.graph_proj(pooled)

    def score(self, graph: torch.Tensor, config_feat: torch.Tensor) -> torch.Tensor:
        """(B, h) kernel embedding of each config, (B, config_dim) scaled config features -> (B,)."""
        config = self.config(config_feat)
        return self.head(torch.cat([graph, config, graph * config], dim=-1)).squeeze(-1)

    def forward(self, batch: TileBatch) -> torch.Tensor:
        graphs = self.encode_graphs(batch.node_feat, batch.node_opcode, batch.edge_index, batch.ptr)
        return self.score(graphs[batch.config_graph], batch.config_feat)
