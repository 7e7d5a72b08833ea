"""``tpugraphs rank``: a saved model ranks the configs of one's own program (a plain HLO module, a tuning
proto or an npz; layout programs and tile kernels), as ``solve`` would."""

from __future__ import annotations

import csv
import json
import shutil
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
from solutions.layout_sampling import layout_groups, sample_layout_configs
from solutions.ranking import read_program
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
    assert {"rank", "predicted_relative_runtime", "config"} <= set(from_stripped["top"][0])
    assert [t["rank"] for t in from_stripped["top"]] == list(range(1, 113))
    assert "most common setting" in from_stripped["reference"]  # a stripped proto has no default run

    # The whole proto ranks its own measured configs the same way, against its default run.
    whole = ranked(capsys, LAYOUT_PROTO, trained)
    assert [t["candidate"] for t in whole["top"]] == expected
    assert "default run" in whole["reference"]
    default = read_program(LAYOUT_PROTO).default
    for entry in whole["top"]:
        same = np.array_equal(np.asarray(entry["config"], dtype=np.float32), default)
        assert (entry["changes"] == []) == same


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
        # Without candidates: told to give some (a plain module has no measured configs).
        code, _, err = cli(capsys, "rank", str(path), "--model", str(trained / "sub.models"))
        assert code == 2 and "no measured configs to rank" in err and "(configs, 62, 18)" in err
    # --configs with --sample: the menus come from the file's configs.
    sampled = ranked(capsys, tmp_path / "module.pb", trained, "--configs", str(measured), "--sample", "40")
    assert sampled["candidates"] == 40
    assert sampled["candidate_source"] == f"sampled, seed 0, menus from {measured}"


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
    assert "most common setting" in from_npz["reference"]


@needs_realdata(LAYOUT_PROTO)
def test_sampled_configs_keep_the_dataset_conventions(capsys, trained):
    program = read_program(LAYOUT_PROTO)
    measured = program.graph.node_config_feat
    sampled = sample_layout_configs(measured, 300, seed=1)
    assert len(sampled) == 300 and len(np.unique(sampled.reshape(300, -1), axis=0)) == 300
    # Tied nodes stay tied, and a slot the program never sets is never set.
    groups = layout_groups(measured)
    for g in np.unique(groups):
        nodes = np.flatnonzero(groups == g)
        assert (sampled[:, nodes] == sampled[:, nodes[:1]]).all()
    never_set = (measured == -1).all(axis=0)
    assert (sampled[:, never_set] == -1).all()
    assert np.array_equal(sample_layout_configs(measured, 300, seed=1), sampled)  # seeded
    result = ranked(capsys, LAYOUT_PROTO, trained, "--sample", "300", "--seed", "1")
    assert result["candidates"] == 300 and result["candidate_source"] == "sampled, seed 1"


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
    assert changes[1] == [{"node": 4, "opcode": "convolution", "tensor": "output",
                           "from": [1, 0], "to": [0, 1]}]
    assert [c["tensor"] for c in changes[2]] == ["input", "kernel"]
    # Sampling: each tensor's observed settings and their minor-most swaps, one node: at most 8 configs.
    sampled = ranked(capsys, path, trained, "--sample", "50")
    assert 3 <= sampled["candidates"] <= 8
    # The table: --top 2 lists two of the three, and each row says what it changes (which two the
    # model puts first is the model's business, so the row checked is whichever is listed).
    code, out, _ = cli(capsys, "rank", str(path), "--model", str(trained / "sub.models"), "--top", "2")
    listed = [t["candidate"] for t in result["top"][:2]]
    changed = {1: "node 4 (convolution) output [1, 0]->[0, 1]",
               2: "node 4 (convolution) input [1, 0]->[0, 1]"}
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
    """The featurizer tests' small module (its one convolution is node 4) as a plain HLO module."""
    path = tmp_path / "module.hlo.pb"
    path.write_bytes(data)
    configs = np.full((4, 1, 18), -1, dtype=np.float32)
    configs[:, 0, :2] = [[1, 0], [0, 1], [1, 0], [1, 0]]  # output layouts; the third also sets the input's
    configs[2, 0, 6:8] = [0, 1]  # so the first (and the last) is the most common setting
    candidates = tmp_path / "candidates.npy"
    np.save(candidates, configs)
    result = ranked(capsys, path, trained, "--configs", str(candidates))
    assert result["format"] == form and result["configurable_nodes"] == [4]
    assert result["candidates"] == 4 and sorted(t["candidate"] for t in result["top"]) == [0, 1, 2, 3]
    changes = {t["candidate"]: t["changes"] for t in result["top"]}
    assert changes[0] == changes[3] == [] and "most common setting" in result["reference"]
    output = {"node": 4, "opcode": "convolution", "tensor": "output"}
    assert changes[1] == [{**output, "from": [1, 0], "to": [0, 1]}]
    assert changes[2] == [{"node": 4, "opcode": "convolution", "tensor": "input", "from": [], "to": [0, 1]}]
    sampled = ranked(capsys, path, trained, "--configs", str(candidates), "--sample", "50")
    assert 3 <= sampled["candidates"] <= 4  # the three settings, and the second's swap is the first's
    code, out, _ = cli(capsys, "rank", str(path), "--model", str(trained / "sub.models"), "--configs",
                       str(candidates))
    assert code == 0 and f"an {form}: 5 nodes, 1 configurable nodes (its convolutions, dots and reshapes)" \
        in out


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
        assert all(set(c) == {"tensor", "from", "to"} for c in entry["changes"])
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
        ([str(kernel), "--configs", str(negative)], 1, "config 0, column 0 holds -1; tile values are"),
        ([str(kernel), "--configs", str(tmp_path / "absent.npy")], 1, "no such file"),
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
    ("a folder", lambda p: p, "a folder; expected a file"),
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
        (["--configs", str(wrong_shape)], 1, "expected (configs, 1, 18)"),
        (["--configs", str(bad_value)], 1, "config 0, node 0, column 0 holds 7"),
        (["--configs", str(tmp_path / "absent.npy")], 1, "no such file"),
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
    code, _, err = cli(capsys, "rank", str(stripped), "--model", model, "--sample", "5")
    assert code == 1 and "give --configs FILE" in err
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
