"""The starter notebooks and ``competition.data.locate``.

- ``find_data``'s order of precedence (argument, ``$TPUGRAPHS_DATA``, the Kaggle input folder, the
  embedded competition), its refusals and the build-once cache of the embedded competition, on
  temporary folders with the environment patched.
- Every notebook in ``notebooks/`` as committed: executed (``make notebooks``) without an error or a
  warning, its outputs from its current cells on this release of the kit and of the generator (the
  stamp ``notebooks/execute.py`` recorded), of bounded size, the same install and setup cells; a
  competitor's notebook looks at the hidden test labels only in its last section, "How did we do?".
- The install cell on a stand-in for Kaggle's offline input folder: the repository as a dataset installs
  with no index (slow).
- Every notebook executed top to bottom in a fresh kernel (nbclient) on the tiny embedded competition,
  offline, within a two-minute budget, with progress on (as a user sees it): no ``TqdmWarning``, a
  bounded number of output lines per cell, a valid ``submission.csv`` in its working folder; the
  hidden labels opened (an audit hook in the kernel) only after the submission is written, in the
  "How did we do?" section; its figures within the cross-machine spread of those recorded by ``make
  notebooks`` (``notebooks/execute.py``, ``tiny_figures``).
  The kernel is this interpreter (``sys.executable``, i.e. ``.venv/bin/python`` under ``make test``),
  registered as ``python3`` through a temporary ``JUPYTER_PATH``: no kernel installation step.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from competition.data import locate
from competition.data.locate import (
    DataLocation,
    embedded_competition,
    find_data,
    kaggle_data_dir,
    setup_notebook,
)

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
NOTEBOOK_BUDGET_S = 120  # a whole notebook on the tiny competition, kernel start included
MAX_OUTPUT_BYTES = 50_000  # one executed text or table output
MAX_FIGURE_BYTES = 120_000  # one figure (PNG, base64): the drawn graphs are the largest, ~90 KB
MAX_NOTEBOOK_BYTES = 800_000  # a committed notebook file, outputs and figures included
MAX_CELL_LINES = 40  # text lines one executed cell shows: progress never piles up


def _load_executor():
    """``notebooks/execute.py`` (a script, not a package module)."""
    spec = importlib.util.spec_from_file_location("notebooks_execute", NOTEBOOK_DIR / "execute.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


executor = _load_executor()


# --------------------------------------------------------------------------------------------------
# find_data


def _fake_data(folder: Path) -> Path:
    """A folder shaped like the Kaggle download (only the folders ``find_data`` looks at)."""
    (folder / "npz_all" / "npz" / "tile" / "xla" / "train").mkdir(parents=True)
    return folder


def _fake_generate(calls: list):
    """Stands in for ``generate_competition``: writes the two files that mark a finished build."""

    def generate(out, *, scale, seed, progress=False):
        calls.append((Path(out), scale, seed))
        _fake_data(Path(out) / "public")
        (Path(out) / "public" / "sample_submission.csv").write_text("ID,TopConfigs\n")
        (Path(out) / "private").mkdir()
        (Path(out) / "private" / "solution.csv").write_text("ID,Runtimes,Normalizers,Usage\n")

    return generate


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """No data variables set, no Kaggle input folder, generation faked and counted."""
    for name in (locate.DATA_ENV, locate.SCALE_ENV, locate.EMBEDDED_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(locate, "KAGGLE_INPUT", tmp_path / "kaggle" / "input")
    calls: list = []
    import competition.data.synth

    monkeypatch.setattr(competition.data.synth, "generate_competition", _fake_generate(calls))
    embedded = tmp_path / "embedded"
    monkeypatch.setenv(locate.EMBEDDED_ENV, str(embedded))
    return {"calls": calls, "kaggle": tmp_path / "kaggle" / "input", "embedded": embedded}


def test_argument_beats_environment_and_kaggle(tmp_path, monkeypatch, clean_env):
    given = _fake_data(tmp_path / "given")
    monkeypatch.setenv(locate.DATA_ENV, str(_fake_data(tmp_path / "from_env")))
    _fake_data(clean_env["kaggle"] / locate.KAGGLE_SLUG)
    assert find_data(given) == DataLocation(given, None, "given")
    assert find_data(str(given)).source == "given"


def test_environment_beats_kaggle(tmp_path, monkeypatch, clean_env):
    from_env = _fake_data(tmp_path / "from_env")
    monkeypatch.setenv(locate.DATA_ENV, str(from_env))
    _fake_data(clean_env["kaggle"] / locate.KAGGLE_SLUG)
    assert find_data() == DataLocation(from_env, None, "env")
    assert find_data("").source == "env"  # an empty parameter means "not given"


def test_kaggle_beats_embedded(clean_env, monkeypatch):
    kaggle = _fake_data(clean_env["kaggle"] / locate.KAGGLE_SLUG)
    monkeypatch.setenv(locate.DATA_ENV, "  ")  # blank: unset
    assert find_data() == DataLocation(kaggle, None, "kaggle")
    assert clean_env["calls"] == []


def test_kaggle_mirror_dataset_is_found(clean_env):
    (clean_env["kaggle"] / "some-notes").mkdir(parents=True)
    mirror = _fake_data(clean_env["kaggle"] / "tpugraphs-mirror")
    assert kaggle_data_dir(clean_env["kaggle"]) == mirror
    assert find_data().source == "kaggle"


def test_kaggle_folder_without_data_is_not_used(clean_env):
    (clean_env["kaggle"] / "unrelated-dataset").mkdir(parents=True)
    assert kaggle_data_dir(clean_env["kaggle"]) is None
    assert find_data(scale="tiny").source == "embedded"


def test_embedded_is_built_once_and_reused(clean_env):
    first = find_data(scale="tiny", seed=3)
    again = find_data(scale="tiny", seed=3)
    target = clean_env["embedded"] / "tiny-seed3"
    assert first == again == DataLocation(target / "public", target / "private" / "solution.csv", "embedded")
    assert first.has_labels
    assert [(scale, seed) for _, scale, seed in clean_env["calls"]] == [("tiny", 3)]
    assert [p.name for p in clean_env["embedded"].iterdir()] == ["tiny-seed3"]  # no partial folder left


def test_scale_comes_from_the_argument_then_the_environment_then_small(clean_env, monkeypatch):
    assert find_data().public_dir.parent.name == "small-seed0"
    monkeypatch.setenv(locate.SCALE_ENV, "tiny")
    assert find_data().public_dir.parent.name == "tiny-seed0"
    assert find_data(scale="small", seed=1).public_dir.parent.name == "small-seed1"


def test_unknown_scale_is_refused(clean_env, monkeypatch):
    with pytest.raises(ValueError, match=r"unknown scale 'huge'.*expected one of tiny, small"):
        find_data(scale="huge")
    monkeypatch.setenv(locate.SCALE_ENV, "medium")
    with pytest.raises(ValueError,
                       match=r"unknown scale 'medium' \(from the argument or \$TPUGRAPHS_SCALE\)"):
        find_data()


def test_interrupted_build_leaves_nothing_behind(clean_env, monkeypatch):
    import competition.data.synth

    def broken(out, **kwargs):
        (Path(out) / "public").mkdir(parents=True)
        raise KeyboardInterrupt

    monkeypatch.setattr(competition.data.synth, "generate_competition", broken)
    with pytest.raises(KeyboardInterrupt):
        find_data(scale="tiny")
    assert list(clean_env["embedded"].iterdir()) == []


def test_unfinished_target_is_rebuilt(clean_env):
    stale = clean_env["embedded"] / "tiny-seed0" / "public"
    stale.mkdir(parents=True)  # no sample_submission.csv, no solution: an old interrupted build
    location = find_data(scale="tiny")
    assert (location.public_dir / "sample_submission.csv").is_file()
    assert len(clean_env["calls"]) == 1


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp: tmp / "missing", r"DATA_DIR = '.*missing': no such directory"),
        (lambda tmp: tmp, r"DATA_DIR = '.*' holds no competition data: expected npz_all/npz/tile/xla"),
        (lambda tmp: (tmp / "f.txt").write_text("x") and tmp / "f.txt", r"f.txt': a file, not a directory"),
    ],
    ids=["missing", "empty", "a file"],
)
def test_bad_data_dir_is_refused(tmp_path, clean_env, make, message):
    with pytest.raises(FileNotFoundError, match=message):
        find_data(make(tmp_path))
    assert clean_env["calls"] == []  # never a silent fall back to other data


def test_bad_environment_variable_is_refused(tmp_path, monkeypatch, clean_env):
    monkeypatch.setenv(locate.DATA_ENV, str(tmp_path / "nowhere"))
    _fake_data(clean_env["kaggle"] / locate.KAGGLE_SLUG)
    with pytest.raises(FileNotFoundError, match=r"\$TPUGRAPHS_DATA = '.*nowhere': no such directory"):
        find_data()


@pytest.mark.parametrize("inner", ["", "npz_all", "npz_all/npz"])
def test_any_accepted_layout_is_taken(tmp_path, clean_env, inner):
    root = _fake_data(tmp_path / "download")
    given = root / inner if inner else root
    assert find_data(given).public_dir == given


def test_synth_output_folder_gives_public_dir_and_labels(tmp_path, clean_env):
    out = tmp_path / "comp"
    _fake_generate([])(out, scale="tiny", seed=0)
    assert find_data(out) == DataLocation(out / "public", out / "private" / "solution.csv", "given")
    assert find_data(out / "public").solution_path == out / "private" / "solution.csv"


def test_describe_says_where_and_whether_labels_exist(tmp_path):
    with_labels = DataLocation(tmp_path / "public", tmp_path / "private" / "solution.csv", "embedded")
    assert "embedded synthetic competition" in with_labels.describe()
    assert "solution.csv" in with_labels.describe()
    assert "never released" in DataLocation(tmp_path, None, "kaggle").describe()


def test_default_embedded_root(monkeypatch, tmp_path):
    monkeypatch.setenv(locate.EMBEDDED_ENV, str(tmp_path / "here"))
    assert locate.default_embedded_root() == tmp_path / "here"
    monkeypatch.delenv(locate.EMBEDDED_ENV)
    assert locate.default_embedded_root() == ROOT / "data" / "embedded"  # a writable checkout


def test_real_tiny_build(tmp_path, monkeypatch):
    monkeypatch.delenv(locate.SCALE_ENV, raising=False)
    out = embedded_competition(scale="tiny", seed=0, root=tmp_path, progress=False)
    assert (out / "private" / "solution.csv").is_file()
    from competition.data.graphs import expected_from_data_dir

    assert len(expected_from_data_dir(out / "public")) == 12  # 4 tile + 4 x 2 layout test graphs


# --------------------------------------------------------------------------------------------------
# setup_notebook: the notebooks' first cell


@pytest.fixture
def not_in_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_env) -> Path:
    """``clean_env``, run from ``tmp_path/run`` with the kit's code as if installed (no source checkout)."""
    monkeypatch.setattr(locate, "_REPO_ROOT", tmp_path / "site-packages")
    run = tmp_path / "run"
    run.mkdir()
    monkeypatch.chdir(run)
    return run


