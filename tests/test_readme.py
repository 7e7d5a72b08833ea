"""The README's code blocks work when pasted in order, and again when pasted a second time, so they cannot
rot.

Every ```bash and ```python block runs, in README order, in one scratch folder that links the
repository's tracked top-level files and folders (what a reader who pastes them into a terminal at the
repository root would get, minus the repository's own data/ and runs/).
Two kinds of lines are not run, and are listed in the test's output:

- a line (or a whole block, with the HTML comment ``<!-- readme: needs REASON -->`` on the line just
  above its fence) that needs something a test machine lacks: its trailing comment says so, starting
  with ``# needs`` (e.g. ``# needs a GPU``, ``# needs the network``, ``# needs your own .pb file``);
- ``source .venv/bin/activate``: the test already runs with the kit's interpreter first on PATH;
- ``.venv/bin/python -m pip install -e '.[EXTRA]'``: ``make test`` installed every extra but kaggle, so
  the test checks instead that EXTRA is declared in pyproject.toml and that what it requires is
  installed (a README naming the wrong extra fails).

A block runs in a session of its own, killed with everything it started (a server sent to the
background included) once the block ends.

Blocks without a language (tables, trees) are text, not code.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BLOCK_NEEDS = re.compile(r"<!--\s*readme:\s*needs\s+(.+?)\s*-->")
LINE_NEEDS = re.compile(r"#\s*needs\b")
# `make demo` without the install: the demo's data/demo and its gbdt and gnn submissions, at the tiny scale so
# that the README's commands on data/demo run in seconds here.
MAKE_DEMO_STAND_IN = "python -m solutions.demo --out data/demo --scale tiny --methods gbdt gnn"
PIP_INSTALL_EXTRA = re.compile(r"^\S*python\S* -m pip install (?:-e )?'?\.\[([\w,-]+)\]'?(?:\s+#.*)?$")


@dataclass
class Block:
    language: str
    line: int  # of the opening fence
    text: str
    needs: str | None  # why the whole block cannot run here, or None


def code_blocks(markdown: str) -> list[Block]:
    blocks, lines = [], markdown.splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        start = i
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        i += 1
        needs = BLOCK_NEEDS.search(lines[start - 1]) if start else None
        blocks.append(Block(fence.group(1), start + 1, "\n".join(body), needs.group(1) if needs else None))
    return blocks


def bash_commands(text: str) -> list[str]:
    """Logical command lines of a bash block: continuations joined, comments and blank lines dropped."""
    commands, current = [], ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        if current.strip() and not current.lstrip().startswith("#"):
            commands.append(current.strip())
        current = ""
    return commands


def _needs(command: str) -> bool:
    """Whether a command's trailing comment says it needs what the test machine lacks."""
    try:
        shlex.split(command, comments=False)
    except ValueError:
        return bool(LINE_NEEDS.search(command))
    comment = command.split(" #", 1)[1] if " #" in command else ""
    return bool(LINE_NEEDS.search("#" + comment)) if comment else False


def test_the_block_parser_reads_languages_markers_and_continuations():
    text = ("intro\n<!-- readme: needs the network -->\n```bash\ncurl x \\\n  -o y   # fetch\n```\n"
            "```\nplain\n```\n```python\nprint(1)\n```\n")
    blocks = code_blocks(text)
    assert [(b.language, b.needs) for b in blocks] == [("bash", "the network"), ("", None), ("python", None)]
    assert bash_commands(blocks[0].text) == ["curl x    -o y   # fetch"]
    assert _needs("tpugraphs solve --device cuda  # needs a GPU") and not _needs("tpugraphs solve  # or gnn")


def declared_extras() -> dict[str, list[str]]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return pyproject["project"]["optional-dependencies"]


def missing_for_extra(extra: str, extras: dict[str, list[str]]) -> list[str]:
    """The requirements of ``extra`` (its own extras followed) whose distribution is not installed here."""
    missing = []
    for requirement in extras[extra]:
        name = re.split(r"[\[<>=!~;\s]", requirement, maxsplit=1)[0]
        if name == "tpugraphs-kit":
            inner = re.search(r"\[([\w,-]+)\]", requirement)
            for sub in (inner.group(1).split(",") if inner else []):
                missing += missing_for_extra(sub, extras)
            continue
        try:
            metadata.version(name)
        except metadata.PackageNotFoundError:
            missing.append(f"{name} (extra {extra})")
    return missing


