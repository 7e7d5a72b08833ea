"""What an npz graph holds, read in bounded memory: ``inspect_npz(path) -> GraphSummary``.

Sizes come from the ``.npy`` headers of the zip members, so ``node_feat`` and ``edge_index`` are never
loaded. The config tensor (``node_config_feat`` up to 100,040 x 121 x 18 float32 = 872 MB in the real
data, or a tile file's ``config_feat``) is streamed from its zip member, compressed or stored, in chunks
of whole configs. Each chunk is turned into a compact row (int8 when every value is a small integer,
as layout values -1..5 always are; the float bytes otherwise), duplicates inside the chunk are removed
with ``np.unique`` and each remaining row is hashed (BLAKE2b, 128 bits) into a set, so the count of
distinct configs is exact but for a 2^-128 collision chance, and peak memory is one chunk plus 16 bytes
per distinct config.

Every array header is checked against the loader's schema (the tasks' ``npz_spec``, which
``competition.data.graphs`` applies: keys, dtypes, shapes that agree), so ``inspect`` refuses, with the
loader's message, any file ``load_graph`` would refuse for its format (a ``node_feat`` that is not
(n, 140), a missing ``node_splits``), instead of summarising it.
"""

from __future__ import annotations

import hashlib
import math
import zipfile
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from competition.data.graphs import check_header, check_order, kind_from_keys
from competition.data.npz import load_npz_member, read_exactly, read_npy_header
from competition.errors import DataFormatError
from competition.tasks import get_task
from competition.text import format_bytes

CHUNK_BYTES = 2 * 2**20  # raw bytes of the config tensor decoded per step (peak RSS ~50 MB)

# The loader's schema of each kind: one set of rules for what a graph file is.


@dataclass
class ArrayInfo:
    """Shape, dtype and in-memory size of one npz member, from its header."""

    shape: tuple[int, ...]
    dtype: str
    nbytes: int


@dataclass
class GraphSummary:
    """The figures ``tpugraphs inspect`` prints for one npz file."""

    path: str
    kind: str  # "tile" or "layout"
    nodes: int
    edges: int
    configs: int
    configurable_nodes: int | None  # None for tile graphs (one config per graph)
    distinct_configs: int
    runtime_min: int | None  # None when hidden (test file) or no configs
    runtime_max: int | None
    runtime_ratio: float | None  # max / min
    runtime_hidden: bool  # every runtime 0: a test file, labels withheld
    memory_bytes: int  # all arrays loaded at their stored dtypes
    compressed: bool  # any member deflated
    arrays: dict[str, ArrayInfo] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["arrays"] = {k: {"shape": list(v.shape), "dtype": v.dtype, "nbytes": v.nbytes}
                         for k, v in self.arrays.items()}
        return out


def _compact_rows(chunk: np.ndarray) -> list[bytes]:
    """Distinct rows of a ``(rows, values)`` chunk as bytes; a row's form depends only on the row.

    Rows whose values are all integers in int8 range become int8 bytes tagged ``b"i"``; others keep
    their float bytes (``-0.0`` folded into ``0.0``, as ``np.unique`` treats them equal) tagged ``b"f"``.
    """
    out: list[bytes] = []
    if chunk.dtype.kind == "f":
        small = np.all((chunk == np.round(chunk)) & (chunk >= -128) & (chunk <= 127), axis=1)
    elif chunk.dtype.kind in "iub":
        small = np.all((chunk >= -128) & (chunk <= 127), axis=1)
    else:
        small = np.zeros(len(chunk), dtype=bool)
    if small.any():
        packed = np.unique(chunk[small].astype(np.int8), axis=0)
        out.extend(b"i" + row.tobytes() for row in packed)
    if not small.all():
        rest = chunk[~small]
        if rest.dtype.kind == "f":
            rest = rest + rest.dtype.type(0)  # -0.0 + 0.0 == +0.0
        out.extend(b"f" + row.tobytes() for row in np.unique(rest, axis=0))
    return out


