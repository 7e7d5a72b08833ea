"""Token checks throttled per client, so a team token cannot be guessed at speed.

Each client (its IP address as the server sees it; behind a proxy, the forwarded one uvicorn
trusts) has a budget of ``FAILURES_ALLOWED`` wrong tokens, refilled at ``FAILURES_ALLOWED`` per
``WINDOW_S``. While it is spent, every token check from that client (the login form, a token typed
on the upload form, the API's ``Authorization`` header) is answered 429 with ``Retry-After`` before
any token is looked at, right ones included, so guessing learns nothing. The first refusal of a burst
is logged, not every one. Per server process: ``--workers N`` allows N times the rate.
"""

from __future__ import annotations

import logging
import threading
import time

from leaderboard.errors import LimitReached

log = logging.getLogger("leaderboard")

FAILURES_ALLOWED = 10
WINDOW_S = 60.0
MAX_CLIENTS = 10_000  # the table is cleared past this, so spoofed addresses cannot fill memory


class TokenThrottle:
    """Per-client budgets of failed token checks (a token bucket each; thread-safe)."""

    def __init__(self, failures_allowed: int = FAILURES_ALLOWED, window_s: float = WINDOW_S,
                 clock=time.monotonic) -> None:
        self.capacity = float(failures_allowed)
        self.rate = failures_allowed / window_s
        self.clock = clock
        self._buckets: dict[str, tuple[float, float, bool]] = {}  # client -> (tokens, at, refusal logged)
        self._lock = threading.Lock()

    def _level(self, client: str, now: float) -> tuple[float, bool]:
        tokens, at, logged = self._buckets.get(client, (self.capacity, now, False))
        return min(self.capacity, tokens + (now - at) * self.rate), logged

    def check(self, client: str) -> None:
        """LimitReached (429, Retry-After) while ``client`` has no failures left."""
        now = self.clock()
        with self._lock:
            tokens, logged = self._level(client, now)
            if tokens >= 1:
                if logged:  # a new burst may be logged again
                    self._buckets[client] = (tokens, now, False)
                return
            wait = max(1, int((1 - tokens) / self.rate) + 1)
            if not logged:
                log.warning("throttling token checks from %s: %d wrong tokens within %.0f s", client,
                            int(self.capacity), self.capacity / self.rate)
            self._buckets[client] = (tokens, now, True)
        raise LimitReached(
            f"Too many wrong team tokens from your address; try again in {wait} s. A token is "
            "'<team id>.<secret>', as your host gave it.", headers={"Retry-After": str(wait)},
        )

    def failed(self, client: str) -> None:
        """Spend one unit of ``client``'s budget (a wrong token)."""
        now = self.clock()
        with self._lock:
            if len(self._buckets) >= MAX_CLIENTS:
                self._buckets.clear()
            tokens, logged = self._level(client, now)
            self._buckets[client] = (tokens - 1, now, logged)
