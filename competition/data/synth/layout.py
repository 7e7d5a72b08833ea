"""Layout configurations of one program: the ``default`` and ``random`` searches and their measured runs.

A configuration sets, for every configurable node, the ``minor_to_major`` order of its output, its
input (first operand) and, for convolutions and dots, its kernel (second operand), padded with -1 to
6 slots (18 values per node). As in the released data:

- **Two slots for the matrix unit.** Convolution and dot tensors set only their two minor-most
  dimensions (the rest of the order is left to the compiler); reshapes set the whole order of each
  side (4 slots for a rank-4 side, 2 for a rank-2 side).
- **Unset tensors.** Some tensors of some nodes are never set (all -1: the compiler keeps its own
  layout), and a node's candidate settings now and then leave a tensor to the compiler.
- **Menus.** The autotuner does not explore every order: each configurable node has a small menu of
  candidate settings (2-9), and a configuration picks one entry per node. A convolution's or dot's menu
  is every combination of its tensors' orders (2 x 2 x 2 = 8 for output, input and kernel), as in the
  released graphs, so each tensor's effect can be told apart within one graph (generator version 6).
- **Layout groups.** Configurable nodes of the same kind, ranks and compiled layout are tied into
  groups (neighbouring layers of a block) that always carry the same setting: their columns of
  ``node_config_feat`` are identical in every configuration, in both searches.
- **Moves.** A convolution or dot tensor keeps its two compiled minor-most dimensions in every
  setting and varies only their order (so at most 2 x 2 x 2 settings per node, with the odd tensor
  left to the compiler); a reshape side takes one of a few whole orders. So it is in every released
  graph at hand (generator version 4; docs/synthetic-data.md).
- ``default`` search: the compiler's local search around the default. Each group's menu holds the
  default and the moves of it that the search's estimate accepts on their own (a conv/dot group: the
  combinations of its tensors' orders; a reshape group: local moves, two neighbouring dimensions
  swapped); a new
  configuration moves one to three groups of an accepted one and is kept when its estimate is within
  a small tolerance (0.5-2.5 %) of the default's. Runtimes end up within ~1-4 % of each other;
  configurations are re-measured often (10-30 % for xla, 40-90 % for nlp).
- ``random`` search: every group picks an entry of its menu (every combination for a conv/dot group,
  3-9 orders for a reshape group; drawn with uneven odds); runtimes spread several-fold.
  Configurations are re-measured as often as in the released random-search graphs (a 10-45 % share,
  plus what repeats by chance).
- **Re-measurements** of a configuration differ from its first measurement by a tiny noise only:
  a few parts per million in the default search, a few parts in ten thousand in the random search.
Order is shuffled, as in the released files.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from competition.data.synth.cost_model import chip, layout_cost
from competition.data.synth.graphs import HloGraph

SLOTS = 6
MXU_OPCODES = ("convolution", "dot")
MENU_MAX = 9  # most settings a node's menu holds (the released random-search graphs: 8-9)
# Chance that a tensor of a configurable node is never set (output, input, kernel of a conv/dot).
_NEVER_SET = (0.02, 0.08, 0.08)
# Chance that a candidate setting leaves one of its tensors to the compiler.
_LEFT_TO_COMPILER = 0.04


@dataclass
class LayoutRuns:
    """The measured configurations of one program. Shapes: ``c`` configs, ``nc`` configurable nodes."""

    node_config_ids: np.ndarray  # (nc,) int64
    node_config_feat: np.ndarray  # (c, nc, 18) int8 (the released files hold float32: the writer converts)
    config_runtime: np.ndarray  # (c,) int64 ns


def node_tensors(graph: HloGraph, node: int) -> list[int]:
    """The tensors a configuration of ``node`` sets: its output, its input and (conv/dot) its kernel."""
    wanted = 2 if graph.instrs[node].opcode in MXU_OPCODES else 1
    return [int(node), *graph.operands[node][:wanted]]


@dataclass
class LayoutSpace:
    """What a configuration of one program can set: per node, tensor ranks, slots and layout groups.

    Shapes: ``nc`` configurable nodes, ``g`` groups.
    """

    config_ids: np.ndarray  # (nc,) int64
    ranks: np.ndarray  # (nc, 3) int64 rank of output, input, kernel (0: no such tensor)
    compiled: np.ndarray  # (nc, 3, 6) int64 the compiled layouts, -1 padded
    slots: np.ndarray  # (nc, 3) int64 how many minor-most slots a setting fills (0: never set)
    group: np.ndarray  # (nc,) int64 layout group of each node
    leaders: np.ndarray  # (g,) int64 one node per group (whose ranks and layouts the group shares)
    # The whole orders the tuner tries, per (rank, slots), for tensors that set every slot: a few per
    # program, shared by every node, so neighbouring groups often (not always) agree.
    orders: dict[tuple[int, int], np.ndarray]
    # How this program's runtime responds to layouts (drawn once, shared by its two searches).
    physics: layout_cost.LayoutPhysics = layout_cost.LayoutPhysics()
    kinds: tuple[str, ...] = ()  # (nc,) opcode of each configurable node

    @property
    def groups(self) -> int:
        return len(self.leaders)

    def default_setting(self) -> np.ndarray:
        """``(nc, 18)`` int8: every set tensor at its compiled layout (its minor-most slots)."""
        out = np.full((len(self.config_ids), 3 * SLOTS), -1, dtype=np.int8)
        for t in range(3):
            keep = np.arange(SLOTS)[None, :] < self.slots[:, t:t + 1]
            out[:, t * SLOTS:(t + 1) * SLOTS] = np.where(keep, self.compiled[:, t], -1)
        return out

    def expand(self, menus: np.ndarray, choice: np.ndarray) -> np.ndarray:
        """``(c, nc, 18)`` int8 configurations from group choices ``(c, g)`` into ``menus`` ``(g, m, 18)``."""
        return menus[self.group[None, :], choice[:, self.group]]


def layout_space(graph: HloGraph, rng: np.random.Generator) -> LayoutSpace:
    """Ranks, slots and layout groups of ``graph``'s configurable nodes (drawn once per program)."""
    config_ids = graph.configurable_nodes()
    nc = len(config_ids)
    ranks = np.zeros((nc, 3), dtype=np.int64)
    compiled = np.full((nc, 3, SLOTS), -1, dtype=np.int64)
    slots = np.zeros((nc, 3), dtype=np.int64)
    kinds = []
    for j, node in enumerate(int(n) for n in config_ids):
        mxu = graph.instrs[node].opcode in MXU_OPCODES
        kinds.append(graph.instrs[node].opcode)
        for t, tensor in enumerate(node_tensors(graph, node)):
            rank = int(graph.ranks[tensor])
            ranks[j, t] = rank
            compiled[j, t] = graph.layouts[tensor]
            slots[j, t] = min(rank, 2) if mxu else rank
    # Groups: nodes that look alike to the tuner (same kind, ranks and compiled minor-most dimensions,
    # so the same default setting), in program order, cut into runs of 2-12 neighbouring nodes.
    group = np.zeros(nc, dtype=np.int64)
    classes: dict[tuple, list[int]] = {}
    for j in range(nc):
        minor = tuple(tuple(compiled[j, t, :slots[j, t]]) for t in range(3))
        classes.setdefault((kinds[j], tuple(ranks[j]), minor), []).append(j)
    leaders: list[int] = []
    for members in sorted(classes.values()):
        start = 0
        while start < len(members):
            run = members[start:start + int(rng.integers(2, 13))]
            group[run] = len(leaders)
            leaders.append(run[0])
            # Some tensors of a group are never set (the compiler keeps its layout).
            if kinds[run[0]] in MXU_OPCODES:
                for t in range(3):
                    if rng.random() < _NEVER_SET[t]:
                        slots[run, t] = 0
            start += len(run)
    # Number groups in program order of their leaders.
    order = np.argsort(leaders, kind="stable")
    rename = np.empty(len(leaders), dtype=np.int64)
    rename[order] = np.arange(len(leaders))
    orders: dict[tuple[int, int], np.ndarray] = {}
    for j in range(nc):
        for t in range(3):
            rank, count = int(ranks[j, t]), int(slots[j, t])
            # Only whole orders (reshapes, rank <= 2 operands) have a table: a tensor that sets part of
            # its order keeps its two compiled minor-most dimensions and varies their order alone.
            if count and count == rank and (rank, count) not in orders:
                tried = {tuple(int(d) for d in compiled[j, t, :count])}
                for _ in range(int(rng.integers(2, 5))):
                    tried.add(tuple(int(d) for d in rng.permutation(rank)[:count]))
                table = np.full((len(tried), SLOTS), -1, dtype=np.int8)
                for k, values in enumerate(sorted(tried)):
                    table[k, :count] = values
                orders[(rank, count)] = table
    return LayoutSpace(config_ids, ranks, compiled, slots, rename[group] if nc else group,
                       np.asarray(leaders, dtype=np.int64)[order], orders,
                       layout_cost.draw_layout_physics(rng), tuple(kinds))


