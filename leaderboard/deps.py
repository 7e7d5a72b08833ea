"""FastAPI dependencies: settings, the competition's services, the caller's team, the upload, a board.

Everything is reached through ``request.app.state`` (filled at startup), so a test can build an
app with its own ``Settings`` or override any of these with ``app.dependency_overrides``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, TypeVar

from fastapi import Depends, Header, Request, Response, UploadFile
from starlette.concurrency import run_in_threadpool

from leaderboard.auth import bearer_token
from leaderboard.board_cache import BoardCache, BoardSnapshot
from leaderboard.errors import Forbidden, PayloadTooLarge, Unauthorised
from leaderboard.models import utcnow
from leaderboard.scorer import Scorer
from leaderboard.service import Leaderboard
from leaderboard.settings import Settings
from leaderboard.throttle import TokenThrottle
from leaderboard.views import TeamInfo

READ_CHUNK = 1 << 20
T = TypeVar("T")


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_leaderboard(request: Request) -> Leaderboard:
    return request.app.state.leaderboard


def get_scorer(request: Request) -> Scorer:
    return request.app.state.scorer


def get_board_cache(request: Request) -> BoardCache:
    return request.app.state.board_cache


async def throttled(request: Request, check: Callable[..., T], *args: object) -> T:
    """Run a token check under the client's throttle (leaderboard.throttle): 429 while the client's
    budget of wrong tokens is spent; an Unauthorised answer spends one unit."""
    throttle: TokenThrottle = request.app.state.token_throttle
    client = request.client.host if request.client else "unknown"
    throttle.check(client)
    try:
        return await run_in_threadpool(check, *args)
    except Unauthorised:
        throttle.failed(client)
        raise


async def current_team(
    request: Request,
    leaderboard: Annotated[Leaderboard, Depends(get_leaderboard)],
    authorization: Annotated[str | None, Header(description="Bearer TEAM_TOKEN")] = None,
) -> TeamInfo:
    """The team of the ``Authorization: Bearer TOKEN`` header; 401 otherwise (429 when guessing)."""
    return await throttled(request, leaderboard.authenticate, bearer_token(authorization))


async def read_upload(upload: UploadFile, max_bytes: int) -> bytes:
    """The uploaded file's bytes, refusing (413) past ``max_bytes`` without reading further."""
    chunks, total = [], 0
    while chunk := await upload.read(READ_CHUNK):
        total += len(chunk)
        if total > max_bytes:
            raise PayloadTooLarge(
                f"The file is larger than the server's limit of {max_bytes / 2**20:.1f} MiB.",
                max_upload_bytes=max_bytes,
            )
        chunks.append(chunk)
    return b"".join(chunks)


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


async def submit_file(leaderboard: Leaderboard, scorer: Scorer, cache: BoardCache, settings: Settings,
                      team: TeamInfo, upload: UploadFile, description: str | None = None) -> dict:
    """Read, score and count one upload under the server's caps (the API's and the form's way in)."""
    content = await read_upload(upload, settings.max_upload_bytes)
    result = await run_in_threadpool(
        leaderboard.submit, team, content, upload.filename, scorer.score, scorer_version=scorer.version,
        max_uncounted_per_day=settings.max_uncounted_per_day, max_team_bytes=settings.max_team_bytes,
        description=description,
    )
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
