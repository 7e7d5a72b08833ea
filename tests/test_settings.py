"""The settings schema (``solutions.settings.schema``): every ``--param`` is read and checked before any data
is read, a refusal is one line with exit 2, and no model folder is left behind."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from competition.cli import main
from competition.collections import COLLECTION_NAMES, get_collection
from solutions.methods.registry import METHODS
from solutions.settings.schema import SettingError, parse_texts, schema

SETTINGS_CLASSES = {name: None if (known := info.load_settings()) is None else known.settings_class
                    for name, info in METHODS.items()}
WITH_SETTINGS = sorted(name for name, cls in SETTINGS_CLASSES.items() if cls is not None)


@pytest.fixture
def no_data_read(monkeypatch):
    """Fail the test if the runner gets as far as looking at the data folder."""
    from solutions.solve import runner

    def refuse(*args, **kwargs):
        raise AssertionError("the data folder was looked at before the settings were checked")

    monkeypatch.setattr(runner, "check_splits", refuse)


# Each row: method, --param items, what the one-line message must say.
BAD_PARAMS = [
    ("gnn", ["lr=fast"], "setting lr=fast: not a number; lr must be a number >= 0 (default 0.005)"),
    ("gnn", ["lr=-1"], "setting lr=-1: too small; lr must be a number >= 0"),
    ("gnn", ["patience=soon"],
     "setting patience=soon: not an integer; patience must be an integer >= 1 or none"),
    ("gnn", ["num_threads=0"],
     "setting num_threads=0: too small; num_threads must be an integer >= 1 or none"),
    ("gnn", ["dropout=2"], "setting dropout=2: too large; dropout must be a number >= 0 and < 1"),
    ("gnn", ["hidden=3.5"], "setting hidden=3.5: not an integer"),
    ("gnn", ["hidden=nan"], "setting hidden=nan: not an integer"),
    ("gnn", ["lr=inf"], "setting lr=inf: not a finite number"),
    ("gnn", ["config_attention=maybe"], "setting config_attention=maybe: not true or false"),
    ("gnn", ["hiden=64"], "setting hiden: --method gnn has no such setting; did you mean hidden?"),
    ("gnn", ["training=gts"],
     "setting training=gts: unknown (did you mean gst?); training must be one of full, gst"),
    ("gnn", ["loss=listmle"], "setting loss: --method gnn has no such setting (tpugraphs solve"),
    ("gbdt", ["lr=0.1"], "setting lr: --method gbdt has no such setting; did you mean learning_rate? "
                         "(tpugraphs solve --method gbdt --list-params lists them)"),
    ("gnn", ["fusion=none"], "setting fusion=none: unknown; fusion must be one of early, intermediate"),
    ("gnn", ["pruning=khop"], "setting pruning=khop: khop takes K or K:P"),
    ("gnn", ["training=gst"], "setting training=gst with fusion=intermediate"),
    ("gnn", ["hidden"], "--param hidden: expected NAME=VALUE"),
    ("gnn", ["hidden=\n"], "setting hidden='\\n': not an integer"),  # shown on one line, escaped
    ("gnn", ["hidden=8", "hidden=16"], "--param hidden=8 and --param hidden=16 contradict each other"),
    ("gbdt", ["num_leaves=x"], "setting num_leaves=x: not an integer; num_leaves must be an integer >= 2"),
    ("gbdt", ["learning_rate=-1"], "setting learning_rate=-1: too small; learning_rate must be a number > 0"),
    ("gbdt", ["max_bin=1"], "setting max_bin=1: too small; max_bin must be an integer >= 2 (default 63)"),
    ("gbdt", ["ndcg_at=0"], "setting ndcg_at=0: too small; ndcg_at must be an integer >= 1 or none"),
    ("gbdt", ["bagging_fraction=1.5"], "setting bagging_fraction=1.5: too large"),
    ("gbdt", ["objective=lambdarnk"], "unknown (did you mean lambdarank?)"),
    ("gbdt", ["linear_gain=false", "label_levels=40"],
     "LightGBM allows at most 31 levels with exponential gains"),
    ("gbdt", ["pruning=none"], "setting pruning: --method gbdt has no such setting"),
    ("random", ["seed=1"], "--param seed: --method random has no settings"),
]


@pytest.mark.parametrize(("method", "items", "message"), BAD_PARAMS, ids=[" ".join(r[1]) for r in BAD_PARAMS])
def test_a_bad_param_is_one_line_and_exit_2_before_any_data_is_read(tiny_competition, tmp_path, capsys,
                                                                    no_data_read,
                                                                     method, items, message):
    out = tmp_path / "sub.csv"
    args = ["solve", "--data", str(tiny_competition / "public"), "--out", str(out), "--method", method,
            "--quiet"]
    for item in items:
        args += ["--param", item]
    assert main(args) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], captured.err
    assert "Traceback" not in captured.err and "=True" not in captured.err  # no Python keyword syntax
    assert not out.exists() and not (tmp_path / "sub.models").exists()


def test_no_prune_is_the_pruning_setting(tiny_competition, tmp_path, capsys, no_data_read):
    common = ["solve", "--data", str(tiny_competition / "public"), "--out", str(tmp_path / "s.csv"),
              "--quiet"]
    assert main([*common, "--no-prune", "--method", "gbdt"]) == 2
    assert "--no-prune: --method gbdt prunes no graphs" in capsys.readouterr().err
    assert main([*common, "--no-prune", "--param", "pruning=khop:2"]) == 2
    assert "--no-prune and --param pruning=khop:2 contradict each other" in capsys.readouterr().err


@pytest.mark.parametrize("method", WITH_SETTINGS)
def test_every_listed_default_reads_back_as_itself(method):
    """The text --list-params shows for a default is accepted by --param and gives the same value."""
    from solutions.settings.schema import shown_value

    rows = schema(SETTINGS_CLASSES[method])
    texts = {name: shown_value(row.default) for name, row in rows.items()}
    assert parse_texts(SETTINGS_CLASSES[method], texts, method) == {name: row.default
                                                                    for name, row in rows.items()}


def test_the_schema_is_what_the_objects_check():
    from solutions.methods.gbdt.settings import GBDTSettings
    from solutions.methods.gnn.settings import GNNConfig

    with pytest.raises(SettingError, match="setting hidden=0: too small"):
        GNNConfig(hidden=0)
    with pytest.raises(SettingError, match="setting hidden=64: not an integer"):
        GNNConfig(hidden="64")  # the Python API takes typed values; only the command line reads text
    with pytest.raises(SettingError, match="setting num_leaves=true: not an integer"):
        GBDTSettings(num_leaves=True)
    assert GNNConfig(pruning="khop:3:0").pruning == "khop:3"  # kept in the canonical spelling
    assert GNNConfig(lr=1).lr == 1.0 and isinstance(GNNConfig(lr=1).lr, float)


def _method_and_texts():
    return st.sampled_from(WITH_SETTINGS).flatmap(lambda method: st.tuples(
        st.just(method),
        st.dictionaries(st.sampled_from(sorted(schema(SETTINGS_CLASSES[method]))),
                        st.one_of(st.text(max_size=12), st.integers(-5, 5000).map(str),
                                  st.floats(allow_nan=True).map(str),
                                  st.sampled_from(["none", "true", "false"])),
                        min_size=1, max_size=4)))


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(_method_and_texts())
def test_random_texts_are_refused_with_a_setting_error_or_give_settings_every_collection_accepts(case):
    """The property behind "exit 2 or a valid run": any text for any setting of any method either
    stops at the schema (SettingError, which the command line shows as one line with exit 2) or
    gives values from which every collection's settings are built without another error."""
    method, texts = case
    method_settings = METHODS[method].load_settings()
    try:
        values = parse_texts(SETTINGS_CLASSES[method], texts, method)
    except SettingError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("setting ")
        return
    for name in COLLECTION_NAMES:
        try:
            built = method_settings.resolve(get_collection(name), values)
        except SettingError as exc:  # a combination refused (gst + intermediate fusion, label levels)
            assert "\n" not in str(exc)
            continue
        for key, value in values.items():
            assert getattr(built, key) == value


