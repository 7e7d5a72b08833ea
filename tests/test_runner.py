"""solutions.solve.runner and ``tpugraphs solve``: end to end on the tiny competition, errors, reproducing."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from competition.cli import main
from competition.collections import COLLECTION_BY_NAME, COLLECTION_NAMES
from competition.data.graphs import expected_from_data_dir, iter_split
from competition.metrics import kendall_tau_score, tile_slowdown_score
from competition.predictions import ranking_from_predictions
from competition.scoring import load_solution, score_submission
from competition.stats.ensemble import ensemble
from competition.submission import validate_submission
from solutions.methods import registry as method_module
from solutions.methods.base import FitOptions
from solutions.methods.registry import MethodInfo
from solutions.solve import runner
from solutions.solve.command import param_texts
from solutions.solve.runner import PeakMemory, SolveError, solve
from solutions.store import model_store

QUICK_GNN = {"layout_epochs": 1, "tile_epochs": 1, "hidden": 16, "layers": 2, "layout_valid_configs": 16}
QUIET = FitOptions(progress=False)
ROOT = Path(__file__).resolve().parents[1]


class OracleMethod:
    """Predicts the measured runtimes (valid graphs) or the config index (test graphs): checks the wiring."""

    name = "oracle"

    def fit(self, collection, train, valid, options):
        self.fitted_on = collection.name

    def predict(self, collection, graph):
        if not graph.config_runtime.any():  # a test graph: no labels
            return np.arange(graph.num_configs, dtype=np.float64)
        if collection.task.name == "tile":
            return graph.normalized_runtime()
        return graph.config_runtime.astype(np.float64)

    def save(self, path):
        Path(path).mkdir(parents=True, exist_ok=True)
        (Path(path) / "oracle.json").write_text("{}")

    @classmethod
    def load(cls, path):
        if not (Path(path) / "oracle.json").is_file():
            raise FileNotFoundError(path)
        return cls()


class InterruptedMethod(OracleMethod):
    """Saved under the oracle's name; Ctrl-C while fitting the second collection of a run."""

    name = "oracle"
    fits = 0

    def fit(self, collection, train, valid, options):
        type(self).fits += 1
        if type(self).fits == 2:
            raise KeyboardInterrupt


class SeededMethod(OracleMethod):
    """Seeded noise around the measured runtimes: each seed ranks differently, blends are checkable."""

    name = "seeded"

    def fit(self, collection, train, valid, options):
        self.seed = options.seed

    def predict(self, collection, graph):
        noise = np.random.default_rng([self.seed, graph.num_configs]).random(graph.num_configs)
        return super().predict(collection, graph) * (1 + noise) + noise

    def save(self, path):
        Path(path).mkdir(parents=True, exist_ok=True)
        (Path(path) / "seeded.json").write_text(json.dumps({"seed": self.seed}))

    @classmethod
    def load(cls, path):
        method = cls()
        method.seed = json.loads((Path(path) / "seeded.json").read_text())["seed"]
        return method


class BrokenMethod(OracleMethod):
    name = "broken"

    def predict(self, collection, graph):
        return np.full(graph.num_configs, np.nan)


@pytest.fixture
def extra_methods(monkeypatch):
    table = dict(method_module.METHODS)
    table["interrupted"] = MethodInfo("interrupted", f"{__name__}:InterruptedMethod", "test only", False)
    table["oracle"] = MethodInfo("oracle", f"{__name__}:OracleMethod", "test only", False)
    table["broken"] = MethodInfo("broken", f"{__name__}:BrokenMethod", "test only", False)
    table["seeded"] = MethodInfo("seeded", f"{__name__}:SeededMethod", "test only", False)
    monkeypatch.setattr(method_module, "METHODS", table)


def public(tiny_competition: Path) -> Path:
    return tiny_competition / "public"


# -- the Python API -------------------------------------------------------------------------------


def test_validation_scores_are_the_official_metric(tiny_competition, tmp_path, extra_methods):
    report = solve(public(tiny_competition), "oracle", tmp_path / "sub.csv", options=QUIET)
    for entry in report.collections:
        collection = COLLECTION_BY_NAME[entry.collection]
        expected = []
        for _, graph in iter_split(public(tiny_competition), collection, "valid"):
            order = ranking_from_predictions(collection, OracleMethod().predict(collection, graph))
            expected.append(tile_slowdown_score(order, graph.config_runtime, graph.config_runtime_normalizers)
                            if collection.task.name == "tile"
                            else kendall_tau_score(order, graph.config_runtime))
        assert entry.validation_score == pytest.approx(np.mean(expected))
        assert entry.validation_score > 0.99  # knowing the runtimes ranks (almost) perfectly
    assert report.complete and report.rows == len(expected_from_data_dir(public(tiny_competition)))


