"""The real-data check's plumbing (``benchmarks/bench_real.py``), on the tiny competition and the shipped
real protos; the full run is a benchmark (``make bench-real``)."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

import numpy as np
import pytest
from real_protos import KAGGLE_TREE, needs_kaggle_tree, needs_realdata

from benchmarks import bench_real
from competition.data.graphs import LayoutGraph, load_graph
from competition.stats import layout_taus, tau_interval
from solutions.kinds.layout import layout_cost


@needs_realdata()
def test_smoke_run_on_tiny_ranks_the_shipped_real_graphs_with_both_protocols(tmp_path, capsys):
    out = tmp_path / "results.json"
    argv = ["--real", str(tmp_path / "no-kaggle-tree"), "--scale", "tiny", "--synth-seeds", "0",
            "--seeds", "0", "--draws", "1", "--methods", "random,heuristic", "--synth-root",
            str(tmp_path / "synth"), "--out", str(out), "--compare", "random:heuristic"]
    assert bench_real.main(argv) == 0
    printed = capsys.readouterr().out
    assert "no real Kaggle tree" in printed and "### transfer" in printed and "### within" in printed
    # The proto alone is one program: nothing to train on across programs, and the run says so.
    assert "across programs: skipped, the labelled real layout graphs hold fewer than two programs" in printed
    results = json.loads(out.read_text())
    cells = {(c["graph"], c["method"], c["protocol"]) for c in results["cells"]}
    layout = "layout:xla:default:proto/module_tuning_data_layout"
    for protocol in ("transfer", "within"):
        for method in ("random", "heuristic"):
            assert (layout, method, protocol) in cells
    for cell in results["cells"]:
        assert cell["low"] <= cell["estimate"] <= cell["high"], cell
        assert -1 <= cell["estimate"] <= 1 and cell["runs"], cell
        assert cell["units"] == [{"transfer": "competition 0", "within": "draw 0"}[cell["protocol"]]], cell
    # --compare: the paired tables follow the per-method ones.
    assert "### transfer: heuristic - random, paired run by run" in printed
    assert f"| {layout} |" in printed.split("### within: heuristic - random, paired run by run")[1]
    # The proto holds configs measured twice: its noise, and every layout cell scored beyond it too.
    assert f"measurement noise of {layout}: 0.0030 % (22 pairs of repeated measurements)" in printed
    assert "#### within, on the pairs of configs apart by more than the measurement noise" in printed
    assert ("### within: heuristic - random, paired run by run, on the pairs apart by more than the "
            "measurement noise") in printed
    for cell in results["cells"]:
        beyond = cell.get("beyond_noise")
        assert (beyond is not None) == (cell["graph"] == layout), cell
        if beyond is not None:
            assert len(beyond["runs"]) == len(cell["runs"])
            assert beyond["low"] <= beyond["estimate"] <= beyond["high"]


def test_transfer_cells_carry_the_training_time_of_the_models_that_ranked_them(monkeypatch):
    class Constant:
        def predict(self, collection, graph):
            return np.arange(graph.num_configs, dtype=np.float64)

    def slow_fit(*args):
        time.sleep(0.02)
        return Constant()

    monkeypatch.setattr(bench_real, "fit_method", slow_fit)
    real, _ = bench_real.find_real_graphs(None)  # the protos the kit ships
    competitions = {0: Path("a"), 1: Path("b")}
    cells = bench_real.run_transfer(real, ["random"], competitions, [0, 1], time_budget_s=None,
                                    say=lambda line: None)
    assert cells and all(cell.fit_seconds >= 4 * 0.02 for cell in cells)  # 2 competitions x 2 seeds


@pytest.mark.parametrize(("argv", "message"), [
    (["--protocols", "transfer,magic"], "--protocols 'transfer,magic': expected a comma-separated list of"),
    (["--protocols", ","], "expected a comma-separated list of transfer, within, across"),
    (["--folds", "1"], "--folds 1: needs 2 or more"),
    (["--methods", "random,heuristic", "--compare", "random:gbdt"],
     "--compare 'random:gbdt': expected BASE:NEW"),
    (["--methods", "random,heuristic", "--compare", "random"], "two different methods of --methods"),
    (["--methods", "random,heuristic", "--compare", "random:random"], "two different methods of --methods"),
])
def test_bad_protocols_and_folds_are_usage_errors(argv, message, capsys):
    assert bench_real.main([*argv, "--no-protos", "--real", "/nonexistent"]) == 2
    assert message in capsys.readouterr().err


def test_an_only_filter_that_matches_no_graph_is_a_usage_error(capsys):
    assert bench_real.main(["--only", "no-such-graph", "--protocols", "within"]) == 2
    err = capsys.readouterr().err
    assert "--only 'no-such-graph': none of the" in err and "names look like layout:" in err


def test_unknown_method_is_a_usage_error(capsys):
    assert bench_real.main(["--methods", "gbdt,magic", "--no-protos", "--real", "/nonexistent"]) == 2
    assert "unknown method(s) magic" in capsys.readouterr().err


def test_variant_values_are_read_by_the_method_schema(monkeypatch, capsys):
    monkeypatch.setattr(bench_real, "VARIANTS", dict(bench_real.VARIANTS))  # main registers variants
    # numbers and booleans arrive typed (as `tpugraphs solve --param` reads them), so the method accepts them
    argv = ["--variant", "quick:gbdt:num_boost_round=20,linear_gain=false", "--methods", "magic",
            "--no-protos", "--real", "/nonexistent"]
    assert bench_real.main(argv) == 2  # stops at the unknown method, after reading the variant
    method, params = bench_real.VARIANTS["quick"]
    assert method == "gbdt" and params == {"num_boost_round": 20, "linear_gain": False}
    capsys.readouterr()


@pytest.mark.parametrize(("variant", "message"), [
    ("quick:gbdt:num_boost_round=many", "setting num_boost_round=many: not an integer"),
    ("quick:gbdt:boost_rounds=20", "--method gbdt has no such setting"),
    ("quick:gbdt", "expected NAME:METHOD:KEY=VALUE"),
    ("quick:gbdt:num_boost_round", "expected NAME:METHOD:KEY=VALUE"),
])
def test_a_bad_variant_is_a_usage_error_naming_it(monkeypatch, capsys, variant, message):
    monkeypatch.setattr(bench_real, "VARIANTS", dict(bench_real.VARIANTS))
    argv = ["--variant", variant, "--methods", "quick", "--no-protos", "--real", "/nonexistent"]
    assert bench_real.main(argv) == 2
    err = capsys.readouterr().err
    assert f"--variant {variant!r}" in err and message in err


def test_config_splits_are_disjoint_and_cover_every_config():
    rng = np.random.default_rng(0)
    train, valid, test = bench_real.split_configs(101, rng)
    assert len(train) + len(valid) + len(test) == 101
    assert not set(train) & set(valid) and not set(train) & set(test) and not set(valid) & set(test)


def _layout_graph(settings: np.ndarray, runtimes: np.ndarray) -> LayoutGraph:
    c = len(runtimes)
    return LayoutGraph(node_feat=np.zeros((2, 140), np.float32), node_opcode=np.ones(2, np.uint8),
                       edge_index=np.array([[1, 0]]), config_runtime=np.asarray(runtimes, np.int64),
                       node_config_feat=np.broadcast_to(settings, (c, 1, 18)).astype(np.float32).copy(),
                       node_config_ids=np.array([1]), node_splits=np.array([[0]]))


@pytest.mark.parametrize(("settings", "runtimes", "reason"), [
    (np.full(18, -1), [100, 100, 100], "all runtimes equal"),
    (np.full(18, -1), [100, 101, 100], "every config has the same settings"),
    (np.full(18, -1), [100], "fewer than 2 configs"),
])
def test_graphs_with_nothing_to_rank_are_left_out_with_the_reason(settings, runtimes, reason):
    assert reason in bench_real._signal(_layout_graph(settings, np.asarray(runtimes)))


def test_a_graph_with_different_settings_has_signal():
    graph = _layout_graph(np.full(18, -1), [100, 120])
    graph.node_config_feat[1, 0, 0] = 0
    assert bench_real._signal(graph) is None


def test_the_interval_brackets_the_mean_tau_and_a_perfect_ranking_scores_one():
    runtimes = np.arange(1.0, 201.0)
    perfect = tau_interval([runtimes.copy()], [runtimes], draws=200)
    assert perfect.estimate == pytest.approx(1.0) and perfect.low > 0.99  # resampled duplicates tie
    rng = np.random.default_rng(1)
    noisy = [runtimes + rng.normal(0, 40, size=200) for _ in range(3)]
    ci = tau_interval(noisy, [runtimes] * 3, draws=500)
    assert ci.low < ci.estimate < ci.high and 0.3 < ci.estimate < 0.95


def test_collections_of_several_graphs_get_the_mean_over_graphs_with_an_interval_over_graphs():
    def cell(graph, method, estimate, protocol="transfer"):
        return bench_real.Cell(graph, method, protocol, estimate=estimate)

    cells = [cell("a", "gbdt", 0.2), cell("b", "gbdt", 0.4), cell("c", "gbdt", 0.9), cell("a", "gnn", 0.1),
             cell("d", "gbdt", 0.5), cell("a", "gbdt", -1.0, protocol="within")]
    collection_of = {"a": "layout:xla:random", "b": "layout:xla:random", "c": "layout:xla:random",
                     "d": "layout:nlp:random"}
    summary = bench_real.collection_summary(cells, "transfer", collection_of)
    assert list(summary) == ["layout:xla:random"]  # one graph of nlp: its row is the graph's own
    assert list(summary["layout:xla:random"]) == ["gbdt"]  # the gnn ranked one graph there
    gbdt = summary["layout:xla:random"]["gbdt"]
    assert gbdt["graphs"] == 3 and gbdt["estimate"] == pytest.approx(0.5)
    # the t interval over the 3 graphs (as tpugraphs report gives), not over configs
    from scipy import stats as scipy_stats

    half = scipy_stats.t.ppf(0.975, 2) * np.std([0.2, 0.4, 0.9], ddof=1) / np.sqrt(3)
    assert (gbdt["low"], gbdt["high"]) == pytest.approx((0.5 - half, 0.5 + half))
    table = bench_real.collection_table(summary, ["heuristic", "gbdt"])
    assert "| layout:xla:random | 3 |  | +0.500 [" in table
    assert "layout:xla:random: fewer than 10 graphs, so the interval" in table


@needs_kaggle_tree
def test_the_real_kaggle_tree_gives_its_labelled_graphs_and_leaves_out_the_ones_without_signal():
    graphs, notes = bench_real.find_real_graphs(KAGGLE_TREE, protos=False)
    names = {g.name: g for g in graphs}
    assert "layout:xla:default:train/unet3d" in names
    assert "layout:xla:random:valid/unet_3d.4x4.bf16" in names
    # The rnn graph's 20 configs carry identical settings: nothing to rank.
    rnn = names["layout:xla:random:train/openai_v0_rnn_optimized"]
    assert rnn.no_signal and "same settings" in rnn.no_signal
    assert not any("test/" in name for name in names)  # test graphs have hidden (zero) runtimes
    assert any("tile kernel" in note for note in notes)  # the 2-config kernel scores 1 whatever the ranking


@needs_kaggle_tree
def test_a_default_search_graph_is_paired_with_its_programs_random_search():
    graphs, _ = bench_real.find_real_graphs(KAGGLE_TREE, protos=False)
    names = {g.name: g for g in graphs}
    default = names["layout:xla:default:valid/unet_3d.4x4.bf16"]
    assert default.random_search == names["layout:xla:random:valid/unet_3d.4x4.bf16"].graphs.paths[0]
    assert names["layout:xla:default:train/unet3d"].random_search is None  # no random search at hand
    assert names["layout:xla:random:valid/unet_3d.4x4.bf16"].random_search is None


def test_the_within_tree_puts_the_programs_random_search_whole_beside_the_train_part(tmp_path):
    from competition.collections import COLLECTION_BY_NAME
    from solutions.methods.base import SplitSource

    rng = np.random.default_rng(0)
    settings = rng.integers(-1, 3, size=(60, 1, 18)).astype(np.float32)
    default = _layout_graph(np.full(18, -1), rng.integers(100, 200, size=60))
    default.node_config_feat[:] = settings
    sibling = _layout_graph(np.full(18, -1), rng.integers(100, 200, size=7))
    collection = COLLECTION_BY_NAME["layout:xla:default"]
    real = bench_real.RealGraph("layout:xla:default:valid/g", collection, [default], "kaggle",
                                random_search=sibling)
    root, tests = bench_real.within_tree(real, 0, tmp_path)
    own = SplitSource(root, collection, "train")
    beside = SplitSource(root, bench_real.random_search_of(collection), "train")
    assert beside.collection.name == "layout:xla:random"
    counts = sorted(g.num_configs for source in (own, beside) for _, g in source.graphs())
    assert counts == [7, 36]  # the sibling whole, and the default search's train part (60 %)
    assert sum(t.num_configs for t in tests) == 12


def test_within_holds_one_draw_on_disk_and_writes_no_test_split(tmp_path, monkeypatch):
    """A graph of 100,000 configs must not be written once per draw: each draw's tree is made, fitted on
    and removed before the next, and its test part stays in memory (the methods never read one)."""
    from competition.collections import COLLECTION_BY_NAME
    from competition.data.tree import split_dir

    collection = COLLECTION_BY_NAME["layout:xla:random"]
    rng = np.random.default_rng(0)
    graph = _layout_graph(np.full(18, -1), rng.integers(100, 10_000, size=100))
    graph.node_config_feat[:, 0, 0] = graph.config_runtime  # a setting that gives the runtime away
    real = bench_real.RealGraph("layout:xla:random:valid/g", collection, [graph], "kaggle")
    work = tmp_path / "work"
    work.mkdir()
    made = itertools.count()
    monkeypatch.setattr(bench_real.tempfile, "mkdtemp", lambda prefix: str(work / f"{prefix}{next(made)}"))
    seen: list[tuple[str, int]] = []

    class Perfect:  # ranks by the setting that is the runtime
        def predict(self, collection, g):
            return g.node_config_feat[:, 0, 0]

    def fit(method, params, root, collection_, seed, budget):
        seen.append((method, seed))
        assert [p.name for p in work.iterdir()] == [root.name]  # only this draw's tree exists
        assert not split_dir(root, collection, "test").exists()
        assert [load_graph(p).num_configs for p in split_dir(root, collection, "train").glob("*.npz")] == [60]
        return Perfect()

    monkeypatch.setattr(bench_real, "fit_method", fit)
    cells = bench_real.run_within([real], ["gbdt", "gnn"], [0, 1], draws=3, time_budget_s=None,
                                  say=lambda *_: None)
    assert seen == [(m, s) for _ in range(3) for m in ("gbdt", "gnn") for s in (0, 1)]
    assert list(work.iterdir()) == []  # every draw's tree removed
    assert [(c.method, c.runs) for c in cells] == [("gbdt", [1.0] * 6), ("gnn", [1.0] * 6)]


# -- across programs ----------------------------------------------------------------------------------


def _program(nodes: int, runtimes: np.ndarray, seed: int = 0) -> LayoutGraph:
    """A layout graph of a chain of ``nodes`` nodes (the program), one configurable node, random settings."""
    rng = np.random.default_rng(seed)
    c = len(runtimes)
    return LayoutGraph(node_feat=np.zeros((nodes, 140), np.float32), node_opcode=np.ones(nodes, np.uint8),
                       edge_index=np.array([[k + 1, k] for k in range(nodes - 1)]),
                       config_runtime=np.asarray(runtimes, np.int64),
                       node_config_feat=rng.integers(-1, 3, size=(c, 1, 18)).astype(np.float32),
                       node_config_ids=np.array([1]), node_splits=np.array([[0]]))


def _real(name: str, collection: str, graph: LayoutGraph) -> bench_real.RealGraph:
    from competition.collections import COLLECTION_BY_NAME

    return bench_real.RealGraph(name, COLLECTION_BY_NAME[collection], [graph], "kaggle")


def test_a_program_is_its_graph_not_its_configs():
    a = _program(5, np.arange(10) + 100, seed=0)
    same_program = _program(5, np.arange(30) + 7, seed=1)  # another search: other configs and runtimes
    assert bench_real.program_key(a) == bench_real.program_key(same_program)
    assert bench_real.program_key(a) != bench_real.program_key(_program(6, np.arange(10) + 100))
    rewired = _program(5, np.arange(10) + 100)
    rewired.edge_index = rewired.edge_index[:, ::-1].copy()
    assert bench_real.program_key(a) != bench_real.program_key(rewired)


def test_a_programs_graphs_share_a_fold_and_folds_never_outnumber_programs():
    graphs = [_real(f"layout:xla:default:train/p{n}", "layout:xla:default", _program(n, np.arange(10) + 1))
              for n in (3, 4, 5)]
    graphs.append(_real("layout:xla:random:train/p4", "layout:xla:random", _program(4, np.arange(20) + 1)))
    folds = bench_real.program_folds(graphs, folds=5)
    assert len(folds) == 3  # three programs
    fold_of = {g.name: k for k, fold in enumerate(folds) for g in fold}
    assert fold_of["layout:xla:default:train/p4"] == fold_of["layout:xla:random:train/p4"]
    assert len(bench_real.program_folds(graphs, folds=2)) == 2


def test_a_held_out_graph_trains_on_its_collection_else_on_the_other_search_of_its_source():
    default = _real("layout:xla:default:train/a", "layout:xla:default", _program(3, np.arange(10) + 1))
    random = _real("layout:xla:random:train/b", "layout:xla:random", _program(4, np.arange(10) + 1))
    nlp = _real("layout:nlp:random:train/c", "layout:nlp:random", _program(5, np.arange(10) + 1))
    held = _real("layout:xla:random:valid/d", "layout:xla:random", _program(6, np.arange(10) + 1))
    assert bench_real.across_training(held, [default, random, nlp]) == ([random], "its collection")
    assert bench_real.across_training(held, [default, nlp]) == ([default], "the other search of its source")
    assert bench_real.across_training(held, [nlp]) == ([], "the other search of its source")


def test_the_across_tree_splits_each_training_graph_into_train_and_valid(tmp_path, monkeypatch):
    from competition.collections import COLLECTION_BY_NAME
    from solutions.methods.base import SplitSource

    monkeypatch.setattr(bench_real, "ACROSS_MAX_CONFIGS", 40)
    collection = COLLECTION_BY_NAME["layout:xla:random"]
    training = [_real("layout:xla:default:train/a", "layout:xla:default", _program(3, np.arange(50) + 1)),
                _real("layout:xla:default:train/b", "layout:xla:default", _program(4, np.arange(20) + 1))]
    pool = bench_real.AcrossPool(tmp_path / "files", 0)
    root = bench_real.across_tree(collection, training, 0, tmp_path / "tree", pool)
    train = sorted(g.num_configs for _, g in SplitSource(root, collection, "train").graphs())
    valid = sorted(g.num_configs for _, g in SplitSource(root, collection, "valid").graphs())
    assert train == [16, 32] and valid == [4, 8]  # 80 / 20 of 20 and of the 40 kept of 50
    assert pool.files == {}  # two programs: their configs are split, nothing goes through the pool
    again = bench_real.across_tree(collection, training, 0, tmp_path / "again", pool)
    first = [g.config_runtime for _, g in SplitSource(root, collection, "valid").graphs()]
    second = [g.config_runtime for _, g in SplitSource(again, collection, "valid").graphs()]
    assert all(np.array_equal(x, y) for x, y in zip(first, second, strict=True))  # the draw seeds it


def _on_file(tmp_path: Path, name: str, graph: LayoutGraph) -> bench_real.RealGraph:
    """A RealGraph read from its file, as a Kaggle tree's are."""
    from competition.collections import COLLECTION_BY_NAME
    from competition.data.graphs import save_graph

    path = tmp_path / "release" / f"{name.replace(':', '_').replace('/', '_')}.npz"
    save_graph(graph, path)
    return bench_real.RealGraph(name, COLLECTION_BY_NAME["layout:xla:random"],
                                bench_real.GraphFiles([path], "layout"), "kaggle")


