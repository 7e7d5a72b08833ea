"""A whole Codabench competition bundle (``competition.yaml`` version 2) from a kit competition.

What goes in (the names as ``competition.yaml`` gives them):

- ``logo.png``, ``pages/`` (overview, evaluation, data, rules, terms: written from the kit's own
  description of the competition and the host's rules);
- ``scoring_program.zip`` (``program``), the program of both tasks;
- ``reference_public.zip`` and ``reference_private.zip``: the solution with the labels of one split
  each (``phase_reference``); every other row is kept, for the validator, with placeholder labels;
- ``sample_submission.zip``: a valid submission, the bundle's solution (Codabench runs it to check
  the tasks);
- ``public_data.zip`` (the public data folder as it is, unless the host links it instead) and
  ``starting_kit.zip`` (a README, the sample submission, the starter notebooks).

Two phases carry the host's deadline. The *public* phase scores the public rows only, with the
host's daily limit; its leaderboard keeps each participant's best public submission (Codabench's
``Force_Best``). The *private* phase starts a minute after the deadline: Codabench moves every
participant's leaderboard submission into it (``auto_migrate_to_this_phase``) and scores it on the
private rows. It stays open ``FINAL_WINDOW`` and takes at most one submission per participant
(the migrated one counts). No private label reaches the public phase, and the scoring output of
both phases is hidden (``hide_score_output``).
"""

from __future__ import annotations

import csv
import io
import math
import shutil
import string
import struct
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path

from competition.collections import COLLECTION_BY_NAME, SOLUTION_COLUMNS, parse_row_id
from competition.scoring import IGNORED, PRIVATE, PUBLIC, Solution, load_solution
from competition.submission import validate_submission
from leaderboard.codabench.program import score_key, write_program

DEFAULT_DOCKER_IMAGE = "codalab/codalab-legacy:py312"
FINAL_GAP = timedelta(minutes=1)  # Codabench wants a phase to start strictly after the previous one ends
FINAL_WINDOW = timedelta(minutes=10)
EXECUTION_TIME_LIMIT_S = 600
PRECISION = 4
DATE_FORMAT = "%Y-%m-%d %H:%M:%S"  # Codabench's documented form, read as UTC
PAGES = (
    ("Overview", "overview.md"),
    ("Evaluation", "evaluation.md"),
    ("Data", "data.md"),
    ("Rules", "rules.md"),
)
TERMS = "terms.md"
SPLIT_NAMES = {PUBLIC: "Public", PRIVATE: "Private"}


@dataclass(frozen=True)
class HostRules:
    """What the host decided: the kit's competition settings, and when the Codabench one opens."""

    title: str
    start: datetime  # aware, UTC
    deadline: datetime  # aware, UTC
    daily_limit: int
    max_selected: int


@dataclass
class BundleSummary:
    path: Path
    size: int  # bytes of the zip (or of the folder's files)
    public_rows: int
    private_rows: int
    ignored_rows: int
    public_data: str  # "bundled", or the URL participants are sent to
    notebooks: int
    warnings: list[str] = field(default_factory=list)


class BundleError(ValueError):
    """The inputs cannot make a bundle (the message names the input and what is wrong)."""


def yaml_text(document: dict) -> str:
    """``competition.yaml``'s text: PyYAML's safe block style, keys in the bundle's order. A string that
    would read as another type (a date, ``yes``, a number) is quoted, so Codabench's unpacker reads every
    value back as written (an unquoted date-time would be cut to midnight of its day)."""
    import yaml

    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, default_flow_style=False,
                          width=100)


# ---------------------------------------------------------------------------------------------
# The reference data of a phase


def placeholder_labels(n_configs: int, with_normalizers: bool) -> tuple[str, str]:
    """Runtimes ``1;2;...;n`` and normalisers all 1 (tile): labels that say nothing, for rows a phase
    does not score but the validator needs (their IDs and configuration counts are public)."""
    runtimes = ";".join(str(i) for i in range(1, n_configs + 1))
    return runtimes, (";".join(["1"] * n_configs) if with_normalizers else "")


