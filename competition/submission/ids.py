"""The ID rules: every test graph exactly once, no unknown IDs; with hints for the usual slips.

``RowChecker`` applies them (and the per-row rule) row by row for both entry points: the streaming
file validator (``reader.validate_submission``) and ``validate_rows`` for rows already parsed (the
Kaggle-contract ``score()`` receives a DataFrame).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from competition.collections import COLLECTION_NAMES, SUBMISSION_HEADER, Collection, is_row_id, parse_row_id
from competition.errors import RowError
from competition.submission.rules import (
    DEFAULT_MAX_PROBLEMS,
    ProblemList,
    Truncated,
    ValidationResult,
    cell_text,
    check_config_count,
    parse_top_configs,
)
from competition.text import show


class RowChecker:
    """Checks rows one by one against the expected IDs and remembers what it has seen."""

    def __init__(self, expected: Mapping[str, int], problems: ProblemList) -> None:
        self.graphs: dict[str, tuple[Collection, int]] = {}
        for row_id, n_configs in expected.items():
            try:
                collection, _ = parse_row_id(row_id)
            except ValueError as exc:
                raise ValueError(f"expected IDs: {exc}") from None
            self.graphs[row_id] = (collection, check_config_count(n_configs))
        self.problems = problems
        self.first_line: dict[str, int | None] = {}  # ID -> line of its first row (None: no lines)
        self.rows: dict[str, np.ndarray] = {}
        self._by_stem: dict[str, list[str]] | None = None
        self._by_folded: dict[str, str] | None = None
        # Unknown IDs seen before any known one are held back: when no ID of the file names a test
        # graph, one problem says so (other data, another seed?) instead of one line per row.
        self._held: list[tuple[int | None, str | None, str]] | None = []
        self._held_count = 0

    def check(self, line: int | None, row_id: str, cell: object) -> None:
        """Apply the ID rules and the per-row rule to one row."""
        if row_id == "" and cell_text(cell).strip(" ") == "":
            self.problems.add(line, None, "empty-row", "the row has neither an ID nor TopConfigs")
            return
        graph = self.graphs.get(row_id)
        if graph is None:
            received = row_id if len(row_id) <= 200 else row_id[:200] + "..."  # junk must not flood reports
            if self._held is not None:
                self._held_count += 1
                if len(self._held) < self.problems.max_problems:
                    self._held.append((line, received or None, row_id))
                return
            self.problems.add(line, received or None, "unknown-id", self._unknown_id_message(row_id))
            return
        self._release_held()
        if row_id in self.first_line:
            earlier = self.first_line[row_id]
            where = f"on line {earlier}" if earlier is not None else "earlier in the submission"
            self.problems.add(
                line, row_id, "duplicate-id",
                f"duplicate ID: this graph already has a row {where}; give each test graph exactly one row",
            )
            return
        self.first_line[row_id] = line
        try:
            self.rows[row_id] = parse_top_configs(cell, *graph)
        except RowError as exc:
            self.problems.add(line, row_id, exc.rule, str(exc))

    def note_seen(self, line: int | None, row_id: str | None) -> str | None:
        """A row whose line is broken still names its graph: do not also report that ID missing."""
        if row_id is not None and row_id in self.graphs:
            self._release_held()
            self.first_line.setdefault(row_id, line)
            return row_id
        return None

    def _release_held(self) -> None:
        """A known ID was found: the held unknown IDs are ordinary problems after all, in file order."""
        held, self._held = self._held, None
        if not held:
            return
        earlier = list(self.problems.items)
        self.problems.items.clear()
        # Both lists are in file order: merge them by line (None, a line-less problem, sorts first).
        events = [((problem.line or 0), 0, index) for index, problem in enumerate(earlier)]
        events += [((line or 0), 1, index) for index, (line, _, _) in enumerate(held)]
        for _, source, index in sorted(events):
            if source == 0:
                problem = earlier[index]
                self.problems.add(problem.line, problem.row_id, problem.rule, problem.message)
            else:
                line, received, row_id = held[index]
                self.problems.add(line, received, "unknown-id", self._unknown_id_message(row_id))

    def _report_unmatched(self) -> None:
        """At the end: no ID of the file names a test graph. One problem, or the single one as it is."""
        held, self._held = self._held, None
        if not held:
            return
        if self._held_count == 1:
            line, received, row_id = held[0]
            self.problems.add(line, received, "unknown-id", self._unknown_id_message(row_id))
            return
        line, received, row_id = held[0]
        if not any(is_row_id(h[2]) for h in held):
            message = (f"none of the {self._held_count} values in the ID column is an ID "
                       f"'<collection>:<file stem>' (the first is {show(row_id)}); are the columns swapped, "
                       "or shifted by an extra field?")
        else:
            example = next(iter(self.graphs), None)
            looks = f"; these test files' IDs look like {example}" if example is not None else ""
            message = (f"none of the {self._held_count} IDs in the file names a test graph of these "
                       f"test files (the first is {show(row_id)}){looks}. Is the submission for other data, "
                       f"or for another seed of the embedded competition?")
        self.problems.add(line, received, "unknown-id", message)

    def report_missing(self) -> None:
        self._report_unmatched()
        missing = [row_id for row_id in self.graphs if row_id not in self.first_line]
        if not missing:
            return
        total = len(self.graphs)
        per_collection = Counter(self.graphs[row_id][0].name for row_id in missing)
        breakdown = ", ".join(f"{per_collection[name]} {name}" for name in COLLECTION_NAMES
                              if per_collection[name])
        examples = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        have = "has" if len(missing) == 1 else "have"
        self.problems.add(
            None, None, "missing-id",
            f"{len(missing)} of the {total} test graphs {have} no row ({breakdown}): {examples}; "
            f"a submission has exactly one row per test graph",
        )

    def _unknown_id_message(self, row_id: str) -> str:
        if row_id == "":
            return "the ID is empty; expected '<collection>:<file stem>', e.g. tile:xla:<stem>"
        hint = self._id_hint(row_id)
        try:
            collection, _ = parse_row_id(row_id)
        except ValueError:
            return (
                f"ID {show(row_id)} is not '<collection>:<file stem>' with a collection among "
                f"{', '.join(COLLECTION_NAMES)}{hint}"
            )
        count = sum(1 for c, _ in self.graphs.values() if c is collection)
        return (
            f"no test graph has the ID {show(row_id)}; IDs name the test files ({collection.name} has "
            f"{count} test graphs, listed in sample_submission.csv){hint}"
        )

    def _id_hint(self, row_id: str) -> str:
        if self._by_stem is None:
            self._by_stem, self._by_folded = {}, {}
            for known in self.graphs:
                self._by_stem.setdefault(parse_row_id(known)[1], []).append(known)
                self._by_folded[known.casefold()] = known
        assert self._by_folded is not None
        if row_id in SUBMISSION_HEADER:
            return " (a second header line? files concatenated?)"
        stripped = row_id.strip()
        if stripped != row_id and stripped in self.graphs:
            return f" (remove the spaces around it: {stripped})"
        invisible = [ch for ch in row_id if not ch.isprintable()]
        if invisible:
            return f" (it contains the invisible character U+{ord(invisible[0]):04X})"
        if row_id.casefold() in self._by_folded:
            return f" (IDs are case-sensitive: did you mean {self._by_folded[row_id.casefold()]}?)"
        stem = row_id.rpartition(":")[2]
        if stem in self._by_stem:
            return f" (did you mean {' or '.join(self._by_stem[stem])}?)"
        return ""


def validate_rows(
    rows: Iterable[tuple[object, object]],
    expected: Mapping[str, int],
    *,
    max_problems: int = DEFAULT_MAX_PROBLEMS,
) -> ValidationResult:
    """Apply the ID rules and the per-row rule to ``(ID, TopConfigs)`` pairs, e.g. a DataFrame's.

    For the Kaggle-contract ``score()``, which receives the submission already parsed:
    ``validate_rows(zip(df[id_column], df["TopConfigs"]), expected)``. Problems carry no line
    numbers. ``expected`` maps every test ID to its number of configs.
    """
    problems = ProblemList(max_problems)
    checker = RowChecker(expected, problems)
    try:
        for row_id, cell in rows:
            checker.check(None, cell_text(row_id), cell)
        checker.report_missing()
    except Truncated:
        pass
    return ValidationResult(problems.items, checker.rows, problems.truncated)


def expected_from_own_rows(path: str | Path) -> dict[str, int]:
    """ID -> a config count implied by the row itself, so the row rules can run without the test files.

    For a format-only check (``tpugraphs submit --kaggle`` with no local data, ``tpugraphs ensemble``
    without ``--data``): each row is held to its own indices only (``Task.implied_config_count``).
    Unknown IDs, missing graphs and out-of-range indices cannot be caught this way. Read leniently,
    line by line (a 100k-config layout cell is longer than the csv module's field limit): a line that
    does not parse gives no expectation, and the validator then reports what is wrong with it.
    """
    expected: dict[str, int] = {}
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as fh:
            header = [cell.strip().strip('"') for cell in next(fh, "").strip().split(",")]
            if sorted(header) != sorted(SUBMISSION_HEADER):
                return expected
            id_first = header.index(SUBMISSION_HEADER[0]) == 0
            for line in fh:
                first, _, second = line.strip().replace('"', "").partition(",")
                row_id, cell = (first, second) if id_first else (second, first)
                row_id = row_id.strip()
                try:
                    collection, _ = parse_row_id(row_id)
                except ValueError:
                    continue
                items = [item.strip() for item in cell.split(";")]
                indices = [int(item) for item in items if item.isdigit() and len(item) < 18]
                expected[row_id] = collection.task.implied_config_count(len(items), indices)
    except OSError:
        return expected
    return expected
