"""Real data decides: how the kit's methods rank real TpuGraphs graphs (``make bench-real``).

The embedded competition is synthetic; this benchmark measures every method on real graphs, with three
protocols:

- **transfer**: the method is trained on the embedded ``small`` competition (one model per competition
  seed and method seed, on the collection the real graph belongs to) and ranks every labelled real
  graph, which it has never seen;
- **within-graph**: each real graph's configs are split train / valid / test (several draws, seeded);
  the method is trained on the train part only (valid for its model selection) and ranks the test part.
  One draw at a time: its train and valid parts are written, every method fitted on them, and removed
  before the next draw (the test part stays in memory), so a 100,000-config graph costs one draw's
  disk whatever ``--draws``. A default-search graph whose program's random search is also at hand (the
  same file name in the source's random-search folders) gets that random search whole beside its train
  part, as a program's two searches sit in the same split of the release (the methods train on their
  own collection only, so none of them reads it).
- **across programs**: the method is trained on the labelled real graphs of *other programs* and ranks
  every config of the held-out program's graphs, as a competitor's model trained on the real training
  split ranks programs it has not seen. Programs are told apart by their graph (opcodes and edges), so
  the shipped proto counts as the `unet_3d.4x4.bf16` it was measured on; they are dealt into ``--folds``
  folds, and each fold's graphs are ranked by models trained on the rest. The training graphs are those
  of the held-out graph's collection, or, when no other program has one, those of the other search of
  the same source (the run says so). With ``ACROSS_MIN_PROGRAMS`` training programs or more, a fifth of
  them (at least one; the draw picks which) is the valid split, whole, as a competitor's model selection
  meets programs it has not trained on; with fewer, each training graph's configs are split 80 / 20 into
  train and valid instead. Training files are linked, not copied: a graph of more than
  ``ACROSS_MAX_CONFIGS`` configs is read through a seeded sample of that many, written once per draw
  (compressed) and shared by every fold, so that a full release is not copied whole. It answers what
  real training data of other programs teaches, against what the embedded competition teaches
  (transfer). Layout graphs only: the tile kernels at hand are too few to hold programs out.

Real graphs: every labelled npz of a Kaggle-layout tree (default ``../shared/realdata/kaggle``, which is
not redistributed: the run says so and goes on without it) plus the two real protos the kit ships
(``competition.data.realdata``), featurized on the fly. A graph whose configs all carry the same
settings, or whose runtimes are all equal, has nothing to rank: it is listed with the reason and left
out of the tables.

Scores are the official per-graph metric (Kendall tau-b for layout graphs; for tile kernels the tile
score, averaged over kernels). Each cell gives the mean over runs and a 95 % bootstrap interval:
for a layout graph the ranked configs are resampled (and the run drawn at random each time); for
tile kernels the kernels are resampled (``competition.stats.intervals``, as ``tpugraphs report``
does over graphs). A layout graph with configs measured more than once also has a measurement noise
(``competition.stats.noise``: how far repeated measurements of one config stay apart), printed with the
share of its pairs of configs that differ by more; its cells are also scored on those pairs alone (a
second table per protocol, ``beyond_noise`` in the JSON, and a second table per ``--compare``), since
on a default search most pairs differ by less and the official tau is mostly decided there.

Results go to ``--out`` (JSON) and Markdown tables on stdout (BENCHMARKS.md, "Real data"): per protocol one
row per graph, then, for the layout collections with two graphs or more, the mean over their graphs with an
interval from resampling the graphs (as ``tpugraphs report`` does): on a full release, the rows to read.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import overload

import numpy as np

from benchmarks.real_tables import DRAWS, PROTOCOLS, few_graphs_note, mean_and_interval
from competition.collections import COLLECTION_BY_NAME, COLLECTIONS, SPLITS, Collection
from competition.data.graphs import Graph, load_graph, read_config_count, read_config_runtime, save_graph
from competition.data.locate import embedded_competition
from competition.data.protos.featurize import featurize_file
from competition.data.realdata import LAYOUT_PROTO, TILE_PROTO
from competition.data.tree import split_dir
from competition.stats import intervals, layout_taus, tau_interval
from competition.stats.noise import (
    RepeatNoise,
    beyond_noise_interval,
    pairs_beyond_noise,
    taus_beyond_noise,
)
from solutions.features.dedup import repeat_noise_of
from solutions.methods.registry import get_method
from solutions.solve.checks import SolveError, parse_method_params

DEFAULT_KAGGLE_TREE = Path(__file__).resolve().parents[1].parent / "shared" / "realdata" / "kaggle"
METHODS = ("random", "heuristic", "gbdt", "gnn")
# The gnn's defaults before issue 14 (early fusion, no cross-config attention, hinge loss, no
# engineered config features): the within-graph check holds the current defaults to them.
VARIANTS: dict[str, tuple[str, dict[str, object]]] = {
    # The defaults before issue 14, as they trained then: one step per graph and epoch, own search only.
    "gnn-former": ("gnn", {"fusion": "early", "config_attention": False, "engineered_features": False,
                           "layout_min_epoch_steps": 1, "average_epochs": 0.0}),
    # Selection on the live weights, not their moving average (layout:xla:random starts from
    # average_epochs=20: COLLECTION_DEFAULTS, solutions/methods/gnn/settings.py; docs/gnn.md, "Per-collection
    # defaults").
    "gnn-live-weights": ("gnn", {"average_epochs": 0.0}),
    # Before an epoch took at least 8 steps (issue 25): one step per training graph.
    "gnn-one-pass": ("gnn", {"layout_min_epoch_steps": 1}),
    # The gnn without the graph-relative engineered config features (the default before issue 25).
    "gnn-no-engineered": ("gnn", {"engineered_features": False}),
    # Does pruning earn its place on real graphs? The gnn with every node kept.
    "gnn-unpruned": ("gnn", {"pruning": "none"}),
}
BEYOND_NOISE_CAPTION = (
    "\n(The same runs, Kendall's tau over only the pairs of configs whose runtimes differ by more than the "
    "graph's own configs measured twice do: the 95th percentile of their relative differences (the noise "
    "column, with the share of all the graph's pairs beyond it). Not the "
    "official metric, which counts every pair; where few pairs lie beyond the noise, the official tau and "
    "the differences between methods are mostly decided by noise. competition/stats/noise.py; "
    "docs/statistics.md.)")
SPLIT = (0.6, 0.2, 0.2)  # within-graph: train / valid / test shares of a graph's configs
MIN_WITHIN_CONFIGS = 50  # fewer configs give a test part too small to rank
ACROSS_VALID_SHARE = 0.2  # across programs: share of the training programs (or configs) in the valid split
ACROSS_MAX_CONFIGS = 5000  # across programs: configs kept per training graph (gbdt reads 1,000)
ACROSS_MIN_PROGRAMS = 3  # across programs: fewer training programs, and configs are split instead of programs


def random_search_of(collection: Collection) -> Collection:
    """The random-search layout collection of ``collection``'s source (``layout:xla:default`` ->
    ``layout:xla:random``)."""
    return COLLECTION_BY_NAME[f"{collection.task_name}:{collection.source}:random"]


class GraphFiles(Sequence[Graph]):
    """Graphs read from their files at each use, so that a run over a whole release holds one layout
    graph at a time: the full release's labelled layout graphs do not fit in memory together."""

    def __init__(self, paths: Sequence[Path], kind: str) -> None:
        self.paths = [Path(p) for p in paths]
        self.kind = kind

    def __len__(self) -> int:
        return len(self.paths)

    @overload
    def __getitem__(self, k: int) -> Graph: ...

    @overload
    def __getitem__(self, k: slice) -> GraphFiles: ...

    def __getitem__(self, k: int | slice) -> Graph | GraphFiles:
        if isinstance(k, slice):
            return GraphFiles(self.paths[k], self.kind)
        return load_graph(self.paths[k], self.kind)


