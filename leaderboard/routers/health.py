"""``GET /health``: the process is up and its database answers."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from sqlalchemy import text
from starlette.concurrency import run_in_threadpool

from leaderboard.deps import LeaderboardDep, ScorerDep

router = APIRouter(tags=["health"])


@router.get("/health", summary="Liveness and database check")
async def health(leaderboard: LeaderboardDep, scorer: ScorerDep) -> JSONResponse:
    def ping() -> None:
        with leaderboard.db.reader() as session:
            session.execute(text("SELECT 1"))

    try:
        await run_in_threadpool(ping)
    except Exception:  # noqa: BLE001 - any database failure means "not healthy"
        return JSONResponse({"status": "unavailable", "database": "unreachable"}, status_code=503)
    return JSONResponse({"status": "ok", "database": "ok", "scorer_version": scorer.version})
