"""Kaggle's hosted-metric contract: ``score(solution, submission, row_id_column_name) -> float``.

Kaggle calls this with the solution rows of one leaderboard (Public or Private; the host has already
used and stripped the ``Usage`` column) and the participant's submission rows. Only
``ParticipantVisibleError`` messages reach the participant; a problem with the solution is the
host's and raises ``SolutionFormatError``.

Both frames go through the same reader and validator as the files (``competition.scoring`` and
``competition.submission``), so the rules cannot drift apart: the frames are written back to CSV in
memory and read as files. Line numbers in messages count the header as line 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from competition.collections import SOLUTION_COLUMNS, SUBMISSION_HEADER
from competition.errors import ParticipantVisibleError, SolutionFormatError
from competition.scoring import load_solution, score_submission

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ParticipantVisibleError", "score"]


def _solution_csv(solution: pd.DataFrame, row_id_column_name: str) -> bytes:
    frame = solution.rename(columns={row_id_column_name: "ID"})
    if "Usage" not in frame.columns:
        frame = frame.assign(Usage="Public")  # the host strips it; every row given here is scored
    missing = [c for c in SOLUTION_COLUMNS if c not in frame.columns]
    if missing:
        raise SolutionFormatError(f"solution frame lacks column(s) {', '.join(missing)}")
    # Layout rows have no normalizers: pandas reads the empty cells as NaN; write them back empty.
    frame = frame[list(SOLUTION_COLUMNS)].fillna("")
    return frame.to_csv(index=False).encode("utf-8")


def _submission_csv(submission: pd.DataFrame, row_id_column_name: str) -> bytes:
    columns = [str(c) for c in submission.columns]
    if row_id_column_name not in columns:
        raise ParticipantVisibleError(
            f"the submission has no {row_id_column_name!r} column; expected columns "
            f"{','.join(SUBMISSION_HEADER)}, got {','.join(columns)}"
        )
    frame = submission.rename(columns={row_id_column_name: "ID"})
    # Keep the participant's columns as they are: the validator names any missing or extra one.
    return frame.to_csv(index=False).encode("utf-8")


def score(solution: pd.DataFrame, submission: pd.DataFrame, row_id_column_name: str) -> float:
    """The final score (unweighted mean of collection means) of ``submission`` on ``solution``'s rows.

    Raises ParticipantVisibleError for anything wrong in the submission: missing, duplicate or unknown
    IDs, malformed rows, wrong columns. Always returns a finite float otherwise.

    >>> import pandas as pd
    >>> solution = pd.DataFrame({"ID": ["layout:xla:random:a1"], "Runtimes": ["30;10;20"],
    ...                          "Normalizers": [""], "Usage": ["Public"]})
    >>> score(solution, pd.DataFrame({"ID": ["layout:xla:random:a1"], "TopConfigs": ["1;2;0"]}), "ID")
    1.0
    >>> score(solution, pd.DataFrame({"ID": ["layout:xla:random:a1"], "TopConfigs": ["1;2"]}), "ID")
    Traceback (most recent call last):
    ...
    competition.errors.ParticipantVisibleError: ...
    """
    labels = load_solution(_solution_csv(solution, row_id_column_name))
    report = score_submission(_submission_csv(submission, row_id_column_name), labels)
    return report.score