def phase_reference(solution_csv: bytes, split: int) -> bytes:
    """The solution with the labels of ``split`` (PUBLIC or PRIVATE) only: those rows as they are,
    every other row Ignored with placeholder labels. Same IDs, same configuration counts."""
    keep = SPLIT_NAMES[split]
    reader = csv.reader(io.StringIO(solution_csv.decode("utf-8-sig")))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = next(reader)
    writer.writerow(SOLUTION_COLUMNS)
    del header
    for row in reader:
        if not row:
            continue
        row_id, runtimes, normalizers, usage = (cell.strip() for cell in row)
        if usage == keep:
            writer.writerow([row_id, runtimes, normalizers, usage])
            continue
        collection, _ = parse_row_id(row_id)
        n_configs = runtimes.count(";") + 1
        fake_runtimes, fake_normalizers = placeholder_labels(n_configs, collection.task.has_normalizers)
        writer.writerow([row_id, fake_runtimes, fake_normalizers, "Ignored"])
    return out.getvalue().encode()


def usage_counts(solution: Solution) -> dict[int, int]:
    counts = {PUBLIC: 0, PRIVATE: 0, IGNORED: 0}
    for labels in solution.labels.values():
        for code in counts:
            counts[code] += int((labels.usage == code).sum())
    return counts


def sample_submission(solution: Solution) -> bytes:
    """A valid submission: every test graph with its configurations in file order (the tile rows their
    first five), as Kaggle's ``sample_submission.csv``."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["ID", "TopConfigs"])
    for name, labels in solution.labels.items():
        collection = COLLECTION_BY_NAME[name]
        for row_id, n in zip(labels.ids, labels.config_counts, strict=True):
            writer.writerow([row_id, ";".join(str(i) for i in range(collection.required_length(int(n))))])
    return out.getvalue().encode()


# ---------------------------------------------------------------------------------------------
# Pages and the logo


def _page(name: str, **values: object) -> str:
    # templates/ is package data (pyproject.toml's package-data takes every package's templates/*).
    template = resources.files("leaderboard.codabench").joinpath("templates", name).read_text("utf-8")
    return string.Template(template).substitute({k: str(v) for k, v in values.items()})


def _utc(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def write_pages(
    solution: Solution, rules: HostRules, counts: dict[int, int], *, data_url: str | None, phases: list[dict]
) -> dict[str, str]:
    """``pages/<name>.md`` -> text, for the overview, evaluation, data, rules and terms pages."""
    table = []
    for name, labels in solution.labels.items():
        collection = COLLECTION_BY_NAME[name]
        what = (
            "tile sizes of the kernel"
            if collection.task.has_normalizers
            else "layouts of the configurable nodes"
        )
        table.append(f"| `{name}` | {what} | {collection.metric} | {len(labels.ids)} |")
    scored = counts[PUBLIC] + counts[PRIVATE]
    share = f"{100 * counts[PUBLIC] / scored:.0f} %" if scored else "none"
    has_final = len(phases) > 1
    final_sentence = (
        f"The private leaderboard is computed from {_utc(rules.deadline + FINAL_GAP)}."
        if has_final
        else "The competition has no private part: its ranking is the public one."
    )
    if has_final:
        boards = (
            "During the competition the leaderboard (phase *Public leaderboard*) scores the public "
            "part only. After the deadline, each participant's submission on that leaderboard, "
            "the best public one, is scored on the private part (phase *Private leaderboard*): "
            "that score decides the final ranking."
        )
        final_rules = (
            f"- **Final ranking:** one submission per participant counts: the one on the public "
            f"leaderboard at the deadline (your best public score). A minute after the deadline "
            f"Codabench moves it into the phase *Private leaderboard* and scores it on the "
            f"private part; that phase stays open {int(FINAL_WINDOW.total_seconds() // 60)} "
            "minutes and takes no new submission from anyone who has one there. You do not "
            "choose final submissions."
        )
    else:
        boards = "All scored graphs are public: the leaderboard is the final ranking."
        final_rules = "- **Final ranking:** the public leaderboard at the deadline."
    covered = len(solution.labels)
    collection_note = f" (this competition covers {covered} of the five collections)" if covered < 5 else ""
    if data_url:
        data_source = (
            f"Download the data from {data_url} and unzip it; point the kit's commands "
            "(`--data`) or the notebooks (`DATA_DIR`) at the folder."
        )
    else:
        data_source = (
            "Download **Public data** from the *Files* tab and unzip it; point the kit's commands "
            "(`--data`) or the starter notebooks (`DATA_DIR`) at the folder. The *Starting kit* "
            "holds the sample submission, the starter notebooks and how to run them."
        )
    days = max(1, math.ceil((rules.deadline - rules.start).total_seconds() / 86400))
    return {
        "pages/overview.md": _page(
            "overview.md",
            title=rules.title,
            collection_table="\n".join(table),
            start=_utc(rules.start),
            deadline=_utc(rules.deadline),
            final_sentence=final_sentence,
        ),
        "pages/evaluation.md": _page(
            "evaluation.md", collection_note=collection_note, public_share=share, board_sentences=boards
        ),
        "pages/data.md": _page("data.md", data_source=data_source, test_graphs=solution.num_rows),
        "pages/rules.md": _page(
            "rules.md",
            deadline=_utc(rules.deadline),
            daily_limit=rules.daily_limit,
            max_submissions=rules.daily_limit * days,
            final_rules=final_rules,
            team_note="",
        ),
        "pages/terms.md": _page(TERMS, title=rules.title),
    }


def logo_png(size: int = 128) -> bytes:
    """The competition's logo: a small bar chart (a ranking) in the kit's colours, as a PNG."""
    background, bars = (0x1F, 0x3A, 0x5F), (0xF2, 0xA9, 0x00)
    heights = (0.85, 0.65, 0.5, 0.35)
    width = size // (2 * len(heights) + 1)
    rows = []
    for y in range(size):
        row = bytearray(b"\x00")  # filter type 0
        level = 1 - y / size
        for x in range(size):
            slot, inside = divmod(x, width)
            bar = (slot - 1) // 2
            on = slot % 2 == 1 and 0 <= bar < len(heights) and level <= heights[bar] and y < size - width // 2
            row += bytes(bars if on else background)
        del inside
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"".join(rows), 9))
        + chunk(b"IEND", b"")
    )


# ---------------------------------------------------------------------------------------------
# The starting kit


STARTING_KIT_README = """\
# Starting kit: $title

