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
    assert set(figures) == {"score", "public", "private", "collections"}
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
