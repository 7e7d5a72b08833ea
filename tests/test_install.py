"""The dependency split: pyproject.toml's base install and extras cover what each part of the kit imports.

``pip install .`` is the rules alone (numpy, pandas, tqdm); ``solutions``, ``leaderboard``,
``notebooks``, ``kaggle`` and ``dev`` add the other parts (docs/install.md). Every import statement
of the tree is read (module level and inside functions, notebooks' code cells too) and each
third-party module must come from a requirement declared for its part, so a new import without its
dependency fails here; a declared requirement nothing uses fails too.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from competition.commands.extras import PACKAGE, PROVIDED_BY, missing_extra_message

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
FIRST_PARTY = {"competition", "solutions", "leaderboard", "benchmarks", "tests"}

# Imported only behind a fallback, so no part requires them: the module's reason says what runs without.
OPTIONAL_IMPORTS = {
    "psutil": "solutions/solve/runner.py reads the resident set size from /proc/self/statm without it",
    "torch_scatter": "solutions/compute/accel.py scatters with torch's index_add_/scatter_reduce without it",
    "IPython": "progress bars import it only inside a running IPython kernel (a notebook), which has it",
}
# Declared but never imported by name: what uses them.
USED_WITHOUT_IMPORT = {
    "jinja2": "fastapi's Jinja2Templates renders the leaderboard pages",
    "psycopg": "SQLAlchemy's postgresql+psycopg driver (tpugraphs leaderboard --db postgresql+psycopg://...)",
    "nbclient": "its jupyter-execute runs the notebooks headless (tests/test_notebooks.py, in process)",
    "nbformat": "jupyter-execute reads and writes the notebooks with it (tests/test_notebooks.py too)",
    "ipykernel": "nbclient runs the notebooks on its python3 kernel",
    "six": "the kaggle package imports it without declaring it",
    "ruff": "make lint",
    "pytest-cov": "make coverage (pytest --cov)",
    "pytest-xdist": "make test and make check run the tests in two processes (pytest -n)",
}


def normalize(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> tuple[str, set[str]]:
    """``"psycopg[binary]>=3.1"`` -> ``("psycopg", {"binary"})``."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?", requirement)
    assert match, f"pyproject.toml: cannot read the requirement {requirement!r}"
    extras = {e.strip() for e in (match.group(2) or "").split(",") if e.strip()}
    return normalize(match.group(1)), extras


def declared(extra: str = "") -> set[str]:
    """The distributions ``pip install '.[extra]'`` asks for: the base, the extra, the extras it names."""
    project = PYPROJECT["project"]
    names = {requirement_name(r)[0] for r in project["dependencies"]}
    pending, seen = [extra] if extra else [], set()
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        for requirement in project["optional-dependencies"][current]:
            name, extras = requirement_name(requirement)
            if name == normalize(PACKAGE):
                pending += sorted(extras)
            else:
                names.add(name)
    return names


def imports_of_python(source: str, filename: str) -> list[tuple[int, str]]:
    """``(line, top-level module)`` of every absolute import in the source."""
    found = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


def imports_of(path: Path) -> list[tuple[str, str]]:
    """``(where, top-level module)`` for a .py file or a notebook's code cells (magics left out)."""
    if path.suffix == ".ipynb":
        found = []
        for number, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"], 1):
            if cell["cell_type"] != "code":
                continue
            code = "".join(cell["source"])
            code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                             for line in code.splitlines())
            found += [(f"{path.relative_to(ROOT)} cell {number} line {line}", module)
                      for line, module in imports_of_python(code, str(path))]
        return found
    return [(f"{path.relative_to(ROOT)}:{line}", module)
            for line, module in imports_of_python(path.read_text(encoding="utf-8"), str(path))]


def is_third_party(module: str, path: Path) -> bool:
    # Test helpers import each other as top-level modules (lb_support, golden, ...): siblings count as ours.
    local = (path.parent / f"{module}.py").is_file() or (path.parent / module).is_dir()
    return not (module in sys.stdlib_module_names or module in FIRST_PARTY or module == "__future__" or local)


KAGGLE_CLIENT = ROOT / "competition" / "data" / "remote" / "kaggle_api.py"
# Runs under the upstream baselines' own Python (.venv-peers/, make bench-peers), never the kit's: its
# imports are pinned in PEERS_REQUIREMENTS, not declared in pyproject.toml.
PEERS_LAUNCH = ROOT / "benchmarks" / "peers_launch.py"
PEERS_REQUIREMENTS = ROOT / "benchmarks" / "peers-requirements.txt"
TUNE = ROOT / "solutions" / "tune"  # `tpugraphs tune`: the `tune` extra (Optuna), not `solutions`


