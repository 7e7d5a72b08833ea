"""The competition's rules, applied to the database: one facade over a module per job.

- ``competition``: the competition row (init, rules, the stored solution);
- ``teams``: teams, their tokens and their browsers' sessions;
- ``submissions``: an upload recorded, scored and counted under the daily limit and the caps;
- ``history``: what a team's pages show (its submissions, files, final selection) and what others see;
- ``admin``: the host's operations on the whole competition (reveal, rescore).

The routers, commands and board cache use the one ``Leaderboard`` that combines them.
"""

from __future__ import annotations

from leaderboard.service.admin import Admin, RescoreSummary
from leaderboard.service.competition import CompetitionStore, parse_solution, solution_mismatches
from leaderboard.service.history import History
from leaderboard.service.submissions import (
    FAILED_MESSAGE,
    KEPT_PREFIX_BYTES,
    MAX_DESCRIPTION,
    STUCK_MESSAGE,
    TIMEOUT_MESSAGE,
    Submissions,
    clean_description,
    clean_file_name,
)
from leaderboard.service.teams import Teams


class Leaderboard(Submissions, Teams, History, Admin, CompetitionStore):
    """The competition stored in one database: setup, teams, submissions, rescoring, reveal."""


__all__ = [
    "FAILED_MESSAGE", "KEPT_PREFIX_BYTES", "MAX_DESCRIPTION", "STUCK_MESSAGE", "TIMEOUT_MESSAGE",
    "Leaderboard", "RescoreSummary", "clean_description", "clean_file_name", "parse_solution",
    "solution_mismatches",
]
