"""Build the embedded competition: the public Kaggle-shaped tree and the private labels.

Every part draws from its own ``numpy.random.default_rng([seed, purpose, ...])`` stream keyed by what
it is (collection or source, split, graph index), so parts do not depend on each other or on the order
they are made in, and the same seed gives the same bytes for every file.

Layout programs are shared by the two searches of a source, as in the real data (the same model is
searched both ways): the graph comes from the ``(source, split, index)`` stream and each search's
configurations from the ``(collection, split, index)`` stream.
"""

from __future__ import annotations

import math
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from competition.collections import (
    COLLECTION_BY_NAME,
    COLLECTIONS,
    SOLUTION_COLUMNS,
    SPLITS,
    SUBMISSION_HEADER,
)
from competition.data.atomic import replace_dir, staging_dir
from competition.data.synth.kernels import build_kernel
from competition.data.synth.layout import layout_space, measure_layout_runs
from competition.data.synth.models import build_program
from competition.data.synth.names import ModelSpec, anonymous_stems, layout_specs, tile_specs
from competition.data.synth.scales import SCALES, Extreme, Scale
from competition.data.synth.tile import measure_tile_runs
from competition.data.synth.writer import join_ints, write_csv, write_npz
from competition.data.tree import CompetitionFolder

#: Bumped whenever the files written for a given (scale, seed) change; caches of generated data can key on it.
GENERATOR_VERSION = 6

# Stream purposes (first key after the seed).
_PLAN, _GRAPH, _RUNS, _STEMS, _USAGE = range(5)
_SOURCES = ("xla", "nlp")
_SOURCE_KEY = {"xla": 10, "nlp": 11}  # stream keys of the layout sources, apart from collection indices
_COLLECTION_KEY = {c.name: i for i, c in enumerate(COLLECTIONS)}


@dataclass
class SynthSummary(CompetitionFolder):
    """What ``generate_competition`` wrote."""

    scale: str = ""
    seed: int = 0
    graphs: dict[str, dict[str, int]] = field(default_factory=dict)  # collection -> split -> graphs
    configs: dict[str, int] = field(default_factory=dict)  # collection -> configurations, all splits
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0

    def table(self) -> str:
        """The counts as a small text table."""
        return self.counts_table(self.graphs, "configs", self.configs, "9d")


def _stream(seed: int, *key: int) -> np.random.Generator:
    return np.random.default_rng([seed, *key])


def _log_uniform(rng: np.random.Generator, low: int, high: int) -> int:
    return int(round(math.exp(rng.uniform(math.log(low), math.log(high)))))


@dataclass
class _Written:
    """One file a worker wrote: what the summary counts and, for a test file, its solution row."""

    collection: str
    split: str
    stem: str
    configs: int
    bytes: int
    runtimes: str = ""  # test files: the ``;``-joined runtimes and normalisers of the solution row
    normalizers: str | None = None


def _write_graph(npz_root: Path, collection: str, split: str, stem: str, arrays: dict[str, np.ndarray],
                 normalizers: np.ndarray | None = None) -> _Written:
    """Write one graph's npz; a test file gets zeroed labels, its labels go to the returned row."""
    coll = COLLECTION_BY_NAME[collection]
    runtimes = arrays["config_runtime"]
    row = {}
    if split == "test":
        # The labels go to the private solution; the public file carries zeros, as on Kaggle.
        row = {"runtimes": join_ints(runtimes),
               "normalizers": None if normalizers is None else join_ints(normalizers)}
        arrays = dict(arrays, config_runtime=np.zeros_like(runtimes))
        if normalizers is not None:
            arrays["config_runtime_normalizers"] = np.zeros_like(normalizers)
    path = npz_root / coll.subpath / split / f"{stem}.npz"
    size = write_npz(path, arrays, dtypes={"node_config_feat": np.float32})
    return _Written(collection, split, stem, len(runtimes), size, **row)


