"""Carve a new hidden-label competition out of labelled graphs: ``prepare_competition``.

The real competition's test labels were never released, so a held-out set with hidden labels has to
be made from the labelled train and valid graphs, as benchmarks built on Kaggle competitions do.
``prepare_competition(data_dir, out_dir, ...)`` reads any Kaggle-layout tree (a real download, an
upstream mirror tree, ``tpugraphs synth`` output) and writes the kit's format:

```
OUT/public/sample_submission.csv            one row per new test graph (0;1;2;3;4 / identity)
OUT/public/npz_all/npz/<collection>/train/  the remaining labelled graphs, copied byte for byte
OUT/public/npz_all/npz/<collection>/valid/
OUT/public/npz_all/npz/<collection>/test/   the held-out graphs: anonymised 32-hex stems, runtimes
                                            (and tile normalizers) zeroed, configs shuffled
OUT/private/solution.csv                    ID,Runtimes,Normalizers,Usage (Public/Private per collection)
OUT/private/split.json                      the audit: every source file, its family, where it went,
                                            its new stem and, for test graphs, the source index of
                                            every config in the new order
```

How test graphs are chosen (README.md, "Host the real competition", shows the commands):

- **By model family** (``group_by="family"``, the default). The real train split holds the same model
  at several batch sizes, topologies and precisions (``resnet50.4x4.fp16``, ``resnet50.8x8.fp32``,
  ``..._batch_size_16_train`` / ``_32_``); a near-twin left in train would leak the answer, so a
  whole family goes to one side. ``model_family`` derives it from the stem; ``group_by="graph"``
  makes every program its own group.
- **Default and random searches of a program stay together.** ``layout:xla:default`` and
  ``layout:xla:random`` (and the two nlp collections) are split as one: a program, named by its stem,
  and its family are test in both or in neither.
- **How many.** Per split unit (tile, layout xla, layout nlp) the groups are shuffled and taken while
  the test graphs stay within ``test_share`` of the unit's graphs (at least one); a collection left
  without a test graph gets the smallest group that has one. A family larger than the target never
  goes to test. Every collection must keep a labelled graph, otherwise the split is refused.
- **Configs.** A layout test graph keeps a random sample of ``layout_test_configs`` configs (1000, as
  on Kaggle; all when it has fewer) in a random order; a tile test graph keeps all its configs, in a
  random order too (a featurized tree lists them in proto order, default run first, which would hint
  at the answer). Sampled configs are read by streaming the config tensor a chunk at a time, so
  memory stays bounded on the 100,040-config graphs.

Everything random draws from ``numpy.random.default_rng([seed, purpose, key])`` streams and every file
is written with the embedded competition's byte-reproducible writer, so the same source and seed give
the same bytes. The competition is written to a temporary folder beside ``out_dir`` and renamed into
place at the end: a failure or an interruption leaves no half-written competition (and, with
``force``, the previous one untouched).
"""

from __future__ import annotations

import json
import math
import re
import shutil
import tempfile
import time
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from competition.collections import (
    COLLECTION_BY_NAME,
    COLLECTIONS,
    SOLUTION_COLUMNS,
    SUBMISSION_HEADER,
    Collection,
)
from competition.data.atomic import replace_dir
from competition.data.compact import check_layout_chunk
from competition.data.graphs import (
    LAYOUT_SPEC,
    TILE_SPEC,
    check_array,
    check_header,
    check_order,
    check_references,
    load_graph,
)
from competition.data.locate import CompetitionFolder, find_npz_root, resolve_data_dir
from competition.data.npz import load_npz_member, read_exactly, read_npy_header
from competition.data.synth.names import anonymous_stems
from competition.data.synth.writer import join_ints, write_csv, write_npz
from competition.errors import DataFormatError
from competition.tasks import LAYOUT, Task

