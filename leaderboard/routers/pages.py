"""Server-rendered pages: leaderboard, upload form, the team's submissions, rules, API reference.

Plain HTML forms. A token typed into a form signs the browser in: a session cookie (HttpOnly,
SameSite=Strict, ``__Host-`` over HTTPS; never the token itself, see ``leaderboard.sessions``) so
the team's pages work without typing it again; every page shows which team the browser is signed
in as, and an upload or selection from a session made in another browser is refused until the
person confirms the team.
Every form that changes something carries a CSRF token and is accepted only from this site's own
pages (``leaderboard.csrf``), and a token typed while signed in as another team never switches the
browser silently: the page names both teams and asks. The JSON API never reads these cookies (only
the Authorization header).
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from markupsafe import Markup, escape
from starlette.concurrency import run_in_threadpool

from leaderboard import csrf, sessions
from leaderboard.board_cache import BoardCache
from leaderboard.boards import final_ids as final_ids_of
from leaderboard.deps import (
    BoardCacheDep,
    LeaderboardDep,
    ScorerDep,
    SettingsDep,
    admit_upload,
    board_snapshot,
    file_response,
    receive_submission,
    signing_in,
    submit_file,
    throttled,
)
from leaderboard.errors import Conflict, Forbidden, LeaderboardError, Unauthorised
from leaderboard.models import utcnow
from leaderboard.service import MAX_DESCRIPTION, Leaderboard
from leaderboard.views import TeamInfo, iso

TOKEN_COOKIE = sessions.SESSION_COOKIE  # the session cookie's name over plain HTTP
COOKIE_MAX_AGE_S = int(sessions.SESSION_LIFETIME.total_seconds())
PAGE_SIZE = 20  # submissions per page of /mine

FAVICON = Path(__file__).resolve().parents[1] / "static" / "favicon.svg"
templates = Jinja2Templates(directory=str(Path(__file__).resolve().parents[1] / "templates"))
templates.env.filters["iso"] = iso


def _time_tag(moment: datetime | str | None) -> Markup:
    """``<time datetime="...Z">...Z</time>``: UTC in the page, the viewer's local time once local-time.js
    runs."""
    text = moment if isinstance(moment, str) or moment is None else iso(moment)
    return Markup("-") if text is None else Markup('<time datetime="{0}">{0}</time>').format(text)


def _code_spans(text: str | None) -> Markup:
    """Text with `backticked` parts set as code (the API description is written that way); escaped."""
    return Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", str(escape(text or ""))))


def _path_breaks(path: str) -> Markup:
    """An API path that may wrap after each slash and nowhere else."""
    return Markup("/<wbr>".join(str(escape(part)) for part in path.split("/")))


templates.env.filters["time"] = _time_tag
templates.env.filters["code_spans"] = _code_spans
templates.env.filters["path_breaks"] = _path_breaks
templates.env.filters["score"] = lambda value, decimals=4: "-" if value is None else f"{value:.{decimals}f}"
templates.env.filters["interval"] = (
    lambda ci, decimals=4: "-" if ci is None or ci.get("low") is None
    else f"[{ci['low']:.{decimals}f}, {ci['high']:.{decimals}f}]")

router = APIRouter(include_in_schema=False)


async def _team_from(request: Request, leaderboard: Leaderboard, token: str | None) -> TeamInfo | None:
    """The team of a typed token, or None; checked under the client's throttle (429 when guessing)."""
    if not token:
        return None
    try:
        return await throttled(request, leaderboard.authenticate, token)
    except Unauthorised:
        return None


async def cookie_session(request: Request, leaderboard: LeaderboardDep,
                         settings: SettingsDep) -> sessions.SignedIn | None:
    """The session the cookie names, or None (none, or one that ended)."""
    value = request.cookies.get(sessions.cookie_name(request, settings.secure_cookies))
    if not value:
        return None
    return await run_in_threadpool(leaderboard.session_of, value)


CookieSessionDep = Annotated[sessions.SignedIn | None, Depends(cookie_session)]