def test_one_collection_writes_only_its_rows_and_says_so(tiny_competition, tmp_path):
    out = tmp_path / "tile.csv"
    report = solve(public(tiny_competition), "gnn", out, collections=["tile:xla"], options=QUIET,
                   method_params=QUICK_GNN)
    expected = {k: v for k, v in expected_from_data_dir(public(tiny_competition)).items()
                if k.startswith("tile:xla:")}
    assert validate_submission(out, expected).ok
    assert not report.complete and report.rows == len(expected)
    assert "not a full Kaggle submission" in report.format_table()
    entry = report.collections[0]
    assert entry.collection == "tile:xla" and entry.metric == "tile_slowdown" and entry.fit_seconds > 0
    assert entry.peak_memory_mb > 0 and entry.model_path == tmp_path / "tile.models" / "tile_xla"
    assert (entry.model_path / "gnn.pt").is_file()


def test_all_collections_give_a_valid_scorable_submission(tiny_competition, tmp_path):
    out = tmp_path / "gnn.csv"
    report = solve(public(tiny_competition), "gnn", out, options=QUIET, method_params=QUICK_GNN)
    assert report.complete and [c.collection for c in report.collections] == list(COLLECTION_NAMES)
    assert validate_submission(out, expected_from_data_dir(public(tiny_competition))).ok
    scored = score_submission(out, load_solution(tiny_competition / "private" / "solution.csv"))
    assert set(scored.collections) == set(COLLECTION_NAMES)
    as_json = json.loads(json.dumps(report.to_json_dict()))
    assert as_json["complete"] and len(as_json["collections"]) == 5


def test_same_seed_same_file_and_predict_only_reuses_the_models(tiny_competition, tmp_path):
    collections = ["tile:xla", "layout:nlp:random"]
    first, second, again = tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "c.csv"
    options = FitOptions(seed=5, progress=False)
    solve(public(tiny_competition), "gnn", first, collections=collections, options=options,
          method_params=QUICK_GNN)
    solve(public(tiny_competition), "gnn", second, collections=collections, options=options,
          method_params=QUICK_GNN)
    assert first.read_bytes() == second.read_bytes()
    report = solve(public(tiny_competition), "gnn", again, collections=collections, options=options,
                   model_dir=tmp_path / "a.models", predict_only=True)
    assert again.read_bytes() == first.read_bytes()
    assert report.predict_only and all(c.fit_seconds == 0.0 for c in report.collections)


def test_collections_in_processes_of_their_own_give_the_same_submission_and_models(tiny_competition,
                                                                                  tmp_path):
    """``jobs=2``: each collection fitted in a spawned process; the file, every saved weight and every score
    as one process gives them, in the collections' order."""
    reports = {}
    for jobs in (1, 2):
        reports[jobs] = solve(public(tiny_competition), "gnn", tmp_path / f"jobs{jobs}.csv", options=QUIET,
                              method_params=QUICK_GNN, jobs=jobs)
    assert (tmp_path / "jobs1.csv").read_bytes() == (tmp_path / "jobs2.csv").read_bytes()
    weights = [sorted((tmp_path / f"jobs{jobs}.models").rglob("gnn.pt")) for jobs in (1, 2)]
    assert len(weights[0]) == 5
    assert [p.read_bytes() for p in weights[0]] == [p.read_bytes() for p in weights[1]]
    for one, two in zip(reports[1].collections, reports[2].collections, strict=True):
        assert (one.collection, one.validation_score, one.valid_graph_scores) == (
            two.collection, two.validation_score, two.valid_graph_scores)
        assert two.fit_seconds > 0 and two.peak_memory_mb > 0
    assert reports[2].complete and reports[2].process_peak_memory_mb >= max(
        c.peak_memory_mb for c in reports[2].collections) * 0.5
    again = solve(public(tiny_competition), "gnn", tmp_path / "again.csv", options=QUIET, jobs=2,
                  model_dir=tmp_path / "jobs2.models", predict_only=True)
    assert (tmp_path / "again.csv").read_bytes() == (tmp_path / "jobs1.csv").read_bytes()
    assert all(c.fit_seconds == 0.0 for c in again.collections)


QUICK_GBDT = {"num_boost_round": 20, "min_boost_round": 5, "early_stopping_rounds": 5, "num_threads": 1}


