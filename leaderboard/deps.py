"""FastAPI dependencies: settings, the competition's services, the caller's team, the upload, a board.

Everything is reached through ``request.app.state`` (filled at startup), so a test can build an
app with its own ``Settings`` or override any of these with ``app.dependency_overrides``.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

from fastapi import Depends, Header, Request, Response
from starlette.concurrency import run_in_threadpool

from leaderboard.auth import bearer_token, parse_token
from leaderboard.board_cache import BoardCache, BoardSnapshot
from leaderboard.errors import Forbidden, LimitReached, Unauthorised
from leaderboard.models import MAX_ID, utcnow
from leaderboard.scorer import Scorer
from leaderboard.service import Leaderboard
from leaderboard.settings import Settings
from leaderboard.throttle import SignInLimit, TokenThrottle
from leaderboard.uploads import BadForm, FormReader, ReceivedFile
from leaderboard.views import TeamInfo

T = TypeVar("T")
THROTTLE_WAIT_S = 0.005
THROTTLE_MAX_WAIT_S = 30.0


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_leaderboard(request: Request) -> Leaderboard:
    return request.app.state.leaderboard


def get_scorer(request: Request) -> Scorer:
    return request.app.state.scorer


def get_board_cache(request: Request) -> BoardCache:
    return request.app.state.board_cache


def client_address(request: Request) -> str:
    """The client's address as the server sees it: the connection's peer, or, from a trusted proxy
    (``serve --trusted-proxy``), the client ``X-Forwarded-For`` names (uvicorn's proxy headers)."""
    return request.client.host if request.client else "unknown"


class KnownTeams:
    """The ids of the registered teams, for the throttle (a token claiming a team that does not exist
    never gets a per-team budget). Read again, at most once per ``REFRESH_S``, when asked about an id it
    does not hold (teams are added by ``add-team``, from another process)."""

    REFRESH_S = 1.0

    def __init__(self, leaderboard: Leaderboard, clock=time.monotonic) -> None:
        self.leaderboard = leaderboard
        self.clock = clock
        self.ids: frozenset[int] = frozenset()
        self.read_at = -math.inf
        self._lock = threading.Lock()

    def known(self, team_id: int) -> bool | None:
        """True or False without the database; None when the ids should be read again first."""
        if team_id in self.ids:
            return True
        return None if self.clock() - self.read_at >= self.REFRESH_S else False

    def read_and_check(self, team_id: int) -> bool:
        with self._lock:
            if self.clock() - self.read_at >= self.REFRESH_S:
                self.ids = frozenset(self.leaderboard.team_ids())
                self.read_at = self.clock()
            return team_id in self.ids


async def team_exists(request: Request, team_id: int) -> bool:
    if not 1 <= team_id <= MAX_ID:
        return False
    known: KnownTeams = request.app.state.known_teams
    answer = known.known(team_id)
    return answer if answer is not None else await run_in_threadpool(known.read_and_check, team_id)


async def throttled(request: Request, check: Callable[..., T], token: str | None, *args: object) -> T:
    """``check(token, *args)`` under the token throttle (leaderboard.throttle): 429 while the client's
    address has spent its budget of wrong tokens for the claimed team, or its budget for all teams and
    the claimed team is not an untouched, existing one; a right token gives its reservation back. A
    missing token is refused (401) without spending anything."""
    if not token:
        raise Unauthorised("A valid team token is required (Authorization: Bearer TOKEN).")
    throttle: TokenThrottle = request.app.state.token_throttle
    parsed = parse_token(token)
    team_id = parsed[0] if parsed else None
    exists = team_id is not None and await team_exists(request, team_id)
    address = client_address(request)
    waited = 0.0
    while (reservation := throttle.reserve(address, team_id, team_exists=exists)) is None:
        if waited > THROTTLE_MAX_WAIT_S:
            raise LimitReached("Too many token checks at once; try again in a few seconds.",
                               headers={"Retry-After": "5"})
        await asyncio.sleep(THROTTLE_WAIT_S)  # checks in flight may give their units back
        waited += THROTTLE_WAIT_S
    try:
        result = await run_in_threadpool(check, token, *args)
    except Unauthorised:
        throttle.settle(reservation, right=False)
        raise
    except BaseException:
        throttle.settle(reservation, right=True)  # not a wrong token: a fault on the way
        raise
    throttle.settle(reservation, right=True)
    return result


def signing_in(request: Request, team_id: int) -> None:
    """Spend one sign-in of the client's address for ``team_id`` (LimitReached past the budgets of
    ``leaderboard.throttle.SignInLimit``)."""
    limit: SignInLimit = request.app.state.sign_in_limit
    limit.take(client_address(request), team_id)


async def current_team(
    request: Request,
    leaderboard: Annotated[Leaderboard, Depends(get_leaderboard)],
    authorization: Annotated[str | None, Header(description="Bearer TEAM_TOKEN")] = None,
) -> TeamInfo:
    """The team of the ``Authorization: Bearer TOKEN`` header; 401 otherwise (429 when guessing)."""
    return await throttled(request, leaderboard.authenticate, bearer_token(authorization))


PRIVATE_HIDDEN = "The private leaderboard is shown after the deadline or when the host reveals it."


async def board_snapshot(cache: BoardCache, board: str) -> BoardSnapshot:
    """The board to show, never blocking on a stale one; Forbidden for the private board before the reveal."""
    if board == "private":
        config = await run_in_threadpool(cache.config)
        if not config.private_visible(utcnow()):
            raise Forbidden(PRIVATE_HIDDEN)
    snapshot, _fresh = cache.current(board)  # a stale board is refreshed in the background
    if snapshot is None:
        snapshot = await run_in_threadpool(cache.get, board)
    return snapshot


Admission = Callable[[dict[str, str]], Awaitable[None]]


async def receive_submission(request: Request, settings: Settings,
                             admit: Admission) -> tuple[dict[str, str], ReceivedFile]:
    """The upload's form fields and file, ``admit`` run before the file is read (leaderboard.uploads)."""
    fields, received = await FormReader(request, settings.max_upload_bytes, admit).read()
    if received is None:
        raise BadForm("Bad request: the submission CSV goes in the multipart field 'file'.")
    return fields, received


async def admit_upload(leaderboard: Leaderboard, settings: Settings, team: TeamInfo) -> None:
    """The checks an upload passes before its body is read (``Leaderboard.admit``)."""
    await run_in_threadpool(leaderboard.admit, team, max_uncounted_per_day=settings.max_uncounted_per_day)


async def submit_file(leaderboard: Leaderboard, scorer: Scorer, cache: BoardCache, settings: Settings,
                      team: TeamInfo, upload: ReceivedFile, description: str | None = None) -> dict:
    """Score and count one received upload under the server's caps (the API's and the form's way in)."""
    try:
        result = await run_in_threadpool(
            leaderboard.submit, team, upload, upload.file_name, scorer.score, scorer_version=scorer.version,
            max_uncounted_per_day=settings.max_uncounted_per_day, max_team_bytes=settings.max_team_bytes,
            description=description,
        )
    finally:
        upload.close()
    cache.invalidate()
    return result


def file_response(file_name: str, content: bytes, whole: bool) -> Response:
    """A submitted file as a download (never rendered by the browser); a partly kept one says so in its
    name."""
    from urllib.parse import quote

    name = file_name if whole else f"first-{len(content)}-bytes-of-{file_name}"
    ascii_name = "".join(ch if ch.isascii() and ch.isprintable() and ch not in '"\\' else "_" for ch in name)
    disposition = f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name)}"
    return Response(content, media_type="text/csv", headers={
        "Content-Disposition": disposition, "Cache-Control": "no-store",
        "X-Whole-File": "true" if whole else "false"})


SettingsDep = Annotated[Settings, Depends(get_settings)]
LeaderboardDep = Annotated[Leaderboard, Depends(get_leaderboard)]
ScorerDep = Annotated[Scorer, Depends(get_scorer)]
BoardCacheDep = Annotated[BoardCache, Depends(get_board_cache)]
TeamDep = Annotated[TeamInfo, Depends(current_team)]
