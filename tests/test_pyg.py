"""solutions.pyg: the PyG dataset, its batches, the OGB-style evaluator and the submission helper."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from real_protos import KAGGLE_TREE, needs_kaggle_tree  # noqa: E402
from torch_geometric import transforms as T  # noqa: E402
from torch_geometric.loader import DataLoader  # noqa: E402

from competition.cli import main  # noqa: E402
from competition.collections import COLLECTION_NAMES, COLLECTIONS, SPLITS  # noqa: E402
from competition.data.graphs import expected_from_data_dir, list_split, load_graph  # noqa: E402
from competition.data.prepare import prepare_competition  # noqa: E402
from competition.data.tree import split_dir  # noqa: E402
from competition.scoring import graph_scores, load_solution, score_submission  # noqa: E402
from competition.submission import validate_submission  # noqa: E402
from solutions.pruning import OneHop  # noqa: E402
from solutions.pyg import (  # noqa: E402
    Evaluator,
    PredictionError,
    TpuGraphsDataset,
    collections_dataset,
    write_submission,
)

LAYOUT = "layout:xla:random"
LAYOUTS = [name for name in COLLECTION_NAMES if name.startswith("layout:")]


@pytest.fixture(scope="module")
def root(tiny_competition: Path) -> Path:
    return tiny_competition


def _random_predictions(evaluator: Evaluator, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    ids, preds = [], []
    for row_id, n in evaluator.expected_configs.items():
        ids += [row_id] * n
        preds.append(rng.normal(size=n))
    return {"graph_id": ids, "y_pred": np.concatenate(preds)}


# -- one Data per graph ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", COLLECTION_NAMES)
def test_data_holds_the_released_arrays(root: Path, name: str) -> None:
    dataset = TpuGraphsDataset(root, name, "valid")
    path = list_split(root / "public", dataset.collection, "valid")[0]
    graph = load_graph(path)
    data = dataset[0]
    assert data.graph_id == dataset.collection.row_id(path.stem) == dataset.graph_ids[0]
    np.testing.assert_array_equal(data.x.numpy(), graph.node_feat)
    np.testing.assert_array_equal(data.opcode.numpy(), graph.node_opcode)
    # PyG order: [producer, consumer]
    np.testing.assert_array_equal(data.edge_index.numpy(), graph.edge_index[:, ::-1].T)
    np.testing.assert_array_equal(data.config_id.numpy(), np.arange(graph.num_configs))  # valid: every config
    np.testing.assert_array_equal(data.runtime.numpy(), graph.config_runtime)
    np.testing.assert_allclose(data.y.numpy(), graph.ranking_target().astype(np.float32))
    k = graph.num_configs
    if dataset.collection.task.config_per_node:
        nc = graph.num_configurable_nodes
        np.testing.assert_array_equal(data.node_config_feat.view(k, nc, 18).numpy(), graph.node_config_feat)
        np.testing.assert_array_equal(data.config_node_index.numpy(), np.tile(graph.node_config_ids, k))
        np.testing.assert_array_equal(data.config_index.numpy(), np.repeat(np.arange(k), nc))
        np.testing.assert_array_equal(data.node_splits.numpy(), graph.computation_starts)
    else:
        np.testing.assert_array_equal(data.config_feat.numpy(), graph.config_feat)
        np.testing.assert_array_equal(data.normalizer.numpy(), graph.config_runtime_normalizers)


def test_test_graphs_carry_zero_targets(root: Path) -> None:
    data = TpuGraphsDataset(root, LAYOUT, "test")[0]
    assert not data.y.any() and not data.runtime.any()


def test_train_draws_are_seeded_and_fresh_per_access(root: Path) -> None:
    def draws(seed: int) -> list[list[int]]:
        dataset = TpuGraphsDataset(root, LAYOUT, "train", configs_per_graph=3, seed=seed)
        return [dataset[0].config_id.tolist() for _ in range(4)]

    first = draws(0)
    assert first == draws(0)
    assert first != draws(1)
    assert len({tuple(d) for d in first}) > 1  # each access draws afresh
    assert all(len(d) == 3 and d == sorted(set(d)) for d in first)
    dataset = TpuGraphsDataset(root, LAYOUT, "train", configs_per_graph=3)
    dataset[0]
    dataset.set_epoch(1)
    assert dataset[0].config_id.tolist() != first[0]  # a new epoch, a new draw
    n = load_graph(dataset.files.paths[0]).num_configs
    everything = TpuGraphsDataset(root, LAYOUT, "train", configs_per_graph=10**6)[0]
    assert everything.config_id.tolist() == list(range(n))
    assert TpuGraphsDataset(root, LAYOUT, "valid", configs_per_graph=3).configs_per_graph is None


def test_drawn_configs_match_the_file(root: Path) -> None:
    dataset = TpuGraphsDataset(root, LAYOUT, "train", configs_per_graph=4, seed=3)
    graph = load_graph(dataset.files.paths[1])
    data = dataset[1]
    drawn = data.config_id.numpy()
    np.testing.assert_array_equal(data.node_config_feat.view(4, -1, 18).numpy(),
                                  graph.node_config_feat[drawn])
    np.testing.assert_array_equal(data.runtime.numpy(), graph.config_runtime[drawn])


# -- batching --------------------------------------------------------------------------------------


def _check_batch(batch, parts) -> None:
    """Every index of ``batch`` points where the same index of its own graph ``parts[g]`` points."""
    assert batch.num_graphs == len(parts)
    node_offset = np.cumsum([0] + [p.num_nodes for p in parts])
    config_offset = np.cumsum([0] + [p.num_configs for p in parts])
    # graph of each node, config and row
    assert torch.equal(batch.config_batch,
                       torch.cat([torch.full((p.num_configs,), g) for g, p in enumerate(parts)]))
    assert torch.equal(batch.batch[batch.config_node_index], batch.config_batch[batch.config_index])
    assert torch.equal(batch.batch[batch.node_config_ids],
                       torch.cat([torch.full((p.node_config_ids.numel(),), g) for g, p in enumerate(parts)]))
    for g, part in enumerate(parts):
        rows = batch.config_batch[batch.config_index] == g
        assert torch.equal(batch.x[batch.config_node_index[rows]], part.x[part.config_node_index])
        assert torch.equal(batch.config_index[rows] - int(config_offset[g]), part.config_index)
        assert torch.equal(batch.node_config_feat[rows], part.node_config_feat)
        assert torch.equal(batch.x[batch.node_config_ids[batch.batch[batch.node_config_ids] == g]],
                           part.x[part.node_config_ids])
        edges = batch.edge_index[:, batch.batch[batch.edge_index[0]] == g] - int(node_offset[g])
        assert torch.equal(edges, part.edge_index)
        assert torch.equal(batch.y[batch.config_batch == g], part.y)
        assert batch.graph_id[g] == part.graph_id


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.permutations(range(4)), size=st.integers(1, 4), k=st.sampled_from([None, 1, 3]),
       prune=st.booleans())
def test_a_batch_keeps_every_index_on_its_own_graph(root: Path, order, size, k, prune) -> None:
    dataset = TpuGraphsDataset(root, "layout:nlp:random", "train", configs_per_graph=k,
                               transform=OneHop() if prune else None)
    chosen = [i for i in order if i < len(dataset)][:size]
    subset = dataset[chosen]
    dataset.set_epoch(0)  # the loader's pass draws what the parts below draw
    batch = next(iter(DataLoader(subset, batch_size=len(chosen))))
    dataset.set_epoch(0)
    _check_batch(batch, [dataset[i] for i in chosen])


def test_tile_batches_keep_configs_on_their_graph(root: Path) -> None:
    dataset = TpuGraphsDataset(root, "tile:xla", "valid")
    batch = next(iter(DataLoader(dataset, batch_size=3)))
    parts = [dataset[i] for i in range(3)]
    for g, part in enumerate(parts):
        assert torch.equal(batch.config_feat[batch.config_batch == g], part.config_feat)
        assert torch.equal(batch.config_id[batch.config_batch == g], part.config_id)


def test_workers_and_several_collections_batch_alike(root: Path) -> None:
    """A loader with worker processes gives the batches of one without; collections mix in a batch."""
    dataset = TpuGraphsDataset(root, LAYOUT, "valid", transform="onehop")
    alone = list(DataLoader(dataset, batch_size=2))
    workers = list(DataLoader(dataset, batch_size=2, num_workers=2))
    assert [b.graph_id for b in alone] == [b.graph_id for b in workers]
    assert all(torch.equal(a.node_config_feat, w.node_config_feat)
               for a, w in zip(alone, workers, strict=True))
    both = collections_dataset(root, ["layout:xla:random", "layout:nlp:random"], "valid")
    assert len(both) == len(dataset) + len(TpuGraphsDataset(root, "layout:nlp:random", "valid"))
    batch = next(iter(DataLoader(both, batch_size=len(both))))
    assert {i.rsplit(":", 1)[0] for i in batch.graph_id} == {"layout:xla:random", "layout:nlp:random"}
    assert torch.equal(batch.batch[batch.config_node_index], batch.config_batch[batch.config_index])


# -- transforms and the processed cache ------------------------------------------------------------


def test_pruning_keeps_the_configs_and_their_nodes(root: Path) -> None:
    plain, pruned = (TpuGraphsDataset(root, LAYOUT, "valid", transform=t)[0] for t in (None, "onehop"))
    assert pruned.num_nodes < plain.num_nodes
    assert torch.equal(pruned.node_config_feat, plain.node_config_feat)
    assert torch.equal(pruned.x[pruned.config_node_index], plain.x[plain.config_node_index])
    assert torch.equal(pruned.opcode[pruned.node_config_ids], plain.opcode[plain.node_config_ids])


def test_pyg_transforms_run_after_pruning(root: Path) -> None:
    plain = TpuGraphsDataset(root, LAYOUT, "valid", transform=[OneHop()])[0]
    both = TpuGraphsDataset(root, LAYOUT, "valid", transform=[OneHop(), T.ToUndirected()])[0]
    assert both.edge_index.size(1) == 2 * plain.edge_index.size(1)
    tile = TpuGraphsDataset(root, "tile:xla", "valid", transform=T.AddSelfLoops())[0]
    plain_tile = TpuGraphsDataset(root, "tile:xla", "valid")[0]
    assert tile.edge_index.size(1) == plain_tile.edge_index.size(1) + tile.num_nodes


@pytest.mark.parametrize("in_memory", [True, False])
def test_the_processed_cache_gives_the_same_data(root: Path, tmp_path: Path, in_memory: bool) -> None:
    options = {"configs_per_graph": 3, "seed": 5, "transform": "onehop", "in_memory": in_memory}
    plain = TpuGraphsDataset(root, LAYOUT, "train", **options)
    cached = TpuGraphsDataset(root, LAYOUT, "train", cache_dir=tmp_path, **options)
    for i in range(len(plain)):
        a, b = plain[i], cached[i]
        assert set(a.keys()) == set(b.keys())
        for key in a.keys():  # noqa: SIM118 - Data iterates (key, value) pairs
            assert torch.equal(a[key], b[key]) if torch.is_tensor(a[key]) else a[key] == b[key], key
    assert any((tmp_path / "layout/xla/random/train").iterdir())


def test_chunks_of_configs_cover_every_config_once(root: Path, tmp_path: Path) -> None:
    whole = TpuGraphsDataset(root, LAYOUT, "valid")
    chunked = TpuGraphsDataset(root, LAYOUT, "valid", config_chunk=3, cache_dir=tmp_path)
    assert len(chunked) > len(whole)
    seen: dict[str, list[int]] = {}
    for data in chunked:
        assert data.num_configs <= 3
        seen.setdefault(data.graph_id, []).extend(data.config_id.tolist())
    assert seen == {d.graph_id: d.config_id.tolist() for d in whole}
    predictions = {}
    for name, dataset in (("whole", whole), ("chunked", chunked)):  # a config's score: its rows' sum
        batches = list(DataLoader(dataset, batch_size=2))
        scores = [torch.zeros(b.num_configs).index_add_(0, b.config_index, b.node_config_feat.sum(1))
                  for b in batches]
        predictions[name] = {"graph_id": [i for b in batches for i in b.config_graph_id],
                             "config_id": torch.cat([b.config_id for b in batches]),
                             "y_pred": torch.cat(scores)}
    evaluator = whole.evaluator()
    assert evaluator.eval(predictions["whole"]) == evaluator.eval(predictions["chunked"])


# -- where data comes from -------------------------------------------------------------------------


def test_the_embedded_competition_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TPUGRAPHS_DATA", raising=False)
    monkeypatch.setenv("TPUGRAPHS_EMBEDDED_DIR", str(tmp_path))
    monkeypatch.setenv("TPUGRAPHS_SCALE", "tiny")
    dataset = TpuGraphsDataset(None, LAYOUT, "test")
    assert len(dataset) and dataset[0].graph_id.startswith(LAYOUT)
    assert Evaluator(LAYOUT, None, "test").graph_ids == dataset.graph_ids  # the hidden labels are found too


def test_a_prepared_tree_loads_and_scores(root: Path, tmp_path: Path) -> None:
    prepare_competition(root / "public", tmp_path / "prep", seed=0, test_share=0.3, layout_test_configs=12)
    dataset = TpuGraphsDataset(tmp_path / "prep", LAYOUT, "test")
    assert dataset[0].num_configs == 12
    evaluator = dataset.evaluator()
    assert -1 <= evaluator.eval(_random_predictions(evaluator, 0))["score"] <= 1


@needs_kaggle_tree
def test_the_real_kaggle_tree_loads(tmp_path: Path) -> None:
    loaded = 0
    for collection in COLLECTIONS:
        for split in SPLITS:
            if not any(split_dir(KAGGLE_TREE, collection, split).glob("*.npz")):
                continue
            options = {"cache_dir": tmp_path} if collection.task.config_per_node else {}
            dataset = TpuGraphsDataset(KAGGLE_TREE, collection.name, split, configs_per_graph=8, **options)
            batch = next(iter(DataLoader(dataset, batch_size=2)))
            assert batch.num_graphs == min(2, len(dataset)) and batch.x.shape[1] == 140
            loaded += 1
    assert loaded >= 5


# -- bad input: one line each ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def tile_only(root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tile_only")
    shutil.copytree(root / "public" / "npz_all" / "npz" / "tile", out / "npz_all" / "npz" / "tile")
    return out


BAD = [
    ("collection", lambda r, t: TpuGraphsDataset(r, "layout:xla", "train"), ValueError,
     r"unknown collection 'layout:xla'; expected one of tile:xla, layout:xla:default"),
    ("split", lambda r, t: TpuGraphsDataset(r, LAYOUT, "validation"), ValueError,
     r"unknown split 'validation'; expected one of train, valid, test"),
    ("no such split", lambda r, t: TpuGraphsDataset(t, LAYOUT, "train"), FileNotFoundError,
     r"no layout:xla:random train folder here"),
    ("no data", lambda r, t: TpuGraphsDataset(t / "npz_all" / "npz" / "tile" / "xla", LAYOUT),
     FileNotFoundError, r"holds no competition data"),
    ("pruning a tile graph", lambda r, t: TpuGraphsDataset(r, "tile:xla", "train", transform=OneHop()),
     ValueError, r"tile:xla: the pruning transform one_hop.* tile graphs have none"),
    ("pruning name on tile", lambda r, t: TpuGraphsDataset(r, "tile:xla", "train", transform="khop:2"),
     ValueError, r"tile:xla: the pruning transform khop"),
    ("unknown pruning name", lambda r, t: TpuGraphsDataset(r, LAYOUT, transform="twohop"), ValueError,
     r"pruning 'twohop': unknown step 'twohop'"),
    ("pruning after PyG", lambda r, t: TpuGraphsDataset(r, LAYOUT, transform=[T.ToUndirected(), "onehop"]),
     ValueError, r"comes after a PyG transform"),
    ("not a transform", lambda r, t: TpuGraphsDataset(r, LAYOUT, transform=3), ValueError,
     r"3 is neither a pruning transform"),
    ("configs_per_graph", lambda r, t: TpuGraphsDataset(r, LAYOUT, configs_per_graph=0), ValueError,
     r"configs_per_graph must be a positive integer or None"),
    ("config_chunk", lambda r, t: TpuGraphsDataset(r, LAYOUT, "valid", config_chunk=2.5), ValueError,
     r"config_chunk must be a positive integer or None"),
    ("evaluator collection", lambda r, t: Evaluator("tile"), ValueError, r"unknown collection 'tile'"),
    ("evaluator split", lambda r, t: Evaluator(LAYOUT, r, "dev").graph_ids, ValueError,
     r"unknown split 'dev'"),
    ("test labels hidden", lambda r, t: Evaluator("tile:xla", t, "test").graph_ids, FileNotFoundError,
     r"the test labels are hidden and no solution.csv"),
]


@pytest.mark.parametrize(("case", "make", "error", "message"), BAD, ids=[case[0] for case in BAD])
def test_bad_input_is_one_line(root: Path, tile_only: Path, case, make, error, message) -> None:
    with pytest.raises(error, match=message) as info:
        make(root, tile_only)
    assert "\n" not in str(info.value)


# -- the evaluator ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", COLLECTION_NAMES)
def test_the_evaluator_agrees_with_the_scorer(root: Path, tmp_path: Path, name: str,
                                                capsys: pytest.CaptureFixture) -> None:
    """Test predictions scored by the evaluator and by `tpugraphs score`'s scorer on the written file."""
    evaluator = Evaluator(name, root, "test")
    predictions = _random_predictions(evaluator, seed=7)
    result = evaluator.eval(predictions)
    path = write_submission(tmp_path / "sub.csv", {name: predictions}, root, fill="default")
    solution = load_solution(root / "private" / "solution.csv")
    report = score_submission(path, solution)
    assert result["score"] == result[evaluator.metric] == report.collections[name]
    assert result["public"] == report.public_collections.get(name)
    assert result["private"] == report.private_collections.get(name)
    rows = validate_submission(path, solution.expected_configs()).rows
    assert list(result["graph_scores"].values()) == graph_scores(solution.labels[name], rows).tolist()
    assert main(["score", str(path), "--solution", str(root / "private" / "solution.csv"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["collections"][name] == result["score"]  # the command's figure


@pytest.mark.parametrize("name", COLLECTION_NAMES)
def test_the_valid_score_is_the_metric_per_graph(root: Path, name: str) -> None:
    evaluator = Evaluator(name, root, "valid")
    predictions = _random_predictions(evaluator, seed=1)
    result = evaluator.eval(predictions)
    start, expected = 0, []
    for path in list_split(root / "public", evaluator.collection, "valid"):
        graph = load_graph(path)
        pred = predictions["y_pred"][start:start + graph.num_configs]
        start += graph.num_configs
        order = evaluator.collection.task.row_from_predictions(pred)
        expected.append(evaluator.collection.task.score_graph(order, graph.config_runtime, graph.normalizers))
    assert list(result["graph_scores"].values()) == pytest.approx(expected, abs=1e-12)
    assert result["score"] == pytest.approx(np.mean(expected), abs=1e-12)


def test_every_input_form_gives_the_same_score(root: Path) -> None:
    evaluator = Evaluator(LAYOUT, root, "valid")
    flat = _random_predictions(evaluator, seed=2)
    want = evaluator.eval(flat)
    ids, preds = np.array(flat["graph_id"]), flat["y_pred"]
    config_id = np.concatenate([np.arange(n) for n in evaluator.expected_configs.values()])
    shuffle = np.random.default_rng(0).permutation(len(ids))
    forms = {
        "tensor": {"graph_id": ids, "y_pred": torch.from_numpy(preds)},
        "column": {"graph_id": ids, "y_pred": torch.from_numpy(preds)[:, None]},
        "shuffled with config_id": {"graph_id": ids[shuffle], "y_pred": preds[shuffle],
                                    "config_id": torch.from_numpy(config_id[shuffle])},
        "per graph": {"graph_id": list(evaluator.expected_configs),
                      "y_pred": np.split(preds, np.cumsum(list(evaluator.expected_configs.values()))[:-1])},
    }
    for form, input_dict in forms.items():
        assert evaluator.eval(input_dict) == want, form


def test_a_perfect_prediction_scores_one(root: Path) -> None:
    dataset = TpuGraphsDataset(root, LAYOUT, "valid")
    data = [dataset[i] for i in range(len(dataset))]
    result = dataset.evaluator().eval({"graph_id": [d.graph_id for d in data], "y_pred": [d.y for d in data]})
    assert result["score"] == pytest.approx(1.0)


BAD_PREDICTIONS = [
    ("missing key", lambda p: {"graph_id": p["graph_id"]}, r"needs the key\(s\) y_pred"),
    ("missing graph", lambda p: {k: v[: len(v) // 2] for k, v in p.items()},
     r"graphs have no prediction, e\.g\."),
    ("unknown graph", lambda p: {**p, "graph_id": ["layout:xla:random:nope"] + p["graph_id"][1:]},
     r"layout:xla:random:nope: not a graph of this split"),
    ("nan", lambda p: {**p, "y_pred": np.where(np.arange(len(p["y_pred"])) == 3, np.nan, p["y_pred"])},
     r"NaN or infinite"),
    ("duplicate config", lambda p: {**p, "config_id": np.zeros(len(p["y_pred"]), dtype=int)},
     r"is predicted \d+ times"),
    ("text", lambda p: {**p, "y_pred": np.array(["fast"] * len(p["y_pred"]))}, r"expected numbers"),
    ("one string", lambda p: {**p, "graph_id": "layout:xla:random:x"}, r"graph_id must be a sequence"),
]


@pytest.mark.parametrize(("case", "change", "message"), BAD_PREDICTIONS, ids=[c[0] for c in BAD_PREDICTIONS])
def test_bad_predictions_are_one_line(root: Path, case, change, message) -> None:
    evaluator = Evaluator(LAYOUT, root, "valid")
    with pytest.raises(PredictionError, match=message) as info:
        evaluator.eval(change(_random_predictions(evaluator, 0)))
    assert "\n" not in str(info.value)


# -- submissions -----------------------------------------------------------------------------------


def test_write_submission_fills_from_another_file_or_stays_partial(root: Path, tmp_path: Path) -> None:
    evaluator = Evaluator(LAYOUT, root, "test")
    predictions = _random_predictions(evaluator, 3)
    base = write_submission(tmp_path / "base.csv", {LAYOUT: predictions}, root, fill="default")
    other = {"tile:xla": _random_predictions(Evaluator("tile:xla", root, "test"), 4)}
    filled = write_submission(tmp_path / "filled.csv", other, root, fill=base)
    solution = load_solution(root / "private" / "solution.csv")
    assert (score_submission(filled, solution).collections[LAYOUT]
            == score_submission(base, solution).collections[LAYOUT])
    partial = write_submission(tmp_path / "partial.csv", {LAYOUT: predictions}, root)
    assert {line.split(":")[0] for line in partial.read_text().splitlines()[1:]} == {"layout"}
    with pytest.raises(ValueError, match=r"fill='.*partial.csv' is not a valid submission .*missing"):
        write_submission(tmp_path / "again.csv", other, root, fill=partial)
    assert not (tmp_path / "again.csv").exists()
    with pytest.raises(ValueError, match=r"unknown collection 'layout'"):
        write_submission(tmp_path / "x.csv", {"layout": predictions}, root)


# -- layers ----------------------------------------------------------------------------------------


def test_importing_the_evaluator_does_not_import_torch() -> None:
    code = ("import sys, solutions, solutions.pyg; from solutions.pyg import Evaluator, write_submission; "
            "print('torch' in sys.modules, 'torch_geometric' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.split() == ["False", "False"]


# -- the forty-line example of docs/pyg.md ---------------------------------------------------------


@pytest.mark.slow
def test_the_docs_example_trains_scores_and_submits(root: Path, tmp_path: Path) -> None:
    from benchmarks.bench_pyg import run_example

    namespace, _ = run_example(root / "public", tmp_path)
    submission = tmp_path / "submission.csv"
    assert validate_submission(submission, expected_from_data_dir(root / "public")).ok
    model, predict, test = namespace["model"], namespace["predict"], namespace["test"]
    score = Evaluator(LAYOUT, root, "test").eval(predict(model, test))["score"]
    solution = load_solution(root / "private" / "solution.csv")
    assert score == score_submission(submission, solution).collections[LAYOUT]


def test_the_starter_notebook_runs_the_docs_example() -> None:
    from benchmarks.bench_pyg import example_code

    path = Path(__file__).resolve().parents[1] / "notebooks" / "06_pyg_model.ipynb"
    notebook = json.loads(path.read_text(encoding="utf-8"))
    cells = ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert example_code().rstrip("\n") in cells


@pytest.mark.slow
def test_the_benchmark_runs(root: Path, capsys: pytest.CaptureFixture) -> None:
    from benchmarks.bench_pyg import main as bench

    assert bench(["--repeats", "1", "--data", str(root), "--no-scores"]) == 0
    table = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert len(table) == 1 + 4 and all(line.endswith("x |") for line in table[1:])  # header, 4 rows
