"""``tpugraphs leaderboard export-codabench``: a bundle Codabench accepts, scored as its worker scores.

- The bundle against Codabench's rules for a version-2 ``competition.yaml`` (``leaderboard.codabench.check``,
  written from its unpacker and serializers), read back with PyYAML as its unpacker reads it; a table
  of broken bundles each refused with the field named.
- No private label anywhere but the private phase's reference data.
- The scoring program run as the compute worker lays it out (``program/``, ``input/ref``, ``input/res``,
  ``output/``, the ``metadata.yaml`` command), its ``scores.json`` against ``tpugraphs score --json``;
  and again under Python 3.8, the oldest it claims.
- The Python 3.8 rewrite of the rule files (``backport``): a table of constructs, and ``zip(strict=)``.
"""

from __future__ import annotations

import copy
import io
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lb_support import IN_CI, init_competition, skip_or_fail

from competition.cli import main
from leaderboard.codabench.backport import COMPAT_MODULE, BackportError, backport
from leaderboard.codabench.bundle import yaml_text
from leaderboard.codabench.check import check_bundle, codabench_problems, privacy_problems
from leaderboard.codabench.program import COMMAND

try:  # Codabench reads competition.yaml with PyYAML; so do these tests
    import yaml
except ImportError:  # pragma: no cover - the dev install has it
    if IN_CI:
        raise
    pytest.skip("PyYAML is not installed", allow_module_level=True)

DEADLINE = "2030-06-30T23:59Z"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def bundle(tiny, tmp_path_factory) -> Path:
    """The bundle of a competition made with ``init`` (rules from the database), unpacked."""
    root = tmp_path_factory.mktemp("codabench")
    url = f"sqlite:///{root / 'lb.db'}"
    from datetime import datetime

    init_competition(
        url, tiny, name="Exam 2030", daily_limit=3, max_selected=2, deadline=datetime(2030, 6, 30, 23, 59)
    ).db.dispose()
    out = root / "bundle.zip"
    code = main(
        [
            "leaderboard",
            "export-codabench",
            "--db",
            url,
            "--data",
            str(tiny.data_dir),
            "--out",
            str(out),
            "--start",
            "2030-01-01T00:00Z",
        ]
    )
    assert code == 0
    unpacked = root / "bundle"
    with zipfile.ZipFile(out) as archive:
        archive.extractall(unpacked)
    return unpacked


def _document(bundle: Path) -> dict:
    return yaml.safe_load((bundle / "competition.yaml").read_text(encoding="utf-8"))


def _members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist() if not name.endswith("/")}


# ---------------------------------------------------------------------------------------------
# The bundle


def test_the_bundle_passes_codabenchs_rules(bundle):
    document = _document(bundle)
    assert check_bundle(bundle) == []  # read with PyYAML, as the unpacker reads it
    assert check_bundle(bundle.parent / "bundle.zip") == []
    assert document["version"] == 2 and document["title"] == "Exam 2030"
    assert (bundle / "logo.png").read_bytes().startswith(b"\x89PNG")
    assert document["docker_image"] == "codalab/codalab-legacy:py312"
    assert [p["title"] for p in document["pages"]] == ["Overview", "Evaluation", "Data", "Rules"]
    assert "3 submissions per participant per day" in (bundle / "pages/rules.md").read_text()
    assert "kendall" in (bundle / "pages/overview.md").read_text()
    public, private = document["phases"]
    assert (public["start"], public["end"]) == ("2030-01-01 00:00:00", "2030-06-30 23:59:00")
    assert public["max_submissions_per_day"] == 3 and public["tasks"] == [0]
    assert private["start"] == "2030-07-01 00:00:00" and private["auto_migrate_to_this_phase"] is True
    assert private["max_submissions"] == 1 and private["tasks"] == [1]
    assert all(phase["hide_score_output"] is True for phase in document["phases"])
    board = document["leaderboards"][0]
    assert board["submission_rule"] == "Force_Best"
    assert [c["key"] for c in board["columns"]] == [
        "score",
        "tile_xla",
        "layout_xla_default",
        "layout_xla_random",
        "layout_nlp_default",
        "layout_nlp_random",
    ]
    assert {c["precision"] for c in board["columns"]} == {4}
    assert document["solutions"][0]["tasks"] == [0, 1]
    kit = _members(bundle / "starting_kit.zip")
    assert "sample_submission.csv" in kit and "README.md" in kit
    assert any(name.startswith("notebooks/01_") for name in kit)
    assert "npz_all/npz/tile/xla/test" in " ".join(_members(bundle / "public_data.zip"))
    program = _members(bundle / "scoring_program.zip")
    assert {"score.py", "tpugraphs_scoring.py", "metadata.yaml", "competition/scoring.py"} <= set(program)
    assert not any(name.endswith((".csv", ".json")) for name in program)  # no solution, no scores.json