@pytest.mark.parametrize(("method", "params"), [
    ("random", {}), ("heuristic", {}), ("gbdt", QUICK_GBDT), ("gnn", QUICK_GNN),
])
def test_a_cache_folder_changes_nothing_but_where_configs_are_read(tiny_competition, tmp_path, monkeypatch,
                                                                   method, params):
    """With a cache folder, fit, validation and test prediction never load a layout npz whole, and the
    submission, the validation scores and the saved model's predictions are those of a run without it."""
    from competition.data import graphs as graphs_module
    from competition.data.processed_cache import MANIFEST_NAME

    collections = ["tile:xla", "layout:nlp:random"]
    plain = solve(public(tiny_competition), method, tmp_path / "plain.csv", collections=collections,
                  options=FitOptions(seed=3, progress=False), method_params=params)
    loaded = []
    real_load = graphs_module.load_graph

    def load_tile_only(path, kind=None):
        loaded.append(Path(path))
        assert "layout" not in Path(path).parts, f"{path} loaded whole despite the cache"
        return real_load(path, kind)

    monkeypatch.setattr(graphs_module, "load_graph", load_tile_only)
    cache = tmp_path / "cache"
    cached = solve(public(tiny_competition), method, tmp_path / "cached.csv", collections=collections,
                   options=FitOptions(seed=3, progress=False, cache_dir=cache), method_params=params)
    assert loaded  # the tile graphs still went through load_graph: the guard was in the path
    assert (tmp_path / "cached.csv").read_bytes() == (tmp_path / "plain.csv").read_bytes()
    assert [c.validation_score for c in cached.collections] == [c.validation_score for c in plain.collections]
    splits = {m.parent.parent.name
              for m in (cache / "layout" / "nlp" / "random").glob(f"*/*/{MANIFEST_NAME}")}
    assert splits == ({"train", "valid", "test"} if method in ("gbdt", "gnn") else {"valid", "test"})
    # predict-only with the cache reads the saved models and gives the same file again
    again = solve(public(tiny_competition), method, tmp_path / "again.csv", collections=collections,
                  options=FitOptions(seed=3, progress=False, cache_dir=cache),
                  model_dir=tmp_path / "cached.models", predict_only=True)
    assert (tmp_path / "again.csv").read_bytes() == (tmp_path / "plain.csv").read_bytes()
    assert again.predict_only


def test_seed_ensemble_is_the_kits_blend_of_the_single_seed_runs(tiny_competition, tmp_path, extra_methods):
    data, collections, seeds = public(tiny_competition), ["tile:xla", "layout:xla:random"], [0, 1, 2]
    singles = [solve(data, "seeded", tmp_path / f"seed{s}.csv", collections=collections, options=QUIET,
                     seeds=[s])
               for s in seeds]
    report = solve(data, "seeded", tmp_path / "blend.csv", collections=collections, options=QUIET,
                   seeds=seeds)
    # The slow reference: the three single-seed submissions blended by the kit's own ensemble.
    expected = expected_from_data_dir(data, [COLLECTION_BY_NAME[c] for c in collections])
    inputs = {str(s): validate_submission(tmp_path / f"seed{s}.csv", expected).rows for s in seeds}
    blended = ensemble(inputs, expected, method="rank-mean")
    written = validate_submission(tmp_path / "blend.csv", expected).rows
    assert written.keys() == blended.keys()
    assert all(np.array_equal(written[k], blended[k]) for k in blended)
    assert report.seeds == seeds
    for i, c in enumerate(report.collections):
        assert c.seed_validation_scores == {str(s): pytest.approx(single.collections[i].validation_score)
                                            for s, single in zip(seeds, singles, strict=True)}
        assert list(c.details["per_seed"]) == ["0", "1", "2"]
    assert "seeds 0 " in report.format_table() and "rank-mean blend" in report.format_table()
    # One model per seed, reloaded by --predict-only into the same file.
    folder = tmp_path / "blend.models" / "tile_xla"
    assert sorted(p.name for p in folder.glob("seed-*")) == ["seed-0", "seed-1", "seed-2"]
    again = solve(data, "seeded", tmp_path / "again.csv", collections=collections, options=QUIET,
                  model_dir=tmp_path / "blend.models", predict_only=True)
    assert (tmp_path / "again.csv").read_bytes() == (tmp_path / "blend.csv").read_bytes()
    assert again.collections[0].seed_validation_scores == report.collections[0].seed_validation_scores


