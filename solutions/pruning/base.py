"""The transform base: what a pruning transform is, how transforms chain, and how names become transforms.

A transform is a small object in the PyTorch Geometric transform style (``GraphTransform``):
``transform(graph)`` returns the pruned graph, ``transform.prune(graph)`` the whole ``PruneResult``;
``transform.name`` spells it with every parameter and ``transform.cache_key`` is that name as a
file-name-safe slug plus ``TRANSFORM_VERSION``. ``Compose([...])`` chains transforms.

**Pruning names.** A pruning is also a setting, chosen by a short name (``tpugraphs solve --param
pruning=NAME``) and stored with a saved model, which rebuilds it from the name:

    NAME := none | STEP [+ STEP ...]          steps apply left to right (Compose)

===========================  ==================================================================
``none``                     no pruning (what ``--no-prune`` means); cannot be combined
``configurable``             ``ConfigurableOnly()``: configurable nodes only, no edges
``configurable:edges``       ``ConfigurableOnly(keep_edges=True)``: and the edges between them
``onehop``                   ``OneHop()``: configurable nodes and their neighbours (the default)
``khop:K``                   ``KHopToConsumers(K)``: K hops toward consumers
``khop:K:P``                 ``KHopToConsumers(K, producers=P)``: and P hops toward producers
``merged``                   ``MergeDroppedRuns()``: configurable nodes, each run of the rest merged
``merged:SELECTION``         ``MergeDroppedRuns(SELECTION)``, SELECTION one of the four above it
===========================  ==================================================================

e.g. ``khop:3:1``, ``merged:onehop``, ``khop:4+merged``. ``parse_pruning(name)`` builds the transform
(``None`` for ``none``) and ``pruning_setting(transform)`` spells it back in the canonical form
(``khop:3:0`` and ``merged:configurable`` are read, and written back as ``khop:3`` and ``merged``).
A transform whose parameters have no name (``MergeDroppedRuns(aggregate="sum")``, an empty
``Compose``, a subclass of your own) has ``setting`` None: usable in code, not as a saved setting.

**Adding a transform** is one class in ``transforms.py``: subclass ``GraphTransform`` (or
``NodeSelection``), give it ``name``, ``prune`` (or ``select``) and, to make it a setting, a
``keyword``, ``syntax``, ``summary``, ``from_args`` and ``setting``, and decorate it with
``@register_step``.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Sequence
from typing import ClassVar, TypeVar

import numpy as np

from competition.data.graphs import LayoutGraph
from solutions.pruning.graph_ops import PruneResult, PruningStats, check_layout_graph, prune_to_selection

TRANSFORM_VERSION = 1  # bump when a transform's output changes for the same input (invalidates caches)
NO_PRUNING = "none"  # the pruning name meaning "leave the graph as it is"
STEP_SEPARATOR = "+"  # joins the steps of a composed pruning name
ARGUMENT_SEPARATOR = ":"  # separates a step's keyword from its arguments


class PruningNameError(ValueError):
    """A pruning name that names no transform; the message says what is wrong and lists the valid names."""


# --------------------------------------------------------------------------------------------------
# The protocol


class GraphTransform:
    """Base class: a named pruning step. Subclasses implement ``name`` and ``prune``.

    Registered transforms (``@register_step``) also have a pruning name: ``keyword`` is its first word,
    ``syntax`` and ``summary`` describe it in error messages and help, ``from_args`` builds the
    transform from the words after the keyword, and ``setting`` spells an instance back.
    """

    keyword: ClassVar[str | None] = None  # first word of the pruning name; None: not a named step
    syntax: ClassVar[tuple[str, ...]] = ()  # the spellings, e.g. ("khop:K", "khop:K:P")
    summary: ClassVar[str] = ""  # one line for help texts

    @property
    def name(self) -> str:
        raise NotImplementedError

    @property
    def cache_key(self) -> str:
        """File-name-safe key naming the transform, its parameters and the algorithm version."""
        return f"{re.sub(r'[^A-Za-z0-9]+', '_', self.name).strip('_')}-v{TRANSFORM_VERSION}"

    @property
    def setting(self) -> str | None:
        """The pruning name that rebuilds this transform (``parse_pruning``); None when it has none."""
        return None

    @classmethod
    def from_args(cls, args: list[str]) -> GraphTransform:
        """The transform a pruning step names: ``args`` are the words after the keyword
        (``khop:3:1`` -> ``["3", "1"]``). ValueError with a short reason when they do not fit."""
        raise NotImplementedError

    def prune(self, graph: LayoutGraph) -> PruneResult:
        raise NotImplementedError

    def __call__(self, graph: LayoutGraph) -> LayoutGraph:
        return self.prune(graph).graph

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GraphTransform) and self.cache_key == other.cache_key

    def __hash__(self) -> int:
        return hash(self.cache_key)


class NodeSelection(GraphTransform):
    """A transform that keeps a set of nodes and the edges between them (the induced subgraph)."""

    def select(self, graph: LayoutGraph) -> np.ndarray:
        """(n,) bool: the nodes to keep. Always includes every configurable node."""
        raise NotImplementedError

    def prune(self, graph: LayoutGraph) -> PruneResult:
        check_layout_graph(graph)
        return prune_to_selection(graph, self.select(graph))


class Compose(GraphTransform):
    """Apply transforms one after another; the mapping and stats relate the last output to the first input.

    Its pruning name joins the steps' names with ``+`` (``khop:2+configurable:edges``).

    >>> from solutions.pruning import ConfigurableOnly, KHopToConsumers
    >>> pipeline = Compose([KHopToConsumers(2), ConfigurableOnly(keep_edges=True)])
    >>> pipeline.name
    'compose(khop_to_consumers(k=2,producers=0), configurable_only(keep_edges=True))'
    >>> pipeline.setting
    'khop:2+configurable:edges'
    >>> pipeline.prune(example_graph()).new_to_old
    array([2, 6])
    """

    def __init__(self, transforms: Sequence[GraphTransform]) -> None:
        self.transforms = list(transforms)
        for t in self.transforms:
            if not isinstance(t, GraphTransform):
                raise TypeError(f"Compose takes pruning transforms, got {t!r}")

    @property
    def name(self) -> str:
        return f"compose({', '.join(t.name for t in self.transforms)})"

    @property
    def setting(self) -> str | None:
        steps = [t.setting for t in self.transforms]
        if not steps or None in steps:
            return None
        return STEP_SEPARATOR.join(steps)  # a nested Compose flattens: applying a+b then c is a+b+c

    def prune(self, graph: LayoutGraph) -> PruneResult:
        check_layout_graph(graph)
        n = graph.num_nodes
        result = PruneResult(graph, np.arange(n), np.arange(n), PruningStats.of(graph, graph))
        for transform in self.transforms:
            step = transform.prune(result.graph)
            result = PruneResult(
                graph=step.graph,
                old_to_new=_follow(step.old_to_new, result.old_to_new),
                new_to_old=_follow(result.new_to_old, step.new_to_old),
                stats=PruningStats.of(graph, step.graph),
            )
        return result


def _follow(second: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Compose index maps where -1 means "none": ``second[first]``, keeping -1."""
    out = np.full(first.shape, -1, dtype=np.int64)
    present = first >= 0
    out[present] = second[first[present]]
    return out