def test_the_yaml_reads_back_as_written(bundle, tiny):
    """The written text read by PyYAML: every value, dates as strings (never cut to midnight)."""
    text = (bundle / "competition.yaml").read_text(encoding="utf-8")
    document = yaml.safe_load(text)
    assert all(isinstance(phase["start"], str) for phase in document["phases"])
    assert yaml.safe_load(yaml_text(document)) == document


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)  # every character but surrogates
_SCALAR = st.one_of(
    _TEXT,
    st.integers(-(10**6), 10**6),
    st.booleans(),
    st.none(),
    st.sampled_from(
        [
            "yes",
            "no",
            "on",
            "2030-06-30 23:59:00",
            "# not a comment",
            "a: b",
            "- x",
            "",
            "null",
            "1e3",
            "0x10",
            "~",
            "'",
            '"',
            "\\",
            "{}",
        ]
    ),
)
_KEY = st.from_regex(r"[a-z_]{1,12}", fullmatch=True)
_DOC = st.recursive(
    _SCALAR,
    lambda inner: st.one_of(
        st.lists(st.dictionaries(_KEY, inner, min_size=1), max_size=3),
        st.dictionaries(_KEY, inner, max_size=4),
    ),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(_KEY, _DOC, min_size=1, max_size=5))
def test_yaml_text_round_trips(document):
    assert yaml.safe_load(yaml_text(document)) == document


def test_no_private_label_outside_the_private_reference(bundle, tiny):
    """Every file of the bundle, nested zips opened, searched for each Private row's runtimes: found only in
    reference_private.zip. Public rows' runtimes only in reference_public.zip."""
    texts: dict[str, str] = {}
    for path in bundle.rglob("*"):
        if path.suffix == ".zip":
            for name, data in _members(path).items():
                texts[f"{path.name}/{name}"] = data.decode("latin-1")
        elif path.is_file():
            texts[path.name] = path.read_bytes().decode("latin-1")
    for row_id, runtimes in tiny.runtimes.items():
        cell = ";".join(map(str, runtimes))
        holders = {name.split("/")[0] for name, text in texts.items() if cell in text}
        expected = {"Private": {"reference_private.zip"}, "Public": {"reference_public.zip"}}[
            tiny.usage[row_id]
        ]
        assert holders == expected, row_id


BROKEN = [
    # (what is changed, a piece of the problem reported)
    (lambda d, root: d.pop("leaderboards") and d.__setitem__("leaderboard", []), "it says 'leaderboard:'"),
    (lambda d, root: d.pop("docker_image"), "codalab-legacy:py37"),
    (lambda d, root: d.__setitem__("version", 1), "version: 2"),
    (lambda d, root: d.pop("image"), "image:"),
    (lambda d, root: (root / "pages/terms.md").write_text(""), "terms: terms.md is empty"),
    (
        lambda d, root: d["pages"].append({"title": "x", "file": "pages/none.md"}),
        "pages[4]: the file is missing",
    ),
    (lambda d, root: d["phases"][1].__setitem__("start", d["phases"][0]["end"]), "must start after"),
    (lambda d, root: d["phases"][0].pop("end"), "needs an end"),
    (
        lambda d, root: d["phases"][0].__setitem__(
            "end", __import__("datetime").datetime(2030, 6, 30, 23, 59)
        ),
        "cuts to midnight",
    ),
    (lambda d, root: d["phases"][0].__setitem__("auto_migrate_to_this_phase", True), "first phase cannot"),
    (lambda d, root: d["phases"][0].__setitem__("tasks", [7]), "does not define"),
    (lambda d, root: d["tasks"][1].pop("scoring_program"), "no scoring_program"),
    (lambda d, root: d["tasks"][0].__setitem__("index", 1), "used twice"),
    (lambda d, root: d["leaderboards"][0]["columns"][1].__setitem__("title", "x" * 37), "at most 36"),
    (lambda d, root: d["leaderboards"][0]["columns"][1].__setitem__("key", "score"), "keys must be unique"),
    (lambda d, root: d["leaderboards"][0].__setitem__("submission_rule", "Best"), "submission_rule"),
    (lambda d, root: d["solutions"][0].__setitem__("tasks", [0, 5]), "solutions[0]: tasks"),
    (lambda d, root: _nest_program(root), "zip the folder's contents"),
]


