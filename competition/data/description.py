"""What a data tree holds, described: to hold the synthetic data against the real data.

``describe(data_dir, private_dir)`` reads only the released files (npz and, for test labels, the
solution CSV), so it works on any tree in the Kaggle layout: the embedded competition, the real
download, or real tuning protos featurized with ``tpugraphs featurize``. Splits and collections that
are absent are skipped. ``tpugraphs stats`` prints it; docs/synthetic-data.md holds the side-by-side
table of the embedded competition and the real data. One layout graph's figures come from
``competition.data.layout_description`` (its configs streamed in chunks).

Figures per layout collection (``min / median / max`` over graphs, or over nodes where it says so):
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
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from competition.collections import COLLECTION_BY_NAME, COLLECTIONS, SPLITS, Collection
from competition.data.layout_description import CHUNK_BYTES, FASTEST_TOLERANCE, describe_layout_graph
from competition.data.tree import split_dir

#: A tile graph counts as "default is the fastest" when no config beats the normaliser by more than this.
DEFAULT_BEST_TOLERANCE = 0.99
AT_FASTEST = f"configs within {100 * FASTEST_TOLERANCE:g} % of the fastest"
LINKED = "configurable nodes reading another's output (directly or through elementwise ops)"
RESHAPE_COPIES = "reshape settings that copy (not a bitcast), of those setting both sides"
# In every labelled real graph at hand a conv/dot group's settings are every combination of its tensors'
# orders (2 x 2 x 2 for output, input and kernel), so each tensor's effect can be told apart in one graph.
MENU_PRODUCT = "conv/dot groups with varying settings whose settings are every combination of their tensors'"
#: Opcodes listed in "most frequent opcodes".
TOP_OPCODES = 10


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



# -- layout ---------------------------------------------------------------------------------------


def _describe_layout(files: list[tuple[str, Path]], labels, chunk_bytes: int) -> dict:
    graphs = []
    for row_id, path in files:
        runtime = labels[row_id][0] if row_id in labels else None
        graphs.append(describe_layout_graph(path, runtime, chunk_bytes=chunk_bytes))
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
        if coll.task.has_configurable_nodes:
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
    layout_names = [name for name in stats if COLLECTION_BY_NAME[name].task.has_configurable_nodes]
    tile_names = [name for name in stats if name not in layout_names]
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
    sys.exit("python -m competition.data.description: run `tpugraphs stats DATA_DIR` (see --help)")
