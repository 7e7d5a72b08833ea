"""A processed, memory-mapped cache of layout graphs, so loaders survive the 100k-config files.

A released layout npz keeps ``node_config_feat`` (c, nc, 18) float32 inside a deflated zip member:
reading even one config means decompressing the whole member (872 MB for the largest nlp graph,
100,040 configs x 121 configurable nodes). ``build_cache`` converts one npz into a folder once:

```
<cache_dir>/
  manifest.json             format version, source path / size / mtime, sizes
  node_feat.npy  node_opcode.npy  edge_index.npy  node_config_ids.npy  node_splits.npy
  config_runtime.npy
  node_config_feat.int8.npy (c, nc, 18) int8, uncompressed, memory-mapped when opened
```

The config tensor is streamed from the zip member chunk by chunk (``competition.data.inspection``'s reader),
validated (every value an integer in -1..5) and written as int8, so building never holds the float32
tensor: peak memory is one chunk plus the small arrays. ``open_cache`` memory-maps it, and
``CachedGraph.configs(indices)`` reads and decodes only the requested configs.

``CachedGraph.layout_view()`` gives the graph as a ``LayoutGraph`` (a ``CachedLayoutGraph``) whose
``node_config_feat`` is the int8 memory map: code written for released graphs that reads configs by
index or a chunk at a time (the reference solutions' features, ``competition.data.compact``'s packers)
runs on it unchanged, and never holds the whole tensor. ``iter_cached_split`` and ``cache_split``
build and open the caches of a whole split; ``solutions`` reads train, valid and test layout graphs
through them when a run is given a cache folder (``tpugraphs solve --cache-dir``).

Why int8 and not the base-7 packed int32 of ``competition.data.compact`` (6x smaller than float32 against
4x): decoding int8 is a single cast, the cached array has the released shape (so it can be indexed,
compared or fed to an embedding as is), and a sampled config is 2.2 KB either way at nc=121 (one
page), so the packed form would save disk (145 MB against 218 MB for the largest graph) but not read
time. Tile graphs are not cached: the largest tile file is a few MB, ``load_graph`` reads it at once.

A cache is fresh when its manifest names the same format version and the same source file (resolved
path, size and mtime); ``build_cache`` rebuilds a stale or half-written one. Builds go to a temporary
folder beside ``cache_dir`` and are renamed into place, so a failure (a corrupt npz) leaves no cache.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np

from competition.collections import COLLECTION_BY_NAME, Collection, Split
from competition.data.atomic import replace_dir
from competition.data.compact import check_layout_chunk
from competition.data.graphs import LayoutGraph, check_array, list_split
from competition.data.npz import load_npz_member, read_exactly, read_npy_header
from competition.errors import DataFormatError
from competition.tasks import LAYOUT, LAYOUT_CONFIG_DIM

CACHE_FORMAT_VERSION = 1
MANIFEST_NAME = "manifest.json"
CONFIGS_NAME = "node_config_feat.int8.npy"
# Every array of a layout graph but the config tensor, from the loader's schema (same order).
SMALL_KEYS = tuple(key for key in LAYOUT.npz_spec if key != LAYOUT.config_key)
BUILD_CHUNK_BYTES = 8 * 2**20  # raw bytes of the source config tensor decoded per step


@dataclass
class CachedGraph:
    """One cached layout graph: small arrays on demand, the config tensor memory-mapped.

    The memory map is opened on first read and kept (one open file per graph); ``close()`` drops it.
    Pages read through the map count in the process's RSS as clean file-backed pages (``RssFile``),
    and the kernel maps neighbouring pages of the page cache too (fault-around): after many random
    reads a graph's whole int8 file can show in RSS. That memory is reclaimable page cache, not
    allocations; calling ``close()`` when moving on to the next graph releases it from the process.
    """

    cache_dir: Path
    source: Path  # the npz the cache was built from
    num_configs: int
    num_configurable: int
    runtime: np.ndarray  # (c,) int64 nanoseconds (all zeros for test graphs)
    _config_map: np.memmap | None = field(default=None, repr=False)

    @property
    def stem(self) -> str:
        return self.source.stem

    @property
    def node_config_feat(self) -> np.memmap:
        """The whole config tensor, (c, nc, 18) int8, memory-mapped read-only: index it, don't copy it."""
        if self._config_map is None:
            mapped = np.load(self.cache_dir / CONFIGS_NAME, mmap_mode="r", allow_pickle=False)
            want = (self.num_configs, self.num_configurable, LAYOUT_CONFIG_DIM)
            if mapped.shape != want or mapped.dtype != np.int8:
                raise DataFormatError(
                    self.cache_dir / CONFIGS_NAME,
                    f"holds {mapped.dtype} {mapped.shape}, the manifest says int8 {want}: rebuild the cache",
                )
            self._config_map = mapped
        return self._config_map

    def _check_indices(self, indices: Sequence[int] | np.ndarray) -> np.ndarray:
        idx = np.asarray(indices)
        if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
            raise IndexError(f"{self.cache_dir}: config indices must be a 1-D sequence of "
                             f"integers, got {idx!r}")
        idx = idx.astype(np.int64, copy=False)
        bad = (idx < 0) | (idx >= self.num_configs)
        if bad.any():
            raise IndexError(
                f"{self.cache_dir}: config index {int(idx[bad][0])} is outside 0..{self.num_configs - 1}"
            )
        return idx

    def configs_int8(self, indices: Sequence[int] | np.ndarray) -> np.ndarray:
        """The configs at ``indices`` as stored: (k, nc, 18) int8, values -1..5. Reads only those rows."""
        idx = self._check_indices(indices)
        return self.node_config_feat[idx]

    def configs(self, indices: Sequence[int] | np.ndarray) -> np.ndarray:
        """The configs at ``indices`` (any order, repeats allowed) as released: (k, nc, 18) float32."""
        return self.configs_int8(indices).astype(np.float32)

    def graph_arrays(self) -> dict[str, np.ndarray]:
        """The small arrays under their npz keys (node_feat, node_opcode, edge_index, node_config_ids,
        node_splits, config_runtime), loaded into memory with the released dtypes."""
        return {key: np.load(self.cache_dir / f"{key}.npy", allow_pickle=False) for key in SMALL_KEYS}

    def layout_graph(self, indices: Sequence[int] | np.ndarray) -> LayoutGraph:
        """A ``LayoutGraph`` holding only the configs at ``indices`` (and their runtimes), in that order."""
        idx = self._check_indices(indices)
        arrays = self.graph_arrays()
        arrays["config_runtime"] = arrays["config_runtime"][idx]
        return LayoutGraph(node_config_feat=self.configs(idx), **arrays)

    def layout_view(self) -> CachedLayoutGraph:
        """This graph as a ``LayoutGraph`` whose configs stay memory-mapped (see ``CachedLayoutGraph``)."""
        return CachedLayoutGraph(self, **self.graph_arrays())

    def close(self) -> None:
        """Drop the memory map (it reopens on the next read)."""
        self._config_map = None