def part_files(part: str) -> list[Path]:
    files = {
        "base": [p for p in (ROOT / "competition").rglob("*.py") if p != KAGGLE_CLIENT],
        "kaggle": [KAGGLE_CLIENT],
        "solutions": [p for p in (ROOT / "solutions").rglob("*.py") if TUNE not in p.parents],
        "tune": list(TUNE.rglob("*.py")),
        "leaderboard": list((ROOT / "leaderboard").rglob("*.py")),
        "notebooks": list((ROOT / "notebooks").glob("*.ipynb")),
        "dev": [*(ROOT / "tests").rglob("*.py"),
                *(p for p in (ROOT / "benchmarks").rglob("*.py") if p != PEERS_LAUNCH)],
    }[part]
    return sorted(files)


PARTS = ("base", "kaggle", "solutions", "tune", "leaderboard", "notebooks", "dev")


def test_the_peers_launcher_imports_only_what_the_peers_environment_pins():
    pinned = {normalize(line.split("==")[0]) for line in PEERS_REQUIREMENTS.read_text().splitlines()
              if "==" in line and not line.startswith("#")}
    distribution = {"absl": "absl-py"}  # import name -> distribution, where they differ
    unpinned = [f"{where} imports {module}" for where, module in imports_of(PEERS_LAUNCH)
                if is_third_party(module, PEERS_LAUNCH) and module != "tpu_graphs"  # the peers' own code
                and normalize(distribution.get(module, module)) not in pinned]
    assert unpinned == [], f"pin these in {PEERS_REQUIREMENTS.name}: {unpinned}"


def undeclared_imports(part: str) -> list[str]:
    have = declared("" if part == "base" else part)
    problems = []
    for path in part_files(part):
        for where, module in imports_of(path):
            if not is_third_party(module, path) or module in OPTIONAL_IMPORTS:
                continue
            if module not in PROVIDED_BY:
                problems.append(f"{where} imports {module}, which competition/commands/extras.py's "
                                "PROVIDED_BY does not know: declare its distribution in pyproject.toml and "
                                "add it there")
            elif normalize(PROVIDED_BY[module][0]) not in have:
                problems.append(f"{where} imports {module}, but {PROVIDED_BY[module][0]} is not in "
                                f"{'the base dependencies' if part == 'base' else f'the {part!r} extra'}")
    return problems


@pytest.mark.parametrize("part", PARTS)
def test_every_third_party_import_of_a_part_is_declared_for_it(part):
    assert part_files(part), f"no files for {part}"
    assert undeclared_imports(part) == []


def test_the_rules_and_the_data_layer_need_only_the_base_dependencies():
    # The brief of the split: `pip install .` is the metric, validator and scorer with numpy, pandas, tqdm.
    assert declared() == {"numpy", "pandas", "scipy", "tqdm"}


def test_a_new_import_without_its_dependency_is_caught(tmp_path):
    probe = ROOT / "competition" / "_install_probe_for_test.py"
    try:
        probe.write_text("def f():\n    import torch\n    import tomlkit_never_declared\n")
        problems = undeclared_imports("base")
    finally:
        probe.unlink()
    assert problems == [
        "competition/_install_probe_for_test.py:2 imports torch, but torch is not in the base dependencies",
        "competition/_install_probe_for_test.py:3 imports tomlkit_never_declared, which "
        "competition/commands/extras.py's "
        "PROVIDED_BY does not know: declare its distribution in pyproject.toml and add it there",
    ]


def test_every_declared_requirement_is_used_by_its_part():
    project = PYPROJECT["project"]
    groups = {"base": project["dependencies"], **project["optional-dependencies"]}
    imported = {part: {m for p in part_files(part) for _, m in imports_of(p)} for part in PARTS}
    by_distribution = {normalize(d): m for m, (d, _) in PROVIDED_BY.items()}
    unused = []
    for part, requirements in groups.items():
        for requirement in requirements:
            name, _ = requirement_name(requirement)
            if name == normalize(PACKAGE) or name in USED_WITHOUT_IMPORT:
                continue
            if by_distribution.get(name) not in imported[part]:
                unused.append(f"{part}: {requirement} (nothing in the part imports it)")
    assert unused == []


def test_the_extras_that_bring_torch_say_to_install_its_cpu_build_first():
    from competition.commands.extras import EXTRAS_WITH_TORCH

    extras = PYPROJECT["project"]["optional-dependencies"]
    assert set(EXTRAS_WITH_TORCH) == {extra for extra in extras if "torch" in declared(extra)}


