"""The layers of docs/architecture.md hold: each file imports only what its row of the document's
import-rules table allows (the table is read from the document, so it is the rule itself). No import
circle in the kit or the benchmarks, and no function in the kit longer than 80 lines.

Every ``import`` statement is read from the source (module level and inside functions alike), so a
lazy import that breaks a layer is caught as surely as a top-level one.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMPETITION = ROOT / "competition"


def imported_modules(path: Path) -> list[tuple[int, str, bool]]:
    """``(line, module, at module level)`` for every import in a file (relative imports resolved), and the
    modules the file imports by name (the architecture document's table; line 0, not at module level)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    top_level = {id(node) for node in tree.body}
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, id(node) in top_level) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, module] if module else base)
            found.append((node.lineno, module, id(node) in top_level))
    relative = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else ""
    found += [(0, module, False) for module in BY_NAME.get(relative, ())]
    return found


NAMED_MODULE = re.compile(r"^((?:competition|solutions|leaderboard)(?:\.[A-Za-z_]\w*)+)(?::[A-Za-z_]\w*)?$")


def named_in_source(path: Path) -> set[str]:
    """Kit modules a file names in a string (``"package.module"`` or ``"package.module:Name"``) that exist:
    the imports by name of the architecture document's table."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = NAMED_MODULE.match(node.value)
            if match and module_path(match.group(1)):
                found.add(match.group(1))
    return found


def python_files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.py"))


KIT = ("competition", "solutions", "leaderboard")
ARCHITECTURE_DOC = ROOT / "docs" / "architecture.md"


@dataclass(frozen=True)
class Part:
    """One row of docs/architecture.md's import-rules table."""

    name: str
    paths: tuple[str, ...]  # files, or folders ending in '/'
    may_import: tuple[str, ...] | None  # other parts; None: every part
    never: tuple[str, ...]  # third-party top-level modules


