"""``GET /api/competition``: the rules a participant's client needs (deadline, limits)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from leaderboard.deps import BoardCacheDep, ScorerDep, SettingsDep
from leaderboard.models import utcnow
from leaderboard.service import MAX_DESCRIPTION

router = APIRouter(prefix="/api/competition", tags=["competition"])


@router.get("", summary="Competition rules: deadline, daily limit, final selections, upload cap")
async def competition(cache: BoardCacheDep, settings: SettingsDep, scorer: ScorerDep) -> dict:
    config = await run_in_threadpool(cache.config)
    return {
        **config.public_dict(utcnow()),
        "max_upload_bytes": settings.max_upload_bytes,
        "max_description_chars": MAX_DESCRIPTION,
        "scorer_version": scorer.version,
    }
