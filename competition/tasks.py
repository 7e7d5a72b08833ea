"""The two task kinds, tile and layout, as objects: everything that differs between them lives here.

A collection (``competition.collections``) names its task; code that must behave differently for tile
and layout asks the task instead of branching on the collection's name:

- the npz spec of a graph file (``npz_spec``, ``config_key``),
- what a submission row must hold (``required_length``, ``max_length``, ``expectation``,
  ``short_row_error``) - the validator's per-row rule reads these,
- the labels a solution carries (``check_normalizers``) and how they are prepared and scored
  (``prepare_labels``, ``score_graphs``, ``metric``),
- turning predicted runtimes into a submission row (``row_from_predictions``) and the quantity a
  model should rank (``ranking_target``),
- what solutions may ask of a kind, as named capabilities: how many listed configs count
  (``top_k``), how many configs a graph needs for its score to say anything (``informative_configs``),
  what follows from configs set per configurable node (``config_per_node``, read only here: graphs
  with configurable nodes, ``has_configurable_nodes``; configs read through the memory-mapped
  processed cache, ``cached``; test configs sampled by ``prepare``, ``prepare_samples_configs``) and
  whether a model may be selected by cross-validation when few valid graphs are informative
  (``cross_validates``).

Code outside this module and the graph classes (``competition.data.graphs``) never tests a task's or a
collection's name: it asks one of these.

Adding a collection is one row of ``COLLECTIONS``; adding a task kind is one subclass of ``Task``.

>>> TILE.required_length(3), TILE.required_length(900), LAYOUT.required_length(900)
(3, 5, 900)
>>> TILE.row_from_predictions(np.array([5.0, 1.0, 4.0, 2.0, 3.0, 0.5])).tolist()
[5, 1, 3, 4, 2]
>>> LAYOUT.row_from_predictions(np.array([3.0, 1.0, 2.0, 1.0])).tolist()
[1, 3, 2, 0]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from competition.errors import RowError
from competition.metrics import KENDALL_TAU, TILE_SLOWDOWN, Metric
from competition.metrics.layout import kendall_tau_score, prepare_layout_labels, score_layout_labels
from competition.metrics.packing import pack_top_configs
from competition.metrics.tile import prepare_tile_labels, score_tile_labels, tile_slowdown_score
from competition.text import plural

#: How many indices of a tile row count toward the score.
TILE_TOP_K = 5

NODE_FEAT_DIM = 140
TILE_CONFIG_DIM = 24
LAYOUT_CONFIG_DIM = 18  # output, input, kernel layout: 6 slots each

# key -> (dtype, shape pattern), keys in the order of the released files' members. Letters name sizes
# that must agree across keys; numbers are fixed. The loader, the processed cache and the generator
# all read their keys from here.
NpzSpec = dict[str, tuple[np.dtype, tuple[str | int, ...]]]
_GRAPH_SPEC: NpzSpec = {
    "node_feat": (np.dtype(np.float32), ("n", NODE_FEAT_DIM)),
    "node_opcode": (np.dtype(np.uint8), ("n",)),
    "edge_index": (np.dtype(np.int64), ("m", 2)),
}
_RUNTIME_SPEC: NpzSpec = {"config_runtime": (np.dtype(np.int64), ("c",))}


@dataclass(frozen=True, eq=False)
class Task:
    """What one kind of collection means: its files, its rows, its labels and its metric."""

    name: str
    metric: Metric = field(repr=False)
    config_key: str = field(repr=False)  # the npz key of the config tensor
    npz_spec: NpzSpec = field(repr=False)
    has_normalizers: bool = field(repr=False)  # do solution rows carry Normalizers?
    config_per_node: bool = field(repr=False)  # one config row per configurable node (prunable, cached)
    # Too few informative valid graphs: select a model by cross-validation over the train graphs
    # instead (worth it where graphs are small and many, like tile kernels).
    cross_validates: bool = field(default=False, repr=False)

    def __repr__(self) -> str:
        return f"Task({self.name!r})"

    # -- capabilities solutions ask for -------------------------------------------------------------

    @property
    def top_k(self) -> int | None:
        """How many listed configs the metric reads; None when it reads the whole ranking."""
        return None

    @property
    def informative_configs(self) -> int:
        """Fewest configs a graph needs for its score to say anything about a ranking."""
        return 2  # one config ranks one way only

    @property
    def has_configurable_nodes(self) -> bool:
        """Whether a graph of this kind names configurable nodes (the second axis of its configs), which
        pruning keeps and descriptions count."""
        return self.config_per_node

    @property
    def cached(self) -> bool:
        """Whether graphs of this kind are read through the processed cache (configs memory-mapped int8:
        a layout file can hold 100k configs); files of the other kinds are small and read whole."""
        return self.config_per_node

    @property
    def prepare_samples_configs(self) -> bool:
        """Whether ``prepare`` keeps a sample of a held-out graph's configs (else every config)."""
        return self.config_per_node

    def configurable_node_count(self, config_shape: tuple[int, ...]) -> int | None:
        """How many configurable nodes a config tensor of ``config_shape`` sets (None: configs per graph)."""
        return config_shape[1] if self.config_per_node and len(config_shape) > 1 else None

    # -- submission rows ---------------------------------------------------------------------------

    def required_length(self, n_configs: int) -> int:
        """Smallest number of indices a valid row lists for a graph with ``n_configs`` configs."""
        raise NotImplementedError

    def max_length(self, n_configs: int) -> int | None:
        """Largest number of indices a valid row may list; None when any number of distinct ones is fine."""
        raise NotImplementedError

    def expectation(self, n_configs: int) -> str:
        """What a row must hold, in words, for messages."""
        raise NotImplementedError

    def short_row_error(self, indices: np.ndarray, n_configs: int) -> RowError:
        """The error for a row of distinct, in-range indices that lists fewer than ``required_length``."""
        raise NotImplementedError

    def implied_config_count(self, listed: int, indices: list[int]) -> int:
        """The fewest configs a graph must have for a row of ``listed`` items holding ``indices`` to fit.

        For a format-only check without the test files: each row is held to its own indices.
        """
        raise NotImplementedError

    def row_from_predictions(self, predicted_runtime: np.ndarray) -> np.ndarray:
        """Config indices fastest first, as many as a row lists; ties broken by config index."""
        return np.argsort(np.asarray(predicted_runtime), kind="stable")

    def scored_part(self, row: np.ndarray) -> np.ndarray:
        """The indices of a row the metric reads (all of them, unless the task says otherwise)."""
        return row

    # -- labels and scoring ------------------------------------------------------------------------

    def check_normalizers(self, runtimes: np.ndarray, normalizers: np.ndarray, where: str,
                          row_id: str) -> str | None:
        """Why a solution row's Normalizers do not fit this task (None when they do)."""
        raise NotImplementedError

    def ranking_target(self, runtimes: np.ndarray, normalizers: np.ndarray | None) -> np.ndarray:
        """The per-config quantity the metric ranks (lower = faster)."""
        raise NotImplementedError

    def prepare_labels(self, runtimes: np.ndarray, normalizers: np.ndarray | None, offsets: np.ndarray):
        """The solution-only part of the metric, computed once per solution."""
        raise NotImplementedError

    def score_graphs(self, rows: Sequence[np.ndarray], prepared) -> np.ndarray:
        """Per-graph metric values for rows given in the prepared labels' graph order."""
        raise NotImplementedError

    def score_graph(self, row: np.ndarray, runtimes: np.ndarray, normalizers: np.ndarray | None) -> float:
        """The metric of one labelled graph for one row (the readable per-graph definition)."""
        raise NotImplementedError