def test_with_enough_programs_whole_programs_are_valid_and_the_files_are_linked_not_copied(tmp_path,
                                                                                           monkeypatch):
    from competition.collections import COLLECTION_BY_NAME
    from competition.data.tree import split_dir
    from solutions.methods.base import SplitSource

    monkeypatch.setattr(bench_real, "ACROSS_MAX_CONFIGS", 40)
    collection = COLLECTION_BY_NAME["layout:xla:random"]
    training = [_on_file(tmp_path, f"layout:xla:random:train/p{n}", _program(n, np.arange(30) + n))
                for n in range(3, 12)]
    training.append(_on_file(tmp_path, "layout:xla:random:train/big", _program(20, np.arange(100) + 1)))
    proto = _program(21, np.arange(25) + 1)
    training.append(_real("layout:xla:random:train/proto", "layout:xla:random", proto))
    pool = bench_real.AcrossPool(tmp_path / "files", 0)
    root = bench_real.across_tree(collection, training, 0, tmp_path / "tree", pool)
    valid = sorted(split_dir(root, collection, "valid").iterdir())
    train = sorted(split_dir(root, collection, "train").iterdir())
    assert len(valid) == 2 and len(train) == 9  # a fifth of 11 programs, whole
    links = {link.resolve() for link in valid + train}
    assert all(link.is_symlink() for link in valid + train)
    # A graph within the limit is its own file; the large one a 40-config sample; the in-memory one written.
    assert {g.graphs.paths[0].resolve() for g in training[:9]} <= links
    written = [pool.files[g.name] for g in training[9:]]
    assert pool.copies == 2 and all(path.parent == tmp_path / "files" for path in written)
    sizes = {g.num_configs for _, g in SplitSource(root, collection, "train").graphs()}
    sizes |= {g.num_configs for _, g in SplitSource(root, collection, "valid").graphs()}
    assert sizes == {30, 40, 25}
    # Another fold's tree in the same draw links the same files: nothing is written twice.
    bench_real.across_tree(collection, training[1:], 0, tmp_path / "tree2", pool)
    assert pool.copies == 2
    # The draw picks the valid programs.
    picked = set()
    for draw in range(4):
        tree = bench_real.across_tree(collection, training, draw, tmp_path / f"d{draw}",
                                      bench_real.AcrossPool(tmp_path / f"f{draw}", draw))
        picked.add(tuple(sorted(p.name for p in split_dir(tree, collection, "valid").iterdir())))
    assert len(picked) > 1