class Page:
    """Renders a template with what every page shows; its state comes through the API's dependencies."""

    def __init__(self, request: Request, settings: SettingsDep, cache: BoardCacheDep, scorer: ScorerDep,
                 session: CookieSessionDep) -> None:
        self.request = request
        self.settings = settings
        self.cache = cache
        self.scorer = scorer
        self.signed = session  # this browser's sign-in
        self.team = session.team if session else None  # the team this browser is signed in as

    def same_browser(self, browser_key: str) -> bool:
        """Whether the session was made in the browser that sent ``browser_key`` (see
        leaderboard.sessions)."""
        digest = self.signed.browser_digest if self.signed else sessions.UNBOUND
        return sessions.same_browser(digest, browser_key)

    async def render(self, name: str, context: dict, status_code: int = 200) -> HTMLResponse:
        config = await run_in_threadpool(self.cache.config)
        now = utcnow()
        token = csrf.cookie_token(self.request)
        base = {
            "competition": config,
            "closed": config.is_closed(now),
            "private_visible": config.private_visible(now),
            "decimals": self.settings.display_decimals,
            "scorer_version": self.scorer.version,
            "signed_in": self.team,
            "max_description": MAX_DESCRIPTION,
            "csrf_token": token or csrf.new_token(),
        }
        response = templates.TemplateResponse(self.request, name, {**base, **context},
                                              status_code=status_code)
        response.headers["Cache-Control"] = "no-store"
        if token is None:
            response.set_cookie(csrf.CSRF_COOKIE, base["csrf_token"], httponly=True, samesite="strict",
                                secure=self.request.url.scheme == "https", path="/")
        return response


PageDep = Annotated[Page, Depends(Page)]


async def checked_form(request: Request, settings: SettingsDep,
                       csrf_token: Annotated[str, Form(alias=csrf.CSRF_FIELD)] = "") -> None:
    """Every state-changing form: from this site's own page, with the page's CSRF token (else 403)."""
    csrf.check_form(request, csrf_token, settings.public_url)


CHECKED = [Depends(checked_form)]


BrowserKey = Annotated[str, Form(alias=sessions.BROWSER_KEY_FIELD, max_length=200)]


def _remember(response: Response, page: Page, session_value: str) -> None:
    """Keep the session in this browser: host-only, path /, and ``__Host-`` plus Secure over HTTPS."""
    secure = sessions.secure(page.request, page.settings.secure_cookies)
    response.set_cookie(sessions.cookie_name(page.request, page.settings.secure_cookies), session_value,
                        max_age=COOKIE_MAX_AGE_S, httponly=True, samesite="strict", secure=secure, path="/")


def _other_browser(team: TeamInfo) -> str:
    return (f"This browser is signed in as team {team.name!r} (team id {team.id}), but not by a sign-in on "
            "this browser's pages of this site: another site may have planted that sign-in. Nothing was "
            f"uploaded or changed. If {team.name!r} with id {team.id} is your team and you signed in at the "
            "time shown below, confirm it and try again; otherwise sign out and sign in with your own token.")


async def _sign_in(request: Request, leaderboard: Leaderboard, token: str,
                   browser_key: str) -> tuple[TeamInfo, str] | None:
    """A typed token signs this browser in: checked under the token throttle, then under the sign-in
    budgets (429 past them); None for a wrong token."""
    try:
        team = await throttled(request, leaderboard.authenticate, token)
    except Unauthorised:
        return None
    signing_in(request, team.id)
    return team, await run_in_threadpool(leaderboard.start_session, team.id, browser_key)


@router.get("/", response_class=HTMLResponse)
async def board_page(page: PageDep, board: Literal["public", "private"] = Query("public")) -> HTMLResponse:
    try:
        snapshot = await board_snapshot(page.cache, board)
    except Forbidden as exc:
        return await page.render("leaderboard.html", {"board": board, "entries": [], "message": exc.message},
                                 status_code=exc.status_code)
    public_ranks = {}
    if board == "private":  # the shake-up: each team's public rank beside its private one
        public_ranks = {e.team_id: e.rank for e in (await board_snapshot(page.cache, "public")).entries}
    return await page.render("leaderboard.html",
                             {"board": board, "entries": snapshot.entries, "message": None,
                              "public_ranks": public_ranks})


