"""Reading the source tree: which labelled graphs it holds, each file's arrays checked from their
headers (``scan_graph``), and a layout graph's sampled configs streamed a chunk at a time
(``read_sampled_layout``), so memory stays bounded on the 100,040-config graphs."""

from __future__ import annotations

import math
import zipfile
import zlib
from pathlib import Path

import numpy as np

from competition.collections import COLLECTIONS, Collection
from competition.data.compact import check_layout_chunk
from competition.data.graphs import check_array, check_header, check_order, check_references
from competition.data.npz import load_npz_member, read_exactly, read_npy_header
from competition.data.tree import find_npz_root
from competition.errors import DataFormatError
from competition.tasks import LAYOUT, Task


def _members_of(archive: zipfile.ZipFile, path: Path, task: Task) -> dict[str, zipfile.ZipInfo]:
    """The ``.npy`` members of an npz by key; DataFormatError when a key of the ``task``'s schema is
    missing."""
    members = {info.filename[: -len(".npy")]: info for info in archive.infolist()
               if info.filename.endswith(".npy")}
    missing = [key for key in task.npz_spec if key not in members]
    if missing:
        raise DataFormatError(path, f"missing key(s) {', '.join(missing)} of a {task.name} graph")
    return members


def _open_zip(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise DataFormatError(path, f"not a readable npz (zip) archive (truncated or corrupt?): {exc}"
                              ) from None


def scan_graph(path: Path, collection: Collection) -> int:
    """Check a source file's arrays against the loader's schema from their headers; its config count.

    Reads only the ``.npy`` headers: a train graph is copied as is, so this is all the reading it
    needs, and a file with a missing or misshapen array fails before anything is written.
    """
    spec = collection.task.npz_spec
    with _open_zip(path) as archive:
        members = _members_of(archive, path, collection.task)
        sizes: dict[str, int] = {}
        for key in check_order(spec):
            with archive.open(members[key]) as fp:
                shape, _, dtype = read_npy_header(fp, path, key)
            check_header(path, key, tuple(shape), dtype, spec[key], sizes)
    return sizes["c"]


def list_labelled(root: Path, collection: Collection) -> list[tuple[str, Path]]:
    """``(split, path)`` of the train and valid graphs of one collection, sorted."""
    found = []
    for split in ("train", "valid"):
        folder = root / collection.subpath / split
        if folder.is_dir():
            found.extend((split, path) for path in sorted(folder.glob("*.npz")))
    return found


def labelled_collections(data_dir: str | Path) -> list[Collection]:
    """The collections with at least one train or valid graph in ``data_dir``."""
    root = find_npz_root(data_dir)
    return [c for c in COLLECTIONS if list_labelled(root, c)]


def read_sampled_layout(path: Path, indices: np.ndarray, chunk_bytes: int) -> dict[str, np.ndarray]:
    """The arrays of a layout graph with only the configs at ``indices`` (in that order), streaming
    ``node_config_feat`` so that peak memory is one chunk plus the sampled configs."""
    with _open_zip(path) as archive:
        members = _members_of(archive, path, LAYOUT)
        sizes: dict[str, int] = {}
        arrays: dict[str, np.ndarray] = {}
        for key in ("node_feat", "node_opcode", "edge_index", "config_runtime", "node_config_ids",
                    "node_splits"):
            arrays[key] = check_array(path, key, load_npz_member(archive, members[key], path, key),
                                      LAYOUT.npz_spec[key], sizes)
        check_references(path, arrays, sizes["n"])
        with archive.open(members["node_config_feat"]) as fp:
            shape, fortran_order, dtype = read_npy_header(fp, path, "node_config_feat")
            check_header(path, "node_config_feat", tuple(shape), dtype, LAYOUT.npz_spec["node_config_feat"],
                         sizes)
            if fortran_order and math.prod(shape[1:]) > 1:
                raise DataFormatError(path, "array 'node_config_feat' is stored in Fortran order; released "
                                            "files are C-ordered (re-save it with np.savez)")
            arrays["node_config_feat"] = _stream_rows(fp, path, tuple(shape), dtype, indices, chunk_bytes)
    arrays["config_runtime"] = arrays["config_runtime"][indices]
    return arrays


def _stream_rows(fp, path: Path, shape: tuple[int, ...], dtype: np.dtype, indices: np.ndarray,
                 chunk_bytes: int) -> np.ndarray:
    key = "node_config_feat"
    row_items = math.prod(shape[1:])
    row_bytes = row_items * dtype.itemsize
    out = np.empty((len(indices), *shape[1:]), dtype=np.float32)
    order = np.argsort(indices, kind="stable")
    wanted = indices[order]
    step = max(1, chunk_bytes // max(1, row_bytes))
    last = int(wanted[-1]) + 1 if len(wanted) else 0  # no need to read past the last sampled config
    for start in range(0, last, step):
        count = min(step, shape[0] - start)
        try:
            raw = read_exactly(fp, count * row_bytes, path, key)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
            raise DataFormatError(path, f"array {key!r} cannot be read (truncated or corrupt?): {exc}"
                                  ) from None
        chunk = np.frombuffer(raw, dtype=dtype).reshape(count, *shape[1:])
        try:
            check_layout_chunk(chunk, start * row_items, shape, key)
        except ValueError as exc:
            raise DataFormatError(path, str(exc)) from None
        lo, hi = np.searchsorted(wanted, [start, start + count])
        out[order[lo:hi]] = chunk[wanted[lo:hi] - start]
    return out


def check_labels(path: Path, key: str, values: np.ndarray) -> None:
    if values.size and values.min() <= 0:
        raise DataFormatError(
            path, f"array {key!r} holds values <= 0: not labels (a test file of a download has zeros); "
                  "prepare needs labelled train/valid graphs")

