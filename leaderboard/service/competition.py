"""The competition row: creating it, reading and changing its rules, the stored solution."""

from __future__ import annotations

import hashlib
import unicodedata
from datetime import datetime
from typing import Self

from sqlalchemy import select
from sqlalchemy.exc import DatabaseError

from competition.errors import SolutionFormatError
from competition.scoring import Solution, load_solution
from leaderboard.database import LOCK_TIMEOUT_S, Database, sqlite_file
from leaderboard.errors import Conflict, NotInitialised, SolutionTampered
from leaderboard.models import SCHEMA_VERSION, CompetitionRow, utcnow
from leaderboard.views import CompetitionConfig


def breaks_the_line(ch: str) -> bool:
    """Control and format characters and the Unicode line and paragraph separators (U+2028, U+2029):
    what must never reach a stored name, where it would break a line of a page, log or terminal."""
    category = unicodedata.category(ch)
    return category[0] == "C" or category in ("Zl", "Zp")


MAX_TITLE = 200
MAX_RULE = 1_000_000  # the largest daily limit or number of final selections a host can set


def check_title(title: str) -> str:
    """The competition's title, trimmed; ValueError for an empty, over-long or multi-line one."""
    if any(breaks_the_line(ch) for ch in title):
        raise ValueError("the title must be one line (no line breaks or control characters)")
    title = " ".join(title.split())
    if not title:
        raise ValueError("the title cannot be empty")
    if len(title) > MAX_TITLE:
        raise ValueError(f"the title has at most {MAX_TITLE} characters, got {len(title)}")
    return title


def check_rule(key: str, value: int) -> int:
    """A daily limit or number of final selections, from 1 to MAX_RULE; ValueError otherwise."""
    if not 1 <= value <= MAX_RULE:
        raise ValueError(f"{key.replace('_', ' ')} must be a whole number from 1 to {MAX_RULE:,}, "
                         f"got {value}")
    return value


