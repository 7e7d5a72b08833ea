"""The layout space of a program: which layouts each configurable node's tensors may take, as the dataset
describes them (``tpugraphs rank``: ``--sample`` on any program, every ``--configs`` candidate checked,
changes named in the program's words).

A layout config holds 18 values per configurable node: the minor-to-major order of its output, input and
kernel tensors, 6 slots each, -1 unset (``competition.data.hlo.LAYOUT_CONFIG_NAMES``). The released
configs set, per tensor (``slots_for``):

- a convolution's or a dot's output, input (lhs) and kernel (rhs): the two minor-most dimensions;
- a reshape's output and input: the whole order (up to 6 dimensions); a reshape has no kernel;

and a tensor is set in full or left to the compiler (all -1). A valid setting names dimensions that
exist in the tensor, each once. ``LayoutSpace.problem`` finds the first config breaking one of these
rules; ``LayoutSpace.sample`` draws distinct configs uniformly over every tensor's valid orders (each
node on its own: a plain program carries no record of which nodes the compiler ties);
``LayoutSpace.reference`` is the program's own layouts (as its dump records them) in those slots.

The space is built from the HLO module when there is one (``space_of_module``: exact shapes, instruction
names, each operand in its place, dimension letters from convolution and dot dimension numbers), else
from a released-format graph (``space_of_graph``: the node features' shapes; the edges lose operand
order, so a dot's input and kernel are matched by rank to what its configs set).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from competition.data.graphs import LayoutGraph
from competition.data.hlo import NODE_FEATURE_INDEX, OPCODE_NAMES
from competition.data.protos.layout import LAYOUT_MAX_DIMS, LAYOUT_PADDING
from competition.data.protos.locations import SourceLocation, source_locations
from competition.data.protos.schema import PRIMITIVE_TYPE_ONE_HOT
from solutions.features.layout_geometry import operand_spans

SLOTS = LAYOUT_MAX_DIMS  # layout dims per tensor in node_config_feat (output, input, kernel: 3 x 6 = 18)
TENSORS = ("output", "input", "kernel")
UNSET = LAYOUT_PADDING  # -1: a slot left to the compiler
TWO_MINOR = ("convolution", "dot")  # their tensors: the two minor-most dims are set
ENUMERATE_AT_MOST = 100_000  # a space this small (and under 4x the draw) is listed whole, then picked from
_TYPE_NAMES = {value: name.removesuffix("_type") for value, name in PRIMITIVE_TYPE_ONE_HOT}
_SPATIAL = {1: ("W",), 2: ("H", "W"), 3: ("D", "H", "W")}
NO_SOURCE = SourceLocation(None, None, None)  # a released npz keeps no metadata


def slots_for(opcode: str, tensor: int, rank: int) -> int:
    """How many minor-most dims of ``tensor`` (0 output, 1 input, 2 kernel) the dataset sets for a node of
    ``opcode`` whose tensor has ``rank`` dims (0: the slot block is never set)."""
    if opcode in TWO_MINOR:
        return min(2, rank)
    if tensor == 2 and opcode == "reshape":
        return 0
    return min(SLOTS, rank)  # a reshape's (or another listed node's) whole order


@dataclass(frozen=True)
class Tensor:
    """One tensor of a configurable node: its shape, dimension names, settable slots and own layout."""

    dims: tuple[int, ...]
    element: str  # "f32", "bf16", ...; "" when unknown
    labels: tuple[str, ...]  # a name per dim: a letter (N, H, W, C; I, O; B, M, K, N) or "d<i>=<size>"
    slots: int  # how many minor-most dims the dataset sets (0: never)
    own: tuple[int, ...]  # the program's own minor-to-major order (XLA's default when none is recorded)

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def shape(self) -> str:
        return f"{self.element or '?'}[{','.join(str(d) for d in self.dims)}]"

    def words(self, order: list[int]) -> str:
        """``order`` (minor-most first) in the tensor's dimension names, e.g. ``(C, W)``."""
        if not order:
            return "unset (the compiler's choice)"
        return "(" + ", ".join(self.labels[d] if 0 <= d < self.rank else f"d{d}" for d in order) + ")"

    def problem(self, block: np.ndarray) -> np.ndarray:
        """(c,) per config, the first rule its 6 slots break: 0 none, else the rule's number (1-7, in the
        order of the checks below; ``rule_text`` says it in words)."""
        values = block.astype(np.float64)
        is_set = values != UNSET
        count = is_set.sum(axis=1)
        out = np.zeros(len(values), dtype=np.int64)
        checks = [
            ~np.isfinite(values).all(axis=1) | (values != np.round(values)).any(axis=1)
            | ((values < 0) & is_set).any(axis=1),                     # 1 not a dimension number
            (count > 0) & (self.slots == 0),                           # 2 a tensor never set
            (np.diff(is_set.astype(np.int8), axis=1) > 0).any(axis=1),  # 3 a gap before a set slot
            count > self.slots,                                        # 4 more slots than the dataset sets
            (values >= self.rank).any(axis=1),                         # 5 no such dimension
            _repeats(values, is_set),                                  # 6 a dimension twice
            (count > 0) & (count < self.slots),                        # 7 set in part
        ]
        for rule, bad in reversed(list(enumerate(checks, start=1))):
            out[bad] = rule
        return out

    def rule_text(self, rule: int, block: np.ndarray, opcode: str, tensor: str) -> str:
        """Rule ``rule`` (``problem``'s number) in words, as ``block`` (the slots of ``tensor``) breaks it."""
        values = [int(v) if float(v).is_integer() else float(v) for v in block]
        set_values = [v for v in values if v != UNSET]
        what = f"the {self.slots} minor-most dims" if opcode in TWO_MINOR else \
            f"the whole order ({self.slots} dims)"
        if rule == 1:
            bad = next(v for v in values if v != UNSET and (not float(v).is_integer() or v < 0))
            return f"holds {bad}; layout values are dimension numbers or -1 (unset)"
        if rule == 2:
            if self is _ABSENT:
                why = "it has one operand" if opcode == "reshape" else "it has no such operand"
                return f"sets {set_values}; the dataset never sets a {opcode}'s {tensor} ({why})"
            return f"sets {set_values}; a scalar has no dimensions to order, so the dataset never sets it"
        if rule == 3:
            return f"sets {values} with a gap; the dataset sets the minor-most slots first, then -1"
        if rule == 4:
            return (f"sets {len(set_values)} dims {set_values}; the dataset sets {what} of a {opcode}'s "
                    "tensors")
        if rule == 5:
            bad = next(v for v in set_values if v >= self.rank)
            if not self.rank:
                return f"names dimension {bad}, which a scalar does not have"
            return (f"names dimension {bad}, which a rank-{self.rank} tensor does not have "
                    f"(dims 0-{self.rank - 1})")
        if rule == 6:
            bad = next(v for i, v in enumerate(set_values) if v in set_values[:i])
            return f"names dimension {bad} twice in {set_values}"
        return f"sets {len(set_values)} of {what} ({set_values}); the dataset sets all {self.slots} or none"