def check_pip_install(command: str) -> None:
    """A README line installing an extra names one pyproject.toml declares, and it is installed here."""
    match = PIP_INSTALL_EXTRA.match(command)
    assert match, f"a pip install line the test does not know how to check: {command}"
    extras = declared_extras()
    for extra in match.group(1).split(","):
        assert extra in extras, f"{command}: pyproject.toml declares no extra {extra!r}"
        assert missing_for_extra(extra, extras) == [], f"{command}: not installed here"


def run_block(script: str, cwd: Path, env: dict[str, str], timeout: int) -> subprocess.CompletedProcess:
    """Run a bash script in a session of its own and end that session once bash exits, so that a server
    the block sent to the background never outlives it, whether the block passed or failed. Output goes
    to files, not pipes: a background process holding a pipe open would keep the wait going."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(["bash", "-c", script], cwd=cwd, env=env, stdout=out, stderr=err,
                                   text=True, start_new_session=True)
        try:
            process.wait(timeout=timeout)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            if process.poll() is None:
                process.kill()
                process.wait()
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(process.args, process.returncode, out.read(), err.read())


def test_pip_install_lines_are_checked_against_pyproject():
    check_pip_install(".venv/bin/python -m pip install -e '.[leaderboard]'")
    with pytest.raises(AssertionError, match="no extra"):
        check_pip_install(".venv/bin/python -m pip install -e '.[no-such-extra]'")
    with pytest.raises(AssertionError, match="does not know"):
        check_pip_install("pip install something-else")


def test_a_background_server_does_not_outlive_its_block(tmp_path):
    done = run_block("sleep 300 &\necho $! > pid\n", tmp_path, dict(os.environ), timeout=30)
    assert done.returncode == 0
    pid = int((tmp_path / "pid").read_text())
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    pytest.fail("the background process of a block outlived it")


def link_the_repository(folder: Path) -> list[Path]:
    """Link the repository's tracked top-level entries into ``folder`` (the README reads some, such as
    the shipped real protos); data/ and runs/, where the README writes, stay the folder's own."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True, check=False)
    names = ({line.split("/", 1)[0] for line in listed.stdout.splitlines()} if listed.returncode == 0
             else {p.name for p in ROOT.iterdir() if not p.name.startswith(".")})
    links = []
    for name in sorted(names - {"data", "runs"}):
        link = folder / name
        link.symlink_to(ROOT / name, target_is_directory=(ROOT / name).is_dir())
        links.append(link)
    return links


def files_written(folder: Path) -> list[str]:
    """The files under ``folder``, relative to it, not following the links into the repository."""
    written = []
    for top, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not (Path(top) / d).is_symlink()]
        written += [(Path(top) / f).relative_to(folder).as_posix() for f in files
                    if not (Path(top) / f).is_symlink()]
    return written


@pytest.mark.slow
def test_readme_code_blocks_run_in_order(tmp_path):
    link_the_repository(tmp_path)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    env.pop("TPUGRAPHS_DATA", None)
    ran, skipped = [], []
    for block in code_blocks(README.read_text(encoding="utf-8")):
        where = f"README.md:{block.line}"
        if block.language not in ("bash", "python"):
            continue
        if block.needs:
            skipped.append(f"{where} (block: needs {block.needs})")
            continue
        if block.language == "python":
            done = subprocess.run([sys.executable, "-c", block.text], cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, f"{where}: the python block failed:\n{done.stdout}\n{done.stderr}"
            ran.append(f"{where} (python)")
            continue
        runnable = []
        for command in bash_commands(block.text):
            if command.startswith("source .venv/bin/activate"):
                continue
            if re.match(r"^\S*python\S* -m pip install ", command):
                check_pip_install(command)
                skipped.append(f"{where}: {command} (checked against pyproject.toml; make test installed it)")
                continue
            if _needs(command):
                skipped.append(f"{where}: {command}")
            elif command.startswith("make demo"):  # what the rest of the README reuses: data/demo
                runnable.append(MAKE_DEMO_STAND_IN)
                skipped.append(f"{where}: {command} (run as: {MAKE_DEMO_STAND_IN})")
            elif command.startswith("make "):
                skipped.append(f"{where}: {command} (the Makefile itself is what make test runs)")
            else:
                runnable.append(command)
        if not runnable:
            continue
        # One shell per block, as a reader pastes it: a variable set on one line serves the next. Pasted a
        # second time, it must work again (a reader retries a block, or comes back to it tomorrow).
        script = "set -ex\n" + "\n".join(runnable)
        for paste in ("first", "second"):
            done = run_block(script, tmp_path, env, timeout=1200)
            assert done.returncode == 0, (f"{where}, pasted a {paste} time: exit {done.returncode}\n"
                                          f"{done.stdout[-3000:]}\n{done.stderr[-5000:]}")
        ran.extend(f"{where}: {command}" for command in runnable)
    print("ran:\n  " + "\n  ".join(ran) + "\nnot run here:\n  " + "\n  ".join(skipped))
    assert ran, "no README code ran"
    written = files_written(tmp_path)
    assert not_ignored(written) == [], "the README writes files git would list (git status --porcelain)"


def not_ignored(paths: list[str]) -> list[str]:
    """The paths (relative to the repository root) that the repository's .gitignore does not cover."""
    if not paths:
        return []
    done = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "--no-index", "--stdin"],
                          input="\n".join(paths) + "\n", capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1) or not (ROOT / ".git").exists():
        pytest.skip(f"not a git checkout ({done.stderr.strip()})")
    ignored = set(done.stdout.splitlines())
    return [p for p in paths if p not in ignored]