#: Bumped whenever the files written for a given source, seed and options change.
PREPARE_VERSION = 1
GROUP_BY = ("family", "graph")
DEFAULT_TEST_SHARE = 0.1  # Kaggle held out 844 of 7,229 tile graphs, 8 of 76 xla and 17 of 235 nlp programs
DEFAULT_LAYOUT_TEST_CONFIGS = 1000  # as on Kaggle
CHUNK_BYTES = 8 * 2**20  # raw bytes of a source config tensor decoded per step

# Stream purposes (first key after the seed).
_GROUPS, _STEMS, _USAGE, _CONFIGS = range(1, 5)
_COLLECTION_KEY = {c.name: i for i, c in enumerate(COLLECTIONS)}


class PrepareError(ValueError):
    """The source cannot be split as asked (e.g. one model family only); the message says what to change."""


# ---------------------------------------------------------------------------------------------
# Model families

_FINGERPRINT = re.compile(r"_-?(?=[0-9a-f]*[0-9])[0-9a-f]{6,16}$")  # tile kernels: <model stem>_<signed hex>
_BATCH = re.compile(r"^(batch|bs)\d*$")
_RUN_SETTING = re.compile(
    r"^(\d+|\d+x\d+(x\d+)?|train|training|eval|evaluation|test|inference|infer|"
    r"fp16|fp32|bf16|f16|f32|float16|float32|bfloat16|size|shards?|\d+shards?)$"
)


def model_family(stem: str) -> str:
    """The model a graph comes from, read from its file stem: the stem without its run settings.

    The rule, applied in order to the lower-cased stem:

    1. drop a trailing kernel fingerprint ``_<hex>`` or ``_-<hex>`` (6-16 hex digits, one a digit):
       tile kernels are named ``<model stem>_<fingerprint>``;
    2. cut at the first ``.``: ``resnet50.4x4.fp16`` names topology and precision after it;
    3. split at ``_`` and cut at the first ``batch`` token (``batch``, ``batch32``, ``bs``):
       ``_batch_size_16_train``, ``_batch_32_bf16`` are run settings;
    4. drop trailing run-setting tokens: numbers, topologies (``2x2``), modes (``train``, ``eval``,
       ``test``, ``inference``), precisions (``fp16``, ``bf16``, ``f32`` ...), ``size``, ``shard(s)``.

    What remains names the model, including its size when the name states one
    (``small_bert_bert_en_uncased_L-4_H-256_A-4``, ``efficientnet_b7``): a different size is a
    different model. A stem that would come out empty is its own family.

    >>> model_family("resnet50.4x4.fp16"), model_family("resnet50_batch_32_train")
    ('resnet50', 'resnet50')
    >>> model_family("alexnet_train_batch_32_-1bae27a41d70f4dc")
    'alexnet'
    >>> model_family("bert_en_uncased_L-12_H-768_A-12_batch_size_16_train")
    'bert_en_uncased_l-12_h-768_a-12'
    >>> model_family("mlperf_maskrcnn_1_shard_batch_4")
    'mlperf_maskrcnn'
    """
    name = stem.lower()
    name = _FINGERPRINT.sub("", name)
    name = name.split(".", 1)[0]
    tokens = name.split("_")
    for i, token in enumerate(tokens):
        if _BATCH.match(token):
            tokens = tokens[:i]
            break
    while tokens and (not tokens[-1] or _RUN_SETTING.match(tokens[-1])):
        tokens.pop()
    return "_".join(tokens) or stem.lower()


# ---------------------------------------------------------------------------------------------
# The plan: which graph goes where


@dataclass
class SourceGraph:
    """One labelled graph of the source tree and where the plan sends it."""

    collection: Collection
    split: str  # "train" or "valid" in the source
    path: Path
    relpath: str  # under the source npz/ folder, e.g. layout/xla/default/train/resnet50.4x4.fp16.npz
    num_configs: int
    family: str
    side: str = ""  # "train", "valid" (kept where it was), "test", or "dropped" (no configs, family in test)
    stem: str = ""  # the stem in the new competition
    usage: str = ""  # Public / Private, test graphs only
    configs: np.ndarray | None = None  # test graphs: source config indices in the new order

    @property
    def program(self) -> str:
        """What names the program across the default and random searches: the file stem."""
        return self.path.stem


