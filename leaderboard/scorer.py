"""The kit's scorer with the solution parsed once, and a time limit on every call.

Scoring runs on a small thread pool (``slots`` threads): a call waits at most ``timeout_s`` for
its result, queueing included, and raises ``ScoringTimeout`` past it. A thread cannot be killed, so
a scoring that overruns finishes in the background and its result is dropped; the work is bounded
anyway because uploads are capped in size and the validator is linear in the file's length.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import BinaryIO

from competition.scoring import ScoreReport, Solution, score_submission
from leaderboard.uploads import ReceivedFile
from leaderboard.version import SCORER_VERSION

MAX_PROBLEMS = 20  # problems listed back to a participant for an invalid file


class ScoringTimeout(Exception):
    """Scoring did not finish within the time limit."""


class Scorer:
    """Scores uploads against one parsed solution.

    Args:
        solution: the parsed solution (``competition.scoring.load_solution``).
        timeout_s: time limit of one call, waiting for a free slot included.
        slots: scorings run at once.
    """

    def __init__(self, solution: Solution, *, timeout_s: float = 60.0, slots: int = 2) -> None:
        self.solution = solution
        self.timeout_s = timeout_s
        self.version = SCORER_VERSION
        self._pool = ThreadPoolExecutor(max_workers=max(1, slots), thread_name_prefix="scorer")

    def score(self, content: bytes | ReceivedFile, source_name: str) -> ScoreReport:
        """Validate and score one file; raises SubmissionInvalid, ScoringTimeout or a host-side error.

        A ``ReceivedFile`` is validated as it is read from disk, 64 KiB at a time, inside the slot: no
        upload, waiting or being scored, holds a copy of its file in memory.
        """
        def run() -> ScoreReport:
            source = content if isinstance(content, bytes) else content.stream()
            return score_now(source, self.solution, source_name)

        future = self._pool.submit(run)
        try:
            return future.result(timeout=self.timeout_s)
        except FutureTimeout:
            future.cancel()  # still queued: never starts; running: finishes unseen
            raise ScoringTimeout(f"scoring took longer than {self.timeout_s:g} s") from None

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def score_now(content: bytes | BinaryIO, solution: Solution, source_name: str) -> ScoreReport:
    """``score_submission`` plus a guard: a non-finite score is a host-side fault, never stored."""
    report = score_submission(content, solution, max_problems=MAX_PROBLEMS, source_name=source_name)
    for value in (report.score, report.public, report.private):
        if not math.isfinite(value):
            raise ArithmeticError(f"the scorer returned a non-finite score ({value!r})")
    return report