class CachedLayoutGraph(LayoutGraph):
    """A ``LayoutGraph`` read from the processed cache: small arrays in memory, configs memory-mapped.

    ``node_config_feat`` is the cache's read-only (c, nc, 18) **int8** memory map, values -1..5,
    equal to the released float32 values (not the released dtype). Index it or read it a chunk of
    configs at a time; converting the whole of it (``np.asarray(...).astype(np.float32)``) brings
    back the 872 MB the cache exists to avoid. ``cache`` is the ``CachedGraph`` it came from, for
    code with a cached path of its own (the GNN reads the configs it samples through it).

    The view does not own the memory map: ``node_config_feat`` asks ``cache`` for it on every access,
    so ``cache.close()`` releases the pages read so far from the process's resident memory (the
    whole int8 file after a full pass), unless a slice taken without a copy is still alive. Holding
    the map in the view kept one more graph's file resident and raised the peak of a GNN fit on two
    100,040-config graphs from 0.69 to 0.83 GB.
    """

    def __init__(self, cache: CachedGraph, **arrays: np.ndarray) -> None:
        self.cache = cache
        for key, value in arrays.items():  # the other LayoutGraph fields, as the dataclass would set them
            setattr(self, key, value)

    @property
    def node_config_feat(self) -> np.memmap:  # type: ignore[override]
        return self.cache.node_config_feat

    def __repr__(self) -> str:
        return (f"CachedLayoutGraph({self.cache.cache_dir}, nodes={self.num_nodes}, "
                f"configs={self.num_configs}, configurable={self.num_configurable_nodes})")