def _nest_program(root: Path) -> None:
    """The usual mistake: the program zipped with its folder around it."""
    members = _members(root / "scoring_program.zip")
    with zipfile.ZipFile(root / "scoring_program.zip", "w") as archive:
        for name, data in members.items():
            archive.writestr(f"program/{name}", data)


@pytest.mark.parametrize(("change", "expected"), BROKEN)
def test_broken_bundles_are_refused_with_the_field_named(bundle, tmp_path, change, expected):
    root = tmp_path / "b"
    shutil.copytree(bundle, root)
    document = copy.deepcopy(_document(bundle))
    change(document, root)
    problems = codabench_problems(root, document)
    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d, root: d["phases"][0].__setitem__("hide_score_output", False),
            "hide_score_output must be true",
        ),
        (
            lambda d, root: d["tasks"][0].__setitem__("reference_data", "reference_private.zip"),
            "scores Private rows before the last phase",
        ),
        (
            lambda d, root: (
                shutil.copyfile(root / "reference_private.zip", root / "reference_public.zip") and None
            ),
            "before the last phase",
        ),
    ],
)
def test_a_private_score_before_the_end_is_refused(bundle, tmp_path, tiny, change, expected):
    root = tmp_path / "b"
    shutil.copytree(bundle, root)
    document = copy.deepcopy(_document(bundle))
    change(document, root)
    assert any(expected in p for p in privacy_problems(root, document))
    full = tmp_path / "full.zip"
    with zipfile.ZipFile(full, "w") as archive:
        archive.writestr("solution.csv", tiny.solution_csv)
    shutil.copyfile(full, root / "reference_public.zip")
    assert any("both Public and Private" in p for p in privacy_problems(root, _document(bundle)))


# ---------------------------------------------------------------------------------------------
# The scoring program, as the compute worker runs it


def _submission_zip(
    content: bytes, name: str = "submission.csv", extra: dict[str, bytes] | None = None
) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(name, content)
        for other, data in (extra or {}).items():
            archive.writestr(other, data)
    return buffer.getvalue()


def _worker_run(bundle: Path, task: int, submission_zip: bytes, root: Path, python: str = sys.executable):
    """Codabench's layout: the program unzipped in program/, the task's reference in input/ref, the
    submission (the prediction step's output) in input/res, an empty output/; the metadata command run in
    program/ with /app as ``root``."""
    document = _document(bundle)
    task_entry = next(t for t in document["tasks"] if t["index"] == task)
    for folder, data in (
        ("program", (bundle / task_entry["scoring_program"]).read_bytes()),
        ("input/ref", (bundle / task_entry["reference_data"]).read_bytes()),
        ("input/res", submission_zip),
    ):
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            archive.extractall(root / folder)
    (root / "output").mkdir()
    command = yaml.safe_load((root / "program/metadata.yaml").read_text())["command"]
    assert command == COMMAND
    argv = command.replace("/app", str(root)).split()
    assert argv[0] == "python3"
    done = subprocess.run(
        [python, "-E", "-s", *argv[1:]], cwd=root / "program", capture_output=True, text=True, timeout=300
    )
    scores = root / "output/scores.json"
    return done, (json.loads(scores.read_text()) if scores.exists() else None)


