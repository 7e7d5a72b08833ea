"""Refusals, each with the HTTP status and the participant-safe message the API answers with.

The service raises them; the app answers a ``LeaderboardError`` with ``status_code``, ``headers``
and :meth:`LeaderboardError.payload` (JSON for the API, an error page for the web pages), and the
host commands print ``message``.
"""

from __future__ import annotations


class LeaderboardError(Exception):
    """A refusal worded for the participant or host; ``status_code`` is its HTTP status."""

    status_code = 400

    def __init__(self, message: str, *, headers: dict[str, str] | None = None, **extra: object) -> None:
        super().__init__(message)
        self.message = message
        self.headers = headers or {}
        self.extra = extra

    def payload(self) -> dict:
        return {"detail": self.message, **self.extra}


class NotInitialised(LeaderboardError):
    status_code = 503


class Unauthorised(LeaderboardError):
    status_code = 401


class Forbidden(LeaderboardError):
    status_code = 403


class NotFound(LeaderboardError):
    status_code = 404


class Conflict(LeaderboardError):
    status_code = 409


class PayloadTooLarge(LeaderboardError):
    status_code = 413


class InvalidSubmission(LeaderboardError):
    status_code = 422


class DescriptionTooLong(LeaderboardError):
    status_code = 422


class LimitReached(LeaderboardError):
    status_code = 429


class ScoringFailed(LeaderboardError):
    status_code = 500


class ScoringTimedOut(LeaderboardError):
    status_code = 504


class SolutionTampered(LeaderboardError):
    """The stored solution is not the one ``init`` recorded (host-side; the server refuses to start)."""

    status_code = 503