@needs_kaggle_tree
def test_across_programs_ranks_every_real_layout_graph_with_models_of_the_other_program(capsys, monkeypatch):
    def no_copies(*args):
        raise AssertionError("a method that learns nothing needs no training tree")

    monkeypatch.setattr(bench_real, "across_tree", no_copies)
    graphs, _ = bench_real.find_real_graphs(KAGGLE_TREE, protos=True)
    ranked = [g for g in graphs if g.no_signal is None]
    cells = bench_real.run_across(ranked, ["heuristic"], seeds=[0], draws=1, folds=5, time_budget_s=None)
    printed = capsys.readouterr().out
    # unet3d and unet_3d.4x4.bf16 (with the proto, measured on the same program) are the two programs.
    assert "fold 1 of 2" in printed and "fold 2 of 2" in printed
    assert "trained on the other search of its source: layout:xla:default:train/unet3d" in printed
    assert {c.graph for c in cells} == {g.name for g in ranked if g.collection.task_name == "layout"}
    # The heuristic learns nothing, so each graph is ranked as the rule alone ranks it.
    for cell in cells:
        graph = next(g for g in ranked if g.name == cell.graph).graphs[0]
        expected = layout_taus([layout_cost(graph)], [graph.config_runtime.astype(np.float64)])
        assert cell.runs == [round(float(expected[0]), 4)]