@pytest.mark.parametrize("route", ["given", "env", "kaggle", "embedded"])
def test_setup_notebook_finds_the_data_by_each_route(route, tmp_path, monkeypatch, capsys, clean_env,
                                                     not_in_checkout):
    expected = {
        "given": lambda: _fake_data(tmp_path / "download"),
        "env": lambda: _fake_data(tmp_path / "from_env"),
        "kaggle": lambda: _fake_data(clean_env["kaggle"] / locate.KAGGLE_SLUG),
        "embedded": lambda: clean_env["embedded"] / "tiny-seed0" / "public",
    }[route]()
    if route == "env":
        monkeypatch.setenv(locate.DATA_ENV, str(expected))
    data = setup_notebook(expected if route == "given" else None, "tiny")
    assert (data.public_dir, data.source) == (expected, route)
    assert data.has_labels == (route == "embedded")
    assert Path.cwd() == not_in_checkout  # not run in a checkout: the notebook writes where it runs
    printed = capsys.readouterr().out
    assert printed == f"{data.describe()}\nFiles written by this notebook: {not_in_checkout}\n"
    assert str(expected) in printed.splitlines()[0]


def test_setup_notebook_works_in_the_checkouts_output_folder(tmp_path, monkeypatch, capsys, clean_env):
    clone = (tmp_path / "clone").resolve()
    (clone / "notebooks").mkdir(parents=True)
    (clone / "pyproject.toml").write_text("")
    monkeypatch.setattr(locate, "_REPO_ROOT", clone)
    download = _fake_data(clone / "download")
    monkeypatch.chdir(clone / "notebooks")
    data = setup_notebook("../download")  # relative to where the notebook runs, before it moves
    assert data.public_dir.resolve() == download
    assert Path.cwd() == clone / "notebooks" / "output"
    assert capsys.readouterr().out.endswith(
        f"Files written by this notebook: {clone / 'notebooks' / 'output'}\n")


