"""``GET /health``: the process is up and its database can be read and written."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from sqlalchemy import text
from starlette.concurrency import run_in_threadpool

from leaderboard.deps import LeaderboardDep, ScorerDep

router = APIRouter(tags=["health"])


@router.get("/health", summary="Liveness, and whether the database can be read and written",
            responses={503: {"description": "the database is unreachable, read-only or locked: "
                                            "'database' says which"}})
async def health(leaderboard: LeaderboardDep, scorer: ScorerDep) -> JSONResponse:
    def check() -> str:
        try:
            with leaderboard.db.reader() as session:
                session.execute(text("SELECT 1"))
        except Exception:  # noqa: BLE001 - any failure to read means "unreachable"
            return "unreachable"
        return leaderboard.db.writable()  # a write rolled back: read-only and locked show here

    state = await run_in_threadpool(check)
    if state != "ok":
        return JSONResponse({"status": "unavailable", "database": state}, status_code=503,
                            headers={"Retry-After": "60"})
    return JSONResponse({"status": "ok", "database": "ok", "scorer_version": scorer.version})