def test_the_extras_table_names_each_module_where_pyproject_declares_it():
    for module, (distribution, extra) in PROVIDED_BY.items():
        where = (PYPROJECT["project"]["dependencies"] if not extra
                 else PYPROJECT["project"]["optional-dependencies"][extra])
        assert normalize(distribution) in {requirement_name(r)[0] for r in where}, (
            module, distribution, extra)


def test_the_extras_table_agrees_with_the_installed_distributions():
    # Where a module is installed, its metadata names the distribution the table gives (no typo can hide).
    installed = importlib.metadata.packages_distributions()
    checked = 0
    for module, (distribution, _) in PROVIDED_BY.items():
        if module in installed:
            assert normalize(distribution) in {normalize(d) for d in installed[module]}, module
            checked += 1
    assert checked >= 10


def test_make_demo_installs_the_solutions_and_make_test_everything():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "STAMP := $(VENV)/.installed-solutions" in makefile and "demo: $(STAMP)" in makefile
    assert "TEST_STAMP := $(VENV)/.installed-dev" in makefile and "test: $(TEST_STAMP)" in makefile
    # dev is everything the tests touch: every extra but the Kaggle client (its tests fake the API).
    everything = set().union(*(declared(e) for e in PYPROJECT["project"]["optional-dependencies"]
                               if e != "kaggle"))
    assert declared("dev") == everything


def test_requirements_txt_installs_the_kit_with_its_solutions_and_agrees_with_pyproject():
    lines = [line.strip() for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    assert "-e .[solutions]" in lines  # the kit itself, with the extra a competitor needs
    listed = [line for line in lines if not line.startswith("-")]
    assert listed == [*PYPROJECT["project"]["dependencies"],
                      *PYPROJECT["project"]["optional-dependencies"]["solutions"]]


def test_a_missing_extra_names_the_extra_to_install():
    message = missing_extra_message(ModuleNotFoundError("No module named 'lightgbm'", name="lightgbm"))
    assert (message is not None and "'solutions' extra" in message
            and "pip install 'tpugraphs-kit[solutions]'" in message)
    assert "index-url https://download.pytorch.org/whl/cpu" in message  # never the CUDA build by accident
    leaderboard = missing_extra_message(ModuleNotFoundError(name="sqlalchemy.orm"))
    assert leaderboard == ("sqlalchemy is not installed; it comes with the kit's 'leaderboard' extra: "
                           "pip install 'tpugraphs-kit[leaderboard]' (in a clone: pip install -e "
                           "'.[leaderboard]')")
    # base: a broken install, keep the traceback
    assert missing_extra_message(ModuleNotFoundError(name="numpy")) is None
    assert missing_extra_message(ModuleNotFoundError(name="no_such_module")) is None


# A python that can import only the standard library, the kit and the base dependencies (with what they
# need): as in a venv made by `pip install .` alone.
BASE_ONLY = """
import importlib.metadata, sys
from packaging.requirements import Requirement

def closure(names):
    seen, pending = set(), list(names)
    while pending:
        name = pending.pop().lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        for text in importlib.metadata.requires(name) or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append(requirement.name)
    return seen

allowed = closure(["numpy", "pandas", "scipy", "tqdm"])
blocked = {module for module, dists in importlib.metadata.packages_distributions().items()
           if module not in {"competition", "solutions", "leaderboard"}
           and not {d.lower().replace("_", "-") for d in dists} & allowed}

class BaseOnly:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, BaseOnly())
from competition.cli import main
sys.exit(main(sys.argv[1:]))
"""


def base_only(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BASE_ONLY, *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_the_metric_validator_and_scorer_run_with_the_base_dependencies_alone(tiny_competition):
    public, solution = tiny_competition / "public", tiny_competition / "private" / "solution.csv"
    sample = public / "sample_submission.csv"
    validated = base_only("validate", str(sample), "--data", str(public))
    assert validated.returncode == 0, validated.stderr
    scored = base_only("score", str(sample), "--solution", str(solution), "--json")
    assert scored.returncode == 0, scored.stderr
    assert "score" in json.loads(scored.stdout)


def test_a_solution_without_its_extra_says_what_to_install(tiny_competition, tmp_path):
    solved = base_only("solve", "--data", str(tiny_competition / "public"), "--method", "gbdt",
                       "--out", str(tmp_path / "gbdt.csv"))
    assert solved.returncode == 2, solved.stderr
    assert "Traceback" not in solved.stderr
    # The first of the extra's packages the method imports is the one named (lightgbm for gbdt).
    assert "is not installed" in solved.stderr and "pip install 'tpugraphs-kit[solutions]'" in solved.stderr
    assert "lightgbm is not installed" in solved.stderr