def _repeats(values: np.ndarray, is_set: np.ndarray) -> np.ndarray:
    sort = np.sort(np.where(is_set, values, -np.arange(1, values.shape[1] + 1) - 10), axis=1)
    return (np.diff(sort, axis=1) == 0).any(axis=1)


@dataclass(frozen=True)
class Node:
    """A configurable node: its position, instruction name (None for an npz), opcode and three tensors;
    for a module, where its instruction came from and which instructions produce its input and kernel."""

    node: int
    name: str | None
    opcode: str
    tensors: tuple[Tensor | None, Tensor | None, Tensor | None]  # output, input, kernel; None: none
    source: SourceLocation = NO_SOURCE  # op name, file and line from the module's metadata
    producers: tuple[int | None, int | None] = (None, None)  # node positions of the input's, kernel's
    computation: str | None = None  # the computation holding it, when not the entry (a loop body, a call)

    @property
    def title(self) -> str:
        """The instruction's name, with its opcode when the name does not start with it; an npz's node id."""
        if self.name is None:
            return f"node {self.node} ({self.opcode})"
        title = self.name if self.name.startswith(self.opcode) else f"{self.name} ({self.opcode})"
        return f"{title} in {self.computation}" if self.computation else title


@dataclass(frozen=True)
class LayoutSpace:
    """The valid layouts of every configurable node of one program, in ``node_config_ids`` order."""

    nodes: tuple[Node, ...]

    def problem(self, configs: np.ndarray) -> str | None:
        """The first invalid setting of ``configs`` (c, nc, 18) in config order, in words; None if valid."""
        first: tuple[int, int, int, int] | None = None  # (config, node, tensor, rule)
        for j, node in enumerate(self.nodes):
            for t, tensor in enumerate(node.tensors):
                block = configs[:, j, t * SLOTS:(t + 1) * SLOTS]
                rules = (tensor or _ABSENT).problem(block)
                bad = np.flatnonzero(rules)
                if bad.size and (first is None or bad[0] < first[0]):
                    first = (int(bad[0]), j, t, int(rules[bad[0]]))
        if first is None:
            return None
        c, j, t, rule = first
        node, tensor = self.nodes[j], self.nodes[j].tensors[t] or _ABSENT
        block = configs[c, j, t * SLOTS:(t + 1) * SLOTS]
        shape = "" if tensor is _ABSENT else f" {tensor.shape}"
        rule_text = tensor.rule_text(rule, block, node.opcode, TENSORS[t])
        return (f"config {c}, {node.title} {TENSORS[t]}{shape} (node {j} of the configurable nodes, "
                f"columns {t * SLOTS}-{t * SLOTS + SLOTS - 1}): {rule_text}")

    def reference(self) -> np.ndarray:
        """(nc, 18) the program's own layouts (as its module records them) in the slots the dataset sets."""
        out = np.full((len(self.nodes), 3 * SLOTS), UNSET, dtype=np.float32)
        for j, node in enumerate(self.nodes):
            for t, tensor in enumerate(node.tensors):
                if tensor is not None and tensor.slots:
                    out[j, t * SLOTS:t * SLOTS + tensor.slots] = tensor.own[:tensor.slots]
        return out

    def size(self) -> float:
        """How many distinct configs the space holds (a float: it is often astronomically large)."""
        return math.prod(float(math.perm(t.rank, t.slots)) for n in self.nodes for t in n.tensors
                         if t is not None and t.slots)

    def sample(self, count: int, *, seed: int = 0) -> np.ndarray:
        """``count`` distinct configs (all of them when the space is smaller), each tensor's order drawn
        uniformly among its valid ones; deterministic for a seed. Shape (count', nc, 18)."""
        if count < 1:
            raise ValueError(f"count must be >= 1, got {count}")
        rng = np.random.default_rng(seed)
        space = self.size()
        if space <= min(4 * count, ENUMERATE_AT_MOST):  # small: enumerate, then pick (rejection would stall)
            every = self._all()
            keep = rng.permutation(len(every))[:count] if len(every) > count else np.arange(len(every))
            return every[np.sort(keep)]
        chosen: dict[bytes, int] = {}
        batches = []
        for _ in range(50):
            batch = self._draw(count, rng)
            for row in batch:
                if len(chosen) < count:
                    chosen.setdefault(row.tobytes(), len(chosen))
            batches.append(batch)
            if len(chosen) == count:
                break
        rows = np.concatenate(batches)
        _, first = np.unique(rows.reshape(len(rows), -1), axis=0, return_index=True)
        return rows[np.sort(first)][:count]

    def _settable(self) -> list[tuple[int, int, Tensor]]:
        return [(j, t, tensor) for j, node in enumerate(self.nodes) for t, tensor in enumerate(node.tensors)
                if tensor is not None and tensor.slots]

    def _draw(self, count: int, rng: np.random.Generator) -> np.ndarray:
        out = np.full((count, len(self.nodes), 3 * SLOTS), UNSET, dtype=np.float32)
        for j, t, tensor in self._settable():
            orders = np.argsort(rng.random((count, tensor.rank)), axis=1)[:, :tensor.slots]
            out[:, j, t * SLOTS:t * SLOTS + tensor.slots] = orders
        return out

    def _all(self) -> np.ndarray:
        import itertools

        settable = self._settable()
        menus = [list(itertools.permutations(range(tensor.rank), tensor.slots)) for _, _, tensor in settable]
        combos = list(itertools.product(*menus))
        out = np.full((len(combos), len(self.nodes), 3 * SLOTS), UNSET, dtype=np.float32)
        for i, combo in enumerate(combos):
            for (j, t, tensor), order in zip(settable, combo, strict=True):
                out[i, j, t * SLOTS:t * SLOTS + tensor.slots] = order
        return out

    def change(self, j: int, t: int, old: list[int], new: list[int]) -> dict:
        """One changed tensor, in the program's words and as fields (``--json``)."""
        node, tensor = self.nodes[j], self.nodes[j].tensors[t] or _ABSENT
        whole = node.opcode not in TWO_MINOR or tensor.slots >= tensor.rank
        what = "minor-to-major" if whole else "minor dims"
        text = (f"{node.title} {TENSORS[t]} {tensor.shape}: {what} {tensor.words(new)} instead of "
                f"{tensor.words(old)}")
        return {"node": node.node, "instruction": node.name, "opcode": node.opcode, "tensor": TENSORS[t],
                "shape": tensor.shape, "dims": list(tensor.labels), "from": old, "to": new, "text": text,
                "computation": node.computation, "source": node.source.to_json(), "where": node.source.chain}

    def units(self, config: np.ndarray, reference: np.ndarray) -> list[tuple[int, int]]:
        """``(node, tensor)`` of every tensor whose setting in ``config`` (nc, 18) differs from
        ``reference``, in node order: the single changes a config is made of."""
        shape = (len(self.nodes), len(TENSORS), SLOTS)
        differs = (config.reshape(shape) != reference.reshape(shape)).any(axis=2)
        return [(int(j), int(t)) for j, t in zip(*np.nonzero(differs), strict=True)]

    def apply(self, reference: np.ndarray, config: np.ndarray, units: list[tuple[int, int]]) -> np.ndarray:
        """``reference`` with the settings of ``config`` in ``units`` (``(node, tensor)`` pairs) only."""
        out = np.array(reference, dtype=np.float32, copy=True)
        for j, t in units:
            out[j, t * SLOTS:(t + 1) * SLOTS] = config[j, t * SLOTS:(t + 1) * SLOTS]
        return out


