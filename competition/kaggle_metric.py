"""Kaggle's hosted-metric contract: ``score(solution, submission, row_id_column_name) -> float``.

Kaggle calls this with the solution rows of one leaderboard (Public or Private; the host has already
used and stripped the ``Usage`` column) and the participant's submission rows. Only
``ParticipantVisibleError`` messages reach the participant; a problem with the solution is the
host's and raises ``SolutionFormatError``.

Both frames go through the same reader and validator as the files (``competition.scoring`` and
``competition.submission``), so the rules cannot drift apart: the solution frame is written back to
CSV in memory and read as a file; the submission's cells go through the validator's row rules
(``validate_rows``) as values, so indices that pandas parsed as ints or floats are judged as numbers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from competition.collections import SOLUTION_COLUMNS, SUBMISSION_HEADER
from competition.errors import ParticipantVisibleError, SolutionFormatError
from competition.scoring import load_solution, score_rows
from competition.submission import format_problems, validate_rows

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


def _submission_pairs(submission: pd.DataFrame, row_id_column_name: str) -> zip:
    """``(ID, TopConfigs)`` pairs of the frame; its columns must be exactly the two the format names."""
    columns = [str(c) for c in submission.columns]
    expected = [row_id_column_name, SUBMISSION_HEADER[1]]
    if sorted(columns) != sorted(expected):
        raise ParticipantVisibleError(
            f"the submission must have exactly the columns {','.join(expected)} "
            f"(in either order); it has {','.join(columns) or 'none'}"
        )
    return zip(submission[row_id_column_name], submission[SUBMISSION_HEADER[1]], strict=True)


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
    # Cells are checked as values (not re-written as CSV): pandas may hold indices as ints or floats.
    result = validate_rows(_submission_pairs(submission, row_id_column_name), labels.expected_configs())
    if not result.ok:
        # Exactly Kaggle's exception type (not a subclass): hosts may match it by name.
        raise ParticipantVisibleError(format_problems(result, source_name="submission"))
    return score_rows(result.rows, labels).score
