"""``tpugraphs tune``: the search space declared in the settings schema, ``--space``, the split of the
valid graphs, the fits' reports to a pruner, honest selection, PARAMS.json and ``solve --params``, a
resumed study, and two processes sharing one study (SQLite and PostgreSQL). Trials are tiny: the tiny
embedded competition, 20 boosting rounds."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from competition.cli import main
from competition.collections import get_collection
from solutions.methods.base import FitOptions, SplitSource, validation_listener
from solutions.methods.gbdt.settings import SETTINGS as GBDT
from solutions.methods.gnn.settings import SETTINGS as GNN
from solutions.methods.registry import get_method
from solutions.settings.params_file import read_params_file
from solutions.settings.schema import SearchRange, SettingError, check_search, schema, setting
from solutions.tune import selection
from solutions.tune.fitting import Scored
from solutions.tune.space import build_space, parse_space, starting_point
from solutions.tune.split import GraphSubset, ValidSplit, split_valid, valid_stems
from solutions.tune.study import Job, masked
from tests.leaderboard.lb_support import skip_or_fail
from tests.postgres_server import postgres_server

XLA_RANDOM = get_collection("layout:xla:random")
FAST_GBDT = ("--param", "num_boost_round=20", "--param", "min_boost_round=5",
             "--param", "early_stopping_rounds=10")


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def public(tiny_competition: Path) -> Path:
    return tiny_competition / "public"


# --------------------------------------------------------------------------------------------------
# The search space: declared once in the schema, changed by --space


@pytest.mark.parametrize("settings_class", [GBDT.settings_class, GNN.settings_class])
def test_every_declared_search_range_holds_the_default_and_only_allowed_values(settings_class):
    rows = [row for row in schema(settings_class).values() if row.search is not None]
    assert len(rows) >= 8
    for row in rows:
        assert row.search.contains(row.default), row.name
        assert check_search(row, row.search, row.name) is row.search


@pytest.mark.parametrize(("declared", "why"), [
    ({"search": (0.0, 1.0), "scale": "log"}, "a log scale needs LOW > 0"),
    ({"search": (0.5, 2.0)}, "too large"),
    ({"search": (0.5, 0.5)}, "is empty"),
    ({"search_choices": (0.5,)}, "one value fixes the setting"),
])
def test_a_declared_search_range_outside_the_setting_is_refused_when_the_schema_is_read(declared, why):
    from dataclasses import dataclass

    @dataclass
    class Probe:
        share: float = setting(0.5, "a share", low=0, high=1, **declared)

    with pytest.raises(SettingError, match=why):
        schema(Probe)


BAD_SPACES = [
    ("learning_rate=0..0.3", "--space learning_rate=0..0.3: setting learning_rate=0: too small"),
    ("num_leaves=1..10", "setting num_leaves=1: too small"),
    ("feature_fraction=0.5..1.5", "setting feature_fraction=1.5: too large"),
    ("num_leaves=10..5", "the range 10..5 is empty"),
    ("lambda_l2=0..1:log", "a log scale needs LOW > 0"),
    ("lr=0.01..0.1", "did you mean learning_rate?"),
    ("objective=lambdarank,hinge", "setting objective=hinge: unknown"),
    ("objective=lambdarank", "one value fixes the setting; use --param objective=lambdarank"),
    ("center_per_graph=0..1", "searched by listing values"),
    ("num_leaves=8,16:log", "a scale applies to a range"),
    ("num_leaves", "expected NAME=LOW..HIGH or NAME=a,b,c"),
    ("num_leaves=abc..5", "not an integer"),
]


@pytest.mark.parametrize(("text", "message"), BAD_SPACES)
def test_a_bad_space_is_refused_in_one_line(text, message):
    with pytest.raises(SettingError) as refused:
        parse_space([text], GBDT)
    assert message in str(refused.value)
    assert "\n" not in str(refused.value)


def test_space_ranges_replace_the_declared_ones_and_keep_the_declared_scale():
    given = parse_space(["learning_rate=0.05..0.2", "num_leaves=8..64:linear",
                         "objective=regression,pairwise", "max_bin=16,32,64"], GBDT)
    assert given["learning_rate"] == SearchRange(0.05, 0.2, log=True)  # the schema's scale
    assert given["num_leaves"] == SearchRange(8, 64, log=False)
    assert given["objective"].choices == ("regression", "pairwise")
    assert given["max_bin"].choices == (16, 32, 64)
    space = build_space(GBDT, XLA_RANDOM, given, {"num_boost_round": 20})
    found = {d.name: d for d in space.dimensions}
    assert found["learning_rate"].origin == "--space" and found["lambda_l2"].origin == "schema"
    assert space.fixed == {"num_boost_round": 20}
    only = build_space(GBDT, XLA_RANDOM, given, {}, only_given=True)
    assert only.names() == ["objective", "learning_rate", "num_leaves", "max_bin"]


def test_a_collection_starting_outside_a_declared_range_keeps_its_own_value():
    tile = build_space(GBDT, get_collection("tile:xla"), {}, {})
    assert "query_size" not in tile.names() and "query_size" in tile.left_out  # tile: one query per graph
    assert starting_point(tile, GBDT, get_collection("tile:xla"))["heuristic_prior"] == 0.0
    widened = build_space(GBDT, get_collection("tile:xla"), parse_space(["query_size=8..64"], GBDT), {})
    assert "query_size" in widened.names()
    assert starting_point(widened, GBDT, get_collection("tile:xla")) is None  # none is outside 8..64


def test_a_setting_both_searched_and_fixed_is_refused():
    with pytest.raises(SettingError, match="contradict each other"):
        build_space(GBDT, XLA_RANDOM, parse_space(["num_leaves=8..64"], GBDT), {"num_leaves": 31})


def test_the_gnn_starting_point_is_the_collections_own_defaults():
    space = build_space(GNN, XLA_RANDOM, {}, {})
    start = starting_point(space, GNN, XLA_RANDOM)
    assert start["heuristic_prior"] == 3.0 and start["average_epochs"] == 20.0 and start["hidden"] == 32


# --------------------------------------------------------------------------------------------------
# The valid graphs split by graph


@settings(max_examples=60, deadline=None)
@given(count=st.integers(2, 40), holdout=st.floats(0.01, 0.99), seed=st.integers(0, 2**31))
def test_the_split_is_a_seeded_partition_with_both_halves_non_empty(count, holdout, seed):
    stems = [f"g{i:02d}" for i in range(count)]
    split = split_valid(list(reversed(stems)), holdout, seed)
    assert sorted(split.search + split.held_out) == stems
    assert split.search and split.held_out and not set(split.search) & set(split.held_out)
    assert split == split_valid(stems, holdout, seed)  # the order given does not matter


def test_a_single_valid_graph_cannot_be_split():
    with pytest.raises(ValueError, match="at least 2"):
        split_valid(["only"], 0.5, 0)


def test_a_graph_subset_reads_only_its_graphs(public):
    stems = valid_stems(public, XLA_RANDOM)
    subset = GraphSubset(public, XLA_RANDOM, "valid", frozenset(stems[:1]))
    assert len(subset) == 1 and [p.stem for p in subset.paths] == stems[:1]
    assert [row_id for row_id, _ in subset] == [XLA_RANDOM.row_id(stems[0])]
    assert len(SplitSource(public, XLA_RANDOM, "valid")) == len(stems)


# --------------------------------------------------------------------------------------------------
# The fits report their selection scores (and a listener can stop them)


def _fit(method: str, params: dict, public: Path) -> None:
    info = get_method(method)
    model = info.build(XLA_RANDOM, params)
    model.fit(XLA_RANDOM, SplitSource(public, XLA_RANDOM, "train"), SplitSource(public, XLA_RANDOM, "valid"),
              FitOptions(progress=False))


@pytest.mark.slow
@pytest.mark.parametrize(("method", "params", "steps"), [
    ("gbdt", {"num_boost_round": 12, "min_boost_round": 12}, list(range(1, 13))),
    ("gnn", {"layout_epochs": 3, "eval_every": 1, "hidden": 8}, [1, 2, 3]),
])
def test_a_fit_reports_each_round_or_epoch_to_a_listener_and_nothing_without_one(method, params, steps,
                                                                                  public):
    heard: list[tuple[int, float]] = []
    with validation_listener(lambda step, score: heard.append((step, score))):
        _fit(method, params, public)
    assert [step for step, _ in heard] == steps
    assert all(-1 <= score <= 1 for _, score in heard)
    _fit(method, params, public)  # no listener: nothing to call
    assert len(heard) == len(steps)


class Stop(Exception):
    pass


@pytest.mark.slow
@pytest.mark.parametrize("method", ["gbdt", "gnn"])
def test_a_listener_that_raises_stops_the_fit(method, public):
    params = ({"num_boost_round": 50} if method == "gbdt"
              else {"layout_epochs": 5, "eval_every": 1, "hidden": 8})

    def stop(step: int, score: float) -> None:
        if step == 2:
            raise Stop(step)

    with validation_listener(stop), pytest.raises(Stop):
        _fit(method, params, public)


# --------------------------------------------------------------------------------------------------
# Honest selection


def _job(public: Path, held_out: int) -> Job:
    space = build_space(GBDT, XLA_RANDOM, {}, {"num_boost_round": 20})
    split = ValidSplit(search=("a",), held_out=tuple(f"h{i}" for i in range(held_out)))
    return Job(get_method("gbdt"), GBDT, XLA_RANDOM, public, split, space, (0,), FitOptions(progress=False),
               "x")


def _study_with_best(params: dict) -> optuna.Study:
    study = optuna.create_study(direction="maximize")
    distributions = {"num_leaves": optuna.distributions.IntDistribution(7, 255, log=True)}
    study.add_trial(optuna.trial.create_trial(params={"num_leaves": 31}, distributions=distributions,
                                              value=0.1, user_attrs={"defaults": True}))
    study.add_trial(optuna.trial.create_trial(params=params, distributions=distributions, value=0.3))
    return study


@pytest.mark.parametrize(("tuned_gain", "noise", "held_out", "adopted"), [
    (0.2, 0.01, 8, True),  # every held-out graph better: beyond the noise
    (0.01, 0.2, 8, False),  # a gain lost in the spread of the graphs
    (0.2, 0.01, 4, True),  # 4 graphs: the sign-flip test cannot go below p = 0.125, the t interval decides
    (0.02, 0.2, 4, False),  # ... and holds back a gain lost in the spread
    (-0.2, 0.01, 8, False),  # worse beyond the noise
])
def test_tuned_settings_are_kept_only_when_they_beat_the_defaults_beyond_the_noise(
        monkeypatch, public, tuned_gain, noise, held_out, adopted):
    rng = np.random.default_rng(0)
    base = rng.uniform(0.2, 0.6, held_out)
    answers = iter([base, base + tuned_gain + rng.normal(0, noise, held_out)])
    monkeypatch.setattr(selection, "fit_and_score",
                        lambda *a, **k: Scored(next(answers), [0.0], 0.1))
    job = _job(public, held_out)
    outcome = selection.select(job, _study_with_best({"num_leaves": 63}), 0.95)
    assert outcome.best.number == 1 and outcome.defaults_trial.number == 0
    assert outcome.adopted is adopted
    fixed = {"num_boost_round": 20}
    assert outcome.params == ({**fixed, "num_leaves": 63} if adopted else fixed)
    entry = selection.params_entry(outcome, "sqlite:///x.db", [])
    assert entry["source"] == ("tuned" if adopted else "defaults")
    gain = outcome.tuned.score - outcome.defaults.score
    assert entry["held_out"]["difference"]["diff"] == pytest.approx(gain)
    assert ("the t interval decides alone" in outcome.note) is (held_out == 4 and not adopted)


def test_a_best_trial_that_is_the_defaults_needs_no_second_fit(monkeypatch, public):
    calls = []
    monkeypatch.setattr(selection, "fit_and_score",
                        lambda *a, **k: calls.append(1) or Scored(np.full(8, 0.5), [0.5], 0.1))
    outcome = selection.select(_job(public, 8), _study_with_best({"num_leaves": 31}), 0.95)
    assert len(calls) == 1 and not outcome.adopted and "is the defaults" in outcome.note


def test_a_study_without_a_complete_trial_is_refused_in_one_line(public):
    from solutions.tune.study import TuneError

    with pytest.raises(TuneError, match="no trial completed"):
        selection.select(_job(public, 8), optuna.create_study(direction="maximize"), 0.95)


def test_storage_passwords_are_masked():
    assert masked("postgresql+psycopg://tune:s3cret@db/tune") == "postgresql+psycopg://tune:***@db/tune"
    assert masked("sqlite:////tmp/x.db") == "sqlite:////tmp/x.db"


# --------------------------------------------------------------------------------------------------
# The command line: bad input gets one line


def _without_collection(public: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "public"
    shutil.copytree(public, copy)
    shutil.rmtree(copy / "npz_all" / "npz" / "layout" / "xla" / "random")
    return copy


BAD_RUNS = [
    (["--trials", "0"], "--trials 0: at least 1"),
    (["--space", "lr=0.01..0.1"], "did you mean learning_rate?"),
    (["--space", "num_leaves=1..8"], "setting num_leaves=1: too small"),
    (["--space", "num_leaves=8..64", "--param", "num_leaves=31"], "contradict each other"),
    (["--param", "num_leaves=1"], "setting num_leaves=1: too small"),
    (["--holdout", "1"], "--holdout 1.0: the share of valid graphs held out"),
    (["--pruner", "sometimes"], "--pruner sometimes: one of median, hyperband, none"),
    (["--storage", "postgresql+psycopg://nobody@127.0.0.1:9/nothing"], "cannot open it"),
    (["--storage", "nosuchdb://x"], "--storage nosuchdb://x: cannot open it"),
    (["--seeds", "0,0"], "listed more than once"),
]


@pytest.mark.parametrize(("extra", "message"), BAD_RUNS)
def test_bad_tune_arguments_are_refused_in_one_line_before_any_trial(capsys, public, tmp_path, extra,
                                                                      message):
    code, out, err = cli(capsys, "tune", "--data", str(public), "--method", "gbdt", "--collection",
                         "layout:xla:random", "--out", str(tmp_path / "params.json"), *extra)
    assert code == 2 and message in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "params.json").exists() and not (tmp_path / "params.optuna.db").exists()


def test_other_refusals(capsys, public, tmp_path):
    base = ["tune", "--data", str(public), "--out", str(tmp_path / "p.json")]
    cases = [
        ([*base, "--method", "heuristic", "--collection", "tile:xla"], "--method heuristic has no settings"),
        ([*base, "--method", "gbdt"], "give --collection NAME"),
        ([*base, "--method", "gbdt", "--collection", "layout:xla:nowhere"], "layout:xla:nowhere"),
        (["tune", "--data", str(_without_collection(public, tmp_path)), "--method", "gbdt", "--collection",
          "layout:xla:random", "--out", str(tmp_path / "p.json")], "no layout:xla:random train folder"),
        ([*base, "--collection", "tile:xla"], "required: --method"),
        (["tune", "--data", str(public), "--method", "gbdt", "--collection", "tile:xla", "--out",
          str(tmp_path)], "is a folder"),
    ]
    for argv, message in cases:
        code, _, err = cli(capsys, *argv)
        assert code == 2 and message in err, (argv, err)
        assert len(err.strip().splitlines()) == 1


def test_list_space_prints_the_declared_ranges_and_what_a_collection_leaves_out(capsys):
    code, out, _ = cli(capsys, "tune", "--method", "gbdt", "--list-space", "--collection", "tile:xla")
    assert code == 0
    assert "learning_rate" in out and "0.02..0.3 (log)" in out
    assert "query_size" in out and "not searched: tile:xla starts from none" in out


def test_tpugraphs_help_does_not_import_optuna():
    done = subprocess.run([sys.executable, "-c", "import sys\nfrom competition.cli import main\n"
                           "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
                           "print('optuna' in sys.modules, 'matplotlib' in sys.modules)"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "False False"


# --------------------------------------------------------------------------------------------------
# solve --params


def _params_file(path: Path, document: object) -> Path:
    path.write_text(document if isinstance(document, str) else json.dumps(document), encoding="utf-8")
    return path


GOOD = {"format": "tpugraphs-params", "version": 1, "method": "gbdt",
        "collections": {"tile:xla": {"params": {"num_leaves": 15}, "source": "tuned"}}}
BAD_PARAMS_FILES = [
    ("{not json", "not JSON"),
    ({"format": "other"}, "not a PARAMS.json"),
    ({**GOOD, "version": 7}, "PARAMS.json version 7"),
    ({**GOOD, "method": "gnn"}, "holds settings of --method gnn, not --method gbdt"),
    ({**GOOD, "collections": {"tile:xla": {"params": {"leaves": 3}}}}, "collection tile:xla: setting leaves"),
    ({**GOOD, "collections": {"tile:xla": {"params": {"num_leaves": 1}}}}, "setting num_leaves=1: too small"),
    ({**GOOD, "collections": {"tile:nowhere": {"params": {}}}}, "unknown collection 'tile:nowhere'"),
    ({**GOOD, "collections": {"tile:xla": {"params": {}, "source": "luck"}}}, "source 'luck'"),
]


@pytest.mark.parametrize(("document", "message"), BAD_PARAMS_FILES)
def test_a_bad_params_file_is_refused_in_one_line_naming_it(capsys, public, tmp_path, document, message):
    path = _params_file(tmp_path / "params.json", document)
    code, _, err = cli(capsys, "solve", "--data", str(public), "--method", "gbdt", "--collection", "tile:xla",
                       "--out", str(tmp_path / "sub.csv"), "--params", str(path))
    assert code == 2 and f"--params {path}: " in err and message in err, err
    assert len(err.strip().splitlines()) == 1


def test_params_file_values_are_typed_by_the_schema(tmp_path):
    path = _params_file(tmp_path / "p.json", {**GOOD, "collections": {
        "tile:xla": {"params": {"num_leaves": 15.0, "center_per_graph": False}, "source": "tuned"}}})
    found = read_params_file(path, "gbdt", GBDT)
    assert found.params_for("tile:xla") == {"num_leaves": 15, "center_per_graph": False}
    assert isinstance(found.params_for("tile:xla")["num_leaves"], int)
    assert found.params_for("layout:nlp:random") == {} and found.source_of("layout:nlp:random") == "absent"


@pytest.mark.slow
def test_solve_params_applies_the_file_under_param_and_the_models_record_it(capsys, public, tmp_path):
    path = _params_file(tmp_path / "params.json", {**GOOD, "collections": {
        "layout:xla:random": {"params": {"num_leaves": 15, "num_boost_round": 20, "min_boost_round": 5},
                              "source": "tuned"}}})
    code, out, err = cli(capsys, "solve", "--data", str(public), "--method", "gbdt", "--collection",
                         "layout:xla:random", "--out", str(tmp_path / "sub.csv"), "--params", str(path),
                         "--param", "num_leaves=7", "--quiet")
    assert code == 0, err
    assert f"layout:xla:random: settings from {path} (tuned: num_leaves=15" in out
    assert "--param wins for num_leaves" in out
    saved = json.loads((tmp_path / "sub.models" / "layout_xla_random" / "settings.json").read_text())
    assert saved["settings"]["num_leaves"] == 7 and saved["settings"]["num_boost_round"] == 20
    manifest = json.loads((tmp_path / "sub.models" / "solve.json").read_text())
    origin = manifest["collections"]["layout:xla:random"]["params_file"]
    assert origin["file"] == str(path) and len(origin["sha256"]) == 64
    assert origin["collections"]["layout:xla:random"]["source"] == "tuned"


# --------------------------------------------------------------------------------------------------
# Whole studies (tiny trials)


def _tune(capsys, public: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    return cli(capsys, "tune", "--data", str(public), "--method", "gbdt", "--collection", "layout:xla:random",
               "--out", str(out), "--quiet", *FAST_GBDT, *extra)


@pytest.mark.slow
def test_a_study_writes_params_and_pictures_resumes_and_refuses_another_purpose(capsys, public, tmp_path):
    out = tmp_path / "params.json"
    code, text, err = _tune(capsys, public, out, "--trials", "3", "--sampler-seed", "0")
    assert code == 0, err
    entry = json.loads(out.read_text())["collections"]["layout:xla:random"]
    assert entry["source"] == "defaults" and entry["params"] == {"num_boost_round": 20, "min_boost_round": 5,
                                                                  "early_stopping_rounds": 10}
    assert "does not beat the defaults" in entry["note"]  # the tiny competition holds out one graph
    assert entry["study"]["trials"] == {"complete": 3}
    assert entry["search"]["defaults_score"] is not None and len(entry["held_out"]["graphs"]) == 1
    for picture in entry["pictures"]:
        assert (tmp_path / picture).stat().st_size > 1000
    assert {Path(p).name for p in entry["pictures"]} == {"params.layout_xla_random.history.png",
                                                           "params.layout_xla_random.importance.png"}
    assert "held out (1 graph, 95% intervals): defaults" in text
    storage = f"sqlite:///{tmp_path / 'params.optuna.db'}"
    study = optuna.load_study(study_name="gbdt:layout:xla:random", storage=storage)
    first = study.trials[0]
    assert first.user_attrs["defaults"] and first.params["num_leaves"] == 31
    assert all(set(t.intermediate_values) <= {10, 20} and t.intermediate_values for t in study.trials)
    code, _, err = _tune(capsys, public, out, "--trials", "4")  # resumed: one more
    assert code == 0, err
    assert len(optuna.load_study(study_name="gbdt:layout:xla:random", storage=storage).trials) == 4
    code, _, err = _tune(capsys, public, out, "--trials", "4", "--seeds", "0,1")
    assert code == 2 and "was made for --seeds 0;" in err
    code, _, err = cli(capsys, "tune", "--data", str(public), "--method", "gbdt", "--collection",
                       "layout:nlp:default", "--out", str(out), "--study", "gbdt:layout:xla:random",
                       *FAST_GBDT)
    assert code == 2 and "was made for --collection layout:xla:random" in err
    code, _, err = cli(capsys, "tune", "--data", str(public), "--method", "gnn", "--collection",
                       "layout:xla:random", "--out", str(out), "--trials", "1")
    assert code == 2 and "holds settings of --method gbdt" in err


@pytest.mark.slow
def test_a_gnn_study_searches_only_the_space_given_and_writes_params(capsys, public, tmp_path):
    out = tmp_path / "gnn.json"
    code, _, err = cli(capsys, "tune", "--data", str(public), "--method", "gnn", "--collection",
                       "layout:nlp:default", "--out", str(out), "--quiet", "--trials", "2", "--param",
                       "layout_epochs=2", "--param", "eval_every=1", "--space-only", "--space", "hidden=8,16",
                       "--space", "lr=0.001..0.01")
    assert code == 0, err
    entry = json.loads(out.read_text())["collections"]["layout:nlp:default"]
    assert [d["name"] for d in entry["space"]["searched"]] == ["hidden", "lr"]
    assert entry["study"]["trials"].get("complete") == 2


def _two_processes(public: Path, tmp_path: Path, storage: str,
                   trials: int) -> list[subprocess.CompletedProcess]:
    command = [sys.executable, "-c", "from competition.cli import main; raise SystemExit(main())"]
    procs = [subprocess.Popen([*command, "tune", "--data", str(public), "--method", "gbdt", "--collection",
                               "layout:xla:random", "--out", str(tmp_path / f"p{i}.json"), "--storage",
                               storage, "--study", "shared", "--trials", str(trials), "--quiet", *FAST_GBDT],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    return [subprocess.CompletedProcess(p.args, p.wait(timeout=600), *p.communicate()) for p in procs]


def _check_shared(storage: str, trials: int) -> None:
    study = optuna.load_study(study_name="shared", storage=storage)
    finished = [t for t in study.trials if t.state.is_finished()]
    assert trials <= len(finished) <= trials + 1  # each process stops once the study holds enough
    assert len({t.number for t in study.trials}) == len(study.trials)
    assert len({t._trial_id for t in study.trials}) == len(study.trials)
    assert sum(t.user_attrs.get("defaults", False) for t in study.trials) == 1  # enqueued once
    complete = [tuple(sorted(t.params.items())) for t in study.trials if t.state.name == "COMPLETE"]
    assert len(set(complete)) == len(complete)  # no settings run twice


def _take_queued_trials(url: str, taken: Any) -> None:  # taken: a multiprocessing queue
    from solutions.tune.study import open_storage

    study = optuna.load_study(study_name="queue", storage=open_storage(url))
    mine = []
    while (trial_id := study._pop_waiting_trial_id()) is not None:  # what study.ask() takes a queued trial by
        mine.append(trial_id)
    taken.put(mine)


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_four_processes_take_each_queued_trial_once(database, tmp_path):
    """SQLite has no row locks: a process read "waiting" and marked the trial running in two steps, and
    another could do the same in between (8 to 13 of 60 queued trials were taken twice)."""
    import contextlib
    import multiprocessing
    from collections import Counter

    from solutions.tune.study import open_storage

    with contextlib.ExitStack() as stack:
        url = (f"sqlite:///{tmp_path / 'queue.db'}" if database == "sqlite"
               else stack.enter_context(postgres_server(skip_or_fail)))
        study = optuna.create_study(study_name="queue", storage=open_storage(url))
        for i in range(60):
            study.enqueue_trial({"x": i})
        context = multiprocessing.get_context("spawn")
        taken = context.Queue()
        workers = [context.Process(target=_take_queued_trials, args=(url, taken)) for _ in range(4)]
        for worker in workers:
            worker.start()
        ids = [trial_id for _ in workers for trial_id in taken.get(timeout=300)]
        for worker in workers:
            worker.join(timeout=60)
        assert all(worker.exitcode == 0 for worker in workers)
        twice = {trial_id: n for trial_id, n in Counter(ids).items() if n > 1}
        assert not twice, f"trials taken more than once: {twice}"
        assert sorted(ids) == sorted(t._trial_id for t in study.trials)


@pytest.mark.slow
def test_two_processes_share_one_sqlite_study(public, tmp_path):
    storage = f"sqlite:///{tmp_path / 'shared.db'}"
    for done in _two_processes(public, tmp_path, storage, 6):
        assert done.returncode == 0, done.stderr
    _check_shared(storage, 6)


@pytest.mark.slow
def test_two_processes_share_one_postgresql_study(public, tmp_path):
    with postgres_server(skip_or_fail) as url:
        for done in _two_processes(public, tmp_path, url, 6):
            assert done.returncode == 0, done.stderr
        _check_shared(url, 6)


@pytest.fixture
def python_sigint():
    """Python's own SIGINT handler, as in a terminal, whatever the tests inherited (a shell's background
    job starts with SIGINT ignored); the inherited one put back after."""
    import signal

    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, inherited)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the swallowed interrupt
def test_a_ctrl_c_that_a_cleanup_callback_swallows_still_stops_the_trials(python_sigint):
    """Python drops a KeyboardInterrupt raised inside a garbage-collection callback ("Exception ignored");
    under load that is where a Ctrl-C during a trial often landed (SQLAlchemy's weakref callbacks), and
    the tune ran on. CtrlC notes the press and raises it again at the next check."""
    import signal
    import weakref

    from solutions.tune.study import CtrlC

    class Owner:
        pass

    with CtrlC() as ctrl_c:
        ctrl_c.check()  # nothing pressed yet
        owner = Owner()
        keep = weakref.ref(owner, lambda _: signal.raise_signal(signal.SIGINT))  # noqa: F841
        del owner  # the callback runs, the handler raises inside it, Python ignores the exception
        with pytest.raises(KeyboardInterrupt):
            ctrl_c.check()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with CtrlC():  # an ignored SIGINT (a background job) stays ignored
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.slow
def test_ctrl_c_keeps_the_study_and_the_interrupted_trial_runs_first_on_resume(public, tmp_path):
    import signal
    import time

    out, storage = tmp_path / "p.json", f"sqlite:///{tmp_path / 'p.optuna.db'}"
    from child_cli import argv

    args = argv("tune", "--data", str(public), "--method", "gnn", "--collection", "layout:xla:random",
                "--out", str(out), "--quiet", "--trials", "1", "--param", "layout_epochs=400",
                "--param", "hidden=8", "--time-budget", "4")
    running = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # wait until the first trial runs
        try:
            trials = optuna.load_study(study_name="gnn:layout:xla:random", storage=storage).trials
        except KeyError:  # the study is not made yet
            trials = []
        if trials and trials[0].state.name == "RUNNING":
            break
        time.sleep(0.2)
    time.sleep(1.0)
    running.send_signal(signal.SIGINT)
    _, err = running.communicate(timeout=120)
    assert running.returncode != 0 and "interrupted; the finished trials are kept" in err
    first = optuna.load_study(study_name="gnn:layout:xla:random", storage=storage).trials[0]
    assert first.state.name == "FAIL" and first.user_attrs["interrupted"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    again = optuna.load_study(study_name="gnn:layout:xla:random", storage=storage).trials
    assert [t.state.name for t in again] == ["FAIL", "COMPLETE"]
    assert again[1].user_attrs["retry_of"] == 0 and again[1].params == first.params


@pytest.mark.parametrize(("key", "value", "words"), [
    ("method", "gnn", "was made for --method gbdt;"),
    ("data", "0123456789abcdef", "made for other data (the collection's train and valid files differ)"),
    ("held_out_graphs", ["x"], "another split of the valid graphs (--holdout, --split-seed)"),
    ("fixed", {"num_leaves": 7}, "other fixed settings (--param: num_boost_round=20)"),
])
def test_a_study_made_for_something_else_is_refused_naming_what(public, key, value, words):
    from solutions.tune.study import TuneError, check_identity

    job = _job(public, 8)
    study = optuna.create_study(direction="maximize")
    check_identity(study, job.identity(), "sqlite:///x.db")  # a new study takes this run's identity
    check_identity(study, job.identity(), "sqlite:///x.db")
    with pytest.raises(TuneError, match=r"give another --study \(or --storage\)") as refused:
        check_identity(study, {**job.identity(), key: value}, "sqlite:///x.db")
    assert words in str(refused.value)
