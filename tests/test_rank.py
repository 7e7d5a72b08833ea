"""``tpugraphs rank``: a saved model ranks the configs of one's own program (a plain HLO module, a tuning
proto or an npz; layout programs and tile kernels), as ``solve`` would."""

from __future__ import annotations

import csv
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from competition.cli import main
from competition.collections import get_collection
from competition.data.graphs import load_graph, save_graph
from competition.data.protos.featurize import featurize_file, read_tuning_proto
from competition.data.protos.tile import kernel_name
from competition.data.protos.wire import decode_message, top_level_fields
from competition.data.tree import split_dir
from competition.metrics.layout import kendall_tau_score
from solutions.kinds.layout_sampling import layout_groups, sample_layout_configs
from solutions.kinds.layout_space import space_of_graph
from solutions.rank.ranking import read_program
from tests.real_protos import LAYOUT_PROTO, TILE_PROTO, needs_realdata
from tests.test_featurize import (
    computation,
    fb,
    fv,
    hlo_module,
    instruction,
    module_tuning,
    run,
    small_module,
)

COLLECTION = "layout:xla:random"
TILE = "tile:xla"


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()  # what earlier commands printed is not this one's
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The tiny embedded competition and a gbdt model of layout:xla:random saved by ``tpugraphs solve``."""
    from competition.data.synth import generate_competition

    root = tmp_path_factory.mktemp("rank")
    generate_competition(root / "comp", scale="tiny", seed=0)
    code = main(["solve", "--method", "gbdt", "--collection", COLLECTION,
                 "--data", str(root / "comp" / "public"), "--out", str(root / "sub.csv")])
    assert code == 0
    # A tile model in the same folder (runs on other collections accumulate); leaves of 2 rows, so that
    # the tiny competition's few kernels give a model that orders the real kernels (20 rows: one leaf).
    code = main(["solve", "--method", "gbdt", "--collection", TILE, "--data", str(root / "comp" / "public"),
                 "--out", str(root / "sub.csv"), "--param", "min_data_in_leaf=2"])
    assert code == 0
    return root


def strip_runs(data: bytes) -> bytes:
    """The ModuleTuningData without its runs (field 3): the module and its configurable nodes only."""
    kept = bytearray()
    fields = top_level_fields(data)
    for i, (number, _, _, offset) in enumerate(fields):
        end = fields[i + 1][3] if i + 1 < len(fields) else len(data)
        if number != 3:
            kept += data[offset:end]
    return bytes(kept)


def module_of(data: bytes) -> bytes:
    """The ``HloModuleProto`` of a ModuleTuningData (its field 1): the program as a plain HLO module."""
    ((start, end),) = [value for number, _, value, _ in top_level_fields(data) if number == 1]
    return data[start:end]


def solve_predict_only(root: Path, program: Path, tmp_path: Path, models: str = "sub.models",
                       collection: str = COLLECTION) -> list[int]:
    """What ``solve --predict-only`` writes for ``program`` as the one test graph of the collection."""
    data = tmp_path / "data"
    shutil.rmtree(data, ignore_errors=True)
    shutil.copytree(root / "comp" / "public", data)
    test_dir = split_dir(data, get_collection(collection), "test")
    shutil.rmtree(test_dir)
    test_dir.mkdir()
    save_graph(load_graph(program) if program.suffix == ".npz" else featurize_file(program)[0][1],
               test_dir / "program.npz")
    out = tmp_path / "predicted.csv"
    code = main(["solve", "--method", "gbdt", "--collection", collection, "--data", str(data),
                 "--out", str(out), "--model-dir", str(root / models), "--predict-only"])
    assert code == 0
    with out.open(newline="") as f:
        (row,) = [r for r in csv.DictReader(f) if r["ID"] == f"{collection}:program"]
    return [int(i) for i in row["TopConfigs"].split(";")]


def ranked(capsys, program: Path, root: Path, *extra: str, models: str = "sub.models") -> dict:
    code, out, err = cli(capsys, "rank", str(program), "--model", str(root / models), "--top", "100000",
                         "--json", *extra)
    assert code == 0, err
    return json.loads(out)


@needs_realdata(LAYOUT_PROTO)
def test_rank_of_the_real_proto_with_runs_stripped_equals_solve_predict_only(capsys, trained, tmp_path):
    measured = tmp_path / "measured.npz"
    save_graph(featurize_file(LAYOUT_PROTO)[0][1], measured)
    stripped = tmp_path / "stripped.pb"
    stripped.write_bytes(strip_runs(LAYOUT_PROTO.read_bytes()))
    assert read_program(stripped).graph.num_configs == 0  # nothing measured is left in it

    expected = solve_predict_only(trained, measured, tmp_path)
    assert expected != list(range(112))  # the model does order them: the comparison is not vacuous
    from_stripped = ranked(capsys, stripped, trained, "--configs", str(measured))
    assert [t["candidate"] for t in from_stripped["top"]] == expected
    assert from_stripped["candidates"] == 112 and from_stripped["model"]["method"] == "gbdt"
    assert {"rank", "predicted_relative_runtime", "config", "measured_rank"} <= set(from_stripped["top"][0])
    assert [t["rank"] for t in from_stripped["top"]] == list(range(1, 113))
    assert "own layouts" in from_stripped["reference"]  # a stripped proto has no default run
    assert from_stripped["measured_kendall_tau"] is None  # configs from a file: nothing measured is claimed

    # The whole proto ranks its own measured configs the same way, against its default run, and says
    # where each stands among the measured runtimes and the model's Kendall tau over them.
    whole = ranked(capsys, LAYOUT_PROTO, trained)
    assert [t["candidate"] for t in whole["top"]] == expected
    assert "default run" in whole["reference"]
    program = read_program(LAYOUT_PROTO)
    for entry in whole["top"]:
        same = np.array_equal(np.asarray(entry["config"], dtype=np.float32), program.default)
        assert (entry["changes"] == []) == same
    runtimes = program.graph.config_runtime.astype(float)
    assert whole["measured_kendall_tau"] == pytest.approx(kendall_tau_score(np.array(expected), runtimes))
    by_candidate = {t["candidate"]: t["measured_rank"] for t in whole["top"]}
    fastest = int(np.argmin(runtimes))
    assert by_candidate[fastest] == 1 and max(by_candidate.values()) <= 112
    assert whole["reference_row"]["candidate"] is not None and not whole["reference_row"]["added"]
    model = str(trained / "sub.models")
    code, out, _ = cli(capsys, "rank", str(LAYOUT_PROTO), "--model", model, "--top", "3")
    tau = whole["measured_kendall_tau"]
    assert code == 0 and f"Kendall tau of the predicted order against them {tau:+.3f}" in out
    header = next(line for line in out.splitlines() if line.startswith("rank candidate"))
    assert "measured" in header  # the table's header has the measured column


@needs_realdata(LAYOUT_PROTO)
def test_the_real_program_as_a_plain_hlo_module_ranks_as_solve_predict_only(capsys, trained, tmp_path):
    """The real proto's module alone, as XLA dumps it (HloProto) and as TensorFlow's hlo_serialized gives it
    (HloModuleProto): its configurable nodes are found by the dataset's rule, equal to the proto's list."""
    measured = tmp_path / "measured.npz"
    save_graph(featurize_file(LAYOUT_PROTO)[0][1], measured)
    expected = solve_predict_only(trained, measured, tmp_path)
    module = module_of(LAYOUT_PROTO.read_bytes())
    listed = [int(i) for i in read_tuning_proto(LAYOUT_PROTO)[1]["config_index_to_node"]]
    forms = [("module.hlo.pb", fb(1, module), "HloProto"), ("module.pb", module, "HloModuleProto")]
    for name, data, form in forms:
        path = tmp_path / name
        path.write_bytes(data)
        result = ranked(capsys, path, trained, "--configs", str(measured))
        assert result["format"] == form and result["task"] == "layout" and result["kernel"] is None
        assert result["configurable_nodes"] == listed  # the dataset's rule finds the compiler's 62 nodes
        assert [t["candidate"] for t in result["top"]] == expected
        # Named in the program's words: the instruction, its shape and the dims by their letters.
        change = next(c for t in result["top"] for c in t["changes"] if c["opcode"] == "convolution")
        assert change["instruction"].startswith("convolution.") and change["shape"].startswith("bf16[")
        assert set(change["dims"]) >= {"N", "C", "D", "H", "W"} or set(change["dims"]) >= {"I", "O"}
        # Without candidates: told how to get some (a plain module has no measured configs).
        code, _, err = cli(capsys, "rank", str(path), "--model", str(trained / "sub.models"))
        assert code == 2 and "no measured configs to rank" in err and "--sample N" in err
    # --configs with --sample: the menus come from the file's configs.
    sampled = ranked(capsys, tmp_path / "module.pb", trained, "--configs", str(measured), "--sample", "40")
    assert sampled["candidates"] == 40 + sampled["reference_row"]["added"]
    assert sampled["candidate_source"].startswith(f"sampled from the settings of the configs in {measured}")


@needs_realdata(LAYOUT_PROTO)
def test_a_seed_ensemble_and_an_npz_program_rank_as_solve_does(capsys, trained, tmp_path):
    """A --seeds run's models are blended as solve blends them; an npz program gives the same order."""
    code = main(["solve", "--method", "gbdt", "--collection", COLLECTION, "--data",
                 str(trained / "comp" / "public"), "--out", str(tmp_path / "ens.csv"), "--seeds", "0,1",
                 "--model-dir", str(trained / "ens.models")])
    assert code == 0
    measured = tmp_path / "measured.npz"
    save_graph(featurize_file(LAYOUT_PROTO)[0][1], measured)
    expected = solve_predict_only(trained, measured, tmp_path, models="ens.models")
    result = ranked(capsys, LAYOUT_PROTO, trained, models="ens.models")
    assert result["model"]["models"] == 2 and result["top"][0]["predicted_score"] is None
    assert [t["candidate"] for t in result["top"]] == expected
    from_npz = ranked(capsys, measured, trained, models="ens.models")
    assert [t["candidate"] for t in from_npz["top"]] == expected
    assert "own layouts" in from_npz["reference"]
    assert from_npz["measured_kendall_tau"] == pytest.approx(result["measured_kendall_tau"])