def _link(target: Path, link: Path) -> None:
    """``link`` made to read ``target``'s file (a symbolic link; a copy where the file system has none)."""
    link.parent.mkdir(parents=True, exist_ok=True)
    try:
        link.symlink_to(target.resolve())
    except OSError:  # a file system without symbolic links: copy instead
        shutil.copyfile(target, link)


def _config_count(graph: Graph | Path) -> int:
    return read_config_count(graph) if isinstance(graph, Path) else graph.num_configs


@dataclass
class RealGraph:
    """One labelled real graph, or a group of real tile kernels scored together."""

    name: str
    collection: Collection
    graphs: Sequence[Graph]  # one layout graph (GraphFiles: read when used), or one source's tile kernels
    source: str
    no_signal: str | None = None  # why the graph cannot be ranked, if it cannot
    # A default-search layout graph: the random search of the same program (its file), when it is at hand.
    random_search: Graph | Path | None = None
    # A layout graph's measurement noise, from its configs measured more than once (None: too few), and
    # the share of its pairs of configs whose runtimes differ by more.
    noise: RepeatNoise | None = None
    beyond_share: float = float("nan")

    def measure_noise(self, graph: Graph) -> None:
        """Read ``noise`` and ``beyond_share`` off the layout graph (its runtimes and repeated configs)."""
        self.noise = repeat_noise_of(graph.configs, graph.config_runtime)
        if self.noise is not None:
            self.beyond_share = pairs_beyond_noise(graph.config_runtime.astype(np.float64), self.noise.level)

    @property
    def file(self) -> Path | None:
        """The layout graph's npz, when it is read from one (None: held in memory, as a featurized proto)."""
        return self.graphs.paths[0] if isinstance(self.graphs, GraphFiles) else None

    @cached_property
    def program(self) -> str:
        """Its program (``program_key``), worked out once: a layout graph is read from its file for it."""
        return program_key(self.graphs[0])

    @property
    def num_configs(self) -> int:
        if isinstance(self.graphs, GraphFiles):
            return sum(read_config_count(p) for p in self.graphs.paths)
        return sum(g.num_configs for g in self.graphs)


def _signal(graph: Graph) -> str | None:
    """Why ``graph`` has nothing to rank (None when it has)."""
    runtime = graph.config_runtime
    if graph.num_configs < 2:
        return "fewer than 2 configs"
    if np.all(runtime == runtime[0]):
        return "all runtimes equal"
    configs = graph.configs.reshape(graph.num_configs, -1)
    if np.all(configs == configs[0]):
        spread = float(runtime.max() / runtime.min() - 1) * 100
        return f"every config has the same settings (runtimes differ by {spread:.3f} %: measurement noise)"
    return None


def _always_best(graph: Graph) -> bool:
    """Whether any row of the task lists the best config of ``graph`` (a tile kernel of k configs or
    fewer)."""
    return graph.num_configs < graph.task.informative_configs


