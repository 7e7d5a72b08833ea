"""The released npz format: typed graph objects, a checked loader and a writer.

Arrays keep the dtypes the competition actually released (docs/competition.md, Data format: Differences from
the upstream README), which differ from the upstream README in places: ``node_opcode`` is uint8,
``edge_index`` int64 with rows ``[consumer, producer]``, ``node_splits`` has shape ``(1, k)``. ``load_graph``
checks every key, dtype and shape and names the file and the rule on any problem, so a corrupt or truncated
download fails with an actionable message.
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import ClassVar

import numpy as np

from competition.collections import COLLECTIONS, Collection, Split
from competition.data.locate import resolve_data_dir
from competition.data.tree import split_dir
from competition.errors import DataFormatError
from competition.tasks import (
    LAYOUT,
    TASKS,
    TILE,
    Task,
    get_task,
)

__all__ = ["MAX_OPCODE", "Graph", "LayoutGraph", "TileGraph", "check_array", "expected_from_data_dir",
           "graph_class", "graph_kind", "iter_split", "list_split", "load_graph", "read_config_count",
           "read_config_runtime", "save_graph"]

MAX_OPCODE = 120

# task name -> the graph class of its files; a graph class names its task and registers itself here.
_GRAPH_CLASSES: dict[str, type[_GraphBase]] = {}


@dataclass
class _GraphBase:
    """What every graph holds; a subclass per task kind adds its config arrays and names its ``task``."""

    task: ClassVar[Task]
    # Shapes: n nodes, m edges, c configs.
    node_feat: np.ndarray  # (n, 140) float32
    node_opcode: np.ndarray  # (n,) uint8, 1..120 (0 = unknown)
    edge_index: np.ndarray  # (m, 2) int64, row [u, v]: u consumes the output of v
    config_runtime: np.ndarray  # (c,) int64 nanoseconds; all zeros in test files

    @property
    def num_nodes(self) -> int:
        return int(self.node_opcode.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.edge_index.shape[0])

    @property
    def num_configs(self) -> int:
        return int(self.config_runtime.shape[0])

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "task" in cls.__dict__:  # the class of a kind's files (not a view such as the cached graph)
            _GRAPH_CLASSES[cls.task.name] = cls

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays under their npz keys."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def configs(self) -> np.ndarray:
        """The config tensor (the task's ``config_key``), configs on the first axis."""
        return getattr(self, self.task.config_key)

    @property
    def normalizers(self) -> np.ndarray | None:
        """The per-config normalizers the metric divides by; None when the task has none."""
        return None

    @property
    def num_configurable_nodes(self) -> int | None:
        """How many nodes carry a per-node config; None when configs are per graph."""
        return None

    def ranking_target(self) -> np.ndarray:
        """(c,) the quantity the task's metric ranks (lower = faster)."""
        return self.task.ranking_target(self.config_runtime, self.normalizers)

    def _per_config_keys(self) -> set[str]:
        return {f.name for f in fields(self) if f.name in self.task.npz_spec
                and self.task.npz_spec[f.name][1][:1] == ("c",)}

    def select_configs(self, configs: np.ndarray):
        """The same graph keeping only ``configs`` (indices into the config axis)."""
        configs = np.asarray(configs, dtype=np.int64)
        per_config = self._per_config_keys()
        return graph_class(self.task)(**{name: value[configs] if name in per_config else value
                             for name, value in self.arrays().items()})

    def with_configs(self, configs: np.ndarray):
        """The same graph with other, unmeasured ``configs`` (the task's config tensor, configs first):
        every other per-config array is zero, as in a test file of the released data."""
        spec = self.task.npz_spec
        arrays = {name: np.zeros(len(configs), dtype=spec[name][0]) for name in self._per_config_keys()}
        arrays[self.task.config_key] = np.asarray(configs, dtype=spec[self.task.config_key][0])
        return graph_class(self.task)(**{**self.arrays(), **arrays})


@dataclass
class TileGraph(_GraphBase):
    """A tile-collection kernel: one 24-d configuration per run."""

    task: ClassVar[Task] = TILE
    config_feat: np.ndarray  # (c, 24) float32: kernel/output/input tile bounds
    config_runtime_normalizers: np.ndarray  # (c,) int64: runtime of the default config

    @property
    def normalizers(self) -> np.ndarray:
        """The per-config normalizers the tile metric divides by."""
        return self.config_runtime_normalizers

    def normalized_runtime(self) -> np.ndarray:
        """Runtimes divided by their normalizers: the quantity the tile metric ranks (docs/competition.md, The
        metric)."""
        return self.config_runtime / self.config_runtime_normalizers


@dataclass
class LayoutGraph(_GraphBase):
    """A layout-collection graph: one 18-d configuration per configurable node per run."""

    task: ClassVar[Task] = LAYOUT
    node_config_feat: np.ndarray  # (c, nc, 18) float32, values in {-1..5}
    node_config_ids: np.ndarray  # (nc,) int64: node positions of the configurable nodes
    node_splits: np.ndarray  # (1, k) int64: start offsets of HLO computations

    @property
    def num_configurable_nodes(self) -> int:
        return int(self.node_config_ids.shape[0])

    @property
    def computation_starts(self) -> np.ndarray:
        """``node_splits`` as the 1-D array of start offsets it stands for."""
        return self.node_splits.reshape(-1)


Graph = TileGraph | LayoutGraph

# The npz key schema of each kind is its task's ``npz_spec`` (competition.tasks): one schema for every reader.


# The arrays every other one is held to (node count, config count) are checked first, so a mismatch
# blames the large array that disagrees with them.
_REFERENCE_KEYS = ("node_feat", "node_opcode", "edge_index", "config_runtime")


def check_order(spec: dict) -> list[str]:
    """The keys of a schema in the order every reader checks them (the loader, inspect, prepare)."""
    return [k for k in spec if k in _REFERENCE_KEYS] + [k for k in spec if k not in _REFERENCE_KEYS]


def _open_npz(path: Path) -> np.lib.npyio.NpzFile:
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise DataFormatError(path, "no such file") from None
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
        raise DataFormatError(path, f"not a readable npz archive (truncated or corrupt?): {exc}") from None


def _read_member(npz: np.lib.npyio.NpzFile, path: Path, key: str) -> np.ndarray:
    try:
        return npz[key]
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as exc:
        raise DataFormatError(path, f"array {key!r} cannot be read (truncated or corrupt?): {exc}") from None


def check_array(path: Path, key: str, arr: np.ndarray, spec: tuple[np.dtype, tuple],
                sizes: dict) -> np.ndarray:
    """Check one array against its ``(dtype, shape pattern)``; ``sizes`` carries letters across keys."""
    check_header(path, key, arr.shape, arr.dtype, spec, sizes)
    dtype = spec[0]
    return arr if arr.dtype == dtype else arr.astype(dtype)


def check_header(
    path: Path, key: str, shape: tuple[int, ...], dtype: np.dtype, spec: tuple[np.dtype, tuple], sizes: dict
) -> None:
    """``check_array`` on an array's shape and dtype alone (e.g. read from its ``.npy`` header), so a
    summary that never loads the array applies the loader's rules."""
    want_dtype, pattern = spec
    # Accept a lossless cast (e.g. int32 edges from a user's own featurizer); refuse anything else.
    if dtype != want_dtype and not np.can_cast(dtype, want_dtype, casting="safe"):
        raise DataFormatError(path, f"array {key!r} has dtype {dtype}, expected {want_dtype}")
    if len(shape) != len(pattern):
        raise DataFormatError(
            path, f"array {key!r} has shape {shape}, expected {len(pattern)} dimensions {_fmt(pattern)}"
        )
    for axis, (want, got) in enumerate(zip(pattern, shape, strict=True)):
        if isinstance(want, int):
            if got != want:
                raise DataFormatError(path, f"array {key!r} has shape {shape}, expected {_fmt(pattern)}")
        elif sizes.setdefault(want, got) != got:
            raise DataFormatError(
                path,
                f"array {key!r} has size {got} on axis {axis} but other arrays say {want}={sizes[want]} "
                f"(expected shape {_fmt(pattern)})",
            )


def _fmt(pattern: tuple) -> str:
    return "(" + ", ".join(str(p) for p in pattern) + ")"


def graph_class(task: Task | str) -> type[Graph]:
    """The graph class of a task's files (``TileGraph`` for ``tile``, ...)."""
    name = task if isinstance(task, str) else task.name
    try:
        return _GRAPH_CLASSES[name]
    except KeyError:
        raise ValueError(f"no graph class for task {name!r}; expected one of "
                         f"{', '.join(_GRAPH_CLASSES)}") from None


def kind_from_keys(path: Path, keys: Iterable[str], *, absent_note: str = "") -> str:
    """The task name whose config key is among an npz file's ``keys``; DataFormatError naming them
    otherwise."""
    keys = set(keys)
    found = [task.name for task in TASKS.values() if task.config_key in keys]
    if len(found) != 1:
        wanted = " nor ".join(f"{task.config_key!r} ({task.name})" for task in TASKS.values())
        raise DataFormatError(path, f"neither {wanted} is present{absent_note}" if not found else
                              f"config keys of several kinds ({', '.join(found)}) are present")
    return found[0]


def graph_kind(path: str | Path) -> str:
    """The task name of an npz file (``'tile'``, ``'layout'``) judged from its keys."""
    path = Path(path)
    with _open_npz(path) as npz:
        keys = set(npz.files)
    return kind_from_keys(path, keys)


def load_graph(path: str | Path, kind: str | None = None) -> Graph:
    """Load and check one released npz file (compressed or stored).

    ``kind`` is ``'tile'`` or ``'layout'``; when None it is judged from the keys. Every key must be
    present with the released dtype (or one that casts to it losslessly) and consistent shapes;
    edges must point at existing nodes and configurable-node ids must be node positions.
    """
    path = Path(path)
    kind = kind or graph_kind(path)
    spec = get_task(kind).npz_spec
    cls = graph_class(kind)
    sizes: dict[str, int] = {}
    values: dict[str, np.ndarray] = {}
    with _open_npz(path) as npz:
        missing = [k for k in spec if k not in npz.files]
        if missing:
            raise DataFormatError(path, f"missing key(s) {', '.join(missing)} of a {kind} graph")
        for key in check_order(spec):
            values[key] = check_array(path, key, _read_member(npz, path, key), spec[key], sizes)
    check_references(path, values, sizes["n"])
    return cls(**values)


def check_references(path: Path, values: dict[str, np.ndarray], num_nodes: int) -> None:
    """Edges and configurable-node ids must name existing nodes (0..num_nodes-1)."""
    edges = values["edge_index"]
    if edges.size and (edges.min() < 0 or edges.max() >= num_nodes):
        raise DataFormatError(path, f"'edge_index' refers to nodes outside 0..{num_nodes - 1}")
    ids = values.get("node_config_ids")
    if ids is not None and ids.size and (ids.min() < 0 or ids.max() >= num_nodes):
        raise DataFormatError(path, f"'node_config_ids' refers to nodes outside 0..{num_nodes - 1}")


def save_graph(graph: Graph, path: str | Path, *, compressed: bool = True) -> None:
    """Write a graph in the released format (``np.savez_compressed`` like the download)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = np.savez_compressed if compressed else np.savez
    with open(path, "wb") as fh:  # a file object keeps numpy from appending '.npz' to the name
        writer(fh, **graph.arrays())


def read_config_runtime(path: str | Path) -> np.ndarray:
    """The ``config_runtime`` of an npz file (all zeros in a test file), reading only that member."""
    path = Path(path)
    with _open_npz(path) as npz:
        if "config_runtime" not in npz.files:
            raise DataFormatError(path, "missing key 'config_runtime'")
        runtime = _read_member(npz, path, "config_runtime")
    if runtime.ndim != 1:
        raise DataFormatError(path, f"array 'config_runtime' has shape {runtime.shape}, expected (c,)")
    return runtime


def read_config_count(path: str | Path) -> int:
    """Number of configs of an npz file, reading only the ``config_runtime`` member."""
    return int(read_config_runtime(path).shape[0])


def list_split(data_dir: str | Path, collection: Collection, split: Split) -> list[Path]:
    """The npz files of one split of a collection, sorted by stem.

    Raises FileNotFoundError naming the folder when the split is absent from ``data_dir``.
    """
    folder = split_dir(data_dir, collection, split)
    if not folder.is_dir():
        raise FileNotFoundError(
            f"{folder}: no {collection.name} {split} folder here; expected the Kaggle download tree "
            f"(<data>/{collection.npz_subdir}/{split}/*.npz)"
        )
    return sorted(folder.glob("*.npz"))


def iter_split(data_dir: str | Path, collection: Collection, split: Split) -> Iterator[tuple[str, Graph]]:
    """Yield ``(row_id, graph)`` for every graph of one split, one file in memory at a time."""
    for path in list_split(data_dir, collection, split):
        yield collection.row_id(path.stem), load_graph(path, collection.task.name)


def expected_from_data_dir(data_dir: str | Path,
                           collections: Iterable[Collection] = COLLECTIONS) -> dict[str, int]:
    """Every test graph's ID -> its number of configs, from a data directory: what the validator checks.

    ``data_dir`` is any folder ``competition.data.locate.resolve_data_dir`` accepts; ``collections``
    the ones a submission must cover (all five by default; fewer for a partial download). Reads only
    the ``config_runtime`` member of each test file. Raises FileNotFoundError naming the folder when
    it is missing, or when a chosen collection has no test graphs there (then naming the collections
    the folder does hold), and DataFormatError for an unreadable file or a graph with no configs.
    """
    root = resolve_data_dir(data_dir)
    chosen = tuple(collections)
    present = [c for c in COLLECTIONS if any(split_dir(root, c, "test").glob("*.npz"))]
    absent = [c for c in chosen if c not in present]
    if absent:
        held = ", ".join(c.name for c in present) or "none"
        hint = ("; name the collections a submission covers with --collection, e.g. --collection "
                f"{present[0].name}"
                if present
                else "; expected the Kaggle download tree (<data>/npz_all/npz/<collection>/test/*.npz)")
        raise FileNotFoundError(
            f"{root}: no test graphs of {', '.join(c.name for c in absent)} (looked in "
            f"{split_dir(root, absent[0], 'test')}); this folder holds test graphs of: {held}{hint}")
    expected: dict[str, int] = {}
    for collection in chosen:
        for path in list_split(root, collection, "test"):
            n_configs = read_config_count(path)
            if n_configs < 1:
                raise DataFormatError(path, "the graph has no configs; a test graph needs at least one")
            expected[collection.row_id(path.stem)] = n_configs
    return expected