@dataclass(frozen=True, eq=False, repr=False)
class TileTask(Task):
    """Kernels with one 24-d config per run; a row lists the 5 configs predicted fastest."""

    k: int = TILE_TOP_K

    @property
    def top_k(self) -> int | None:
        return self.k

    @property
    def informative_configs(self) -> int:
        return self.k + 1  # with k or fewer configs the best is always listed: the score is 1.0

    def required_length(self, n_configs: int) -> int:
        return min(self.k, n_configs)

    def max_length(self, n_configs: int) -> int | None:
        return None  # a full ranking is tolerated; only the first k indices count

    def expectation(self, n_configs: int) -> str:
        return (f"at least {self.required_length(n_configs)} distinct config indices out of "
                f"0..{n_configs - 1}, fastest first, separated by ';'")

    def implied_config_count(self, listed: int, indices: list[int]) -> int:
        return max([listed, *(i + 1 for i in indices)])

    def row_from_predictions(self, predicted_runtime: np.ndarray) -> np.ndarray:
        return super().row_from_predictions(predicted_runtime)[: self.k]

    def scored_part(self, row: np.ndarray) -> np.ndarray:
        return row[: self.k]  # only the first k listed configs count

    def short_row_error(self, indices: np.ndarray, n_configs: int) -> RowError:
        count = indices.size
        only = "only " if n_configs < self.k else ""
        return RowError(
            "too-short",
            f"tile row lists {count} config{plural(count)}; expected at least "
            f"{self.required_length(n_configs)} (the graph has {only}{n_configs} configs)",
        )

    def check_normalizers(self, runtimes: np.ndarray, normalizers: np.ndarray, where: str,
                          row_id: str) -> str | None:
        if normalizers.size != runtimes.size or normalizers.min() <= 0:
            return (f"{where}: tile row {row_id} needs one positive normalizer per runtime "
                    f"({runtimes.size}), got {normalizers.size}")
        return None

    def ranking_target(self, runtimes: np.ndarray, normalizers: np.ndarray | None) -> np.ndarray:
        assert normalizers is not None, "tile labels carry normalizers"
        return np.asarray(runtimes) / np.asarray(normalizers)

    def prepare_labels(self, runtimes: np.ndarray, normalizers: np.ndarray | None, offsets: np.ndarray):
        return prepare_tile_labels(runtimes, normalizers, offsets)

    def score_graphs(self, rows: Sequence[np.ndarray], prepared) -> np.ndarray:
        return score_tile_labels(pack_top_configs(rows, k=self.k), prepared, k=self.k)

    def score_graph(self, row: np.ndarray, runtimes: np.ndarray, normalizers: np.ndarray | None) -> float:
        return tile_slowdown_score(np.asarray(row)[: self.k], runtimes, normalizers, k=self.k)


