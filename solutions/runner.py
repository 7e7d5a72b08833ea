"""The reference-solution runner: train, select, predict and write a valid submission.

``solve(data_dir, "gnn", "sub.csv")`` does, for each chosen collection (all five by default):

1. **fit** a fresh method on the train split (the valid split is handed to it for model selection,
   e.g. early stopping) and save it under ``model_dir/<collection>/``; with ``predict_only`` the
   saved model is loaded instead;
2. **validate**: predict every graph of the valid split and score it with the official per-graph
   metric (``competition.metrics``); the collection's validation score is the mean over its graphs,
   exactly what the leaderboard computes for a collection, with a bootstrap confidence interval over
   the valid graphs (``competition.stats.intervals``; overall: the mean of the collections per draw);
3. **predict** the test split into submission rows (``ranking_from_predictions``).

With several ``seeds`` (``tpugraphs solve --seeds 0,1,2``) step 1 fits one model per seed (each saved
in ``model_dir/<collection>/seed-N/``, listed in ``seeds.json`` there), and steps 2-3 blend the
seeds' rankings of each graph with the kit's ensemble (``competition.stats.ensemble.blend_row``,
``rank-mean``): the report gives each seed's validation score and the blend's, and the blend is what
is validated and written. Averaging seeds is what the 1st place measured at +0.022 private
(docs/competition.md, What the winners did).

Then the rows are written (``write_submission``) and checked with the submission validator
against the test files; the report is returned only for a file the validator accepts. A run over
some collections writes a file with only their rows: it is not a full Kaggle submission (the
report says so), and only those rows are validated.

Measurements per collection: fit and predict wall time, and the peak resident memory of the
process while the collection ran (sampled every 20 ms, see ``PeakMemory``; ``tracemalloc`` misses
torch's allocations).

Under ``torchrun`` (``WORLD_SIZE`` > 1 in the environment; the gnn only) every process trains its
shard of the graphs data-parallel (``solutions.gnn.distributed``); rank 0 alone saves the models,
validates, predicts and writes the submission while the others wait, and ``solve`` returns the
report there (None on the other ranks). The report's ``world_size`` says how many processes trained.

User errors (unknown method or collection, a data folder without the splits, a missing saved
model, CUDA asked for but absent) raise ``SolveError`` with a message meant for the person at the
keyboard; ``tpugraphs solve`` prints it and exits 2.
"""

from __future__ import annotations

import json
import math
import os
import resource
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from competition.collections import COLLECTIONS, Collection, get_collection
from competition.data.graphs import Graph, expected_from_data_dir, list_split
from competition.data.locate import resolve_data_dir, split_dir
from competition.predictions import ranking_from_predictions, write_submission
from competition.progress import progress as progress_bar
from competition.stats import intervals
from competition.stats.ensemble import blend_row
from competition.submission import format_problems, validate_submission
from solutions import model_store
from solutions.method import FitOptions, MethodInfo, SavedModelError, SplitSource, get_method

if TYPE_CHECKING:  # torch: imported for real only in torchrun runs
    from solutions.gnn.distributed import World

KAGGLE_ROWS = 894
INTERVAL_DRAWS = 2000  # bootstrap draws behind the validation intervals
INTERVAL_CONFIDENCE = 0.95
SEEDS_FILE = "seeds.json"  # in a collection's model folder when it holds one model per seed
BLEND = "rank-mean"  # how seed ensembles blend (competition.stats.ensemble)


class SolveError(Exception):
    """A problem with how ``solve`` was called or with the data it was pointed at (not a bug)."""


# --------------------------------------------------------------------------------------------------
# Reports


@dataclass
class CollectionReport:
    """What ``solve`` did on one collection."""

    collection: str
    metric: str  # "tile_slowdown" or "kendall_tau"
    validation_score: float  # mean official per-graph score over the valid split
    valid_graphs: int
    test_graphs: int
    fit_seconds: float  # 0.0 with predict_only (the model was loaded)
    validate_seconds: float  # predicting and scoring the valid split
    predict_seconds: float  # predicting the test split
    peak_memory_mb: float  # peak resident memory of the process while this collection ran
    model_path: Path | None  # where the fitted model was saved / loaded from
    details: dict = field(default_factory=dict)  # method-specific facts (``method.summary()`` if it has one)
    # Bootstrap interval of validation_score over the valid graphs (see SolveReport.add_intervals).
    validation_ci_low: float = math.nan
    validation_ci_high: float = math.nan
    valid_graph_scores: list[float] = field(default_factory=list, repr=False)  # per graph, split order
    # Seed ensembles: each seed's own validation score (str(seed) -> score); empty for a single model,
    # whose validation_score is its own. With seeds, validation_score is the blend's.
    seed_validation_scores: dict[str, float] = field(default_factory=dict)