@needs_realdata(LAYOUT_PROTO)
def test_the_real_configs_keep_the_rules_and_samples_keep_the_conventions(capsys, trained):
    program = read_program(LAYOUT_PROTO)
    measured = program.graph.node_config_feat
    # Every measured config of the real program keeps the rules, read from its module or from its npz.
    assert program.space.problem(measured) is None
    assert space_of_graph(program.graph).problem(measured) is None
    sampled = sample_layout_configs(measured, 300, seed=1)
    assert len(sampled) == 300 and len(np.unique(sampled.reshape(300, -1), axis=0)) == 300
    assert program.space.problem(sampled) is None
    # Tied nodes stay tied, and a slot the program never sets is never set.
    groups = layout_groups(measured)
    for g in np.unique(groups):
        nodes = np.flatnonzero(groups == g)
        assert (sampled[:, nodes] == sampled[:, nodes[:1]]).all()
    never_set = (measured == -1).all(axis=0)
    assert (sampled[:, never_set] == -1).all()
    assert np.array_equal(sample_layout_configs(measured, 300, seed=1), sampled)  # seeded
    result = ranked(capsys, LAYOUT_PROTO, trained, "--sample", "300", "--seed", "1")
    assert result["candidates"] == 300 + result["reference_row"]["added"]
    assert result["candidate_source"].startswith("sampled from the settings of its measured configs, seed 1")
    assert result["measured_kendall_tau"] is None  # sampled configs were not measured