class _Collector:
    """Counts what was written and keeps the test rows of both CSV files (as text: the solution's size)."""

    def __init__(self, summary: SynthSummary, progress) -> None:
        self.summary = summary
        self.progress = progress
        self.test_rows: dict[str, list[tuple[str, int, str, str | None]]] = {c.name: [] for c in COLLECTIONS}

    def add(self, written: _Written) -> None:
        if written.split == "test":
            self.test_rows[written.collection].append(
                (written.stem, written.configs, written.runtimes, written.normalizers))
        self.summary.bytes += written.bytes
        self.summary.files += 1
        self.summary.graphs[written.collection][written.split] += 1
        self.summary.configs[written.collection] += written.configs
        self.progress.update(1)

    def csv_files(self, out_dir: Path, seed: int) -> None:
        sample_rows, solution_rows = [], []
        for coll in COLLECTIONS:
            rows = sorted(self.test_rows[coll.name])
            usage = _usage(_stream(seed, _USAGE, _COLLECTION_KEY[coll.name]), len(rows))
            for (stem, n_configs, runtimes, normalizers), use in zip(rows, usage, strict=True):
                row_id = coll.row_id(stem)
                top = range(coll.required_length(n_configs))
                sample_rows.append((row_id, join_ints(top)))
                solution_rows.append((row_id, runtimes, normalizers or "", use))
        self.summary.bytes += write_csv(out_dir / "public" / "sample_submission.csv", SUBMISSION_HEADER,
                                        sample_rows)
        # Written last: its presence means the competition is complete.
        self.summary.bytes += write_csv(out_dir / "private" / "solution.csv", SOLUTION_COLUMNS, solution_rows)
        self.summary.files += 2