_ABSENT = Tensor(dims=(), element="", labels=(), slots=0, own=())


# -- building a space -------------------------------------------------------------------------------


def _labels(dims: tuple[int, ...], named: dict[int, str]) -> tuple[str, ...]:
    return tuple(named.get(i, f"d{i}={size}") for i, size in enumerate(dims))


def _spatial(dims: list[int], role: dict[int, str]) -> None:
    letters = _SPATIAL.get(len(dims), tuple(f"S{i}" for i in range(len(dims))))
    role.update(zip(dims, letters, strict=True))


def _conv_names(numbers: dict, ranks: tuple[int, int, int]) -> tuple[dict[int, str], ...]:
    """Letters of a convolution's output (N, C, spatial), input (N, C, spatial), kernel (I, O, spatial)."""
    output = {numbers["output_batch_dimension"]: "N", numbers["output_feature_dimension"]: "C"}
    spatial_out = numbers.get("output_spatial_dimensions") or \
        [d for d in range(ranks[0]) if d not in output]
    _spatial(list(spatial_out), output)
    inputs = {numbers["input_batch_dimension"]: "N", numbers["input_feature_dimension"]: "C"}
    _spatial(list(numbers["input_spatial_dimensions"]), inputs)
    kernel = {numbers["kernel_input_feature_dimension"]: "I", numbers["kernel_output_feature_dimension"]: "O"}
    _spatial(list(numbers["kernel_spatial_dimensions"]), kernel)
    names = (output, inputs, kernel)
    if any(len(set(n.values())) != len(n) or max(n, default=-1) >= r
           for n, r in zip(names, ranks, strict=True)):
        return ({}, {}, {})  # inconsistent numbers (an npz's zero-filled ones): indices only
    return names