def test_what_the_kit_writes_by_default_is_ignored():
    """The default outputs (the leaderboard database holds the hidden labels) never show in git status."""
    from leaderboard.commands import DEFAULT_DB

    defaults = [DEFAULT_DB.removeprefix("sqlite:///"), "data/demo/private/solution.csv", "runs/gbdt.csv",
                "runs/gbdt.models/tile_xla/model.txt", "notebooks/output/work/leaderboard.db",
                "leaderboard.db", "leaderboard.db-wal"]
    assert not_ignored(defaults) == []
    files = ["README.md", "solutions/settings/schema.py"]
    assert not_ignored(files) == files


def test_the_readme_shows_the_demo_table_as_the_demo_prints_it():
    """The quick start's table is `make demo`'s own (solutions.demo.results_table) without its time and
    memory columns: the same header, the same 'valid / test' line, the same rows and the same legend."""
    from types import SimpleNamespace

    from competition.collections import COLLECTIONS
    from solutions.demo import results_table

    printed = next(b for b in code_blocks(README.read_text(encoding="utf-8")) if b.language == ""
                   and "valid / test" in b.text).text.splitlines()
    methods = ("random", "heuristic", "gbdt", "gnn")
    rows = [line for line in printed if line.split() and line.split()[0] in methods]
    assert len(rows) == 4, printed
    results, marks = {}, {}
    for row in rows:
        method, *cells = row.replace("/", " ").split()
        numbers = [float(c.rstrip("*~")) for c in cells]
        marks[method] = tuple(next((m for m in "*~" if c.endswith(m)), "") for c in cells[-2:])
        valid, test = numbers[0:10:2], numbers[1:10:2]
        collections = [SimpleNamespace(collection=c.name, validation_score=v, peak_memory_mb=0.0)
                       for c, v in zip(COLLECTIONS, valid, strict=True)]
        solved = SimpleNamespace(collections=collections, validation_score=numbers[10], seconds=0.0)
        scored = SimpleNamespace(collections={c.name: t for c, t in zip(COLLECTIONS, test, strict=True)},
                                 score=numbers[11])
        results[method] = (solved, scored)
    table = results_table(results, marks).splitlines()
    time_and_memory = len(f" {'time s':>7} {'peak MB':>8}")
    expected = [table[0][:-time_and_memory], table[1], table[2][:len(table[0]) - time_and_memory]]
    expected += [line[:-time_and_memory] for line in table[3:-1]] + [table[-1]]
    assert [line.rstrip() for line in printed] == [line.rstrip() for line in expected]


TIMED = re.compile(r"`make (demo|test|check)` (?:takes|took) (\d[\d,]*) s")


def timings_rows() -> dict[str, str]:
    """BENCHMARKS.md's Timings table: the first cell (the command) -> the whole row."""
    text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    section = text.split("## Timings", 1)[1].split("\n## ", 1)[0]
    return {row.split("|")[1].strip(): row for row in section.splitlines() if row.startswith("| `make ")}


def test_the_times_the_readme_quotes_are_the_timings_tables():
    quoted = TIMED.findall(" ".join(README.read_text(encoding="utf-8").split()))
    assert {command for command, _ in quoted} >= {"demo", "test"}, "the README quotes no make demo/test time"
    rows = timings_rows()
    for command, seconds in quoted:
        row = next((r for cell, r in rows.items() if cell.startswith(f"`make {command}`")), None)
        assert row is not None, f"BENCHMARKS.md's Timings table has no make {command} row"
        assert f"{seconds} s" in row, f"README quotes make {command} at {seconds} s; BENCHMARKS: {row}"