def _usage(rng: np.random.Generator, count: int) -> list[str]:
    """Public / Private labels for ``count`` test rows: half each (Public gets the odd one), shuffled."""
    labels = np.array(["Public"] * ((count + 1) // 2) + ["Private"] * (count // 2))
    return labels[rng.permutation(count)].tolist()


# -- the units of work: one tile kernel, or one layout program with both its searches ---------------
# A unit depends only on the seed and its own streams, so units may run in any order and in any
# process: the files are the same bytes whatever the number of workers.


@dataclass(frozen=True)
class _TileUnit:
    """One tile kernel of ``tile:xla``."""

    split_index: int
    index: int
    spec: ModelSpec
    stem: str

    def write(self, scale: Scale, seed: int, npz_root: Path) -> list[_Written]:
        """Build the kernel, measure its configs and write its npz."""
        key = _COLLECTION_KEY["tile:xla"]
        graph_rng = _stream(seed, _GRAPH, key, self.split_index, self.index)
        graph, profile = build_kernel(self.spec, graph_rng, _log_uniform(graph_rng, *scale.tile_nodes))
        runs_rng = _stream(seed, _RUNS, key, self.split_index, self.index)
        runs = measure_tile_runs(profile, runs_rng, _log_uniform(runs_rng, *scale.tile_configs))
        arrays = {
            "node_feat": graph.node_feat(),
            "node_opcode": graph.node_opcode(),
            "edge_index": graph.edge_index(),
            "config_feat": runs.config_feat,
            "config_runtime": runs.config_runtime,
            "config_runtime_normalizers": runs.config_runtime_normalizers,
        }
        return [_write_graph(npz_root, "tile:xla", SPLITS[self.split_index], self.stem, arrays,
                             runs.config_runtime_normalizers)]


@dataclass(frozen=True)
class _LayoutUnit:
    """One layout program of a source, with every search that covers it."""

    source: str
    split_index: int
    index: int
    spec: ModelSpec
    stems: tuple[tuple[str, str], ...]  # (search, stem) of each search that covers this program
    extreme: Extreme | None = None
    cost: float = 0.0  # expected work, to start the largest units first

    def write(self, scale: Scale, seed: int, npz_root: Path) -> list[_Written]:
        """Build the program once and write the npz of each search that covers it."""
        source, split, extreme = self.source, SPLITS[self.split_index], self.extreme
        graph_rng = _stream(seed, _GRAPH, _SOURCE_KEY[source], self.split_index, self.index)
        target = _log_uniform(graph_rng, *scale.nodes_range(source))
        if extreme is not None and extreme.nodes is not None:
            target = extreme.nodes
        graph = build_program(self.spec, graph_rng, target, extreme.configurable_share if extreme else None)
        space = layout_space(graph, graph_rng)  # the same layout groups in both searches
        common = {"node_feat": graph.node_feat(), "node_opcode": graph.node_opcode(),
                  "edge_index": graph.edge_index()}
        written = []
        for search, stem in self.stems:
            name = f"layout:{source}:{search}"
            runs_rng = _stream(seed, _RUNS, _COLLECTION_KEY[name], self.split_index, self.index)
            wanted = (scale.layout_test_configs if split == "test"
                      else _log_uniform(runs_rng, *scale.configs_range(source)))
            if extreme is not None and extreme.configs is not None:
                wanted = extreme.configs
            runs = measure_layout_runs(graph, runs_rng, search=search, source=source, n_configs=wanted,
                                       exact_count=split == "test", space=space)
            arrays = {
                **common,
                "node_config_feat": runs.node_config_feat,
                "node_config_ids": runs.node_config_ids,
                "config_runtime": runs.config_runtime,
                "node_splits": graph.node_splits(),
            }
            written.append(_write_graph(npz_root, name, split, stem, arrays))
            del runs, arrays  # the next search's configs are not added to these
        return written


def _tile_units(scale: Scale, seed: int) -> list[_TileUnit]:
    key = _COLLECTION_KEY["tile:xla"]
    counts = dict(zip(SPLITS, scale.tile_graphs, strict=True))
    specs = tile_specs(_stream(seed, _PLAN, key), sum(counts.values()))
    test_stems = anonymous_stems(_stream(seed, _STEMS, key), counts["test"])
    units, offset = [], 0
    for split_index, split in enumerate(SPLITS):
        for i in range(counts[split]):
            spec = specs[offset + i]
            units.append(_TileUnit(split_index, i, spec, test_stems[i] if split == "test" else spec.stem))
        offset += counts[split]
    return units


def _extremes(scale: Scale, source: str, split: str, specs: list[ModelSpec]) -> dict[int, Extreme]:
    """Which programs of ``(source, split)`` are made at an extreme size (``Extreme``'s rule)."""
    taken: dict[int, Extreme] = {}
    for extreme in scale.extremes:
        if (extreme.source, extreme.split) != (source, split):
            continue
        for i, spec in enumerate(specs):
            if i not in taken and (not extreme.families or spec.family in extreme.families):
                taken[i] = extreme
                break
        else:
            raise ValueError(f"{scale.name}: no {source} {split} program left for {extreme}")
    return taken


def _layout_units(source: str, scale: Scale, seed: int) -> list[_LayoutUnit]:
    counts = dict(zip(SPLITS, scale.layout_graphs(source), strict=True))
    specs = layout_specs(_stream(seed, _PLAN, _SOURCE_KEY[source]), source, sum(counts.values()))
    searches = {search: f"layout:{source}:{search}" for search in ("default", "random")}
    covered = {search: dict(zip(SPLITS, scale.collection_graphs(name), strict=True))
               for search, name in searches.items()}
    test_stems = {search: anonymous_stems(_stream(seed, _STEMS, _COLLECTION_KEY[name]),
                                          covered[search]["test"])
                  for search, name in searches.items()}
    nodes, configs = scale.nodes_range(source), scale.configs_range(source)
    units, offset = [], 0
    for split_index, split in enumerate(SPLITS):
        split_specs = specs[offset:offset + counts[split]]
        extremes = _extremes(scale, source, split, split_specs) if split != "test" else {}
        for i, spec in enumerate(split_specs):
            stems = tuple((search, test_stems[search][i] if split == "test" else spec.stem)
                          for search in searches if i < covered[search][split])
            extreme = extremes.get(i)
            size = float(extreme.nodes if extreme and extreme.nodes else nodes[1] / 2)
            size *= (extreme.configs if extreme and extreme.configs else
                     scale.layout_test_configs if split == "test" else configs[1] / 2)
            units.append(_LayoutUnit(source, split_index, i, spec, stems, extreme, size * len(stems)))
        offset += counts[split]
    return units


_Job = tuple[str, int, Path, list]


def _run_job(job: _Job) -> list[_Written]:
    """A worker's job: a few units (one layout program, or a batch of tile kernels)."""
    scale_name, seed, npz_root, units = job
    scale = SCALES[scale_name]
    written: list[_Written] = []
    for unit in units:
        written += unit.write(scale, seed, npz_root)
    return written


def _jobs(scale: Scale, seed: int, npz_root: Path, tile_batch: int = 16) -> list[_Job]:
    """Every unit of the competition in jobs: the costliest layout programs first (with several
    workers the long ones then do not come last), then the tile kernels in batches."""
    layout = sorted((u for s in _SOURCES for u in _layout_units(s, scale, seed)), key=lambda u: -u.cost)
    tile = _tile_units(scale, seed)
    batches = [[u] for u in layout] + [tile[i:i + tile_batch] for i in range(0, len(tile), tile_batch)]
    return [(scale.name, seed, npz_root, units) for units in batches]


def _check_out_dir(out_dir: Path, overwrite: bool) -> None:
    taken = [d for d in (out_dir / "public", out_dir / "private") if d.exists() and any(d.iterdir())]
    if taken and not overwrite:
        raise FileExistsError(
            f"{out_dir} already holds a competition ({', '.join(d.name + '/' for d in taken)}); "
            "pass overwrite=True (tpugraphs synth --force) to replace it")


def generate_competition(
    out_dir: str | Path,
    *,
    scale: str = "tiny",
    seed: int = 0,
    progress: bool = False,
    overwrite: bool = False,
    workers: int = 1,
) -> SynthSummary:
    """Write the embedded competition to ``out_dir``: ``public/`` (the Kaggle download tree) and
    ``private/solution.csv`` (the hidden labels).

    Args:
        out_dir: folder to write into (created if needed).
        scale: a key of ``SCALES`` (``"tiny"`` for tests, ``"small"`` for the demo and training,
            ``"full"`` for a rehearsal at the real release's size).
        seed: non-negative integer; the same seed gives byte-identical files.
        progress: show progress (``competition.progress``: a bar on a terminal, plain lines in a log).
        overwrite: replace ``out_dir/public`` and ``out_dir/private`` when they already hold files
            (FileExistsError otherwise). Nothing else in ``out_dir`` is touched. The new competition is
            built in a hidden folder beside ``out_dir`` and moved in only when complete.
        workers: processes that make graphs at the same time (1: this process). Every graph draws
            from its own streams, so the files are the same bytes whatever the number.

    Graphs are written one at a time as they are made; nothing holds a collection in memory (the test
    labels are kept as the text of their solution rows until ``solution.csv`` is written).
    """
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; expected one of {', '.join(SCALES)}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if isinstance(workers, bool) or not isinstance(workers, int | np.integer) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    seed = int(seed)
    spec = SCALES[scale]
    out_dir = Path(out_dir)
    _check_out_dir(out_dir, overwrite)
    started = time.perf_counter()
    summary = SynthSummary(out_dir=out_dir, scale=scale, seed=seed,
                           graphs={c.name: dict.fromkeys(SPLITS, 0) for c in COLLECTIONS},
                           configs={c.name: 0 for c in COLLECTIONS})
    total = sum(spec.tile_graphs) + sum(sum(spec.collection_graphs(c.name)) for c in COLLECTIONS
                                        if c.name != "tile:xla")
    from competition.progress import progress as progress_bar

    # Written beside out_dir and swapped in when complete: an interrupted run leaves no partial tree
    # (and, with overwrite, the previous competition stays whole until the new one is ready).
    staging = staging_dir(out_dir)
    try:
        with progress_bar(total=total, desc=f"synth {scale}", unit="graph", enabled=progress) as bar:
            collector = _Collector(summary, bar)
            jobs = _jobs(spec, seed, staging / "public" / "npz_all" / "npz")
            if workers == 1:
                for job in jobs:
                    for written in _run_job(job):
                        collector.add(written)
            else:
                import multiprocessing

                # spawn: a worker imports only the generator, whatever the calling process holds.
                with multiprocessing.get_context("spawn").Pool(int(workers)) as pool:
                    for written_list in pool.imap_unordered(_run_job, jobs):
                        for written in written_list:
                            collector.add(written)
            collector.csv_files(staging, seed)
        out_dir.mkdir(parents=True, exist_ok=True)
        for part in ("public", "private"):
            replace_dir(staging / part, out_dir / part)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    summary.seconds = time.perf_counter() - started
    return summary
