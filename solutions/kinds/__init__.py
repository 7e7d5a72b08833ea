"""One adapter per task kind: all that the methods, ``solve`` and ``rank`` know of a kind.

The task (``competition.tasks``) says what a kind's files, rows and metric are; its adapter here says what
a solution does with its configs, found through the task (``kind_of(task)``):

- the engineered features (``graph_facts``, ``config_feature_names``, ``config_features``) that gbdt
  reads, and the gnn's per-config input where configs are per graph (``config_vectors``);
- how a graph's configs are told apart (``config_keys``: gbdt's queries and de-duplication);
- the gnn's family of network (``gnn_family``: configs per configurable node or per graph);
- the heuristic's rule (``heuristic_cost``; None where the kind has none);
- ``rank``'s programs: the file forms it reads, the candidate checks, the samples it draws and each
  change in the program's words.

Whether a kind's graphs are pruned and cached is the task's to say (``Task.has_configurable_nodes``,
``Task.cached``), because the data layer reads it too. A new kind is a ``Task`` (and its graph class) plus
an adapter registered with ``register``; docs/architecture.md, "Adding a task kind", shows the steps.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from competition.data.graphs import Graph
from competition.tasks import Task
from solutions.features.graph_facts import KERNEL_FACTS, GraphFacts
from solutions.features.log_scale import signed_log1p
from solutions.kinds.program import Program, RankError, modal_setting

#: The gnn's two families of network: one config per configurable node (its configs are read per node
#: and pooled), or one config vector per graph (read once, beside the pooled graph).
CONFIGS_PER_NODE = "configs per node"
CONFIGS_PER_GRAPH = "configs per graph"


class KindError(ValueError):
    """A task kind with no adapter: the message names it and the kinds that have one."""


class Kind:
    """The adapter of one task kind. A subclass fills in what its kind has; the defaults here are those
    of a kind whose graphs carry one config vector each (``ConfigsPerGraph``)."""

    task: Task
    configs: str  # what the configs are, in words (for messages)
    graph_facts: GraphFacts = KERNEL_FACTS
    gnn_family: str = CONFIGS_PER_GRAPH

    # -- features ----------------------------------------------------------------------------------

    def config_feature_names(self) -> list[str]:
        raise NotImplementedError

    def config_features(self, graph: Graph, configs: np.ndarray | None = None) -> np.ndarray:
        """(c', len(config_feature_names())) float64 features of ``configs`` (indices; None: all)."""
        raise NotImplementedError

    def config_width(self) -> int:
        """Columns of one config (a layout row's 18 for configs per node), from the task's file spec."""
        return int(self.task.npz_spec[self.task.config_key][1][-1])

    def config_vector_width(self) -> int:
        """Columns of the gnn's input per config of a kind with one config per graph (``config_vectors``)."""
        return self.config_width()

    def config_vectors(self, graph: Graph) -> np.ndarray:
        """What the gnn reads per config of a kind with one config per graph: each column's signed log
        -> (c, config_vector_width()) float32."""
        return signed_log1p(np.asarray(graph.configs))

    def config_keys(self, graph: Graph) -> np.ndarray:
        """What tells a graph's configs apart, one row per config (equal rows: the same config)."""
        return graph.configs

    # -- the heuristic -----------------------------------------------------------------------------

    def heuristic_cost(self, graph: Graph) -> np.ndarray | None:
        """(c,) the heuristic's estimated cost of each config, lower = faster; None: no rule for the kind."""
        return None

    # -- rank --------------------------------------------------------------------------------------

    collection: str = ""  # rank's default --collection
    noun: str = ""  # "layout program", "tile kernel"
    candidate_options: str = ""  # how to give candidates to a program without measured configs
    sample_refusal: str = ""  # why --sample cannot draw configs of this kind ("": it can)

    def from_tuning(self, path: Path, tuning: dict, kernel: str | None) -> Program:
        raise RankError(f"{path}: rank does not read tuning files of {self.task.name} graphs")

    def from_module(self, path: Path, module: dict, message: str) -> Program:
        raise RankError(f"{path}: rank does not read modules as {self.task.name} graphs")

    def from_graph(self, path: Path, graph: Graph) -> Program:
        return Program(path, graph, None, "npz")

    def nodes_note(self, program: Program) -> str:
        return ""

    def problem(self, values: np.ndarray, program: Program) -> str | None:
        """Why the candidate configs ``values`` (float64, the program's config shape) are refused, or None."""
        bad = ~np.isfinite(values)
        if not bad.any():
            return None
        c, column = (int(i) for i in np.argwhere(bad.reshape(len(values), -1))[0])
        return f"config {c}, column {column} is not a finite number"

    def changes(self, config: np.ndarray, reference: np.ndarray, program: Program) -> list[dict]:
        """What ``config`` changes against ``reference``, each with a ``text`` in the program's words."""
        columns = np.flatnonzero(np.asarray(config).ravel() != np.asarray(reference).ravel())
        return [{"column": int(i), "from": float(np.ravel(reference)[i]), "to": float(np.ravel(config)[i]),
                 "text": f"column {int(i)} {np.ravel(config)[i]:g} instead of {np.ravel(reference)[i]:g}"}
                for i in columns]

    def modal(self, configs: np.ndarray) -> np.ndarray:
        """The most common setting of each unit among ``configs``: the reference when there is no other."""
        return modal_setting(configs[:, None, :])[0]

    def single_changes(self, config: np.ndarray, reference: np.ndarray,
                       program: Program) -> list[tuple[dict, np.ndarray]]:
        """Each change of ``changes`` applied alone to ``reference`` (``rank --explain``); a kind whose
        changes cannot be applied one at a time refuses."""
        raise RankError(f"--explain takes a candidate apart change by change; it does not do so for "
                        f"{self.noun or self.task.name + ' graph'}s")

    def with_changes(self, config: np.ndarray, reference: np.ndarray, program: Program,
                     chosen: list[int]) -> np.ndarray:
        """``reference`` with the changes of ``config`` at positions ``chosen`` of ``changes``' list."""
        raise RankError(f"--explain does not apply {self.task.name} changes one at a time")

    def sample_menus(self, configs: np.ndarray, count: int, seed: int) -> np.ndarray:
        raise RankError(self.sample_refusal or f"--sample does not draw {self.task.name} configs")

    def sample_space(self, program: Program, count: int, seed: int) -> np.ndarray:
        raise RankError(self.sample_refusal or f"--sample does not draw {self.task.name} configs")


class ConfigsPerGraph(Kind):
    """A kind whose graphs carry one config vector each, of any columns: features are each column's signed
    log beside the kernel's output facts; no heuristic rule; ``rank`` reads its npz files."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self.configs = f"{task.name} config columns"
        self.collection = ""
        self.noun = f"{task.name} graph"
        self.candidate_options = "--configs FILE"

    def config_feature_names(self) -> list[str]:
        return [f"log_config_{i}" for i in range(self.config_width())]

    def config_features(self, graph: Graph, configs: np.ndarray | None = None) -> np.ndarray:
        values = graph.configs if configs is None else graph.configs[configs]
        return signed_log1p(np.asarray(values, dtype=np.float64)).astype(np.float64)


_KINDS: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    """Make ``kind`` the adapter of its task (a new kind's adapter module calls this once)."""
    _KINDS[kind.task.name] = kind
    return kind


def kind_of(task: Task | str) -> Kind:
    """The adapter of ``task`` (a task or its name); ``KindError`` naming the kinds that have one."""
    name = task if isinstance(task, str) else task.name
    found = _KINDS.get(name)
    if found is None or (not isinstance(task, str) and found.task is not task):
        raise KindError(f"no adapter for task kind {name!r} in solutions.kinds (kinds with one: "
                        f"{', '.join(sorted(_KINDS))})")
    return found


# The kit's own adapters register themselves when the package is first imported (after what they use).
from solutions.kinds import layout, tile  # noqa: E402, F401