def test_a_hand_written_module_is_ranked_against_its_default(capsys, trained, tmp_path):
    """The small module of the featurizer's tests: one configurable convolution (node 4), three runs."""
    layouts = [[[1, 0], [1, 0], [0, 1]], [[0, 1], [1, 0], [0, 1]], [[1, 0], [0, 1], [1, 0]]]
    runs = [run(layout=[layouts[0]], default=True, runtime=600), run(layout=[layouts[1]], runtime=500),
            run(layout=[layouts[2]], runtime=700)]
    path = tmp_path / "hand.pb"
    path.write_bytes(module_tuning(small_module(), runs, config_ids=[4]))
    result = ranked(capsys, path, trained)
    assert result["candidates"] == 3 and sorted(t["candidate"] for t in result["top"]) == [0, 1, 2]
    changes = {t["candidate"]: t["changes"] for t in result["top"]}
    assert changes[0] == []
    assert changes[1] == [{"node": 4, "instruction": "convolution.22", "opcode": "convolution",
                           "tensor": "output", "shape": "f32[4,8]", "dims": ["d0=4", "d1=8"],
                           "from": [1, 0], "to": [0, 1],
                           "text": "convolution.22 output f32[4,8]: minor-to-major (d0=4, d1=8) instead of "
                                   "(d1=8, d0=4)",
                           # a hand-written module without metadata: said, not guessed
                           "computation": None, "source": {"file": None, "line": None, "op_name": None,
                                                       "function": None, "callers": []},
                           "where": "no source location in the dump"}]
    assert [c["tensor"] for c in changes[2]] == ["input", "kernel"]
    # Measured: candidate 1 ran fastest (500 ns), then 0, then 2.
    assert {t["candidate"]: t["measured_rank"] for t in result["top"]} == {1: 1, 0: 2, 2: 3}
    order = np.array([t["candidate"] for t in result["top"]])
    expected_tau = kendall_tau_score(order, np.array([600, 500, 700]))
    assert result["measured_kendall_tau"] == pytest.approx(expected_tau)
    # Sampling: each tensor's observed settings and their minor-most swaps, one node: at most 8 configs.
    sampled = ranked(capsys, path, trained, "--sample", "50")
    assert 3 <= sampled["candidates"] <= 8
    # The table: --top 2 lists two of the three, and each row says what it changes in words.
    code, out, _ = cli(capsys, "rank", str(path), "--model", str(trained / "sub.models"), "--top", "2")
    listed = [t["candidate"] for t in result["top"][:2]]
    changed = {1: "convolution.22 output f32[4,8]: minor-to-major (d0=4, d1=8) instead of (d1=8, d0=4)",
               2: "convolution.22 input f32[4,8]: minor-to-major (d0=4, d1=8) instead of (d1=8, d0=4)"}
    assert code == 0 and "changes are against" in out
    assert all(changed[c] in out for c in listed if c in changed)
    assert not any(changed[c] in out for c in changed if c not in listed)


BUFFER_ASSIGNMENT = fb(3, fb(1, fv(1, 0) + fv(2, 128)))  # HloProto field 3: one logical buffer (id, size)