def test_a_kaggle_trees_layout_graphs_are_read_when_used_and_test_graphs_are_skipped(tmp_path):
    from competition.collections import COLLECTION_BY_NAME
    from competition.data.graphs import save_graph
    from competition.data.tree import split_dir

    default, random = COLLECTION_BY_NAME["layout:xla:default"], COLLECTION_BY_NAME["layout:xla:random"]
    labelled = _program(4, np.arange(30) + 100, seed=0)
    save_graph(labelled, split_dir(tmp_path, default, "valid") / "p.npz")
    save_graph(_program(4, np.arange(12) + 100, seed=1), split_dir(tmp_path, random, "valid") / "p.npz")
    save_graph(_program(5, np.zeros(10)), split_dir(tmp_path, default, "test") / "hidden.npz")
    graphs, _ = bench_real.find_real_graphs(tmp_path, protos=False)
    names = {g.name: g for g in graphs}
    assert set(names) == {"layout:xla:default:valid/p", "layout:xla:random:valid/p"}  # no test graph
    real = names["layout:xla:default:valid/p"]
    assert isinstance(real.graphs, bench_real.GraphFiles) and real.num_configs == 30
    assert np.array_equal(real.graphs[0].config_runtime, labelled.config_runtime)  # read from its file
    # Its program's random search is its file, whole in the within-graph training split (linked, not copied).
    assert real.random_search == split_dir(tmp_path, random, "valid") / "p.npz"
    root, tests = bench_real.within_tree(real, 0, tmp_path / "within")
    linked = split_dir(root, random, "train") / "k0.npz"
    assert linked.read_bytes() == real.random_search.read_bytes()
    assert sum(t.num_configs for t in tests) == 6


