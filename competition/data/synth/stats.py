"""Realism statistics of a competition directory, to hold the synthetic data against the real data.

``describe(data_dir, private_dir)`` reads only the released files (npz and, for test labels, the
solution CSV), so it works on any tree in the Kaggle layout: the embedded competition, the real
download, or real tuning protos featurized with ``tpugraphs featurize``. Splits and collections that
are absent are skipped. ``tpugraphs stats`` prints it; docs/synthetic-data.md holds the side-by-side
table of the embedded competition and the real data.

Layout configs are streamed from their npz member in chunks of whole configs, so a released graph
with 100,000 configs is described in a few MB: configs, node settings and node columns are
compared through 64-bit hashes (a collision between two different rows has a chance of about 2^-64).

Statistics per layout collection (``min / median / max`` over graphs, or over nodes where it says so):
runtime spread, distinct configs and duplicate share, distinct settings per configurable node, how
many configurable nodes have a column of their own (``distinct node columns / configurable nodes``:
nodes whose ``(configs x 18)`` columns are identical count once, i.e. layout groups with tied
settings), how many layout slots conv/dot tensors set and whether their settings only reorder the same
dimensions, whether a conv/dot group's settings are every combination of its tensors' settings,
configs tied with the fastest, how many configurable nodes read a tensor another
configurable node laid out (directly or through elementwise ops), reshape settings that copy rather
than bitcast (``competition.data.reshapes``), tensors that no config sets, share of
-1, nodes with exactly one consumer, runtime spread among duplicate configs, the opcode profile.
Per tile collection: runtime spread, whether the default (the normaliser) is the fastest, the best
normalised runtime per kernel (``min(runtime / normaliser)``), normaliser drift.

``tpugraphs stats DATA_DIR`` prints the markdown tables.
"""

from __future__ import annotations

import csv
import math
import sys
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from competition.collections import COLLECTION_BY_NAME, COLLECTIONS, SPLITS, Collection
from competition.data.hlo import NODE_FEATURE_INDEX
from competition.data.npz import load_npz_member, read_exactly, read_npy_header
from competition.data.reshapes import copy_mask, reshape_groups
from competition.data.synth.hlo_encoding import OPCODE_NAMES
from competition.data.tree import split_dir
from competition.errors import DataFormatError

#: A tile graph counts as "default is the fastest" when no config beats the normaliser by more than this.
DEFAULT_BEST_TOLERANCE = 0.99
#: A layout config counts as "at the fastest" within this relative margin of the graph's fastest runtime
#: (real runtimes fall on discrete levels: most configs of a real default search tie its fastest).
FASTEST_TOLERANCE = 1e-4
AT_FASTEST = f"configs within {100 * FASTEST_TOLERANCE:g} % of the fastest"
LINKED = "configurable nodes reading another's output (directly or through elementwise ops)"
RESHAPE_COPIES = "reshape settings that copy (not a bitcast), of those setting both sides"
# In every labelled real graph at hand a conv/dot group's settings are every combination of its tensors'
# orders (2 x 2 x 2 for output, input and kernel), so each tensor's effect can be told apart in one graph.
MENU_PRODUCT = "conv/dot groups with varying settings whose settings are every combination of their tensors'"
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
#: Opcodes listed in "most frequent opcodes".
TOP_OPCODES = 10

_MASK64 = (1 << 64) - 1
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