def test_setup_notebook_refuses_a_folder_without_competition_data(tmp_path, capsys, clean_env,
                                                                   not_in_checkout):
    (tmp_path / "notes").mkdir()
    with pytest.raises(FileNotFoundError) as refused:
        setup_notebook(tmp_path / "notes")
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"DATA_DIR = {str(tmp_path / 'notes')!r} holds no competition data: "
                              "expected npz_all/")
    assert message.endswith("Or leave it unset to use the embedded competition.")
    assert clean_env["calls"] == [] and Path.cwd() == not_in_checkout and capsys.readouterr().out == ""


# --------------------------------------------------------------------------------------------------
# The notebooks as committed


def _code_cells(nb: dict) -> list[dict]:
    return [cell for cell in nb["cells"] if cell["cell_type"] == "code"]


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


HOSTS_NOTEBOOK = "hosts_leaderboard.ipynb"  # a host's: the hidden labels are what it serves
COMPETITOR_NOTEBOOKS = [p for p in NOTEBOOKS if p.name != HOSTS_NOTEBOOK]
HOW_DID_WE_DO = re.compile(r"^##+ (?:\d+\. )?How did we do\?", re.MULTILINE)


def test_the_notebooks_exist():
    names = [p.name for p in NOTEBOOKS]
    for expected in ("01_data_tour.ipynb", "02_tile_baseline.ipynb", "03_layout_pruning_and_model.ipynb",
                     "04_submit.ipynb", "05_is_it_better.ipynb", HOSTS_NOTEBOOK):
        assert expected in names