def test_tile_kernels_too_small_to_rank_are_left_out_in_one_note(tmp_path):
    from competition.collections import COLLECTION_BY_NAME
    from competition.data.graphs import TileGraph, save_graph
    from competition.data.tree import split_dir

    tile = COLLECTION_BY_NAME["tile:xla"]
    for k in range(5):
        kernel = TileGraph(node_feat=np.zeros((2, 140), np.float32), node_opcode=np.ones(2, np.uint8),
                           edge_index=np.array([[1, 0]]), config_runtime=np.array([10, 20, 30]),
                           config_feat=np.zeros((3, 24), np.float32),
                           config_runtime_normalizers=np.full(3, 10))
        save_graph(kernel, split_dir(tmp_path, tile, "train") / f"k{k}.npz")
    graphs, notes = bench_real.find_real_graphs(tmp_path, protos=False)
    assert graphs == []
    [note] = [n for n in notes if "tile kernel" in n]
    assert note.startswith("left out: 5 tile kernel(s) with too few configs to rank")
    assert "k0 (3 configs), k1 (3 configs), k2 (3 configs) and 2 more" in note


@pytest.mark.parametrize(("args", "flags"), [
    ([], "--compare heuristic:gbdt --compare heuristic:gnn"),
    (["REAL_COMPARE=gbdt:gnn"], "--compare gbdt:gnn"),
    (["REAL_COMPARE="], None),
])
def test_make_bench_real_compares_the_learned_methods_with_the_heuristic(args, flags):
    import shutil
    import subprocess

    if shutil.which("make") is None:
        pytest.skip("no make on this machine")
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(["make", "-n", "bench-real", *args], cwd=root, capture_output=True, text=True,
                          check=True)
    lines = done.stdout.replace("\\\n", " ").splitlines()  # the recipe's continued line, joined
    [line] = [line for line in lines if "benchmarks.bench_real" in line]
    if flags is None:
        assert "--compare" not in line
    else:
        assert flags in " ".join(line.split())


