"""``tune()``: every argument checked before any trial, then one study per collection, the honest
selection, PARAMS.json and the pictures."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from competition.collections import Collection
from solutions.methods.base import FitOptions
from solutions.methods.registry import MethodInfo
from solutions.settings.params_file import ParamsFileError, write_entry
from solutions.settings.schema import MethodSettings, SearchRange, SettingError
from solutions.solve.checks import (
    SolveError,
    check_cache_dir,
    check_splits,
    collection_slug,
    resolve_collections,
    resolve_device,
    resolve_method,
)
from solutions.tune.selection import Outcome, describe_params, floor_note, graphs, params_entry, select
from solutions.tune.space import build_space, parse_space
from solutions.tune.split import data_fingerprint, split_valid, valid_stems
from solutions.tune.study import PRUNERS, Job, TuneError, load_study, masked, open_storage, run_trials


@dataclass(frozen=True)
class TuneRequest:
    """What ``tpugraphs tune`` was asked (the command line's arguments, typed)."""

    data_dir: str | Path
    method: str
    out: str | Path
    collections: Sequence[str]
    trials: int = 30
    space: Sequence[str] = ()
    space_only: bool = False
    params: dict[str, str] = field(default_factory=dict)  # --param texts: fixed for every trial
    seeds: Sequence[int] = (0,)
    holdout: float = 0.5
    split_seed: int = 0
    timeout_s: float | None = None
    trial_budget_s: float | None = None
    storage: str | None = None
    study: str | None = None
    pruner: str = "median"
    sampler_seed: int | None = None
    confidence: float = 0.95
    device: str = "auto"
    cache_dir: Path | None = None
    compress: bool = True
    progress: bool = True


def default_storage(out: Path) -> str:
    """``params.json`` -> ``sqlite:////abs/params.optuna.db``: the study beside the file it feeds."""
    return f"sqlite:///{out.resolve().with_suffix('.optuna.db')}"


def study_name(request: TuneRequest, info: MethodInfo, collection: Collection, several: bool) -> str:
    if request.study is None:
        return f"{info.name}:{collection.name}"
    return f"{request.study}:{collection.name}" if several else request.study


def _check_numbers(request: TuneRequest) -> None:
    if request.trials < 1:
        raise TuneError(f"--trials {request.trials}: at least 1 (trials already in the study count)")
    if not 0 < request.holdout < 1:
        raise TuneError(f"--holdout {request.holdout}: the share of valid graphs held out, between 0 and 1")
    if not 0 < request.confidence < 1:
        raise TuneError(f"--confidence {request.confidence}: between 0 and 1, e.g. 0.95")
    for flag, value in (("--timeout", request.timeout_s), ("--time-budget", request.trial_budget_s)):
        if value is not None and value <= 0:
            raise TuneError(f"{flag} {value}: must be > 0 seconds")
    if request.pruner not in PRUNERS:
        raise TuneError(f"--pruner {request.pruner}: one of {', '.join(PRUNERS)}")
    if not request.seeds:
        raise TuneError("--seeds: give at least one seed")


def method_settings(method: str) -> tuple[MethodInfo, MethodSettings]:
    """The method called ``method`` and its settings; ``TuneError`` for one without settings."""
    try:
        info = resolve_method(method)
    except SolveError as exc:
        raise TuneError(str(exc)) from None
    settings = info.load_settings()
    if settings is None:
        raise TuneError(f"--method {info.name} has no settings to tune; tune gbdt or gnn")
    return info, settings


def plan_jobs(request: TuneRequest, say: Callable[[str], None]) -> tuple[list[Job], str]:
    """Every check made before any trial: the method, the settings, the space, the data, the storage URL."""
    _check_numbers(request)
    info, settings = method_settings(request.method)
    if not request.collections:
        raise TuneError("give --collection NAME (repeatable): each collection is its own study")
    try:
        chosen = resolve_collections(request.collections)
        fixed = settings.parse(request.params)
        given: dict[str, SearchRange] = parse_space(request.space, settings)
        data_dir = check_splits(request.data_dir, chosen, ("train", "valid"))
        # as solve: only a method that runs on a device pays for importing torch to look for a GPU
        device = resolve_device(request.device) if info.uses_device or request.device != "auto" else "cpu"
        check_cache_dir(request.cache_dir)
    except (SolveError, SettingError) as exc:
        raise TuneError(str(exc)) from None
    fit = FitOptions(device=device, compress=request.compress, progress=False, cache_dir=request.cache_dir)
    jobs = []
    for collection in chosen:
        try:
            space = build_space(settings, collection, given, fixed, only_given=request.space_only)
            split = split_valid(valid_stems(data_dir, collection), request.holdout, request.split_seed)
        except (SettingError, ValueError) as exc:
            raise TuneError(f"{collection.name}: {exc}") from None
        jobs.append(Job(info, settings, collection, data_dir, split, space, tuple(request.seeds), fit,
                        data_fingerprint(data_dir, collection), request.trial_budget_s, say))
    return jobs, request.storage or default_storage(Path(request.out))


def _check_out(out: Path, info: MethodInfo) -> None:
    """PARAMS.json can be written there: not a folder, in a folder that exists, and not a file of another
    method (a file of the same method keeps its other collections)."""
    from solutions.settings.params_file import read_params_file

    if out.is_dir():
        raise TuneError(f"--out {out} is a folder; name the PARAMS.json to write")
    if not out.parent.is_dir():
        raise TuneError(f"--out {out}: the folder {out.parent} does not exist")
    if out.exists():
        try:
            read_params_file(out, info.name, info.load_settings())
        except ParamsFileError as exc:
            raise TuneError(f"--out {exc}; choose another --out") from None


def tune(request: TuneRequest, log: Callable[[str], None] | None = None) -> list[Outcome]:
    """Search each collection's settings, select honestly, write PARAMS.json and the pictures beside it."""
    say = log or (lambda line: None)
    jobs, url = plan_jobs(request, say)
    out = Path(request.out)
    _check_out(out, jobs[0].info)
    storage = open_storage(url)
    studies = []  # every study opened and checked before the first trial
    for job in jobs:
        name = study_name(request, job.info, job.collection, len(jobs) > 1)
        floor = floor_note(len(job.split.held_out), request.confidence)
        if floor:
            say(f"{job.collection.name}: {floor}")
        studies.append(load_study(job, storage, url, name, pruner=request.pruner,
                                  sampler_seed=request.sampler_seed))
    outcomes = []
    for job, study in zip(jobs, studies, strict=True):
        say(f"{job.collection.name}: study {study.study_name} in {masked(url)}; searching "
            f"{', '.join(job.space.names())} on {graphs(len(job.split.search))} of the valid split, "
            f"{len(job.split.held_out)} held out")
        run_trials(job, study, request.trials, timeout_s=request.timeout_s, progress=request.progress)
        outcome = select(job, study, request.confidence)
        from solutions.tune.plots import write_pictures

        stem = out.with_name(f"{out.stem}.{collection_slug(job.collection)}")
        pictures, skipped = write_pictures(study, stem)
        for line in skipped:
            say(f"{job.collection.name}: no {line}")
        write_entry(out, job.info.name, job.collection.name,
                    params_entry(outcome, masked(url), [p.name for p in pictures]))
        for line in summary_lines(outcome, out, pictures):
            say(line)
        outcomes.append(outcome)
    return outcomes


def summary_lines(outcome: Outcome, out: Path, pictures: list[Path]) -> list[str]:
    """The report of one collection: trials and their cost, the search, the held-out comparison."""
    job, d = outcome.job, outcome.comparison.overall
    from solutions.tune.study import counts

    found = counts(outcome.study)
    cost = ", ".join(f"{s:.1f} s per {state} trial" for state, s in outcome.seconds_per_trial().items())
    defaults = outcome.defaults_trial
    level = f"{outcome.confidence:.0%}"
    ci_d, ci_t = outcome.held_out_interval(outcome.defaults), outcome.held_out_interval(outcome.tuned)
    states = ", ".join(f"{n} {state}" for state, n in sorted(found.items()))
    best = outcome.best
    return [
        f"{job.collection.name}: {sum(found.values())} trials ({states})" + (f"; {cost}" if cost else ""),
        f"  search ({graphs(len(job.split.search))}): best trial {best.number} {best.value:.4f}"
        + (f", defaults (trial {defaults.number}) {defaults.value:.4f}" if defaults else "")
        + f"; {describe_params(best.params)}",
        f"  held out ({graphs(len(job.split.held_out))}, {level} intervals): defaults "
        f"{outcome.defaults.score:.4f} [{ci_d.low:.4f}, {ci_d.high:.4f}], trial {best.number} "
        f"{outcome.tuned.score:.4f} "
        f"[{ci_t.low:.4f}, {ci_t.high:.4f}], difference {d.interval.estimate:+.4f} "
        f"[{d.interval.low:+.4f}, {d.interval.high:+.4f}], sign-flip p = {d.p_sign_flip:.3g}",
        f"  {out}: {'tuned' if outcome.adopted else 'defaults'}: {outcome.note}",
    ] + ([f"  pictures: {', '.join(str(p) for p in pictures)}"] if pictures else [])