def _scoring_section_start(nb: dict) -> int | None:
    """The position, among the code cells, of the first code cell of the "How did we do?" section (None: the
    notebook has none)."""
    code = 0
    start = None
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown" and HOW_DID_WE_DO.search(_source(cell)):
            start = code
        code += cell["cell_type"] == "code"
    return start


@pytest.mark.parametrize("path", COMPETITOR_NOTEBOOKS, ids=lambda p: p.stem)
def test_hidden_labels_are_read_only_in_the_last_section(path: Path):
    """Selection happens on the valid split: the hidden test labels (``data.solution_path``) appear only in
    the last section, "How did we do?", which no later section follows."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    start = _scoring_section_start(nb)
    readers = [i for i, cell in enumerate(_code_cells(nb)) if "data.solution_path" in _source(cell)]
    if start is None:
        assert not readers, f"{path.name}: code cells {readers} read the hidden labels; no 'How did we do?'"
        return
    assert all(i >= start for i in readers), (
        f"{path.name}: code cells {readers} read the hidden labels before code cell {start}")
    headings = [h for cell in nb["cells"] if cell["cell_type"] == "markdown"
                for h in re.findall(r"^## .*", _source(cell), re.MULTILINE)]
    assert HOW_DID_WE_DO.match(headings[-1]), f"{path.name}: {headings[-1]!r} follows 'How did we do?'"


def _output_text(output: dict) -> str:
    """What an output shows as text: a stream, an error, or a display's text/plain."""
    if output.get("output_type") == "stream":
        text = output.get("text", "")
    elif output.get("output_type") == "error":
        text = "\n".join(output.get("traceback", []))
    else:
        text = output.get("data", {}).get("text/plain", "")
    return "".join(text) if isinstance(text, list) else text


def _check_outputs(name: str, nb: dict) -> None:
    """No error, no warning from tqdm, no carriage-return bars, bounded sizes and line counts."""
    for index, cell in enumerate(_code_cells(nb)):
        lines = 0
        for output in cell.get("outputs", []):
            where = f"{name} code cell {index}"
            assert output.get("output_type") != "error", (
                f"{where}: {output.get('ename')}: {output.get('evalue')}")
            text = _output_text(output)
            assert "TqdmWarning" not in text, f"{where}: {text[:300]}"
            assert "\r" not in text, f"{where}: a carriage-return progress bar in the output"
            size = len(json.dumps(output))
            limit = MAX_FIGURE_BYTES if "image/png" in output.get("data", {}) else MAX_OUTPUT_BYTES
            assert size < limit, f"{where}: an output of {size:,} bytes"
            if "text/html" not in output.get("data", {}):  # tables: their text form is bounded by size
                lines += len(text.splitlines())
        assert lines <= MAX_CELL_LINES, f"{name} code cell {index}: {lines} lines of output"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebook_is_executed_and_small(path: Path):
    assert path.stat().st_size < MAX_NOTEBOOK_BYTES
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert nb["nbformat"] == 4
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    assert nb["cells"][0]["cell_type"] == "markdown"
    counts = [cell["execution_count"] for cell in _code_cells(nb)]
    assert counts == list(range(1, len(counts) + 1)), (
        f"{path.name}: not executed top to bottom; run make notebooks")
    _check_outputs(path.name, nb)
    assert nb["metadata"]["tpugraphs"]["data"]["scale"] == "small", (
        "commit the outputs of the small competition")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_outputs_come_from_the_current_code(path: Path):
    reasons = executor.stale_reasons(path)
    assert not reasons, f"{path.name}: {'; '.join(reasons)}. Re-execute it: make notebooks"