def test_a_comparison_that_cannot_be_made_loses_no_results(tmp_path, capsys):
    """Nothing measured (no graphs here): the run still writes its results, and --compare says why it
    has nothing to pair in one line."""
    out = tmp_path / "results.json"
    argv = ["--no-protos", "--real", str(tmp_path / "none"), "--protocols", "across", "--methods",
            "random,heuristic", "--compare", "random:heuristic", "--out", str(out)]
    assert bench_real.main(argv) == 0
    assert json.loads(out.read_text())["cells"] == []
    assert "--compare random:heuristic: no method 'random' in these results (they hold none)" in (
        capsys.readouterr().out)


def test_a_layout_graph_knows_its_noise_from_its_configs_measured_twice():
    real, _ = bench_real.find_real_graphs(None)  # the protos the kit ships
    proto = next(r for r in real if r.name.startswith("layout:"))
    tiles = next(r for r in real if r.name.startswith("tile:"))
    assert proto.noise is not None and (proto.noise.pairs, proto.noise.configs) == (22, 20)
    assert 0.40 < proto.beyond_share < 0.42  # most of its pairs differ by less than the noise
    assert tiles.noise is None  # tile kernels: scored by their own metric, no noise read
    # The same graph keeping one measurement of each config has no noise to read.
    once = bench_real.RealGraph("g", proto.collection, [], "test")
    graph = proto.graphs[0]
    first = np.unique(graph.node_config_feat.reshape(graph.num_configs, -1), axis=0, return_index=True)[1]
    once.measure_noise(graph.select_configs(np.sort(first)))
    assert once.noise is None and np.isnan(once.beyond_share)


def test_the_beyond_noise_table_names_each_graphs_noise():
    real, _ = bench_real.find_real_graphs(None)
    proto = next(r for r in real if r.name.startswith("layout:"))
    cell = bench_real.Cell(proto.name, "gbdt", "within", runs=[0.3],
                           beyond_noise={"runs": [0.7], "estimate": 0.7, "low": 0.5, "high": 0.9})
    table = bench_real.noise_table([cell], ["heuristic", "gbdt"], "within", {proto.name: proto})
    assert f"| {proto.name} | 0.0030 %, 41 % of its pairs |  | +0.700 [+0.50, +0.90] |" in table
    assert bench_real.noise_table([cell], ["gbdt"], "transfer", {proto.name: proto}) is None
    assert cell.to_json()["beyond_noise"]["runs"] == [0.7]
    assert "beyond_noise" not in bench_real.Cell("g", "gbdt", "within").to_json()
