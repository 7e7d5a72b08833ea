"""One layout graph described, its configs streamed: what ``competition.data.description`` adds up.

``describe_layout_graph(path)`` reads a layout npz's small arrays whole and its ``node_config_feat`` in
chunks of whole configs, so a released graph with 100,000 configs is described in a few MB: configs,
node settings and node columns are compared through 64-bit hashes (a collision between two different
rows has a chance of about 2^-64).
"""

from __future__ import annotations

import math
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from competition.data.hlo import NODE_FEATURE_INDEX, OPCODE_NAMES
from competition.data.npz import load_npz_member, read_exactly, read_npy_header
from competition.data.reshapes import copy_mask, reshape_groups
from competition.errors import DataFormatError

#: A layout config counts as "at the fastest" within this relative margin of the graph's fastest runtime
#: (real runtimes fall on discrete levels: most configs of a real default search tie its fastest).
FASTEST_TOLERANCE = 1e-4
#: Elementwise ops a tensor's layout passes through unchanged (XLA's layout assignment propagates it):
#: a configurable node reached back through them reads a tensor another configurable node laid out.
LAYOUT_KEEPING = frozenset({
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "select", "clamp", "convert",
    "exponential", "log", "tanh", "logistic", "rsqrt", "sqrt", "negate", "abs", "sine", "cosine",
    "exponential-minus-one", "log-plus-one", "erf", "all-reduce", "copy",
})
#: How many such ops a chain is followed back through.
CHAIN_STEPS = 12
_SHAPE = slice(NODE_FEATURE_INDEX["shape_dimensions_0"], NODE_FEATURE_INDEX["shape_dimensions_0"] + 6)
#: Bytes of ``node_config_feat`` held in memory at once.
CHUNK_BYTES = 16 * 2**20

# Fixed random multipliers of the row hashes (the figures must not depend on anything but the data).
_VALUE_WEIGHTS = np.random.default_rng(0x5EED).integers(1, 2**63, size=18, dtype=np.uint64) | np.uint64(1)


def _hashed(values: np.ndarray) -> np.ndarray:
    """A hash of the last axis of layout values (-1 and up, at most 18 of them): (..., m) -> (...) uint64."""
    return ((values.astype(np.uint64) + np.uint64(2)) * _VALUE_WEIGHTS[:values.shape[-1]]).sum(axis=-1)


def _splitmix(x: np.ndarray) -> np.ndarray:
    """A 64-bit mixing function of ``x`` (uint64): distinct weights per row and per node."""
    z = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _small_arrays(archive: zipfile.ZipFile, path: Path, keys: Sequence[str]) -> dict[str, np.ndarray]:
    members = {Path(info.filename).stem: info for info in archive.infolist()}
    missing = [k for k in keys if k not in members]
    if missing:
        raise DataFormatError(path, f"no array {missing[0]!r} (a layout graph holds {', '.join(keys)})")
    return {k: load_npz_member(archive, members[k], path, k) for k in keys}