@dataclass
class PrepareSummary(CompetitionFolder):
    """What ``prepare_competition`` wrote."""

    seed: int = 0
    graphs: dict[str, dict[str, int]] = field(default_factory=dict)  # collection -> split -> graphs
    test_configs: dict[str, int] = field(default_factory=dict)  # collection -> configs of its test graphs
    ignored_test: dict[str, int] = field(default_factory=dict)  # collection -> unlabelled source test graphs
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0

    @property
    def split_report(self) -> Path:
        return self.out_dir / "private" / "split.json"

    def table(self) -> str:
        lines = [f"{'collection':20s} {'train':>6s} {'valid':>6s} {'test':>6s} {'test configs':>13s}"]
        for name, splits in self.graphs.items():
            lines.append(f"{name:20s} {splits['train']:6d} {splits['valid']:6d} {splits['test']:6d} "
                         f"{self.test_configs[name]:13,d}")
        return "\n".join(lines)


def _stream(seed: int, *key: int) -> np.random.Generator:
    return np.random.default_rng([seed, *key])


def _split_unit(collection: Collection) -> str:
    """Collections split together: the two searches of a layout source share their programs."""
    return f"{collection.task_name}:{collection.source}" if collection.search else collection.name


_UNIT_KEY = {"tile:xla": 0, "layout:xla": 1, "layout:nlp": 2}


def plan_split(
    graphs: Sequence[SourceGraph], *, seed: int, test_share: float, group_by: str = "family"
) -> dict[str, list[str]]:
    """Set ``side`` of every graph ("test", or its source split); returns unit -> test group keys.

    Raises PrepareError when a collection would be left without a test graph or without a labelled one.
    """
    units: dict[str, list[SourceGraph]] = {}
    for graph in graphs:
        units.setdefault(_split_unit(graph.collection), []).append(graph)
    chosen: dict[str, list[str]] = {}
    for unit, members in units.items():
        groups: dict[str, list[SourceGraph]] = {}
        for graph in members:
            key = graph.family if group_by == "family" else graph.program
            groups.setdefault(key, []).append(graph)
        test = _choose_test_groups(unit, groups, seed=seed, test_share=test_share, group_by=group_by)
        for key, group in groups.items():
            for graph in group:
                if key not in test:
                    graph.side = graph.split
                else:
                    # A graph without configs cannot be scored; leaving it in train would leak its family.
                    graph.side = "test" if graph.num_configs else "dropped"
        chosen[unit] = sorted(test)
    return chosen


def _choose_test_groups(
    unit: str, groups: dict[str, list[SourceGraph]], *, seed: int, test_share: float, group_by: str
) -> set[str]:
    keys = sorted(groups)
    order = [keys[i] for i in _stream(seed, _GROUPS, _UNIT_KEY.get(unit, 9)).permutation(len(keys))]
    # Graphs without configs cannot be scored: they never make a group a test candidate on their own.
    weight = {key: sum(1 for g in groups[key] if g.num_configs) for key in keys}
    total = sum(weight.values())
    target = max(1, round(test_share * total))
    test: set[str] = set()
    taken = 0
    for key in order:
        if weight[key] and taken + weight[key] <= target:
            test.add(key)
            taken += weight[key]
    collections = sorted({g.collection.name for group in groups.values() for g in group}, key=_COLLECTION_KEY.get)

    def keys_of(name: str, *, scorable: bool = False) -> list[str]:
        return [key for key in keys
                if any(g.collection.name == name and (g.num_configs or not scorable) for g in groups[key])]

    for name in collections:  # every collection needs a test graph: add its smallest group
        if not set(keys_of(name, scorable=True)) & test:
            candidates = [key for key in order if key in set(keys_of(name, scorable=True))]
            if not candidates:
                raise PrepareError(f"{name}: no graph with configs to hold out as a test graph")
            test.add(min(candidates, key=weight.__getitem__))  # the first smallest, in shuffled order
    for name in collections:  # ... and a labelled graph to learn from (checked once every group is chosen)
        mine = keys_of(name)
        if set(mine) <= test:
            what = "model family" if group_by == "family" else "graph"
            shown = ", ".join(mine[:5]) + (", ..." if len(mine) > 5 else "")
            hint = ("use --group-by graph to split graphs of one family" if group_by == "family"
                    else "add labelled graphs")
            raise PrepareError(
                f"{name}: its graphs form {len(mine)} {what}{'' if len(mine) == 1 else 's'} ({shown}); "
                f"holding out a test set would leave no labelled graph: {hint}, or leave the collection "
                f"out with --collection")
    return test