def _dot_names(numbers: dict, ranks: tuple[int, int, int]) -> tuple[dict[int, str], ...]:
    """Names of a dot's dims: lhs (B batch, K contracting, M free), rhs (B, K, N free), output (B, M, N)."""
    def side(batch: list[int], contracting: list[int], rank: int, free: str) -> tuple[dict[int, str], list]:
        names = {d: (f"B{i}" if len(batch) > 1 else "B") for i, d in enumerate(batch)}
        names.update({d: (f"K{i}" if len(contracting) > 1 else "K") for i, d in enumerate(contracting)})
        rest = [d for d in range(rank) if d not in names]
        names.update({d: (f"{free}{i}" if len(rest) > 1 else free) for i, d in enumerate(rest)})
        return names, rest

    lhs, lhs_free = side(list(numbers["lhs_batch_dimensions"]), list(numbers["lhs_contracting_dimensions"]),
                         ranks[1], "M")
    rhs, rhs_free = side(list(numbers["rhs_batch_dimensions"]), list(numbers["rhs_contracting_dimensions"]),
                         ranks[2], "N")
    batch = [lhs[d] for d in numbers["lhs_batch_dimensions"]]
    out_names = batch + [lhs[d] for d in lhs_free] + [rhs[d] for d in rhs_free]
    if len(out_names) != ranks[0]:
        return ({}, {}, {})
    return (dict(enumerate(out_names)), lhs, rhs)