def _solution_labels(private_dir: Path | None) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    labels: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
    if private_dir is None or not (Path(private_dir) / "solution.csv").is_file():
        return labels
    with open(Path(private_dir) / "solution.csv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            runtimes = np.array(row["Runtimes"].split(";"), dtype=np.int64)
            normalizers = (np.array(row["Normalizers"].split(";"), dtype=np.int64)
                           if row.get("Normalizers") else None)
            labels[row["ID"]] = (runtimes, normalizers)
    return labels


def _q(values, digits: int = 3) -> dict[str, float]:
    """min / median / max of a list, rounded."""
    if len(values) == 0:
        return {}
    a = np.asarray(values, dtype=np.float64)
    return {"min": round(float(a.min()), digits), "median": round(float(np.median(a)), digits),
            "max": round(float(a.max()), digits)}


def _share(count: int, total: int) -> float | None:
    return round(count / total, 3) if total else None


# -- one layout graph, streamed ---------------------------------------------------------------------


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
                raise DataFormatError(path,
                                      f"array {key!r} is stored in Fortran order, which stats does not read")
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


def layout_graph_stats(path: str | Path, runtime: np.ndarray | None = None, *,
                       chunk_bytes: int = CHUNK_BYTES) -> dict:
    """Statistics of one layout npz, reading its configs in chunks.

    ``runtime`` replaces the file's ``config_runtime`` (test files carry zeros; the labels are elsewhere).
    """
    path = Path(path)
    with zipfile.ZipFile(path) as archive:
        small = _small_arrays(archive, path, ("node_opcode", "edge_index", "node_config_ids",
                                              "config_runtime", "node_splits", "node_feat"))
        ops = small["node_opcode"].astype(np.int64).reshape(-1)
        ids = small["node_config_ids"].astype(np.int64).reshape(-1)
        if runtime is None:
            runtime = small["config_runtime"].reshape(-1)
        n, nc = len(ops), len(ids)
        node_weights = _splitmix(np.arange(nc, dtype=np.uint64) + np.uint64(1 << 40))
        config_hash = np.zeros(0, dtype=np.uint64)
        column_hash = np.zeros(nc, dtype=np.uint64)
        settings: list[set[int]] = [set() for _ in range(nc)]
        tensor_settings: list[list[set[int]]] = [[set(), set(), set()] for _ in range(nc)]
        slots = np.zeros((nc, 3), dtype=np.int64)  # most slots set in any config, per node and tensor
        unset = np.zeros(3, dtype=np.int64)  # (config, node) settings leaving the tensor wholly -1
        # Which dimensions a tensor's setting names, in any order, hashed: the lowest and highest hash
        # over the configs that set it. Equal: every setting reorders the same dimensions.
        dims_low = np.full((nc, 3), np.iinfo(np.uint64).max, dtype=np.uint64)
        dims_high = np.zeros((nc, 3), dtype=np.uint64)
        minus_one = values = 0
        names = [OPCODE_NAMES.get(int(o), "unknown") for o in ops]
        edges = small["edge_index"].astype(np.int64).reshape(-1, 2)
        reshapes = reshape_group_table(names, edges, ids, small["node_feat"][:, _SHAPE].astype(np.int64))
        reshape_copies = reshape_known = 0
        start = 0
        for chunk in _config_chunks(archive, path, chunk_bytes):
            k = len(chunk)
            setting = _hashed(chunk)  # (k, nc)
            config_hash = np.concatenate([config_hash, (setting * node_weights).sum(axis=1)])
            row_weights = _splitmix(np.arange(start, start + k, dtype=np.uint64))
            column_hash += (setting * row_weights[:, None]).sum(axis=0)
            tensors = chunk.reshape(k, nc, 3, 6)
            set_slots = (tensors >= 0).sum(axis=3)
            tensor_hash = _hashed(tensors)  # (k, nc, 3)
            for j in range(nc):
                settings[j].update(np.unique(setting[:, j]).tolist())
                for t in range(3):
                    tensor_settings[j][t].update(np.unique(tensor_hash[:, j, t]).tolist())
            if k:
                dims = _hashed(np.sort(tensors, axis=3))  # (k, nc, 3)
                is_set = set_slots > 0
                dims_low = np.minimum(dims_low, np.where(is_set, dims, dims_low).min(axis=0))
                dims_high = np.maximum(dims_high, np.where(is_set, dims, dims_high).max(axis=0))
            slots = np.maximum(slots, set_slots.max(axis=0)) if k else slots
            unset += (set_slots == 0).sum(axis=(0, 1))
            for j, (groups, ranks) in reshapes.items():
                sides = tensors[:, j, :2].astype(np.int64)
                reshape_known += int(((sides[:, 0, 0] >= 0) & (sides[:, 1, 0] >= 0)).sum())
                reshape_copies += int(copy_mask(sides[:, 0], sides[:, 1], groups, ranks).sum())
            minus_one += int((chunk == -1).sum())
            values += chunk.size
            start += k
    if start != len(runtime):
        raise DataFormatError(path,
                              f"node_config_feat has {start} configs but there are {len(runtime)} runtimes")
    kinds = [names[i] for i in ids]
    consumers = (np.bincount(np.unique(edges, axis=0)[:, 1], minlength=n) if len(edges)
                 else np.zeros(n, np.int64))
    mxu = np.array([k in ("convolution", "dot") for k in kinds], dtype=bool)
    mxu_slots = slots[mxu][slots[mxu] > 0]
    # One count per layout group (tied nodes share a column): varying, and a full product of its tensors'.
    varying_groups = {int(column_hash[j]): len(settings[j]) == math.prod(len(s) for s in tensor_settings[j])
                      for j in np.flatnonzero(mxu) if len(settings[j]) > 1}
    labelled = bool(runtime.any())
    out = {
        "nodes": n,
        "configs": int(len(runtime)),
        "configurable": nc,
        "configurable opcodes": Counter(kinds),
        "opcodes": Counter(names),
        "distinct opcodes": len(set(names)),
        "node_splits length": int(small["node_splits"].shape[-1]),
        "one consumer": float((consumers == 1).mean()) if n else 0.0,
        "linked configurable": linked_configurable(names, edges, ids, small["node_feat"][:, _SHAPE]),
        "distinct settings": [len(s) for s in settings],
        "distinct columns": len(np.unique(column_hash)),
        "mxu tensors with a layout": int(mxu_slots.size),
        "mxu tensors with at most 2 slots": int((mxu_slots <= 2).sum()),
        "mxu slots set": Counter(int(s) for s in mxu_slots),
        "mxu tensors reordered only": int(((slots > 0) & (dims_low == dims_high))[mxu].sum()),
        "mxu groups varying": len(varying_groups),
        "mxu groups full product": sum(varying_groups.values()),
        "unset tensors": (unset / max(start * nc, 1)).tolist(),
        "minus one": minus_one / values if values else 1.0,
        "reshape copies": reshape_copies,
        "reshape settings": reshape_known,
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


def _describe_layout(files: list[tuple[str, Path]], labels, chunk_bytes: int) -> dict:
    graphs = []
    for row_id, path in files:
        runtime = labels[row_id][0] if row_id in labels else None
        graphs.append(layout_graph_stats(path, runtime, chunk_bytes=chunk_bytes))
    labelled = [g for g in graphs if g["labelled"]]
    opcodes: Counter = sum((g["opcodes"] for g in graphs), Counter())
    kinds: Counter = sum((g["configurable opcodes"] for g in graphs), Counter())
    slots: Counter = sum((g["mxu slots set"] for g in graphs), Counter())
    total_ops = sum(opcodes.values())
    unset = np.mean([g["unset tensors"] for g in graphs if g["configurable"]], axis=0) \
        if any(g["configurable"] for g in graphs) else [None] * 3
    with_mxu = sum(g["mxu tensors with a layout"] for g in graphs)
    spread = [s for g in labelled for s in g["duplicate spread"]]
    groups = len(spread)
    return {
        "graphs": len(graphs),
        "nodes": _q([g["nodes"] for g in graphs], 0),
        "configs per graph": _q([g["configs"] for g in graphs], 0),
        "configurable share of nodes": _q([g["configurable"] / g["nodes"] for g in graphs]),
        "configurable opcodes": dict(kinds.most_common()),
        "runtime max/min": _q([g["runtime max"] / max(g["runtime min"], 1) for g in labelled]),
        AT_FASTEST: _q([g["at the fastest"] for g in labelled]),
        "runtime range ns": [min(g["runtime min"] for g in labelled),
                             max(g["runtime max"] for g in labelled)] if labelled else [],
        "distinct configs / configs": _q(
            [g["distinct configs"] / g["configs"] for g in graphs if g["configs"]]),
        "duplicate share": _q([1 - g["distinct configs"] / g["configs"] for g in graphs if g["configs"]]),
        "distinct settings per configurable node": _q([s for g in graphs for s in g["distinct settings"]], 0),
        "distinct node columns / configurable nodes": _q(
            [g["distinct columns"] / g["configurable"] for g in graphs if g["configurable"]]),
        "conv/dot tensors with a layout setting <= 2 slots": _share(
            sum(g["mxu tensors with at most 2 slots"] for g in graphs), with_mxu),
        "conv/dot tensors whose settings only reorder the same dimensions": _share(
            sum(g["mxu tensors reordered only"] for g in graphs), with_mxu),
        "conv/dot layout slots set": {str(k): _share(v, with_mxu) for k, v in sorted(slots.items())},
        MENU_PRODUCT: _share(sum(g["mxu groups full product"] for g in graphs),
                             sum(g["mxu groups varying"] for g in graphs)),
        "whole tensor unset (output / input / kernel)": [None if u is None else round(float(u), 3)
                                                         for u in unset],
        "share of -1 in node_config_feat": round(float(np.mean([g["minus one"] for g in graphs])), 3)
        if graphs else None,
        "nodes with exactly one consumer": _q([g["one consumer"] for g in graphs]),
        LINKED: _q([g["linked configurable"] / g["configurable"] for g in graphs if g["configurable"]]),
        RESHAPE_COPIES: _share(sum(g["reshape copies"] for g in graphs),
                               sum(g["reshape settings"] for g in graphs)),
        "duplicate runtime spread": _q(spread, 6),
        "duplicate groups with identical runtimes": _share(
            sum(g["exact duplicate groups"] for g in labelled), groups),
        "most frequent opcodes": [f"{name} {100 * count / total_ops:.0f} %"
                                  for name, count in opcodes.most_common(TOP_OPCODES)],
        "distinct opcodes per graph": _q([g["distinct opcodes"] for g in graphs], 0),
        "node_splits length": _q([g["node_splits length"] for g in graphs], 0),
    }


# -- tile -------------------------------------------------------------------------------------------


def _describe_tile(files: list[tuple[str, Path]], labels) -> dict:
    spread, best, norm_var, nodes, configs, low, high = [], [], [], [], [], [], []
    empty = 0
    for row_id, path in files:
        with np.load(path) as npz:
            runtime = npz["config_runtime"]
            normalizers = npz["config_runtime_normalizers"]
            feat = npz["config_feat"]
            nodes.append(len(npz["node_opcode"]))
        if not runtime.any() and row_id in labels:
            runtime, normalizers = labels[row_id]
        configs.append(len(runtime))
        empty += int(not feat.any())
        if runtime.any():
            spread.append(float(runtime.max() / runtime.min()))
            best.append(float((runtime / normalizers).min()))
            norm_var.append(float(normalizers.max() / normalizers.min()))
            low.append(int(runtime.min()))
            high.append(int(runtime.max()))
    best_a = np.array(best)
    not_best = best_a[best_a < DEFAULT_BEST_TOLERANCE]
    return {
        "graphs": len(files),
        "nodes": _q(nodes, 0),
        "configs per graph": _q(configs, 0),
        "runtime max/min": _q(spread),
        "runtime range ns": [min(low), max(high)] if low else [],
        "default is the fastest": round(float((best_a >= DEFAULT_BEST_TOLERANCE).mean()), 3)
        if best else None,
        "best normalised runtime": _q(best, 4),
        "kernels with best normalised runtime > 1": int((best_a > 1.0).sum()),
        "best normalised runtime when not": {
            "p10": round(float(np.quantile(not_best, 0.1)), 3),
            "median": round(float(np.median(not_best)), 3),
            "max": round(float(not_best.max()), 3)} if len(not_best) else {},
        "normalizer max/min within a graph": _q(norm_var, 4),
        "kernels with an empty config": empty,
    }


# -- the whole tree ---------------------------------------------------------------------------------


def split_files(data_dir: str | Path, collection: Collection,
                splits: Sequence[str] = SPLITS) -> list[tuple[str, Path]]:
    """``(row ID, path)`` of every npz of ``collection`` in ``splits``; absent splits are skipped."""
    files = []
    for split in splits:
        folder = split_dir(data_dir, collection, split)
        if folder.is_dir():
            files += [(collection.row_id(p.stem), p) for p in sorted(folder.glob("*.npz"))]
    return files


def describe(data_dir: str | Path, private_dir: str | Path | None = None, *, splits: Sequence[str] = SPLITS,
             collections: Sequence[str] | None = None, chunk_bytes: int = CHUNK_BYTES) -> dict:
    """Realism statistics per collection of a data directory in the Kaggle layout.

    Args:
        data_dir: any data directory the kit accepts (the Kaggle download root, ``npz_all/``, ``npz/``,
            ``OUT/public`` of ``tpugraphs synth``).
        private_dir: folder of ``solution.csv``: test runtimes come from it; without it, test graphs
            count only for the structural figures.
        splits: which splits to read.
        collections: names of the collections to describe (default: every collection present).
        chunk_bytes: bytes of layout configs read at a time.
    Returns:
        ``{collection name: {statistic: value}}`` for every collection with at least one file.
    """
    labels = _solution_labels(Path(private_dir) if private_dir else None)
    chosen = [COLLECTION_BY_NAME[name] for name in collections] if collections else list(COLLECTIONS)
    out = {}
    for coll in chosen:
        files = split_files(data_dir, coll, splits)
        if not files:
            continue
        if coll.task.config_per_node:
            out[coll.name] = _describe_layout(files, labels, chunk_bytes)
        else:
            out[coll.name] = _describe_tile(files, labels)
    return out


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict):
        if set(value) == {"min", "median", "max"}:
            return f"{value['min']:g} / {value['median']:g} / {value['max']:g}"
        return ", ".join(f"{k}: {v}" for k, v in value.items()) or "-"
    if isinstance(value, list):
        return ", ".join("-" if v is None else str(v) for v in value) or "-"
    return str(value)


def markdown(stats: dict) -> str:
    """The statistics as markdown tables (layout collections side by side, then tile);
    ``min / median / max``."""
    layout_names = [name for name in stats if COLLECTION_BY_NAME[name].task.config_per_node]
    tile_names = [name for name in stats if not COLLECTION_BY_NAME[name].task.config_per_node]
    lines: list[str] = []
    for names in (layout_names, tile_names):
        if not names:
            continue
        if lines:
            lines.append("")
        lines += ["| statistic | " + " | ".join(f"`{n}`" for n in names) + " |",
                  "|---|" + "---|" * len(names)]
        for key in stats[names[0]]:
            spread = any(isinstance(stats[n][key], dict) and set(stats[n][key]) == {"min", "median", "max"}
                         for n in names)
            label = f"{key} (min / median / max)" if spread else key  # the three figures say which is which
            lines.append(f"| {label} | " + " | ".join(_fmt(stats[n][key]) for n in names) + " |")
    return "\n".join(lines)


if __name__ == "__main__":  # the command is `tpugraphs stats` (this layer does not import the command line)
    sys.exit("python -m competition.data.synth.stats: run `tpugraphs stats DATA_DIR` (see --help)")