def test_a_three_seed_blend_differs_from_each_seed(tiny_competition, tmp_path, extra_methods):
    """The blend is not one of its inputs in disguise (the reference test above would pass for that)."""
    data = public(tiny_competition)
    solve(data, "seeded", tmp_path / "blend.csv", collections=["layout:xla:random"], options=QUIET,
          seeds=[0, 1, 2])
    solve(data, "seeded", tmp_path / "one.csv", collections=["layout:xla:random"], options=QUIET, seeds=[0])
    assert (tmp_path / "blend.csv").read_bytes() != (tmp_path / "one.csv").read_bytes()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"seeds": [0, 1, 0]}, "lists seed.s. 0 more than once"),
    ({"method": "xgboost"}, "unknown method 'xgboost'; choose one of"),
    ({"collections": ["layout:xla"]}, "unknown collection 'layout:xla'"),
    ({"data_dir": "nowhere"}, "nowhere'?: no such directory"),
    ({"predict_only": True}, r"no saved models here \(solve.json is missing\)"),
    ({"method_params": {"layout_epochs": 0}},
     "setting layout_epochs=0: too small; layout_epochs must be an integer >= 1"),
    ({"method_params": {"nonsense": 1}}, "setting nonsense: --method gnn has no such setting"),
    ({"method_params": {"hidden": 8}, "predict_only": True}, "--param has no effect with --predict-only"),
    ({"options": FitOptions(device="cuda:7", progress=False)}, "cuda"),
    ({"jobs": 0}, r"--jobs must be a whole number of processes, 1 or more; got 0"),
    ({"jobs": 1.5}, r"--jobs must be a whole number of processes, 1 or more; got 1.5"),
])
def test_user_errors(tiny_competition, tmp_path, kwargs, message):
    call = {"data_dir": public(tiny_competition), "method": "gnn", "out": tmp_path / "sub.csv",
            "options": QUIET, "collections": ["tile:xla"], **kwargs}
    if "cuda" in message:
        pytest.importorskip("torch")
        import torch

        if torch.cuda.is_available() and torch.cuda.device_count() > 7:
            pytest.skip("this machine has a cuda:7")
    with pytest.raises(SolveError, match=message):
        solve(call.pop("data_dir"), call.pop("method"), call.pop("out"), **call)


def test_a_data_dir_without_the_splits(tmp_path):
    tile = tmp_path / "npz_all" / "npz" / "tile" / "xla"
    (tile / "train").mkdir(parents=True)
    with pytest.raises(SolveError, match=r"no train graphs \(\*.npz\) in this folder"):
        solve(tmp_path, "random", tmp_path / "sub.csv", collections=["tile:xla"], options=QUIET)
    (tile / "train" / "kernel.npz").touch()  # only listed, never read: the checks come first
    with pytest.raises(SolveError, match=r"no tile:xla valid folder here"):
        solve(tmp_path, "random", tmp_path / "sub.csv", collections=["tile:xla"], options=QUIET)


def test_predict_only_checks_the_saved_method(tiny_competition, tmp_path, extra_methods):
    solve(public(tiny_competition), "oracle", tmp_path / "sub.csv", collections=["tile:xla"], options=QUIET)
    with pytest.raises(SolveError, match="holds 'oracle' models, not 'random'"):
        solve(public(tiny_competition), "random", tmp_path / "sub.csv", collections=["tile:xla"],
              options=QUIET, predict_only=True)
    with pytest.raises(SolveError,
                       match=r"layout:xla:random: no model in this folder \(its completed runs cover: "
                              r"tile:xla\)"):
        solve(public(tiny_competition), "oracle", tmp_path / "sub.csv", collections=["layout:xla:random"],
              options=QUIET, predict_only=True)


def test_non_finite_predictions_are_refused(tiny_competition, tmp_path, extra_methods):
    with pytest.raises(RuntimeError, match="method 'broken' returned non-finite scores for tile:xla:"):
        solve(public(tiny_competition), "broken", tmp_path / "sub.csv", collections=["tile:xla"],
              options=QUIET)
    assert not (tmp_path / "sub.csv").exists()


