"""``tpugraphs prepare``: a hidden-label competition carved out of labelled graphs.

Checked on the embedded competition used as if it were a download (its train/valid graphs are
labelled) and on the real protos featurized into a Kaggle tree: nothing of a test graph's model
family is left in train/valid, the solution holds exactly the source runtimes of the kept configs in
the new order (through split.json), the sample submission validates, a perfect submission built from
the source runtimes scores the best the metric allows, the leaderboard accepts the result, the same
seed gives the same bytes, and a failed or interrupted run leaves nothing behind.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from real_protos import LAYOUT_PROTO, TILE_PROTO, needs_realdata

from competition.cli import main
from competition.collections import COLLECTION_BY_NAME, COLLECTION_NAMES, COLLECTIONS
from competition.data.graphs import LayoutGraph, TileGraph, load_graph, save_graph
from competition.data.prepare import PrepareError, model_family, prepare_competition
from competition.data.prepare.plan import SourceGraph, plan_split
from competition.data.prepare.source import read_sampled_layout
from competition.data.tree import find_npz_root
from competition.errors import DataFormatError
from competition.scoring import graph_scores, load_solution, score_submission
from competition.submission import validate_submission

SEED = 7


# ---------------------------------------------------------------------------------------------
# Helpers


def tree_hashes(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def split_report(out: Path) -> dict:
    return json.loads((out / "private" / "split.json").read_text())


def public_stems(out: Path, splits=("train", "valid")) -> dict[str, set[str]]:
    """Collection -> stems of the public files of ``splits``."""
    root = out / "public" / "npz_all" / "npz"
    return {c.name: {p.stem for split in splits for p in (root / c.subpath / split).glob("*.npz")}
            for c in COLLECTIONS if (root / c.subpath).is_dir()}


def source_labels(source_root: Path, record: dict) -> tuple[np.ndarray, np.ndarray | None]:
    """Runtimes (and tile normalizers) of the kept configs of a test graph, read from its source file."""
    graph = load_graph(source_root / record["source"])
    idx = np.asarray(record["configs"])
    normalizers = graph.config_runtime_normalizers[idx] if isinstance(graph, TileGraph) else None
    return graph.config_runtime[idx], normalizers


def perfect_submission(source_root: Path, out: Path) -> bytes:
    """Every test graph's configs ranked by the true runtimes of the source files."""
    rows = ["ID,TopConfigs"]
    for record in split_report(out)["graphs"]:
        if record["split"] != "test":
            continue
        runtimes, normalizers = source_labels(source_root, record)
        collection = COLLECTION_BY_NAME[record["collection"]]
        key = runtimes / normalizers if normalizers is not None else runtimes
        order = np.argsort(key, kind="stable")[: collection.required_length(len(runtimes))]
        rows.append(f"{collection.row_id(record['stem'])},{';'.join(map(str, order))}")
    return ("\n".join(rows) + "\n").encode()


