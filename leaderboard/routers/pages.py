"""Server-rendered pages: leaderboard, upload form, the team's submissions, rules.

Plain HTML forms, no JavaScript. A token typed into a form is kept in an HttpOnly, SameSite=Strict
cookie so the team's pages work without typing it again; SameSite=Strict keeps other sites from
posting forms with it. The JSON API never reads that cookie (only the Authorization header).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, File, Form, Query, Request, UploadFile
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool

from leaderboard.deps import BoardCacheDep, LeaderboardDep, ScorerDep, SettingsDep, read_upload
from leaderboard.models import utcnow
from leaderboard.service import LeaderboardError, TeamInfo, Unauthorised, iso

TOKEN_COOKIE = "tpugraphs_token"
COOKIE_MAX_AGE_S = 30 * 24 * 3600

templates = Jinja2Templates(directory=str(Path(__file__).resolve().parents[1] / "templates"))
templates.env.filters["iso"] = iso
templates.env.filters["score"] = lambda value, decimals=4: "-" if value is None else f"{value:.{decimals}f}"

router = APIRouter(include_in_schema=False)


async def _render(request: Request, name: str, context: dict, status_code: int = 200) -> HTMLResponse:
    settings = request.app.state.settings
    cache = request.app.state.board_cache
    config = await run_in_threadpool(cache.config)
    now = utcnow()
    base = {
        "competition": config,
        "closed": config.is_closed(now),
        "private_visible": config.private_visible(now),
        "decimals": settings.display_decimals,
        "scorer_version": request.app.state.scorer.version,
    }
    response = templates.TemplateResponse(request, name, {**base, **context}, status_code=status_code)
    response.headers["Cache-Control"] = "no-store"
    return response


def _remember(response: Response, request: Request, token: str) -> None:
    response.set_cookie(TOKEN_COOKIE, token, max_age=COOKIE_MAX_AGE_S, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https", path="/")


async def _team_from(leaderboard, token: str | None) -> TeamInfo | None:
    if not token:
        return None
    try:
        return await run_in_threadpool(leaderboard.authenticate, token)
    except Unauthorised:
        return None


@router.get("/", response_class=HTMLResponse)
async def board_page(request: Request, cache: BoardCacheDep,
                     board: Literal["public", "private"] = Query("public")) -> HTMLResponse:
    config = await run_in_threadpool(cache.config)
    if board == "private" and not config.private_visible(utcnow()):
        return await _render(request, "leaderboard.html", {
            "board": board, "entries": [],
            "message": "The private leaderboard is shown after the deadline or when the host reveals it.",
        }, status_code=403)
    snapshot, _fresh = cache.current(board)
    if snapshot is None:
        snapshot = await run_in_threadpool(cache.get, board)
    return await _render(request, "leaderboard.html", {"board": board, "entries": snapshot.entries, "message": None})


@router.get("/rules", response_class=HTMLResponse)
async def rules_page(request: Request, settings: SettingsDep) -> HTMLResponse:
    return await _render(request, "rules.html", {"max_upload_mib": settings.max_upload_bytes / 2**20})


@router.get("/submit", response_class=HTMLResponse)
async def submit_form(request: Request, leaderboard: LeaderboardDep) -> HTMLResponse:
    team = await _team_from(leaderboard, request.cookies.get(TOKEN_COOKIE))
    return await _render(request, "submit.html", {"team": team, "result": None, "error": None})


@router.post("/submit", response_class=HTMLResponse)
async def submit_upload(
    request: Request,
    leaderboard: LeaderboardDep,
    scorer: ScorerDep,
    cache: BoardCacheDep,
    settings: SettingsDep,
    file: Annotated[UploadFile, File()],
    token: Annotated[str, Form()] = "",
) -> HTMLResponse:
    token = token.strip() or request.cookies.get(TOKEN_COOKIE, "")
    team = await _team_from(leaderboard, token)
    if team is None:
        return await _render(request, "submit.html", {
            "team": None, "result": None,
            "error": "That team token is not valid. Paste the token your host gave you.",
        }, status_code=401)
    try:
        content = await read_upload(file, settings.max_upload_bytes)
        result = await run_in_threadpool(
            leaderboard.submit, team, content, file.filename, scorer.score, scorer_version=scorer.version
        )
    except LeaderboardError as exc:
        response = await _render(request, "submit.html", {"team": team, "result": None, "error": exc.message,
                                                    "problems": exc.extra.get("problems")},
                           status_code=exc.status_code)
    else:
        cache.invalidate()
        response = await _render(request, "submit.html", {"team": team, "result": result, "error": None})
    _remember(response, request, token)
    return response


async def _mine_context(leaderboard, cache, team: TeamInfo) -> dict:
    def read() -> dict:
        config = cache.config()
        now = utcnow()
        return {
            "team": team,
            "quota": leaderboard.quota(team.id, config.daily_limit, now),
            "submissions": leaderboard.submissions_of(team.id, private_visible=config.private_visible(now)),
        }

    return await run_in_threadpool(read)


@router.get("/mine", response_class=HTMLResponse)
async def mine_page(request: Request, leaderboard: LeaderboardDep, cache: BoardCacheDep) -> HTMLResponse:
    team = await _team_from(leaderboard, request.cookies.get(TOKEN_COOKIE))
    if team is None:
        return await _render(request, "mine.html", {"team": None, "message": None})
    return await _render(request, "mine.html", {**await _mine_context(leaderboard, cache, team), "message": None})


@router.post("/mine", response_class=HTMLResponse)
async def mine_login(request: Request, leaderboard: LeaderboardDep, token: Annotated[str, Form()] = "") -> Response:
    team = await _team_from(leaderboard, token.strip())
    if team is None:
        return await _render(request, "mine.html", {"team": None, "message": "That team token is not valid."},
                       status_code=401)
    response = RedirectResponse("/mine", status_code=303)
    _remember(response, request, token.strip())
    return response


@router.post("/mine/{submission_id}/{action}", response_class=HTMLResponse)
async def mine_select(request: Request, submission_id: int, action: Literal["select", "unselect"],
                      leaderboard: LeaderboardDep, cache: BoardCacheDep) -> Response:
    team = await _team_from(leaderboard, request.cookies.get(TOKEN_COOKIE))
    if team is None:
        return await _render(request, "mine.html", {"team": None, "message": "Enter your team token first."},
                       status_code=401)
    try:
        await run_in_threadpool(leaderboard.set_selected, team, submission_id, action == "select")
    except LeaderboardError as exc:
        return await _render(request, "mine.html", {**await _mine_context(leaderboard, cache, team),
                                              "message": exc.message}, status_code=exc.status_code)
    cache.invalidate()
    return RedirectResponse("/mine", status_code=303)


@router.post("/logout")
async def logout() -> Response:
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(TOKEN_COOKIE, path="/")
    return response