@router.get("/teams/{team_id}", response_class=HTMLResponse)
async def team_page(page: PageDep, leaderboard: LeaderboardDep, team_id: int) -> HTMLResponse:
    """A team as anyone may see it, as on Kaggle: before the close its ranks, best public score and
    entries; after it also its scored submissions, with private scores only of its final ones
    (selected or, with none selected, the best public ones) unless the host chose full disclosure."""
    config = await run_in_threadpool(page.cache.config)
    private_visible = config.private_visible(utcnow())
    team = await run_in_threadpool(leaderboard.public_team, team_id)
    history = None
    if private_visible:
        final = None
        if not page.settings.full_disclosure:
            final = set((await run_in_threadpool(final_ids_of, leaderboard.db, team.id,
                                                 config.max_selected))[0])
        history = await run_in_threadpool(
            lambda: leaderboard.scored_history(team.id, private_visible=True, private_of=final))

    def entry(board: str):
        return next((e for e in snapshots[board].entries if e.team_id == team.id), None)

    snapshots = {"public": await board_snapshot(page.cache, "public")}
    if private_visible:
        snapshots["private"] = await board_snapshot(page.cache, "private")
    return await page.render("team.html", {
        "team": team, "history": history, "public_entry": entry("public"),
        "private_entry": entry("private") if private_visible else None,
        "full_disclosure": page.settings.full_disclosure,
    })


@router.get("/favicon.ico")
async def favicon() -> Response:
    """The site's icon where a client asks for it by the old name (pages link /static/favicon.svg)."""
    return Response(FAVICON.read_bytes(), media_type="image/svg+xml",
                    headers={"Cache-Control": "max-age=86400"})


@router.get("/rules", response_class=HTMLResponse)
async def rules_page(page: PageDep) -> HTMLResponse:
    settings = page.settings
    return await page.render("rules.html", {
        "max_upload_mib": settings.max_upload_bytes / 2**20,
        "max_uncounted_per_day": settings.max_uncounted_per_day,
        "max_team_mib": settings.max_team_bytes / 2**20,
    })


@router.get("/docs", response_class=HTMLResponse)
async def api_page(page: PageDep) -> HTMLResponse:
    """The HTTP API, listed from the app's OpenAPI schema (no scripts, nothing from other sites)."""
    schema = page.request.app.openapi()
    endpoints = [
        {"method": method.upper(), "path": path, "summary": op.get("summary", ""),
         "parameters": [p["name"] for p in op.get("parameters", []) if p.get("in") != "header"],
         "responses": sorted(op.get("responses", {}))}
        for path, methods in schema.get("paths", {}).items() for method, op in methods.items()
    ]
    return await page.render("api.html",
                             {"endpoints": endpoints, "description": schema["info"].get("description")})


@router.get("/submit", response_class=HTMLResponse)
async def submit_form(page: PageDep) -> HTMLResponse:
    return await page.render("submit.html", {"team": page.team, "result": None, "error": None})


class _Refused(Exception):
    """An upload refused with a page of its own (its context and status), before the file is read."""

    def __init__(self, status_code: int, context: dict) -> None:
        super().__init__(status_code)
        self.status_code = status_code
        self.context = context


async def _uploading_team(page: Page, leaderboard: Leaderboard, fields: dict[str, str]) -> TeamInfo:
    """The team an upload form counts for: the typed token's, else the browser's session (bound to
    this browser); _Refused otherwise."""
    token = fields.get("token", "").strip()
    typed = await _team_from(page.request, leaderboard, token) if token else None
    if (typed is None and token) or (not token and page.team is None):
        raise _Refused(401, {"team": page.team, "result": None,
                             "error": "That team token is not valid. Paste the token your host gave you."})
    if typed is not None and page.team is not None and typed.id != page.team.id:
        raise _Refused(409, {"team": page.team, "result": None, "error": (
            f"This browser is signed in as team {page.team.name!r}, but the token you typed is team "
            f"{typed.name!r}'s. Nothing was uploaded. To switch teams, sign out first or enter the other "
            "token on My submissions.")})
    if typed is None and not page.same_browser(fields.get(sessions.BROWSER_KEY_FIELD, "")):
        raise _Refused(409, {"team": page.team, "result": None, "error": _other_browser(page.team),
                             "confirm": page.signed})
    return typed or page.team  # type: ignore[return-value]