def import_rules(text: str) -> list[Part]:
    """The rows of the table under '## Import rules' in the architecture document."""
    section = text.split("## Import rules", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| part ")]
    parts = []
    for row in rows:
        name, files, may, never = (cell.strip() for cell in row.strip().strip("|").split("|"))
        paths = tuple(re.findall(r"`([^`]+)`", files))
        allowed = (None if may == "every part"
                   else tuple(p.strip() for p in may.split(",") if p.strip() != "none"))
        parts.append(Part(name, paths, allowed, tuple(re.findall(r"`([^`]+)`", never))))
    return parts


RULE_TABLE = import_rules(ARCHITECTURE_DOC.read_text(encoding="utf-8"))


def imports_by_name(text: str) -> dict[str, tuple[str, ...]]:
    """The table under '## Imports by name' in the architecture document: file -> the modules it names."""
    section = text.split("## Imports by name", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    table = {}
    for row in rows:
        file, modules = (cell.strip() for cell in row.strip().strip("|").split("|"))
        table[file.strip("`")] = tuple(re.findall(r"`([^`]+)`", modules))
    return table


BY_NAME = imports_by_name(ARCHITECTURE_DOC.read_text(encoding="utf-8"))


def part_of(relative: str, parts: list[Part] = RULE_TABLE) -> Part | None:
    """The row naming ``relative`` (a path under the repository) most closely: a file before its folder."""
    best, depth = None, -1
    for part in parts:
        for path in part.paths:
            hit = relative == path or (path.endswith("/") and relative.startswith(path))
            if hit and len(path) > depth:
                best, depth = part, len(path)
    return best


def module_path(module: str) -> str | None:
    """The repository path of a kit module (``competition.data.graphs`` -> ``competition/data/graphs.py``)."""
    base = ROOT / Path(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate.relative_to(ROOT).as_posix()
    return None


def layer_offences(files: list[Path], parts: list[Part] = RULE_TABLE) -> list[str]:
    """Every import that breaks the table: a kit module of a part not allowed, or a forbidden library."""
    out = []
    for path in files:
        relative = path.relative_to(ROOT).as_posix()
        part = part_of(relative, parts)
        if part is None:
            out.append(f"{relative}: no row of the import-rules table names it")
            continue
        for line, module, _ in imported_modules(path):
            root = module.split(".")[0]
            if root in KIT:
                target = part_of(module_path(module) or "", parts)
                if target is None or target is part or part.may_import is None:
                    continue
                if target.name not in part.may_import:
                    out.append(f"{relative}:{line} ({part.name}) imports {module} ({target.name})")
            elif root in part.never:
                out.append(f"{relative}:{line} ({part.name}) imports {module}")
    return out


KIT_FILES = [p for package in KIT for p in python_files(ROOT / package)]


def test_the_import_rules_table_is_read_and_covers_every_part():
    names = [part.name for part in RULE_TABLE]
    assert {"core", "data", "progress", "shared solutions", "gbdt", "gnn", "leaderboard",
            "command line"} <= set(names)
    for part in RULE_TABLE:
        assert part.paths, part.name
        for path in part.paths:
            assert (ROOT / path).exists(), f"the table names {path}, which does not exist"
        assert part.may_import is None or set(part.may_import) <= set(names), part


def test_every_file_imports_only_what_its_row_of_the_table_allows():
    assert layer_offences(KIT_FILES) == []


def test_the_imports_by_name_table_lists_exactly_what_each_file_names():
    assert set(BY_NAME) == {"competition/cli.py", "solutions/methods/registry.py"}
    for file, modules in BY_NAME.items():
        assert set(modules) == named_in_source(ROOT / file), file
    for path in KIT_FILES:
        relative = path.relative_to(ROOT).as_posix()
        source = path.read_text(encoding="utf-8")
        if relative not in BY_NAME and ("import_module(" in source or "__import__(" in source):
            # A file that imports modules by name but is not in the table would hide them from the checks;
            # competition/moved.py imports only the moved 1.0 paths' current modules, which are kit files too.
            assert relative == "competition/moved.py", f"{relative} imports by name: list it in the table"


def test_an_import_by_name_is_held_to_the_layer_rules(tmp_path, monkeypatch):
    # The registry naming the command line would break its row; the table makes that visible.
    monkeypatch.setitem(BY_NAME, "solutions/methods/registry.py", ("competition.cli",))
    offences = layer_offences([ROOT / "solutions" / "methods" / "registry.py"])
    assert offences == [
        "solutions/methods/registry.py:0 (method registry) imports competition.cli (command line)"]


def test_the_rules_are_a_closed_list_inside_core():
    # The scorer version hashes these files and the Codabench export copies them: every kit module a rules
    # file imports must be a rules file too, or the exported scorer would not run on its own.
    from competition.sources import RULE_FILES

    rules = {f"competition/{name}" for name in RULE_FILES}
    assert {"competition/scoring.py", "competition/tasks.py", "competition/metrics/__init__.py"} <= rules
    missing = []
    for relative in sorted(rules):
        assert (ROOT / relative).is_file(), relative
        assert part_of(relative).name == "core", relative
        for line, module, _ in imported_modules(ROOT / relative):
            if module.split(".")[0] in KIT and module_path(module) not in rules:
                missing.append(f"{relative}:{line} imports {module}, which is not in RULE_FILES")
    assert missing == []


def import_cycles(files: list[Path], roots: tuple[str, ...] = (*KIT, "benchmarks")) -> list[str]:
    """Every loop of imports among ``files`` (module-level and lazy imports alike), as ``a -> b -> a``; a
    package's own ``__init__`` importing its modules is not one."""
    graph: dict[str, set[str]] = {}
    for path in files:
        relative = path.relative_to(ROOT).as_posix()
        targets = {module_path(m) for _, m, _ in imported_modules(path) if m.split(".")[0] in roots}
        graph[relative] = {t for t in targets if t and t != relative
                           and not (t.endswith("__init__.py")
                                    and relative.startswith(t[: -len("__init__.py")]))}
    cycles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(trail[trail.index(nxt):] + [node, nxt]) if nxt in trail
                              else f"{node} -> {nxt}")
            elif nxt not in state:
                visit(nxt, [*trail, node])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return cycles


BENCHMARK_FILES = python_files(ROOT / "benchmarks")


def test_no_import_cycle_in_the_kit_or_the_benchmarks():
    assert BENCHMARK_FILES
    assert import_cycles(KIT_FILES + BENCHMARK_FILES) == []


MAX_FUNCTION_LINES = 80


def long_functions(files: list[Path], limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, str, int]]:
    """``(path:line, name, lines)`` of every function or method longer than ``limit`` lines, from its
    ``def`` to its last line (a nested function is measured on its own too)."""
    out = []
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    out.append((f"{path.relative_to(ROOT).as_posix()}:{node.lineno}", node.name, lines))
    return out


def test_no_function_is_longer_than_80_lines():
    assert long_functions(KIT_FILES + BENCHMARK_FILES) == []


def test_a_cycle_and_a_long_function_are_caught(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "benchmarks").mkdir()
    first, second = tmp_path / "benchmarks" / "first.py", tmp_path / "benchmarks" / "second.py"
    first.write_text("from benchmarks.second import B\n")
    second.write_text("def f():\n    from benchmarks.first import A\n")
    assert import_cycles([first, second]) == [
        "benchmarks/first.py -> benchmarks/second.py -> benchmarks/first.py"]
    body = [f"x = {i}\n" for i in range(MAX_FUNCTION_LINES - 1)]  # a def and these: the longest allowed
    short = "def short():\n" + "".join("    " + line for line in body)
    long = "class C:\n    def long(self):\n" + "".join("        " + line for line in body)
    second.write_text(f"{short}\n\n{long}        return x\n")
    assert long_functions([second]) == [(f"benchmarks/second.py:{MAX_FUNCTION_LINES + 4}", "long", 81)]


COMMAND_MODULES = [*python_files(COMPETITION / "commands"), ROOT / "solutions" / "solve" / "command.py",
                   ROOT / "solutions" / "rank" / "command.py",
                   ROOT / "leaderboard" / "commands.py", COMPETITION / "cli.py"]


@pytest.mark.parametrize("path", COMMAND_MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_command_modules_import_only_the_standard_library_at_import_time(path):
    # The exception types every command raises, the commands' own helpers (checked here too) and the
    # collections table (plain data: it imports only the standard library).
    allowed_kit = ("competition.errors", "competition.commands", "competition.collections")
    heavy = []
    for line, module, at_top in imported_modules(path):
        root = module.split(".")[0]
        if not at_top or root == "__future__" or module.startswith(allowed_kit):
            continue
        if root not in sys.stdlib_module_names:
            heavy.append(f"{path.relative_to(ROOT)}:{line} imports {module} at import time")
    assert heavy == []


def test_a_layer_break_is_caught(tmp_path, monkeypatch):
    # The scan itself, on probes written to tmp_path and placed in the table as if they were kit files:
    # a lazy import inside a function is found like a top-level one, and a method importing another is caught.
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "competition" / "data").mkdir(parents=True)
    (tmp_path / "competition" / "data" / "graphs.py").write_text("")
    (tmp_path / "solutions" / "methods" / "gnn").mkdir(parents=True)
    (tmp_path / "solutions" / "methods" / "gnn" / "__init__.py").write_text("")
    rules = (tmp_path / "competition" / "probe.py")
    rules.write_text("def f():\n    from competition.data.graphs import load_graph\n")
    method = tmp_path / "solutions" / "methods" / "heuristic.py"
    method.write_text("import torch\nfrom solutions.methods.gnn import GNNRanker\n")
    assert layer_offences([rules, method]) == [
        "competition/probe.py:2 (core) imports competition.data.graphs (data)",
        "solutions/methods/heuristic.py:1 (heuristic) imports torch",
        "solutions/methods/heuristic.py:2 (heuristic) imports solutions.methods.gnn (gnn)",
    ]


def test_building_the_command_line_imports_no_numpy():
    # `tpugraphs --help` and a usage error answer at once: registering every subcommand stays light.
    import subprocess

    code = "import sys; from competition.cli import build_parser; build_parser(); print(sorted(" \
           "m for m in ('numpy', 'pandas', 'torch') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_kind_switch_is_read_only_by_the_task_and_the_adapters():
    """``Task.config_per_node`` is read in competition/tasks.py alone (which names what follows from it) and
    in the kinds' adapters; every other file asks a named capability or ``kind_of(task)``."""
    readers = []
    for path in KIT_FILES + BENCHMARK_FILES:
        relative = path.relative_to(ROOT).as_posix()
        if relative == "competition/tasks.py" or relative.startswith("solutions/kinds/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "config_per_node":
                readers.append(f"{relative}:{node.lineno}")
    assert readers == []