def _kit_score(tiny, tmp_path: Path, content: bytes, capsys) -> dict:
    path = tmp_path / "for_the_kit.csv"
    path.write_bytes(content)
    code, out, _ = run(capsys, "score", str(path), "--solution", str(tiny.solution_path), "--json")
    assert code == 0
    return json.loads(out)


def _expected_keys(kit: dict, split: str) -> dict:
    expected = {"score": kit[split]}
    expected.update(
        {
            name.replace(":", "_"): value
            for name, value in kit[f"{split}_collections"].items()
            if value is not None
        }
    )
    return expected


def _odd_zips(tiny) -> list[bytes]:
    """Valid submissions in the forms participants zip them: a subfolder, macOS's extras, BOM and CRLF."""
    text = tiny.submission(11)
    return [
        _submission_zip(tiny.submission()),  # the true order
        _submission_zip(tiny.submission(3), name="predictions.csv"),
        _submission_zip(
            text, name="my_run/submission.csv", extra={"__MACOSX/my_run/._submission.csv": b"\x00"}
        ),
        _submission_zip(b"\xef\xbb\xbf" + text.replace(b"\n", b"\r\n")),
        _submission_zip(tiny.submission(5), extra={"notes.txt": b"x", "other.csv": b"ID,TopConfigs\n"}),
    ]


def test_the_program_scores_as_tpugraphs_score(bundle, tiny, tmp_path, capsys):
    for number, submission in enumerate(_odd_zips(tiny)):
        with zipfile.ZipFile(io.BytesIO(submission)) as archive:
            csv_name = next(
                n for n in archive.namelist() if n.endswith("submission.csv") or n == "predictions.csv"
            )
            content = archive.read(csv_name)
        kit = _kit_score(tiny, tmp_path, content, capsys)
        for task, split in ((0, "public"), (1, "private")):
            done, scores = _worker_run(bundle, task, submission, tmp_path / f"{number}-{task}")
            assert done.returncode == 0, done.stderr
            assert scores == _expected_keys(kit, split)  # bit-identical: the same code, JSON floats
            assert "tpugraphs scorer" in done.stdout and str(tiny.solution_path) not in done.stdout


