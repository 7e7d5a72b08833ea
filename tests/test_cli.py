"""The tpugraphs command line as a user meets it: help texts, exit codes, no tracebacks."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from competition.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """Run the real console entry point in a fresh process (as a user would)."""
    return subprocess.run([sys.executable, "-m", "competition.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_top_level_help_lists_every_command():
    done = run_cli("--help")
    assert done.returncode == 0
    for command in ("synth", "validate", "score"):
        assert command in done.stdout
    assert run_cli().returncode == 2  # no command: help and a usage exit code


def test_every_subcommand_has_help_with_an_example():
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # noqa: SLF001 - argparse has no public API
    assert {"synth", "validate", "score"} <= set(commands)
    for name, sub in commands.items():
        text = sub.format_help()
        assert sub.description, f"{name} has no description"
        assert "tpugraphs" in text, f"{name} help shows no example"


def test_validate_and_score_round_trip(tiny_competition, tmp_path):
    public, solution = tiny_competition / "public", tiny_competition / "private" / "solution.csv"
    sample = public / "sample_submission.csv"
    done = run_cli("validate", str(sample), "--data", str(public))
    assert done.returncode == 0, done.stderr
    assert "valid submission" in done.stdout

    done = run_cli("score", str(sample), "--solution", str(solution), "--json")
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert {"score", "public", "private", "collections", "public_collections", "private_collections"} <= set(
        figures)
    assert set(figures["collections"]) == {"tile:xla", "layout:xla:default", "layout:xla:random",
                                           "layout:nlp:default", "layout:nlp:random"}
    table = run_cli("score", str(sample), "--solution", str(solution))
    assert table.returncode == 0 and "final (mean of collections)" in table.stdout


def test_invalid_submission_exit_1_with_line_and_id(tiny_competition, tmp_path):
    public = tiny_competition / "public"
    lines = (public / "sample_submission.csv").read_text().splitlines()
    broken_id = lines[3].split(",")[0]
    lines[3] = f"{broken_id},0;0;1;2;3"
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(lines[:-1]) + "\n")  # also drop the last row
    done = run_cli("validate", str(bad), "--data", str(public))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "line 4" in done.stderr and broken_id in done.stderr
    assert lines[-1].split(",")[0] in done.stderr  # the missing ID is named
    done = run_cli("score", str(bad), "--solution", str(tiny_competition / "private" / "solution.csv"))
    assert done.returncode == 1 and "line 4" in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "absent.csv", "--data", "."],
        ["validate", "README.md", "--data", "/nonexistent/folder"],
        ["score", "absent.csv", "--solution", "absent.csv"],
        ["score", "README.md"],
        ["validate"],
        ["no-such-command"],
    ],
)
def test_usage_errors_exit_2_without_traceback(args):
    done = run_cli(*args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert "error" in done.stderr


def test_a_folder_given_for_a_file_is_named_as_a_folder_with_what_was_expected(tiny_competition, capsys):
    public, private = tiny_competition / "public", tiny_competition / "private"
    sample = str(public / "sample_submission.csv")
    cases = [
        (["validate", str(public), "--data", str(public)],
         f"tpugraphs validate: error: {public}: a folder, not a file; expected a submission CSV file "
         "(ID,TopConfigs) (it holds sample_submission.csv)"),
        (["score", sample, "--solution", str(private)],
         f"tpugraphs score: error: {private}: a folder, not a file; expected a solution CSV file "
         "(ID,Runtimes,Normalizers,Usage), e.g. OUT/private/solution.csv (it holds solution.csv)"),
        (["report", str(public / "npz_all"), "--solution", str(private / "solution.csv")],
         f"{public / 'npz_all'}: a folder, not a file; expected a submission CSV file (ID,TopConfigs)\n"),
        (["score", "absent.csv", "--solution", str(private / "solution.csv")],
         "tpugraphs score: error: absent.csv: no such file; expected a submission CSV file (ID,TopConfigs)"),
    ]
    for argv, message in cases:
        assert main(argv) == 2
        assert message in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["shakeup", "a.csv", "--solution", "s.csv", "--draws", "0"], "argument --draws: expected a positive "
                                                                  "integer, got 0"),
    (["shakeup", "a.csv", "--solution", "s.csv", "--draws", "many"], "argument --draws: expected a positive "
                                                                     "integer, got 'many'"),
    (["report", "a.csv", "--solution", "s.csv", "--worst", "-1"],
     "argument --worst: expected an integer >= 0, got -1"),
    (["report", "a.csv", "--solution", "s.csv", "--worst", "ten"],
     "argument --worst: expected an integer >= 0, got 'ten'"),
    (["shakeup", "a.csv", "--solution", "s.csv", "--public-share", "1"],
     "argument --public-share: expected a number strictly between 0 and 1, got 1.0"),
    (["shakeup", "a.csv", "--solution", "s.csv", "--public-share", "half"],
     "argument --public-share: expected a number between 0 and 1, got 'half'"),
    (["grade", "inf"], "argument SCORE: expected a finite number, got 'inf'"),
])
def test_argument_types_refuse_in_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and f"tpugraphs {argv[0]}: error: {message}" in err


@pytest.mark.parametrize(("argv", "wanted"), [
    (["solve", "--json"], True),  # no file name: the report goes to stdout
    (["solve", "--json", "-"], True),
    (["solve", "--json=-"], True),
    (["solve", "--json", "--quiet"], True),
    (["solve", "--json", "report.json"], False),  # a file name: stdout keeps the text
    (["score", "--json", "sub.csv"], True),  # a flag: what follows is another argument
    (["score", "sub.csv"], False),
    (["synth", "--json"], False),  # synth has no --json
])
def test_a_refused_command_line_asks_for_json_as_its_command_defines_it(argv, wanted):
    from competition.commands.json_problems import json_in_argv

    commands = build_parser()._subparsers._group_actions[0].choices  # noqa: SLF001
    assert json_in_argv(commands[argv[0]], argv) is wanted


def test_unusable_solution_exit_1(tmp_path):
    sub = tmp_path / "sub.csv"
    sub.write_text("ID,TopConfigs\n")
    sol = tmp_path / "sol.csv"
    sol.write_text("ID,Runtimes\n")
    assert main(["score", str(sub), "--solution", str(sol)]) == 1


def test_console_script_installed():
    exe = shutil.which("tpugraphs", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("the tpugraphs console script is not installed in this environment (pip install -e .)")
    assert subprocess.run([exe, "--help"], capture_output=True, timeout=60).returncode == 0


def test_closed_pipe_exits_quietly(tiny_competition):
    # `tpugraphs inspect ... | head -1`: the reader leaves after one line; no BrokenPipeError traceback.
    files = sorted((tiny_competition / "public").rglob("*.npz"))
    args = [str(path) for path in files] * (1 + 400 // len(files))  # far more than a pipe buffer holds
    with subprocess.Popen([sys.executable, "-m", "competition.cli", "inspect", *args], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=120)
    assert err == "" and code == 141  # 128 + SIGPIPE, as a shell reports `yes | head`


def test_every_command_turns_a_closed_pipe_into_a_quiet_exit(tiny_competition, monkeypatch):
    class ClosedPipe:
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

    sample = tiny_competition / "public" / "sample_submission.csv"
    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["validate", str(sample), "--data", str(tiny_competition / "public")]) == 141
    assert main(["score", str(sample), "--solution",
                 str(tiny_competition / "private" / "solution.csv")]) == 141


# -- the everyday answers import nothing heavy ------------------------------------------------------

HEAVY = ("torch", "torch_geometric", "lightgbm")

# Runs each command line in one fresh interpreter and reports, per command line, its exit code, the heavy
# modules present afterwards and, for the first import of each, the kit's frames that asked for it.
_PROBE = r"""
import contextlib, io, json, sys, traceback