class CompetitionStore:
    """One competition's database and its rules; the base of every part of the service."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @classmethod
    def open_existing(cls, url: str, lock_timeout_s: float = LOCK_TIMEOUT_S) -> Self:
        """The competition at ``url``; NotInitialised for an SQLite file that does not exist
        (never creates it)."""
        path = sqlite_file(url)
        if path is not None and not path.is_file():
            raise NotInitialised(f"{url}: no such database file ({path}); run 'tpugraphs leaderboard init' "
                                 "first, or check --db")
        return cls(Database(url, lock_timeout_s))

    # -- setup ---------------------------------------------------------------------------------

    @classmethod
    def initialise(
        cls,
        db: Database,
        *,
        name: str,
        solution_csv: bytes,
        daily_limit: int = 5,
        max_selected: int = 2,
        deadline: datetime | None = None,
        private_intervals: bool = False,
    ) -> Self:
        """Create the tables and the competition row; refuses a database that already has one.

        The solution is parsed first (SolutionFormatError if unusable) and stored byte for byte.
        """
        name = check_title(name)
        check_rule("daily_limit", daily_limit)
        check_rule("max_selected", max_selected)
        solution = parse_solution(solution_csv)
        db.create_schema()
        with db.writer() as session:
            if session.get(CompetitionRow, 1) is not None:
                raise Conflict(f"{db.url}: this database already holds a competition")
            session.add(CompetitionRow(
                id=1, name=name, daily_limit=daily_limit, max_selected=max_selected, deadline=deadline,
                revealed_at=None, created_at=utcnow(), schema_version=SCHEMA_VERSION,
                solution_csv=solution_csv, solution_sha256=hashlib.sha256(solution_csv).hexdigest(),
                solution_rows=solution.num_rows, private_intervals=private_intervals,
            ))
        return cls(db)

    def config(self) -> CompetitionConfig:
        """The competition's current rules (read fresh from the database)."""
        missing = NotInitialised(f"{self.db.url}: no competition here; "
                                 "run 'tpugraphs leaderboard init' first")
        try:
            with self.db.reader() as session:
                # The version alone first: a database of another version may lack columns the row names.
                version = session.scalar(select(CompetitionRow.schema_version).where(CompetitionRow.id == 1))
        except DatabaseError:
            if not self.db.has_schema():  # no tables yet; anything else (server down...) is raised as is
                raise missing from None
            raise
        if version is None:
            raise missing
        if version != SCHEMA_VERSION:
            raise NotInitialised(f"{self.db.url}: made by schema version {version}, this kit reads "
                                 f"{SCHEMA_VERSION}; serve it with the kit that made it")
        with self.db.reader() as session:
            row = session.get(CompetitionRow, 1)
        if row is None:
            raise missing
        return CompetitionConfig(
            name=row.name, daily_limit=row.daily_limit, max_selected=row.max_selected,
            deadline=row.deadline, revealed_at=row.revealed_at, created_at=row.created_at,
            solution_sha256=row.solution_sha256, solution_rows=row.solution_rows,
            private_intervals=bool(row.private_intervals),
        )

    def configure(self, **changes: object) -> CompetitionConfig:
        """Change ``name``, ``daily_limit``, ``max_selected``, ``deadline`` (None clears it) or
        ``private_intervals``."""
        allowed = {"name", "daily_limit", "max_selected", "deadline", "private_intervals"}
        unknown = set(changes) - allowed
        if unknown:
            raise ValueError(f"cannot configure {', '.join(sorted(unknown))}")
        for key in ("daily_limit", "max_selected"):
            if key in changes:
                check_rule(key, int(changes[key]))  # type: ignore[call-overload]
        if "name" in changes:
            changes["name"] = check_title(str(changes["name"]))
        self.config()
        with self.db.writer() as session:
            row = session.get(CompetitionRow, 1)
            for key, value in changes.items():
                setattr(row, key, value)
        return self.config()

    def solution_csv(self) -> bytes:
        with self.db.reader() as session:
            return session.scalar(select(CompetitionRow.solution_csv).where(CompetitionRow.id == 1))

    def verified_solution_csv(self) -> bytes:
        """The stored solution, checked against the SHA-256 recorded by ``init``; SolutionTampered if it
        differs."""
        expected = self.config().solution_sha256
        content = self.solution_csv() or b""
        actual = hashlib.sha256(content).hexdigest()
        if actual != expected:
            raise SolutionTampered(
                f"{self.db.url}: the stored solution ({len(content)} bytes, SHA-256 "
                f"{actual[:12]}...) is not the one recorded at init (SHA-256 {expected[:12]}...); it was "
                "changed or truncated. Restore the "
                "database from a backup; no submission is scored against it."
            )
        return content

    def load_solution(self) -> Solution:
        """The stored solution, verified (SolutionTampered) and parsed (SolutionFormatError)."""
        return parse_solution(self.verified_solution_csv())


def parse_solution(solution_csv: bytes) -> Solution:
    """``load_solution``, with a file that is not UTF-8 refused as a SolutionFormatError (not a traceback)."""
    try:
        solution_csv.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SolutionFormatError(
            f"the solution is not UTF-8 text (byte {exc.start} is 0x{solution_csv[exc.start]:02x}); "
            "save it as UTF-8 CSV"
        ) from None
    return load_solution(solution_csv)


def solution_mismatches(solution_configs: dict[str, int], data_configs: dict[str, int], *,
                        limit: int = 10) -> list[str]:
    """Where a solution disagrees with the public test files (IDs and config counts); [] if nowhere."""
    problems = [f"test graph {row_id} has no row in the solution"
                for row_id in sorted(data_configs.keys() - solution_configs.keys())]
    problems += [f"solution row {row_id} names no test graph of the public data"
                 for row_id in sorted(solution_configs.keys() - data_configs.keys())]
    problems += [
        f"{row_id}: the solution has {solution_configs[row_id]} runtimes, the test file "
        f"{data_configs[row_id]} configs"
        for row_id in sorted(solution_configs.keys() & data_configs.keys())
        if solution_configs[row_id] != data_configs[row_id]
    ]
    if len(problems) > limit:
        problems = problems[:limit] + [f"... and {len(problems) - limit} more"]
    return problems