- `sample_submission.csv`: a valid submission (every test graph, configurations in file order).
- `notebooks/`: the tpugraphs kit's numbered starter notebooks$notebook_note.

## Set up

The notebooks and the commands below need the tpugraphs kit (Python 3.11 or newer): install it as
its README says (`pip install '.[notebooks]'` in its folder), then download and unzip the public
data (*Files* tab, or the link on the *Data* page).

```bash
tpugraphs stats --data DATA_DIR                     # what the data holds
tpugraphs solve --data DATA_DIR --method heuristic --out submission.csv
tpugraphs validate submission.csv --data DATA_DIR   # exit 0 when the file is valid
python -m zipfile -c submission.zip submission.csv  # what you upload
```

In a notebook, set `DATA_DIR` in the first cell to the unzipped data folder. The notebooks run on a
small synthetic competition when `DATA_DIR` is left empty; their committed outputs come from it.

## Submitting

Upload `submission.zip` on the *My Submissions* tab. A file that breaks a rule of the format is
marked Failed (it does not count toward your limit); its log names the line, the graph and the rule.
"""


def notebooks_folder() -> Path | None:
    """The kit's starter notebooks (``notebooks/`` of a source checkout), or None when installed without."""
    folder = Path(__file__).resolve().parents[2] / "notebooks"
    return folder if any(folder.glob("[0-9][0-9]_*.ipynb")) else None


# ---------------------------------------------------------------------------------------------
# competition.yaml


def _phase(index: int, name: str, description: str, start: datetime, end: datetime, *, with_public_data: bool,
           **limits: object) -> dict:
    """One phase: its task is the one of the same index; the scoring output is never downloadable."""
    return {
        "index": index,
        "name": name,
        "description": description,
        "start": start.astimezone(UTC).strftime(DATE_FORMAT),
        "end": end.astimezone(UTC).strftime(DATE_FORMAT),
        **limits,
        "execution_time_limit": EXECUTION_TIME_LIMIT_S,
        "hide_output": False,  # the log carries the validator's report of an invalid file
        "hide_score_output": True,
        **({"public_data": "public_data.zip"} if with_public_data else {}),
        "starting_kit": "starting_kit.zip",
        "tasks": [index],
    }


def _task(index: int, split: str) -> dict:
    return {
        "index": index,
        "name": f"{split} rows",
        "description": f"Scores the {split.lower()} rows.",
        "scoring_program": "scoring_program.zip",
        "reference_data": f"reference_{split.lower()}.zip",
    }


