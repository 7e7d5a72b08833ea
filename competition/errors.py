"""Exception types shared by the kit.

``ParticipantVisibleError`` is the one Kaggle's metric contract defines: only its message may reach
a participant. Everything else is a host-side fault and is never shown to participants.
"""

from __future__ import annotations

from pathlib import Path


class ParticipantVisibleError(Exception):
    """A problem with a submission, worded for the participant who made it."""


class DataFormatError(ValueError):
    """A data file that does not follow the released format; the message names file and problem."""

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")

    def __reduce__(self) -> tuple:  # pickled whole: a worker process hands it back to its parent
        return type(self), (self.path, self.problem)


class RowError(ValueError):
    """A TopConfigs cell that breaks the per-row rule; ``rule`` is its code in
    ``competition.submission.RULES``."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule

    def __reduce__(self) -> tuple:
        return type(self), (self.rule, str(self))


class SolutionFormatError(ValueError):
    """A host's solution file that cannot be used for scoring (a host-side fault)."""


class UsageError(Exception):
    """A problem with how a command was called; ``tpugraphs`` prints it without traceback, exit code 2."""


# Exit codes of every ``tpugraphs`` command: 0 success, 1 the input was checked and found wrong (an
# invalid submission, unreadable data), 2 a usage error (bad arguments, missing files).
EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2