@dataclass
class SolveReport:
    """What ``solve`` did: one ``CollectionReport`` per collection and the submission it wrote."""

    method: str
    submission: Path
    rows: int
    collections: list[CollectionReport]
    options: FitOptions
    predict_only: bool
    model_dir: Path
    seconds: float  # wall time of the whole run
    process_peak_memory_mb: float  # peak resident memory of the process since it started (getrusage)
    validation_ci_low: float = math.nan  # bootstrap interval of validation_score (add_intervals)
    validation_ci_high: float = math.nan
    interval_draws: int = INTERVAL_DRAWS
    interval_confidence: float = INTERVAL_CONFIDENCE
    world_size: int = 1  # training processes (torchrun); 1 without torch.distributed
    seeds: list[int] = field(default_factory=list)  # the seeds blended; [options.seed] for a single model

    def add_intervals(self, *, draws: int = INTERVAL_DRAWS, seed: int = 0,
                      confidence: float = INTERVAL_CONFIDENCE) -> None:
        """Bootstrap intervals over the valid graphs, per collection and for the mean of collections."""
        scored = {c.collection: c.valid_graph_scores for c in self.collections if c.valid_graph_scores}
        if not scored:
            return
        overall, per_collection = intervals(scored, draws=draws, seed=seed, confidence=confidence)
        for c in self.collections:
            if c.collection in per_collection:
                c.validation_ci_low = per_collection[c.collection].low
                c.validation_ci_high = per_collection[c.collection].high
        if len(scored) == len(self.collections):  # an overall interval only when every mean is known
            self.validation_ci_low, self.validation_ci_high = overall.low, overall.high
        self.interval_draws, self.interval_confidence = draws, confidence

    @property
    def complete(self) -> bool:
        """Whether the submission covers all five collections (a full Kaggle submission)."""
        return {c.collection for c in self.collections} == {c.name for c in COLLECTIONS}

    @property
    def validation_score(self) -> float:
        """Unweighted mean of the collection scores (the final score when ``complete``)."""
        return float(np.mean([c.validation_score for c in self.collections])) if self.collections else 0.0

    def format_table(self) -> str:
        """The per-collection table ``tpugraphs solve`` and ``make demo`` print."""
        interval = f"{self.interval_confidence:.0%} interval"
        head = (f"{'collection':<20} {'metric':<14} {'valid':>7} {interval:>18} {'graphs':>6} {'fit s':>7} "
                f"{'predict s':>9} {'peak MB':>8}")
        lines = [head, "-" * len(head)]
        for c in self.collections:
            lines.append(
                f"{c.collection:<20} {c.metric:<14} {c.validation_score:>7.4f} "
                f"{_interval_cell(c.validation_ci_low, c.validation_ci_high):>18} {c.valid_graphs:>6} "
                f"{c.fit_seconds:>7.1f} {c.validate_seconds + c.predict_seconds:>9.1f} {c.peak_memory_mb:>8.0f}"
            )
        label = "final (mean of the five)" if self.complete else f"mean of {len(self.collections)} collection(s)"
        lines.append(f"{label:<35} {self.validation_score:>7.4f} "
                     f"{_interval_cell(self.validation_ci_low, self.validation_ci_high):>18}")
        lines.append(f"{self.method}: {self.rows} rows written to {self.submission} in {self.seconds:.1f} s "
                     f"(validation scores on the valid split; peak memory {self.process_peak_memory_mb:.0f} MB)")
        lines += [f"{c.collection}: seeds " + ", ".join(f"{seed} {score:.4f}" for seed, score in
                                                    c.seed_validation_scores.items())
                  + f"; mean {np.mean(list(c.seed_validation_scores.values())):.4f}; "
                    f"{BLEND} blend {c.validation_score:.4f}"
                  for c in self.collections if c.seed_validation_scores]
        lines += [f"{c.collection}: {c.details['selection']['note']}."
                  for c in self.collections if _selection_is_notable(c.details)]
        if not self.complete:
            lines.append(self.partial_note())
        return "\n".join(lines)

    def partial_note(self) -> str:
        names = ", ".join(c.collection for c in self.collections)
        return (f"note: {self.submission} covers only {names}; it is not a full Kaggle submission "
                f"(that needs the rows of all five collections, {KAGGLE_ROWS} on Kaggle)")

    def to_json_dict(self) -> dict:
        def plain(value):
            if isinstance(value, Path):
                return str(value)
            if isinstance(value, dict):
                return {k: plain(v) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return [plain(v) for v in value]
            return value

        return plain({
            "method": self.method,
            "submission": self.submission,
            "rows": self.rows,
            "complete": self.complete,
            "validation_score": self.validation_score,
            # Bootstrap over the valid graphs (resampled within each collection); null when unknown.
            "validation_ci_low": _finite_or_none(self.validation_ci_low),
            "validation_ci_high": _finite_or_none(self.validation_ci_high),
            "interval_draws": self.interval_draws,
            "interval_confidence": self.interval_confidence,
            "seconds": self.seconds,
            "process_peak_memory_mb": self.process_peak_memory_mb,
            "predict_only": self.predict_only,
            "world_size": self.world_size,
            "model_dir": self.model_dir,
            "options": asdict(self.options),
            "seeds": self.seeds,
            "collections": [{**asdict(c), "validation_ci_low": _finite_or_none(c.validation_ci_low),
                             "validation_ci_high": _finite_or_none(c.validation_ci_high)}
                            for c in self.collections],
        })


def _selection_is_notable(details: dict) -> bool:
    """Whether a method's model selection really fell back to cross-validation (``solutions.selection``;
    ``cv_folds`` > 0: some folds were trained): the table then says so, once, under the scores."""
    selection = details.get("selection") if isinstance(details, dict) else None
    return (isinstance(selection, dict) and "note" in selection and selection.get("mode") == "cross-validation"
            and int(selection.get("cv_folds") or 0) > 0)


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _interval_cell(low: float, high: float) -> str:
    return f"[{low:.4f}, {high:.4f}]" if math.isfinite(low) and math.isfinite(high) else "-"


# --------------------------------------------------------------------------------------------------
# Peak memory


def _rss_reader() -> Callable[[], int] | None:
    """A function giving the current resident set size in bytes, or None where none is available."""
    try:
        import psutil

        process = psutil.Process()
        return lambda: process.memory_info().rss
    except ImportError:
        pass
    statm = Path("/proc/self/statm")
    if statm.is_file():
        page = os.sysconf("SC_PAGE_SIZE")
        return lambda: int(statm.read_text().split()[1]) * page
    return None


def process_peak_mb() -> float:
    """Peak resident memory of this process since it started (``getrusage``; KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


class PeakMemory:
    """Peak resident memory while a block runs: ``with PeakMemory() as mem: ...; mem.peak_mb``.

    A background thread samples the RSS every ``interval`` seconds (psutil, or /proc/self/statm);
    it catches torch's and numpy's allocations, which ``tracemalloc`` does not see. Where no RSS
    reader exists it falls back to the process peak (``getrusage``), which never goes down.
    """

    def __init__(self, interval: float = 0.02) -> None:
        self.interval = interval
        self.peak_bytes = 0
        self._read = _rss_reader()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        self.peak_bytes = max(self.peak_bytes, self._read())

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self) -> PeakMemory:
        if self._read is not None:
            self._sample()
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._sample()

    @property
    def peak_mb(self) -> float:
        return self.peak_bytes / 2**20 if self._read is not None else process_peak_mb()


# --------------------------------------------------------------------------------------------------
# Checks


def collection_slug(collection: Collection) -> str:
    """Folder name of a collection's saved model: ``layout:xla:random`` -> ``layout_xla_random``."""
    return model_store.slug(collection.name)


def resolve_collections(names: Sequence[str] | None) -> tuple[Collection, ...]:
    """The collections called ``names`` (all five when None or empty), in the usual order."""
    if not names:
        return COLLECTIONS
    chosen = set()
    for name in names:
        try:
            chosen.add(get_collection(name))
        except ValueError as exc:
            raise SolveError(str(exc)) from None
    return tuple(c for c in COLLECTIONS if c in chosen)


def describe_params(method: str, *, as_json: bool = False) -> str:
    """The ``--list-params`` text of a method: each setting, its default, what is allowed and its meaning
    (``as_json``: one JSON document, ``{"method", "settings": [{name, default, allowed, meaning}], "note"}``)."""
    from solutions.params import format_params

    info = resolve_method(method)
    table = getattr(info.load_class(), "param_table", None)
    params, note = table() if table is not None else ([], "")
    if as_json:
        return json.dumps({"method": info.name, "settings": [p.to_json() for p in params], "note": note}, indent=2)
    if table is None:
        return f"--method {info.name} has no settings (--param is not used)"
    return format_params(info.name, params, note)


def parse_method_params(method: str, texts: Mapping[str, str]) -> dict[str, object]:
    """``--param`` texts -> typed values, each read by the method's schema (``solutions.settings``):
    ``{"hidden": "64"}`` -> ``{"hidden": 64}``. ``SolveError`` (one line) for a name or value refused."""
    from solutions.settings import SettingError, parse_texts

    info = resolve_method(method)
    if not texts:
        return {}
    settings_class = getattr(info.load_class(), "settings_class", None)
    if settings_class is None:
        raise SolveError(f"--param {', '.join(texts)}: --method {info.name} has no settings")
    try:
        return parse_texts(settings_class, texts, info.name)
    except SettingError as exc:
        raise SolveError(str(exc)) from None


def _check_params(info: MethodInfo, collections: Sequence[Collection], params: Mapping[str, object]) -> None:
    """Build the settings each chosen collection will be fitted with, so that a value or a combination
    the schema refuses stops the run before any data is read or any folder is made."""
    from solutions.settings import SettingError

    if not params:
        return
    settings_for = getattr(info.load_class(), "settings_for", None)
    if settings_for is None:
        raise SolveError(f"--param {', '.join(params)}: --method {info.name} has no settings")
    try:
        for collection in collections:
            settings_for(collection.name, dict(params))
    except SettingError as exc:
        raise SolveError(str(exc)) from None


def resolve_method(name: str) -> MethodInfo:
    try:
        return get_method(name)
    except ValueError as exc:
        raise SolveError(str(exc)) from None


def _check_splits(data_dir: str | Path, collections: Sequence[Collection], splits: Sequence[str]) -> Path:
    """The data directory resolved (the CLI's one rule, ``resolve_data_dir``), with every split needed."""
    try:
        data_dir = resolve_data_dir(data_dir, "--data")
    except FileNotFoundError as exc:
        raise SolveError(str(exc)) from None
    for collection in collections:
        for split in splits:
            try:
                paths = list_split(data_dir, collection, split)
            except FileNotFoundError as exc:
                raise SolveError(str(exc)) from None
            if not paths:
                raise SolveError(f"{split_dir(data_dir, collection, split)}: no {split} graphs (*.npz) in this folder")
    return data_dir


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when torch sees a GPU, else ``cpu``; any other name is checked and kept."""
    if device == "auto":
        try:
            import torch
        except ImportError:
            return "cpu"
        return "cuda" if torch.cuda.is_available() else "cpu"
    _check_device(device)
    return device


def _check_device(device: str) -> None:
    if device == "cpu":
        return
    try:
        import torch
    except ImportError:
        raise SolveError(f"--device {device} needs torch, which is not installed; use --device cpu") from None
    try:
        parsed = torch.device(device)
    except RuntimeError:
        raise SolveError(f"unknown device {device!r}; use cpu, cuda or cuda:N") from None
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise SolveError(f"--device {device}: torch sees no CUDA GPU on this machine; use --device cpu")


def _check_cache_dir(cache_dir: Path | None) -> None:
    """The cache folder must be a folder this process can create and write (checked before any training)."""
    if cache_dir is None:
        return
    if cache_dir.exists() and not cache_dir.is_dir():
        raise SolveError(f"--cache-dir {cache_dir}: exists and is not a folder")
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SolveError(f"--cache-dir {cache_dir}: cannot create it ({exc.strerror})") from None
    if not os.access(cache_dir, os.W_OK | os.X_OK):
        raise SolveError(f"--cache-dir {cache_dir}: not writable by this user; choose another folder")


def _torchrun_world_size() -> int:
    """How many processes torchrun started (its ``WORLD_SIZE``); 1 outside torchrun."""
    text = os.environ.get("WORLD_SIZE", "1")
    try:
        return max(1, int(text))
    except ValueError:
        raise SolveError(f"WORLD_SIZE={text!r} in the environment is not a process count") from None


def _check_world(world_size: int, method: MethodInfo, predict_only: bool) -> None:
    if world_size == 1:
        return
    if method.name != "gnn":
        raise SolveError(f"{world_size} processes (torchrun) train the gnn only; run --method {method.name} "
                         f"as one process (python -m solutions or tpugraphs solve)")
    if predict_only:
        raise SolveError("--predict-only trains nothing: run it as one process, not under torchrun")


def _default_model_dir(out: Path) -> Path:
    return out.with_name(out.stem + ".models") if out.suffix else out.with_name(out.name + ".models")


# --------------------------------------------------------------------------------------------------
# Scoring and prediction


def _checked_predictions(method_name: str, collection: Collection, row_id: str, graph: Graph, predictions) -> np.ndarray:
    """The method's output as a (c,) float array, or an error naming the method and the graph."""
    values = np.asarray(predictions, dtype=np.float64)
    if values.shape != (graph.num_configs,):
        raise RuntimeError(f"method {method_name!r} returned shape {values.shape} for {row_id}; "
                           f"expected ({graph.num_configs},), one score per config")
    if not np.isfinite(values).all():
        raise RuntimeError(f"method {method_name!r} returned non-finite scores for {row_id} "
                           f"(did training diverge?); refusing to write a submission from them")
    return values


def graph_score(collection: Collection, order: np.ndarray, graph: Graph) -> float:
    """The official metric of one labeled graph for a predicted ordering (fastest first)."""
    return collection.task.score_graph(order, graph.config_runtime, graph.normalizers)


def _iter_graphs(data_dir: Path, collection: Collection, split: str, progress: bool, label: str,
                 cache_dir: Path | None):
    source = SplitSource(data_dir, collection, split)
    return progress_bar(source.graphs(cache_dir), total=len(source), desc=label, unit="graph", enabled=progress,
                        leave=False)


def blend_rankings(collection: Collection, rankings: Sequence[np.ndarray], n_configs: int) -> np.ndarray:
    """One graph's rankings by several models blended into one (the kit's ``blend_row``, equal weights);
    a single ranking is returned as it is."""
    if len(rankings) == 1:
        return rankings[0]
    return blend_row(rankings, np.ones(len(rankings)), BLEND, task=collection.task, n_configs=n_configs)


def _ranked_graphs(models: Sequence, method_name: str, data_dir: Path, collection: Collection, split: str, *,
                   progress: bool, cache_dir: Path | None):
    """``(row ID, graph, each model's ranking, the blend)`` per graph of the split, one graph at a time."""
    doing = {"valid": "validating", "test": "predicting"}.get(split, split)  # the same words as before seeds
    for row_id, graph in _iter_graphs(data_dir, collection, split, progress, f"{doing} {collection.name}",
                                      cache_dir):
        rankings = [ranking_from_predictions(collection, _checked_predictions(
            method_name, collection, row_id, graph, model.predict(collection, graph))) for model in models]
        yield row_id, graph, rankings, blend_rankings(collection, rankings, graph.num_configs)


def validation_graph_scores(method, method_name: str, data_dir: Path, collection: Collection, *,
                            progress: bool = False, cache_dir: Path | None = None) -> np.ndarray:
    """Official score of ``method`` on every graph of the valid split of one collection, in split order.

    With ``cache_dir``, layout graphs are read through the processed cache (``SplitSource.graphs``).
    """
    scores = []
    for row_id, graph in _iter_graphs(data_dir, collection, "valid", progress, f"validating {collection.name}",
                                      cache_dir):
        predictions = _checked_predictions(method_name, collection, row_id, graph, method.predict(collection, graph))
        scores.append(graph_score(collection, ranking_from_predictions(collection, predictions), graph))
    return np.asarray(scores, dtype=np.float64)


def validation_score(method, method_name: str, data_dir: Path, collection: Collection, *, progress: bool = False,
                     cache_dir: Path | None = None) -> tuple[float, int]:
    """Mean official score of ``method`` over the valid split of one collection, and the graph count."""
    scores = validation_graph_scores(method, method_name, data_dir, collection, progress=progress,
                                     cache_dir=cache_dir)
    return (float(np.mean(scores)) if scores.size else math.nan), int(scores.size)


def predict_rows(method, method_name: str, data_dir: Path, collection: Collection, *, progress: bool = False,
                 cache_dir: Path | None = None) -> dict[str, np.ndarray]:
    """Submission rows (ID -> config indices, fastest first) for the test split of one collection.

    With ``cache_dir``, layout graphs are read through the processed cache (``SplitSource.graphs``).
    """
    rows = {}
    for row_id, graph in _iter_graphs(data_dir, collection, "test", progress, f"predicting {collection.name}",
                                      cache_dir):
        predictions = _checked_predictions(method_name, collection, row_id, graph, method.predict(collection, graph))
        rows[row_id] = ranking_from_predictions(collection, predictions)
    return rows


# --------------------------------------------------------------------------------------------------
# solve


def _make_method(info: MethodInfo, params: Mapping[str, object]):
    return info.load_class()(**params)  # the settings were checked by _check_params before any work


def _load_method(info: MethodInfo, path: Path, options: FitOptions):
    if not path.is_dir():
        raise SolveError(f"{path}: no saved {info.name} model for this collection; run without --predict-only "
                         f"first (or point --model-dir at the folder a previous run wrote)")
    try:
        method = info.load_class().load(path)
    except FileNotFoundError as exc:
        raise SolveError(f"{exc}; run without --predict-only first") from None
    except SavedModelError as exc:  # the message names the file and says what to do
        raise SolveError(str(exc)) from None
    if hasattr(method, "set_device"):
        method.set_device(options.device)
    return method


def world_barrier() -> None:
    """Wait for every torchrun process (only called in distributed runs)."""
    from solutions.gnn import distributed

    distributed.barrier()


def _check_seeds(seeds: Sequence[int] | None, options: FitOptions, predict_only: bool) -> list[int]:
    if seeds is None or len(seeds) == 0:
        return [int(options.seed)]
    if predict_only:
        raise SolveError("--seeds has no effect with --predict-only (the saved run's seeds are used)")
    chosen = [int(seed) for seed in seeds]
    repeated = sorted({seed for seed in chosen if chosen.count(seed) > 1})
    if repeated:
        raise SolveError(f"--seeds lists seed(s) {', '.join(map(str, repeated))} more than once; "
                         f"the same seed trains the same model")
    return chosen


def _seed_folder(folder: Path, seed: int, count: int) -> Path:
    """Where one seed's model goes: the collection's folder itself for a single model, else seed-N/."""
    return folder if count == 1 else folder / f"seed-{seed}"


def _summary(model) -> dict:
    summary = getattr(model, "summary", None)
    return summary() if callable(summary) else {}


def _load_models(info: MethodInfo, folder: Path, options: FitOptions) -> list[tuple[int, object]]:
    """The saved model of a collection, or every seed's model of a seed ensemble (``seeds.json``)."""
    listing = folder / SEEDS_FILE
    if not listing.exists():
        return [(int(options.seed), _load_method(info, folder, options))]
    try:
        seeds = [int(seed) for seed in json.loads(listing.read_text(encoding="utf-8"))["seeds"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SolveError(f"{listing}: unreadable list of seeds ({exc}); run without --predict-only to retrain") \
            from None
    return [(seed, _load_method(info, _seed_folder(folder, seed, len(seeds)), options)) for seed in seeds]


def solve(
    data_dir: str | Path,
    method: str,
    out: str | Path,
    *,
    collections: Sequence[str] | None = None,
    options: FitOptions | None = None,
    model_dir: str | Path | None = None,
    predict_only: bool = False,
    method_params: Mapping[str, object] | None = None,
    log: Callable[[str], None] | None = None,
    seeds: Sequence[int] | None = None,
) -> SolveReport | None:
    """Train (or load), validate and predict each collection, then write and validate the submission.

    Arguments:
        data_dir: the competition's public folder (Kaggle layout; ``OUT/public`` of ``tpugraphs synth``).
        method: a name from ``solutions.method.METHODS`` (``gnn``, ``gbdt``, ``random``, ...).
        out: the submission CSV to write.
        collections: collection names; None = all five.
        options: seed, device, pruning, compression, progress bars, time budget (``FitOptions``).
        model_dir: where fitted models go, one folder per collection; default next to ``out``
            (``sub.csv`` -> ``sub.models/``).
        predict_only: load the models a previous run saved in ``model_dir`` instead of training.
        method_params: keyword arguments for the method's constructor (e.g. ``{"layout_epochs": 40}``).
        log: called with one line of text per finished step (``print`` in the command line).
        seeds: train one model per seed and blend their rankings (``blend_rankings``); None or one
            seed = a single model with ``options.seed`` (or that seed). Not with ``predict_only``,
            which loads whatever seeds the saved run had.

    Returns:
        a ``SolveReport`` (None on ranks other than 0 of a torchrun run, see the module docstring). Raises ``SolveError`` for user errors, ``DataFormatError`` for an unreadable
        data file, and ``RuntimeError`` if the written file fails validation (a bug in the method).
    """
    started = time.perf_counter()
    options = options or FitOptions()
    params = dict(method_params or {})
    say = log or (lambda line: None)
    info = resolve_method(method)
    chosen = resolve_collections(collections)
    if predict_only and params:
        raise SolveError("--param has no effect with --predict-only (the saved models keep their settings)")
    _check_params(info, chosen, params)
    seeds = _check_seeds(seeds, options, predict_only)
    if len(seeds) == 1:
        options = replace(options, seed=seeds[0])
    out = Path(out)
    model_dir = Path(model_dir) if model_dir is not None else _default_model_dir(out)
    data_dir = _check_splits(data_dir, chosen, ("valid", "test") if predict_only else ("train", "valid", "test"))
    if options.device == "auto":  # only a method that runs on a device pays for importing torch to look
        options = replace(options, device=resolve_device("auto") if info.uses_device else "cpu")
    else:
        _check_device(options.device)
    _check_cache_dir(options.cache_dir)
    world_size = _torchrun_world_size()
    _check_world(world_size, info, predict_only)
    saved_folders: dict[str, Path] = {}
    if predict_only:
        try:  # before any work: every model folder must come whole from a completed run
            saved_folders = model_store.check_saved_run(model_dir, info.name, [c.name for c in chosen])
        except model_store.ModelStoreError as exc:
            raise SolveError(str(exc)) from None
    if out.exists() and out.is_dir():
        raise SolveError(f"{out} is a folder; --out names the submission file to write")
    if world_size == 1:
        return _solve(data_dir, info, chosen, out, options, model_dir, saved_folders, params, say, started, seeds)
    from solutions.gnn import distributed  # torch: only now, and only for the gnn

    world, device = distributed.start(options.device)
    try:
        report = _solve(data_dir, info, chosen, out, replace(options, device=device), model_dir, saved_folders,
                        params, say, started, seeds, world=world)
        distributed.barrier()  # the others leave once rank 0 has written and checked the submission
        return report
    finally:
        distributed.stop()


def _solve(data_dir: Path, info: MethodInfo, chosen: Sequence[Collection], out: Path, options: FitOptions,
           model_dir: Path, saved_folders: dict[str, Path], params: dict, say: Callable[[str], None], started: float,
           seeds: Sequence[int], world: World | None = None) -> SolveReport | None:
    """``solve`` once the arguments are checked; ``world``: this process's ``distributed.World`` or None.

    ``saved_folders`` (with ``--predict-only``) are the checked model folders to load; otherwise the
    run's models are staged by rank 0 and put in place only when the whole run has succeeded.
    """
    main = world is None or world.main
    predict_only = bool(saved_folders)
    run = None
    if not predict_only and main:
        settings = {"options": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(options).items()},
                    "params": params, "seeds": list(seeds)}
        run = model_store.Run.start(model_dir, info.name, settings)
    reports: list[CollectionReport] = []
    rows: dict[str, np.ndarray] = {}
    for collection in chosen:
        path = model_dir / collection_slug(collection)
        with PeakMemory() as memory:
            fit_seconds = 0.0
            if predict_only:
                models = _load_models(info, saved_folders[collection.name], options)
            else:
                models = []
                t0 = time.perf_counter()
                for seed in seeds:
                    fitted = _make_method(info, params)
                    fitted.fit(collection, SplitSource(data_dir, collection, "train"),
                               SplitSource(data_dir, collection, "valid"), replace(options, seed=seed))
                    models.append((seed, fitted))
                fit_seconds = time.perf_counter() - t0
                if run is None:  # rank 0 saves, validates and predicts; wait for it, then train the next one
                    world_barrier()
                    continue
                for seed, fitted in models:  # staged: in place only when the whole run succeeds
                    fitted.save(_seed_folder(run.path_for(collection.name), seed, len(seeds)))
                if len(seeds) > 1:
                    (run.path_for(collection.name) / SEEDS_FILE).write_text(
                        json.dumps({"seeds": list(seeds), "blend": BLEND}) + "\n", encoding="utf-8")
                run.stamp(collection.name)
            t0 = time.perf_counter()
            fitted_models = [model for _, model in models]
            per_seed: list[list[float]] = [[] for _ in models]
            blended: list[float] = []
            for _, graph, rankings, blend in _ranked_graphs(fitted_models, info.name, data_dir, collection, "valid",
                                                            progress=options.progress, cache_dir=options.cache_dir):
                for scores, ranking in zip(per_seed, rankings, strict=True):
                    scores.append(graph_score(collection, ranking, graph))
                blended.append(graph_score(collection, blend, graph))
            valid_scores = np.asarray(blended, dtype=np.float64)
            score = float(np.mean(valid_scores)) if valid_scores.size else math.nan
            valid_graphs = int(valid_scores.size)
            validate_seconds = time.perf_counter() - t0
            t0 = time.perf_counter()
            collection_rows = {row_id: blend for row_id, _, _, blend in _ranked_graphs(
                fitted_models, info.name, data_dir, collection, "test", progress=options.progress,
                cache_dir=options.cache_dir)}
            predict_seconds = time.perf_counter() - t0
        rows.update(collection_rows)
        details = _summary(models[0][1])
        if len(models) > 1:
            details["per_seed"] = {str(seed): _summary(model) for seed, model in models}
        report = CollectionReport(
            collection=collection.name, metric=collection.metric, validation_score=score,
            valid_graphs=valid_graphs, test_graphs=len(collection_rows), fit_seconds=fit_seconds,
            validate_seconds=validate_seconds, predict_seconds=predict_seconds,
            peak_memory_mb=memory.peak_mb, model_path=path, details=details,
            valid_graph_scores=valid_scores.tolist(),
            seed_validation_scores={str(seed): float(np.mean(scores)) if scores else math.nan
                                    for (seed, _), scores in zip(models, per_seed, strict=True)}
            if len(models) > 1 else {},
        )
        reports.append(report)
        say(f"{collection.name}: validation {collection.metric} {score:.4f} over {valid_graphs} graphs "
            f"(fit {fit_seconds:.1f} s, predict {validate_seconds + predict_seconds:.1f} s, "
            f"peak {report.peak_memory_mb:.0f} MB)")
        if world is not None:
            world_barrier()

    if not main:
        return None
    write_submission(out, rows)
    checked = validate_submission(out, expected_from_data_dir(data_dir, chosen))
    if not checked.ok:
        raise RuntimeError(f"the submission written by method {info.name!r} is invalid (a bug in the method):\n"
                           + format_problems(checked, source_name=str(out)))
    if run is not None:
        run.commit(c.name for c in chosen)
    solved = SolveReport(
        method=info.name, submission=out, rows=len(rows), collections=reports, options=options,
        predict_only=predict_only, model_dir=model_dir, seconds=time.perf_counter() - started,
        process_peak_memory_mb=process_peak_mb(), world_size=1 if world is None else world.size,
        seeds=[seed for seed, _ in models] if reports else list(seeds),
    )
    solved.add_intervals()  # a fixed resampling seed: runs differ only by their scores
    return solved


__all__ = [
    "CollectionReport",
    "PeakMemory",
    "SolveError",
    "SolveReport",
    "collection_slug",
    "graph_score",
    "predict_rows",
    "solve",
    "validation_graph_scores",
    "validation_score",
]