def competition_yaml(
    solution: Solution, rules: HostRules, counts: dict[int, int], *, docker_image: str, with_public_data: bool
) -> dict:
    """The ``competition.yaml`` document: a public phase to the deadline, then (with Private rows) the
    private phase that Codabench migrates each participant's leaderboard submission into."""
    days = max(1, math.ceil((rules.deadline - rules.start).total_seconds() / 86400))
    phases = [_phase(0, "Public leaderboard", "Submissions are scored on the public part of the test graphs.",
                     rules.start, rules.deadline, with_public_data=with_public_data,
                     max_submissions_per_day=rules.daily_limit, max_submissions=rules.daily_limit * days)]
    tasks = [_task(0, "Public")]
    if counts[PRIVATE]:
        final_start = rules.deadline + FINAL_GAP
        description = ("Each participant's public leaderboard submission, scored on the private part of the "
                       "test graphs. Takes no new submissions.")
        # The migrated submission counts toward max_submissions: nobody who has one can add another.
        phases.append(_phase(1, "Private leaderboard", description, final_start, final_start + FINAL_WINDOW,
                             with_public_data=with_public_data, auto_migrate_to_this_phase=True,
                             max_submissions_per_day=1, max_submissions=1))
        tasks.append(_task(1, "Private"))
    columns = [{"title": "Score", "key": "score", "index": 0, "sorting": "desc", "precision": PRECISION}]
    columns += [{"title": name, "key": score_key(name), "index": position, "sorting": "desc",
                 "precision": PRECISION} for position, name in enumerate(solution.labels, start=1)]
    return {
        "version": 2,
        "title": rules.title,
        "description": "Rank the compiler configurations of XLA graphs by their runtime on a TPU.",
        "image": "logo.png",
        "terms": "pages/terms.md",
        "docker_image": docker_image,
        "registration_auto_approve": False,
        "make_programs_available": False,
        "make_input_data_available": False,
        "enable_detailed_results": False,
        "can_participants_make_submissions_public": False,
        "auto_run_submissions": True,
        "pages": [{"title": title, "file": f"pages/{file}"} for title, file in PAGES],
        "phases": phases,
        "tasks": tasks,
        "solutions": [{"index": 0, "name": "Sample submission", "path": "sample_submission.zip",
                       "tasks": [task["index"] for task in tasks]}],
        "leaderboards": [{"title": "Results", "key": "main", "submission_rule": "Force_Best",
                          "columns": columns}],
    }


# ---------------------------------------------------------------------------------------------
# Writing


def _zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


COMPRESSED = (".npz", ".zip", ".png", ".gz", ".xz", ".bz2", ".7z")  # deflating these again gains nothing


def _zip_folder(folder: Path, target: Path) -> None:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as archive:
        for path in _files(folder):
            archive.write(
                path,
                path.relative_to(folder).as_posix(),
                compress_type=(
                    zipfile.ZIP_STORED if path.suffix.lower() in COMPRESSED else zipfile.ZIP_DEFLATED
                ),
            )


def _files(folder: Path) -> Iterator[Path]:
    return (p for p in sorted(folder.rglob("*")) if p.is_file())


def check_public_data(folder: Path) -> None:
    """Refuse a public data folder holding anything that looks like hidden labels (a solution CSV)."""
    for path in _files(folder):
        if path.suffix.lower() != ".csv":
            continue
        with open(path, "rb") as fh:
            first = fh.readline(4096).lstrip(b"\xef\xbb\xbf").strip().replace(b" ", b"")
        if first.startswith(b"ID,Runtimes"):
            raise BundleError(
                f"{path}: the public data folder holds a solution file (header {first[:40]!r}); "
                "give the folder participants may download (e.g. the public/ of "
                "tpugraphs synth or prepare)"
            )


def _starting_kit(title: str, sample: bytes, notebooks: Path | None) -> tuple[bytes, int]:
    """``starting_kit.zip`` (README, sample submission, the numbered starter notebooks) and how many
    notebooks it holds."""
    members = {"sample_submission.csv": sample}
    count = 0
    if notebooks is not None:
        for path in sorted(notebooks.glob("[0-9][0-9]_*.ipynb")) + sorted(notebooks.glob("README.md")):
            members[f"notebooks/{path.name}"] = path.read_bytes()
            count += path.suffix == ".ipynb"
    note = "" if count else " (not found where this kit is installed: get them from the kit's notebooks/)"
    readme = string.Template(STARTING_KIT_README).substitute(title=title, notebook_note=note)
    members["README.md"] = readme.encode()
    return _zip_bytes(members), count


def _references(solution_csv: bytes, solution: Solution, counts: dict[int, int]) -> dict[str, bytes]:
    """Each phase's reference data zip, checked to hold the same test graphs as the solution."""
    references = {}
    for split in (PUBLIC, PRIVATE) if counts[PRIVATE] else (PUBLIC,):
        reference = phase_reference(solution_csv, split)
        if load_solution(reference).expected_configs() != solution.expected_configs():
            raise AssertionError("a phase reference lost or changed a test graph")
        references[f"reference_{SPLIT_NAMES[split].lower()}.zip"] = _zip_bytes({"solution.csv": reference})
    return references


