"""Does a bundle pass Codabench's rules? Its version-2 unpacker's, and the kit's own for privacy.

``codabench_problems`` restates, in the kit's words, what Codabench's bundle unpacker (version 2 of
``competition.yaml``) and the serializers it saves through refuse, and what its compute worker needs
of a scoring program: read from Codabench's source (``competitions/unpackers``, ``api/serializers``,
``leaderboards/models.py``, ``compute_worker.py``) and its documentation of the YAML. Each problem is
one line naming the field. Two things it flags that Codabench accepts but a host would not want: no
``docker_image`` (the default image runs Python 3.7), and a date-time written as a YAML date (the
unpacker keeps its day and drops the time).

``privacy_problems`` is the kit's rule on top: no phase before the last may score a Private row, and
no phase may let participants download its scoring output.
"""

from __future__ import annotations

import io
import re
import tempfile
import uuid
import zipfile
from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path

from competition.errors import SolutionFormatError
from competition.scoring import PRIVATE, PUBLIC, load_solution

SUBMISSION_RULES = (
    "Add",
    "Add_And_Delete",
    "Add_And_Delete_Multiple",
    "Force_Last",
    "Force_Latest_Multiple",
    "Force_Best",
)
COMPUTATIONS = ("avg", "sum", "min", "max")
TASK_FILES = ("ingestion_program", "input_data", "scoring_program", "reference_data")
# Field lengths of Codabench's models.
MAX_TITLE, MAX_DOCKER_IMAGE, MAX_PHASE_NAME = 256, 128, 256
MAX_BOARD_TITLE, MAX_BOARD_KEY, MAX_COLUMN_TITLE, MAX_COLUMN_KEY = 64, 36, 36, 36
DEFAULT_IMAGE = "codalab/codalab-legacy:py37"
LARGE_MEMBER = 256 * 2**20  # a bundle member past this (the public data) is checked for presence only
_IMAGE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?([+-]\d{2}:?\d{2}|Z)?$")


def load_yaml(text: str) -> object:
    """``competition.yaml`` read as Codabench reads it (``yaml.safe_load``; PyYAML)."""
    import yaml

    return yaml.safe_load(text)


def _file(root: Path, name: object) -> Path | None:
    return root / name if isinstance(name, str) and name and (root / name).exists() else None


def _is_uuid(value: object) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


def _when(value: object, where: str, problems: list[str]) -> datetime | None:
    """A phase date as the unpacker reads it (None when missing or unreadable, with a problem)."""
    if value is None or value == "":
        return None
    if isinstance(value, date):  # a YAML date or date-time: Codabench keeps the day, at midnight
        if isinstance(value, datetime) and (value.hour, value.minute, value.second) != (0, 0, 0):
            problems.append(
                f"{where}: {value} is written as a YAML date-time, which Codabench cuts to "
                "midnight of its day; quote it"
            )
        return datetime(value.year, value.month, value.day)
    if not isinstance(value, str) or not _DATE.match(value.strip()):
        problems.append(f"{where}: {value!r} is not a date-time (YYYY-MM-DD HH:MM:SS)")
        return None
    text = value.strip().replace("T", " ").rstrip("Z")
    text = re.sub(r"[+-]\d{2}:?\d{2}$", "", text)  # Codabench replaces the zone with its own (UTC)
    for pattern in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return datetime.strptime(text, pattern)
        except ValueError:
            continue
    problems.append(f"{where}: {value!r} is not a date-time (YYYY-MM-DD HH:MM:SS)")
    return None


def _zip_names(path: Path) -> list[str] | None:
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.namelist()
    except (zipfile.BadZipFile, OSError):
        return None


def _program_problems(path: Path, where: str) -> list[str]:
    """What the compute worker needs of a scoring program: ``metadata.yaml`` (or ``metadata``) with a
    ``command`` at the top of the unzipped folder."""
    if path.is_dir():
        names = [p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file()]
        read = lambda name: (path / name).read_text(encoding="utf-8")  # noqa: E731
    else:
        names = _zip_names(path)
        if names is None:
            return [f"{where}: {path.name} is not a readable zip"]

        def read(name: str) -> str:
            with zipfile.ZipFile(path) as archive:
                return archive.read(name).decode("utf-8")

    metadata = next((n for n in ("metadata.yaml", "metadata") if n in names), None)
    if metadata is None:
        nested = [n for n in names if n.endswith(("/metadata.yaml", "/metadata"))]
        hint = f" (found {nested[0]}: zip the folder's contents, not the folder)" if nested else ""
        return [f"{where}: {path.name} has no metadata.yaml at its top{hint}; the worker would run nothing"]
    try:
        content = load_yaml(read(metadata))
    except ImportError:  # no PyYAML here: the kit's own metadata is one "command: ..." line
        content = {
            k.strip(): v.strip() for k, _, v in (line.partition(":") for line in read(metadata).splitlines())
        }
    except Exception as exc:  # noqa: BLE001 - any YAML error is a problem to report
        return [f"{where}: {metadata} is not YAML ({type(exc).__name__})"]
    if not isinstance(content, dict) or not content.get("command"):
        return [f"{where}: {metadata} has no command; the worker would run nothing"]
    return []