# --------------------------------------------------------------------------------------------------
# The registry of pruning names

STEPS: dict[str, type[GraphTransform]] = {}  # keyword -> transform class, filled by @register_step

T = TypeVar("T", bound=type[GraphTransform])


def register_step(cls: T) -> T:
    """Class decorator: make ``cls`` a pruning step named by its ``keyword``."""
    keyword = cls.keyword
    if not keyword or not re.fullmatch(r"[a-z][a-z0-9_]*", keyword) or keyword == NO_PRUNING:
        raise ValueError(f"{cls.__name__}.keyword must be a lower-case word other than {NO_PRUNING!r}, "
                         f"got {keyword!r}")
    if keyword in STEPS and STEPS[keyword] is not cls:
        raise ValueError(f"pruning keyword {keyword!r} is taken by {STEPS[keyword].__name__}")
    if not cls.syntax or not cls.summary:
        raise ValueError(f"{cls.__name__} needs a syntax and a summary to be a pruning step")
    STEPS[keyword] = cls
    return cls


def pruning_names() -> list[str]:
    """Every spelling the registry reads, for messages and help: ``["none", "configurable", ...]``."""
    return [NO_PRUNING, *(spelling for cls in STEPS.values() for spelling in cls.syntax)]


def pruning_help() -> str:
    """The pruning names with one line each, as ``tpugraphs solve --help`` lists them."""
    rows = [(NO_PRUNING, "no pruning (the same as --no-prune)")]
    rows += [(" | ".join(cls.syntax), cls.summary) for cls in STEPS.values()]
    rows.append((f"A{STEP_SEPARATOR}B", "step A, then step B on its result (any number of steps)"))
    width = max(len(spelling) for spelling, _ in rows)
    lines = []
    for spelling, summary in rows:
        wrapped = textwrap.wrap(summary, width=max(40, 100 - width - 4))
        lines.append(f"  {spelling:<{width}}  {wrapped[0]}")
        lines += [f"  {'':<{width}}  {more}" for more in wrapped[1:]]
    return "\n".join(lines)