def test_staleness_is_detected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The check fails on exactly what it should: a changed cell, another generator, another release."""
    cell = {"cell_type": "code", "source": "print(1)", "outputs": [], "execution_count": 1, "metadata": {}}
    note = {"cell_type": "markdown", "source": "Some words.", "metadata": {}}
    nb = {"cells": [note, cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    nb["metadata"]["tpugraphs"] = executor.stamp(nb, "small")
    assert set(nb["metadata"]["tpugraphs"]) == {"cells", "kit", "data"}
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb))
    assert executor.stale_reasons(path) == []
    note["source"] = "Other words."  # prose is not what the outputs come from
    path.write_text(json.dumps(nb))
    assert executor.stale_reasons(path) == []
    cell["source"] = "print(2)"
    nb["metadata"]["tpugraphs"]["data"]["generator_version"] = -1
    path.write_text(json.dumps(nb))
    reasons = executor.stale_reasons(path)
    assert reasons[0] == "its code cells changed since it was executed"
    assert reasons[1].startswith("executed on {'scale': 'small', 'seed': 0, 'generator_version': -1}")
    assert len(reasons) == 2
    recorded = nb["metadata"]["tpugraphs"]["kit"]
    monkeypatch.setattr("competition.version.kit_version", lambda: "9.9.9")
    assert executor.stale_reasons(path)[2] == f"executed with kit {recorded}, this is kit 9.9.9"
    del nb["metadata"]["tpugraphs"]
    path.write_text(json.dumps(nb))
    assert executor.stale_reasons(path) == [
        "never executed by notebooks/execute.py (no metadata.tpugraphs)"]


def _install_and_setup(path: Path) -> tuple[str, str]:
    """The first two code cells: the Kaggle install cell, then the setup cell."""
    install, setup = _code_cells(json.loads(path.read_text(encoding="utf-8")))[:2]
    return _source(install), _source(setup)


def test_notebooks_share_the_install_and_setup_cells():
    """The first code cell installs the kit on Kaggle, the second makes it importable and calls it; both are
    the same everywhere, so each notebook stands alone, and the setup is short."""
    cells = {path.name: _install_and_setup(path) for path in NOTEBOOKS}
    assert len({install for install, _ in cells.values()}) == 1, f"install cells differ: {sorted(cells)}"
    assert len({setup for _, setup in cells.values()}) == 1, f"setup cells differ: {sorted(cells)}"
    install, setup = next(iter(cells.values()))
    assert "--no-build-isolation" in install and "--no-index" in install and "--no-deps" in install
    assert ("DATA_DIR = None" in setup and "SCALE = None" in setup
            and "setup_notebook(DATA_DIR, SCALE)" in setup)
    code = [line for line in setup.splitlines() if line.strip() and not line.startswith("#")]
    assert len(code) <= 6, "the setup belongs in competition.data.locate.setup_notebook, not in the cell"


def _setup_cell() -> str:
    return _install_and_setup(NOTEBOOKS[0])[1]


def _run_setup_without_site(tmp_path: Path, cwd: Path) -> subprocess.CompletedProcess:
    """The setup cell as a script, run in ``cwd`` by a bare interpreter (``python -S``: no site-packages, so
    no installed kit), with ``$TPUGRAPHS_DATA`` naming a fake download."""
    script = tmp_path / "setup_cell.py"
    script.write_text(_setup_cell() + "\nimport competition\nprint('KIT', competition.__file__)\n")
    env = {"PATH": os.environ.get("PATH", ""), locate.DATA_ENV: str(_fake_data(tmp_path / "data"))}
    return subprocess.run([sys.executable, "-S", str(script)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)


def test_setup_cell_finds_the_kit_of_a_clone_without_installing_it(tmp_path):
    clone = (tmp_path / "clone").resolve()
    shutil.copytree(ROOT / "competition", clone / "competition", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", clone)
    (clone / "notebooks").mkdir()
    done = _run_setup_without_site(tmp_path, clone / "notebooks")
    assert done.returncode == 0, done.stderr
    assert f"KIT {clone / 'competition' / '__init__.py'}" in done.stdout
    assert "Data from $TPUGRAPHS_DATA" in done.stdout
    assert f"Files written by this notebook: {clone / 'notebooks' / 'output'}" in done.stdout


def test_setup_cell_says_where_to_look_without_the_kit(tmp_path):
    (tmp_path / "work").mkdir()
    done = _run_setup_without_site(tmp_path, tmp_path / "work")
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == "ModuleNotFoundError: No module named 'competition'"
    assert "notebooks/README.md" in done.stderr  # the failing line's comment, shown in the traceback


def _kit_as_a_dataset(folder: Path) -> Path:
    """The repository's installable files in ``folder`` (as a zip of the repository unpacks), read-only."""
    folder.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).is_file():
            shutil.copy(ROOT / name, folder)
    for package in ("competition", "solutions", "leaderboard"):
        shutil.copytree(ROOT / package, folder / package, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def _read_only(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        path.chmod(path.stat().st_mode & ~0o222)


@pytest.mark.slow
@pytest.mark.parametrize("route", ["repository", "wheel"])
def test_install_cell_installs_the_kit_offline(route: str, tmp_path: Path):
    """Kaggle's offline routes: the repository, or its wheel, as a read-only dataset; pip with no index."""
    dataset = tmp_path / "input" / "tpugraphs-kit"
    source = _kit_as_a_dataset(dataset / "repository" if route == "repository" else tmp_path / "source")
    if route == "wheel":
        built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-index",
                                "--no-build-isolation", "-w", str(dataset), str(source)],
                               capture_output=True, text=True, timeout=300)
        assert built.returncode == 0, built.stderr
    _read_only(dataset)
    install, _ = _install_and_setup(NOTEBOOKS[0])
    script = tmp_path / "install_cell.py"
    script.write_text(install.replace("/kaggle/input/tpugraphs-kit", str(dataset))
                      .replace("/tmp/tpugraphs-kit", str(tmp_path / "build")))
    site = tmp_path / "site"
    env = {"PATH": os.environ.get("PATH", ""), "PIP_TARGET": str(site), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
           "PIP_CONFIG_FILE": os.devnull,  # no find-links or index from this machine's pip configuration
           "HOME": str(tmp_path)}
    try:  # python -S: no installed kit, as on Kaggle before the cell runs (pip itself runs with its site)
        done = subprocess.run([sys.executable, "-S", str(script)], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)
    finally:
        for path in [dataset, *dataset.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)  # let pytest clean up
    assert done.returncode == 0, done.stderr[-2000:]
    check = subprocess.run([sys.executable, "-c", "import competition; print(competition.__file__)"],
                           env={**env, "PYTHONPATH": str(site)}, cwd=tmp_path, capture_output=True, text=True)
    assert check.stdout.strip() == str(site / "competition" / "__init__.py"), check.stderr
    assert (site / "solutions" / "methods").is_dir() and (site / "leaderboard").is_dir()


