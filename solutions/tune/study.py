"""The Optuna study of one collection: where it is stored, what it is for, and the trials it runs.

- **Storage.** An RDB storage (``optuna.storages.RDBStorage``): a SQLite file by default, beside
  PARAMS.json, or any SQLAlchemy URL (``postgresql+psycopg://...``) that several ``tune`` processes on
  several machines share. Each process asks the storage for its next trial, so none is run twice; a
  process that dies leaves a trial whose heartbeat stops, and the next process to look re-runs it
  (``RetryHeartbeatStaleTrialCallback``). A trial interrupted by Ctrl-C is marked ``interrupted`` and re-run
  first when the study is resumed; every trial that finished stays.
- **What a study is for** (``identity``): the method, the collection, the data (its files' names and
  sizes), the split of the valid graphs, the seeds and the fixed settings, kept in the study's user
  attributes. A study made for something else is refused in one line.
- **Trials.** ``Objective`` suggests a value for each searched setting, fits and scores the settings on
  the search half (``fitting.fit_and_score``), and reports the fit's selection score as it goes (every
  boosting round or evaluated epoch, ``validation_listener``) so that the pruner stops a hopeless trial.
  Settings the schema refuses together, or a diverged fit, fail that trial alone.
- ``--trials N`` counts the finished trials of the study (complete, pruned or failed on its own), over
  every process and every run: a resumed or shared study runs what is missing.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import optuna
from optuna.trial import TrialState

from competition.collections import Collection
from solutions.methods.base import FitOptions
from solutions.methods.registry import MethodInfo
from solutions.settings.schema import MethodSettings, SettingError
from solutions.tune.fitting import DivergedError, fit_and_score
from solutions.tune.space import Space
from solutions.tune.split import ValidSplit

STUDY_ATTR = "tpugraphs"  # the study's identity, in its user attributes
REQUEUED_ATTR = "requeued"  # interrupted trials already re-run
HEARTBEAT_S = 30  # a running trial's heartbeat; one silent for GRACE_S is re-run by another process
GRACE_S = 120
SQLITE_WAIT_S = 60  # how long a process waits for another's SQLite transaction before it gives up
PRUNERS = ("median", "hyperband", "none")
# How often a method's selection score is reported (steps: gbdt rounds, gnn epochs) and how many steps a
# trial runs before the pruner may stop it (gbdt chooses its round among rounds >= 100 by default).
REPORT_EVERY = {"gbdt": 10}
WARMUP_STEPS = {"gbdt": 50, "gnn": 4}
WORKER = f"{socket.gethostname()}:{os.getpid()}"


optuna.logging.set_verbosity(optuna.logging.ERROR)  # the progress bar and the report say what matters


class TuneError(Exception):
    """A problem with how ``tune`` was called, its storage or its data (one line, for the person)."""


@dataclass(frozen=True)
class Job:
    """Everything one collection's study needs."""

    info: MethodInfo
    settings: MethodSettings
    collection: Collection
    data_dir: Path
    split: ValidSplit
    space: Space
    seeds: tuple[int, ...]
    fit: FitOptions
    data_fingerprint: str
    trial_budget_s: float | None = None
    say: Callable[[str], None] = field(default=lambda line: None)

    @property
    def trial_options(self) -> FitOptions:
        """How every fit of the study runs: the trials and the held-out refits alike (``--time-budget``)."""
        budget = self.trial_budget_s
        return self.fit if budget is None else replace(self.fit, time_budget_s=budget)

    def identity(self) -> dict:
        """What the study is for: a study made for anything else is refused."""
        return {"method": self.info.name, "collection": self.collection.name, "data": self.data_fingerprint,
                "search_graphs": list(self.split.search), "held_out_graphs": list(self.split.held_out),
                "seeds": list(self.seeds), "fixed": dict(sorted(self.space.fixed.items()))}


def masked(url: str) -> str:
    """A storage URL without its password."""
    return re.sub(r"(://[^:/@]+):[^@/]*@", r"\1:***@", url)


# Two processes opening a new database at once both try to make Optuna's tables: the loser's error names
# a table that "already exists" (or, on SQLite, a locked file). Opening again then finds them made.
RACING = ("already exists", "database is locked", "duplicate key", "UNIQUE constraint failed")
OPEN_ATTEMPTS = 5


def open_storage(url: str) -> optuna.storages.RDBStorage:
    """The RDB storage at ``url`` (tables made when new); ``TuneError`` naming it when it cannot be used."""
    for attempt in range(OPEN_ATTEMPTS):
        try:
            return _rdb_storage(url)
        except Exception as exc:  # a bad URL, a missing driver, a server that does not answer, a locked file
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if attempt + 1 < OPEN_ATTEMPTS and any(word in reason for word in RACING):
                time.sleep(0.5 * (attempt + 1))
                continue
            raise TuneError(f"--storage {masked(url)}: cannot open it ({reason[:200]})") from None
    raise AssertionError("unreachable")


