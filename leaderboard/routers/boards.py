"""``GET /api/leaderboard``: the public board, and the private one once the competition is closed."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Query, Response
from starlette.concurrency import run_in_threadpool

from leaderboard.deps import BoardCacheDep
from leaderboard.models import utcnow
from leaderboard.service import Forbidden

router = APIRouter(prefix="/api/leaderboard", tags=["leaderboard"])


@router.get(
    "",
    summary="Leaderboard: rank, team, best score, entries, last submission",
    responses={403: {"description": "the private board before the deadline or reveal"}},
)
async def leaderboard(
    cache: BoardCacheDep,
    board: Literal["public", "private"] = Query("public", description="'private' only once revealed"),
) -> Response:
    if board == "private":
        config = await run_in_threadpool(cache.config)
        if not config.private_visible(utcnow()):
            raise Forbidden("The private leaderboard is shown after the deadline or when the host reveals it.")
    snapshot, _fresh = cache.current(board)  # never blocks: a stale board is refreshed in the background
    if snapshot is None:
        snapshot = await run_in_threadpool(cache.get, board)
    return Response(snapshot.body, media_type="application/json", headers={"Cache-Control": "no-cache"})
