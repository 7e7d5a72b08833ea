"""Submissions of the calling team: upload (scored at once), history, final selection."""

from __future__ import annotations

from fastapi import APIRouter, Request, status
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from leaderboard.deps import (
    BoardCacheDep,
    LeaderboardDep,
    ScorerDep,
    SettingsDep,
    TeamDep,
    admit_upload,
    file_response,
    receive_submission,
    submit_file,
)
from leaderboard.models import utcnow
from leaderboard.service import MAX_DESCRIPTION

router = APIRouter(prefix="/api/submissions", tags=["submissions"])

_ERRORS = {
    401: {"description": "missing or wrong team token"},
    503: {"description": "the database is busy or cannot be written; Retry-After says when to try again "
                         "(nothing counted)"},
    403: {"description": "the competition is closed, or the team is disqualified"},
    413: {"description": "file larger than the server's limit, or the team's stored files would pass theirs"},
    422: {"description": "invalid submission file, or a description over the limit; 'detail' says why "
                         "(not counted)"},
    429: {"description": "daily limit reached, or too many uncounted (invalid, failed) uploads today; "
               "'resets_at' and the Retry-After header say when it resets"},
    500: {"description": "scoring failed on the server (not counted)"},
    504: {"description": "scoring ran past the time limit (not counted)"},
}


# The body is read by the handler itself, after the checks (leaderboard.uploads), so it is described here.
_UPLOAD_BODY = {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
    "type": "object", "required": ["file"], "properties": {
        "file": {"type": "string", "format": "binary", "description": "the submission CSV (ID,TopConfigs)"},
        "description": {"type": "string", "maxLength": MAX_DESCRIPTION,
                        "description": "a note on this submission, shown in the team's history"},
    }}}}}}


@router.post("", status_code=status.HTTP_201_CREATED, responses=_ERRORS, openapi_extra=_UPLOAD_BODY,
             summary="Upload a submission CSV; it is validated and scored before the answer")
async def create_submission(request: Request, team: TeamDep, leaderboard: LeaderboardDep, scorer: ScorerDep,
                            cache: BoardCacheDep, settings: SettingsDep) -> dict:
    # Who, whether the competition is open, the daily limit and the caps: before any of the body is read.
    await admit_upload(leaderboard, settings, team)

    async def admitted(_fields: dict[str, str]) -> None:
        return None

    fields, received = await receive_submission(request, settings, admitted)
    return await submit_file(leaderboard, scorer, cache, settings, team, received, fields.get("description"))


@router.get("/mine", responses={401: _ERRORS[401]}, summary="The calling team's submissions and quota")
async def my_submissions(team: TeamDep, leaderboard: LeaderboardDep, cache: BoardCacheDep) -> dict:
    def read() -> dict:
        config = cache.config()
        now = utcnow()
        return {
            "team": team.name,
            "disqualified": team.disqualified,
            "max_selected": config.max_selected,
            **leaderboard.quota(team.id, config.daily_limit, now).as_dict(),
            "submissions": leaderboard.submissions_of(team.id, private_visible=config.private_visible(now)),
        }

    return await run_in_threadpool(read)


@router.get("/{submission_id}/file",
            responses={401: _ERRORS[401], 404: {"description": "not a submission of the team"}},
            summary="Download one of the team's own submitted files", response_class=Response)
async def download(submission_id: int, team: TeamDep, leaderboard: LeaderboardDep) -> Response:
    file_name, content, whole = await run_in_threadpool(leaderboard.submission_file, team, submission_id)
    return file_response(file_name, content, whole)


@router.post("/{submission_id}/select", summary="Select a scored submission for the private board")
async def select(submission_id: int, team: TeamDep, leaderboard: LeaderboardDep,
                 cache: BoardCacheDep) -> dict:
    result = await run_in_threadpool(leaderboard.set_selected, team, submission_id, True)
    cache.invalidate()
    return result


@router.post("/{submission_id}/unselect", summary="Take a submission off the team's final selection")
async def unselect(submission_id: int, team: TeamDep, leaderboard: LeaderboardDep,
                   cache: BoardCacheDep) -> dict:
    result = await run_in_threadpool(leaderboard.set_selected, team, submission_id, False)
    cache.invalidate()
    return result