def _rdb_storage(url: str) -> optuna.storages.RDBStorage:
    import warnings

    from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback

    sqlite = url.startswith("sqlite")
    with warnings.catch_warnings():  # the heartbeat is marked experimental
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        storage = RDBStorage(url, heartbeat_interval=HEARTBEAT_S, grace_period=GRACE_S,
                             heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=1),
                             engine_kwargs=_SQLITE_DRIVER if sqlite else None)
    if sqlite:
        _begin_with_the_write_lock(storage.engine)
    return storage


# Python's SQLite driver begins no transaction of its own (SQLAlchemy's recipe for SQLite transactions:
# ``_begin_with_the_write_lock`` emits them) and waits up to SQLITE_WAIT_S for another process's.
_SQLITE_DRIVER = {"connect_args": {"isolation_level": None, "timeout": SQLITE_WAIT_S}}


def _begin_with_the_write_lock(engine: object) -> None:
    """Every SQLite transaction of ``engine`` starts with the database's write lock (``BEGIN IMMEDIATE``).

    A process takes a queued trial by reading that it waits and marking it running. PostgreSQL locks the
    row between the two (``SELECT ... FOR UPDATE``); SQLite has no row locks, and Python's driver begins a
    transaction only at the first write, so two processes could both read "waiting" and both run the trial
    (8 to 13 of 60 queued trials taken twice by four processes). Holding the lock from the transaction's
    start makes the read and the write one step; the others wait their turn."""
    from sqlalchemy import event

    @event.listens_for(engine, "begin")
    def begin(connection: object) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")  # type: ignore[attr-defined]


def _made_for(key: str, found: object) -> str:
    """What a study's identity says, in the words of the command line."""
    if key in ("method", "collection"):
        return f"made for --{key} {found}"
    if key == "seeds":
        return f"made for --seeds {','.join(str(seed) for seed in found or [])}"
    if key == "fixed":
        given = ", ".join(f"{k}={v}" for k, v in (found or {}).items()) or "none"
        return f"made with other fixed settings (--param: {given})"
    if key == "data":
        return "made for other data (the collection's train and valid files differ)"
    return "made with another split of the valid graphs (--holdout, --split-seed)"


def check_identity(study: optuna.Study, identity: dict, url: str) -> None:
    """Refuse a study made for another method, collection, data, split, seeds or fixed settings."""
    found = study.user_attrs.get(STUDY_ATTR)
    if found is None:
        if study.trials:
            raise TuneError(f"study {study.study_name} in {masked(url)} was not made by tpugraphs tune; give "
                            f"another --study")
        study.set_user_attr(STUDY_ATTR, identity)
        return
    for key, value in identity.items():
        if found.get(key) != value:
            made = _made_for(key, found.get(key))
            raise TuneError(f"study {study.study_name} in {masked(url)} was {made}; give another --study (or "
                            f"--storage) for this run")


def make_pruner(name: str, method: str) -> optuna.pruners.BasePruner:
    if name == "none":
        return optuna.pruners.NopPruner()
    if name == "hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=max(1, WARMUP_STEPS.get(method, 1)))
    return optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=WARMUP_STEPS.get(method, 0))


def load_study(job: Job, storage: optuna.storages.RDBStorage, url: str, name: str, *, pruner: str,
               sampler_seed: int | None) -> optuna.Study:
    """Create the study (its first trial: the collection's defaults) or load it and check what it is for."""
    sampler = optuna.samplers.TPESampler(seed=sampler_seed, constant_liar=True, n_startup_trials=8)
    kwargs = {"storage": storage, "sampler": sampler, "pruner": make_pruner(pruner, job.info.name)}
    try:
        study = optuna.create_study(study_name=name, direction="maximize", **kwargs)
        created = True
    except optuna.exceptions.DuplicatedStudyError:
        study = optuna.load_study(study_name=name, **kwargs)
        created = False
    if study.directions != [optuna.study.StudyDirection.MAXIMIZE]:
        raise TuneError(f"study {name} in {masked(url)} does not maximise one score; give another --study")
    check_identity(study, job.identity(), url)
    if created:
        from solutions.tune.space import starting_point

        start = starting_point(job.space, job.settings, job.collection)
        if start is not None:  # the defaults, measured as the search measures every trial
            study.enqueue_trial(start, user_attrs={"defaults": True})
    _requeue_interrupted(study)
    return study


def _requeue_interrupted(study: optuna.Study) -> None:
    """Trials a Ctrl-C stopped run again first (once each)."""
    done = set(study.user_attrs.get(REQUEUED_ATTR, []))
    again = [t for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,))
             if t.user_attrs.get("interrupted") and t.number not in done]
    for trial in again:
        study.enqueue_trial(trial.params, user_attrs={"retry_of": trial.number, **(
            {"defaults": True} if trial.user_attrs.get("defaults") else {})})
        done.add(trial.number)
    if again:
        study.set_user_attr(REQUEUED_ATTR, sorted(done))