@router.post("/submit", response_class=HTMLResponse)
async def submit_upload(page: PageDep, leaderboard: LeaderboardDep) -> HTMLResponse:
    """The upload form: who uploads and whether they may is settled before the file is read (the form
    sends its small fields first; leaderboard.uploads)."""
    request = page.request
    if not csrf.sent_from_here(request, page.settings.public_url):
        raise Forbidden(csrf.REFUSAL)
    chosen: dict[str, TeamInfo] = {}

    async def admit(fields: dict[str, str]) -> None:
        csrf.check_token(request, fields.get(csrf.CSRF_FIELD, ""))
        chosen["team"] = await _uploading_team(page, leaderboard, fields)
        if page.team is None:  # the typed token will sign this browser in
            signing_in(request, chosen["team"].id)
        await admit_upload(leaderboard, page.settings, chosen["team"])

    try:
        fields, received = await receive_submission(request, page.settings, admit)
    except _Refused as refused:
        return await page.render("submit.html", refused.context, status_code=refused.status_code)
    except LeaderboardError as exc:
        return await page.render("submit.html", {"team": chosen.get("team", page.team), "result": None,
                                                 "error": exc.message}, status_code=exc.status_code)
    team = chosen["team"]
    session_value = None
    if page.team is None:  # a typed token signs this browser in
        session_value = await run_in_threadpool(leaderboard.start_session, team.id,
                                                fields.get(sessions.BROWSER_KEY_FIELD))
    shown = {"team": team, "signed_in": page.team or team}
    try:
        result = await submit_file(leaderboard, page.scorer, page.cache, page.settings, team, received,
                                   fields.get("description") or None)
    except LeaderboardError as exc:
        response = await page.render("submit.html", {**shown, "result": None, "error": exc.message,
                                                     "problems": exc.extra.get("problems")},
                                     status_code=exc.status_code)
    else:
        response = await page.render("submit.html", {**shown, "result": result, "error": None})
    if session_value is not None:
        _remember(response, page, session_value)
    return response