def _random_tensor(rng: np.random.Generator, space: LayoutSpace, leader: int, t: int) -> np.ndarray:
    """A setting ``(6,)`` of tensor ``t`` of a reshape group's ``leader``: one of the program's whole orders
    for its rank, at random (conv/dot tensors get theirs from ``_product_menu``)."""
    table = space.orders[(int(space.ranks[leader, t]), int(space.slots[leader, t]))]
    return table[int(rng.integers(len(table)))].copy()


def _local_tensor(rng: np.random.Generator, current: np.ndarray, slots: int) -> np.ndarray:
    """A small move of one tensor's setting: two neighbouring set slots swapped (for a convolution or
    dot tensor, which sets two slots, its one move)."""
    out = current.copy()
    if slots >= 2:
        i = int(rng.integers(slots - 1))
        out[i], out[i + 1] = current[i + 1], current[i]
    return out


def _candidate(rng: np.random.Generator, space: LayoutSpace, leader: int, base: np.ndarray, *,
               local: bool) -> np.ndarray:
    """One candidate setting ``(18,)`` of a reshape group: ``base`` with one or more tensors changed."""
    out = base.copy()
    settable = [t for t in range(3) if space.slots[leader, t] > 0 and space.ranks[leader, t] >= 1]
    if not settable:
        return out
    changed = [settable[int(rng.integers(len(settable)))]]
    if not local:
        changed += [t for t in settable if t not in changed and rng.random() < 0.5]
    for t in changed:
        cols = slice(t * SLOTS, (t + 1) * SLOTS)
        if rng.random() < _LEFT_TO_COMPILER:
            out[cols] = -1
        elif local and base[cols][0] >= 0:
            out[cols] = _local_tensor(rng, base[cols], int(space.slots[leader, t]))
        else:
            out[cols] = _random_tensor(rng, space, leader, t)
    return out


