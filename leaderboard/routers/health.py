"""``GET /health``: the process is up and its database can be read and written.

The write check is ``Database.write_problem``: on SQLite the database's files and folder must be
writable and its disk must have ``Settings.min_free_disk_bytes`` free, and on both databases a write
that is rolled back must succeed. Any failure answers 503 with ``database`` (``read-only``,
``disk-full``, ``locked``, ``unreachable``) and ``reason`` in words (no path: the page is public);
the host's log gets a warning when the state changes.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from sqlalchemy import text
from starlette.concurrency import run_in_threadpool

from leaderboard.deps import LeaderboardDep, ScorerDep, SettingsDep

log = logging.getLogger("leaderboard")
router = APIRouter(tags=["health"])


@router.get("/health", summary="Liveness, and whether the database can be read and written",
            responses={503: {"description": "the database is unreachable, read-only, locked or its disk "
                                            "full: 'database' says which, 'reason' why"}})
async def health(request: Request, leaderboard: LeaderboardDep, scorer: ScorerDep,
                 settings: SettingsDep) -> JSONResponse:
    def check() -> tuple[str, str] | None:
        try:
            with leaderboard.db.reader() as session:
                session.execute(text("SELECT 1"))
        except Exception:  # noqa: BLE001 - any failure to read means "unreachable"
            return "unreachable", "the database cannot be read"
        return leaderboard.db.write_problem(settings.min_free_disk_bytes)

    problem = await run_in_threadpool(check)
    state = problem[0] if problem else "ok"
    if state != getattr(request.app.state, "health", "ok"):
        request.app.state.health = state
        if problem:
            log.warning("health: the database cannot take writes (%s): %s", *problem)
        else:
            log.info("health: the database takes writes again")
    if problem is not None:
        return JSONResponse({"status": "unavailable", "database": problem[0], "reason": problem[1]},
                            status_code=503, headers={"Retry-After": "60"})
    return JSONResponse({"status": "ok", "database": "ok", "scorer_version": scorer.version})