# --------------------------------------------------------------------------------------------------
# The notebooks executed


@pytest.fixture(scope="session")
def venv_kernel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A JUPYTER_PATH whose ``python3`` kernel is this interpreter (the venv's under ``make test``)."""
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    return executor.kernel_path(tmp_path_factory.mktemp("jupyter"))


# Injected before a notebook's first cell when the test executes it: records, with the number of the cell
# running, every opening of the hidden labels (or a command naming them) and every write of submission.csv.
AUDIT_CELL = """
import json as _json, os as _os, sys as _sys
_TPUGRAPHS_SOLUTION = {solution!r}
_TPUGRAPHS_SEEN = []
def _tpugraphs_audit(event, args, _busy=[]):
    if _busy or event not in ("open", "os.rename", "subprocess.Popen"):
        return
    _busy.append(1)
    try:
        cell = get_ipython().execution_count
        if event == "open" and isinstance(args[0], (str, bytes, _os.PathLike)):
            path = _os.path.realpath(_os.fsdecode(args[0]))
            flags = (args[2] or 0) & (_os.O_WRONLY | _os.O_RDWR)
            writing = any(c in (args[1] or "") for c in "wax+") or flags
            if path == _TPUGRAPHS_SOLUTION:
                _TPUGRAPHS_SEEN.append(["labels", cell])
            elif writing and _os.path.basename(path) == "submission.csv":
                _TPUGRAPHS_SEEN.append(["submission", cell])
        elif event == "os.rename" and _os.path.basename(_os.fsdecode(args[1])) == "submission.csv":
            _TPUGRAPHS_SEEN.append(["submission", cell])
        elif event == "subprocess.Popen" and any(_TPUGRAPHS_SOLUTION in str(a) for a in (args[1] or [])):
            _TPUGRAPHS_SEEN.append(["labels", cell])
    finally:
        _busy.clear()
_sys.addaudithook(_tpugraphs_audit)
"""
REPORT_CELL = "print('TPUGRAPHS_SEEN', _json.dumps(_TPUGRAPHS_SEEN))"


def _audited(nb, solution: Path):
    """``nb`` with the audit cell first and the report cell last."""
    import nbformat

    nb.cells.insert(0, nbformat.v4.new_code_cell(AUDIT_CELL.format(solution=str(solution.resolve()))))
    nb.cells.append(nbformat.v4.new_code_cell(REPORT_CELL))


def _seen(nb) -> list[tuple[str, int]]:
    """Remove the audit and report cells of an executed ``nb``; what they recorded, by position among the
    notebook's own code cells."""
    nb.cells.pop(0)
    report = nb.cells.pop()
    text = "".join(o.get("text", "") for o in report.outputs if o.get("output_type") == "stream")
    assert text.startswith("TPUGRAPHS_SEEN "), f"the audit report cell printed {text!r}"
    return [(kind, count - 2) for kind, count in json.loads(text.split(" ", 1)[1])]  # cell 1 is the audit


def _check_no_peeking(name: str, nb: dict, seen: list[tuple[str, int]]) -> None:
    """A competitor's notebook opens the hidden labels only in its "How did we do?" section, after its
    last write of submission.csv."""
    if name == HOSTS_NOTEBOOK:
        return
    start = _scoring_section_start(nb)
    labels = [cell for kind, cell in seen if kind == "labels"]
    writes = [cell for kind, cell in seen if kind == "submission"]
    assert writes, f"{name}: no write of submission.csv was seen"
    if labels:
        assert start is not None, f"{name}: code cells {labels} read the hidden labels; no 'How did we do?'"
        assert min(labels) >= start, f"{name}: code cell {min(labels)} reads the hidden labels before the " \
                                     f"'How did we do?' section (code cell {start})"
        assert max(writes) < min(labels), f"{name}: code cell {max(writes)} writes submission.csv after " \
                                          f"code cell {min(labels)} read the hidden labels"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_on_the_tiny_competition(path: Path, tiny_competition: Path, venv_kernel: Path,
                                               tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nbformat

    from competition.data.graphs import expected_from_data_dir
    from competition.submission import format_problems, validate_submission

    public = tiny_competition / "public"
    monkeypatch.setenv("JUPYTER_PATH", str(venv_kernel))
    monkeypatch.setenv(locate.DATA_ENV, str(public))
    monkeypatch.setenv(locate.SCALE_ENV, "tiny")
    monkeypatch.setenv(locate.EMBEDDED_ENV, str(tmp_path / "embedded"))  # never the checkout's data/
    # Figures are rendered (so their size is checked) by the headless inline backend.
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    for name in ("TQDM_DISABLE", "TPUGRAPHS_PROGRESS"):  # progress as a user sees it
        monkeypatch.delenv(name, raising=False)
    for name in ("KAGGLE_USERNAME", "KAGGLE_KEY", "KAGGLE_CONFIG_DIR", "TPUGRAPHS_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KAGGLE_CONFIG_DIR", str(tmp_path / "no-kaggle-credentials"))
    work = tmp_path / "work"
    work.mkdir()

    nb = nbformat.read(path, as_version=4)
    _audited(nb, tiny_competition / "private" / "solution.csv")
    deadline = time.monotonic() + NOTEBOOK_BUDGET_S
    started = time.monotonic()
    # The budget is for the whole notebook: each cell may use what the previous ones left.
    executor.execute(nb, work, timeout_func=lambda cell: max(1, int(deadline - time.monotonic())))
    print(f"{path.name}: {time.monotonic() - started:.1f} s")
    seen = _seen(nb)

    _check_outputs(path.name, nb)
    _check_no_peeking(path.name, nb, seen)
    if path.name.startswith("03"):  # the training cell: progress shown, yet a handful of lines
        training = next(c for c in _code_cells(nb) if "solve(DATA, METHOD" in _source(c))
        assert any(o.get("output_type") == "display_data" for o in training["outputs"]), "no progress display"
    submission = work / "submission.csv"
    assert submission.is_file(), f"{path.name} did not write submission.csv in its working folder"
    result = validate_submission(submission, expected_from_data_dir(public))
    assert result.ok, format_problems(result, source_name=str(submission))
    # The committed outputs come from this code: make notebooks recorded this very execution's figures.
    recorded = json.loads(path.read_text(encoding="utf-8"))["metadata"][executor.METADATA_KEY]["tiny_figures"]
    differences = executor.figure_differences(recorded, executor.figures(nb))
    assert not differences, f"{path.name}: " + "; ".join(differences) + ". Re-execute it: make notebooks"


def test_figures_are_compared_within_the_spread():
    """Figures: numbers printed with four decimals or more, per code cell; a move beyond the spread, or a
    cell printing another count of them, is a difference."""
    def notebook(*texts):
        return {"cells": [{"cell_type": "code", "source": "",
                           "outputs": [{"output_type": "stream", "text": text}]} for text in texts]}

    recorded = executor.figures(notebook("score 0.9887 [0.9012, 1.0000] in 1.25 s, tau -0.2140",
                                         "none here: 12 MB, 0.5 s"))
    assert recorded == {"0": [0.9887, -0.214]}
    within = executor.figures(notebook("score 0.9472, tau -0.2140"))  # the spread seen between two machines
    assert executor.figure_differences(recorded, within) == []
    moved = executor.figure_differences(recorded, executor.figures(notebook("score 0.9000, tau -0.2140")))
    assert moved == ["code cell 0: 0.9887 recorded, 0.9000 now (beyond the cross-machine spread 0.05)"]
    assert executor.figure_differences(recorded, executor.figures(notebook("score 0.9887"))) == [
        "code cell 0: 1 figures printed, 2 recorded"]


def test_competition_from_another_generator_version_is_rebuilt(clean_env):
    target = find_data(scale="tiny").public_dir.parent
    (target / "generator-version").write_text("0\n")  # as if an older generator had made it
    find_data(scale="tiny")
    assert len(clean_env["calls"]) == 2
    assert (target / "generator-version").read_text().strip() != "0"


# --------------------------------------------------------------------------------------------------
# data/demo (make demo) reused by the notebooks


@pytest.fixture
def demo_env(clean_env, tmp_path, monkeypatch) -> dict:
    """``clean_env`` with no $TPUGRAPHS_EMBEDDED_DIR: the checkout's defaults, moved under tmp_path."""
    monkeypatch.delenv(locate.EMBEDDED_ENV)
    monkeypatch.setattr(locate, "DEMO_DIR", tmp_path / "demo")
    monkeypatch.setattr(locate, "default_embedded_root", lambda: tmp_path / "embedded")
    return {**clean_env, "demo": tmp_path / "demo"}


def _make_demo(folder: Path, *, scale: str = "small", seed: int = 0) -> Path:
    _fake_generate([])(folder, scale=scale, seed=seed)
    locate.stamp_competition(folder, scale=scale, seed=seed)
    return folder


def test_demo_folder_holding_exactly_the_competition_is_reused(demo_env):
    demo = _make_demo(demo_env["demo"])
    assert find_data() == DataLocation(demo / "public", demo / "private" / "solution.csv", "embedded")
    assert demo_env["calls"] == []  # nothing rebuilt


@pytest.mark.parametrize(
    ("change", "wanted"),
    [
        (lambda demo: None, {"scale": "tiny"}),  # another scale asked for
        (lambda demo: None, {"seed": 1}),  # another seed asked for
        (lambda demo: (demo / "generator-version").write_text("0\n"), {}),  # an older generator
        (lambda demo: (demo / "embedded.json").unlink(), {}),  # never stamped: unknown contents
        (lambda demo: (demo / "private" / "solution.csv").unlink(), {}),  # incomplete
        (lambda demo: locate.clear_stamp(demo), {}),  # a rebuild in place was interrupted
    ],
    ids=["other-scale", "other-seed", "other-generator", "no-stamp", "no-labels", "cleared"],
)
def test_demo_folder_is_not_reused_unless_it_matches(demo_env, change, wanted):
    demo = _make_demo(demo_env["demo"])
    change(demo)
    location = find_data(**wanted)
    assert location.public_dir.parent.parent == demo_env["embedded"]
    assert len(demo_env["calls"]) == 1


def test_demo_folder_is_ignored_when_an_embedded_folder_is_named(demo_env, monkeypatch, tmp_path):
    _make_demo(demo_env["demo"])
    monkeypatch.setenv(locate.EMBEDDED_ENV, str(tmp_path / "elsewhere"))
    assert find_data().public_dir.parent != demo_env["demo"]
    assert len(demo_env["calls"]) == 1


def test_data_dir_is_made_absolute(tmp_path, monkeypatch, clean_env):
    _fake_data(tmp_path / "download")
    monkeypatch.chdir(tmp_path)
    assert find_data("download").public_dir == tmp_path / "download"  # a notebook may chdir afterwards
    monkeypatch.setenv(locate.DATA_ENV, "download")
    assert find_data().public_dir == tmp_path / "download"


def test_saved_outputs_show_paths_relative_to_the_repository():
    """A reader's clone lives elsewhere: outputs say data/demo/..., not where the notebooks were executed."""
    import re

    absolute = re.compile(r"(?<![\w.])/[\w.-]+(?:/[\w.-]+)*/(?:data/demo|notebooks/output)\b")
    for path in sorted(NOTEBOOK_DIR.glob("*.ipynb")):
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            for output in cell.get("outputs", []):
                texts = [output.get("text", "")] + [v for k, v in output.get("data", {}).items()
                                                    if k.startswith("text/") and isinstance(v, str)]
                for text in texts:
                    text = "".join(text) if isinstance(text, list) else text
                    found = absolute.search(text)
                    assert found is None, f"{path.name}: an output shows the absolute path {found.group(0)!r}"