def _config_chunks(archive: zipfile.ZipFile, path: Path, chunk_bytes: int) -> Iterator[np.ndarray]:
    """``node_config_feat`` in chunks of whole configs, each ``(k, nc, 18)`` int8."""
    key = "node_config_feat"
    info = next((i for i in archive.infolist() if Path(i.filename).stem == key), None)
    if info is None:
        raise DataFormatError(path, f"no array {key!r}")
    try:
        with archive.open(info) as fp:
            shape, fortran, dtype = read_npy_header(fp, path, key)
            if len(shape) != 3 or shape[2] != 18:
                raise DataFormatError(path, f"array {key!r} has shape {tuple(shape)}, expected (c, nc, 18)")
            if fortran and shape[1] * shape[2] > 1:
                raise DataFormatError(
                    path, f"array {key!r} is stored in Fortran order, which the description does not read")
            row_items = shape[1] * shape[2]
            step = max(1, chunk_bytes // max(1, row_items * dtype.itemsize))
            for start in range(0, shape[0], step):
                count = min(step, shape[0] - start)
                raw = read_exactly(fp, count * row_items * dtype.itemsize, path, key)
                chunk = np.frombuffer(raw, dtype=dtype).reshape(count, shape[1], 18)
                if chunk.size and (chunk.min() < -1 or chunk.max() > 5):
                    raise DataFormatError(path,
                                          f"array {key!r} holds values outside -1..5 (configs from {start})")
                yield chunk.astype(np.int8)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as exc:
        raise DataFormatError(path, f"array {key!r} cannot be read (truncated or corrupt?): {exc}") from None


def _duplicate_groups(config_hash: np.ndarray, runtime: np.ndarray) -> tuple[list[float], int]:
    """Relative runtime spread (max/min - 1) of every group of identical configs, and how many are exact."""
    order = np.lexsort((runtime, config_hash))
    h, r = config_hash[order], runtime[order].astype(np.float64)
    starts = np.flatnonzero(np.r_[True, h[1:] != h[:-1]])
    sizes = np.diff(np.r_[starts, len(h)])
    groups = starts[sizes > 1]
    ends = groups + sizes[sizes > 1] - 1
    spread = r[ends] / np.maximum(r[groups], 1.0) - 1.0
    return spread.tolist(), int((spread == 0).sum())


def _producer_index(edges: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The producers of node ``i`` are ``producers[starts[i]:starts[i + 1]]``; ``edges``: ``(m, 2)`` rows
    ``[consumer, producer]``, those naming a node outside ``0..n-1`` left out."""
    edges = edges[(edges >= 0).all(axis=1) & (edges < n).all(axis=1)]
    order = np.argsort(edges[:, 0], kind="stable")
    return edges[order, 1], np.searchsorted(edges[order, 0], np.arange(n + 1))


def linked_configurable(names: Sequence[str], edges: np.ndarray, config_ids: np.ndarray,
                        shapes: np.ndarray) -> int:
    """How many configurable nodes read a tensor that another configurable node produced, directly or
    back through a chain of ``LAYOUT_KEEPING`` ops (each followed through its first operand of the same
    shape). ``edges``: ``(m, 2)`` rows ``[consumer, producer]``; ``shapes``: ``(n, 6)``."""
    n = len(names)
    producers, starts = _producer_index(edges, n)
    configurable = np.zeros(n, dtype=bool)
    configurable[config_ids] = True
    keeps = np.array([name in LAYOUT_KEEPING for name in names], dtype=bool)

    def reaches(node: int) -> bool:
        for _ in range(CHAIN_STEPS):
            if configurable[node]:
                return True
            if not keeps[node]:
                return False
            same = [p for p in producers[starts[node]:starts[node + 1]] if (shapes[p] == shapes[node]).all()]
            if not same:
                return False
            node = int(same[0])
        return False

    return sum(any(reaches(int(p)) for p in producers[starts[j]:starts[j + 1]]) for j in config_ids)


def reshape_group_table(names: Sequence[str], edges: np.ndarray, config_ids: np.ndarray,
                        shapes: np.ndarray) -> dict[int, tuple[np.ndarray, tuple[int, int]]]:
    """Per configurable reshape (by its index among the configurable nodes) with one operand of the same
    element count: its groups of dimensions (``competition.data.reshapes``) and the ranks of its two
    sides. ``edges``: ``(m, 2)`` rows ``[consumer, producer]``; ``shapes``: ``(n, 6)``, 0-padded."""
    producers, starts = _producer_index(edges, len(names))
    table = {}
    for j, node in enumerate(int(i) for i in config_ids):
        operands = np.unique(producers[starts[node]:starts[node + 1]])
        if names[node] != "reshape" or len(operands) != 1:
            continue
        out_dims, in_dims = shapes[node][shapes[node] > 0], shapes[operands[0]][shapes[operands[0]] > 0]
        groups = reshape_groups(out_dims, in_dims)
        if groups is not None and len(out_dims) and len(in_dims):
            table[j] = (groups, (len(out_dims), len(in_dims)))
    return table



class _ConfigTally:
    """What the configs of one layout graph add up to, one chunk of whole configs at a time."""

    def __init__(self, configurable: int, reshapes: dict[int, tuple[np.ndarray, tuple[int, int]]]) -> None:
        nc = configurable
        self.node_weights = _splitmix(np.arange(nc, dtype=np.uint64) + np.uint64(1 << 40))
        self.config_hashes: list[np.ndarray] = []
        self.column_hash = np.zeros(nc, dtype=np.uint64)
        self.settings: list[set[int]] = [set() for _ in range(nc)]
        self.tensor_settings: list[list[set[int]]] = [[set(), set(), set()] for _ in range(nc)]
        self.slots = np.zeros((nc, 3), dtype=np.int64)  # most slots set in any config, per node and tensor
        self.unset = np.zeros(3, dtype=np.int64)  # (config, node) settings leaving the tensor wholly -1
        # Which dimensions a tensor's setting names, in any order, hashed: the lowest and highest hash
        # over the configs that set it. Equal: every setting reorders the same dimensions.
        self.dims_low = np.full((nc, 3), np.iinfo(np.uint64).max, dtype=np.uint64)
        self.dims_high = np.zeros((nc, 3), dtype=np.uint64)
        self.reshapes = reshapes
        self.reshape_copies = self.reshape_known = 0
        self.minus_one = self.values = self.configs = 0

    def add(self, chunk: np.ndarray) -> None:
        """Count one chunk, ``(k, nc, 18)``, of the configs that follow those already counted."""
        k, nc = chunk.shape[:2]
        setting = _hashed(chunk)  # (k, nc)
        self.config_hashes.append((setting * self.node_weights).sum(axis=1))
        row_weights = _splitmix(np.arange(self.configs, self.configs + k, dtype=np.uint64))
        self.column_hash += (setting * row_weights[:, None]).sum(axis=0)
        tensors = chunk.reshape(k, nc, 3, 6)
        set_slots = (tensors >= 0).sum(axis=3)
        tensor_hash = _hashed(tensors)  # (k, nc, 3)
        for j in range(nc):
            self.settings[j].update(np.unique(setting[:, j]).tolist())
            for t in range(3):
                self.tensor_settings[j][t].update(np.unique(tensor_hash[:, j, t]).tolist())
        if k:
            dims = _hashed(np.sort(tensors, axis=3))  # (k, nc, 3)
            is_set = set_slots > 0
            self.dims_low = np.minimum(self.dims_low, np.where(is_set, dims, self.dims_low).min(axis=0))
            self.dims_high = np.maximum(self.dims_high, np.where(is_set, dims, self.dims_high).max(axis=0))
            self.slots = np.maximum(self.slots, set_slots.max(axis=0))
        self.unset += (set_slots == 0).sum(axis=(0, 1))
        for j, (groups, ranks) in self.reshapes.items():
            sides = tensors[:, j, :2].astype(np.int64)
            self.reshape_known += int(((sides[:, 0, 0] >= 0) & (sides[:, 1, 0] >= 0)).sum())
            self.reshape_copies += int(copy_mask(sides[:, 0], sides[:, 1], groups, ranks).sum())
        self.minus_one += int((chunk == -1).sum())
        self.values += chunk.size
        self.configs += k

    @property
    def config_hash(self) -> np.ndarray:
        """One hash per config, in file order."""
        return np.concatenate([np.zeros(0, dtype=np.uint64), *self.config_hashes])

    def figures(self, kinds: Sequence[str]) -> dict:
        """The settings' figures; ``kinds``: the opcode name of each configurable node."""
        mxu = np.array([k in ("convolution", "dot") for k in kinds], dtype=bool)
        slots, settings = self.slots, self.settings
        mxu_slots = slots[mxu][slots[mxu] > 0]
        # One count per layout group (tied nodes share a column): varying, and a full product of its tensors'.
        varying_groups = {int(self.column_hash[j]):
                          len(settings[j]) == math.prod(len(s) for s in self.tensor_settings[j])
                          for j in np.flatnonzero(mxu) if len(settings[j]) > 1}
        return {
            "distinct settings": [len(s) for s in settings],
            "distinct columns": len(np.unique(self.column_hash)),
            "mxu tensors with a layout": int(mxu_slots.size),
            "mxu tensors with at most 2 slots": int((mxu_slots <= 2).sum()),
            "mxu slots set": Counter(int(s) for s in mxu_slots),
            "mxu tensors reordered only": int(((slots > 0) & (self.dims_low == self.dims_high))[mxu].sum()),
            "mxu groups varying": len(varying_groups),
            "mxu groups full product": sum(varying_groups.values()),
            "unset tensors": (self.unset / max(self.configs * len(settings), 1)).tolist(),
            "minus one": self.minus_one / self.values if self.values else 1.0,
            "reshape copies": self.reshape_copies,
            "reshape settings": self.reshape_known,
        }


def describe_layout_graph(path: str | Path, runtime: np.ndarray | None = None, *,
                          chunk_bytes: int = CHUNK_BYTES) -> dict:
    """The figures of one layout npz, its configs read in chunks of ``chunk_bytes``.

    ``runtime`` replaces the file's ``config_runtime`` (test files carry zeros; the labels are elsewhere).
    """
    path = Path(path)
    with zipfile.ZipFile(path) as archive:
        small = _small_arrays(archive, path, ("node_opcode", "edge_index", "node_config_ids",
                                              "config_runtime", "node_splits", "node_feat"))
        ids = small["node_config_ids"].astype(np.int64).reshape(-1)
        if runtime is None:
            runtime = small["config_runtime"].reshape(-1)
        opcodes = small["node_opcode"].astype(np.int64).reshape(-1)
        names = [OPCODE_NAMES.get(int(o), "unknown") for o in opcodes]
        edges = small["edge_index"].astype(np.int64).reshape(-1, 2)
        shapes = small["node_feat"][:, _SHAPE]
        tally = _ConfigTally(len(ids), reshape_group_table(names, edges, ids, shapes.astype(np.int64)))
        for chunk in _config_chunks(archive, path, chunk_bytes):
            tally.add(chunk)
    if tally.configs != len(runtime):
        raise DataFormatError(
            path, f"node_config_feat has {tally.configs} configs but there are {len(runtime)} runtimes")
    n, kinds = len(names), [names[i] for i in ids]
    consumers = (np.bincount(np.unique(edges, axis=0)[:, 1], minlength=n) if len(edges)
                 else np.zeros(n, np.int64))
    labelled = bool(runtime.any())
    config_hash = tally.config_hash
    out = {
        "nodes": n,
        "configs": int(len(runtime)),
        "configurable": len(ids),
        "configurable opcodes": Counter(kinds),
        "opcodes": Counter(names),
        "distinct opcodes": len(set(names)),
        "node_splits length": int(small["node_splits"].shape[-1]),
        "one consumer": float((consumers == 1).mean()) if n else 0.0,
        "linked configurable": linked_configurable(names, edges, ids, shapes),
        **tally.figures(kinds),
        "labelled": labelled,
        "distinct configs": len(np.unique(config_hash)),
    }
    if labelled:
        spread, exact = _duplicate_groups(config_hash, runtime)
        fastest = runtime.min()
        out.update({"runtime min": int(fastest), "runtime max": int(runtime.max()),
                    "at the fastest": float(np.mean(runtime <= fastest * (1 + FASTEST_TOLERANCE))),
                    "duplicate spread": spread, "exact duplicate groups": exact})
    return out