@pytest.mark.parametrize(("form", "data"), [
    ("HloModuleProto", small_module()),  # TensorFlow's hlo_serialized
    ("HloProto", fb(1, small_module())),  # --xla_dump_hlo_as_proto, before optimizations
    ("HloProto", fb(1, small_module()) + BUFFER_ASSIGNMENT),  # after optimizations: a buffer assignment too
], ids=["HloModuleProto", "HloProto", "HloProto with buffers"])
def test_a_hand_written_plain_module_ranks_given_configs(capsys, trained, tmp_path, form, data):
    """The featurizer tests' small module (its one convolution is node 4, f32[4,8]) as a plain HLO module:
    its own layouts (none recorded: XLA's default, (1, 0)) are the reference."""
    path = tmp_path / "module.hlo.pb"
    path.write_bytes(data)
    configs = np.full((4, 1, 18), -1, dtype=np.float32)
    configs[:, 0, :2] = [[1, 0], [0, 1], [1, 0], [1, 0]]  # output layouts; the third also sets the input's
    configs[2, 0, 6:8] = [0, 1]
    candidates = tmp_path / "candidates.npy"
    np.save(candidates, configs)
    result = ranked(capsys, path, trained, "--configs", str(candidates))
    assert result["format"] == form and result["configurable_nodes"] == [4]
    assert result["candidates"] == 4 and sorted(t["candidate"] for t in result["top"]) == [0, 1, 2, 3]
    changes = {t["candidate"]: t["changes"] for t in result["top"]}
    assert "own layouts" in result["reference"] and result["reference_row"]["candidate"] is None
    unset = "unset (the compiler's choice)"
    assert [(c["tensor"], c["from"], c["to"]) for c in changes[0]] == [("input", [1, 0], []),
                                                                        ("kernel", [1, 0], [])]
    assert changes[1][0]["text"] == \
        "convolution.22 output f32[4,8]: minor-to-major (d0=4, d1=8) instead of (d1=8, d0=4)"
    assert changes[0][0]["text"].endswith(f"{unset} instead of (d1=8, d0=4)")
    assert [(c["tensor"], c["to"]) for c in changes[2]] == [("input", [0, 1]), ("kernel", [])]
    sampled = ranked(capsys, path, trained, "--configs", str(candidates), "--sample", "50")
    assert 3 <= sampled["candidates"] <= 5  # the file's three settings and their swaps, and the reference
    from_space = ranked(capsys, path, trained, "--sample", "50")  # no configs at all: the layout space
    assert from_space["candidates"] == 8  # 2 orders for each of 3 rank-2 tensors, the reference among them
    assert from_space["candidate_source"].endswith("(only 8 distinct configs there)")
    row = from_space["reference_row"]
    assert row == {"candidate": row["candidate"], "rank": row["rank"], "added": False, "score": row["score"]}
    scores = {t["candidate"]: t["predicted_score"] for t in from_space["top"]}
    assert row["score"] == scores[row["candidate"]]  # the reference's own score, as its row has it
    code, out, _ = cli(capsys, "rank", str(path), "--model", str(trained / "sub.models"), "--configs",
                       str(candidates))
    assert code == 0 and f"an {form}: 5 nodes, 1 configurable nodes (its convolutions, dots and reshapes)" \
        in out
    assert "the reference is not among the candidates (--sample adds it)" in out


# -- real JAX dumps (tests/fixtures/hlo, written by scripts/dump_hlo_fixtures.py) ---------------------

FIXTURES = Path(__file__).parent / "fixtures" / "hlo"
CONVNET = FIXTURES / "convnet_grad.before_optimizations.hlo.pb"
ATTENTION = FIXTURES / "attention.before_optimizations.hlo.pb"
MLP = FIXTURES / "mlp_grad.before_optimizations.hlo.pb"


def test_the_fixture_dumps_are_small_real_jax_modules():
    total = sum(p.stat().st_size for p in FIXTURES.glob("*.hlo.pb"))
    assert {CONVNET, ATTENTION, MLP} <= set(FIXTURES.glob("*.hlo.pb")) and total < 100_000
    nodes = {path.name: read_program(path).space.nodes for path in (CONVNET, ATTENTION, MLP)}
    opcodes = {name: {n.opcode for n in space} for name, space in nodes.items()}
    assert opcodes[CONVNET.name] == {"convolution"} and opcodes[MLP.name] == {"dot"}
    assert opcodes[ATTENTION.name] == {"dot", "reshape"}
    # The letters come from the instructions' dimension numbers: NHWC activations, HWIO kernels.
    forward = nodes[CONVNET.name][0]
    assert [t.labels for t in forward.tensors] == [("N", "H", "W", "C"), ("N", "H", "W", "C"),
                                                   ("H", "W", "I", "O")]
    assert [t.shape for t in forward.tensors] == ["f32[8,16,16,8]", "f32[8,16,16,3]", "f32[3,3,3,8]"]
    first_dot = nodes[MLP.name][0]
    assert [t.labels for t in first_dot.tensors] == [("M", "N"), ("M", "K"), ("K", "N")]
    reshape = next(n for n in nodes[ATTENTION.name] if n.opcode == "reshape")
    assert reshape.tensors[2] is None and reshape.tensors[0].slots == reshape.tensors[0].rank == 4


