"""``--json`` on every reporting command: one JSON document on stdout, also when the input is
invalid (the problems as a list), with the exit code unchanged (``competition/commands/json_problems.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from competition.cli import main

FAILURE_KEYS = {"ok", "exit_code", "problems", "problems_truncated"}


def one_document(capsys) -> dict:
    out = capsys.readouterr().out
    return json.loads(out)  # fails on anything but exactly one document


@pytest.fixture
def files(tiny_competition, tmp_path) -> dict[str, Path]:
    public, solution = tiny_competition / "public", tiny_competition / "private" / "solution.csv"
    sample = public / "sample_submission.csv"
    lines = sample.read_text().splitlines()
    broken = tmp_path / "broken.csv"
    broken.write_text("\n".join([lines[0], *lines[2:]]) + "\n")  # one row missing
    bad_npz = tmp_path / "bad.npz"
    bad_npz.write_bytes(b"not a zip")
    return {"public": public, "solution": solution, "sample": sample, "broken": broken, "bad_npz": bad_npz,
            "npz": next((public / "npz_all" / "npz" / "tile" / "xla" / "test").glob("*.npz"))}


def test_validate_and_score(files, capsys):
    assert main(["validate", str(files["sample"]), "--data", str(files["public"]), "--json"]) == 0
    assert one_document(capsys) == {"ok": True, "submission": str(files["sample"]), "rows": 12}
    assert main(["validate", str(files["broken"]), "--data", str(files["public"]), "--json"]) == 1
    document = one_document(capsys)
    assert set(document) == FAILURE_KEYS and document["exit_code"] == 1 and not document["ok"]
    assert [p["rule"] for p in document["problems"]] == ["missing-id"]
    assert main(["score", str(files["sample"]), "--solution", str(files["solution"]), "--json"]) == 0
    document = one_document(capsys)
    assert set(document) == {"score", "public", "private", "collections", "public_collections",
                             "private_collections", "graphs", "metrics"}
    # The same figures as the text table, collection by collection.
    assert main(["score", str(files["sample"]), "--solution", str(files["solution"])]) == 0
    for line in capsys.readouterr().out.splitlines()[1:-1]:
        name, metric, graphs, public, private, overall = line.split()
        assert (document["metrics"][name], sum(document["graphs"][name].values())) == (metric, int(graphs))
        for figure, key in ((public, "public_collections"), (private, "private_collections"),
                            (overall, "collections")):
            assert figure == f"{document[key][name]:.4f}"
    assert main(["score", str(files["broken"]), "--solution", str(files["solution"]), "--json"]) == 1
    assert one_document(capsys)["problems"][0]["rule"] == "missing-id"


def test_a_usage_error_is_a_document_too(files, tmp_path, capsys):
    assert main(["score", str(tmp_path / "nothing.csv"), "--solution", str(files["solution"]), "--json"]) == 2
    document = one_document(capsys)
    assert document["exit_code"] == 2 and "nothing.csv: no such file" in document["problems"][0]["message"]
    assert main(["solve", "--data", str(files["public"]), "--out", str(tmp_path / "s.csv"), "--json",
                 "--param", "hidden=0"]) == 2
    assert "setting hidden=0: too small" in one_document(capsys)["problems"][0]["message"]


def _commands_with_json() -> list[str]:
    from competition.cli import build_parser

    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    return sorted(name for name, sub in commands.items()
                  if any("--json" in action.option_strings for action in sub._actions))


@pytest.mark.parametrize("command", _commands_with_json())
def test_every_usage_error_with_json_is_a_document(command, capsys):
    """argparse's own refusals too (a missing argument, an unknown flag): one JSON document on stdout,
    the usual message on stderr, exit 2."""
    try:
        code = main([command, "--json", "--no-such-flag"])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    document = json.loads(out)
    assert code == 2 and set(document) == FAILURE_KEYS and document["exit_code"] == 2
    message = document["problems"][0]["message"]
    assert f"tpugraphs {command}: error: {message}" in err
    assert "required" in message or "unrecognized arguments: --no-such-flag" in message


def test_a_usage_error_without_json_prints_nothing_on_stdout(capsys):
    for argv in (["grade", "abc"], ["score", "x.csv", "--solution", "y.csv", "--bogus"],
                 ["solve", "--json", "report.json", "--bogus"]):  # --json FILE: the report goes to a file
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        out, err = capsys.readouterr()
        assert exit_info.value.code == 2 and out == "" and "error:" in err


def test_report_compare_and_stats(files, capsys):
    sample, solution = str(files["sample"]), str(files["solution"])
    assert main(["report", sample, "--solution", solution, "--json", "--bootstrap", "50"]) == 0
    assert isinstance(one_document(capsys), dict)
    assert main(["report", str(files["broken"]), "--solution", solution, "--json"]) == 1
    assert one_document(capsys)["exit_code"] == 1
    assert main(["compare", sample, sample, "--solution", solution, "--json", "--bootstrap", "50"]) == 0
    assert isinstance(one_document(capsys), dict)
    assert main(["stats", str(files["public"]), "--json", "--collection", "tile:xla"]) == 0
    assert isinstance(one_document(capsys), dict)


def test_inspect_is_one_document_for_several_files(files, capsys):
    assert main(["inspect", str(files["npz"]), str(files["npz"]), "--json"]) == 0
    document = one_document(capsys)
    assert document["ok"] and len(document["files"]) == 2 and document["problems"] == []
    assert main(["inspect", str(files["npz"]), str(files["bad_npz"]), "--json"]) == 1
    document = one_document(capsys)
    assert len(document["files"]) == 1 and document["problems"][0]["id"] == str(files["bad_npz"])


def test_solve_json_without_a_file_prints_the_report_on_stdout(files, tmp_path, capsys):
    assert main(["solve", "--data", str(files["public"]), "--out", str(tmp_path / "s.csv"), "--method",
                 "random", "--collection", "tile:xla", "--quiet", "--json"]) == 0
    document = one_document(capsys)
    assert document["method"] == "random" and document["collections"][0]["collection"] == "tile:xla"