def test_the_program_refuses_in_one_line(bundle, tiny, tmp_path):
    done, scores = _worker_run(bundle, 0, _submission_zip(tiny.invalid_submission()), tmp_path / "invalid")
    assert done.returncode == 1 and scores is None and "submission refused" in done.stderr
    assert "line 1" in done.stderr and "header" in done.stderr.lower()
    assert not any(tmp_path.glob("invalid/output/*"))

    done, scores = _worker_run(bundle, 0, _submission_zip(b"x", name="notes.txt"), tmp_path / "empty")
    assert done.returncode == 1 and "exactly one CSV" in done.stderr and scores is None

    root = tmp_path / "broken"
    done, scores = _worker_run(bundle, 1, _submission_zip(tiny.submission()), root)
    (root / "input/ref/solution.csv").write_text("not,a,solution\n")
    shutil.rmtree(root / "output")
    (root / "output").mkdir()
    again = subprocess.run(
        [sys.executable, "-I", "../program/score.py", str(root / "input"), str(root / "output")],
        cwd=root / "program",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 2 and "host side" in again.stderr and "not,a" not in again.stderr
    assert not any((root / "output").iterdir())


def _oldest_python() -> str | None:
    """A Python 3.8 with numpy: $TPUGRAPHS_PY38, else a venv made once from pyenv's (or the PATH's) 3.8."""
    if os.environ.get("TPUGRAPHS_PY38"):
        return os.environ["TPUGRAPHS_PY38"]
    candidates = sorted(Path("/root/.pyenv/versions").glob("3.8*/bin/python3.8"))
    found = str(candidates[-1]) if candidates else shutil.which("python3.8")
    if found is None:
        return None
    venv = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tpugraphs-kit" / "py38-numpy"
    python = venv / "bin" / "python"
    check = [str(python), "-c", "import numpy"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return str(python)
    shutil.rmtree(venv, ignore_errors=True)
    made = subprocess.run([found, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=300)
    if made.returncode == 0:
        made = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "numpy==1.24.4"],
            capture_output=True,
            text=True,
            timeout=600,
        )
    if made.returncode != 0:
        skip_or_fail(f"could not make a Python 3.8 venv with numpy in {venv}: {made.stderr[-500:]}")
    return str(python)


def test_the_program_runs_on_python_3_8(bundle, tiny, tmp_path, capsys):
    """The oldest Python the program claims: its rules rewritten by ``backport``, with numpy 1.24."""
    python = _oldest_python()
    if python is None:
        skip_or_fail("no Python 3.8 here (pyenv's or python3.8 on PATH, or $TPUGRAPHS_PY38)")
    version = subprocess.run(
        [python, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True
    ).stdout
    assert version.strip() == "(3, 8)"
    for number, submission in enumerate(_odd_zips(tiny)[:3]):
        with zipfile.ZipFile(io.BytesIO(submission)) as archive:
            content = archive.read(
                next(n for n in archive.namelist() if n.endswith(".csv") and "MACOSX" not in n)
            )
        kit = _kit_score(tiny, tmp_path, content, capsys)
        for task, split in ((0, "public"), (1, "private")):
            done, scores = _worker_run(bundle, task, submission, tmp_path / f"{number}-{task}", python=python)
            assert done.returncode == 0, done.stderr
            assert scores == _expected_keys(kit, split)
    done, _ = _worker_run(
        bundle, 0, _submission_zip(tiny.invalid_submission()), tmp_path / "bad", python=python
    )
    assert done.returncode == 1 and "submission refused" in done.stderr


@pytest.mark.parametrize("version", ["2.7", "3.6", "3.7"])
def test_older_pythons_get_one_line(bundle, tiny, tmp_path, version):
    pythons = sorted(Path("/root/.pyenv/versions").glob(f"{version}*/bin/python{version}"))
    if not pythons:
        pytest.skip(f"no Python {version} here")
    done, scores = _worker_run(
        bundle, 0, _submission_zip(tiny.submission()), tmp_path / "old", python=str(pythons[-1])
    )
    assert done.returncode == 2 and scores is None
    assert done.stderr.count("\n") == 1 and "needs Python 3.8 or newer" in done.stderr


def test_the_program_parses_as_python_3_8(bundle):
    import ast

    for name, data in _members(bundle / "scoring_program.zip").items():
        if name.endswith(".py"):
            ast.parse(data.decode(), filename=name, feature_version=(3, 8))
    launcher = _members(bundle / "scoring_program.zip")["score.py"].decode()
    ast.parse(launcher, feature_version=(3, 4))  # the version check itself parses on old interpreters


# ---------------------------------------------------------------------------------------------
# The rewrite for Python 3.8


ANNOTATED = (
    "from __future__ import annotations\n\ndef f(a: str | None) -> list[int]:\n    b: dict[str, int] = {}\n"
)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("x = isinstance(a, str | Path)\n", "x = isinstance(a, (str, Path))\n"),
        (
            "def f(a):\n    return issubclass(a, int | np.integer | float)\n",
            "def f(a):\n    return issubclass(a, (int, np.integer, float))\n",
        ),
        (
            "from __future__ import annotations\n\nfor a, b in zip(x, y, strict=True):\n    pass\n",
            "from __future__ import annotations\n"
            "from competition import _compat as _compat  # added by the Codabench export\n"
            "\nfor a, b in _compat.zip(x, y, strict=True):\n    pass\n",
        ),
        (
            '"""Doc."""\nSpec = dict[str, tuple[int | str, ...]]\n',
            '"""Doc."""\nimport typing as _typing  # added by the Codabench export\n'
            "Spec = _typing.Dict[str, _typing.Tuple[_typing.Union[int, str], ...]]\n",
        ),
        ("FLAGS = re.I | re.M\nmask = a | b\n", "FLAGS = re.I | re.M\nmask = a | b\n"),  # values, not types
        (ANNOTATED, ANNOTATED),  # annotations are strings under the __future__ import: left as they are
        (
            "# é comment\nx = isinstance(é, str | bytes)  # ü\n",
            "# é comment\nx = isinstance(é, (str, bytes))  # ü\n",
        ),
    ],
)
def test_backport_rewrites(source, expected):
    assert backport(source, "rule.py") == expected