def check_prepared(source_dir: Path, out: Path) -> None:
    """The properties every prepared competition has, whatever its source."""
    source_root = find_npz_root(source_dir)
    report = split_report(out)
    solution = load_solution(out / "private" / "solution.csv")
    test_records = [r for r in report["graphs"] if r["split"] == "test"]
    assert test_records and {r["collection"] for r in test_records} == set(report["collections"])

    # No test graph, and nothing of its family, left in train/valid; the paired searches agree.
    kept = public_stems(out)
    for record in test_records:
        source_stem = Path(record["source"]).stem
        for name, stems in kept.items():
            mine, other = COLLECTION_BY_NAME[record["collection"]], COLLECTION_BY_NAME[name]
            same_unit = mine == other or (mine.task.name == "layout" and other.task.name == "layout"
                                          and mine.source == other.source)
            if same_unit:
                assert source_stem not in stems and record["stem"] not in stems
                if report["group_by"] == "family":  # by graph, only the program itself must go
                    assert record["family"] not in {model_family(stem) for stem in stems}, record

    # Test files: anonymised stems, labels zeroed, configs = the source's at split.json's indices.
    sides = {}
    for record in report["graphs"]:
        sides.setdefault((record["collection"].rsplit(":", 1)[0], Path(record["source"]).stem), set()).add(
            record["split"] == "test")
        collection = COLLECTION_BY_NAME[record["collection"]]
        public = (out / "public" / "npz_all" / "npz" / collection.subpath / record["split"]
                  / f"{record['stem']}.npz")
        if record["split"] != "test":
            assert public.read_bytes() == (source_root / record["source"]).read_bytes()
            continue
        assert len(record["stem"]) == 32 and int(record["stem"], 16) >= 0
        written, source = load_graph(public), load_graph(source_root / record["source"])
        idx = np.asarray(record["configs"])
        assert len(set(idx.tolist())) == len(idx) and not written.config_runtime.any()
        if isinstance(written, TileGraph):
            assert len(idx) == source.num_configs and not written.config_runtime_normalizers.any()
            np.testing.assert_array_equal(written.config_feat, source.config_feat[idx])
        else:
            assert len(idx) == min(source.num_configs, report["layout_test_configs"])
            np.testing.assert_array_equal(written.node_config_feat, source.node_config_feat[idx])
            np.testing.assert_array_equal(written.node_splits, source.node_splits)
        np.testing.assert_array_equal(written.node_feat, source.node_feat)
        np.testing.assert_array_equal(written.edge_index, source.edge_index)

        # The solution holds exactly the source labels of the kept configs, in the new order.
        labels = solution.labels[record["collection"]]
        g = labels.ids.index(collection.row_id(record["stem"]))
        runtimes, normalizers = source_labels(source_root, record)
        np.testing.assert_array_equal(labels.runtimes[labels.offsets[g]:labels.offsets[g + 1]], runtimes)
        if normalizers is not None:
            np.testing.assert_array_equal(labels.normalizers[labels.offsets[g]:labels.offsets[g + 1]],
                                          normalizers)
        assert ["Public", "Private"][int(labels.usage[g])] == record["usage"]
    assert all(len(s) == 1 for s in sides.values()), "a program's default and random searches were split"

    # Half Public, half Private per collection (Public takes the odd one).
    for labels in solution.labels.values():
        assert (labels.usage == 0).sum() - (labels.usage == 1).sum() in (0, 1)

    # The sample submission validates; a perfect one gets the best score the metric allows.
    public = out / "public"
    args = ["validate", str(public / "sample_submission.csv"), "--data", str(public)]
    if len(report["collections"]) < len(COLLECTIONS):
        args += [f"--collection={name}" for name in report["collections"]]
    assert main(args) == 0
    perfect = perfect_submission(source_root, out)
    if "tile:xla" in solution.labels:
        assert score_submission(perfect, solution).collections["tile:xla"] == 1.0
    rows = validate_submission(perfect, solution.expected_configs()).rows
    for name, labels in solution.labels.items():
        scores = graph_scores(labels, rows)
        for g, score in enumerate(scores):
            runtimes = labels.runtimes[labels.offsets[g]:labels.offsets[g + 1]]
            if labels.collection.task.name == "tile" or len(np.unique(runtimes)) == len(runtimes):
                assert score == pytest.approx(1.0), (name, labels.ids[g])


# ---------------------------------------------------------------------------------------------
# The embedded competition used as a download