def find_real_graphs(kaggle_tree: Path | None, *, protos: bool = True) -> tuple[list[RealGraph], list[str]]:
    """The labelled real graphs to rank, and notes on what was not found."""
    found: list[RealGraph] = []
    notes: list[str] = []
    if kaggle_tree is not None and kaggle_tree.is_dir():
        kernels: list[Graph] = []
        always_best: list[str] = []  # tile kernels too small to rank: "name (k configs)"
        for collection in COLLECTIONS:
            for split in SPLITS:
                for path in sorted(split_dir(kaggle_tree, collection, split).glob("*.npz")):
                    if not np.any(read_config_runtime(path) > 0):
                        continue  # a test graph: runtimes are hidden
                    graph = load_graph(path, collection.task.name)
                    if collection.task.name == "layout":  # read again when used: one in memory at a time
                        found.append(RealGraph(f"{collection.name}:{split}/{path.stem}", collection,
                                               GraphFiles([path], "layout"), "kaggle", _signal(graph)))
                        found[-1].program = program_key(graph)  # while it is read
                        found[-1].measure_noise(graph)
                        del graph
                    elif _always_best(graph):
                        always_best.append(f"{path.stem} ({graph.num_configs} configs)")
                    else:
                        kernels.append(graph)
        if always_best:  # one note, not one per kernel: a full release has hundreds
            more = len(always_best) - 3
            shown = ", ".join(always_best[:3]) + (f" and {more} more" if more > 0 else "")
            notes.append(f"left out: {len(always_best)} tile kernel(s) with too few configs to rank, so any "
                         f"row holds the best (score 1 whatever the method): {shown}")
        if kernels:
            found.append(RealGraph(f"tile:xla:kaggle ({len(kernels)} kernels)",
                                   COLLECTION_BY_NAME["tile:xla"], kernels, "kaggle"))
        _pair_searches(found)
    elif kaggle_tree is not None:
        notes.append(f"no real Kaggle tree at {kaggle_tree} (it is not redistributed); "
                     "only the shipped protos")
    if protos:
        [(stem, layout)] = featurize_file(LAYOUT_PROTO)
        # The proto's runs come from a search around the compiled default: a default-search graph.
        found.append(RealGraph(f"layout:xla:default:proto/{stem}", COLLECTION_BY_NAME["layout:xla:default"],
                               [layout], "proto", _signal(layout)))
        found[-1].measure_noise(layout)
        kernels = [g for _, g in featurize_file(TILE_PROTO) if not _always_best(g)]
        found.append(RealGraph(f"tile:xla:proto ({len(kernels)} kernels)", COLLECTION_BY_NAME["tile:xla"],
                               kernels, "proto"))
    return found, notes


def _pair_searches(found: list[RealGraph]) -> None:
    """Give each default-search graph the random search of its program (same source, same file name)."""
    def program(g: RealGraph) -> tuple[str, str]:  # (collection, file stem): names end in "/<stem>"
        return g.collection.name, g.name.rsplit("/", 1)[1]

    layouts = [g for g in found if g.collection.task_name == "layout"]  # tile groups name no file
    by_program = {program(g): g for g in layouts}
    for g in layouts:
        if g.collection.search == "default":
            sibling = by_program.get((random_search_of(g.collection).name, program(g)[1]))
            if sibling is not None:
                g.random_search = sibling.file or sibling.graphs[0]


# -- scoring ---------------------------------------------------------------------------------------


def graph_scores(predictions: Sequence[np.ndarray], graphs: Sequence[Graph | Truth]) -> np.ndarray:
    """The official score of each graph, from the row its predictions make (as a submission would)."""
    return np.asarray([graph.task.score_graph(graph.task.row_from_predictions(predicted),
                                              graph.config_runtime.astype(np.float64), graph.normalizers)
                       for predicted, graph in zip(predictions, graphs, strict=True)])


# -- the protocols ----------------------------------------------------------------------------------


@dataclass
class Cell:
    """One (graph, method, protocol): the score of every run and its interval."""

    graph: str
    method: str
    protocol: str
    runs: list[float] = field(default_factory=list)
    # What each run shares with the other runs of its unit (the competition it trained on, the draw that
    # split the configs): paired comparisons resample units, then runs (benchmarks/compare_real.py).
    units: list[str] = field(default_factory=list)
    fit_seconds: float = 0.0  # training time over all runs (wall; the machine's load moves it)
    estimate: float = float("nan")
    low: float = float("nan")
    high: float = float("nan")
    # A layout graph whose measurement noise is known: the same runs scored on the pairs of configs whose
    # runtimes differ by more than it ({"runs", "estimate", "low", "high"}; competition.stats.noise).
    beyond_noise: dict | None = None

    def to_json(self) -> dict:
        found = {"graph": self.graph, "method": self.method, "protocol": self.protocol, "runs": self.runs,
                 "units": self.units, "fit_seconds": round(self.fit_seconds, 1), "estimate": self.estimate,
                 "low": self.low, "high": self.high}
        if self.beyond_noise is not None:
            found["beyond_noise"] = self.beyond_noise
        return found


def _make(method: str, params: dict[str, object], collection: Collection):
    """The method for ``collection`` with its settings resolved as ``tpugraphs solve`` resolves them (the
    collection's defaults, then ``params``)."""
    return get_method(method).build(collection, params)


def fit_method(method: str, params: dict[str, object], data_dir: Path, collection: Collection, seed: int,
         time_budget_s: float | None):
    from solutions.methods.base import FitOptions, SplitSource

    model = _make(method, params, collection)
    options = FitOptions(seed=seed, progress=False, time_budget_s=time_budget_s)
    model.fit(collection, SplitSource(data_dir, collection, "train"),
              SplitSource(data_dir, collection, "valid"), options)
    return model


def summarise_cell(cell: Cell, real: RealGraph, predictions: list[list[np.ndarray]],
               truths: list[list[Graph | Truth]], seed: int) -> Cell:
    """Fill ``cell`` from the predictions of every run (each a list, one entry per graph of ``real``)."""
    if real.collection.task.name == "layout":
        preds = [p[0] for p in predictions]
        runtimes = [t[0].config_runtime.astype(np.float64) for t in truths]
        taus = layout_taus(preds, runtimes)
        cell.runs = [round(float(t), 4) for t in taus]
        ci = tau_interval(preds, runtimes, draws=DRAWS, seed=seed)
        if real.noise is not None:
            level = real.noise.level
            beyond = beyond_noise_interval(preds, runtimes, level, draws=DRAWS, seed=seed)
            beyond_runs = taus_beyond_noise(preds, runtimes, level, seed=seed)  # the runs the interval read
            cell.beyond_noise = {"runs": [round(float(t), 4) for t in beyond_runs],
                                 "estimate": beyond.estimate, "low": beyond.low, "high": beyond.high}
    else:
        per_run = [graph_scores(p, t) for p, t in zip(predictions, truths, strict=True)]
        cell.runs = [round(float(s.mean()), 4) for s in per_run]
        # Kernels resampled (each kernel's score averaged over runs), as `tpugraphs report` over graphs.
        pooled = np.mean(np.stack(per_run), axis=0)
        ci, _ = intervals({real.collection.name: pooled}, draws=DRAWS, seed=seed)
    cell.estimate, cell.low, cell.high = ci.estimate, ci.low, ci.high
    return cell