@pytest.mark.parametrize(
    ("source", "refused"),
    [
        ("match x:\n    case 1:\n        pass\n", "Pattern matching"),
        ("def f():\n    return dict[str, int]()\n", "dict[...] evaluated at run time"),
        ("from typing import Self\n", "typing.Self needs Python 3.11"),
        ("import functools\n\n@functools.cache\ndef f():\n    pass\n", "functools.cache needs Python 3.9"),
        ("x = name.removeprefix('a')\n", ".removeprefix() needs Python 3.9"),
        ("from dataclasses import dataclass\n\n@dataclass(slots=True)\nclass A:\n    pass\n", "slots"),
        ("def f(a: int | None):\n    pass\n", "evaluated at import"),
        ("import zoneinfo\n", "zoneinfo"),
    ],
)
def test_backport_refuses_what_it_cannot_rewrite(source, refused):
    with pytest.raises(BackportError, match=re.escape(refused)):
        backport(source, "rule.py")


def _zip_before_3_10() -> object:
    namespace: dict = {}
    exec(COMPAT_MODULE.replace("if sys.version_info >= (3, 10):", "if False:"), namespace)  # noqa: S102
    return namespace["zip"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(), max_size=4), min_size=1, max_size=4), st.booleans())
def test_compat_zip_is_zip(iterables, strict):
    compat_zip = _zip_before_3_10()

    def outcome(function):
        try:
            return list(function(*iterables, strict=strict))
        except ValueError:
            return ValueError

    assert outcome(compat_zip) == outcome(zip)


# ---------------------------------------------------------------------------------------------
# The command


def test_the_command_from_a_solution_into_a_folder(tiny, tmp_path, capsys):
    out = tmp_path / "folder"
    code, stdout, err = run(
        capsys,
        "leaderboard",
        "export-codabench",
        "--solution",
        str(tiny.solution_path),
        "--data-url",
        "https://example.org/data.zip",
        "--deadline",
        DEADLINE,
        "--out",
        str(out),
        "--name",
        "Practice",
        "--daily-limit",
        "2",
    )
    assert code == 0, err
    assert "Practice" in stdout and "storage quota" in stdout
    assert check_bundle(out) == []
    assert not (out / "public_data.zip").exists()
    assert "https://example.org/data.zip" in (out / "pages/data.md").read_text()
    document = yaml.safe_load((out / "competition.yaml").read_text())
    assert (
        "public_data" not in document["phases"][0] and document["phases"][0]["max_submissions_per_day"] == 2
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "--data PUBLIC_DIR"),  # neither --data nor --data-url
        (["--data-url", "ftp://x"], "http:// or https://"),
        (["--data-url", "https://x/d.zip", "--name", "a\nb"], "one line"),
        (["--data-url", "https://x/d.zip", "--daily-limit", "0"], "daily limit"),
    ],
)
def test_the_command_refuses_bad_options(tiny, tmp_path, capsys, extra, message):
    code, _, err = run(
        capsys,
        "leaderboard",
        "export-codabench",
        "--solution",
        str(tiny.solution_path),
        "--deadline",
        DEADLINE,
        "--out",
        str(tmp_path / "b.zip"),
        *extra,
    )
    assert code == 2 and message in err and err.count("\n") == 1 and "Traceback" not in err


