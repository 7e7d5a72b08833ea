"""Scoring a submission against the hidden labels: the one scorer behind every score in the kit.

``tpugraphs score``, the Kaggle-contract ``competition.score``, the leaderboard server and the
reference solutions' test-set figures all come through :func:`score_rows`, so a number printed
anywhere in the kit is the same number.

The solution file (``private/solution.csv``) has the columns ``ID,Runtimes,Normalizers,Usage``:
``Runtimes`` the ``;``-joined int64 runtimes in config order, ``Normalizers`` the same for tile rows
and empty for layout rows, ``Usage`` one of ``Public``, ``Private`` or ``Ignored``.

Aggregation (docs/competition.md, The metric): a collection's score is the mean of its graphs' scores; a final
score is the unweighted mean of the collection scores. ``public`` and ``private`` use only the rows of that
usage; ``score`` uses Public and Private rows; Ignored rows are validated but never scored. A collection
with no rows of a usage is left out of that usage's mean (it cannot pull the mean toward any
value); when no collection has rows the score is 0.0, so a leaderboard never sees NaN.
"""

from __future__ import annotations

import csv
import io
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np

from competition.collections import (
    COLLECTION_BY_NAME,
    COLLECTIONS,
    SOLUTION_COLUMNS,
    Collection,
    parse_row_id,
)
from competition.errors import ParticipantVisibleError, SolutionFormatError
from competition.submission import ValidationResult, format_problems, validate_submission

USAGE_CODES = {"Public": 0, "Private": 1, "Ignored": 2}
PUBLIC, PRIVATE, IGNORED = 0, 1, 2


@dataclass
class CollectionLabels:
    """Hidden labels of one collection, packed for vectorised scoring.

    Shapes: G graphs, C configs over all graphs.
    """

    collection: Collection
    ids: list[str]  # (G,) row IDs in solution order
    offsets: np.ndarray  # (G+1,) int64: graph g owns configs offsets[g]:offsets[g+1]
    runtimes: np.ndarray  # (C,) int64 nanoseconds
    normalizers: np.ndarray | None  # (C,) int64 for tile, None for layout
    usage: np.ndarray  # (G,) int8: 0 Public, 1 Private, 2 Ignored

    def __post_init__(self) -> None:
        # Solution-only parts of the metric, computed once: scoring a submission then costs only
        # what depends on the submission (a leaderboard scores many against one solution).
        self.prepared = self.collection.task.prepare_labels(self.runtimes, self.normalizers, self.offsets)

    @property
    def config_counts(self) -> np.ndarray:
        return np.diff(self.offsets)


@dataclass
class Solution:
    """A parsed solution file: the labels of every test graph, by collection."""

    labels: dict[str, CollectionLabels]  # collection name -> labels, only collections present
    source: str = "<solution>"

    def expected_configs(self) -> dict[str, int]:
        """Every ID a submission must contain, with its number of configs (the validator's input)."""
        return {
            row_id: int(n)
            for lab in self.labels.values()
            for row_id, n in zip(lab.ids, lab.config_counts, strict=True)
        }

    @property
    def num_rows(self) -> int:
        return sum(len(lab.ids) for lab in self.labels.values())


@dataclass
class ScoreReport:
    """Scores of one submission. ``score`` is over Public + Private rows."""

    score: float
    public: float
    private: float
    collections: dict[str, float]  # per collection, Public + Private rows
    public_collections: dict[str, float] = field(default_factory=dict)
    private_collections: dict[str, float] = field(default_factory=dict)
    graph_counts: dict[str, dict[str, int]] = field(default_factory=dict)  # collection -> usage -> G

    def to_json_dict(self) -> dict:
        """The ``tpugraphs score --json`` object: the figures of ``format_report``'s table (per collection
        its metric, graphs and public / private / all scores); a split without rows is ``None`` (null),
        never 0.0."""
        return {
            "score": self.score if self.collections else None,
            "public": self.public if self.public_collections else None,
            "private": self.private if self.private_collections else None,
            "collections": dict(self.collections),
            "public_collections": {name: self.public_collections.get(name) for name in self.collections},
            "private_collections": {name: self.private_collections.get(name) for name in self.collections},
            "graphs": {name: {"public": self.graph_counts.get(name, {}).get("Public", 0),
                              "private": self.graph_counts.get(name, {}).get("Private", 0)}
                       for name in self.collections},
            "metrics": {name: COLLECTION_BY_NAME[name].metric for name in self.collections},
        }

    def public_view(self) -> dict:
        """What a participant may see before the private board is revealed: no private figure."""
        return {"public": self.public, "collections": dict(self.public_collections)}