Shape = tuple[tuple[int, ...], str, tuple[int, ...]]  # dims, element type, minor-to-major


def _node(position: int, name: str | None, opcode: str, shapes: list[Shape],
          names: tuple[dict[int, str], ...]) -> Node:
    """A node from its output's and operands' shapes (output first) and the dimension names of each."""
    tensors: list[Tensor | None] = []
    for t in range(3):
        if t >= len(shapes) or (t == 2 and opcode == "reshape"):
            tensors.append(None)
            continue
        dims, element, own = shapes[t]
        if sorted(own) != list(range(len(dims))):  # no layout recorded: XLA's default, major to minor
            own = tuple(range(len(dims) - 1, -1, -1))
        tensors.append(Tensor(dims=dims, element=element, labels=_labels(dims, names[t]),
                              slots=slots_for(opcode, t, len(dims)), own=own))
    return Node(position, name, opcode, (tensors[0], tensors[1], tensors[2]))


def space_of_module(module: dict, config_ids: np.ndarray) -> LayoutSpace:
    """The space of a decoded ``HloModuleProto``'s nodes at ``config_ids`` (positions in node order)."""
    instructions = [inst for comp in module["computations"] for inst in comp["instructions"]]
    by_id = {inst["id"]: inst for inst in instructions}
    position_of = {inst["id"]: i for i, inst in enumerate(instructions)}  # a repeated id: its last, as encode
    entry = module["entry_computation_id"] or module["computations"][-1]["id"]
    computation_of = [None if comp["id"] == entry else comp["name"] for comp in module["computations"]
                      for _ in comp["instructions"]]
    sources = source_locations(module)

    def shape_of(inst: dict) -> Shape:
        shape = inst["shape"] or {"dimensions": [], "element_type": 0, "layout": None}
        layout = shape["layout"]
        return (tuple(int(d) for d in shape["dimensions"]), _TYPE_NAMES.get(shape["element_type"], ""),
                tuple(int(d) for d in layout["minor_to_major"]) if layout else ())

    nodes = []
    for position in np.asarray(config_ids, dtype=np.int64):
        inst = instructions[int(position)]
        opcode = inst["opcode"]
        shapes = [shape_of(inst)] + [shape_of(by_id[o]) for o in inst["operand_ids"][:2] if o in by_id]
        ranks = tuple(len(s[0]) for s in shapes) + (0,) * (3 - len(shapes))
        names: tuple[dict[int, str], ...] = ({}, {}, {})
        if opcode == "convolution" and inst["convolution_dimension_numbers"] is not None:
            names = _conv_names(inst["convolution_dimension_numbers"], ranks)
        elif opcode == "dot" and inst.get("dot_dimension_numbers") is not None:
            names = _dot_names(inst["dot_dimension_numbers"], ranks)
        operands = [position_of.get(o) for o in inst["operand_ids"][:2]] + [None, None]
        node = _node(int(position), inst["name"], opcode, shapes, names)
        nodes.append(Node(node.node, node.name, node.opcode, node.tensors, sources[int(position)],
                          (operands[0], None if opcode == "reshape" else operands[1]),
                          computation_of[int(position)]))
    return LayoutSpace(tuple(nodes))


