"""Throttling token checks and sign-ins, per client address and per (address, claimed team).

Every token is ``<team id>.<secret>``, so every check claims a team. Wrong tokens spend two budgets,
token buckets refilled continuously over ``WINDOW_S``:

- **per (address, claimed team)** (``TEAM_FAILURES``): once an address has sent that many wrong tokens
  for one team, its checks for that team are answered 429 with ``Retry-After``, the right token
  included (guessing that secret from there learns nothing). Other addresses are not affected: a
  rival's wrong guesses can never make a team's right token fail from the team's own address.
- **per address** (``ADDRESS_FAILURES``): once an address has spent it, a check from it still runs
  for a team that exists and got no wrong token from that address within the window (so a class
  behind one NAT keeps signing in after one person's typos or pranks), and such a check that turns
  out wrong marks that team as guessed at from there. A token without a team id, or one claiming a
  team that does not exist, is answered 429.

So a right token from an address that sent no wrong token for its team within the window is never
refused, whatever else that address or any other sent; one member's pranks behind a shared address
cost only that address's checks of the teams they claimed. From a spent address at most one wrong
token per existing team per window is still checked, which with 256-bit secrets buys nothing.

A check reserves its units before the token is looked at, under a lock, and a right token gives them
back: concurrent wrong tokens cannot pass a budget together. A check that finds a budget spent only
by checks still running waits for them (they may give their units back) instead of being refused, so
a burst of right tokens is never refused for being concurrent. The first refusal of a burst is
logged, not every one.

**Sign-ins** (a right token typed into a form makes a server-side session: a database write) have
budgets of their own: ``SIGN_INS_PER_TEAM`` per (address, team) and ``SIGN_INS_PER_ADDRESS`` per
address per window (a class of 200 behind one NAT signing in within the same minute fits).

**Memory.** An entry exists only while it holds something (units spent within the window, a check in
flight): a right token's entry is dropped when its check ends, and entries are forgotten once their
window has passed, oldest first. A token for a team that does not exist never makes a per-team
entry, so an address holds at most one entry per existing team. Each table also has a hard size
(``MAX_ENTRIES``): past it the least recently active entry is forgotten, one at a time. Nothing an
attacker sends clears the tables or gives any other address a fresh budget. The budgets are per
server process (``--workers N`` allows N times the rate).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass

from leaderboard.errors import LimitReached

log = logging.getLogger("leaderboard")

TEAM_FAILURES = 10  # wrong tokens per (address, claimed team) per window
ADDRESS_FAILURES = 30  # wrong tokens per address per window
SIGN_INS_PER_TEAM = 10  # sign-ins per (address, team) per window
SIGN_INS_PER_ADDRESS = 300  # sign-ins per address per window
WINDOW_S = 60.0
MAX_ENTRIES = 50_000  # per table; past it the least recently active entry is forgotten


@dataclass(slots=True)
class _Budget:
    units: float
    at: float
    pending: int = 0  # checks holding a reservation now
    last_spent: float | None = None  # when a unit was last kept (a wrong token, a sign-in)
    logged: bool = False  # the refusal of the current burst was logged


class _Table:
    """Token buckets of ``capacity`` units refilled at ``capacity / window_s`` per second, by key, bounded
    (see the module's docstring)."""

    def __init__(self, capacity: int, window_s: float, max_entries: int = MAX_ENTRIES) -> None:
        self.capacity = float(capacity)
        self.window_s = window_s
        self.rate = capacity / window_s
        self.max_entries = max_entries
        self.entries: OrderedDict[Hashable, _Budget] = OrderedDict()

    def __len__(self) -> int:
        return len(self.entries)

    def peek(self, key: Hashable) -> _Budget | None:
        return self.entries.get(key)

    def get(self, key: Hashable, now: float) -> _Budget:
        """The key's budget (a full one if it had none), marked as the most recently active."""
        budget = self.entries.get(key)
        if budget is None:
            self._forget_old(now)
            budget = self.entries[key] = _Budget(self.capacity, now)
        else:
            self.entries.move_to_end(key)
        return budget

    def level(self, budget: _Budget | None, now: float) -> float:
        if budget is None:
            return self.capacity
        return min(self.capacity, budget.units + (now - budget.at) * self.rate)

    def spent_within_window(self, budget: _Budget | None, now: float) -> bool:
        last = budget.last_spent if budget is not None else None
        return last is not None and now - last < self.window_s

    def take(self, budget: _Budget, now: float) -> None:
        budget.units, budget.at = self.level(budget, now) - 1, now

    def give_back(self, budget: _Budget, now: float) -> None:
        budget.units, budget.at = min(self.capacity, self.level(budget, now) + 1), now

    def wait_s(self, budget: _Budget | None, now: float) -> int:
        return max(1, int((1 - self.level(budget, now)) / self.rate) + 1)

    def release(self, key: Hashable, now: float) -> None:
        """Drop the key's entry if it holds nothing any more."""
        budget = self.entries.get(key)
        if budget is not None and self._idle(budget, now):
            del self.entries[key]

    def _idle(self, budget: _Budget, now: float) -> bool:
        return (budget.pending == 0 and not self.spent_within_window(budget, now)
                and self.level(budget, now) >= self.capacity)

    def _forget_old(self, now: float) -> None:
        """Forget idle entries from the least recently active end, then, past the hard size, the least
        recently active one (never a clear of the table)."""
        while self.entries:
            key, budget = next(iter(self.entries.items()))
            if not self._idle(budget, now):
                break
            del self.entries[key]
        while len(self.entries) >= self.max_entries:
            self.entries.popitem(last=False)


@dataclass(frozen=True)
class Reservation:
    """One token check's units, taken by ``TokenThrottle.reserve``; ``settle`` ends the check."""

    address: str
    team_id: int | None
    took_address: bool  # False: a check of an untouched team from a spent address


class TokenThrottle:
    """Budgets of wrong tokens per (address, claimed team) and per address (thread-safe)."""

    def __init__(self, team_failures: int = TEAM_FAILURES, address_failures: int = ADDRESS_FAILURES,
                 window_s: float = WINDOW_S, clock=time.monotonic, max_entries: int = MAX_ENTRIES) -> None:
        self.pairs = _Table(team_failures, window_s, max_entries)  # (address, team id) -> budget
        self.addresses = _Table(address_failures, window_s, max_entries)
        self.clock = clock
        self._lock = threading.Lock()

    def reserve(self, address: str, team_id: int | None, *, team_exists: bool) -> Reservation | None:
        """Take the units of one check from ``address`` of a token claiming ``team_id`` (None: a token
        without a team id; ``team_exists``: whether that team is registered). LimitReached (429,
        Retry-After) when the check may not run; None when it must wait for checks still running (try
        again shortly)."""
        now = self.clock()
        pair_key = (address, team_id)
        with self._lock:
            tracked = team_id is not None and team_exists  # no per-team entry for a team that does not exist
            pair = self.pairs.peek(pair_key) if tracked else None
            if tracked and self.pairs.level(pair, now) < 1:
                if pair is not None and pair.pending:
                    return None
                raise self._refusal(self.pairs, pair_key, now, f"team {team_id} from address {address}",
                                    f"Too many wrong tokens for team {team_id} from your address")
            spot = self.addresses.peek(address)
            took_address = self.addresses.level(spot, now) >= 1
            if not took_address and not (tracked and not self.pairs.spent_within_window(pair, now)):
                if spot is not None and spot.pending:
                    return None
                raise self._refusal(self.addresses, address, now, f"address {address}",
                                    "Too many wrong team tokens from your address")
            if took_address:
                spot = self.addresses.get(address, now)
                self.addresses.take(spot, now)
                spot.pending += 1
                spot.logged = False
            if tracked:
                pair = self.pairs.get(pair_key, now)
                self.pairs.take(pair, now)
                pair.pending += 1
                pair.logged = False
        return Reservation(address, team_id if tracked else None, took_address)

    def settle(self, reservation: Reservation, *, right: bool) -> None:
        """The check is over: a right token's units go back, a wrong one's stay spent."""
        now = self.clock()
        with self._lock:
            for table, key, took in ((self.addresses, reservation.address, reservation.took_address),
                                     (self.pairs, (reservation.address, reservation.team_id),
                                      reservation.team_id is not None)):
                budget = table.peek(key) if took else None
                if budget is None:  # never taken, or forgotten past the hard size
                    continue
                budget.pending = max(0, budget.pending - 1)
                if right:
                    table.give_back(budget, now)
                else:
                    budget.last_spent = now
                table.release(key, now)

    @staticmethod
    def _refusal(table: _Table, key: Hashable, now: float, subject: str, what: str) -> LimitReached:
        budget = table.peek(key)
        wait = table.wait_s(budget, now)
        if budget is not None and not budget.logged:  # once per burst
            budget.logged = True
            log.warning("throttling token checks of %s: %d wrong tokens within %.0f s", subject,
                        int(table.capacity), table.window_s)
        return LimitReached(f"{what}; try again in {wait} s. A token is '<team id>.<secret>', as your host "
                            "gave it.", headers={"Retry-After": str(wait)})


class SignInLimit:
    """Sign-ins (new web sessions) per (address, team) and per address (thread-safe)."""

    def __init__(self, per_team: int = SIGN_INS_PER_TEAM, per_address: int = SIGN_INS_PER_ADDRESS,
                 window_s: float = WINDOW_S, clock=time.monotonic, max_entries: int = MAX_ENTRIES) -> None:
        self.pairs = _Table(per_team, window_s, max_entries)
        self.addresses = _Table(per_address, window_s, max_entries)
        self.clock = clock
        self._lock = threading.Lock()

    def take(self, address: str, team_id: int) -> None:
        """Spend one sign-in of ``address`` for ``team_id``; LimitReached (429, Retry-After) past either
        budget."""
        now = self.clock()
        with self._lock:
            for table, key, what in ((self.pairs, (address, team_id), "of this team from your address"),
                                     (self.addresses, address, "from your address")):
                budget = table.peek(key)
                if table.level(budget, now) < 1:
                    wait = table.wait_s(budget, now)
                    if budget is not None and not budget.logged:
                        budget.logged = True
                        log.warning("throttling sign-ins %s: %d within %.0f s", f"of team {team_id} from "
                                    f"{address}" if table is self.pairs else f"from {address}",
                                    int(table.capacity), table.window_s)
                    raise LimitReached(f"Too many sign-ins {what}; try again in {wait} s (a signed-in "
                                       "browser stays signed in: there is no need to sign in again).",
                                       headers={"Retry-After": str(wait)})
            for table, key in ((self.pairs, (address, team_id)), (self.addresses, address)):
                budget = table.get(key, now)
                table.take(budget, now)
                budget.last_spent, budget.logged = now, False
