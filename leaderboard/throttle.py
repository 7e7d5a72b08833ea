"""Token checks throttled per claimed team and per address, so that no team token can be guessed at
speed and a shared address cannot lock its own users out.

A token is ``<team id>.<secret>``: every check claims a team. Two budgets of wrong tokens, each a token
bucket refilled over ``WINDOW_S``:

- **per claimed team** (``TEAM_FAILURES``): once wrong tokens for a team have spent it, every check of
  that team is answered 429 with ``Retry-After``, from any address, the team's right token included
  (guessing learns nothing). This is what bounds guessing: at most ``TEAM_FAILURES`` guesses per team
  per window, however many addresses an attacker uses.
- **per address** (``ADDRESS_FAILURES``): once an address has spent it, checks from it go on only for
  teams with no recent wrong tokens (a full team budget); a check for a team that has recent wrong
  tokens, or a token without a team id, is answered 429. A class behind one NAT or proxy address thus
  keeps signing in after one person's typos or a prank: a right token from that address is refused
  only while its own team is being guessed at.

A check reserves one unit of both budgets before the token is looked at, under a lock, and a right
token gives them back: concurrent wrong tokens can never pass a budget together. A check that finds
a budget spent only by checks still running waits for them (they may give their units back) instead
of being refused, so a burst of right tokens is never refused for being concurrent. The first refusal of
a burst is logged, not every one. Per server process: ``--workers N`` allows N times the rate (the
budgets are in memory, not in the database).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from leaderboard.errors import LimitReached

log = logging.getLogger("leaderboard")

TEAM_FAILURES = 10
ADDRESS_FAILURES = 30
WINDOW_S = 60.0
MAX_KEYS = 10_000  # each table is cleared past this, so spoofed addresses or ids cannot fill memory


class _Buckets:
    """Token buckets of ``capacity`` units refilled at ``capacity / window_s`` per second, by key."""

    def __init__(self, capacity: int, window_s: float) -> None:
        self.capacity = float(capacity)
        self.rate = capacity / window_s
        self.levels: dict[object, tuple[float, float]] = {}  # key -> (units, at)
        self.pending: dict[object, int] = {}  # key -> checks that hold a reservation now
        self.logged: set[object] = set()

    def level(self, key: object, now: float) -> float:
        units, at = self.levels.get(key, (self.capacity, now))
        return min(self.capacity, units + (now - at) * self.rate)

    def add(self, key: object, units: float, now: float) -> None:
        if key not in self.levels and len(self.levels) >= MAX_KEYS:
            self.levels.clear()
            self.logged.clear()  # pending counts stay: their checks settle them
        self.levels[key] = (min(self.capacity, self.level(key, now) + units), now)

    def wait_s(self, key: object, now: float) -> int:
        return max(1, int((1 - self.level(key, now)) / self.rate) + 1)


@dataclass(frozen=True)
class Reservation:
    """One token check's units, taken by ``TokenThrottle.reserve``; ``right`` gives them back."""

    address: str
    team_id: int | None


class TokenThrottle:
    """Budgets of wrong tokens per claimed team and per address (thread-safe)."""

    def __init__(self, team_failures: int = TEAM_FAILURES, address_failures: int = ADDRESS_FAILURES,
                 window_s: float = WINDOW_S, clock=time.monotonic) -> None:
        self.teams = _Buckets(team_failures, window_s)
        self.addresses = _Buckets(address_failures, window_s)
        self.clock = clock
        self._lock = threading.Lock()

    def reserve(self, address: str, team_id: int | None) -> Reservation | None:
        """Take one unit of both budgets for a check of a token claiming ``team_id`` (None: a token
        without a team id). LimitReached (429, Retry-After) when the check may not run; None when it
        must wait for checks still running (try again shortly)."""
        now = self.clock()
        with self._lock:
            team_level = self.teams.level(team_id, now) if team_id is not None else 0.0
            team_pending = self.teams.pending.get(team_id, 0)
            address_pending = self.addresses.pending.get(address, 0)
            if team_id is not None and team_level < 1:
                if team_pending:
                    return None
                raise self._refusal(self.teams, team_id, now, f"team {team_id}",
                                    f"Too many wrong tokens for team {team_id}")
            if self.addresses.level(address, now) < 1 and team_level < self.teams.capacity:
                if address_pending or team_pending:
                    return None
                raise self._refusal(self.addresses, address, now, f"address {address}",
                                    "Too many wrong team tokens from your address")
            self.addresses.logged.discard(address)
            if team_id is not None:
                self.teams.logged.discard(team_id)
                self.teams.add(team_id, -1, now)
                self.teams.pending[team_id] = team_pending + 1
            self.addresses.add(address, -1, now)
            self.addresses.pending[address] = address_pending + 1
        return Reservation(address, team_id)

    def settle(self, reservation: Reservation, *, right: bool) -> None:
        """The check is over: a right token's units go back, a wrong one's stay spent."""
        now = self.clock()
        with self._lock:
            for buckets, key in ((self.addresses, reservation.address), (self.teams, reservation.team_id)):
                if key is None and buckets is self.teams:
                    continue
                left = buckets.pending.get(key, 1) - 1
                if left > 0:
                    buckets.pending[key] = left
                else:
                    buckets.pending.pop(key, None)
                if right:
                    buckets.add(key, 1, now)

    @staticmethod
    def _refusal(buckets: _Buckets, key: object, now: float, subject: str, what: str) -> LimitReached:
        wait = buckets.wait_s(key, now)
        if key not in buckets.logged:  # once per burst
            buckets.logged.add(key)
            log.warning("throttling token checks of %s: %d wrong tokens within %.0f s", subject,
                        int(buckets.capacity), buckets.capacity / buckets.rate)
        return LimitReached(f"{what}; try again in {wait} s. A token is '<team id>.<secret>', as your host "
                            "gave it.", headers={"Retry-After": str(wait)})