def run_transfer(real_graphs: list[RealGraph], methods: Sequence[str], synth_dirs: dict[int, Path],
                 seeds: Sequence[int], *, time_budget_s: float | None, say=print) -> list[Cell]:
    """Train on each embedded competition (``synth_dirs``: competition seed -> public dir) and rank the
    real graphs."""
    cells: list[Cell] = []
    wanted = sorted({g.collection.name for g in real_graphs}, key=list(COLLECTION_BY_NAME).index)
    for method in methods:
        base, params = VARIANTS.get(method, (method, {}))
        predictions: dict[str, list[list[np.ndarray]]] = {g.name: [] for g in real_graphs}
        fit_seconds = dict.fromkeys(wanted, 0.0)  # a collection's models rank each of its real graphs
        for synth_seed, public in synth_dirs.items():
            for seed in seeds:
                for name in wanted:
                    collection = COLLECTION_BY_NAME[name]
                    started = time.perf_counter()
                    model = fit_method(base, params, public, collection, seed, time_budget_s)
                    fit_seconds[name] += time.perf_counter() - started
                    for real in real_graphs:
                        if real.collection.name == name:
                            predictions[real.name].append(
                                [np.asarray(model.predict(collection, g), dtype=np.float64)
                                 for g in real.graphs])
                    say(f"  transfer {method:<10} small seed {synth_seed} method seed {seed} {name:<20} "
                        f"{time.perf_counter() - started:6.1f} s")
        units = [f"competition {synth_seed}" for synth_seed in synth_dirs for _ in seeds]
        for real in real_graphs:
            cell = Cell(real.name, method, "transfer", units=units,
                        fit_seconds=fit_seconds[real.collection.name])
            runs = predictions[real.name]
            truth = list(real.graphs)  # read once for every run
            cells.append(summarise_cell(cell, real, runs, [truth] * len(runs), seed=0))
    return cells