def _source_stamp(npz_path: Path) -> dict[str, object]:
    stat = npz_path.stat()
    return {"path": str(npz_path.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _read_manifest(cache_dir: Path) -> dict | None:
    try:
        return json.loads((cache_dir / MANIFEST_NAME).read_text())
    except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError, UnicodeDecodeError):
        return None


def is_fresh(cache_dir: str | Path, npz_path: str | Path) -> bool:
    """True when ``cache_dir`` holds a complete cache of this format built from ``npz_path`` as it is now."""
    manifest = _read_manifest(Path(cache_dir))
    npz_path = Path(npz_path)
    if manifest is None or not npz_path.is_file():
        return False
    return manifest.get("format_version") == CACHE_FORMAT_VERSION and manifest.get("source") == _source_stamp(
        npz_path
    )


def open_cache(cache_dir: str | Path) -> CachedGraph:
    """Open a built cache (no freshness check: use ``build_cache`` for that); configs are memory-mapped.

    Raises ``DataFormatError`` naming the folder when it holds no cache of this format.
    """
    cache_dir = Path(cache_dir)
    manifest = _read_manifest(cache_dir)
    if manifest is None:
        raise DataFormatError(cache_dir,
                              f"no readable {MANIFEST_NAME}: not a graph cache (build it with build_cache)")
    if manifest.get("format_version") != CACHE_FORMAT_VERSION:
        raise DataFormatError(
            cache_dir,
            f"cache format version {manifest.get('format_version')!r}, this kit reads "
            f"{CACHE_FORMAT_VERSION}: rebuild it",
        )
    runtime = np.load(cache_dir / "config_runtime.npy", allow_pickle=False)
    graph = CachedGraph(
        cache_dir=cache_dir,
        source=Path(manifest["source"]["path"]),
        num_configs=int(manifest["num_configs"]),
        num_configurable=int(manifest["num_configurable"]),
        runtime=runtime,
    )
    graph.node_config_feat  # noqa: B018 - map once now, so a missing or mismatched config file fails here,
    graph.close()  # then lazily: a whole split of open graphs holds no open files until read
    return graph


def build_cache(
    npz_path: str | Path, cache_dir: str | Path, *, force: bool = False, chunk_bytes: int = BUILD_CHUNK_BYTES
) -> CachedGraph:
    """Make ``cache_dir`` a fresh cache of the layout npz ``npz_path`` and open it.

    A fresh cache is opened as is (unless ``force``); a missing, stale or foreign one is (re)built.
    The config tensor is streamed ``chunk_bytes`` of source data at a time, so memory stays bounded
    whatever the config count.

    Raises ``DataFormatError`` naming the npz for a missing, truncated or corrupt file, a tile or
    otherwise malformed graph, or a config value that is not an integer in -1..5; ``cache_dir`` is then
    left as it was.
    """
    npz_path, cache_dir = Path(npz_path), Path(cache_dir)
    if not force and is_fresh(cache_dir, npz_path):
        return open_cache(cache_dir)
    if not npz_path.is_file():
        raise DataFormatError(npz_path, "no such file")
    stamp = _source_stamp(npz_path)
    cache_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{cache_dir.name}.building-", dir=cache_dir.parent))
    try:
        sizes = _convert(npz_path, staging, chunk_bytes)
        manifest = {
            "format_version": CACHE_FORMAT_VERSION,
            "source": stamp,
            "num_configs": sizes["c"],
            "num_configurable": sizes["nc"],
            "config_dtype": "int8",
        }
        (staging / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n")
        replace_dir(staging, cache_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return open_cache(cache_dir)


def _convert(npz_path: Path, out_dir: Path, chunk_bytes: int) -> dict[str, int]:
    """Write the small arrays and the int8 config tensor of ``npz_path`` into ``out_dir``; return sizes."""
    try:
        archive = zipfile.ZipFile(npz_path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise DataFormatError(npz_path,
                              f"not a readable npz (zip) archive (truncated or corrupt?): {exc}") from None
    with archive:
        members = {info.filename[: -len(".npy")]: info for info in archive.infolist()
                   if info.filename.endswith(".npy")}
        if "node_config_feat" not in members:
            kind = "a tile graph ('config_feat')" if "config_feat" in members else "no 'node_config_feat'"
            raise DataFormatError(npz_path, f"not a layout graph: {kind}; only layout graphs are cached")
        missing = [key for key in SMALL_KEYS if key not in members]
        if missing:
            raise DataFormatError(npz_path, f"missing key(s) {', '.join(missing)} of a layout graph")
        sizes: dict[str, int] = {}
        for key in SMALL_KEYS:
            array = load_npz_member(archive, members[key], npz_path, key)
            array = check_array(npz_path, key, array, LAYOUT.npz_spec[key], sizes)
            np.save(out_dir / f"{key}.npy", array, allow_pickle=False)
        _check_references(npz_path, out_dir, sizes)
        with archive.open(members["node_config_feat"]) as fp:
            _stream_configs(fp, npz_path, out_dir / CONFIGS_NAME, sizes, chunk_bytes)
    return sizes


def _check_references(npz_path: Path, out_dir: Path, sizes: dict[str, int]) -> None:
    num_nodes = sizes["n"]
    for key in ("edge_index", "node_config_ids"):
        ids = np.load(out_dir / f"{key}.npy", mmap_mode="r")
        if ids.size and (ids.min() < 0 or ids.max() >= num_nodes):
            raise DataFormatError(npz_path, f"{key!r} refers to nodes outside 0..{num_nodes - 1}")


def _stream_configs(fp: IO[bytes], npz_path: Path, out_path: Path, sizes: dict[str, int],
                    chunk_bytes: int) -> None:
    """Copy the ``node_config_feat`` member to an int8 .npy, whole configs at a time, validating values."""
    key = "node_config_feat"
    shape, fortran_order, dtype = read_npy_header(fp, npz_path, key)
    want = (sizes["c"], sizes["nc"], LAYOUT_CONFIG_DIM)
    if tuple(shape) != want:
        raise DataFormatError(
            npz_path,
            f"array {key!r} has shape {tuple(shape)}, expected (c, nc, 18) = {want} from the other arrays"
        )
    if dtype.kind not in "fiu":
        raise DataFormatError(npz_path, f"array {key!r} has dtype {dtype}, expected float32")
    if fortran_order and math.prod(shape[1:]) > 1:
        # Column-major data cannot be cut into whole configs; released files are C-ordered.
        raise DataFormatError(npz_path,
                              f"array {key!r} is stored in Fortran order, which the cache does not read")
    row_items = math.prod(shape[1:])
    step = max(1, chunk_bytes // max(1, row_items * dtype.itemsize))
    with open(out_path, "wb") as out:
        header = {"descr": np.lib.format.dtype_to_descr(np.dtype(np.int8)), "fortran_order": False,
                  "shape": want}
        np.lib.format.write_array_header_2_0(out, header)
        for start in range(0, want[0], step):
            count = min(step, want[0] - start)
            try:
                raw = read_exactly(fp, count * row_items * dtype.itemsize, npz_path, key)
            except DataFormatError:
                raise
            except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as exc:
                raise DataFormatError(
                    npz_path, f"array {key!r} cannot be read (truncated or corrupt?): {exc}") from None
            chunk = np.frombuffer(raw, dtype=dtype)
            try:
                check_layout_chunk(chunk, start * row_items, want, key)
            except ValueError as exc:
                raise DataFormatError(npz_path, str(exc)) from None
            out.write(chunk.astype(np.int8).tobytes())


def split_cache_dir(cache_root: str | Path, collection: Collection, split: Split) -> Path:
    """Where the caches of one split go: ``cache_root/<collection subpath>/<split>/``
    (one folder per stem)."""
    return Path(cache_root) / collection.subpath / split


def layout_collection(collection: Collection | str) -> Collection:
    """The layout collection named ``collection``; ValueError for an unknown name or a tile collection."""
    if isinstance(collection, str):
        if collection not in COLLECTION_BY_NAME:
            raise ValueError(f"unknown collection {collection!r}; expected one of "
                             f"{', '.join(COLLECTION_BY_NAME)}")
        collection = COLLECTION_BY_NAME[collection]
    if not collection.task.cached:
        raise ValueError(
            f"{collection.name}: tile graphs are not cached (each file is a few MB and is read whole)"
        )
    return collection


def iter_cached_split(
    data_dir: str | Path, collection: Collection | str, split: Split, cache_root: str | Path
) -> Iterator[CachedGraph]:
    """The caches of every graph of one layout split, in ``list_split`` order, each built (when missing
    or stale) just before it is yielded: a loop over a split holds one graph's build at a time."""
    collection = layout_collection(collection)
    folder = split_cache_dir(cache_root, collection, split)
    for path in list_split(data_dir, collection, split):
        yield build_cache(path, folder / path.stem)


def cache_split(
    data_dir: str | Path,
    collection: Collection | str,
    split: Split,
    cache_root: str | Path,
    *,
    progress: bool | None = None,
) -> list[CachedGraph]:
    """Build (when missing or stale) and open the caches of every graph of one layout split.

    Caches go to ``cache_root/<collection subpath>/<split>/<stem>/``, e.g.
    ``cache_root/layout/nlp/random/train/albert_en_base/``. Returned in ``list_split`` order (by stem).
    ``progress``: False for none; None or True: ``competition.progress`` decides the form (a bar on a
    terminal, a line in place in a notebook, plain periodic lines in a log).
    """
    collection = layout_collection(collection)
    total = len(list_split(data_dir, collection, split))
    from competition.progress import progress as progress_bar

    graphs = iter_cached_split(data_dir, collection, split, cache_root)
    return list(progress_bar(graphs, total=total, desc=f"cache {collection.name} {split}", unit="graph",
                             enabled=progress is not False))
