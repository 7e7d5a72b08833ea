"""Honest selection: the study's best settings against the defaults on valid graphs the search never read.

On a few validation graphs the best of many trials is partly luck: its search score is biased upwards
by the choosing. So the best trial and the collection's defaults are both fitted again (the same seeds,
selecting on the search half as every trial did) and scored on the held-out half, and the two are
compared graph by graph with the kit's paired statistics (``competition.stats.compare``: the interval
of the mean difference and the exact sign-flip test, both at ``confidence``). The tuned settings are
kept only when they beat the defaults there beyond the noise; otherwise PARAMS.json says so and gives
the defaults (with the settings fixed for the whole search, if any).

With ``n`` held-out graphs the exact two-sided sign-flip test cannot go below ``2 / 2**n``: on fewer than
6 graphs it can never reject at 95 %, so there (the default half of a Kaggle layout collection's 8 valid
graphs) the t interval, calibrated at those sizes (docs/statistics.md), decides alone; ``floor_note``
says so before the search starts.
"""

from __future__ import annotations

from dataclasses import dataclass

import optuna
from optuna.trial import TrialState

from competition.stats import Comparison, GraphScores, Interval, compare, intervals
from competition.text import plural
from solutions.settings.schema import shown_value
from solutions.tune.fitting import Scored, fit_and_score
from solutions.tune.study import Job, TuneError, counts


@dataclass
class Outcome:
    """What the search found for one collection and what PARAMS.json keeps."""

    job: Job
    study: optuna.Study
    best: optuna.trial.FrozenTrial
    defaults_trial: optuna.trial.FrozenTrial | None
    defaults: Scored
    tuned: Scored
    comparison: Comparison
    confidence: float
    adopted: bool
    note: str

    @property
    def tuned_params(self) -> dict[str, object]:
        return {**self.job.space.fixed, **self.best.params}

    @property
    def params(self) -> dict[str, object]:
        """What ``solve --params`` applies: the tuned settings when kept, else the fixed ones."""
        return self.tuned_params if self.adopted else dict(self.job.space.fixed)

    def held_out_interval(self, scored: Scored) -> Interval:
        overall, _ = intervals({self.job.collection.name: scored.graph_scores}, confidence=self.confidence)
        return overall

    def seconds_per_trial(self) -> dict[str, float]:
        """Mean seconds of a complete and of a pruned trial."""
        found = {}
        for state in (TrialState.COMPLETE, TrialState.PRUNED):
            seconds = [t.user_attrs["seconds"] for t in self.study.get_trials(deepcopy=False, states=(state,))
                       if "seconds" in t.user_attrs]
            if seconds:
                found[state.name.lower()] = round(sum(seconds) / len(seconds), 2)
        return found


def graphs(count: int, kind: str = "") -> str:
    """``1 graph``, ``4 held-out graphs``."""
    return f"{count} {kind}graph{plural(count)}"


def sign_flip_decides(held_out: int, confidence: float) -> bool:
    """Whether the exact sign-flip test can reject at ``confidence`` on ``held_out`` graphs."""
    return 2 / 2**held_out < 1 - confidence


def floor_note(held_out: int, confidence: float) -> str | None:
    """What decides on ``held_out`` graphs when the sign-flip test cannot (None when it can)."""
    if sign_flip_decides(held_out, confidence):
        return None
    if held_out < 2:
        return (f"{graphs(held_out, 'held-out ')}: nothing can show a gain beyond the noise, and the "
                f"defaults will be kept (hold out more graphs with --holdout)")
    return (f"{graphs(held_out, 'held-out ')}: the exact sign-flip test cannot go below p = "
            f"{2 / 2**held_out:.3g}, so the {confidence:.0%} t interval of the difference decides alone "
            f"(hold out more graphs with --holdout for both tests)")


def best_trial(study: optuna.Study) -> tuple[optuna.trial.FrozenTrial, optuna.trial.FrozenTrial | None]:
    """The best complete trial (the defaults' trial among equals) and the defaults' own trial, if any."""
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if not complete:
        found = counts(study)
        raise TuneError(f"study {study.study_name}: no trial completed ({found}); run more trials, or look "
                        f"at the failed ones (optuna-dashboard on the same --storage)")
    defaults = next((t for t in complete if t.user_attrs.get("defaults")), None)
    best = max(complete, key=lambda t: (t.value, t is defaults))
    return best, defaults