def codabench_problems(root: Path, document: object) -> list[str]:
    """Problems Codabench's version-2 unpacker would refuse the bundle unpacked in ``root`` for."""
    problems: list[str] = []
    if not isinstance(document, dict):
        return ["competition.yaml: not a mapping"]
    if str(document.get("version", "1")) != "2":
        problems.append(f"version: {document.get('version')!r}; a version-2 bundle says version: 2")
    title = document.get("title")
    if not isinstance(title, str) or not title.strip() or len(title) > MAX_TITLE:
        problems.append(f"title: required, one line of at most {MAX_TITLE} characters")
    image = _file(root, document.get("image"))
    if image is None:
        problems.append(f"image: the logo file {document.get('image')!r} is missing (required)")
    elif not image.read_bytes().startswith(_IMAGE_MAGIC):
        problems.append(f"image: {image.name} is not a PNG, JPEG or GIF image")
    terms = _file(root, document.get("terms"))
    if terms is None:
        problems.append(f"terms: the terms page {document.get('terms')!r} is missing (required)")
    elif not terms.read_text(encoding="utf-8").strip():
        problems.append(f"terms: {terms.name} is empty")
    docker_image = document.get("docker_image")
    if not docker_image:
        problems.append(
            f"docker_image: not set, so Codabench uses {DEFAULT_IMAGE} (Python 3.7), where the "
            "kit's scoring program does not run"
        )
    elif not isinstance(docker_image, str) or len(docker_image) > MAX_DOCKER_IMAGE:
        problems.append(f"docker_image: at most {MAX_DOCKER_IMAGE} characters")
    pages = document.get("pages")
    if not isinstance(pages, list):
        problems.append("pages: required, a list of {title, file}")
    else:
        for position, page in enumerate(pages):
            found = _file(root, page.get("file")) if isinstance(page, dict) else None
            if found is None:
                problems.append(f"pages[{position}]: the file is missing")
            elif not found.read_text(encoding="utf-8").strip():
                problems.append(f"pages[{position}]: {found.name} is empty")
    task_indexes = _task_problems(root, document.get("tasks"), problems)
    _solution_problems(root, document.get("solutions"), task_indexes, problems)
    _phase_problems(root, document.get("phases"), task_indexes, problems)
    if "leaderboards" not in document:
        hint = " (it says 'leaderboard:', which Codabench does not read)" if "leaderboard" in document else ""
        problems.append(f"leaderboards: required{hint}")
    else:
        _leaderboard_problems(document["leaderboards"], problems)
    return problems


def _indexed(section: str, entries: list, problems: list[str]) -> Iterator[tuple[str, dict]]:
    """``(where, entry)`` for each entry of a list whose entries need an ``index`` of their own; an entry
    without one is a problem and skipped, an index used twice a problem."""
    seen = set()
    for position, entry in enumerate(entries):
        where = f"{section}[{position}]"
        if not isinstance(entry, dict) or "index" not in entry:
            problems.append(f"{where}: no index")
            continue
        if entry["index"] in seen:
            problems.append(f"{where}: index {entry['index']} used twice")
        seen.add(entry["index"])
        yield where, entry


def _task_problems(root: Path, tasks: object, problems: list[str]) -> set:
    if not isinstance(tasks, list) or not tasks:
        problems.append("tasks: required, a list")
        return set()
    indexes: set = set()
    for where, task in _indexed("tasks", tasks, problems):
        indexes.add(task["index"])
        if "key" in task:
            continue
        if "scoring_program" not in task:
            problems.append(f"{where}: no scoring_program")
        for kind in TASK_FILES:
            if kind not in task:
                continue
            found = _file(root, task[kind])
            if found is None and not _is_uuid(task[kind]):
                problems.append(f"{where}: {kind} {task[kind]!r} is missing from the bundle")
            elif found is not None and kind in ("scoring_program", "ingestion_program"):
                problems += _program_problems(found, f"{where}.{kind}")
            elif found is not None and found.is_file() and _zip_names(found) is None:
                problems.append(f"{where}: {kind} {found.name} is not a readable zip")
    return indexes