@pytest.mark.parametrize("path", [CONVNET, ATTENTION, MLP], ids=lambda p: p.name.split(".")[0])
def test_a_jax_dump_is_ranked_from_its_layout_space(capsys, trained, tmp_path, path):
    """--sample on a plain dump: N distinct valid configs, seeded; the program's own layouts ranked too."""
    result = ranked(capsys, path, trained, "--sample", "60", "--seed", "3")
    program = read_program(path)
    configs = np.array([t["config"] for t in result["top"]], dtype=np.float32)
    assert result["candidates"] == 60 + result["reference_row"]["added"] == len(configs)
    assert len(np.unique(configs.reshape(len(configs), -1), axis=0)) == len(configs)
    assert program.space.problem(configs) is None  # every candidate keeps the dataset's rules
    reference = program.space.reference()
    row = result["reference_row"]
    assert row["added"] and row["candidate"] == 0 and 1 <= row["rank"] <= result["candidates"]
    (entry,) = [t for t in result["top"] if t["candidate"] == 0]
    assert entry["rank"] == row["rank"] and entry["changes"] == []
    assert np.array_equal(np.asarray(entry["config"], dtype=np.float32), reference)
    assert result["candidate_source"] == \
        "sampled from the program's layout space, seed 3, the reference added"
    change = next(c for t in result["top"] for c in t["changes"])
    name = program.space.nodes[[n.node for n in program.space.nodes].index(change["node"])].name
    assert change["instruction"] == name and change["text"].startswith(name)
    assert f" {change['tensor']} {change['shape']}: " in change["text"] and " instead of " in change["text"]
    again = ranked(capsys, path, trained, "--sample", "60", "--seed", "3")
    assert again["top"] == result["top"]  # deterministic for a seed
    other = ranked(capsys, path, trained, "--sample", "60", "--seed", "4")
    drawn = {name: sorted(str(t["config"]) for t in found["top"]) for name, found in
             (("seed 3", result), ("seed 4", other))}
    assert drawn["seed 3"] != drawn["seed 4"]
    code, out, _ = cli(capsys, "rank", str(path), "--model", str(trained / "sub.models"), "--sample", "60")
    assert code == 0 and "the reference (candidate 0, added to the sample, score " in out


def _bad(node: int, tensor: int, values: list[int]) -> Callable[[np.ndarray], None]:
    def edit(configs: np.ndarray) -> None:
        configs[1, node, tensor * 6:tensor * 6 + 6] = values + [-1] * (6 - len(values))
    return edit


# (program, node, tensor, slots, what the one-line refusal must say)
BAD_CONFIGS = [
    ("dim not in a rank-2 dot output", MLP, 0, 0, [3, 0],
     "config 1, dot_general.8 output f32[32,128] (node 0 of the configurable nodes, columns 0-5): names "
     "dimension 3, which a rank-2 tensor does not have (dims 0-1)"),
    ("a repeated dim", CONVNET, 0, 1, [3, 3], "conv_general_dilated.5 (convolution) input f32[8,16,16,3]"),
    ("a slot a convolution never sets", CONVNET, 1, 2, [3, 2, 1],
     "kernel f32[3,3,8,16] (node 1 of the configurable nodes, columns 12-17): sets 3 dims [3, 2, 1]; the "
     "dataset sets the 2 minor-most dims of a convolution's tensors"),
    ("a reshape's kernel", ATTENTION, 1, 2, [0], "the dataset never sets a reshape's kernel"),
    ("half a pair", CONVNET, 0, 0, [3],
     "sets 1 of the 2 minor-most dims ([3]); the dataset sets all 2 or none"),
    ("a gap", CONVNET, 0, 0, [-1, 3], "with a gap; the dataset sets the minor-most slots first"),
    ("part of a reshape's order", ATTENTION, 1, 0, [3, 2], "sets 2 of the whole order (4 dims)"),
    ("not a dimension number", MLP, 0, 1, [-2, 0], "holds -2; layout values are dimension numbers or -1"),
]


@pytest.mark.parametrize(("name", "path", "node", "tensor", "values", "message"), BAD_CONFIGS,
                         ids=[b[0] for b in BAD_CONFIGS])
def test_bad_candidates_are_refused_by_instruction_tensor_and_rule(capsys, trained, tmp_path, name, path,
                                                                   node, tensor, values, message):
    configs = read_program(path).space.sample(3, seed=0)
    _bad(node, tensor, values)(configs)
    candidates = tmp_path / "candidates.npy"
    np.save(candidates, configs)
    code, out, err = cli(capsys, "rank", str(path), "--model", str(trained / "sub.models"), "--configs",
                         str(candidates))
    assert code == 2 and out == "" and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and message in err and str(candidates) in err
    code, out, _ = cli(capsys, "rank", str(path), "--model", str(trained / "sub.models"), "--configs",
                       str(candidates), "--json")
    assert code == 2 and message in json.dumps(json.loads(out))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**16), count=st.integers(1, 300), ranks=st.lists(st.integers(0, 6), min_size=1,
                                                                             max_size=5))
