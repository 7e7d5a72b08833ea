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
is validated and written. The 1st place of the competition averaged seeds too (docs/competition.md,
What the winners did).

Then the rows are written (``write_submission``) and checked with the submission validator
against the test files; the report is returned only for a file the validator accepts. A run over
some collections writes a file with only their rows: it is not a full Kaggle submission (the
report says so), and only those rows are validated.

Measurements per collection: fit and predict wall time, and the peak resident memory of the
process while the collection ran (sampled every 20 ms, see ``solutions.solve.memory.PeakMemory``;
``tracemalloc`` misses torch's allocations).

Under ``torchrun`` (``WORLD_SIZE`` > 1 in the environment; the gnn only) every process trains its
shard of the graphs data-parallel (``solutions.compute.distributed``); rank 0 alone saves the models,
validates, predicts and writes the submission while the others wait, and ``solve`` returns the
report there (None on the other ranks). The report's ``world_size`` says how many processes trained.

User errors (unknown method or collection, a data folder without the splits, a missing saved
model, CUDA asked for but absent) raise ``SolveError`` with a message meant for the person at the
keyboard; ``tpugraphs solve`` prints it and exits 2.

The report classes live in ``solve.report``, the memory sampling in ``solve.memory`` and the
checks made before any work in ``solutions.solve.checks``; this module runs the steps.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from competition.collections import Collection
from competition.data.graphs import Graph, expected_from_data_dir
from competition.predictions import ranking_from_predictions, write_submission
from competition.progress import progress as progress_bar
from competition.stats.ensemble import blend_row
from competition.submission import format_problems, validate_submission
from solutions.methods.base import FitOptions, SplitSource
from solutions.methods.registry import MethodInfo
from solutions.solve.checks import (
    SolveError,
    check_cache_dir,
    check_device,
    check_jobs,
    check_params,
    check_splits,
    check_world,
    collection_slug,
    default_model_dir,
    describe_params,
    parse_method_params,
    read_params,
    resolve_collections,
    resolve_device,
    resolve_method,
    torchrun_world_size,
)
from solutions.solve.memory import PeakMemory, process_peak_mb
from solutions.solve.report import BLEND, CollectionReport, SolveReport
from solutions.store import model_store
from solutions.store.saved import SavedModelError

if TYPE_CHECKING:  # torch: imported for real only in torchrun runs
    from solutions.compute.distributed import World
    from solutions.settings.params_file import ParamsFile

SEEDS_FILE = "seeds.json"  # in a collection's model folder when it holds one model per seed


def _checked_predictions(method_name: str, collection: Collection, row_id: str, graph: Graph,
                         predictions) -> np.ndarray:
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
    return progress_bar(source.graphs(cache_dir), total=len(source), desc=label, unit="graph",
                        enabled=progress, leave=False)


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


# --------------------------------------------------------------------------------------------------
# solve




#: What a failed load tells ``solve --predict-only`` to do: train first.
RETRAIN = "run without --predict-only first"


def _load_method(info: MethodInfo, path: Path, device: str, retrain: str):
    if not path.is_dir():
        raise SolveError(f"{path}: no saved {info.name} model for this collection; {retrain} "
                         f"(or point --model-dir at the folder a previous run wrote)")
    try:
        method = info.load_class().load(path)
    except FileNotFoundError as exc:
        raise SolveError(f"{exc}; {retrain}") from None
    except SavedModelError as exc:  # the message names the file and says what to do
        raise SolveError(str(exc)) from None
    except Exception as exc:  # a damaged or foreign file (a key missing, a broken LightGBM or torch file)
        raise SolveError(f"{path}: the saved {info.name} model could not be read ({type(exc).__name__}: "
                         f"{exc}); {retrain}") from None
    if hasattr(method, "set_device"):
        method.set_device(device)
    return method


def world_barrier() -> None:
    """Wait for every torchrun process (only called in distributed runs)."""
    from solutions.compute import distributed

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


def load_models(info: MethodInfo, folder: Path, *, seed: int, device: str,
                retrain: str = RETRAIN) -> list[tuple[int, object]]:
    """The saved model of a collection (as ``(seed, model)``), or every seed's model of a seed ensemble
    (``seeds.json``), on ``device``. The one loader of saved models: ``solve --predict-only`` and
    ``tpugraphs rank`` both use it. Raises ``SolveError`` naming the file, ending with ``retrain`` (what
    to do)."""
    listing = folder / SEEDS_FILE
    if not listing.exists():
        return [(int(seed), _load_method(info, folder, device, retrain))]
    try:
        seeds = [int(s) for s in json.loads(listing.read_text(encoding="utf-8"))["seeds"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SolveError(f"{listing}: unreadable list of seeds ({exc}); {retrain}") from None
    return [(s, _load_method(info, _seed_folder(folder, s, len(seeds)), device, retrain)) for s in seeds]


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
    params_file: str | Path | None = None,
    jobs: int = 1,
) -> SolveReport | None:
    """Train (or load), validate and predict each collection, then write and validate the submission.

    Arguments:
        data_dir: the competition's public folder (Kaggle layout; ``OUT/public`` of ``tpugraphs synth``).
        method: a name from ``solutions.methods.registry.METHODS`` (``gnn``, ``gbdt``, ``random``, ...).
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
        params_file: a PARAMS.json (``tpugraphs tune``'s): each collection starts from its settings there.
        jobs: collections at once, each in a process of its own (``_solve_in_processes``, which says
            how a script calls it); 1: one after the other in this process. The same file either way.

    Returns:
        a ``SolveReport`` (None on ranks other than 0 of a torchrun run, see the module docstring).
        Raises ``SolveError`` for user errors, ``DataFormatError`` for an unreadable data file, and
        ``RuntimeError`` if the written file fails validation (a bug in the method).
    """
    started = time.perf_counter()
    options = options or FitOptions()
    params = dict(method_params or {})
    say = log or (lambda line: None)
    info = resolve_method(method)
    chosen = resolve_collections(collections)
    from_file = _checked_settings(info, chosen, params, params_file, predict_only)
    seeds = _check_seeds(seeds, options, predict_only)
    if len(seeds) == 1:
        options = replace(options, seed=seeds[0])
    out = Path(out)
    model_dir = Path(model_dir) if model_dir is not None else default_model_dir(out)
    data_dir = check_splits(data_dir, chosen,
                            ("valid", "test") if predict_only else ("train", "valid", "test"))
    if options.device == "auto":  # only a method that runs on a device pays for importing torch to look
        options = replace(options, device=resolve_device("auto") if info.uses_device else "cpu")
    else:
        check_device(options.device)
    check_cache_dir(options.cache_dir)
    world_size = torchrun_world_size()
    check_world(world_size, info, predict_only)
    check_jobs(jobs, world_size)
    saved_folders: dict[str, Path] = {}
    if predict_only:
        try:  # before any work: every model folder must come whole from a completed run
            saved_folders = model_store.check_saved_run(model_dir, info.name, [c.name for c in chosen])
        except model_store.ModelStoreError as exc:
            raise SolveError(str(exc)) from None
    if out.exists() and out.is_dir():
        raise SolveError(f"{out} is a folder; --out names the submission file to write")
    plan = _Run(data_dir=data_dir, info=info, chosen=tuple(chosen), out=out, options=options,
                model_dir=model_dir, saved_folders=saved_folders, params=params, say=say, started=started,
                seeds=tuple(seeds), from_file=from_file, jobs=min(jobs, len(chosen)))
    return _solve(plan) if world_size == 1 else _solve_under_torchrun(plan)


def _solve_under_torchrun(plan: _Run) -> SolveReport | None:
    """This process's part of a torchrun run (the module docstring)."""
    from solutions.compute import distributed  # torch: only now, and only for the gnn

    world, device = distributed.start(plan.options.device)
    try:
        report = _solve(replace(plan, options=replace(plan.options, device=device)), world=world)
        distributed.barrier()  # the others leave once rank 0 has written and checked the submission
        return report
    finally:
        distributed.stop()


@dataclass(frozen=True, kw_only=True)
class _Run:
    """A ``solve`` call once its arguments are checked: what ``_solve`` and ``_finish`` work from."""

    data_dir: Path
    info: MethodInfo
    chosen: tuple[Collection, ...]
    out: Path
    options: FitOptions
    model_dir: Path
    saved_folders: dict[str, Path]  # with --predict-only: the checked model folders to load
    params: dict  # --param
    say: Callable[[str], None]
    started: float
    seeds: tuple[int, ...]
    from_file: ParamsFile | None  # --params
    jobs: int = 1  # collections at once, each in a process of its own

    @property
    def predict_only(self) -> bool:
        return bool(self.saved_folders)


def _solve(plan: _Run, world: World | None = None) -> SolveReport | None:
    """``solve`` once the arguments are checked; ``world``: this process's ``distributed.World`` or None.

    With ``--predict-only`` the checked model folders are loaded; otherwise the run's models are staged by
    rank 0 and put in place only when the whole run has succeeded.
    """
    data_dir, info, options, from_file = plan.data_dir, plan.info, plan.options, plan.from_file
    params, say, seeds = plan.params, plan.say, plan.seeds
    main = world is None or world.main
    predict_only = plan.predict_only
    run = None
    if not predict_only and main:
        settings = {"options": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(options).items()},
                    "params": params, "seeds": list(seeds)}
        if from_file is not None:  # where each collection's settings came from
            settings["params_file"] = from_file.origin(c.name for c in plan.chosen)
        run = model_store.Run.start(plan.model_dir, info.name, settings)
    try:  # a failed run leaves no staging folder behind (its models were never put in place)
        if plan.jobs > 1:
            done = _solve_in_processes(plan, run)
        else:
            done = []
            for collection in plan.chosen:
                if from_file is not None and not predict_only:
                    say(_params_line(from_file, collection, params))
                if not main:  # rank 0 saves, validates and predicts; wait for it, then train the next
                    _fit_models(info, collection, data_dir, options,
                                _collection_params(from_file, collection, params), seeds)
                    world_barrier()
                    continue
                done.append(_one_collection(_job(plan, collection, run)))
                say(done[-1].line)
                if world is not None:
                    world_barrier()
        if not main:
            return None
        rows = {row_id: ranking for finished in done for row_id, ranking in finished.rows.items()}
        return _finish(plan, run=run, rows=rows, reports=[finished.report for finished in done], world=world,
                       seeds=done[-1].seeds if done else list(seeds),
                       peak_mb=max([process_peak_mb(), *(finished.process_peak_mb for finished in done)]))
    except BaseException:
        if run is not None:
            run.abandon()
        raise


@dataclass(frozen=True)
class _Job:
    """One collection's work, as a process of its own receives it (names, not objects: a worker resolves
    the method and the collection again)."""

    method: str
    collection: str
    data_dir: Path
    options: FitOptions
    params: dict  # the collection's settings beyond its defaults (--params, then --param)
    seeds: tuple[int, ...]
    saved_folder: Path | None  # --predict-only: the checked folder to load
    run: model_store.Run | None  # where a fitted model is staged
    model_dir: Path


@dataclass
class _Done:
    """What a collection's work gives back: its report, test rows, the seeds of its models, the line the
    log shows for it, and the peak memory of the process that ran it."""

    report: CollectionReport
    rows: dict[str, np.ndarray]
    seeds: list[int]
    line: str
    process_peak_mb: float


def _job(plan: _Run, collection: Collection, run: model_store.Run | None) -> _Job:
    return _Job(method=plan.info.name, collection=collection.name, data_dir=plan.data_dir,
                options=plan.options, params=_collection_params(plan.from_file, collection, plan.params),
                seeds=plan.seeds, saved_folder=plan.saved_folders.get(collection.name), run=run,
                model_dir=plan.model_dir)


def _one_collection(job: _Job) -> _Done:
    """Fit (or load) a collection's models, stage them, validate, and rank its test graphs."""
    from competition.collections import get_collection

    info, collection = resolve_method(job.method), get_collection(job.collection)
    with PeakMemory() as memory:
        t0 = time.perf_counter()
        if job.saved_folder is not None:
            models = load_models(info, job.saved_folder, seed=job.options.seed, device=job.options.device)
            fit_seconds = 0.0
        else:
            models = _fit_models(info, collection, job.data_dir, job.options, job.params, job.seeds)
            fit_seconds = time.perf_counter() - t0
            if job.run is not None:
                _stage(job.run, collection, models, len(job.seeds))
        outcome = _validate_and_predict([model for _, model in models], info, job.data_dir, collection,
                                        job.options)
    report = _collection_report(collection, models, outcome, fit_seconds, memory.peak_mb,
                                job.model_dir / collection_slug(collection))
    predict_seconds = report.validate_seconds + report.predict_seconds
    line = (f"{collection.name}: validation {collection.metric} {report.validation_score:.4f} over "
            f"{report.valid_graphs} graphs (fit {fit_seconds:.1f} s, predict {predict_seconds:.1f} s, "
            f"peak {report.peak_memory_mb:.0f} MB)")
    return _Done(report, outcome.rows, [seed for seed, _ in models], line, process_peak_mb())


def _solve_in_processes(plan: _Run, run: model_store.Run | None) -> list[_Done]:
    """``plan.jobs`` collections at once, each in a fresh process (spawned: nothing of this one's torch
    state is shared), without progress bars (several would overwrite each other); a collection's line is
    logged as it finishes, and the results come back in the collections' order. Every fit is seeded by
    its own settings alone, so the submission and the models are the ones a run of one process writes
    (``tests/test_runner.py``). A failure in any collection, Ctrl-C or SIGTERM stops the other processes
    at once (the caller then removes the run's staging folder) and is raised here. A spawned process
    imports the calling script again: from a script, call ``solve`` under ``if __name__ == "__main__":``."""
    import multiprocessing

    options = replace(plan.options, progress=False)
    jobs = [_job(replace(plan, options=options), collection, run) for collection in plan.chosen]
    if plan.from_file is not None and not plan.predict_only:
        for collection in plan.chosen:
            plan.say(_params_line(plan.from_file, collection, plan.params))
    done: dict[int, _Done] = {}
    pool = multiprocessing.get_context("spawn").Pool(processes=plan.jobs)
    try:
        for index, finished in pool.imap_unordered(_one_collection_in_worker, enumerate(jobs)):
            plan.say(finished.line)
            done[index] = finished
        pool.close()
    finally:
        pool.terminate()  # returns at once when every process has finished; stops them otherwise
        pool.join()
    return [done[index] for index in range(len(jobs))]


def _one_collection_in_worker(indexed: tuple[int, _Job]) -> tuple[int, _Done]:
    """``_one_collection`` in a worker process; an error that would not survive the way back to the parent
    (pickling) is sent as a ``RuntimeError`` with its message."""
    import pickle

    index, job = indexed
    try:
        return index, _one_collection(job)
    except Exception as exc:
        try:
            pickle.loads(pickle.dumps(exc))
        except Exception:
            raise RuntimeError(f"{type(exc).__name__}: {exc}") from None
        raise


def _checked_settings(info: MethodInfo, chosen: Sequence[Collection], params: dict,
                      params_file: str | Path | None, predict_only: bool) -> ParamsFile | None:
    """Check ``--param`` and ``--params`` (read here) before any work: each collection's settings resolve.
    The saved models record the file and what it gave each collection (``params_file`` in ``solve.json``)."""
    for flag, given in (("--param", params), ("--params", params_file)):
        if predict_only and given:
            raise SolveError(f"{flag} has no effect with --predict-only (the saved models keep their "
                             "settings)")
    from_file = read_params(params_file, info) if params_file is not None else None
    for collection in chosen:
        check_params(info, [collection], _collection_params(from_file, collection, params))
    return from_file


def _collection_params(from_file: ParamsFile | None, collection: Collection,
                       params: Mapping[str, object]) -> dict:
    """The settings ``collection`` is fitted with beyond its defaults: the PARAMS.json's, then ``--param``."""
    return {**(from_file.params_for(collection.name) if from_file is not None else {}), **params}


def _params_line(from_file: ParamsFile, collection: Collection, params: Mapping[str, object]) -> str:
    given = from_file.params_for(collection.name)
    overridden = sorted(set(given) & set(params))
    values = ", ".join(f"{k}={v}" for k, v in given.items()) or "none beyond the defaults"
    return (f"{collection.name}: settings from {from_file.path} ({from_file.source_of(collection.name)}: "
            f"{values})" + (f"; --param wins for {', '.join(overridden)}" if overridden else ""))


def _fit_models(info: MethodInfo, collection: Collection, data_dir: Path, options: FitOptions, params: dict,
                seeds: Sequence[int]) -> list[tuple[int, object]]:
    """One model per seed, each built with the collection's resolved settings and fitted."""
    models = []
    for seed in seeds:
        fitted = info.build(collection, params)  # checked by check_params before any work
        fitted.fit(collection, SplitSource(data_dir, collection, "train"),
                   SplitSource(data_dir, collection, "valid"), replace(options, seed=seed))
        models.append((seed, fitted))
    return models


def _stage(run: model_store.Run, collection: Collection, models: list[tuple[int, object]],
           seeds: int) -> None:
    """Save a collection's models into the run's staging folder (in place only when the run succeeds)."""
    for seed, fitted in models:
        fitted.save(_seed_folder(run.path_for(collection.name), seed, seeds))
    if seeds > 1:
        (run.path_for(collection.name) / SEEDS_FILE).write_text(
            json.dumps({"seeds": [seed for seed, _ in models], "blend": BLEND}) + "\n", encoding="utf-8")
    run.stamp(collection.name)


@dataclass
class _Outcome:
    """A collection's validation scores (blended and per model) and its test rows."""

    valid_scores: np.ndarray
    per_model: list[list[float]]
    validate_seconds: float
    rows: dict[str, np.ndarray]
    predict_seconds: float


def _validate_and_predict(models: list, info: MethodInfo, data_dir: Path, collection: Collection,
                          options: FitOptions) -> _Outcome:
    """Score the models' blended ranking (and each model's) on the valid split, then rank the test split."""
    t0 = time.perf_counter()
    per_model: list[list[float]] = [[] for _ in models]
    blended: list[float] = []
    for _, graph, rankings, blend in _ranked_graphs(models, info.name, data_dir, collection, "valid",
                                                    progress=options.progress, cache_dir=options.cache_dir):
        for scores, ranking in zip(per_model, rankings, strict=True):
            scores.append(graph_score(collection, ranking, graph))
        blended.append(graph_score(collection, blend, graph))
    validate_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    rows = {row_id: blend for row_id, _, _, blend in _ranked_graphs(
        models, info.name, data_dir, collection, "test", progress=options.progress,
        cache_dir=options.cache_dir)}
    return _Outcome(np.asarray(blended, dtype=np.float64), per_model, validate_seconds, rows,
                    time.perf_counter() - t0)


def _collection_report(collection: Collection, models: list[tuple[int, object]], outcome: _Outcome,
                       fit_seconds: float, peak_mb: float, path: Path) -> CollectionReport:
    details = _summary(models[0][1])
    if len(models) > 1:
        details["per_seed"] = {str(seed): _summary(model) for seed, model in models}
    valid = outcome.valid_scores
    return CollectionReport(
        collection=collection.name, metric=collection.metric,
        validation_score=float(np.mean(valid)) if valid.size else math.nan, valid_graphs=int(valid.size),
        test_graphs=len(outcome.rows), fit_seconds=fit_seconds, validate_seconds=outcome.validate_seconds,
        predict_seconds=outcome.predict_seconds, peak_memory_mb=peak_mb, model_path=path, details=details,
        valid_graph_scores=valid.tolist(),
        seed_validation_scores={str(seed): float(np.mean(scores)) if scores else math.nan
                                for (seed, _), scores in zip(models, outcome.per_model, strict=True)}
        if len(models) > 1 else {},
    )


def _finish(plan: _Run, *, run: model_store.Run | None, rows: dict, reports: list[CollectionReport],
            world: World | None, seeds: list[int], peak_mb: float) -> SolveReport:
    """Write and check the submission, put the run's models in place, and report."""
    out = plan.out
    write_submission(out, rows)
    checked = validate_submission(out, expected_from_data_dir(plan.data_dir, plan.chosen))
    if not checked.ok:
        raise RuntimeError(f"the submission written by method {plan.info.name!r} is invalid (a bug in the "
                           f"method):\n{format_problems(checked, source_name=str(out))}")
    if run is not None:
        run.commit(c.name for c in plan.chosen)
    solved = SolveReport(
        method=plan.info.name, submission=out, rows=len(rows), collections=reports, options=plan.options,
        predict_only=plan.predict_only, model_dir=plan.model_dir, seconds=time.perf_counter() - plan.started,
        process_peak_memory_mb=peak_mb, world_size=1 if world is None else world.size, seeds=seeds,
    )
    solved.add_intervals()  # a fixed resampling seed: runs differ only by their scores
    return solved


__all__ = [
    "CollectionReport",
    "PeakMemory",
    "SolveError",
    "SolveReport",
    "collection_slug",
    "describe_params",
    "parse_method_params",
    "graph_score",
    "solve",
]