def _solution_problems(root: Path, solutions: object, task_indexes: set, problems: list[str]) -> None:
    if not solutions:
        return
    if not isinstance(solutions, list):
        problems.append("solutions: a list")
        return
    for where, solution in _indexed("solutions", solutions, problems):
        if not isinstance(solution.get("tasks"), list) or not set(solution["tasks"]) <= task_indexes:
            problems.append(f"{where}: tasks must list indexes of tasks")
        if "key" not in solution and (_file(root, solution.get("path")) is None):
            problems.append(f"{where}: path {solution.get('path')!r} is missing from the bundle")


def _phase_problems(root: Path, phases: object, task_indexes: set, problems: list[str]) -> None:
    if not isinstance(phases, list) or not phases:
        problems.append("phases: required, a list of at least one phase")
        return
    ordered = sorted((p for p in phases if isinstance(p, dict)), key=lambda p: p.get("index", 0))
    previous_end: datetime | None = None
    for position, phase in enumerate(ordered):
        where = f"phases[{position}] ({phase.get('name', 'no name')})"
        name = phase.get("name")
        if not isinstance(name, str) or not name or len(name) > MAX_PHASE_NAME:
            problems.append(f"{where}: name required, at most {MAX_PHASE_NAME} characters")
        tasks = phase.get("tasks")
        if not isinstance(tasks, list) or not tasks:
            problems.append(f"{where}: tasks required (at least one task index)")
        elif not set(tasks) <= task_indexes:
            problems.append(f"{where}: tasks {tasks} name a task the bundle does not define")
        start = _when(phase.get("start"), f"{where}.start", problems)
        end = _when(phase.get("end"), f"{where}.end", problems)
        if start is None:
            problems.append(f"{where}: start required")
        if start is not None and end is not None and end <= start:
            problems.append(f"{where}: ends before it starts")
        if position and previous_end is None:
            problems.append(f"phases[{position - 1}]: needs an end, since a phase follows it")
        elif position and start is not None and start <= previous_end:  # type: ignore[operator]
            problems.append(f"{where}: must start after the previous phase ends ({previous_end})")
        previous_end = end
        if position == 0 and phase.get("auto_migrate_to_this_phase"):
            problems.append(f"{where}: the first phase cannot be auto_migrate_to_this_phase")
        for key in ("max_submissions_per_day", "max_submissions", "execution_time_limit"):
            value = phase.get(key)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                problems.append(f"{where}: {key} must be a whole number, 0 or more")
        for key in ("public_data", "starting_kit"):
            if key in phase and _file(root, phase[key]) is None and not _is_uuid(phase[key]):
                problems.append(f"{where}: {key} {phase[key]!r} is missing from the bundle")


def _leaderboard_problems(boards: object, problems: list[str]) -> None:
    if not isinstance(boards, list) or not boards:
        problems.append("leaderboards: a list of at least one leaderboard (every phase uses the first)")
        return
    for position, board in enumerate(boards):
        where = f"leaderboards[{position}]"
        if not isinstance(board, dict):
            problems.append(f"{where}: not a mapping")
            continue
        for key, limit in (("title", MAX_BOARD_TITLE), ("key", MAX_BOARD_KEY)):
            if not isinstance(board.get(key), str) or not board[key] or len(board[key]) > limit:
                problems.append(f"{where}: {key} required, at most {limit} characters")
        rule = board.get("submission_rule", "Add")
        if rule not in SUBMISSION_RULES:
            problems.append(f"{where}: submission_rule {rule!r} is not one of {', '.join(SUBMISSION_RULES)}")
        columns = board.get("columns")
        if not isinstance(columns, list) or not columns:
            problems.append(f"{where}: columns required (at least one)")
            continue
        indexes = [c.get("index") for c in columns if isinstance(c, dict)]
        keys = [c.get("key") for c in columns if isinstance(c, dict)]
        if len(set(indexes)) != len(columns):
            problems.append(f"{where}: column indexes must be unique")
        if len(set(keys)) != len(columns):
            problems.append(f"{where}: column keys must be unique")
        if board.get("primary_index", 0) not in indexes:
            problems.append(f"{where}: primary_index names no column")
        for number, column in enumerate(c for c in columns if isinstance(c, dict)):
            at = f"{where}.columns[{number}]"
            for key, limit in (("title", MAX_COLUMN_TITLE), ("key", MAX_COLUMN_KEY)):
                if not isinstance(column.get(key), str) or not column[key] or len(column[key]) > limit:
                    problems.append(f"{at}: {key} required, at most {limit} characters")
            if not isinstance(column.get("index"), int) or column["index"] < 0:
                problems.append(f"{at}: index required, a whole number")
            if column.get("sorting", "desc") not in ("asc", "desc"):
                problems.append(f"{at}: sorting is asc or desc")
            if "precision" in column and not isinstance(column["precision"], int):
                problems.append(f"{at}: precision is a whole number")
            computation = column.get("computation")
            if computation is not None and (
                computation not in COMPUTATIONS or not column.get("computation_indexes")
            ):
                problems.append(
                    f"{at}: computation is one of {', '.join(COMPUTATIONS)}, with computation_indexes"
                )