def test_peak_memory_sees_numpy_allocations():
    with PeakMemory() as before:
        pass
    with PeakMemory() as during:
        block = np.ones(64 * 2**20 // 8)  # 64 MiB, touched; alive until the last sample on exit
    del block
    assert during.peak_mb >= before.peak_mb + 48


# -- the command line -----------------------------------------------------------------------------


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["solve", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_writes_a_valid_file_and_a_json_report(tiny_competition, tmp_path, capsys):
    out, report = tmp_path / "sub.csv", tmp_path / "report.json"
    code, stdout, _ = run_cli(capsys, "--data", str(public(tiny_competition)), "--out", str(out), "--quiet",
                              "--collection", "layout:xla:default", "--param", "layout_epochs=1",
                              "--param", "hidden=16", "--json", str(report))
    assert code == 0
    assert "layout:xla:default: validation kendall_tau" in stdout and "not a full Kaggle submission" in stdout
    assert json.loads(report.read_text())["collections"][0]["collection"] == "layout:xla:default"


@pytest.mark.parametrize(("argv", "message"), [
    (["--method", "nope"], "unknown method 'nope'"),
    (["--method", "gnm"], "unknown method 'gnm' (did you mean gnn?); choose one of"),
    (["--collection", "tile"], "invalid choice: 'tile'"),
    (["--predict-only"], "run without --predict-only first"),
    (["--param", "hidden"], "expected NAME=VALUE"),
    (["--method", "gbdt", "--param", "objective=nope"],
     "setting objective=nope: unknown; objective must be one of lambdarank, rank_xendcg, regression, "
     "pairwise"),
    (["--time-budget", "0"], "--time-budget must be > 0"),
    (["--seeds", "0,x"], "--seeds must be comma-separated integers"),
    (["--seeds", "0,1,1"], "seed(s) 1 listed more than once"),
    (["--seeds", "0,-1"], "non-negative"),
    (["--seed", "3", "--seeds", "0,1"], "--seed 3 and --seeds 0,1 contradict each other"),
    (["--seeds", "0,1", "--predict-only"], "--seeds has no effect with --predict-only"),
    (["--cache-dir", "{tmp}/a_file"], "a_file: exists and is not a folder"),
    (["--cache-dir", "{tmp}/a_file/cache"], "a_file/cache: cannot create it (Not a directory)"),
    (["--jobs", "0"], "--jobs must be a whole number of processes, 1 or more; got 0"),
    (["--jobs", "two"], "argument --jobs: invalid int value: 'two'"),
])
def test_cli_usage_errors_exit_2_without_traceback(tiny_competition, tmp_path, capsys, argv, message):
    (tmp_path / "a_file").write_text("not a folder")
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in argv]
    argv = ["--data", str(public(tiny_competition)), "--out", str(tmp_path / "sub.csv"), "--quiet", *argv]
    try:
        code, _, err = run_cli(capsys, *argv)
    except SystemExit as exc:  # argparse's own errors
        code, err = exc.code, capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_cli_unreadable_data_exits_1(tiny_competition, tmp_path, capsys, jobs):
    """With --jobs 2 the file is read in a worker process, and its error comes back whole."""
    import shutil

    data = tmp_path / "public"
    shutil.copytree(public(tiny_competition), data)
    victim = sorted((data / "npz_all" / "npz" / "tile" / "xla" / "valid").glob("*.npz"))[0]
    victim.write_bytes(b"not an npz")
    code, _, err = run_cli(capsys, "--data", str(data), "--out", str(tmp_path / "sub.csv"), "--quiet",
                           "--method", "random", "--collection", "tile:xla", "--collection",
                           "layout:xla:random", "--jobs", jobs)
    assert code == 1 and f"cannot read the data: {victim}: " in err and "Traceback" not in err
    assert not (tmp_path / "sub.csv").exists()
    assert not list((tmp_path / "sub.models").glob(model_store.STAGING_PREFIX + "*"))


def test_cli_disk_full_while_caching_exits_1_and_leaves_no_half_cache(tiny_competition, tmp_path, capsys,
                                                                      monkeypatch):
    import errno

    from competition.data import processed_cache as cache_module

    def no_space(fp, npz_path, out_path, sizes, chunk_bytes):
        raise OSError(errno.ENOSPC, "No space left on device", str(out_path))

    monkeypatch.setattr(cache_module, "_stream_configs", no_space)
    cache = tmp_path / "cache"
    code, _, err = run_cli(capsys, "--data", str(public(tiny_competition)), "--out",
                           str(tmp_path / "sub.csv"), "--quiet", "--method", "random", "--collection",
                           "layout:xla:default", "--cache-dir", str(cache))
    assert code == 1 and "cannot write: No space left on device" in err and "Traceback" not in err
    assert not any(cache.rglob("*.npy"))  # the failed build left nothing behind
    assert not (tmp_path / "sub.csv").exists()


@pytest.mark.parametrize(("items", "expected"), [
    ([], {}),
    (["hidden=64", "fusion=early", "patience=null", "row_features=false", "lr=1e-3"],
     {"hidden": 64, "fusion": "early", "patience": None, "row_features": False, "lr": 0.001}),
    (["patience=none", "num_threads=None", "config_attention=no"],
     {"patience": None, "num_threads": None, "config_attention": False}),
])
def test_param_texts_are_read_by_the_schema(items, expected):
    assert runner.parse_method_params("gnn", param_texts(items, no_prune=False)) == expected
    assert param_texts(["name=a=b"], no_prune=False) == {"name": "a=b"}
    assert param_texts([], no_prune=True) == {"pruning": "none"}


def test_slugs_are_file_name_safe():
    assert runner.collection_slug(COLLECTION_BY_NAME["layout:nlp:random"]) == "layout_nlp_random"


# -- the model folder: written per run, checked before --predict-only --------------------------------


def _tree_bytes(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


TWO = ["tile:xla", "layout:xla:random"]


def test_an_interrupted_run_leaves_the_previous_models_and_manifest_whole(tiny_competition, tmp_path,
                                                                          extra_methods,
                                                                             monkeypatch):
    models = tmp_path / "sub.models"
    solve(public(tiny_competition), "oracle", tmp_path / "sub.csv", collections=TWO, options=QUIET)
    before = _tree_bytes(models)
    monkeypatch.setitem(method_module.METHODS, "oracle",
                        MethodInfo("oracle", f"{__name__}:InterruptedMethod", "test only", False))
    InterruptedMethod.fits = 0
    with pytest.raises(KeyboardInterrupt):
        solve(public(tiny_competition), "oracle", tmp_path / "sub.csv", collections=TWO, options=QUIET)
    assert not list(models.glob(model_store.STAGING_PREFIX + "*"))  # the failed run removed its staging
    assert _tree_bytes(models) == before  # the first collection's new model was staged, never put in place
    monkeypatch.setitem(method_module.METHODS, "oracle",
                        MethodInfo("oracle", f"{__name__}:OracleMethod", "test only", False))
    solve(public(tiny_competition), "oracle", tmp_path / "again.csv", collections=TWO, options=QUIET,
          model_dir=models, predict_only=True)
    # The next run clears what the interrupted one left.
    solve(public(tiny_competition), "oracle", tmp_path / "sub.csv", collections=TWO, options=QUIET)
    assert not list(models.glob(model_store.STAGING_PREFIX + "*"))


def test_predict_only_refuses_a_folder_mixing_runs_before_any_work(tiny_competition, tmp_path, extra_methods):
    models = tmp_path / "sub.models"
    solve(public(tiny_competition), "oracle", tmp_path / "sub.csv", collections=TWO, options=QUIET)
    first = json.loads((models / "tile_xla" / model_store.STAMP).read_text())["run_id"]
    solve(public(tiny_competition), "oracle", tmp_path / "sub.csv", collections=TWO, options=QUIET)
    # A crash half-way through putting the second run in place: one folder still the first run's.
    stamp = models / "layout_xla_random" / model_store.STAMP
    stamp.write_text(json.dumps({**json.loads(stamp.read_text()), "run_id": first}))
    (tmp_path / "out.csv").unlink(missing_ok=True)
    with pytest.raises(SolveError,
                       match=rf"layout:xla:random: .*layout_xla_random was written by run {first} but "
                             r"solve.json lists run \S+ \(an interrupted run\?\)"):
        solve(public(tiny_competition), "oracle", tmp_path / "out.csv", collections=TWO, options=QUIET,
              model_dir=models, predict_only=True)
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize(("damage", "message"), [
    (lambda models: shutil.rmtree(models / "tile_xla"),
     r"tile:xla: .*tile_xla is missing or has no run stamp"),
    (lambda models: (models / "solve.json").write_text(json.dumps({"method": "oracle", "collections": TWO})),
     r"a manifest of format None, this kit reads format 2 only \(which run wrote each model is not known"),
    (lambda models: (models / "solve.json").write_text("{not json"), r"solve.json: unreadable"),
])
def test_predict_only_names_what_is_wrong_with_the_folder(tiny_competition, tmp_path, extra_methods,
                                                          damage, message):
    models = tmp_path / "sub.models"
    solve(public(tiny_competition), "oracle", tmp_path / "sub.csv", collections=TWO, options=QUIET)
    damage(models)
    with pytest.raises(SolveError, match=message):
        solve(public(tiny_competition), "oracle", tmp_path / "out.csv", collections=TWO, options=QUIET,
              model_dir=models, predict_only=True)


def test_runs_on_different_collections_accumulate(tiny_competition, tmp_path, extra_methods):
    models = tmp_path / "sub.models"
    for name in TWO:
        solve(public(tiny_competition), "oracle", tmp_path / "sub.csv", collections=[name], options=QUIET)
    manifest = json.loads((models / "solve.json").read_text())
    assert set(manifest["collections"]) == set(TWO)
    assert (manifest["collections"]["tile:xla"]["run_id"]
            != manifest["collections"]["layout:xla:random"]["run_id"])
    solve(public(tiny_competition), "oracle", tmp_path / "out.csv", collections=TWO, options=QUIET,
          model_dir=models, predict_only=True)


@pytest.mark.parametrize(("selection", "shown"), [
    ({"mode": "cross-validation", "cv_folds": 4, "note": "the valid split has only 3 kernels, ..."}, True),
    ({"mode": "cross-validation", "cv_folds": 0,
      "note": "too few train kernels: nothing was cross-validated"},
     False),
    ({"mode": "valid", "valid_graphs": 8, "informative_graphs": 6,
      "note": "selected on 6 valid graphs"}, False),
])
def test_the_selection_note_is_one_sentence_under_the_table_only_when_the_fallback_ran(tmp_path, selection,
                                                                                       shown):
    collection = runner.CollectionReport(
        collection="tile:xla", metric="tile_slowdown", validation_score=0.9, valid_graphs=3, test_graphs=4,
        fit_seconds=1.0, validate_seconds=0.1, predict_seconds=0.1, peak_memory_mb=10.0, model_path=None,
        details={"selection": selection})
    report = runner.SolveReport(method="gbdt", submission=tmp_path / "s.csv", rows=4,
                                collections=[collection], options=FitOptions(), predict_only=False,
                                model_dir=tmp_path, seconds=1.0, process_peak_memory_mb=10.0)
    lines = report.format_table().splitlines()
    notes = [line for line in lines if selection["note"] in line]
    assert notes == ([f"tile:xla: {selection['note']}."] if shown else [])
    if shown:
        assert lines.index(notes[0]) > lines.index(next(line for line in lines if line.startswith("gbdt:")))


def test_predict_only_refuses_a_tile_gbdt_model_of_an_older_feature_version(tiny_competition, tmp_path):
    # One feature version: a model saved by another is refused, naming the command that retrains it.
    models = tmp_path / "sub.models"
    solve(public(tiny_competition), "gbdt", tmp_path / "sub.csv", collections=["tile:xla"], options=QUIET)
    [settings] = models.glob("*/settings.json")
    assert '"version": 4' in settings.read_text()
    settings.write_text(settings.read_text().replace('"version": 4', '"version": 1'))
    with pytest.raises(SolveError, match=r"settings\.json: saved features are version 1, this code computes "
                                         r"version 4; retrain it: tpugraphs solve --method gbdt --collection "
                                         r"tile:xla --data PUBLIC_DIR --out SUB\.csv$"):
        solve(public(tiny_competition), "gbdt", tmp_path / "out.csv", collections=["tile:xla"], options=QUIET,
              model_dir=models, predict_only=True)


# A damaged model folder (a hand edit, a truncated copy): a usage error naming the file (or, for keys
# missing from a settings file, the folder) and what failed, never a traceback.
NOT_JSON = r"tile_xla/{}: not JSON \(Expecting .*\); write the model again \(run without --predict-only\)"


@pytest.mark.parametrize(("method", "file", "text", "refusal"), [
    ("random", "random.json", "{not json", NOT_JSON.format("random\\.json")),
    ("heuristic", "heuristic.json", "[3]", r"heuristic\.json: a JSON object was expected, not a list; write"),
    ("gbdt", "settings.json", "{not json", NOT_JSON.format("settings\\.json")),
    ("gbdt", "settings.json", "{}",
     r"tile_xla/settings\.json: a gbdt model of format version None; this kit reads format \d+ only; retrain "
     r"it: tpugraphs solve --method gbdt --collection NAME"),
    ("gbdt", "model.txt", "not a LightGBM model",
     r"tile_xla/model\.txt: LightGBM cannot read it \(LightGBMError: .+\); write the model again \(run "
     r"without --predict-only\)"),
    ("gnn", "gnn.json", "[1]", r"gnn\.json: a JSON object was expected, not a list; write the model again"),
    ("gnn", "gnn.pt", "truncated",
     r"tile_xla/gnn\.pt: torch cannot read it \(\w+: .+\); write the model again \(run without "
     r"--predict-only\)"),
], ids=["random-json", "heuristic-list", "gbdt-json", "gbdt-keys", "gbdt-booster", "gnn-list", "gnn-weights"])
def test_predict_only_refuses_a_damaged_model_in_words(tiny_competition, tmp_path, method, file, text,
                                                       refusal):
    models = tmp_path / "sub.models"
    params = QUICK_GNN if method == "gnn" else None
    solve(public(tiny_competition), method, tmp_path / "sub.csv", collections=["tile:xla"], options=QUIET,
          method_params=params)
    (models / "tile_xla" / file).write_text(text)
    with pytest.raises(SolveError, match=refusal):
        solve(public(tiny_competition), method, tmp_path / "out.csv", collections=["tile:xla"], options=QUIET,
              model_dir=models, predict_only=True)


def _stale(models: Path, name: str, old: str, new: str) -> None:
    for path in models.glob(f"*/{name}"):
        path.write_text(path.read_text().replace(old, new))


# A model saved with another rule or feature version (the first collection's, tile's, is met first): a
# usage error that names the file and says what to do, never a traceback.
@pytest.mark.parametrize(("method", "damage", "message"), [
    ("heuristic", lambda m: _stale(m, "heuristic.json", '"rule_version": 3', '"rule_version": 2'),
     r"heuristic\.json: saved heuristic rule version 2, this code has 3; run without --predict-only"),
    ("gbdt", lambda m: _stale(m, "settings.json", '"version": 4', '"version": 2'),
     r"settings\.json: saved features are version 2, this code computes version 4; retrain it: tpugraphs "
     r"solve --method gbdt --collection tile:xla"),
    ("gbdt", lambda m: _stale(m, "settings.json", '"feature_names": [', '"feature_names": ["gone", '),
     r"settings\.json: the saved feature names differ from this code's; retrain it: tpugraphs solve"),
], ids=["heuristic-rule", "gbdt-feature-version", "gbdt-feature-names"])
def test_predict_only_refuses_a_model_of_an_older_rule_or_feature_version(tiny_competition, tmp_path, method,
                                                                          damage, message):
    models = tmp_path / "sub.models"
    solve(public(tiny_competition), method, tmp_path / "sub.csv", collections=TWO, options=QUIET)
    damage(models)
    with pytest.raises(SolveError, match=message):
        solve(public(tiny_competition), method, tmp_path / "out.csv", collections=TWO, options=QUIET,
              model_dir=models, predict_only=True)
    assert main(["solve", "--data", str(public(tiny_competition)), "--method", method, "--predict-only",
                 "--model-dir", str(models), "--out", str(tmp_path / "cli.csv"), "--collection", TWO[0],
                 "--collection", TWO[1]]) == 2


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize(("sent", "status", "said"), [(signal.SIGINT, 130, "interrupted"),
                                                       (signal.SIGTERM, 143, "terminated")])
def test_a_stopped_solve_cleans_up_the_same_for_sigint_and_sigterm(tiny_competition, tmp_path, sent, status,
                                                                   said, jobs):
    """``kill`` (SIGTERM, what a scheduler or a container sends) leaves what Ctrl-C leaves: no staging
    folder, no half-written submission, the models of the previous run as they were; with --jobs 2 the
    signal reaches the parent alone, which stops its worker processes before it cleans up."""
    out, models = tmp_path / "sub.csv", tmp_path / "sub.models"
    # tile:xla trains in a moment and is staged; the layout collection is still training when the signal comes
    argv = ["solve", "--data", str(public(tiny_competition)), "--method", "gnn", "--out", str(out),
            "--collection", "tile:xla", "--collection", "layout:xla:random", "--quiet",
            "--param", "layout_epochs=400", "--jobs", jobs]
    from child_cli import argv as child

    running = subprocess.Popen(child(*argv), cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not list(models.glob(model_store.STAGING_PREFIX + "*")) and time.monotonic() < deadline:
            assert running.poll() is None, running.stderr.read()
            time.sleep(0.05)
        assert list(models.glob(model_store.STAGING_PREFIX + "*")), "the run never staged its models"
        time.sleep(0.5)  # well inside the layout collection's training
        workers = _children(running.pid)
        assert workers != [] or jobs == "1", "no worker processes seen"
        running.send_signal(sent)
        _, stderr = running.communicate(timeout=120)
    finally:
        if running.poll() is None:
            running.kill()
    assert running.returncode == status, stderr
    assert stderr.strip().splitlines()[-1] == said and "Traceback" not in stderr
    assert not list(models.glob(model_store.STAGING_PREFIX + "*"))
    assert not out.exists()
    alive = [pid for pid in workers or [] if Path(f"/proc/{pid}").exists()
             and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()]
    assert not alive, f"worker processes {alive} outlived the run"


def _children(pid: int) -> list[int] | None:
    """The worker processes ``pid`` started (Linux's /proc; None where it does not list them). Not
    multiprocessing's resource tracker, which leaves on its own once every other process has."""
    found = Path(f"/proc/{pid}/task/{pid}/children")
    if not found.exists():
        return None
    children = [int(child) for child in found.read_text().split()]
    return [child for child in children if b"spawn_main" in _cmdline(child)]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # gone already
        return b""