async def _mine_context(leaderboard: Leaderboard, cache: BoardCache, team: TeamInfo, page: int = 1) -> dict:
    def read() -> dict:
        config = cache.config()
        now = utcnow()
        total = leaderboard.count_submissions(team.id)
        pages = max(1, -(-total // PAGE_SIZE))
        current = min(max(1, page), pages)
        final_ids, chosen = final_ids_of(leaderboard.db, team.id, config.max_selected)
        return {
            "team": team,
            "quota": leaderboard.quota(team.id, config.daily_limit, now),
            "submissions": leaderboard.submissions_of(team.id, private_visible=config.private_visible(now),
                                                      limit=PAGE_SIZE, offset=(current - 1) * PAGE_SIZE),
            "total": total, "page": current, "pages": pages, "final_ids": final_ids, "chosen": chosen,
        }

    return await run_in_threadpool(read)


@router.get("/mine", response_class=HTMLResponse)
async def mine_page(page: PageDep, leaderboard: LeaderboardDep,
                    page_number: int = Query(1, alias="page")) -> HTMLResponse:
    if page.team is None:
        return await page.render("mine.html", {"team": None, "message": None})
    return await page.render("mine.html",
                             {**await _mine_context(leaderboard, page.cache, page.team, page_number),
                              "message": None})


@router.get("/mine/{submission_id}/file")
async def mine_file(page: PageDep, leaderboard: LeaderboardDep, submission_id: int) -> Response:
    """Download one of the signed-in team's own files."""
    if page.team is None:
        raise Unauthorised("Sign in on My submissions first.")
    return file_response(*await run_in_threadpool(leaderboard.submission_file, page.team, submission_id))


@router.post("/mine", response_class=HTMLResponse, dependencies=CHECKED)
async def mine_login(page: PageDep, leaderboard: LeaderboardDep, token: Annotated[str, Form()] = "",
                     browser_key: BrowserKey = "") -> Response:
    signed_in = await _sign_in(page.request, leaderboard, token.strip(), browser_key)
    if signed_in is None:
        return await page.render("mine.html", {"team": None, "message": "That team token is not valid."},
                                 status_code=401)
    team, session_value = signed_in
    if page.team is not None and page.team.id != team.id:  # never switch teams without asking
        return await page.render("switch.html", {"new_team": team, "token": token.strip()})
    response = RedirectResponse("/mine", status_code=303)
    _remember(response, page, session_value)
    return response


@router.post("/mine/switch", response_class=HTMLResponse, dependencies=CHECKED)
async def mine_switch(page: PageDep, leaderboard: LeaderboardDep, token: Annotated[str, Form()] = "",
                      browser_key: BrowserKey = "") -> Response:
    """The confirmed switch to another team's token."""
    signed_in = await _sign_in(page.request, leaderboard, token.strip(), browser_key)
    if signed_in is None:
        return await page.render("mine.html", {"team": None, "message": "That team token is not valid."},
                                 status_code=401)
    response = RedirectResponse("/mine", status_code=303)
    _remember(response, page, signed_in[1])
    return response


@router.post("/session/confirm", dependencies=CHECKED)
async def confirm_session(page: PageDep, leaderboard: LeaderboardDep, browser_key: BrowserKey = "",
                          session_id: Annotated[int, Form(ge=0)] = 0,
                          team_id: Annotated[int, Form(ge=0)] = 0) -> Response:
    """The person saw which sign-in this browser holds (team, id, when) and keeps it: exactly that one
    is replaced by a session bound to this browser; if the cookie names another by now, nothing is."""
    if page.team is None:
        return await page.render("mine.html", {"team": None, "message": "Enter your team token first."},
                                 status_code=401)
    value = page.request.cookies.get(sessions.cookie_name(page.request, page.settings.secure_cookies))
    signing_in(page.request, page.team.id)
    try:
        _, new_value = await run_in_threadpool(leaderboard.confirm_session, value, session_id, team_id,
                                               browser_key)
    except Conflict as exc:
        return await page.render("submit.html", {"team": page.team, "result": None, "error": exc.message,
                                                 "confirm": page.signed}, status_code=exc.status_code)
    response = RedirectResponse("/submit", status_code=303)
    _remember(response, page, new_value)
    return response


@router.post("/mine/{submission_id}/{action}", response_class=HTMLResponse, dependencies=CHECKED)
async def mine_select(page: PageDep, submission_id: int, action: Literal["select", "unselect"],
                      leaderboard: LeaderboardDep, browser_key: BrowserKey = "") -> Response:
    team = page.team
    if team is None:
        return await page.render("mine.html", {"team": None, "message": "Enter your team token first."},
                                 status_code=401)
    if not page.same_browser(browser_key):
        return await page.render("mine.html", {**await _mine_context(leaderboard, page.cache, team),
                                               "message": _other_browser(team), "confirm": page.signed},
                                 status_code=409)
    try:
        await run_in_threadpool(leaderboard.set_selected, team, submission_id, action == "select")
    except LeaderboardError as exc:
        return await page.render("mine.html", {**await _mine_context(leaderboard, page.cache, team),
                                               "message": exc.message}, status_code=exc.status_code)
    page.cache.invalidate()
    return RedirectResponse("/mine", status_code=303)


@router.post("/logout", dependencies=CHECKED)
async def logout(page: PageDep, leaderboard: LeaderboardDep) -> Response:
    """Sign out: the session ends on the server (its cookie no longer signs in anywhere) and the cookie
    is deleted."""
    value = page.request.cookies.get(sessions.cookie_name(page.request, page.settings.secure_cookies))
    await run_in_threadpool(leaderboard.end_session, value)
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(sessions.SESSION_COOKIE, path="/")
    response.delete_cookie(sessions.SECURE_SESSION_COOKIE, path="/", secure=True)
    return response