def _reference_splits(path: Path | None) -> set[int] | None:
    """The splits (PUBLIC, PRIVATE) a reference data zip scores; None when it holds no solution CSV."""
    if path is None or _zip_names(path) is None:
        return None
    with zipfile.ZipFile(path) as archive:
        csvs = [n for n in archive.namelist() if n.lower().endswith(".csv")]
        if len(csvs) != 1:
            return None
        try:
            solution = load_solution(io.BytesIO(archive.read(csvs[0])))
        except SolutionFormatError:
            return None
    return {
        code
        for labels in solution.labels.values()
        for code in (PUBLIC, PRIVATE)
        if (labels.usage == code).any()
    }


def privacy_problems(root: Path, document: dict) -> list[str]:
    """The kit's rule: no private score before the end. Every phase hides its scoring output; each task's
    reference scores one split; only the last phase scores Private rows."""
    problems = []
    phases = sorted(document.get("phases", []), key=lambda p: p.get("index", 0))
    tasks = {t.get("index"): t for t in document.get("tasks", []) if isinstance(t, dict)}
    for position, phase in enumerate(phases):
        where = f"phases[{position}] ({phase.get('name')})"
        if phase.get("hide_score_output") is not True:
            problems.append(
                f"{where}: hide_score_output must be true (the scoring output is downloadable otherwise)"
            )
        for index in phase.get("tasks", []):
            splits = _reference_splits(_file(root, tasks.get(index, {}).get("reference_data")))
            if splits is None:
                problems.append(f"{where}: task {index} has no readable reference solution")
            elif len(splits) > 1:
                problems.append(f"{where}: task {index}'s reference scores both Public and Private rows")
            elif PRIVATE in splits and position < len(phases) - 1:
                problems.append(f"{where}: task {index} scores Private rows before the last phase")
    return problems


def check_bundle(bundle: Path, document: object = None) -> list[str]:
    """Every problem of the bundle (a zip, or the folder it unpacks to): Codabench's, then the kit's.
    ``document`` is competition.yaml already read (else it is read with PyYAML)."""
    if bundle.is_file():
        with tempfile.TemporaryDirectory(prefix="codabench-check-") as scratch:
            try:
                with zipfile.ZipFile(bundle) as archive:
                    for member in archive.infolist():
                        if member.file_size <= LARGE_MEMBER or member.is_dir():
                            archive.extract(member, scratch)
                        else:  # the public data: only its presence is checked, no need to unpack gigabytes
                            placeholder = (Path(scratch) / member.filename).resolve()
                            if Path(scratch).resolve() in placeholder.parents:
                                placeholder.parent.mkdir(parents=True, exist_ok=True)
                                placeholder.write_bytes(b"")
            except zipfile.BadZipFile:
                return [f"{bundle}: not a zip file (Codabench: 'Bad zip file uploaded.')"]
            return check_bundle(Path(scratch), document)
    yaml_path = bundle / "competition.yaml"
    if not yaml_path.is_file():
        return ["competition.yaml is missing from the top of the bundle"]
    if document is None:
        document = load_yaml(yaml_path.read_text(encoding="utf-8"))
    problems = codabench_problems(bundle, document)
    if not problems and isinstance(document, dict):
        problems += privacy_problems(bundle, document)
    return problems