def split_configs(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Disjoint train / valid / test config indices (shares ``SPLIT``), each sorted."""
    order = rng.permutation(n)
    a = int(round(SPLIT[0] * n))
    b = a + int(round(SPLIT[1] * n))
    return np.sort(order[:a]), np.sort(order[a:b]), np.sort(order[b:])


def within_tree(real: RealGraph, draw: int, root: Path) -> tuple[Path, list[Graph]] | None:
    """A Kaggle-layout tree holding ``real``'s configs split train / valid (written uncompressed), and
    the test parts, in memory: the methods fit on the tree and never read a test split.

    Tile kernels with fewer than 10 configs go whole into the training part; None when nothing is
    left to test.
    """
    rng = np.random.default_rng([draw, len(real.name)])
    tests: list[Graph] = []
    for k, graph in enumerate(real.graphs):
        if real.collection.task.name == "tile" and graph.num_configs < 10:
            save_graph(graph, split_dir(root, real.collection, "train") / f"k{k}.npz", compressed=False)
            continue
        train, valid, test = split_configs(graph.num_configs, rng)
        for split, configs in (("train", train), ("valid", valid)):
            save_graph(graph.select_configs(configs), split_dir(root, real.collection, split) / f"k{k}.npz",
                       compressed=False)
        tests.append(graph.select_configs(test))
    if not tests:
        return None
    split_dir(root, real.collection, "valid").mkdir(parents=True, exist_ok=True)
    if real.random_search is not None:  # its program's random search, whole, in the training split
        target = split_dir(root, random_search_of(real.collection), "train") / "k0.npz"
        if isinstance(real.random_search, Path):
            _link(real.random_search, target)
        else:
            save_graph(real.random_search, target, compressed=False)
    return root, tests


@dataclass(frozen=True)
class Truth:
    """What scoring reads of a test part (its runtimes, a tile kernel's normalisers) without its features,
    kept for the intervals once the draw's graphs are gone."""

    task: object
    config_runtime: np.ndarray
    normalizers: np.ndarray | None

    @classmethod
    def of(cls, graph: Graph) -> Truth:
        return cls(graph.task, graph.config_runtime, graph.normalizers)


def run_within(real_graphs: list[RealGraph], methods: Sequence[str], seeds: Sequence[int], draws: int, *,
               time_budget_s: float | None, say=print) -> list[Cell]:
    """Within each real graph: train on part of its configs, rank the rest.

    One draw at a time: its tree is written, every method fitted on it for every seed, and the tree
    removed before the next draw, so a graph of 100,000 configs holds one draw's train and valid parts
    on disk (80 % of its uncompressed size) and one test part in memory, whatever ``draws``."""
    cells: list[Cell] = []
    for real in real_graphs:
        if real.collection.task.name == "layout" and real.num_configs < MIN_WITHIN_CONFIGS:
            say(f"  within {real.name}: skipped, {real.num_configs} configs (< {MIN_WITHIN_CONFIGS})")
            continue
        if real.random_search is not None:
            say(f"  within {real.name}: its program's random search "
                f"({_config_count(real.random_search)} configs) is in the training split too")
        # Per method, every run's predictions (draws x seeds, in that order) and the truths they rank.
        predictions: dict[str, list[list[np.ndarray]]] = {m: [] for m in methods}
        truths: list[list[Truth]] = []
        units: list[str] = []
        fit_seconds = dict.fromkeys(methods, 0.0)
        wall = dict.fromkeys(methods, 0.0)  # fits and predictions
        for draw in range(draws):
            work = Path(tempfile.mkdtemp(prefix="bench-real-"))
            try:
                made = within_tree(real, draw, work)
                if made is None:
                    break  # the split is by size only: no draw has a kernel to test
                root, tests = made
                for method in methods:
                    base, params = VARIANTS.get(method, (method, {}))
                    began = time.perf_counter()
                    for seed in seeds:
                        fit_started = time.perf_counter()
                        model = fit_method(base, params, root, real.collection, seed, time_budget_s)
                        fit_seconds[method] += time.perf_counter() - fit_started
                        predictions[method].append([np.asarray(model.predict(real.collection, g),
                                                               dtype=np.float64) for g in tests])
                    wall[method] += time.perf_counter() - began
                truths += [[Truth.of(g) for g in tests]] * len(seeds)
                units += [f"draw {draw}"] * len(seeds)
                del tests, made  # free this draw's test graphs before the next draw's are selected
            finally:
                shutil.rmtree(work, ignore_errors=True)
        if not truths:
            say(f"  within {real.name}: skipped, no kernel with 10+ configs")
            continue
        for method in methods:
            cell = Cell(real.name, method, "within", units=units, fit_seconds=fit_seconds[method])
            cells.append(summarise_cell(cell, real, predictions[method], truths, seed=0))
            say(f"  within {method:<10} {real.name:<52} {wall[method]:6.1f} s")
    return cells


def program_key(graph: Graph) -> str:
    """What identifies a program: its graph's opcodes and edges (a program's two searches, and a proto
    measured on the same program, share them; their config and runtime arrays differ)."""
    digest = hashlib.sha1(np.ascontiguousarray(graph.node_opcode).tobytes())
    digest.update(np.ascontiguousarray(graph.edge_index).tobytes())
    return digest.hexdigest()[:12]


def program_folds(real_graphs: Sequence[RealGraph], folds: int) -> list[list[RealGraph]]:
    """The labelled real layout graphs dealt into at most ``folds`` folds, a program's graphs together
    (programs in order of first appearance, dealt in turn); empty folds are dropped."""
    programs: dict[str, list[RealGraph]] = {}
    for real in real_graphs:
        if real.collection.task.name == "layout":
            programs.setdefault(real.program, []).append(real)
    dealt: list[list[RealGraph]] = [[] for _ in range(max(1, folds))]
    for k, graphs in enumerate(programs.values()):
        dealt[k % len(dealt)].extend(graphs)
    return [fold for fold in dealt if fold]


class AcrossPool:
    """The file each training graph is read from in one draw of the across-programs protocol.

    A graph of at most ``ACROSS_MAX_CONFIGS`` configs is read from its own file (linked into the training
    trees, never copied); a larger one through a seeded sample of that many configs, written once
    (compressed, as the release is) and linked into every fold's tree; a graph held in memory (a
    featurized proto) is written once whole. So the disk a draw needs is at most the compressed size of
    the graphs it samples, whatever the number of folds.
    """

    def __init__(self, root: Path, draw: int) -> None:
        self.root = root
        self.draw = draw
        self.files: dict[str, Path] = {}
        self.copies = 0  # files written
        self.written = 0  # their bytes

    def path(self, real: RealGraph) -> Path:
        if real.name not in self.files:
            self.files[real.name] = self._make(real)
        return self.files[real.name]

    def _make(self, real: RealGraph) -> Path:
        if real.file is not None and real.num_configs <= ACROSS_MAX_CONFIGS:
            return real.file.resolve()
        graph = real.graphs[0]
        if graph.num_configs > ACROSS_MAX_CONFIGS:
            rng = np.random.default_rng([self.draw, zlib.crc32(real.name.encode()), graph.num_configs])
            graph = graph.select_configs(np.sort(rng.permutation(graph.num_configs)[:ACROSS_MAX_CONFIGS]))
        path = self.root / f"g{len(self.files)}.npz"
        save_graph(graph, path, compressed=True)
        self.copies += 1
        self.written += path.stat().st_size
        return path


def across_tree(collection: Collection, training: Sequence[RealGraph], draw: int, root: Path,
                pool: AcrossPool) -> Path:
    """A Kaggle-layout tree whose ``collection`` holds the ``training`` graphs in train and valid.

    With ``ACROSS_MIN_PROGRAMS`` programs or more, whole programs are valid (``ACROSS_VALID_SHARE`` of
    them, at least one, drawn by ``draw``), and every file is a link to ``pool``'s. With fewer, each
    graph's configs are split train / valid (``ACROSS_VALID_SHARE``; at most ``ACROSS_MAX_CONFIGS`` per
    graph, a seeded sample), written uncompressed: a few programs are small to copy.
    """
    programs = sorted({real.program for real in training})
    if len(programs) >= ACROSS_MIN_PROGRAMS:
        rng = np.random.default_rng([draw, len(programs)])
        count = max(1, int(round(len(programs) * ACROSS_VALID_SHARE)))
        valid = set(rng.choice(programs, size=count, replace=False).tolist())
        for k, real in enumerate(training):
            split = "valid" if real.program in valid else "train"
            _link(pool.path(real), split_dir(root, collection, split) / f"k{k}.npz")
        return root
    for k, real in enumerate(training):
        graph = real.graphs[0]
        rng = np.random.default_rng([draw, k, graph.num_configs])
        order = rng.permutation(graph.num_configs)[:ACROSS_MAX_CONFIGS]
        cut = int(round(len(order) * (1 - ACROSS_VALID_SHARE)))
        for split, configs in (("train", order[:cut]), ("valid", order[cut:])):
            path = split_dir(root, collection, split) / f"k{k}.npz"
            save_graph(graph.select_configs(np.sort(configs)), path, compressed=False)
    return root


def across_training(held_out: RealGraph, others: Sequence[RealGraph]) -> tuple[list[RealGraph], str]:
    """The graphs a model for ``held_out``'s collection trains on, from the other folds' ``others``, and
    where they come from: the same collection's, else the same source's other search."""
    same = [g for g in others if g.collection.name == held_out.collection.name]
    if same:
        return same, "its collection"
    source = [g for g in others if g.collection.source == held_out.collection.source]
    return source, "the other search of its source"


def _training_summary(training: Sequence[RealGraph], shown: int = 4) -> str:
    """The training graphs of a fold, named when they are few, and how they are split train / valid."""
    programs = len({real.program for real in training})
    names = ", ".join(real.name for real in training[:shown])
    if len(training) > shown:
        names += f" and {len(training) - shown} more ({programs} programs)"
    if programs >= ACROSS_MIN_PROGRAMS:
        return f"{names}; valid: {ACROSS_VALID_SHARE:.0%} of the programs, whole"
    return (f"{names}; valid: {ACROSS_VALID_SHARE:.0%} of each graph's configs "
            f"(fewer than {ACROSS_MIN_PROGRAMS} programs)")


def run_across(real_graphs: list[RealGraph], methods: Sequence[str], seeds: Sequence[int], draws: int,
               folds: int, *, time_budget_s: float | None, say=print) -> list[Cell]:
    """Train on the labelled real graphs of the other programs, rank each held-out program's graphs."""
    dealt = program_folds([g for g in real_graphs if g.no_signal is None], folds)
    if len(dealt) < 2:
        say("  across programs: skipped, the labelled real layout graphs hold fewer than two programs")
        return []
    # (held-out graph, its training graphs), grouped by what trains them: one fit serves every graph of
    # a fold in the same collection.
    plans: dict[tuple[int, str], tuple[list[RealGraph], list[RealGraph]]] = {}
    for f, fold in enumerate(dealt):
        others = [g for k, other in enumerate(dealt) if k != f for g in other]
        for real in fold:
            training, where = across_training(real, others)
            if not training:
                say(f"  across {real.name}: skipped, no other program of its source has a labelled graph")
                continue
            key = (f, real.collection.name)
            if key not in plans:
                say(f"  across {real.collection.name}, fold {f + 1} of {len(dealt)}: trained on {where}: "
                    + _training_summary(training))
                plans[key] = (training, [])
            plans[key][1].append(real)
    # As within a graph: each plan's training trees are written once and every method trains on them.
    learned = {m: get_method(VARIANTS.get(m, (m, {}))[0]).learned for m in methods}
    runs: dict[tuple[str, str], list[list[np.ndarray]]] = {}  # (method, graph) -> one list per fit
    fit_seconds: dict[tuple[str, str], float] = {}
    root = Path(tempfile.mkdtemp(prefix="bench-real-across-"))
    pools = [AcrossPool(root / f"files{draw}", draw) for draw in range(draws)]  # shared by every fold
    try:
        for (f, collection_name), (training, ranked) in plans.items():
            collection = COLLECTION_BY_NAME[collection_name]
            work = root / f"fold{f}-{collection_name.replace(':', '-')}"
            # Random and the heuristic read no training graph: they get no trees.
            trees = ([across_tree(collection, training, draw, work / f"draw{draw}", pools[draw])
                      for draw in range(draws)] if any(learned.values()) else [])
            for method in methods:
                base, params = VARIANTS.get(method, (method, {}))
                started = time.perf_counter()
                for tree in trees if learned[method] else [work] * draws:
                    for seed in seeds:
                        fit_started = time.perf_counter()
                        model = fit_method(base, params, tree, collection, seed, time_budget_s)
                        spent = time.perf_counter() - fit_started
                        for real in ranked:
                            key = (method, real.name)
                            fit_seconds[key] = fit_seconds.get(key, 0.0) + spent
                            runs.setdefault(key, []).append(
                                [np.asarray(model.predict(collection, g), dtype=np.float64)
                                 for g in real.graphs])
                say(f"  across {method:<10} {collection_name}, fold {f + 1}: {len(ranked)} graphs "
                    f"{time.perf_counter() - started:6.1f} s")
            shutil.rmtree(work, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    written = sum(pool.written for pool in pools)
    if written:
        say(f"  across: {sum(pool.copies for pool in pools)} training file(s) written for the draws "
            f"({written / 1e6:,.1f} MB: samples of {ACROSS_MAX_CONFIGS:,} configs of larger graphs, "
            "graphs held in memory); the others were linked")
    cells: list[Cell] = []
    for method in methods:
        for _, ranked in plans.values():
            for real in ranked:
                key = (method, real.name)
                truth = list(real.graphs)  # read once for every run
                units = [f"draw {draw}" for draw in range(draws) for _ in seeds]
                cell = Cell(real.name, method, "across", units=units, fit_seconds=fit_seconds[key])
                cells.append(summarise_cell(cell, real, runs[key], [truth] * len(runs[key]), seed=0))
    return cells


# -- report ------------------------------------------------------------------------------------------


def table(cells: Iterable[Cell], methods: Sequence[str], protocol: str) -> str:
    """A Markdown table: one row per graph, one column per method, ``mean [low, high]``."""
    by_graph: dict[str, dict[str, Cell]] = {}
    for cell in cells:
        if cell.protocol == protocol:
            by_graph.setdefault(cell.graph, {})[cell.method] = cell
    if not by_graph:
        return f"({protocol}: nothing measured)"
    lines = ["| real graph | " + " | ".join(methods) + " |", "|---|" + "---|" * len(methods)]
    for graph, row in by_graph.items():
        entries = []
        for method in methods:
            c = row.get(method)
            entries.append("" if c is None else mean_and_interval(c.estimate, c.low, c.high))
        lines.append(f"| {graph} | " + " | ".join(entries) + " |")
    return "\n".join(lines)


def noise_caption(real: RealGraph) -> str:
    """What a graph's measurement noise is and how many of its pairs of configs lie beyond it."""
    assert real.noise is not None
    return (f"{real.noise.percent()} ({real.noise.pairs:,} pairs of repeated measurements); "
            f"{100 * real.beyond_share:.0f} % of its pairs differ by more")


def noise_table(cells: Iterable[Cell], methods: Sequence[str], protocol: str,
                graphs: dict[str, RealGraph]) -> str | None:
    """``table`` on the pairs of configs whose runtimes differ by more than the graph's measurement noise
    (None when no graph of the protocol has a known noise)."""
    by_graph: dict[str, dict[str, Cell]] = {}
    for cell in cells:
        if cell.protocol == protocol and cell.beyond_noise is not None:
            by_graph.setdefault(cell.graph, {})[cell.method] = cell
    if not by_graph:
        return None
    lines = ["| real graph | noise | " + " | ".join(methods) + " |", "|---|---|" + "---|" * len(methods)]
    for graph, row in by_graph.items():
        real = graphs[graph]
        entries = ["" if (c := row.get(m)) is None else "no pair beyond the noise"
                   if c.beyond_noise["estimate"] != c.beyond_noise["estimate"]  # NaN
                   else mean_and_interval(*(c.beyond_noise[k] for k in ("estimate", "low", "high")))
                   for m in methods]
        shown = f"{real.noise.percent()}, {100 * real.beyond_share:.0f} % of its pairs" if real.noise else ""
        lines.append(f"| {graph} | {shown} | " + " | ".join(entries) + " |")
    return "\n".join(lines)


def collection_summary(cells: Iterable[Cell], protocol: str,
                       collection_of: dict[str, str]) -> dict[str, dict[str, dict]]:
    """Per collection with two graphs or more, per method: the mean of the graphs' taus and its
    interval over the graphs (``competition.stats.intervals``, as ``tpugraphs report``: a t interval):
    what a run over a release's many graphs says about a collection, where each graph's own interval
    says how sure one graph is."""
    taus: dict[str, dict[str, list[float]]] = {}
    for cell in cells:
        if cell.protocol == protocol and cell.graph in collection_of:
            taus.setdefault(collection_of[cell.graph], {}).setdefault(cell.method, []).append(cell.estimate)
    summary: dict[str, dict[str, dict]] = {}
    for collection, by_method in taus.items():
        for method, values in by_method.items():
            if len(values) < 2:
                continue
            ci = intervals({collection: values}, draws=DRAWS, seed=0)[1][collection]
            summary.setdefault(collection, {})[method] = {"graphs": len(values), "estimate": ci.estimate,
                                                          "low": ci.low, "high": ci.high}
    return summary


def collection_table(summary: dict[str, dict[str, dict]], methods: Sequence[str]) -> str:
    """``collection_summary`` as a Markdown table: one row per collection, one column per method."""
    lines = ["| collection (mean over graphs) | graphs | " + " | ".join(methods) + " |",
             "|---|---|" + "---|" * len(methods)]
    graphs = {c: max(entry["graphs"] for entry in by_method.values()) for c, by_method in summary.items()}
    for collection, by_method in summary.items():
        entries = [mean_and_interval(e["estimate"], e["low"], e["high"]) if (e := by_method.get(m)) else ""
                   for m in methods]
        lines.append(f"| {collection} | {graphs[collection]} | " + " | ".join(entries) + " |")
    lines += few_graphs_note(graphs)
    return "\n".join(lines)


def real_data_parser(module: str, doc: str | None) -> argparse.ArgumentParser:
    """The command line of a real-data benchmark ``benchmarks.<module>`` (``bench_real``,
    ``bench_additivity``, ``bench_attribution``): its docstring's first paragraph as the description, and
    the options that say which real graphs and which embedded competitions it reads, with the same names
    and defaults, so all of them reuse one build."""
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks.{module}",
                                     description=(doc or "").split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--real", type=Path, default=DEFAULT_KAGGLE_TREE,
                        help="a Kaggle-layout tree with labelled real graphs "
                             "(default: ../shared/realdata/kaggle)")
    parser.add_argument("--no-protos", action="store_true",
                        help="leave out the two real protos the kit ships")
    parser.add_argument("--scale", default="small", choices=("tiny", "small"),
                        help="embedded competition size (tiny: a smoke run)")
    parser.add_argument("--synth-root", type=Path, default=Path("data/bench-real"),
                        help="where the embedded competitions are built and reused")
    parser.add_argument("--only", default=None, help="only real graphs whose name contains this text")
    return parser


def only_matching(found: list[RealGraph], only: str | None, prog: str) -> list[RealGraph] | None:
    """``found`` restricted to the graphs whose name contains ``only`` (all of them without it); None,
    after a one-line usage error on stderr, when none does."""
    if only is None:
        return found
    kept = [g for g in found if only in g.name]
    if not kept:
        example = f" (names look like {found[0].name})" if found else ""
        print(f"{prog}: --only {only!r}: none of the {len(found)} real graphs found has it in its "
              f"name{example}", file=sys.stderr)
        return None
    return kept


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = real_data_parser("bench_real", __doc__)
    parser.add_argument("--methods", default=",".join(METHODS),
                        help=f"comma-separated: {', '.join(METHODS)}, {', '.join(VARIANTS)} "
                             "(default: the four methods)")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME:METHOD:K=V,K=V",
                        help="an extra method with settings, e.g. gnn-early:gnn:fusion=early (repeatable; "
                             "then name it in --methods)")
    parser.add_argument("--protocols", default="transfer,within,across",
                        help="comma-separated, of transfer, within, across (default: all three)")
    parser.add_argument("--synth-seeds", default="0,1", help="embedded competitions to train on (transfer)")
    parser.add_argument("--seeds", default="0,1,2", help="method seeds")
    parser.add_argument("--draws", type=int, default=3,
                        help="within-graph: config splits per graph; across programs: train / valid splits")
    parser.add_argument("--folds", type=int, default=5,
                        help="across programs: folds the programs are dealt into")
    parser.add_argument("--time-budget", type=float, default=None,
                        help="seconds of training per fit (default: none)")
    parser.add_argument("--compare", action="append", default=[], metavar="BASE:NEW",
                        help="after the tables, NEW - BASE paired run by run, on the official tau and on the "
                             "pairs beyond each graph's measurement noise (repeatable; both in --methods; "
                             "on a saved run: python -m benchmarks.compare_real)")
    parser.add_argument("--out", type=Path, default=Path("data/bench-real/results.json"), help="JSON results")
    return parser.parse_args(argv)


def _checked_arguments(args: argparse.Namespace) -> tuple[list[str], list[str], list[tuple[str, ...]]] | None:
    """(methods, protocols, comparisons) of the command line, the variants registered; None (after saying
    why on stderr) when an argument is refused."""
    methods = [m for m in args.methods.split(",") if m]
    for text in args.variant:
        try:
            name, method, settings = text.split(":", 2)
            texts = dict(pair.split("=", 1) for pair in filter(None, settings.split(",")))
        except ValueError:
            print(f"bench_real: --variant {text!r}: expected NAME:METHOD:KEY=VALUE,...", file=sys.stderr)
            return None
        try:  # each value read by the method's own schema, as `tpugraphs solve --param` reads it
            VARIANTS[name] = (method, parse_method_params(method, texts))
        except SolveError as exc:
            print(f"bench_real: --variant {text!r}: {exc}", file=sys.stderr)
            return None
    unknown = [m for m in methods if m not in METHODS and m not in VARIANTS]
    if unknown:
        print(f"bench_real: unknown method(s) {', '.join(unknown)}", file=sys.stderr)
        return None
    protocols = [p for p in args.protocols.split(",") if p]
    if not protocols or any(p not in PROTOCOLS for p in protocols):
        print(f"bench_real: --protocols {args.protocols!r}: expected a comma-separated list of "
              f"{', '.join(PROTOCOLS)}", file=sys.stderr)
        return None
    comparisons = [tuple(text.split(":")) for text in args.compare]
    for text, pair in zip(args.compare, comparisons, strict=True):
        if len(pair) != 2 or any(m not in methods for m in pair) or pair[0] == pair[1]:
            print(f"bench_real: --compare {text!r}: expected BASE:NEW, two different methods of --methods "
                  f"({', '.join(methods)})", file=sys.stderr)
            return None
    if args.folds < 2:
        print(f"bench_real: --folds {args.folds}: needs 2 or more (each fold is ranked by models trained on "
              "the others)", file=sys.stderr)
        return None
    return methods, protocols, comparisons


def _print_comparisons(cells: list[Cell], comparisons: list[tuple[str, ...]]) -> None:
    """Each BASE:NEW pair run by run: the official tau, then the pairs beyond the noise where a graph has
    one."""
    from benchmarks.compare_real import CompareError, compare_statistic, report

    saved = [c.to_json() for c in cells]
    statistics = ["tau"] + (["beyond-noise"] if any("beyond_noise" in c for c in saved) else [])
    for base, new in comparisons:
        for statistic in statistics:
            try:
                pairs, left_out = compare_statistic(saved, base, new, statistic)
            except CompareError as exc:  # e.g. nothing was measured: the results are written all the same
                print(f"\n--compare {base}:{new}: {exc}")
                break
            print(f"\n{report(pairs, left_out, base, new, statistic=statistic)}")


def _print_tables(cells: list[Cell], methods: list[str], protocols: list[str], summaries: dict,
                  ranked: list) -> None:
    by_name = {g.name: g for g in ranked}
    for protocol in protocols:
        print(f"\n### {protocol}\n")
        print(table(cells, methods, protocol))
        if summaries[protocol]:
            print()
            print(collection_table(summaries[protocol], methods))
        beyond = noise_table(cells, methods, protocol, by_name)
        if beyond is not None:
            print(f"\n#### {protocol}, on the pairs of configs apart by more than the measurement noise\n")
            print(beyond)
            print(BEYOND_NOISE_CAPTION)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    checked = _checked_arguments(args)
    if checked is None:
        return 2
    methods, protocols, comparisons = checked
    seeds = [int(s) for s in args.seeds.split(",") if s]
    found, notes = find_real_graphs(args.real, protos=not args.no_protos)
    real_graphs = only_matching(found, args.only, "bench_real")
    if real_graphs is None:
        return 2
    for note in notes:
        print(f"note: {note}")
    ranked = [g for g in real_graphs if g.no_signal is None]
    for g in real_graphs:
        if g.no_signal:
            print(f"left out: {g.name}: {g.no_signal}")
    print(f"real graphs: {len(ranked)} ({sum(g.num_configs for g in ranked):,} labelled configs)")
    for g in ranked:
        if g.noise is not None:
            print(f"  measurement noise of {g.name}: {noise_caption(g)}")
    started = time.perf_counter()
    cells: list[Cell] = []
    if "transfer" in protocols:
        # Built once under --synth-root (ROOT/<scale>-seed<seed>), rebuilt when the generator changed.
        synth_dirs = {seed: embedded_competition(scale=args.scale, seed=seed, root=args.synth_root) / "public"
                      for seed in (int(x) for x in args.synth_seeds.split(",") if x)}
        cells += run_transfer(ranked, methods, synth_dirs, seeds, time_budget_s=args.time_budget)
    if "within" in protocols:
        cells += run_within(ranked, methods, seeds, args.draws, time_budget_s=args.time_budget)
    if "across" in protocols:
        cells += run_across(ranked, methods, seeds, args.draws, args.folds, time_budget_s=args.time_budget)
    # Layout graphs only: a tile cell is already a mean over one source's kernels.
    collection_of = {g.name: g.collection.name for g in ranked if g.collection.task_name == "layout"}
    summaries = {protocol: collection_summary(cells, protocol, collection_of) for protocol in protocols}
    _print_tables(cells, methods, protocols, summaries, ranked)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "methods": methods, "protocols": protocols, "seeds": seeds, "synth_seeds": args.synth_seeds,
        "scale": args.scale, "draws": args.draws, "folds": args.folds,
        "seconds": round(time.perf_counter() - started, 1),
        "left_out": {g.name: g.no_signal for g in real_graphs if g.no_signal},
        "cells": [c.to_json() for c in cells],
        "collections": summaries,
    }, indent=1) + "\n")
    if comparisons:
        _print_comparisons(cells, comparisons)
    print(f"\nwritten: {args.out} ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
