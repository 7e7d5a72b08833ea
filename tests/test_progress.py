"""``competition.progress``: the form of progress follows where the output goes.

- the choice (off, forced by the environment, a terminal, a pipe) as a table;
- the plain-line form: periodic lines, never a carriage return, silent for short passing bars;
- a real ``tpugraphs solve`` with stdout and stderr redirected to a file: no carriage return in it,
  progress lines when asked for, none with ``--quiet``.
The notebook form is checked where it is used: ``tests/test_notebooks.py`` executes the notebooks.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from competition import progress as progress_module
from competition.progress import choose_mode, progress

ROOT = Path(__file__).resolve().parents[1]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def clean_env(monkeypatch):
    for name in (progress_module.MODE_ENV, progress_module.EVERY_ENV, "TQDM_DISABLE"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize(
    ("enabled", "env", "stream", "expected"),
    [
        (False, {}, _Terminal(), "off"),
        (True, {"TQDM_DISABLE": "1"}, _Terminal(), "off"),
        (True, {"TQDM_DISABLE": "0"}, _Terminal(), "bars"),
        (True, {}, _Terminal(), "bars"),
        (True, {}, io.StringIO(), "lines"),
        (True, {progress_module.MODE_ENV: "lines"}, _Terminal(), "lines"),
        (True, {progress_module.MODE_ENV: "OFF"}, _Terminal(), "off"),
        (False, {progress_module.MODE_ENV: "bars"}, _Terminal(), "off"),  # --quiet wins
    ],
    ids=["quiet", "tqdm-disable", "tqdm-disable-0", "terminal", "pipe", "forced-lines", "forced-off",
         "quiet-beats-forced"],
)
def test_the_form_follows_the_output(clean_env, enabled, env, stream, expected):
    for name, value in env.items():
        clean_env.setenv(name, value)
    assert choose_mode(enabled, stream) == expected


def test_an_unknown_forced_form_is_refused(clean_env):
    clean_env.setenv(progress_module.MODE_ENV, "fancy")
    with pytest.raises(ValueError, match=r"\$TPUGRAPHS_PROGRESS = 'fancy': expected one of bars, notebook"):
        choose_mode(True, io.StringIO())


def test_plain_lines_are_periodic_and_have_no_carriage_return(clean_env):
    clean_env.setenv(progress_module.EVERY_ENV, "0")  # a line on every update
    log = io.StringIO()
    assert list(progress(range(4), desc="validating tile:xla", unit="graph", stream=log)) == [0, 1, 2, 3]
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue()
    assert lines[0].startswith("validating tile:xla:  25% 1/4 [")
    assert lines[-1].startswith("validating tile:xla: 100% 4/4 [")
    assert "graph/s" in lines[-1]


def test_short_work_says_nothing_in_a_log(clean_env):
    log = io.StringIO()
    list(progress(range(100), desc="loading", leave=False, stream=log))  # well under 30 s
    with progress(total=3, desc="synth tiny", unit="graph", stream=log) as bar:
        bar.update(3)
    assert log.getvalue() == ""


def test_long_work_ends_with_a_line_in_a_log(clean_env, monkeypatch):
    now = [0.0]
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: now[0])
    log = io.StringIO()
    with progress(total=3, desc="synth small", unit="graph", stream=log) as bar:
        for seconds in (1.0, 31.0, 40.0):  # the second update is due (30 s after the start), the third not
            now[0] = seconds
            bar.update(1)
    lines = log.getvalue().splitlines()
    assert [line.split(" [")[0] for line in lines] == ["synth small:  67% 2/3", "synth small: 100% 3/3"]


def test_off_counts_but_prints_nothing(clean_env, capsys):
    bar = progress(total=5, enabled=False)
    bar.update(2)
    bar.set_postfix(loss="0.1")
    bar.close()
    assert bar.n == 2
    assert capsys.readouterr() == ("", "")


def test_a_terminal_gets_tqdm(clean_env):
    screen = _Terminal()
    for _ in progress(range(3), desc="epochs", stream=screen):
        pass
    assert "\r" in screen.getvalue() and "3/3" in screen.getvalue()


@pytest.mark.slow
@pytest.mark.parametrize("quiet", [False, True], ids=["progress", "quiet"])
def test_solve_into_a_log_file_has_no_carriage_return(tiny_competition: Path, tmp_path: Path, quiet: bool):
    env = {k: v for k, v in os.environ.items() if k not in ("TQDM_DISABLE", progress_module.MODE_ENV)}
    env.update({"PYTHONPATH": str(ROOT), progress_module.EVERY_ENV: "0"})  # every update would print a line
    log = tmp_path / "solve.log"
    command = [sys.executable, "-m", "competition.cli", "solve", "--method", "gbdt",
               "--data", str(tiny_competition / "public"), "--out", str(tmp_path / "gbdt.csv"),
               "--model-dir", str(tmp_path / "models"), *(["--quiet"] if quiet else [])]
    with log.open("w") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tmp_path,
                              timeout=300)
    text = log.read_text()
    assert done.returncode == 0, text
    assert "\r" not in text
    progress_lines = [line for line in text.splitlines() if line.startswith("validating tile:xla:")]
    assert (progress_lines == []) if quiet else progress_lines, text