def test_the_layout_space_draws_distinct_valid_configs(seed, count, ranks):
    """On random convolutions and reshapes: every draw keeps the rules, is distinct and seeded, and a space
    smaller than asked is given whole."""
    from solutions.kinds.layout_space import LayoutSpace, Node, Tensor, slots_for

    def node(i: int, rank: int) -> Node:
        opcode = "reshape" if i % 2 else "convolution"
        tensors = tuple(None if opcode == "reshape" and t == 2 else
                        Tensor(dims=(3,) * rank, element="f32", labels=tuple(f"d{d}" for d in range(rank)),
                               slots=slots_for(opcode, t, rank), own=tuple(range(rank))) for t in range(3))
        return Node(i, f"{opcode}.{i}", opcode, tensors)

    space = LayoutSpace(tuple(node(i, r) for i, r in enumerate(ranks)))
    drawn = space.sample(count, seed=seed)
    assert len(drawn) == min(count, int(space.size()))
    assert len(np.unique(drawn.reshape(len(drawn), -1), axis=0)) == len(drawn)
    assert space.problem(drawn) is None and space.problem(space.reference()[None]) is None
    assert np.array_equal(space.sample(count, seed=seed), drawn)


def test_a_scalar_or_a_missing_operand_is_never_set():
    from solutions.kinds.layout_space import LayoutSpace, Node, Tensor

    scalar = Tensor(dims=(), element="f32", labels=(), slots=0, own=())
    vector = Tensor(dims=(7,), element="f32", labels=("d0=7",), slots=1, own=(0,))
    space = LayoutSpace((Node(3, "reshape.3", "reshape", (scalar, vector, None)),
                         Node(5, "negate.5", "negate", (vector, vector, None))))
    configs = np.full((2, 2, 18), -1, dtype=np.float32)
    assert space.problem(configs) is None and space.size() == 1
    configs[1, 0, 0] = 0
    assert space.problem(configs) == ("config 1, reshape.3 output f32[] (node 0 of the configurable nodes, "
                                      "columns 0-5): sets [0]; a scalar has no dimensions to order, so the "
                                      "dataset never sets it")
    configs[1, 0, 0] = -1
    configs[0, 1, 12] = 0
    assert space.problem(configs) == ("config 0, negate.5 kernel (node 1 of the configurable nodes, "
                                      "columns 12-17): sets [0]; the dataset never sets a negate's kernel "
                                      "(it has no such operand)")


def test_a_folder_with_one_layout_model_is_used_and_named(capsys, trained, tmp_path):
    """A model folder holding only layout:xla:default: rank uses it and says so."""
    models = tmp_path / "default.models"
    code = main(["solve", "--method", "gbdt", "--collection", "layout:xla:default", "--data",
                 str(trained / "comp" / "public"), "--out", str(tmp_path / "d.csv"),
                 "--model-dir", str(models)])
    assert code == 0
    result = ranked(capsys, MLP, tmp_path, "--sample", "20", models="default.models")
    assert result["model"]["collection"] == "layout:xla:default"
    assert result["model"]["chosen_because"] == f"the only layout program model in {models}"
    code, out, _ = cli(capsys, "rank", str(MLP), "--model", str(models), "--sample", "20")
    assert code == 0 and f"the gbdt model of layout:xla:default (1 model, {models}; the only layout" in out
    code, _, err = cli(capsys, "rank", str(MLP), "--model", str(models), "--collection", COLLECTION,
                       "--sample", "5")
    assert code == 2 and "no model of layout:xla:random here (its runs cover: layout:xla:default)" in err


@needs_realdata(TILE_PROTO)
def test_a_tile_kernel_ranks_as_solve_predict_only(capsys, trained, tmp_path):
    """A real tile kernel, as a released-format npz and inside its TuningData: the first 5 of rank's order
    are the row solve --predict-only writes (a tile row lists 5), and the order is the model's."""
    name, graph = featurize_file(TILE_PROTO)[1]  # 579 measured configs
    kernel = tmp_path / f"{name}.npz"
    save_graph(graph, kernel)
    expected = solve_predict_only(trained, kernel, tmp_path, collection=TILE)
    assert len(expected) == 5 and expected != list(range(5))  # the model does order them
    from_npz = ranked(capsys, kernel, trained)
    assert from_npz["model"]["collection"] == TILE and from_npz["task"] == "tile"
    order = [t["candidate"] for t in from_npz["top"]]
    assert order[:5] == expected and sorted(order) == list(range(graph.num_configs))
    scores = [t["predicted_score"] for t in from_npz["top"]]
    assert scores == sorted(scores) and from_npz["configurable_nodes"] is None
    assert "each tensor's most common setting" in from_npz["reference"]
    from_proto = ranked(capsys, TILE_PROTO, trained, "--kernel", name)
    assert [t["candidate"] for t in from_proto["top"]] == order
    assert from_proto["format"] == "TuningData" and from_proto["kernel"] == name
    assert "default run" in from_proto["reference"]
    for entry in from_proto["top"]:
        assert all(set(c) == {"tensor", "from", "to", "text"} for c in entry["changes"])
        for c in entry["changes"]:
            assert c["text"] == f"{c['tensor']} tile {'x'.join(map(str, c['to']))} instead of " \
                f"{'x'.join(map(str, c['from']))}"
    assert from_proto["measured_kendall_tau"] is not None and from_npz["measured_kendall_tau"] is not None
    # The kernel's module alone, read as a tile kernel, ranks the same configs the same way.
    module = tmp_path / "kernel.hlo.pb"
    module.write_bytes(fb(1, kernel_module(name)))
    as_module = ranked(capsys, module, trained, "--collection", TILE, "--configs", str(kernel))
    assert [t["candidate"] for t in as_module["top"]] == order
    # A seed ensemble of tile:xla is blended as solve blends it: the 5 configs of its row.
    code = main(["solve", "--method", "gbdt", "--collection", TILE, "--data",
                 str(trained / "comp" / "public"), "--out", str(tmp_path / "ens.csv"), "--seeds", "0,1",
                 "--param", "min_data_in_leaf=2",
                 "--model-dir", str(trained / "tile-ens.models")])
    assert code == 0
    blended = solve_predict_only(trained, kernel, tmp_path, models="tile-ens.models", collection=TILE)
    ensemble = ranked(capsys, kernel, trained, models="tile-ens.models")
    assert [t["candidate"] for t in ensemble["top"]] == blended
    assert ensemble["top"][0]["predicted_score"] is None