@pytest.fixture(scope="module")
def tiny_prepared(tiny_competition, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("prepared") / "comp"
    prepare_competition(tiny_competition / "public", out, seed=SEED, test_share=0.3, layout_test_configs=12)
    return out


def test_tiny_competition_prepared(tiny_competition, tiny_prepared):
    check_prepared(tiny_competition / "public", tiny_prepared)
    report = split_report(tiny_prepared)
    assert report["ignored_source_test_graphs"]["tile:xla"] == 4  # unlabelled: never used
    assert sum(report["counts"]["tile:xla"].values()) == 9
    # At least one layout test graph had more configs than kept: sampled, and not in source order.
    sampled = [r for r in report["graphs"] if r["split"] == "test" and r["source_configs"] > 12
               and r["collection"].startswith("layout")]
    assert sampled and all(len(r["configs"]) == 12 for r in sampled)
    assert any(r["configs"] != sorted(r["configs"]) for r in sampled)


def test_same_seed_same_bytes_other_seed_other_split(tiny_competition, tiny_prepared, tmp_path):
    again = tmp_path / "again"
    prepare_competition(tiny_competition / "public", again, seed=SEED, test_share=0.3, layout_test_configs=12)
    assert tree_hashes(again) == tree_hashes(tiny_prepared)
    other = tmp_path / "other"
    prepare_competition(tiny_competition / "public", other, seed=SEED + 1, test_share=0.3,
                        layout_test_configs=12)
    assert ((other / "private" / "solution.csv").read_bytes()
            != (tiny_prepared / "private" / "solution.csv").read_bytes())


def test_leaderboard_accepts_the_prepared_competition(tiny_prepared, tmp_path, capsys):
    pytest.importorskip("leaderboard.commands")
    solution, public = tiny_prepared / "private" / "solution.csv", tiny_prepared / "public"
    url = f"sqlite:///{tmp_path / 'lb.db'}"
    assert main(["leaderboard", "init", "--db", url, "--solution", str(solution), "--data", str(public)]) == 0
    assert "Created competition" in capsys.readouterr().out


def test_group_by_graph_keeps_families_but_not_programs(tiny_competition, tmp_path):
    out = tmp_path / "bygraph"
    prepare_competition(tiny_competition / "public", out, seed=SEED, test_share=0.3, group_by="graph")
    report = split_report(out)
    assert report["group_by"] == "graph"
    kept = public_stems(out)
    for record in report["graphs"]:
        if record["split"] == "test":
            assert Path(record["source"]).stem not in kept[record["collection"]]


# ---------------------------------------------------------------------------------------------
# The command: options, refusals, all or nothing


def test_cli_prepare_and_refuse_a_non_empty_out(tiny_competition, tmp_path, capsys):
    out = tmp_path / "comp"
    args = ["prepare", "--from", str(tiny_competition / "public"), "--out", str(out), "--seed", "3"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "layout:nlp:random" in printed and "leaderboard init" in printed
    before = tree_hashes(out)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "is not empty; choose an empty folder, or replace it with tpugraphs prepare --force" in err
    assert "force=True" not in err and tree_hashes(out) == before
    assert main([*args, "--seed", "4", "--force"]) == 0
    assert tree_hashes(out) != before
    assert [p.name for p in tmp_path.iterdir()] == ["comp"]  # no temporary folder left beside it
    # the one data-directory rule: the synth output folder means its public/ (as for --data)
    from_root = tmp_path / "from_root"
    assert main(["prepare", "--from", str(tiny_competition), "--out", str(from_root), "--seed", "4"]) == 0
    assert tree_hashes(from_root) == tree_hashes(out)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--test-share", "1.5"], "test share must be between 0 and 1"),
        (["--test-share", "0"], "test share must be between 0 and 1"),
        (["--layout-test-configs", "0"], "layout test configs must be at least 1"),
        (["--seed", "-1"], "seed must be a non-negative integer"),
    ],
)
def test_cli_bad_options_exit_2(tiny_competition, tmp_path, capsys, extra, message):
    assert main(["prepare", "--from", str(tiny_competition / "public"), "--out", str(tmp_path / "o"),
                 *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_missing_source_and_out_inside_source(tiny_competition, tmp_path, capsys):
    assert main(["prepare", "--from", str(tmp_path / "absent"), "--out", str(tmp_path / "o")]) == 2
    assert "absent: no such directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["prepare", "--from", str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) == 2
    assert "empty holds no competition data" in capsys.readouterr().err
    copy = tmp_path / "copy"
    shutil.copytree(tiny_competition / "public", copy)
    assert main(["prepare", "--from", str(copy / "npz_all" / "npz"), "--out", str(copy), "--force"]) == 2
    assert "holds the source data" in capsys.readouterr().err
    assert (copy / "sample_submission.csv").is_file()  # the source is untouched


def _truncate(path: Path) -> str:
    path.write_bytes(path.read_bytes()[:200])
    return "not a readable npz (zip) archive"


def _narrow_node_feat(path: Path) -> str:
    with np.load(path) as npz:
        arrays = {key: npz[key] for key in npz.files}
    arrays["node_feat"] = arrays["node_feat"][:, :139]
    np.savez(path, **arrays)
    return "array 'node_feat' has shape"


def _drop_splits(path: Path) -> str:
    with np.load(path) as npz:
        arrays = {key: npz[key] for key in npz.files if key != "node_splits"}
    np.savez(path, **arrays)
    return "missing key(s) node_splits of a layout graph"


@pytest.mark.parametrize("damage", [_truncate, _narrow_node_feat, _drop_splits])
def test_corrupt_source_fails_before_writing(tiny_competition, tmp_path, capsys, damage):
    source = tmp_path / "source"
    shutil.copytree(tiny_competition / "public", source)
    victim = sorted((source / "npz_all" / "npz" / "layout" / "nlp" / "random" / "train").glob("*.npz"))[-1]
    message = damage(victim)
    out = tmp_path / "out"
    assert main(["prepare", "--from", str(source), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert victim.name in err and message in err and "nothing was written" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["source"]


@pytest.mark.parametrize("force", [False, True])
def test_interrupted_write_leaves_nothing(tiny_competition, tmp_path, monkeypatch, force):
    import competition.data.prepare.writer as prepare_module

    out = tmp_path / "out"
    if force:
        prepare_competition(tiny_competition / "public", out, seed=1)
    before = tree_hashes(out) if force else None
    real = prepare_module._write_test_graph
    calls = []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(prepare_module, "_write_test_graph", interrupted)
    with pytest.raises(KeyboardInterrupt):
        prepare_competition(tiny_competition / "public", out, seed=2, force=force)
    assert len(calls) == 3
    if force:
        assert tree_hashes(out) == before  # the previous competition is untouched
    else:
        assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == (["out"] if force else [])


def test_one_family_cannot_be_split(tmp_path, capsys):
    rng = np.random.default_rng(SEED)
    source = tmp_path / "source" / "npz" / "tile" / "xla" / "train"
    for i, stem in enumerate(["resnet50.4x4.fp16", "resnet50.8x8.fp32", "resnet50_batch_32_train"]):
        save_graph(_tile(rng, 6), source / f"{stem}_{i + 1:x}a3d631b8f90b2498.npz")
    out = tmp_path / "out"
    assert main(["prepare", "--from", str(tmp_path / "source"), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "tile:xla: its graphs form 1 model family (resnet50)" in err and "--group-by graph" in err
    assert not out.exists()
    assert main(["prepare", "--from", str(tmp_path / "source"), "--out", str(out),
                 "--group-by", "graph"]) == 0


def test_unlabelled_source_is_refused(tmp_path, capsys):
    # Train files with zero runtimes (test files filed as train): nothing to hide, so nothing is written.
    rng = np.random.default_rng(SEED)
    source = tmp_path / "source" / "npz" / "tile" / "xla" / "train"
    for stem in ("resnet50.4x4.fp16_1a2b3c4d", "alexnet.2x2.fp32_5e6f7a8b", "ncf.2x2.fp32_9c0d1e2f"):
        graph = _tile(rng, 6)
        graph.config_runtime[:] = 0
        save_graph(graph, source / f"{stem}.npz")
    assert main(["prepare", "--from", str(tmp_path / "source"), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "array 'config_runtime' holds values <= 0: not labels" in err and "nothing was written" in err
    assert not (tmp_path / "out").exists()


def _tile(rng: np.random.Generator, configs: int) -> TileGraph:
    runtime = rng.integers(1000, 9000, configs)
    return TileGraph(
        node_feat=rng.random((3, 140), dtype=np.float32), node_opcode=np.array([1, 2, 3], np.uint8),
        edge_index=np.array([[1, 0], [2, 1]], np.int64), config_runtime=runtime,
        config_feat=rng.random((configs, 24), dtype=np.float32),
        config_runtime_normalizers=np.full(configs, runtime[0]),
    )


# ---------------------------------------------------------------------------------------------
# Partial data: prepare, validate and score one collection or a few


def test_partial_competition_validate_and_score(tiny_competition, tmp_path, capsys):
    out = tmp_path / "partial"
    chosen = ["tile:xla", "layout:nlp:random"]
    assert main(["prepare", "--from", str(tiny_competition / "public"), "--out", str(out),
                 "--test-share", "0.3", *[f"--collection={c}" for c in chosen]]) == 0
    assert "--collection tile:xla --collection layout:nlp:random" in capsys.readouterr().out
    check_prepared(tiny_competition / "public", out)
    public, solution = out / "public", out / "private" / "solution.csv"
    sample = public / "sample_submission.csv"

    assert main(["validate", str(sample), "--data", str(public)]) == 2
    err = capsys.readouterr().err
    assert "no test graphs of layout:xla:default, layout:xla:random, layout:nlp:default" in err
    assert "holds test graphs of: tile:xla, layout:nlp:random" in err and "--collection" in err
    assert main(["validate", str(sample), "--data", str(public), "--collection", "tile:xla",
                 "--collection", "layout:nlp:random"]) == 0
    assert "every test graph of tile:xla, layout:nlp:random in" in capsys.readouterr().out

    # One collection of the two: rows of the other are named as such, not as unknown graphs.
    assert main(["validate", str(sample), "--data", str(public), "--collection", "tile:xla"]) == 1
    err = capsys.readouterr().err
    assert "a layout:nlp:random row, but only tile:xla is checked (--collection)" in err
    tile_rows = [line for line in sample.read_text().splitlines() if not line.startswith("layout")]
    tile_only = tmp_path / "tile_only.csv"
    tile_only.write_text("\n".join(tile_rows) + "\n")
    assert main(["validate", str(tile_only), "--data", str(public), "--collection", "tile:xla"]) == 0
    capsys.readouterr()

    assert main(["score", str(sample), "--solution", str(solution), "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)["collections"]) == set(chosen)
    assert main(["score", str(tile_only), "--solution", str(solution), "--collection", "tile:xla",
                 "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)["collections"]) == {"tile:xla"}
    assert main(["score", str(tile_only), "--solution", str(solution)]) == 1
    assert "a tile:xla row" not in capsys.readouterr().err  # missing nlp rows are the problem here
    assert main(["score", str(tile_only), "--solution", str(solution),
                 "--collection", "layout:xla:default"]) == 2
    assert ("has no rows of layout:xla:default; it holds rows of: tile:xla, layout:nlp:random"
            in capsys.readouterr().err)


def test_partial_validate_on_a_partial_download(tiny_competition, tmp_path, capsys):
    # A download with one collection only: validate names what it holds and works with --collection.
    data = tmp_path / "download"
    subdir = COLLECTION_BY_NAME["layout:xla:random"].npz_subdir
    shutil.copytree(tiny_competition / "public" / subdir, data / subdir)
    sample = tiny_competition / "public" / "sample_submission.csv"
    rows = [line for line in sample.read_text().splitlines() if line.startswith(("ID,", "layout:xla:random"))]
    sub = tmp_path / "sub.csv"
    sub.write_text("\n".join(rows) + "\n")
    assert main(["validate", str(sub), "--data", str(data)]) == 2
    assert "this folder holds test graphs of: layout:xla:random" in capsys.readouterr().err
    assert main(["validate", str(sub), "--data", str(data), "--collection", "layout:xla:random"]) == 0


def test_a_split_without_rows_is_absent_not_zero(tiny_competition, tmp_path, capsys):
    solution = tiny_competition / "private" / "solution.csv"
    text = solution.read_text().replace(",Private\n", ",Public\n")
    all_public = tmp_path / "solution.csv"
    all_public.write_text(text)
    sample = tiny_competition / "public" / "sample_submission.csv"
    assert main(["score", str(sample), "--solution", str(all_public), "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["private"] is None and figures["public"] == figures["score"] is not None
    assert main(["score", str(sample), "--solution", str(all_public)]) == 0
    final = capsys.readouterr().out.splitlines()[-1].split()
    assert final[-3] != "-" and final[-2] == "-" and "0.0000" not in final[-2]


# ---------------------------------------------------------------------------------------------
# The plan and the family rule on their own


FAMILIES = [
    ("resnet50.4x4.fp16", "resnet50"),
    ("resnet50.8x8.fp32", "resnet50"),
    ("resnet50_batch_32_train", "resnet50"),
    ("unet_3d.4x4.bf16", "unet_3d"),
    ("alexnet_train_batch_32", "alexnet"),
    ("alexnet_train_batch_32_-1bae27a41d70f4dc", "alexnet"),
    ("inception_v3_batch_128_train", "inception_v3"),
    ("mlperf_bert_batch_24_2x2", "mlperf_bert"),
    ("resnet_v1_50_official_batch_128_bf16", "resnet_v1_50_official"),
    ("efficientnet_b7_eval_batch_1", "efficientnet_b7"),
    ("mlperf_maskrcnn_1_shard_batch_4", "mlperf_maskrcnn"),
    ("tf2_bert_pretrain_dynamic_batch_size", "tf2_bert_pretrain_dynamic"),
    ("magenta_dynamic", "magenta_dynamic"),
    ("bert_en_uncased_L-12_H-768_A-12_batch_size_16_train", "bert_en_uncased_l-12_h-768_a-12"),
    ("bert_en_uncased_L-12_H-768_A-12_batch_size_64_test", "bert_en_uncased_l-12_h-768_a-12"),
    ("small_bert_bert_en_uncased_L-4_H-256_A-4_batch_size_32_train",
     "small_bert_bert_en_uncased_l-4_h-256_a-4"),
    ("albert_en_base_train_batch_size_16_-65bf4a2e8b2a8394", "albert_en_base"),
    ("talking-heads_base_batch_size_16_train", "talking-heads_base"),
    ("op_tuning_data_4ae805e53b8d2b8a", "op_tuning_data"),
    ("2x2", "2x2"),  # nothing but settings: its own family
]


@pytest.mark.parametrize(("stem", "family"), FAMILIES)
def test_model_family_table(stem, family):
    assert model_family(stem) == family


@settings(max_examples=200, deadline=None)
@given(
    model=st.sampled_from(["resnet50", "efficientnet_b4", "mask_rcnn", "bert_en_cased_L-12_H-768_A-12",
                           "t5_small", "talking-heads_base", "unet3d_medical", "ssd_mobilenet_v1"]),
    pattern=st.integers(0, 3),
    batch=st.sampled_from([1, 8, 16, 128]),
    topology=st.sampled_from(["2x2", "4x4", "8x8"]),
    precision=st.sampled_from(["fp16", "bf16", "fp32"]),
    mode=st.sampled_from(["train", "eval", "test"]),
    fingerprint=st.one_of(st.none(), st.integers(1, 2**63 - 1), st.integers(-(2**63), -1)),
)
def test_run_settings_never_change_the_family(model, pattern, batch, topology, precision, mode, fingerprint):
    stem = [f"{model}.{topology}.{precision}", f"{model}_batch_{batch}_{mode}",
            f"{model}_batch_{batch}_{precision}", f"{model}_batch_size_{batch}_{mode}"][pattern]
    if fingerprint is not None:
        stem += f"_{'-' if fingerprint < 0 else ''}{abs(fingerprint):x}"
    assert model_family(stem) == model_family(model) == model.lower()


def _graphs(spec: dict[str, list[tuple[str, int]]]) -> list[SourceGraph]:
    """SourceGraphs (no files) from collection -> [(stem, configs)]."""
    return [SourceGraph(COLLECTION_BY_NAME[name], "train", Path(f"{stem}.npz"), f"{name}/{stem}.npz", configs,
                        model_family(stem))
            for name, items in spec.items() for stem, configs in items]


def test_plan_keeps_searches_together_and_drops_unscorable_graphs():
    programs = [f"model{i}.4x4.fp16" for i in range(10)] + [f"model{i}_batch_8_train" for i in range(10)]
    graphs = _graphs({"layout:xla:default": [(p, 5) for p in programs[:15]],
                      "layout:xla:random": [(p, 0 if p == "model3.4x4.fp16" else 5) for p in programs[5:]]})
    for seed in range(20):
        plan_split(graphs, seed=seed, test_share=0.2)
        by_family: dict[str, set[str]] = {}
        for g in graphs:
            by_family.setdefault(g.family, set()).add("test" if g.side in ("test", "dropped") else "kept")
            assert g.side != "dropped" or (g.num_configs == 0 and g.family == "model3")
            assert g.side != "test" or g.num_configs
        assert all(len(sides) == 1 for sides in by_family.values())  # families, so programs and searches
        for name in ("layout:xla:default", "layout:xla:random"):
            assert any(g.side == "test" for g in graphs if g.collection.name == name)
        test_count = sum(g.side == "test" for g in graphs)
        assert 1 <= test_count <= round(0.2 * sum(g.num_configs > 0 for g in graphs)) + 4


def test_plan_gives_every_collection_a_test_graph():
    # Only family "b" has a random-search graph: it must go to test, or layout:xla:random has none.
    graphs = _graphs({"layout:xla:default": [(f"a{i}.2x2.fp16", 5) for i in range(8)] + [("b.2x2.fp16", 5)],
                      "layout:xla:random": [("b.2x2.fp16", 5), ("b.4x4.fp16", 5)]})
    with pytest.raises(PrepareError, match="layout:xla:random: its graphs form 1 model family"):
        plan_split(graphs, seed=0, test_share=0.1)
    plan_split(graphs, seed=0, test_share=0.1, group_by="graph")
    assert {g.program for g in graphs if g.side == "test" and g.collection.name == "layout:xla:random"}


@settings(max_examples=150, deadline=None)
@given(
    programs=st.lists(
        st.tuples(st.sampled_from(["resnet50", "alexnet", "ncf", "bert", "t5_small", "vgg16", "xception"]),
                  st.sampled_from([".2x2.fp16", ".4x4.bf16", "_batch_8_train", "_batch_32_eval"]),
                  st.sampled_from(["default", "random", "both"]), st.integers(0, 3)),
        min_size=1, max_size=25, unique_by=lambda t: t[0] + t[1]),
    share=st.floats(0.05, 0.9),
    seed=st.integers(0, 2**32),
    group_by=st.sampled_from(["family", "graph"]),
)
def test_plan_invariants(programs, share, seed, group_by):
    spec: dict[str, list[tuple[str, int]]] = {"layout:nlp:default": [], "layout:nlp:random": []}
    for model, settings_suffix, searches, configs in programs:
        for search in ("default", "random"):
            if searches in (search, "both"):
                spec[f"layout:nlp:{search}"].append((model + settings_suffix, configs))
    spec = {name: items for name, items in spec.items() if items}
    graphs = _graphs(spec)
    try:
        test_groups = plan_split(graphs, seed=seed, test_share=share, group_by=group_by)
    except PrepareError as exc:
        assert "no labelled graph" in str(exc) or "no graph with configs" in str(exc)
        return
    key = (lambda g: g.family) if group_by == "family" else (lambda g: g.program)
    for name in spec:
        mine = [g for g in graphs if g.collection.name == name]
        assert any(g.side == "test" for g in mine)  # a test graph in every collection
        assert any(g.side in ("train", "valid") for g in mine)  # and a labelled one left
    for group in {key(g) for g in graphs}:
        members = [g for g in graphs if key(g) == group]
        held = {g.side in ("test", "dropped") for g in members}
        assert len(held) == 1 and (True in held) == (group in test_groups["layout:nlp"])
    assert all(g.num_configs > 0 for g in graphs if g.side == "test")
    assert all(g.num_configs == 0 for g in graphs if g.side == "dropped")
    again = _graphs(spec)
    plan_split(again, seed=seed, test_share=share, group_by=group_by)
    assert [g.side for g in again] == [g.side for g in graphs]  # deterministic for a seed


# ---------------------------------------------------------------------------------------------
# Streaming the sampled configs: the fast path against a whole-file np.load


@pytest.mark.parametrize("compressed", [True, False])
@pytest.mark.parametrize("chunk_bytes", [1, 500, 10_000, 2**24])
def test_sampled_layout_equals_whole_file_reference(tmp_path, compressed, chunk_bytes):
    rng = np.random.default_rng(SEED + chunk_bytes)
    configs, nc, n = 300, 6, 20
    graph = LayoutGraph(
        node_feat=rng.random((n, 140), dtype=np.float32),
        node_opcode=rng.integers(1, 120, n).astype(np.uint8),
        edge_index=np.array([[i + 1, i] for i in range(n - 1)], np.int64),
        config_runtime=rng.integers(1, 10**9, configs),
        node_config_feat=rng.integers(-1, 6, (configs, nc, 18)).astype(np.float32),
        node_config_ids=np.sort(rng.choice(n, nc, replace=False)), node_splits=np.array([[0, 7]], np.int64),
    )
    path = tmp_path / "g.npz"
    save_graph(graph, path, compressed=compressed)
    for indices in (rng.choice(configs, 40, replace=False), rng.permutation(configs),
                    np.array([configs - 1, 0]), np.array([], np.int64)):
        got = read_sampled_layout(path, indices, chunk_bytes)
        np.testing.assert_array_equal(got["node_config_feat"], graph.node_config_feat[indices])
        np.testing.assert_array_equal(got["config_runtime"], graph.config_runtime[indices])
        np.testing.assert_array_equal(got["node_feat"], graph.node_feat)


def test_bad_config_value_and_truncated_member_are_named(tmp_path):
    rng = np.random.default_rng(SEED)
    graph = LayoutGraph(
        node_feat=rng.random((4, 140), dtype=np.float32), node_opcode=np.ones(4, np.uint8),
        edge_index=np.array([[1, 0]], np.int64), config_runtime=np.arange(1, 51),
        node_config_feat=np.zeros((50, 2, 18), np.float32), node_config_ids=np.array([0, 1]),
        node_splits=np.array([[0]], np.int64),
    )
    graph.node_config_feat[30, 1, 4] = 7.0
    path = tmp_path / "bad.npz"
    save_graph(graph, path)
    with pytest.raises(DataFormatError, match=r"bad\.npz: .*integers in -1\.\.5"):
        read_sampled_layout(path, np.arange(50), 100)
    graph.node_config_feat[30, 1, 4] = 0.0
    cut = tmp_path / "cut.npz"
    with zipfile.ZipFile(cut, "w") as archive:
        for key, value in graph.arrays().items():
            buffer = io.BytesIO()
            np.save(buffer, value)
            raw = buffer.getvalue()
            archive.writestr(f"{key}.npy", raw[:-400] if key == "node_config_feat" else raw)
    with pytest.raises(DataFormatError, match=r"cut\.npz: array 'node_config_feat' is truncated"):
        read_sampled_layout(cut, np.arange(50), 1000)


# ---------------------------------------------------------------------------------------------
# The real protos featurized into a Kaggle tree

_TILE_STEMS = ["resnet50.4x4.fp16", "resnet50_batch_32_train", "alexnet_train_batch_32", "alexnet.2x2.fp32",
               "ncf.2x2.fp32", "efficientnet_b7_eval_batch_1", "unet_3d.4x4.bf16"]
_XLA_STEMS = ["resnet50.4x4.fp16", "resnet50.8x8.fp32", "bert_pretraining.4x4.bf16",
              "inception_v3_batch_128_train", "ncf.2x2.fp32", "unet_3d.4x4.bf16"]
_NLP_STEMS = ["bert_en_uncased_L-12_H-768_A-12_batch_size_16_train",
              "bert_en_uncased_L-12_H-768_A-12_batch_size_32_test", "albert_en_base_batch_size_16_train",
              "electra_small_batch_size_8_test", "talking-heads_base_batch_size_16_train"]


@pytest.fixture(scope="module")
def real_tree(tmp_path_factory) -> Path:
    """The two real protos featurized, then filed as a download: the 15 tile kernels under several model
    families, the layout graph under several program names in each layout collection."""
    from competition.data.protos.featurize import featurize_files

    featurized = tmp_path_factory.mktemp("featurized")
    written = featurize_files([LAYOUT_PROTO, TILE_PROTO], featurized)
    tree = tmp_path_factory.mktemp("real_tree") / "npz"
    tiles = sorted(p for p in written if p.stem.startswith("op_tuning_data"))
    for i, path in enumerate(tiles):
        split = "valid" if i % 5 == 4 else "train"
        fingerprint = path.stem.rsplit("_", 1)[1]
        target = tree / "tile" / "xla" / split / f"{_TILE_STEMS[i % len(_TILE_STEMS)]}_{fingerprint}.npz"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    layout = featurized / f"{LAYOUT_PROTO.stem}.npz"
    for source, stems in (("xla", _XLA_STEMS), ("nlp", _NLP_STEMS)):
        for search in ("default", "random"):
            for i, stem in enumerate(stems):
                target = tree / "layout" / source / search / ("valid" if i == 2 else "train") / f"{stem}.npz"
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(layout, target)
    # An unlabelled test graph, as a download has: never used.
    test = tree / "tile" / "xla" / "test" / "0123456789abcdef0123456789abcdef.npz"
    test.parent.mkdir(parents=True)
    graph = load_graph(tiles[0])
    graph.config_runtime[:] = 0
    graph.config_runtime_normalizers[:] = 0
    save_graph(graph, test)
    return tree


@needs_realdata(LAYOUT_PROTO, TILE_PROTO)
@pytest.mark.parametrize("group_by", ["family", "graph"])
def test_real_protos_prepared(real_tree, tmp_path, group_by):
    out = tmp_path / "real"
    summary = prepare_competition(real_tree, out, seed=SEED, test_share=0.25, layout_test_configs=50,
                                  group_by=group_by)
    assert set(summary.graphs) == set(COLLECTION_NAMES)
    assert summary.ignored_test["tile:xla"] == 1
    check_prepared(real_tree, out)
    report = split_report(out)
    layout_tests = [r for r in report["graphs"]
                    if r["split"] == "test" and r["collection"].startswith("layout")]
    assert layout_tests and all(r["source_configs"] == 112 and len(r["configs"]) == 50 for r in layout_tests)
    with open(out / "private" / "solution.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {row["Usage"] for row in rows} <= {"Public", "Private"}
    assert all(row["Normalizers"] == "" for row in rows if row["ID"].startswith("layout"))
    again = tmp_path / "again"
    prepare_competition(real_tree, again, seed=SEED, test_share=0.25, layout_test_configs=50,
                        group_by=group_by)
    assert tree_hashes(again) == tree_hashes(out)