# ---------------------------------------------------------------------------------------------
# Reading the source


def _members_of(archive: zipfile.ZipFile, path: Path, task: Task) -> dict[str, zipfile.ZipInfo]:
    """The ``.npy`` members of an npz by key; DataFormatError when a key of the ``task``'s schema is missing."""
    members = {info.filename[: -len(".npy")]: info for info in archive.infolist() if info.filename.endswith(".npy")}
    missing = [key for key in task.npz_spec if key not in members]
    if missing:
        raise DataFormatError(path, f"missing key(s) {', '.join(missing)} of a {task.name} graph")
    return members


def _open_zip(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise DataFormatError(path, f"not a readable npz (zip) archive (truncated or corrupt?): {exc}") from None


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


def _read_sampled_layout(path: Path, indices: np.ndarray, chunk_bytes: int) -> dict[str, np.ndarray]:
    """The arrays of a layout graph with only the configs at ``indices`` (in that order), streaming
    ``node_config_feat`` so that peak memory is one chunk plus the sampled configs."""
    with _open_zip(path) as archive:
        members = _members_of(archive, path, LAYOUT)
        sizes: dict[str, int] = {}
        arrays: dict[str, np.ndarray] = {}
        for key in ("node_feat", "node_opcode", "edge_index", "config_runtime", "node_config_ids", "node_splits"):
            arrays[key] = check_array(path, key, load_npz_member(archive, members[key], path, key),
                                      LAYOUT_SPEC[key], sizes)
        check_references(path, arrays, sizes["n"])
        with archive.open(members["node_config_feat"]) as fp:
            shape, fortran_order, dtype = read_npy_header(fp, path, "node_config_feat")
            check_header(path, "node_config_feat", tuple(shape), dtype, LAYOUT_SPEC["node_config_feat"], sizes)
            if fortran_order and math.prod(shape[1:]) > 1:
                raise DataFormatError(path, "array 'node_config_feat' is stored in Fortran order; released files "
                                            "are C-ordered (re-save it with np.savez)")
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
            raise DataFormatError(path, f"array {key!r} cannot be read (truncated or corrupt?): {exc}") from None
        chunk = np.frombuffer(raw, dtype=dtype).reshape(count, *shape[1:])
        try:
            check_layout_chunk(chunk, start * row_items, shape, key)
        except ValueError as exc:
            raise DataFormatError(path, str(exc)) from None
        lo, hi = np.searchsorted(wanted, [start, start + count])
        out[order[lo:hi]] = chunk[wanted[lo:hi] - start]
    return out


def _positive(path: Path, key: str, values: np.ndarray) -> None:
    if values.size and values.min() <= 0:
        raise DataFormatError(
            path, f"array {key!r} holds values <= 0: not labels (a test file of a download has zeros); "
                  "prepare needs labelled train/valid graphs")


# ---------------------------------------------------------------------------------------------
# Writing the competition


def _usage(rng: np.random.Generator, count: int) -> list[str]:
    """Public / Private for ``count`` test rows of a collection: half each (Public gets the odd one), shuffled."""
    labels = np.array(["Public"] * ((count + 1) // 2) + ["Private"] * (count // 2))
    return labels[rng.permutation(count)].tolist()


def _write_test_graph(graph: SourceGraph, target: Path, seed: int, index: int, layout_test_configs: int,
                      chunk_bytes: int) -> tuple[int, list, list | None]:
    """Write one held-out graph; returns (file size, runtimes, normalizers) in the new config order."""
    rng = _stream(seed, _CONFIGS, _COLLECTION_KEY[graph.collection.name], index)
    if not graph.collection.task.config_per_node:  # tile: every config kept, the file is small
        tile = load_graph(graph.path, "tile")
        _positive(graph.path, "config_runtime", tile.config_runtime)
        _positive(graph.path, "config_runtime_normalizers", tile.config_runtime_normalizers)
        graph.configs = rng.permutation(tile.num_configs)
        runtimes = tile.config_runtime[graph.configs]
        normalizers = tile.config_runtime_normalizers[graph.configs]
        arrays = dict(tile.arrays(), config_feat=tile.config_feat[graph.configs],
                      config_runtime=np.zeros_like(runtimes), config_runtime_normalizers=np.zeros_like(normalizers))
        return write_npz(target, {key: arrays[key] for key in TILE_SPEC}), runtimes.tolist(), normalizers.tolist()
    # A sample without replacement comes in random order: that order is the new config order.
    count = min(graph.num_configs, layout_test_configs)
    graph.configs = rng.choice(graph.num_configs, size=count, replace=False)
    arrays = _read_sampled_layout(graph.path, graph.configs, chunk_bytes)
    runtimes = arrays["config_runtime"]
    _positive(graph.path, "config_runtime", runtimes)
    arrays["config_runtime"] = np.zeros_like(runtimes)
    return write_npz(target, {key: arrays[key] for key in LAYOUT_SPEC}), runtimes.tolist(), None


def _check_out_dir(out_dir: Path, root: Path, force: bool) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise FileExistsError(f"{out_dir} exists and is not a folder")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not force:
        raise FileExistsError(f"{out_dir} is not empty; choose an empty folder, or replace it with "
                              "tpugraphs prepare --force")
    out_abs, root_abs = out_dir.resolve(), root.resolve()
    if out_abs == root_abs or out_abs in root_abs.parents:
        raise ValueError(f"{out_dir} holds the source data {root}; write the new competition elsewhere")


def prepare_competition(
    data_dir: str | Path,
    out_dir: str | Path,
    *,
    collections: Sequence[str] | None = None,
    seed: int = 0,
    test_share: float = DEFAULT_TEST_SHARE,
    layout_test_configs: int = DEFAULT_LAYOUT_TEST_CONFIGS,
    group_by: str = "family",
    force: bool = False,
    progress: bool | None = False,
    chunk_bytes: int = CHUNK_BYTES,
) -> PrepareSummary:
    """Write a new competition with hidden labels to ``out_dir``, carved from the labelled graphs of
    ``data_dir`` (see the module docstring for the rules).

    Args:
        data_dir: a Kaggle-layout tree (download root, its ``npz_all/``, an upstream ``npz/`` folder).
        out_dir: where ``public/`` and ``private/`` go; must be empty or absent unless ``force``.
        collections: names of the collections to prepare (default: every one with labelled graphs).
        seed: non-negative integer; the same source and seed give byte-identical files.
        test_share: share of each split unit's graphs to hold out, in (0, 1).
        layout_test_configs: configs kept per layout test graph (all when a graph has fewer).
        group_by: ``"family"`` (whole model families) or ``"graph"`` (programs) go to test.
        force: replace a non-empty ``out_dir`` (only once the new competition is complete).
        progress: show progress bars (None: only on a terminal).

    Raises FileNotFoundError (no labelled graphs, unknown folder), FileExistsError (``out_dir`` not
    empty), ValueError (bad arguments; ``PrepareError`` when the split is impossible) and
    DataFormatError naming the file for unreadable source data. ``out_dir`` is then left as it was.
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if not 0 < test_share < 1:
        raise ValueError(f"test share must be between 0 and 1 (exclusive), got {test_share!r}")
    if layout_test_configs < 1:
        raise ValueError(f"layout test configs must be at least 1, got {layout_test_configs!r}")
    if group_by not in GROUP_BY:
        raise ValueError(f"group_by must be one of {', '.join(GROUP_BY)}, got {group_by!r}")
    seed = int(seed)
    started = time.perf_counter()
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    data_dir = resolve_data_dir(data_dir)  # the one data-directory rule: a synth output folder is its public/
    root = find_npz_root(data_dir)
    present = labelled_collections(data_dir)
    if not present:
        raise FileNotFoundError(f"{data_dir}: no labelled graphs (train/valid *.npz) under {root}; expected "
                                "the Kaggle download tree (<data>/npz_all/npz/<collection>/{train,valid}/*.npz)")
    if collections:
        unknown = [name for name in collections if name not in COLLECTION_BY_NAME]
        if unknown:
            raise ValueError(f"unknown collection {unknown[0]!r}; expected one of {', '.join(COLLECTION_BY_NAME)}")
        absent = [name for name in collections if COLLECTION_BY_NAME[name] not in present]
        if absent:
            raise FileNotFoundError(f"{data_dir}: no labelled graphs of {', '.join(absent)}; it holds labelled "
                                    f"graphs of: {', '.join(c.name for c in present)}")
        chosen = [c for c in COLLECTIONS if c.name in set(collections)]
    else:
        chosen = present
    _check_out_dir(out_dir, root, force)

    from competition.progress import progress as progress_bar

    enabled = progress is not False  # None: the form suits the output (competition.progress)
    sources = [(c, split, path) for c in chosen for split, path in list_labelled(root, c)]
    graphs = []
    for collection, split, path in progress_bar(sources, desc="prepare: scan", unit="graph", enabled=enabled):
        graphs.append(SourceGraph(collection, split, path, path.relative_to(root).as_posix(),
                                  scan_graph(path, collection), model_family(path.stem)))
    test_groups = plan_split(graphs, seed=seed, test_share=test_share, group_by=group_by)

    summary = PrepareSummary(out_dir=out_dir, seed=seed)
    for collection in chosen:
        summary.graphs[collection.name] = {"train": 0, "valid": 0, "test": 0}
        summary.test_configs[collection.name] = 0
        test_folder = root / collection.subpath / "test"
        summary.ignored_test[collection.name] = len(list(test_folder.glob("*.npz"))) if test_folder.is_dir() else 0
    # New stems and usages, per collection, in source order (stems are random: the order says nothing).
    for collection in chosen:
        held_out = [g for g in graphs if g.collection is collection and g.side == "test"]
        stems = anonymous_stems(_stream(seed, _STEMS, _COLLECTION_KEY[collection.name]), len(held_out))
        by_stem = sorted(zip(stems, held_out, strict=True), key=lambda pair: pair[0])
        usage = _usage(_stream(seed, _USAGE, _COLLECTION_KEY[collection.name]), len(held_out))
        for (stem, graph), use in zip(by_stem, usage, strict=True):
            graph.stem, graph.usage = stem, use
    for graph in graphs:
        if graph.side in ("train", "valid"):
            graph.stem = graph.program

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.preparing-", dir=out_dir.parent))
    try:
        _write(staging, graphs, chosen, summary, test_groups, seed=seed, test_share=test_share,
               layout_test_configs=layout_test_configs, group_by=group_by, chunk_bytes=chunk_bytes,
               bar=progress_bar(total=len(graphs), desc="prepare: write", unit="graph", enabled=enabled))
        replace_dir(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    summary.seconds = time.perf_counter() - started
    return summary


def _write(staging: Path, graphs: list[SourceGraph], chosen: list[Collection], summary: PrepareSummary,
           test_groups: dict[str, list[str]], *, seed: int, test_share: float, layout_test_configs: int,
           group_by: str, chunk_bytes: int, bar) -> None:
    npz_root = staging / "public" / "npz_all" / "npz"
    for collection in chosen:
        for split in ("train", "valid", "test"):
            (npz_root / collection.subpath / split).mkdir(parents=True, exist_ok=True)
    solution_rows: dict[str, list[tuple]] = {c.name: [] for c in chosen}
    sample_rows: dict[str, list[tuple]] = {c.name: [] for c in chosen}
    with bar:
        test_index = dict.fromkeys(summary.graphs, 0)
        for graph in graphs:
            name = graph.collection.name
            if graph.side == "dropped":
                bar.update(1)
                continue
            target = npz_root / graph.collection.subpath / graph.side / f"{graph.stem}.npz"
            if graph.side == "test":
                size, runtimes, normalizers = _write_test_graph(
                    graph, target, seed, test_index[name], layout_test_configs, chunk_bytes)
                test_index[name] += 1
                row_id = graph.collection.row_id(graph.stem)
                solution_rows[name].append(
                    (row_id, join_ints(runtimes), join_ints(normalizers) if normalizers is not None else "", graph.usage))
                sample_rows[name].append((row_id, join_ints(range(graph.collection.required_length(len(runtimes))))))
                summary.test_configs[name] += len(runtimes)
            else:
                shutil.copyfile(graph.path, target)  # byte for byte: train graphs are the source's
                size = target.stat().st_size
            summary.graphs[name][graph.side] += 1
            summary.files += 1
            summary.bytes += size
            bar.update(1)
    sample = [row for c in chosen for row in sorted(sample_rows[c.name])]
    solution = [row for c in chosen for row in sorted(solution_rows[c.name])]
    summary.bytes += write_csv(staging / "public" / "sample_submission.csv", SUBMISSION_HEADER, sample)
    summary.bytes += write_csv(staging / "private" / "solution.csv", SOLUTION_COLUMNS, solution)
    summary.bytes += _write_split_report(staging / "private" / "split.json", graphs, chosen, summary, test_groups,
                                         seed=seed, test_share=test_share, layout_test_configs=layout_test_configs,
                                         group_by=group_by)
    summary.files += 3


def _write_split_report(path: Path, graphs: list[SourceGraph], chosen: list[Collection], summary: PrepareSummary,
                        test_groups: dict[str, list[str]], **options) -> int:
    """``split.json``: the options, the counts, the test groups and one line per source graph."""
    head = {
        "format_version": PREPARE_VERSION,
        **options,
        "family_rule": "competition.data.prepare.model_family",
        "collections": [c.name for c in chosen],
        "counts": summary.graphs,
        "test_configs": summary.test_configs,
        "ignored_source_test_graphs": summary.ignored_test,
        "test_groups": test_groups,
    }
    records = []
    for graph in sorted(graphs, key=lambda g: (_COLLECTION_KEY[g.collection.name], g.relpath)):
        record = {"collection": graph.collection.name, "source": graph.relpath, "family": graph.family,
                  "split": graph.side, "stem": graph.stem, "source_configs": graph.num_configs}
        if graph.side == "test":
            record["usage"] = graph.usage
            record["configs"] = [int(i) for i in graph.configs]
        records.append(json.dumps(record))
    text = json.dumps(head, indent=2)[:-2] + ',\n  "graphs": [\n    ' + ",\n    ".join(records) + "\n  ]\n}\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path.stat().st_size