def kernel_module(name: str) -> bytes:
    """The ``HloModuleProto`` of the real TuningData's kernel that ``tpugraphs featurize`` calls ``name``."""
    data = TILE_PROTO.read_bytes()
    for _, _, (start, end), _ in top_level_fields(data):
        fingerprint = decode_message(data[start:end], "ModuleTuningData")["fingerprint"]
        if kernel_name(TILE_PROTO.stem, fingerprint) == name:
            return module_of(data[start:end])
    raise AssertionError(f"no kernel {name}")


@needs_realdata(TILE_PROTO)
def test_tile_refusals_say_what_to_do(capsys, trained, tmp_path):
    model = str(trained / "sub.models")
    name, graph = featurize_file(TILE_PROTO)[0]
    kernel = tmp_path / f"{name}.npz"
    save_graph(graph, kernel)
    negative = tmp_path / "negative.npy"
    np.save(negative, np.full((2, 24), -1, dtype=np.float32))
    cases = [
        ([str(TILE_PROTO)], 1, "a TuningData of 15 tile kernels; pick one with --kernel NAME"),
        ([str(TILE_PROTO), "--kernel", "nope"], 1, "no kernel named 'nope'"),
        ([str(kernel), "--sample", "10"], 2, "--sample draws layout configs only"),
        ([str(kernel), "--kernel", name], 1, "--kernel picks a kernel of a TuningData"),
        ([str(kernel), "--collection", COLLECTION], 2, "ranks layout programs; " + str(kernel)),
        ([str(kernel), "--configs", str(negative)], 2,
         "config 0, column 0 (kernel) holds -1; tile values are"),
        ([str(kernel), "--configs", str(tmp_path / "absent.npy")], 2, "no such file"),
    ]
    for argv, status, message in cases:
        code, _, err = cli(capsys, "rank", *argv, "--model", model)
        assert code == status and message in err, (argv, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def _truncated(tmp_path: Path) -> Path:
    path = tmp_path / "truncated.pb"
    (path.write_bytes(LAYOUT_PROTO.read_bytes()[:5000]) if LAYOUT_PROTO.is_file()
     else path.write_bytes(b"\x0a\x50ab"))
    return path


def _no_layout_ops() -> bytes:
    """A plain module with nothing to lay out: a parameter and its negation."""
    return hlo_module(computation(1, "main", 2, instruction(1, "parameter", dims=[4, 8]),
                                  instruction(2, "negate", operands=[1], dims=[4, 8])))


BAD_PROGRAMS = [
    ("text", lambda p: _write(p, "notes.pb", b"hello world\n"), "corrupt or truncated proto"),
    ("empty", lambda p: _write(p, "empty.pb", b""), "empty file: expected a TuningData, a ModuleTuningData"),
    ("truncated", _truncated, "truncated"),
    ("truncated plain module", lambda p: _write(p, "cut.hlo.pb", fb(1, small_module())[:-7]), "truncated"),
    ("tuning proto with no module", lambda p: _write(p, "nomodule.pb", fv(2, 7) + fb(4, bytes([4]))),
     "no 'module' (field 1)"),
    ("tuning proto with no configurable nodes",
     lambda p: _write(p, "none.pb", module_tuning(small_module(), [run(layout=[[]])])),
     "no configurable nodes"),
    ("plain module with nothing to lay out", lambda p: _write(p, "plain.hlo.pb", fb(1, _no_layout_ops())),
     "no convolution, dot or reshape: no configurable nodes"),
    ("plain module without instructions",
     lambda p: _write(p, "hollow.hlo.pb", fb(1, hlo_module(computation(1, "c", 1)))),
     "read as an HloProto, but it holds no HLO instructions"),
    ("foreign proto", lambda p: _write(p, "foreign.pb", fv(9, 1) + fb(1, b"")), "top-level fields [1, 9]"),
    ("missing", lambda p: p / "absent.pb", "no such file"),
    ("a folder", lambda p: p, "a folder without *.before_optimizations.hlo.pb files; give a dump folder"),
    ("npz of another format", lambda p: _npz(p), "not a graph of the released format"),
]


def _write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def _npz(folder: Path) -> Path:
    path = folder / "other.npz"
    np.savez(path, x=np.zeros(3))
    return path


@pytest.mark.parametrize(("name", "make", "message"), BAD_PROGRAMS, ids=[b[0] for b in BAD_PROGRAMS])
def test_malformed_or_foreign_programs_get_one_line_errors(capsys, trained, tmp_path, name, make, message):
    path = make(tmp_path)
    code, out, err = cli(capsys, "rank", str(path), "--model", str(trained / "sub.models"))
    assert code == 1 and out == ""
    assert message in err and str(path.name) in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_with_json_a_refused_program_is_one_json_document_too(capsys, trained, tmp_path):
    path = _write(tmp_path, "notes.pb", b"hello world\n")
    code, out, err = cli(capsys, "rank", str(path), "--model", str(trained / "sub.models"), "--json")
    document = json.loads(out)
    assert code == 1 and "corrupt or truncated proto" in err
    assert "notes.pb" in json.dumps(document)


def test_bad_candidates_and_models_are_named(capsys, trained, tmp_path):
    program = tmp_path / "hand.pb"
    program.write_bytes(module_tuning(small_module(), [run(layout=[[[1, 0]]], default=True)], config_ids=[4]))
    model = str(trained / "sub.models")
    wrong_shape = tmp_path / "wrong.npy"
    np.save(wrong_shape, np.zeros((2, 3, 18), dtype=np.float32))
    bad_value = tmp_path / "bad.npy"
    np.save(bad_value, np.full((2, 1, 18), 7, dtype=np.float32))
    cases = [
        (["--configs", str(wrong_shape)], 2, "expected (configs, 1, 18)"),
        (["--configs", str(bad_value)], 2,
         "config 0, convolution.22 output f32[4,8] (node 0 of the configurable nodes, columns 0-5): sets 6 "
         "dims [7, 7, 7, 7, 7, 7]"),
        (["--configs", str(tmp_path / "absent.npy")], 2, "no such file"),
        (["--configs", str(tmp_path)], 2, "a folder; expected a layout npz"),
        (["--sample", "0"], 2, "expected a positive integer"),
        (["--collection", "tile:xla"], 2, "--collection tile:xla ranks tile kernels; " + str(program)),
        (["--collection", "no:such"], 2, "unknown collection"),
        (["--collection", "layout:nlp:random"], 2, "no model of layout:nlp:random here (its runs cover: "),
    ]
    for extra, status, message in cases:
        code, _, err = cli(capsys, "rank", str(program), "--model", model, *extra)
        assert code == status and message in err, (extra, err)
    code, _, err = cli(capsys, "rank", str(program), "--model", str(tmp_path))
    assert code == 2 and "no saved models here" in err
    stripped = tmp_path / "stripped.pb"
    stripped.write_bytes(module_tuning(small_module(), [], config_ids=[4]))
    code, out, _ = cli(capsys, "rank", str(stripped), "--model", model, "--sample", "5", "--json")
    drawn = json.loads(out)  # no configs: drawn from the layout space, and the reference added if missing
    assert code == 0 and drawn["candidates"] == 5 + drawn["reference_row"]["added"]
    code, _, err = cli(capsys, "rank", str(stripped), "--model", model)
    assert code == 2 and "no measured configs to rank" in err


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**16), nodes=st.integers(1, 6), measured=st.integers(1, 8),
       count=st.integers(1, 40))
