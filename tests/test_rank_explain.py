"""``tpugraphs rank`` answers a JAX engineer can act on: which changes carry the gain (``--explain``), where
each instruction is in the source, how far several models agree, the right module of a dump folder, and
the module written back with the layouts set (``--write``)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from competition.cli import main
from competition.data.protos.featurize import read_proto
from competition.data.protos.locations import source_locations
from competition.data.protos.write import set_layouts
from solutions.rank.ranking import read_program
from tests.test_featurize import computation, fb, fv, hlo_module, instruction, small_module
from tests.test_rank import COLLECTION, cli, trained  # noqa: F401  (trained: the module's fixture)

FIXTURES = Path(__file__).parent / "fixtures" / "hlo"
ATTENTION = FIXTURES / "attention.before_optimizations.hlo.pb"
MLP = FIXTURES / "mlp_grad.before_optimizations.hlo.pb"
CONVNET = FIXTURES / "convnet_grad.before_optimizations.hlo.pb"
OPTIMIZED = FIXTURES / "mlp_grad.cpu_after_optimizations.hlo.pb"
DUMP = FIXTURES / "lstm_dump"
LSTM = DUMP / "module_0016.jit_loss.before_optimizations.hlo.pb"
PROGRAMS_FILE = Path(__file__).parents[1] / "scripts" / "hlo_fixture_programs.py"


@pytest.fixture(scope="module")
def random_models(trained):  # noqa: F811
    """A random ranker of the same collection, saved by solve: a second model that disagrees."""
    code = main(["solve", "--method", "random", "--collection", COLLECTION, "--data",
                 str(trained / "comp" / "public"), "--out", str(trained / "random.csv")])
    assert code == 0
    return trained / "random.models"


def answer(capsys, program: Path, *extra: str) -> dict:
    code, out, err = cli(capsys, "rank", str(program), "--json", *extra)
    assert code == 0, err
    return json.loads(out)


# -- source locations ---------------------------------------------------------------------------------


def test_every_fixture_instruction_points_at_its_line_of_the_programs_file():
    lines = PROGRAMS_FILE.read_text().splitlines()
    expected = {"dot": ("@", "einsum"), "convolution": ("conv",)}
    for path in (ATTENTION, MLP, CONVNET, LSTM):
        for node in read_program(path).space.nodes:
            source = node.source
            assert source.file == "scripts/hlo_fixture_programs.py" and source.op_name, (path, node.name)
            if node.opcode in expected:
                assert any(token in lines[source.line - 1] for token in expected[node.opcode]), (node, source)
    # the recurrent program: the scan body's dots are told from their gradients by their computation
    nodes = read_program(LSTM).space.nodes
    step = [n for n in nodes if n.opcode == "dot" and "gates = x_t @" in lines[n.source.line - 1]]
    assert {n.computation for n in step} == {"closed_call.3", "closed_call_1.10"}
    head = [n for n in nodes if n.opcode == "dot" and n.computation is None]
    assert head and all("transpose(jvp())" in n.source.op_name or "jvp()" in n.source.op_name for n in head)


def _with_metadata(metadata: bytes, frames: bytes = b"") -> bytes:
    conv = instruction(2, "convolution", operands=[1, 1], dims=[4, 8], extra=fb(7, metadata))
    entry = computation(1, "main", 2, instruction(1, "parameter", dims=[4, 8]), conv)
    return hlo_module(entry) + frames


FRAMES = fb(17, fb(1, "model.py") + fb(2, "loss") + fb(3, fv(1, 1) + fv(2, 1) + fv(3, 42)) + fb(4, fv(1, 1)))


@pytest.mark.parametrize(("metadata", "frames", "where"), [
    (fb(2, "jit(f)/conv") + fb(3, "old.py") + fv(4, 7), b"", ("old.py", 7, "jit(f)/conv")),  # older writers
    (fb(2, "jit(f)/conv") + fv(15, 1), FRAMES, ("model.py", 42, "jit(f)/conv")),  # current JAX
    (fb(2, "jit(f)/conv") + fv(15, 1) + fb(3, "old.py") + fv(4, 7), FRAMES, ("model.py", 42, "jit(f)/conv")),
    (fb(2, "jit(f)/conv") + fv(15, 9), FRAMES, (None, None, "jit(f)/conv")),  # a frame the index lacks
    (fb(2, "jit(f)/conv") + fv(15, 1), b"", (None, None, "jit(f)/conv")),  # no index at all
    (b"", b"", (None, None, None)),  # empty metadata
], ids=["source_file", "stack frame", "frame wins", "frame out of range", "no index", "empty"])
def test_source_locations_are_read_not_guessed(tmp_path, metadata, frames, where):
    path = tmp_path / "m.hlo.pb"
    path.write_bytes(_with_metadata(metadata, frames))
    _, module = read_proto(path)
    location = source_locations(module)[1]
    assert (location.file, location.line, location.op_name) == where
    text = f"{where[0]}:{where[1]}" if where[0] else "no source location in the dump"
    assert location.text == text and read_program(path).space.nodes[0].source == location


# -- the right module -----------------------------------------------------------------------------------


def test_an_optimized_module_is_refused_naming_the_file_to_rank(capsys, trained, tmp_path):  # noqa: F811
    models = str(trained / "sub.models")
    code, out, err = cli(capsys, "rank", str(OPTIMIZED), "--model", models, "--sample", "5")
    assert code == 1 and out == "" and len(err.strip().splitlines()) == 1
    assert "after XLA's optimizations" in err and "fusion instructions" in err and "it is scheduled" in err
    assert err.strip().endswith(f"rank {MLP} instead")
    renamed = tmp_path / "module.pb"  # the name no longer says so: the schedule still does
    renamed.write_bytes(OPTIMIZED.read_bytes())
    code, _, err = cli(capsys, "rank", str(renamed), "--model", models, "--sample", "5")
    assert code == 1 and "it is scheduled" in err and "before_optimizations" in err
    fused = tmp_path / "fused.hlo.pb"  # fusions alone (a hand-built module): ranked, with a warning
    fused.write_bytes(small_module())
    result = answer(capsys, fused, "--model", models, "--sample", "5")
    (warning,) = result["warnings"]
    assert "may be a module after XLA's optimizations (it holds 1 fusion instruction" in warning
    code, out, _ = cli(capsys, "rank", str(fused), "--model", models, "--sample", "5")
    assert code == 0 and out.splitlines()[1].startswith("warning: fused.hlo.pb may be")


def test_a_dump_folder_lists_its_modules_and_ranks_the_one_named(capsys, trained):  # noqa: F811
    models = str(trained / "sub.models")
    code, out, err = cli(capsys, "rank", str(DUMP), "--model", models, "--sample", "5")
    assert code == 2
    listing = out.splitlines()
    assert len(listing) == 1 + 9 and listing[1].split()[:3] == ["360", "20", "jit_loss"]
    assert err.strip() == (f"tpugraphs rank: {DUMP}: a dump folder of 9 modules; pick one with --module NAME "
                           "(the largest with layouts to set: --module jit_loss)")
    result = answer(capsys, DUMP, "--model", models, "--sample", "5", "--module", "jit_loss")
    assert result["program"] == str(LSTM) and len(result["configurable_nodes"]) == 20
    assert answer(capsys, DUMP, "--model", models, "--sample", "5", "--module", "module_0016")["program"] \
        == str(LSTM)
    for name, code_wanted, words in [
        ("jit_broadcast_in_dim", 2, "7 modules are named 'jit_broadcast_in_dim'; pick one by its file's "
                                    "module_NNNN number, e.g. --module module_0002"),
        ("nosuch", 2, "no module named 'nosuch' among its 9 modules"),
        ("module_0002", 1, "no convolution, dot or reshape"),
    ]:
        code, _, err = cli(capsys, "rank", str(DUMP), "--model", models, "--sample", "5", "--module", name)
        assert code == code_wanted and words in err, (name, err)
    code, _, err = cli(capsys, "rank", str(MLP), "--model", models, "--sample", "5", "--module", "jit_loss")
    assert code == 1 and "--module picks a module of a dump folder; this is one file" in err


# -- --explain ------------------------------------------------------------------------------------------


def test_explain_lists_each_change_alone_and_a_set_reaching_90_percent(capsys, trained):  # noqa: F811
    models = str(trained / "sub.models")
    result = answer(capsys, CONVNET, "--model", models, "--sample", "200", "--explain")
    best = result["top"][0]
    assert best["candidate"] != result["reference_row"]["candidate"]  # the test needs a gain to take apart
    summary, changes = result["explain_summary"], result["explain"]
    assert summary["candidate"] == best["candidate"] and summary["rank"] == 1
    assert summary["predicted_gain"] == pytest.approx(summary["reference_score"] - summary["candidate_score"])
    assert summary["predicted_gain"] > 0 and summary["reached"]
    # every change of the candidate, once, best first, each with its source and its share of the gain
    assert sorted(c["text"] for c in changes) == sorted(c["text"] for c in best["changes"])
    gains = [c["predicted_gain"] for c in changes]
    assert gains == sorted(gains, reverse=True) and summary["changes"] == len(changes)
    for c in changes:
        assert {"instruction", "tensor", "from", "to", "predicted_score", "share", "source"} <= set(c)
        assert c["source"]["file"] == "scripts/hlo_fixture_programs.py" and c["source"]["line"] > 0
        assert c["share"] is not None and np.sign(c["share"]) == np.sign(c["predicted_gain"])
    in_set = [c for c in changes if c["in_minimal_set"]]
    assert len(in_set) == summary["minimal_set_size"] >= 1 and summary["minimal_set_share"] >= 0.9
    code, out, _ = cli(capsys, "rank", str(CONVNET), "--model", models, "--sample", "200", "--explain")
    assert code == 0 and f"--explain candidate {best['candidate']} (rank 1): {len(changes)} changes" in out
    assert "[scripts/hlo_fixture_programs.py:" in out and "* the greedy smallest set: " in out
    # an explicit candidate, and one out of range
    other = result["top"][3]["candidate"]
    assert answer(capsys, CONVNET, "--model", models, "--sample", "200", "--explain",
                  str(other))["explain_summary"]["candidate"] == other
    code, _, err = cli(capsys, "rank", str(CONVNET), "--model", models, "--sample", "200", "--explain", "999")
    assert code == 2 and "--explain 999: there are 201 candidates (0-200)" in err


def test_explain_reproduces_the_scores_of_a_model_that_ignores_the_company(trained):  # noqa: F811
    """With a scorer whose scores depend on each config alone, the listing's scores are those of each
    single change scored directly, and the greedy set is the smallest prefix of best singles when the
    changes add up: checked with an additive stand-in model."""
    from competition.collections import get_collection
    from solutions.rank.explain import explain
    from solutions.rank.scoring import ModelFolder, Scorer

    program = read_program(MLP)
    reference = program.space.reference()
    candidate = program.space.sample(1, seed=5)[0]
    weights = np.random.default_rng(0).normal(size=reference.shape)

    class Additive:  # score = sum of weights where the config differs from the reference
        def predict(self, collection, graph):
            return -(np.abs(graph.configs - reference) * np.abs(weights)).sum(axis=(1, 2))

    folder = ModelFolder(Path("."), get_collection(COLLECTION), "", "additive", [Additive()])
    scorer = Scorer(program, [folder], np.stack([reference, candidate]))
    result = explain(program, scorer, reference, candidate, index=1, rank=1)
    direct = Additive().predict(None, program.graph.with_configs(
        np.stack([c for _, c in program.kind.single_changes(candidate, reference, program)])))
    assert sorted(c["predicted_score"] for c in result.changes) == pytest.approx(sorted(direct))
    assert sum(c["share"] for c in result.changes) == pytest.approx(1.0)  # additive: the shares add up
    shares = [c["share"] for c in result.changes]
    need = next(i + 1 for i in range(len(shares)) if sum(shares[:i + 1]) >= 0.9 - 1e-9)
    assert len(result.minimal_set) == need and result.reached


# -- several models --------------------------------------------------------------------------------------


def test_several_models_rank_by_their_blend_and_say_how_far_they_agree(capsys, trained, random_models):  # noqa: F811
    models = str(trained / "sub.models")
    alone = answer(capsys, MLP, "--model", models, "--sample", "100", "--top", "101")
    twice = answer(capsys, MLP, "--model", models, "--model", models, "--sample", "100", "--top", "101")
    assert [t["candidate"] for t in twice["top"]] == [t["candidate"] for t in alone["top"]]
    (pair,) = twice["agreement"]["pairs"]
    assert pair["kendall_tau"] == pytest.approx(1.0) and pair["top_k_overlap"] == 1.0
    assert twice["agreement"]["agree"] and twice["agreement"]["sentence"].startswith("The models agree")
    assert len(twice["models"]) == 2 and alone["agreement"] is None
    mixed = answer(capsys, MLP, "--model", models, "--model", str(random_models), "--sample", "100")
    agreement = mixed["agreement"]
    assert abs(agreement["pairs"][0]["kendall_tau"]) < 0.5 and not agreement["agree"]
    assert agreement["sentence"].startswith("The models disagree: Kendall tau")
    assert "the gbdt model puts the reference at" in agreement["sentence"]
    assert agreement["reference_ranks"][0] == alone["reference_row"]["rank"]
    assert isinstance(mixed["reference_row"]["score"], float)
    code, out, _ = cli(capsys, "rank", str(MLP), "--model", models, "--model", str(random_models),
                       "--sample", "100")
    assert code == 0 and "ranked by the blend of 2 folders" in out and "The models disagree" in out


# -- --write ----------------------------------------------------------------------------------------------


def _layouts(path: Path) -> list:
    _, module = read_proto(path)
    return [(inst["shape"] or {}).get("layout") for comp in module["computations"]
            for inst in comp["instructions"]]


def test_write_sets_the_best_candidates_layouts_and_nothing_else(capsys, trained, tmp_path):  # noqa: F811
    models = str(trained / "sub.models")
    out_file = tmp_path / "best.hlo.pb"
    result = answer(capsys, MLP, "--model", models, "--sample", "200", "--write", str(out_file))
    written = result["written"]
    assert written["file"] == str(out_file) and written["written"]
    assert written["config"] == f"the best candidate (candidate {result['top'][0]['candidate']})"
    before, after = _layouts(MLP), _layouts(out_file)
    changed = {w["node"]: w["minor_to_major"] for w in written["written"]}
    for node, (old, new) in enumerate(zip(before, after, strict=True)):
        if node in changed:
            assert new["minor_to_major"] == changed[node]
            assert sorted(changed[node]) == sorted(old["minor_to_major"])
        else:
            assert new == old
    # byte for byte: the same length (a layout of the same rank), differing inside those layouts only
    data, new_data = MLP.read_bytes(), out_file.read_bytes()
    assert len(data) == len(new_data)
    assert sum(a != b for a, b in zip(data, new_data, strict=True)) <= sum(len(v) for v in changed.values())
    # read back, the written layouts are the program's own
    program, again = read_program(MLP), read_program(out_file)
    best = np.asarray(result["top"][0]["config"], dtype=np.float32)
    texts = {w["text"] for w in written["written"]}
    for change in result["top"][0]["changes"]:
        j = [n.node for n in program.space.nodes].index(change["node"])
        t = ["output", "input", "kernel"].index(change["tensor"])
        block = slice(t * 6, t * 6 + 6)
        same = np.array_equal(again.space.reference()[j, block], best[j, block])
        assert same == (change["text"] in texts), change["text"]
    skipped = written["skipped"]
    assert len(texts) + len(skipped) == len(result["top"][0]["changes"])
    assert all("that tensor is" in s["why"] for s in skipped)


def test_write_with_explain_writes_the_minimal_set_and_refusals_are_named(capsys, trained, tmp_path):  # noqa: F811
    models = str(trained / "sub.models")
    out_file = tmp_path / "set.hlo.pb"
    result = answer(capsys, CONVNET, "--model", models, "--sample", "200", "--explain", "--write",
                    str(out_file))
    size = result["explain_summary"]["minimal_set_size"]
    assert result["written"]["config"].startswith("--explain's minimal set for candidate")
    assert len(result["written"]["written"]) + len(result["written"]["skipped"]) == size
    npz = tmp_path / "program.npz"
    from competition.data.graphs import save_graph

    save_graph(read_program(CONVNET).graph, npz)
    for program, target, words in [
        (npz, tmp_path / "x.pb", "--write writes a plain HLO module"),
        (CONVNET, CONVNET, "that is the program itself"),
    ]:
        code, _, err = cli(capsys, "rank", str(program), "--model", models, "--sample", "5", "--write",
                           str(target))
        assert code == 2 and words in err


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_set_layouts_edits_only_the_layouts_it_is_given(data):
    """Any instructions, any orders: decoded, the written module equals the original but for those
    layouts; writing each layout as it was gives the file back byte for byte."""
    source = data.draw(st.sampled_from([ATTENTION, MLP, CONVNET, LSTM]))
    raw = source.read_bytes()
    before = _layouts(source)
    ranked = [i for i, layout in enumerate(before) if layout and len(layout["minor_to_major"]) > 1]
    nodes = data.draw(st.lists(st.sampled_from(ranked), min_size=1, max_size=5, unique=True))
    orders = {n: data.draw(st.permutations(before[n]["minor_to_major"])) for n in nodes}
    new = set_layouts(raw, "HloProto", orders)
    _, old_module = read_proto(source)
    with tempfile.TemporaryDirectory() as folder:  # hypothesis runs the body many times: no tmp_path
        path = Path(folder) / "written.hlo.pb"
        path.write_bytes(new)
        _, new_module = read_proto(path)
    for module in (old_module, new_module):
        for node, inst in enumerate(i for comp in module["computations"] for i in comp["instructions"]):
            if node in orders and module is new_module:
                assert inst["shape"]["layout"]["minor_to_major"] == list(orders[node])
            if node in orders:
                inst["shape"]["layout"]["minor_to_major"] = []
    assert new_module == old_module
    assert set_layouts(raw, "HloProto", {n: before[n]["minor_to_major"] for n in nodes}) == raw


def test_set_layouts_adds_a_missing_layout_and_keeps_unknown_fields():
    """A shape without a layout gets one in field 5's place; a layout's other fields (known or not) keep
    their bytes and order; an unpacked minor_to_major becomes one packed run."""
    shape = fv(2, 11) + fb(3, bytes([4, 8])) + fv(6, 0)  # no layout; is_dynamic_dimension after it
    module = hlo_module(computation(1, "main", 1, fb(1, "p") + fb(2, "parameter") + fb(3, shape) + fv(35, 1)))
    out = set_layouts(module, "HloModuleProto", {0: [0, 1]})
    assert out == hlo_module(computation(1, "main", 1, fb(1, "p") + fb(2, "parameter") + fb(
        3, fv(2, 11) + fb(3, bytes([4, 8])) + fb(5, fb(1, bytes([0, 1]))) + fv(6, 0)) + fv(35, 1)))
    layout = fv(1, 1) + fv(1, 0) + fv(7, 16) + fv(99, 3)  # unpacked dims, element size, an unknown field
    shape = fv(2, 11) + fb(3, bytes([4, 8])) + fb(5, layout)
    module = hlo_module(computation(1, "main", 1, fb(1, "p") + fb(2, "parameter") + fb(3, shape) + fv(35, 1)))
    out = set_layouts(module, "HloModuleProto", {0: [0, 1]})
    expected_layout = fb(1, bytes([0, 1])) + fv(7, 16) + fv(99, 3)
    assert out == hlo_module(computation(1, "main", 1, fb(1, "p") + fb(2, "parameter") + fb(
        3, fv(2, 11) + fb(3, bytes([4, 8])) + fb(5, expected_layout)) + fv(35, 1)))
    with pytest.raises(ValueError, match="node 5: the module has 1 instructions"):
        set_layouts(module, "HloModuleProto", {5: [0, 1]})


def test_a_tile_kernel_is_not_taken_apart_nor_written(capsys, trained, tmp_path):  # noqa: F811
    kernel = next((trained / "comp" / "public").rglob("tile/xla/valid/*.npz"))
    models = str(trained / "sub.models")
    code, _, err = cli(capsys, "rank", str(kernel), "--model", models, "--explain")
    assert code == 2 and "--explain takes a candidate apart change by change; it does not do so for tile " \
        "kernels" in err
    code, _, err = cli(capsys, "rank", str(kernel), "--model", models, "--write", str(tmp_path / "k.pb"))
    assert code == 2 and "--write writes a plain HLO module (an HloProto or HloModuleProto)" in err
    assert not (tmp_path / "k.pb").exists()