_COL = NODE_FEATURE_INDEX
_SHAPE = [_COL[f"shape_dimensions_{i}"] for i in range(SLOTS)]
_LAYOUT = [_COL[f"layout_minor_to_major_{i}"] for i in range(SLOTS)]
_TYPES = [(_COL[f"shape_element_type_is_{name}"], name.removesuffix("_type"))
          for _, name in PRIMITIVE_TYPE_ONE_HOT]
_CONV = "convolution_dim_numbers_"


def _graph_shape(feat: np.ndarray, node: int) -> Shape:
    dims = [int(v) for v in feat[node, _SHAPE]]
    rank = max((i + 1 for i, d in enumerate(dims) if d > 0), default=0)
    element = next((name for column, name in _TYPES if feat[node, column] > 0), "")
    own = tuple(int(v) for v in feat[node, _LAYOUT][:rank])
    return tuple(dims[:rank]), element, own


def _graph_conv_numbers(feat: np.ndarray, node: int) -> dict:
    row = feat[node]

    def col(name: str) -> int:
        return int(row[_COL[_CONV + name]])

    spatial = sum(1 for i in range(4) if row[_COL[f"window_size_{i}"]] > 0)
    return {"output_batch_dimension": col("output_batch_dim"),
            "output_feature_dimension": col("output_feature_dim"), "output_spatial_dimensions": None,
            "input_batch_dimension": col("input_batch_dim"),
            "input_feature_dimension": col("input_feature_dim"),
            "input_spatial_dimensions": [col(f"input_spatial_dims_{i}") for i in range(spatial)],
            "kernel_input_feature_dimension": col("kernel_input_feature_dim"),
            "kernel_output_feature_dimension": col("kernel_output_feature_dim"),
            "kernel_spatial_dimensions": [col(f"kernel_spatial_dims_{i}") for i in range(spatial)]}


def space_of_graph(graph: LayoutGraph) -> LayoutSpace:
    """The space of a released-format layout graph, from its node features and edges.

    The edges are sorted and deduplicated, so a node's operands come in node order, not operand order:
    a tensor is matched to the first operand whose rank takes every dimension the graph's configs name
    there (a convolution's kernel: the operand whose spatial dims are the window), else taken in order.
    """
    feat = graph.node_feat
    producers, starts, stops = operand_spans(graph)
    configs = graph.node_config_feat
    top = configs.max(axis=0, initial=UNSET).reshape(len(graph.node_config_ids), 3, SLOTS).max(axis=2) \
        if len(configs) else np.full((len(graph.node_config_ids), 3), UNSET)
    nodes = []
    for j, position in enumerate(np.asarray(graph.node_config_ids, dtype=np.int64)):
        opcode = OPCODE_NAMES.get(int(graph.node_opcode[position]), "other")
        pool = [_graph_shape(feat, int(v)) for v in producers[starts[j]:stops[j]][:2]]
        if len(pool) == 2 and _swapped(feat, int(position), opcode, pool, top[j]):
            pool.reverse()
        if opcode in TWO_MINOR and len(pool) == 1:
            pool = pool * 2  # x . x: the edges are deduplicated, so one producer stands for both operands
        shapes = [_graph_shape(feat, int(position)), *pool]
        ranks = tuple(len(s[0]) for s in shapes) + (0,) * (3 - len(shapes))
        names = _conv_names(_graph_conv_numbers(feat, int(position)), ranks) \
            if opcode == "convolution" and len(shapes) == 3 else ({}, {}, {})
        nodes.append(_node(int(position), None, opcode, shapes, names))
    return LayoutSpace(tuple(nodes))


def _swapped(feat: np.ndarray, node: int, opcode: str, pool: list[Shape], top: np.ndarray) -> bool:
    """Whether the two operands in node order are (kernel, input) rather than (input, kernel): for a
    convolution, the first's spatial dims are the window; otherwise, the configs name a dimension the
    first (or second) cannot hold as an input (kernel)."""
    if opcode == "convolution":
        numbers = _graph_conv_numbers(feat, node)
        spatial = numbers["kernel_spatial_dimensions"]
        window = [int(feat[node, _COL[f"window_size_{i}"]]) for i in range(len(spatial))]
        dims = pool[0][0]
        return bool(window) and all(d < len(dims) and dims[d] == w
                                    for d, w in zip(spatial, window, strict=True))
    return bool(top[1] >= len(pool[0][0]) or top[2] >= len(pool[1][0]))