def finished(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    """The trials that count towards ``--trials``: complete, pruned, or failed on their own settings."""
    return [t for t in study.get_trials(deepcopy=False)
            if t.state in (TrialState.COMPLETE, TrialState.PRUNED)
            or (t.state == TrialState.FAIL and "failed" in t.user_attrs)]


class CtrlC:
    """Remembers a Ctrl-C while the trials run, so that one a library swallows still stops the tune.

    Python raises ``KeyboardInterrupt`` in whatever Python code the main thread runs next; when that is a
    callback the garbage collector runs (SQLAlchemy's class registry, which Optuna's storage uses, keeps
    weakref callbacks), Python prints "Exception ignored" and goes on, and the Ctrl-C is lost. Inside
    ``with CtrlC() as ctrl_c`` the handler also notes the press, and ``ctrl_c.check()`` raises it again at
    the next safe point (each reported score, the end of each trial, the end of the trials). Where
    SIGINT is not Python's own handler (ignored in a background job, or another handler installed) it is
    left alone.
    """

    def __init__(self) -> None:
        self.pressed = False
        self._previous: object = None

    def __enter__(self) -> CtrlC:
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def _handle(self, signum: int, frame: object) -> None:
        self.pressed = True
        raise KeyboardInterrupt

    def check(self) -> None:
        """Raise ``KeyboardInterrupt`` if Ctrl-C was pressed (and perhaps swallowed) since entering."""
        if self.pressed:
            raise KeyboardInterrupt


class Objective:
    """One trial: suggest, fit on train, select and score on the search half, report as it goes."""

    def __init__(self, job: Job, ctrl_c: CtrlC) -> None:
        self.job = job
        self.ctrl_c = ctrl_c  # the guard run_trials entered

    def __call__(self, trial: optuna.Trial) -> float:
        job = self.job
        params = {**job.space.fixed, **{d.name: d.suggest(trial) for d in job.space.dimensions}}
        search, _ = job.split.sources(job.data_dir, job.collection)
        trial.set_user_attr("worker", WORKER)  # which process ran it (a shared study's processes)
        started = time.perf_counter()
        try:
            job.settings.resolve(job.collection, params)  # a combination the schema refuses fails here
            scored = fit_and_score(job.info, job.collection, job.data_dir, params, select_on=search,
                                   score_on=search, seeds=job.seeds, listener=self._listener(trial),
                                   options=job.trial_options)
            self.ctrl_c.check()  # a Ctrl-C during the fit that a cleanup callback swallowed
        except (SettingError, DivergedError) as exc:
            trial.set_user_attr("failed", str(exc).splitlines()[0])
            raise
        except optuna.TrialPruned:
            trial.set_user_attr("seconds", round(time.perf_counter() - started, 3))
            raise
        except KeyboardInterrupt:
            trial.set_user_attr("interrupted", True)
            raise
        trial.set_user_attr("seconds", round(scored.seconds, 3))
        trial.set_user_attr("graph_scores", scored.graph_scores.tolist())
        trial.set_user_attr("seed_scores", scored.seed_scores)
        return scored.score

    def _listener(self, trial: optuna.Trial) -> Callable[[int, float], None]:
        every = REPORT_EVERY.get(self.job.info.name, 1)

        def listen(step: int, score: float) -> None:
            self.ctrl_c.check()
            if step % every:
                return
            trial.report(score, step)
            if trial.should_prune():
                raise optuna.TrialPruned(f"pruned at step {step} (selection score {score:.4f})")

        return listen


def run_trials(job: Job, study: optuna.Study, trials: int, *, timeout_s: float | None,
               progress: bool) -> None:
    """Run trials until the study holds ``trials`` finished ones (over every process) or ``timeout_s`` has
    passed; a progress bar shows the trials done and the best score so far."""
    from competition.progress import progress as progress_bar

    done = len(finished(study))
    if done >= trials:
        job.say(f"{job.collection.name}: the study already holds {done} finished trials (--trials {trials})")
        return
    bar = progress_bar(None, total=trials, initial=done, desc=f"tune {job.collection.name}", unit="trial",
                       enabled=progress)
    shown = [done]

    def after_trial(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        now = len(finished(study))
        bar.update(max(0, min(now, trials) - shown[0]))
        shown[0] = max(shown[0], min(now, trials))
        best = _best_value(study)
        if best is not None:
            bar.set_postfix(best=f"{best:.4f}")
        if "failed" in trial.user_attrs:
            job.say(f"{job.collection.name}: trial {trial.number} failed: {trial.user_attrs['failed']}")
        if now >= trials:
            study.stop()

    try:
        with CtrlC() as ctrl_c:
            study.optimize(Objective(job, ctrl_c), timeout=timeout_s, catch=(SettingError, DivergedError),
                           callbacks=[after_trial])
            ctrl_c.check()
    finally:
        bar.close()


def _best_value(study: optuna.Study) -> float | None:
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    return max(t.value for t in complete) if complete else None


def counts(study: optuna.Study) -> dict[str, int]:
    """Trials by state (``complete``, ``pruned``, ``fail``, ``running``, ``waiting``)."""
    found: dict[str, int] = {}
    for trial in study.get_trials(deepcopy=False):
        found[trial.state.name.lower()] = found.get(trial.state.name.lower(), 0) + 1
    return found