def _product_menu(rng: np.random.Generator, space: LayoutSpace, leader: int, default: np.ndarray) -> list:
    """Every combination of a convolution's or dot's tensor orders, the default first (at most MENU_MAX).

    In the released graphs a conv/dot group's settings are the full product of its tensors' orders
    (each set tensor's two minor-most dimensions either way: 8 settings for output, input and kernel),
    so each tensor's effect can be told apart within one graph (generator version 6; ``tpugraphs stats``
    counts such groups). Now and then a tensor may also be left to the compiler (a third option)."""
    options = []
    for t in range(3):
        cols = slice(t * SLOTS, (t + 1) * SLOTS)
        choices = [default[cols].copy()]
        if space.slots[leader, t] >= 2 and default[cols][0] >= 0:
            choices.append(_local_tensor(rng, default[cols], 2))
        if space.slots[leader, t] > 0 and rng.random() < _LEFT_TO_COMPILER:
            choices.append(np.full(SLOTS, -1, dtype=default.dtype))
        options.append(choices)
    entries = [np.concatenate(combo) for combo in itertools.product(*options)]
    rest = [entries[i] for i in rng.permutation(np.arange(1, len(entries)))]
    return [entries[0], *rest][:MENU_MAX]


def _menus(rng: np.random.Generator, space: LayoutSpace, defaults: np.ndarray, sizes: np.ndarray, *,
           local: bool, accept=None, tries: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """Menus ``(g, MENU_MAX, 18)`` (entry 0: the default) and how many entries each group got.

    ``accept(group, candidate) -> bool`` filters candidates (the default search's estimate). A convolution
    or dot group's candidates are the product of its tensors' orders (``_product_menu``), all of them in
    the random search; a reshape group's are drawn as before (``sizes`` of them at most).
    """
    g = space.groups
    menus = np.repeat(defaults[space.leaders][:, None, :], MENU_MAX, axis=1)
    count = np.ones(g, dtype=np.int64)
    for k in range(g):
        leader = int(space.leaders[k])
        if space.kinds[leader] in MXU_OPCODES:
            for cand in _product_menu(rng, space, leader, defaults[leader])[1:]:
                if accept is None or accept(k, cand):
                    menus[k, count[k]] = cand
                    count[k] += 1
            continue
        for _ in range(tries * int(sizes[k])):
            if count[k] >= sizes[k]:
                break
            base = menus[k, int(rng.integers(count[k]))] if local else defaults[leader]
            cand = _candidate(rng, space, leader, base, local=local)
            if any(np.array_equal(cand, menus[k, s]) for s in range(count[k])):
                continue
            if accept is not None and not accept(k, cand):
                continue
            menus[k, count[k]] = cand
            count[k] += 1
    return menus, count


def _random_choices(rng: np.random.Generator, count: np.ndarray, n_configs: int) -> np.ndarray:
    """Each group picks a menu entry with its own uneven odds; a share of the runs re-measure earlier ones."""
    g = len(count)
    choice = np.zeros((n_configs, g), dtype=np.int64)
    for k in range(g):
        odds = rng.dirichlet(np.full(int(count[k]), 1.5))
        choice[:, k] = rng.choice(int(count[k]), size=n_configs, p=odds)
    if rng.random() < 0.5:
        choice[0] = 0  # the default among them
    repeats = int(n_configs * rng.uniform(0.1, 0.45))
    if repeats and n_configs - repeats > 0:
        choice[n_configs - repeats:] = choice[rng.integers(n_configs - repeats, size=repeats)]
    return choice


def _default_choices(rng: np.random.Generator, count: np.ndarray, n_configs: int, acceptable, *,
                     duplicate_share: float, exact_count: bool) -> np.ndarray:
    """Menu choices ``(c, g)`` of the default (local) search: moves of one to three groups that the
    estimate accepts, then re-measurements (the default most often) up to ``n_configs``."""
    g = len(count)
    distinct_target = max(1, int(round(n_configs * (1.0 - duplicate_share))))
    accepted = [np.zeros(g, dtype=np.int64)]
    seen = {accepted[0].tobytes()}
    movable = np.flatnonzero(count > 1)
    batch = 256
    for _ in range(40):
        if len(accepted) >= distinct_target or len(movable) == 0:
            break
        parents = np.stack(accepted)[rng.integers(len(accepted), size=batch)]
        children = parents.copy()
        groups = movable[rng.integers(len(movable), size=(batch, 3))]
        moves = np.arange(3)[None, :] < 1 + rng.binomial(2, 0.3, size=(batch, 1))
        values = rng.integers(0, count[groups])
        rows = np.repeat(np.arange(batch)[:, None], 3, axis=1)
        children[rows[moves], groups[moves]] = values[moves]
        keep = acceptable(children)
        for child in children[keep]:
            key = child.tobytes()
            if key not in seen and len(accepted) < distinct_target:
                seen.add(key)
                accepted.append(child)
    accepted_arr = np.stack(accepted)
    if not exact_count:
        n_configs = min(n_configs, max(2, math.ceil(len(accepted_arr) / (1.0 - duplicate_share))))
    extra = n_configs - len(accepted_arr)
    weights = np.ones(len(accepted_arr))
    weights[0] = 1.0 + 0.1 * len(accepted_arr)
    repeats = (rng.choice(len(accepted_arr), size=extra, p=weights / weights.sum()) if extra > 0
               else np.zeros(0, int))
    return accepted_arr[np.concatenate([np.arange(len(accepted_arr)), repeats])[:n_configs]]


def measure_layout_runs(
    graph: HloGraph, rng: np.random.Generator, *, search: str, source: str, n_configs: int,
    exact_count: bool = True, space: LayoutSpace | None = None,
) -> LayoutRuns:
    """Configurations of one search over ``graph``, measured with the hidden cost model.

    ``space`` (``layout_space``) is shared by the two searches of a program so that they tie the same
    layout groups; without it one is drawn from ``rng``. ``exact_count`` False lets a default search
    that finds few distinct configurations return fewer than ``n_configs`` (train and valid graphs);
    test graphs get exactly ``n_configs``.
    """
    if space is None:
        space = layout_space(graph, rng)
    config_ids = space.config_ids
    defaults = space.default_setting()
    # Hidden: how many times the program runs per measurement, keeping the default's runtime in the
    # real range (1 ms - 1 s).
    tables = layout_cost.layout_tables(graph, config_ids, 1.0, space.physics)
    per_run = layout_cost.layout_runtime(tables, defaults[None])[0]
    tables.steps = float(np.clip(10 ** rng.uniform(0.5, 2.5), 1e6 / per_run, 1e9 / per_run))
    if space.groups == 0:
        configs = np.zeros((n_configs, 0, 3 * SLOTS), dtype=np.int8)
        sigma = sigma_repeat = float(rng.uniform(1.5e-4, 4e-4))
    elif search == "default":
        share = rng.uniform(0.4, 0.9) if source == "nlp" else rng.uniform(0.1, 0.3)
        tolerance = float(rng.uniform(0.005, 0.025))
        reference = layout_cost.layout_runtime(tables, defaults[None])[0]

        def acceptable_configs(configs: np.ndarray) -> np.ndarray:  # small perturbations only, either way
            return np.abs(layout_cost.layout_runtime(tables, configs) / reference - 1.0) <= tolerance

        def accept(k: int, cand: np.ndarray) -> bool:  # group k alone moved to ``cand``
            trial = defaults.copy()
            trial[space.group == k] = cand
            return bool(acceptable_configs(trial[None])[0])

        sizes = rng.integers(2, MENU_MAX, size=space.groups)  # 2-8 settings
        menus, count = _menus(rng, space, defaults, sizes, local=True, accept=accept)
        choice = _default_choices(rng, count, n_configs,
                                  lambda ch: acceptable_configs(space.expand(menus, ch)),
                                  duplicate_share=float(share), exact_count=exact_count)
        configs = space.expand(menus, choice)
        sigma = sigma_repeat = float(rng.uniform(0.5e-5, 2e-5))
    else:
        sizes = rng.integers(3, MENU_MAX + 1, size=space.groups)  # 3-9 settings
        menus, count = _menus(rng, space, defaults, sizes, local=False)
        configs = space.expand(menus, _random_choices(rng, count, n_configs))
        sigma = sigma_repeat = float(rng.uniform(1.5e-4, 4e-4))
    configs = configs[rng.permutation(len(configs))]
    # Measurement noise is what re-measurements of one configuration show in the released data: a
    # few parts per million around a default (a quiet, warmed-up machine measuring near-identical
    # programs), a few parts in ten thousand in a random search. One measurement per distinct
    # configuration; a re-measurement adds its own noise of the same size.
    flat = configs.reshape(len(configs), -1)
    _, first, inverse = np.unique(flat, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    measured = chip.measure(rng, layout_cost.layout_runtime(tables, configs[first]), sigma)
    runtime = measured[inverse].astype(np.float64)
    again = np.arange(len(configs)) != first[inverse]
    runtime[again] *= np.exp(rng.normal(0.0, sigma_repeat, size=int(again.sum())))
    runtime = np.maximum(np.rint(runtime), 1).astype(np.int64)
    # int8: a quarter of float32's memory for the largest files (100,040 configs); written as float32.
    return LayoutRuns(config_ids, configs, runtime)