def _emit(staging: Path, out: Path) -> int:
    """Move the staged bundle to ``out`` (a zip, all or nothing; or a folder); its size in bytes."""
    if out.suffix.lower() == ".zip":
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name(out.name + ".partial")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as archive:
            for path in _files(staging):
                stored = path.suffix.lower() in COMPRESSED
                archive.write(path, path.relative_to(staging).as_posix(),
                              compress_type=zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED)
        partial.replace(out)
        return out.stat().st_size
    out.mkdir(parents=True, exist_ok=True)
    for path in _files(staging):
        target = out / path.relative_to(staging)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(path), target)
    return sum(p.stat().st_size for p in _files(out))


def _check_target(out: Path) -> None:
    if out.suffix.lower() == ".zip" and out.exists():
        raise FileExistsError(f"{out}: exists; give a new file name")
    if out.suffix.lower() != ".zip" and out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"{out}: exists and is not an empty folder")


def export_bundle(out: Path, *, solution_csv: bytes, rules: HostRules, data_dir: Path | None,
                  data_url: str | None, docker_image: str = DEFAULT_DOCKER_IMAGE,
                  notebooks: Path | None = None) -> BundleSummary:
    """Write the bundle to ``out``: a ``.zip`` file, or else a folder (new or empty) holding what the zip
    would hold. ``data_dir`` is bundled as the public data unless ``data_url`` is given.

    BundleError for inputs that cannot make a bundle; FileExistsError when ``out`` is taken. The bundle is
    staged beside ``out`` (the public data needs its size twice there, for a moment).
    """
    if rules.start.tzinfo is None or rules.deadline.tzinfo is None:
        raise ValueError("HostRules times must be timezone-aware")
    if rules.deadline <= rules.start:
        raise BundleError(f"the deadline ({_utc(rules.deadline)}) must come after the start "
                          f"({_utc(rules.start)})")
    _check_target(out)
    if data_dir is not None and out.resolve().is_relative_to(data_dir.resolve()):
        raise BundleError(f"--out {out} lies inside the public data folder {data_dir}; write it elsewhere")
    if data_dir is None and data_url is None:
        raise BundleError("give the public data folder (bundled) or the URL participants download it from")
    solution = load_solution(solution_csv)
    counts = usage_counts(solution)
    warnings = []
    if not counts[PUBLIC]:
        warnings.append("the solution has no Public rows: the public leaderboard will show no score")
    if not counts[PRIVATE]:
        warnings.append("the solution has no Private rows: the bundle has no private phase, the public "
                        "leaderboard is the final ranking")
    if data_dir is not None and data_url is None:
        check_public_data(data_dir)
    sample = sample_submission(solution)
    if not validate_submission(sample, solution.expected_configs()).ok:
        raise AssertionError("the sample submission does not validate")
    document = competition_yaml(solution, rules, counts, docker_image=docker_image,
                                with_public_data=data_url is None)
    files = {"competition.yaml": yaml_text(document).encode(), "logo.png": logo_png(),
             **{name: text.encode() for name, text in
                write_pages(solution, rules, counts, data_url=data_url, phases=document["phases"]).items()},
             **_references(solution_csv, solution, counts),
             "sample_submission.zip": _zip_bytes({"sample_submission.csv": sample})}
    files["starting_kit.zip"], notebook_count = _starting_kit(rules.title, sample, notebooks)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".codabench-", dir=out.parent) as scratch:
        staging = Path(scratch) / "bundle"
        for name, data in files.items():
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_bytes(data)
        _zip_folder(write_program(Path(scratch) / "program"), staging / "scoring_program.zip")
        if data_url is None and data_dir is not None:
            _zip_folder(data_dir, staging / "public_data.zip")
        from leaderboard.codabench.check import check_bundle

        problems = check_bundle(staging, document)
        if problems:  # the export's own output must pass Codabench's rules: a bug of the kit if not
            raise AssertionError("the bundle breaks Codabench's rules:\n  " + "\n  ".join(problems))
        size = _emit(staging, out)
    return BundleSummary(path=out, size=size, public_rows=counts[PUBLIC], private_rows=counts[PRIVATE],
                         ignored_rows=counts[IGNORED], public_data=data_url or "bundled",
                         notebooks=notebook_count, warnings=warnings)