def _valid_names() -> str:
    return (f"valid names: {', '.join(pruning_names())}, or steps joined by {STEP_SEPARATOR!r} "
            f"(e.g. onehop{STEP_SEPARATOR}merged)")


def parse_step(text: str) -> GraphTransform:
    """One step of a pruning name (``"khop:3"``) -> its transform; ValueError with a short reason."""
    keyword, *args = text.split(ARGUMENT_SEPARATOR)
    if keyword and "" in args:
        raise ValueError(f"step {text!r} has an empty argument")
    if keyword == NO_PRUNING:
        raise ValueError(f"{NO_PRUNING!r} cannot be combined with other steps")
    if keyword not in STEPS:
        raise ValueError(f"unknown step {keyword!r}" if keyword else
                         f"step {text!r} has no keyword before {ARGUMENT_SEPARATOR!r}" if text
                         else "a step is empty")
    return STEPS[keyword].from_args(args)


def parse_pruning(name: object) -> GraphTransform | None:
    """A pruning name -> its transform (``None`` for ``"none"``); ``PruningNameError`` for anything else.

    >>> parse_pruning("khop:3:1")
    <KHopToConsumers khop_to_consumers(k=3,producers=1)>
    >>> parse_pruning("onehop+merged").setting
    'onehop+merged'
    >>> parse_pruning("none") is None
    True
    """
    if not isinstance(name, str):
        raise PruningNameError(f"a pruning name is text, got {name!r}; {_valid_names()}")
    text = name.strip()
    if text == NO_PRUNING:
        return None
    try:
        if not text:
            raise ValueError("the name is empty")
        steps = [parse_step(step.strip()) for step in text.split(STEP_SEPARATOR)]
    except ValueError as exc:
        raise PruningNameError(f"pruning {name!r}: {exc}; {_valid_names()}") from None
    return steps[0] if len(steps) == 1 else Compose(steps)


def pruning_setting(transform: GraphTransform | None) -> str:
    """A transform -> its canonical pruning name (``"none"`` for None); ValueError when it has none."""
    if transform is None:
        return NO_PRUNING
    setting = transform.setting
    if setting is None:
        raise ValueError(f"{transform!r} has no pruning name (only the transforms parse_pruning "
                         "builds have one)")
    return setting


def parse_count(text: str, what: str) -> int:
    """A step argument that must be an integer >= 0 (``"3"`` -> 3)."""
    if not re.fullmatch(r"[0-9]+", text):
        raise ValueError(f"{what} must be an integer >= 0, got {text!r}")
    return int(text)


def no_args(keyword: str, args: list[str], build: Callable[[], GraphTransform]) -> GraphTransform:
    """``build()`` when a step got no arguments; ValueError naming the extra words otherwise."""
    if args:
        raise ValueError(f"{keyword} takes no arguments, got {ARGUMENT_SEPARATOR.join(args)!r}")
    return build()