def test_the_1_0_form_says_what_it_needs_now(tmp_path, capsys, monkeypatch):
    """1.0's ``export-codabench --out DIR``: with no competition at the default database, one line."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TPUGRAPHS_LEADERBOARD_DB", raising=False)
    code, _, err = run(
        capsys, "leaderboard", "export-codabench", "--out", "program", "--data-url", "https://x/d"
    )
    assert code == 2 and "whole Codabench bundle" in err and "--solution" in err and err.count("\n") == 1
    code, _, err = run(capsys, "leaderboard", "export-codabench", "--out", "program")
    assert code == 2 and "--data PUBLIC_DIR" in err


def test_the_command_refuses_bad_inputs(tiny, tmp_path, capsys):
    common = [
        "leaderboard",
        "export-codabench",
        "--solution",
        str(tiny.solution_path),
        "--deadline",
        DEADLINE,
    ]
    # no deadline anywhere
    code, _, err = run(
        capsys,
        "leaderboard",
        "export-codabench",
        "--solution",
        str(tiny.solution_path),
        "--data",
        str(tiny.data_dir),
        "--out",
        str(tmp_path / "a.zip"),
    )
    assert code == 2 and "give --deadline" in err
    # the data folder holds the labels
    leaky = tmp_path / "leaky"
    shutil.copytree(tiny.data_dir, leaky)
    shutil.copyfile(tiny.solution_path, leaky / "answers.csv")
    code, _, err = run(capsys, *common, "--data", str(leaky), "--out", str(tmp_path / "b.zip"))
    assert code == 1 and "holds a solution file" in err and not (tmp_path / "b.zip").exists()
    # a solution of other graphs
    other = tmp_path / "other.csv"
    other.write_text("ID,Runtimes,Normalizers,Usage\ntile:xla:abc,1;2,1;1,Public\n")
    code, _, err = run(
        capsys,
        "leaderboard",
        "export-codabench",
        "--solution",
        str(other),
        "--deadline",
        DEADLINE,
        "--data",
        str(tiny.data_dir),
        "--out",
        str(tmp_path / "c.zip"),
    )
    assert code == 1 and "does not match the test files" in err
    # the start after the deadline; an existing bundle
    code, _, err = run(
        capsys,
        *common,
        "--data",
        str(tiny.data_dir),
        "--start",
        "2031-01-01",
        "--out",
        str(tmp_path / "d.zip"),
    )
    assert code == 1 and "must come after the start" in err
    (tmp_path / "e.zip").write_bytes(b"")
    code, _, err = run(capsys, *common, "--data", str(tiny.data_dir), "--out", str(tmp_path / "e.zip"))
    assert code == 2 and "exists" in err


def test_a_solution_without_private_rows_makes_one_phase(tiny, tmp_path, capsys):
    public_only = tmp_path / "public_only.csv"
    public_only.write_text(tiny.solution_path.read_text().replace(",Private", ",Public"))
    code, _, err = run(
        capsys,
        "leaderboard",
        "export-codabench",
        "--solution",
        str(public_only),
        "--deadline",
        DEADLINE,
        "--data-url",
        "https://x/d.zip",
        "--out",
        str(tmp_path / "b"),
    )
    assert code == 0 and "no Private rows" in err
    document = yaml.safe_load((tmp_path / "b/competition.yaml").read_text())
    assert len(document["phases"]) == 1 and check_bundle(tmp_path / "b") == []


def test_check_reports_each_problem_in_one_line(bundle, tmp_path, capsys):
    code, out, _ = run(
        capsys, "leaderboard", "export-codabench", "--check", str(bundle.parent / "bundle.zip")
    )
    assert code == 0 and "passes" in out
    root = tmp_path / "edited"
    shutil.copytree(bundle, root)
    text = (root / "competition.yaml").read_text()
    text = text.replace('"hide_score_output": true', "x").replace(
        "hide_score_output: true", "hide_score_output: false"
    )
    (root / "competition.yaml").write_text(text.replace("leaderboards:", "leaderboard:"))
    code, _, err = run(capsys, "leaderboard", "export-codabench", "--check", str(root))
    assert code == 1 and "'leaderboard:'" in err and "Traceback" not in err
    (root / "competition.yaml").write_text(text)
    code, _, err = run(capsys, "leaderboard", "export-codabench", "--check", str(root))
    assert code == 1 and err.count("hide_score_output must be true") == 2
    assert run(capsys, "leaderboard", "export-codabench", "--check", str(tmp_path / "none.zip"))[0] == 2
    assert run(capsys, "leaderboard", "export-codabench")[0] == 2  # neither --out nor --check