HEAVY = set(json.loads(sys.argv[1]))
KIT = ("/competition/", "/solutions/", "/leaderboard/")
importers = {}


class Watch:
    def find_spec(self, name, path=None, target=None):
        if name in HEAVY and name not in importers:
            importers[name] = [f"{f.filename.rsplit('/', 2)[-2]}/{f.filename.rsplit('/', 1)[-1]}:{f.lineno}"
                               for f in traceback.extract_stack() if any(k in f.filename for k in KIT)]
        return None


sys.meta_path.insert(0, Watch())
from competition.cli import main

results = []
for argv in json.loads(sys.stdin.read()):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    heavy = sorted(name for name in HEAVY if name in sys.modules)
    results.append({"argv": argv, "code": code, "heavy": heavy, "err": err.getvalue()[-300:],
                    "importers": {name: importers.get(name) for name in heavy}})
    if heavy:
        break  # the modules stay loaded: the command lines after this one would prove nothing
print(json.dumps(results))
"""


def answers_without_heavy_imports(argvs: list[list[str]]) -> list[dict]:
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(HEAVY)], input=json.dumps(argvs),
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    for result in results:
        assert not result["heavy"], (f"tpugraphs {' '.join(result['argv'])} imports {result['heavy']}; "
                                     f"first asked for by {result['importers']}")
    assert len(results) == len(argvs)
    return results


def _command_names() -> list[str]:
    return sorted(build_parser()._subparsers._group_actions[0].choices)  # noqa: SLF001


def test_help_and_refused_flags_import_no_torch_lightgbm_or_pyg(tiny_competition):
    """``tpugraphs --help``, every ``COMMAND --help``, every command's refusal of an unknown flag and
    ``validate`` / ``score`` of a small file answer without importing torch, torch_geometric or lightgbm
    (each would cost seconds to tens of seconds of start-up)."""
    public, solution = tiny_competition / "public", tiny_competition / "private" / "solution.csv"
    sample = str(public / "sample_submission.csv")
    argvs = [["--help"]]
    argvs += [[name, "--help"] for name in _command_names()]
    argvs += [[name, "--no-such-flag"] for name in _command_names()]
    argvs += [["validate", sample, "--data", str(public)],
              ["validate", sample, "--data", str(public), "--json"],
              ["score", sample, "--solution", str(solution)],
              ["score", sample, "--solution", str(solution), "--json"],
              ["grade", "0.6"], ["grade", "1.5"], ["grade", "abc", "--json"]]
    results = answers_without_heavy_imports(argvs)
    codes = {tuple(r["argv"]): r["code"] for r in results}
    assert all(codes[(name, "--help")] == 0 for name in _command_names())
    assert all(codes[(name, "--no-such-flag")] == 2 for name in _command_names())
    assert [r["code"] for r in results[-7:]] == [0, 0, 0, 0, 0, 2, 2]


@pytest.mark.parametrize("argv", [
    ["solve", "--method", "gnn", "--list-params"],
    ["solve", "--method", "gnn", "--list-params", "--json"],
    ["solve", "--method", "gbdt", "--list-params"],
    ["solve", "--method", "heuristic", "--list-params"],
    ["solve", "--method", "random", "--list-params"],
    ["solve", "--method", "gbdt", "--param", "lr=0.1", "--data", "{public}", "--out", "{out}"],
    ["solve", "--method", "gnn", "--param", "dropout=2", "--data", "{public}", "--out", "{out}"],
    ["solve", "--method", "gnn", "--param", "no_such_setting=1", "--data", "{public}", "--out", "{out}"],
    ["solve", "--method", "no-such-method", "--data", "{public}", "--out", "{out}"],
], ids=lambda argv: " ".join(a for a in argv if "{" not in a))
def test_settings_lists_and_refusals_import_no_torch_lightgbm_or_pyg(argv, tiny_competition, tmp_path):
    """A method's settings are listed and checked from its table alone: the gnn's without torch or
    PyTorch Geometric, the gbdt's without lightgbm; training imports them when it starts working."""
    values = {"public": str(tiny_competition / "public"), "out": str(tmp_path / "sub.csv")}
    [result] = answers_without_heavy_imports([[a.format(**values) for a in argv]])
    refused = any(a.startswith("--param") or a == "no-such-method" for a in argv)
    assert result["code"] == (2 if refused else 0), result["err"]
    assert not (tmp_path / "sub.csv").exists()