class SubmissionInvalid(ParticipantVisibleError):
    """A submission that broke the rules; ``.result`` holds every problem found (capped)."""

    def __init__(self, result: ValidationResult, source_name: str = "submission") -> None:
        self.result = result
        super().__init__(format_problems(result, source_name=source_name))


# ---------------------------------------------------------------------------------------------
# Reading the solution file


def _parse_int_list(text: str, *, where: str, what: str) -> np.ndarray:
    """Parse ``'1;2;3'`` into int64 quickly (the solution holds ~2M numbers), strictly."""
    text = text.strip()
    if not text:
        return np.zeros(0, dtype=np.int64)
    with warnings.catch_warnings():
        # numpy warns (instead of failing) when the text does not parse to its end; make it fail.
        warnings.simplefilter("error", DeprecationWarning)
        try:
            values = np.fromstring(text, dtype=np.int64, sep=";")
        except (ValueError, DeprecationWarning):
            values = None
    if values is None or values.size != text.count(";") + 1:
        raise SolutionFormatError(f"{where}: {what} is not a ';'-separated list of integers")
    return values


def load_solution(source: str | Path | BinaryIO | bytes) -> Solution:
    """Read and check a solution file (a host-side file: problems raise SolutionFormatError).

    Checks the header, that every ID is ``<collection>:<stem>`` and unique, that runtimes are
    positive (test runtimes of the download are zeros; a solution made from them is refused), that
    tile rows carry one positive normalizer per runtime and layout rows none, and the Usage values.
    """
    name = str(source) if isinstance(source, str | Path) else "<solution>"
    if isinstance(source, bytes):
        handle: io.TextIOBase = io.StringIO(source.decode("utf-8-sig"))
    elif isinstance(source, str | Path):
        try:
            handle = open(source, encoding="utf-8-sig", newline="")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise SolutionFormatError(f"{name}: cannot read the solution file: {exc.strerror}") from None
    else:
        handle = io.TextIOWrapper(source, encoding="utf-8-sig", newline="")
    with handle:
        try:
            return _read_solution(csv.reader(handle), name)
        except UnicodeDecodeError as exc:
            raise SolutionFormatError(f"{name}: not UTF-8 text ({exc.reason})") from None
        except csv.Error as exc:
            raise SolutionFormatError(f"{name}: malformed CSV: {exc}") from None


def _read_solution(reader: Iterable[list[str]], name: str) -> Solution:
    rows = iter(reader)
    header = next(rows, None)
    if header is None or tuple(h.strip() for h in header) != SOLUTION_COLUMNS:
        raise SolutionFormatError(
            f"{name}: line 1: header must be {','.join(SOLUTION_COLUMNS)}, got {','.join(header or [])!r}"
        )
    parts: dict[str, dict[str, list]] = {}
    seen: dict[str, int] = {}
    for line_no, row in enumerate(rows, start=2):
        if not row:
            continue
        where = f"{name}: line {line_no}"
        if len(row) != len(SOLUTION_COLUMNS):
            raise SolutionFormatError(f"{where}: expected {len(SOLUTION_COLUMNS)} columns, got {len(row)}")
        row_id, runtimes_text, normalizers_text, usage = (cell.strip() for cell in row)
        try:
            collection, _ = parse_row_id(row_id)
        except ValueError as exc:
            raise SolutionFormatError(f"{where}: {exc}") from None
        if row_id in seen:
            raise SolutionFormatError(f"{where}: ID {row_id} already on line {seen[row_id]}")
        seen[row_id] = line_no
        if usage not in USAGE_CODES:
            raise SolutionFormatError(f"{where}: Usage {usage!r} is not one of {', '.join(USAGE_CODES)}")
        runtimes = _parse_int_list(runtimes_text, where=where, what="Runtimes")
        if runtimes.size == 0 or runtimes.min() <= 0:
            raise SolutionFormatError(
                f"{where}: Runtimes of {row_id} must be positive integers, one per config "
                "(test files of the download carry zeros: they are not labels)"
            )
        normalizers = _parse_int_list(normalizers_text, where=where, what="Normalizers")
        unfit = collection.task.check_normalizers(runtimes, normalizers, where, row_id)
        if unfit:
            raise SolutionFormatError(unfit)
        bucket = parts.setdefault(collection.name,
                                  {"ids": [], "runtimes": [], "normalizers": [], "usage": []})
        bucket["ids"].append(row_id)
        bucket["runtimes"].append(runtimes)
        bucket["normalizers"].append(normalizers)
        bucket["usage"].append(USAGE_CODES[usage])
    if not parts:
        raise SolutionFormatError(f"{name}: the solution has no rows")
    labels = {}
    for collection in COLLECTIONS:  # fixed order, whatever the file's order
        if collection.name not in parts:
            continue
        bucket = parts[collection.name]
        counts = np.array([r.size for r in bucket["runtimes"]], dtype=np.int64)
        labels[collection.name] = CollectionLabels(
            collection=collection,
            ids=bucket["ids"],
            offsets=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
            runtimes=np.concatenate(bucket["runtimes"]),
            normalizers=np.concatenate(bucket["normalizers"]) if collection.task.has_normalizers else None,
            usage=np.array(bucket["usage"], dtype=np.int8),
        )
    return Solution(labels=labels, source=name)