@pytest.mark.parametrize("method", sorted(METHODS))
def test_list_params_json_is_one_document(method, capsys):
    assert main(["solve", "--method", method, "--list-params", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["method"] == method
    names = [row["name"] for row in document["settings"]]
    assert names == (list(schema(SETTINGS_CLASSES[method])) if SETTINGS_CLASSES[method] else [])
    assert all({"name", "default", "allowed", "meaning"} <= set(row) for row in document["settings"])


def test_checking_and_listing_settings_imports_no_training_library():
    """``--list-params`` (with and without --collection) and a refused setting answer without importing
    torch, torch_geometric or lightgbm: training imports them when it starts working."""
    import subprocess
    import sys

    script = """
import sys
from competition.cli import main
for argv in (["solve", "--method", "gnn", "--list-params"],
             ["solve", "--method", "gbdt", "--list-params", "--collection", "tile:xla"],
             ["solve", "--data", "x", "--out", "y", "--param", "dropout=2"],
             ["solve", "--data", "x", "--out", "y", "--method", "gbdt", "--param", "lr=0.1"]):
    assert main(argv) in (0, 2), argv
heavy = [m for m in ("torch", "torch_geometric", "lightgbm") if m in sys.modules]
assert not heavy, heavy
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


def test_list_params_with_a_collection_shows_the_defaults_it_starts_from(capsys):
    assert main(["solve", "--method", "gnn", "--list-params", "--collection", "layout:xla:random",
                 "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    defaults = {row["name"]: row["default"] for row in document["settings"]}
    assert document["collection"] == "layout:xla:random"
    assert defaults["heuristic_prior"] == 3.0 and defaults["average_epochs"] == 20.0
    assert main(["solve", "--method", "gbdt", "--list-params", "--collection", "tile:xla"]) == 0
    text = capsys.readouterr().out
    assert "ndcg_at" in text and "the defaults tile:xla starts from" in text
    row = next(line for line in text.splitlines() if line.strip().startswith("ndcg_at "))
    assert row.split()[1] == "5"
    assert main(["solve", "--method", "gbdt", "--list-params", "--collection", "tile:xla",
                 "--collection", "layout:xla:random"]) == 2
    assert "give --collection once" in capsys.readouterr().err


def test_a_setting_is_resolved_once_and_a_param_always_wins():
    from solutions.methods.gnn.settings import SETTINGS

    random_search = get_collection("layout:xla:random")
    assert SETTINGS.resolve(random_search).heuristic_prior == 3.0
    assert SETTINGS.resolve(get_collection("layout:xla:default")).heuristic_prior == 0.0
    assert SETTINGS.resolve(random_search, {"heuristic_prior": 0}).heuristic_prior == 0.0
    plain = SETTINGS.resolve(random_search, {"engineered_features": False})  # the prior gives way
    assert plain.heuristic_prior == 0.0 and plain.average_epochs == 20.0
    with pytest.raises(SettingError, match="heuristic_prior"):  # the person's own contradiction
        SETTINGS.resolve(random_search, {"engineered_features": False, "heuristic_prior": 1})