@dataclass(frozen=True, eq=False, repr=False)
class LayoutTask(Task):
    """Whole programs with one 18-d config per configurable node; a row ranks every config."""

    def required_length(self, n_configs: int) -> int:
        return n_configs

    def max_length(self, n_configs: int) -> int | None:
        return n_configs

    def expectation(self, n_configs: int) -> str:
        return f"a permutation of all config indices 0..{n_configs - 1}, fastest first, separated by ';'"

    def implied_config_count(self, listed: int, indices: list[int]) -> int:
        return listed  # a layout row of k items must be a permutation of 0..k-1 (k bounds the work too)

    def short_row_error(self, indices: np.ndarray, n_configs: int) -> RowError:
        missing = np.flatnonzero(np.bincount(indices, minlength=n_configs) == 0)
        return RowError(
            "incomplete-permutation",
            f"layout row must be a full permutation of 0..{n_configs - 1}; {missing.size} "
            f"config{plural(missing.size)} {'is' if missing.size == 1 else 'are'} missing, e.g. "
            f"{int(missing[0])}",
        )

    def check_normalizers(self, runtimes: np.ndarray, normalizers: np.ndarray, where: str,
                          row_id: str) -> str | None:
        return f"{where}: layout row {row_id} must leave Normalizers empty" if normalizers.size else None

    def ranking_target(self, runtimes: np.ndarray, normalizers: np.ndarray | None) -> np.ndarray:
        return np.asarray(runtimes, dtype=np.float64)

    def prepare_labels(self, runtimes: np.ndarray, normalizers: np.ndarray | None, offsets: np.ndarray):
        return prepare_layout_labels(runtimes, offsets)

    def score_graphs(self, rows: Sequence[np.ndarray], prepared) -> np.ndarray:
        orders = np.concatenate(list(rows)) if len(rows) else np.zeros(0, np.int64)
        return score_layout_labels(orders, prepared)

    def score_graph(self, row: np.ndarray, runtimes: np.ndarray, normalizers: np.ndarray | None) -> float:
        return kendall_tau_score(row, runtimes)


TILE = TileTask(
    name="tile",
    metric=TILE_SLOWDOWN,
    config_key="config_feat",
    npz_spec={
        **_GRAPH_SPEC,
        "config_feat": (np.dtype(np.float32), ("c", TILE_CONFIG_DIM)),
        **_RUNTIME_SPEC,
        "config_runtime_normalizers": (np.dtype(np.int64), ("c",)),
    },
    has_normalizers=True,
    config_per_node=False,
    cross_validates=True,
)
LAYOUT = LayoutTask(
    name="layout",
    metric=KENDALL_TAU,
    config_key="node_config_feat",
    npz_spec={
        **_GRAPH_SPEC,
        "node_config_feat": (np.dtype(np.float32), ("c", "nc", LAYOUT_CONFIG_DIM)),
        "node_config_ids": (np.dtype(np.int64), ("nc",)),
        **_RUNTIME_SPEC,
        "node_splits": (np.dtype(np.int64), (1, "k")),
    },
    has_normalizers=False,
    config_per_node=True,
)
TASKS: dict[str, Task] = {task.name: task for task in (TILE, LAYOUT)}


def get_task(name: str) -> Task:
    """The task called ``name`` (``tile`` or ``layout``); a ValueError lists the valid names otherwise."""
    try:
        return TASKS[name]
    except KeyError:
        raise ValueError(f"unknown task {name!r}; expected one of {', '.join(TASKS)}") from None