# ---------------------------------------------------------------------------------------------
# Scoring


def graph_scores(labels: CollectionLabels, rows: Mapping[str, np.ndarray]) -> np.ndarray:
    """Per-graph metric values of one collection, in solution order. ``rows`` must hold every ID."""
    return labels.collection.task.score_graphs([rows[row_id] for row_id in labels.ids], labels.prepared)


def _mean_of_means(per_collection: dict[str, float]) -> float:
    return float(np.mean(list(per_collection.values()))) if per_collection else 0.0


def score_rows(rows: Mapping[str, np.ndarray], solution: Solution) -> ScoreReport:
    """Score validated rows (ID -> config indices, as ``ValidationResult.rows``) against a solution."""
    everything: dict[str, float] = {}
    public: dict[str, float] = {}
    private: dict[str, float] = {}
    counts: dict[str, dict[str, int]] = {}
    for name, labels in solution.labels.items():
        scores = graph_scores(labels, rows)
        is_public = labels.usage == PUBLIC
        is_private = labels.usage == PRIVATE
        counts[name] = {"Public": int(is_public.sum()), "Private": int(is_private.sum()),
                        "Ignored": int((labels.usage == IGNORED).sum())}
        for target, mask in ((everything, is_public | is_private), (public, is_public),
                             (private, is_private)):
            if mask.any():
                target[name] = float(scores[mask].mean())
    return ScoreReport(
        score=_mean_of_means(everything),
        public=_mean_of_means(public),
        private=_mean_of_means(private),
        collections=everything,
        public_collections=public,
        private_collections=private,
        graph_counts=counts,
    )


def score_submission(
    source: str | Path | BinaryIO | bytes,
    solution: Solution,
    *,
    max_problems: int = 50,
    source_name: str | None = None,
) -> ScoreReport:
    """Validate a submission file against the solution's IDs and config counts, then score it.

    Raises SubmissionInvalid (a ParticipantVisibleError) listing the problems when it is invalid.
    """
    result = validate_submission(source, solution.expected_configs(), max_problems=max_problems)
    if not result.ok:
        name = source_name or (str(source) if isinstance(source, str | Path) else "submission")
        raise SubmissionInvalid(result, source_name=name)
    return score_rows(result.rows, solution)


def format_report(report: ScoreReport) -> str:
    """A readable per-collection table, as ``tpugraphs score`` prints it."""
    lines = [f"{'collection':<20} {'metric':<14} {'graphs':>6} {'public':>8} {'private':>8} {'all':>8}"]
    for name in report.collections:
        collection = COLLECTION_BY_NAME[name]
        count = report.graph_counts.get(name, {})
        graphs = count.get("Public", 0) + count.get("Private", 0)
        lines.append(
            f"{name:<20} {collection.metric:<14} {graphs:>6} "
            f"{_fmt(report.public_collections.get(name))} {_fmt(report.private_collections.get(name))} "
            f"{_fmt(report.collections.get(name))}"
        )
    final = report.to_json_dict()  # "-" for a split without rows, as in the collection lines
    lines.append(f"{'final (mean of collections)':<42} {_fmt(final['public'])} {_fmt(final['private'])} "
                 f"{_fmt(final['score'])}")
    return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return f"{value:>8.4f}" if value is not None else f"{'-':>8}"
