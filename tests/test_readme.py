"""The README's code blocks work when pasted in order, so they cannot rot.

Every ```bash and ```python block runs, in README order, in one scratch folder (what a reader who
pastes them into a terminal at the repository root would get, minus the repository's own data/).
Two kinds of lines are not run, and are listed in the test's output:

- a line (or a whole block, with the HTML comment ``<!-- readme: needs REASON -->`` on the line just
  above its fence) that needs something a test machine lacks: its trailing comment says so, starting
  with ``# needs`` (e.g. ``# needs a GPU``, ``# needs the network``, ``# needs your own .pb file``);
- ``source .venv/bin/activate``: the test already runs with the kit's interpreter first on PATH.

Blocks without a language (tables, trees) are text, not code.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BLOCK_NEEDS = re.compile(r"<!--\s*readme:\s*needs\s+(.+?)\s*-->")
LINE_NEEDS = re.compile(r"#\s*needs\b")
# `make demo` without the install: the demo's data/demo and its gbdt submission, at the tiny scale so
# that the README's commands on data/demo run in seconds here.
MAKE_DEMO_STAND_IN = "python -m solutions.demo --out data/demo --scale tiny --methods gbdt"


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


@pytest.mark.slow
def test_readme_code_blocks_run_in_order(tmp_path):
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
        # One shell per block, as a reader pastes it: a variable set on one line serves the next.
        script = "set -ex\n" + "\n".join(runnable)
        done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=1200)
        assert done.returncode == 0, (f"{where}: exit {done.returncode}\n{done.stdout[-3000:]}\n"
                                      f"{done.stderr[-5000:]}")
        ran.extend(f"{where}: {command}" for command in runnable)
    print("ran:\n  " + "\n  ".join(ran) + "\nnot run here:\n  " + "\n  ".join(skipped))
    assert ran, "no README code ran"
    written = [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()]
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
    assert not_ignored(["README.md", "solutions/settings.py"]) == ["README.md", "solutions/settings.py"]