def select(job: Job, study: optuna.Study, confidence: float) -> Outcome:
    """Refit the best trial and the defaults, score both on the held-out graphs, keep what the paired
    statistics support."""
    best, defaults_trial = best_trial(study)
    search, held = job.split.sources(job.data_dir, job.collection)
    fixed = dict(job.space.fixed)
    tuned_params = {**fixed, **best.params}

    def held_out(params: dict) -> Scored:
        return fit_and_score(job.info, job.collection, job.data_dir, params, select_on=search, score_on=held,
                             seeds=job.seeds, options=job.trial_options)

    job.say(f"{job.collection.name}: scoring the defaults and trial {best.number} on the "
            f"{graphs(len(job.split.held_out), 'held-out ')}")
    defaults = held_out(fixed)
    same = job.settings.resolve(job.collection, fixed) == job.settings.resolve(job.collection, tuned_params)
    tuned = defaults if same else held_out(tuned_params)
    name = job.collection.name
    comparison = compare(GraphScores.from_arrays("defaults", {name: defaults.graph_scores}),
                         GraphScores.from_arrays(f"trial {best.number}", {name: tuned.graph_scores}),
                         confidence=confidence)
    difference = comparison.overall
    # Beyond the noise: both tests where the sign-flip test can reject, else the t interval alone.
    held_out = len(job.split.held_out)
    if sign_flip_decides(held_out, confidence):
        beyond = difference.beyond_noise
    else:  # one graph has no spread: nothing is beyond the noise
        beyond = held_out >= 2 and (difference.interval.low > 0 or difference.interval.high < 0)
    adopted = (not same) and beyond and difference.interval.estimate > 0
    note = _note(same, adopted, comparison, len(job.split.held_out), confidence, best.number)
    return Outcome(job, study, best, defaults_trial, defaults, tuned, comparison, confidence, adopted, note)


def _note(same: bool, adopted: bool, comparison: Comparison, held_out: int, confidence: float,
          number: int) -> str:
    d = comparison.overall
    where = f"on the {graphs(held_out, 'held-out ')}"
    if same:
        return f"the best trial ({number}) is the defaults: PARAMS.json gives the defaults"
    if adopted:
        return (f"trial {number} beats the defaults {where} beyond the noise ({d.interval.estimate:+.4f}, "
                f"{confidence:.0%} interval [{d.interval.low:+.4f}, {d.interval.high:+.4f}], sign-flip p = "
                f"{d.p_sign_flip:.3g}): PARAMS.json gives its settings")
    why = ("" if sign_flip_decides(held_out, confidence)
           else f"; on {graphs(held_out)} the t interval decides alone")
    return (f"trial {number} does not beat the defaults {where} beyond the noise "
            f"({d.interval.estimate:+.4f}, "
            f"{confidence:.0%} interval [{d.interval.low:+.4f}, {d.interval.high:+.4f}], sign-flip p = "
            f"{d.p_sign_flip:.3g}{why}): PARAMS.json gives the defaults")


def params_entry(outcome: Outcome, storage: str, pictures: list[str]) -> dict:
    """The collection's entry of PARAMS.json: what ``solve`` applies, and the record of how it was chosen."""
    job, d = outcome.job, outcome.comparison.overall

    def scored(s: Scored) -> dict:
        ci = outcome.held_out_interval(s)
        return {"score": s.score, "low": ci.low, "high": ci.high, "graph_scores": s.graph_scores.tolist()}

    return {
        "params": outcome.params,
        "source": "tuned" if outcome.adopted else "defaults",
        "note": outcome.note,
        "tuned_params": outcome.tuned_params,
        "study": {"name": outcome.study.study_name, "storage": storage, "trials": counts(outcome.study),
                  "seconds_per_trial": outcome.seconds_per_trial()},
        "space": job.space.to_json(),
        "seeds": list(job.seeds),
        "search": {"graphs": list(job.split.search), "best_trial": outcome.best.number,
                   "best_score": outcome.best.value,
                   "defaults_score": outcome.defaults_trial.value if outcome.defaults_trial else None},
        "held_out": {"graphs": list(job.split.held_out), "confidence": outcome.confidence,
                     "defaults": scored(outcome.defaults), "tuned": scored(outcome.tuned),
                     "difference": d.entry(), "verdict": outcome.comparison.verdict()},
        "pictures": pictures,
    }


def describe_params(params: dict[str, object]) -> str:
    return ", ".join(f"{k}={_short(v)}" for k, v in params.items()) or "(none)"


def _short(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) else shown_value(value)