def test_sampling_keeps_groups_tied_and_unset_slots_unset(seed, nodes, measured, count):
    """On random measured configs with two tied nodes: tied stays tied, a slot never set stays unset,
    every sampled config is distinct, and each node's setting comes from its menu."""
    rng = np.random.default_rng(seed)
    configs = np.full((measured, nodes + 1, 18), -1, dtype=np.float32)
    for t in range(3):
        if rng.random() < 0.7:  # some tensors are never set, as in the dataset
            configs[:, :nodes, t * 6:t * 6 + 2] = rng.integers(0, 4, size=(measured, nodes, 2))
    configs[:, nodes] = configs[:, 0]  # node `nodes` is tied to node 0
    sampled = sample_layout_configs(configs, count, seed=seed)
    assert 1 <= len(sampled) <= count
    assert len(np.unique(sampled.reshape(len(sampled), -1), axis=0)) == len(sampled)
    assert (sampled[:, nodes] == sampled[:, 0]).all()
    assert (sampled[:, (configs == -1).all(axis=0)] == -1).all()
    for j in range(nodes):
        seen = {tuple(s) for s in configs[:, j]}
        assert all(tuple(s) in seen or _swapped_per_tensor(s, configs[:, j]) for s in sampled[:, j])


def _swapped_per_tensor(setting: np.ndarray, seen: np.ndarray) -> bool:
    """Whether ``setting`` is a seen setting with the two minor-most dims of each set tensor swapped."""
    for s in seen:
        moved = s.copy()
        for t in range(3):
            if moved[t * 6] >= 0 and moved[t * 6 + 1] >= 0:
                moved[t * 6], moved[t * 6 + 1] = moved[t * 6 + 1], moved[t * 6]
        if np.array_equal(moved, setting):
            return True
    return False