def _count_distinct_rows(
    fp: IO[bytes], shape: tuple[int, ...], dtype: np.dtype, path: Path, key: str, chunk_bytes: int
) -> int:
    """Exact number of distinct rows along axis 0 of a C-ordered array read from ``fp``."""
    rows = shape[0]
    row_items = math.prod(shape[1:])
    row_bytes = row_items * dtype.itemsize
    if rows == 0:
        return 0
    if row_bytes == 0:
        return 1  # every row is the empty row
    step = max(1, chunk_bytes // row_bytes)
    seen: set[bytes] = set()
    for start in range(0, rows, step):
        count = min(step, rows - start)
        try:
            raw = read_exactly(fp, count * row_bytes, path, key)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
            raise DataFormatError(path,
                                  f"array {key!r} cannot be read (truncated or corrupt?): {exc}") from None
        chunk = np.frombuffer(raw, dtype=dtype).reshape(count, row_items)
        for row in _compact_rows(chunk):
            seen.add(hashlib.blake2b(row, digest_size=16).digest())
    return len(seen)


def _open_archive(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except FileNotFoundError:
        raise DataFormatError(path, "no such file") from None
    except (zipfile.BadZipFile, OSError) as exc:
        raise DataFormatError(path, f"not an npz (zip) archive: {exc}") from None


def _checked_headers(archive: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo], path: Path,
                     spec: dict) -> dict[str, ArrayInfo]:
    """Every member's header, checked against the task's npz schema as the loader checks it."""
    arrays: dict[str, ArrayInfo] = {}
    dtypes: dict[str, np.dtype] = {}
    for key in members:
        with archive.open(members[key]) as fp:
            shape, _, dtype = read_npy_header(fp, path, key)
        arrays[key] = ArrayInfo(tuple(int(s) for s in shape), dtype.str, math.prod(shape) * dtype.itemsize)
        dtypes[key] = dtype
    sizes: dict[str, int] = {}
    for key in check_order(spec):  # in the loader's order, so both report the same first problem
        check_header(path, key, arrays[key].shape, dtypes[key], spec[key], sizes)
    return arrays


def _distinct_configs(archive: zipfile.ZipFile, member: zipfile.ZipInfo, path: Path, key: str,
                      configs: int, chunk_bytes: int) -> int:
    """How many distinct configs the config tensor ``key`` holds, read in chunks of whole configs."""
    with archive.open(member) as fp:
        shape, fortran_order, dtype = read_npy_header(fp, path, key)
        if len(shape) < 1 or shape[0] != configs:
            raise DataFormatError(
                path, f"array {key!r} has shape {shape} but 'config_runtime' lists {configs} configs")
        if fortran_order and len(shape) > 1:
            # Column-major data cannot be cut into whole configs; such files are not released ones.
            array = load_npz_member(archive, member, path, key)
            flat = np.ascontiguousarray(array).reshape(len(array), -1)
            return len(np.unique(flat, axis=0)) if flat.shape[1] else min(len(flat), 1)
        return _count_distinct_rows(fp, tuple(shape), dtype, path, key, chunk_bytes)


def inspect_npz(path: str | Path, *, chunk_bytes: int = CHUNK_BYTES) -> GraphSummary:
    """Summarise one npz graph (tile or layout, compressed or stored) without loading its config tensor.

    Raises ``DataFormatError`` naming the file for a missing file, a non-npz file, a missing key or
    arrays whose sizes disagree.
    """
    path = Path(path)
    with _open_archive(path) as archive:
        members = {info.filename[: -len(".npy")]: info for info in archive.infolist()
                   if info.filename.endswith(".npy")}
        kind = kind_from_keys(path, members, absent_note=": not a TpuGraphs graph")
        task = get_task(kind)
        missing = [key for key in task.npz_spec if key not in members]
        if missing:
            raise DataFormatError(path, f"missing key(s) {', '.join(missing)} of a {kind} graph")
        arrays = _checked_headers(archive, members, path, task.npz_spec)
        runtime = load_npz_member(archive, members["config_runtime"], path, "config_runtime")
        if runtime.ndim != 1:
            raise DataFormatError(path, f"array 'config_runtime' has shape {runtime.shape}, expected (c,)")
        distinct = _distinct_configs(archive, members[task.config_key], path, task.config_key, len(runtime),
                                     chunk_bytes)
        compressed = any(info.compress_type != zipfile.ZIP_STORED for info in members.values())

    nodes = arrays["node_opcode"].shape[0] if arrays["node_opcode"].shape else 0
    edges = arrays["edge_index"].shape[0] if arrays["edge_index"].shape else 0
    # The count of configurable nodes is the config tensor's second axis where configs are per node.
    config_shape = arrays[task.config_key].shape
    configurable = task.configurable_node_count(config_shape)
    hidden = bool(len(runtime)) and not runtime.any()
    low = high = ratio = None
    if len(runtime) and not hidden:
        low, high = int(runtime.min()), int(runtime.max())
        ratio = float(high / low) if low > 0 else None
    return GraphSummary(
        path=str(path),
        kind=kind,
        nodes=int(nodes),
        edges=int(edges),
        configs=len(runtime),
        configurable_nodes=None if configurable is None else int(configurable),
        distinct_configs=int(distinct),
        runtime_min=low,
        runtime_max=high,
        runtime_ratio=ratio,
        runtime_hidden=hidden,
        memory_bytes=sum(info.nbytes for info in arrays.values()),
        compressed=compressed,
        arrays=arrays,
    )


def format_summary(summary: GraphSummary) -> str:
    """The human-readable report of ``tpugraphs inspect``."""
    share = f" ({summary.distinct_configs / summary.configs:.1%} of configs)" if summary.configs else ""
    if summary.runtime_hidden:
        runtime = "hidden (test file: every config_runtime is 0)"
    elif summary.runtime_min is None:
        runtime = "no configs"
    else:
        ratio = (f"{summary.runtime_ratio:.3f}" if summary.runtime_ratio is not None
                 else "undefined (min is 0)")
        runtime = f"{summary.runtime_min:,} .. {summary.runtime_max:,} ns (max/min {ratio})"
    configurable = (
        f"{summary.configurable_nodes:,}" if summary.configurable_nodes is not None
        else "n/a (tile: one config per graph)"
    )
    biggest = sorted(summary.arrays.items(), key=lambda kv: -kv[1].nbytes)[:3]
    parts = ", ".join(f"{key} {format_bytes(info.nbytes)}" for key, info in biggest)
    lines = [
        f"{summary.path}: {summary.kind} graph, {'compressed' if summary.compressed else 'stored'} npz",
        f"  nodes               {summary.nodes:,}",
        f"  edges               {summary.edges:,}",
        f"  configs             {summary.configs:,}",
        f"  configurable nodes  {configurable}",
        f"  distinct configs    {summary.distinct_configs:,}{share}",
        f"  runtime             {runtime}",
        f"  memory in RAM       {format_bytes(summary.memory_bytes)} ({parts})",
    ]
    return "\n".join(lines)
