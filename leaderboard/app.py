"""The FastAPI application: routers, error handling, upload cap, startup and crash recovery.

``create_app(settings)`` builds an app; at startup it reads the competition from the database,
parses the solution once, and marks failed any submission left ``received`` by a server that died
(then keeps doing so every ``stuck_grace_s`` seconds, for processes that die while others run).

Errors: a ``LeaderboardError`` answers with its status and participant-safe message; request
validation errors answer 422 without echoing the input; anything else is logged here with a
reference and answers a generic 500 (no traceback, no exception text reaches a client). The API
(``/api/...``, ``/health``) answers JSON, the web pages an error page with the site's navigation.

Nothing is loaded from other sites: ``/docs`` is a server-rendered list of the endpoints (no
Swagger UI from a CDN), and every page sends a strict Content-Security-Policy.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import DBAPIError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from leaderboard.access_log import request_for_log
from leaderboard.board_cache import BoardCache
from leaderboard.database import database_problem
from leaderboard.deps import KnownTeams
from leaderboard.errors import LeaderboardError
from leaderboard.models import utcnow
from leaderboard.routers import boards, competition, health, pages, submissions
from leaderboard.scorer import Scorer
from leaderboard.service import Leaderboard
from leaderboard.settings import Settings
from leaderboard.throttle import SignInLimit, TokenThrottle

log = logging.getLogger("leaderboard")

PACKAGE_DIR = Path(__file__).resolve().parent
MULTIPART_SLACK_BYTES = 1 << 20  # room for multipart headers and the form's token field
_PAGE_CSP = "default-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'"


class ServerState:
    """What a running app holds: the database, the competition's services and the parsed solution."""

    def __init__(self, settings: Settings) -> None:
        # never creates an SQLite file
        self.leaderboard = Leaderboard.open_existing(settings.db_url, settings.db_lock_timeout_s)
        self.db = self.leaderboard.db
        self.leaderboard.config()  # NotInitialised with a clear message if `init` was never run
        # The solution, checked against the SHA-256 recorded by `init` (SolutionTampered otherwise).
        self.scorer = Scorer(self.leaderboard.load_solution(), timeout_s=settings.scoring_timeout_s,
                             slots=settings.scoring_slots)
        self.board_cache = BoardCache(self.leaderboard, settings.board_cache_s,
                                      solution=lambda: self.scorer.solution)

    def close(self) -> None:
        self.scorer.close()
        try:
            self.db.checkpoint(truncate=True)  # leave no WAL behind a clean shutdown
        except Exception:  # noqa: BLE001 - a busy or unreachable database must not stop the shutdown
            log.warning("could not checkpoint the database at shutdown", exc_info=True)
        self.db.dispose()


def _sweep(state: ServerState, settings: Settings) -> int:
    cutoff = utcnow() - timedelta(seconds=settings.scoring_timeout_s + settings.stuck_grace_s)
    swept = state.leaderboard.sweep_stuck(cutoff)
    state.leaderboard.sweep_sessions()
    state.db.checkpoint()  # SQLite: keeps the WAL from growing between the automatic checkpoints
    return swept


async def _sweep_forever(state: ServerState, settings: Settings) -> None:
    while True:
        await asyncio.sleep(max(1.0, settings.stuck_grace_s))
        try:
            await run_in_threadpool(_sweep, state, settings)
        except DBAPIError as exc:  # read-only or locked: /health says so; no traceback every minute
            log.warning("sweeping: cannot write the database (%s): %s", database_problem(exc), exc.orig)
        except Exception:  # noqa: BLE001 - a database hiccup must not end the sweeping
            log.exception("sweeping stuck submissions failed")


def create_app(settings: Settings | None = None) -> FastAPI:
    """A leaderboard app for ``settings`` (default: from ``TPUGRAPHS_LEADERBOARD_*`` variables)."""
    settings = settings or Settings.from_env()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state = await run_in_threadpool(ServerState, settings)
        app.state.server = state
        app.state.leaderboard = state.leaderboard
        app.state.scorer = state.scorer
        app.state.board_cache = state.board_cache
        app.state.known_teams = KnownTeams(state.leaderboard)
        try:
            swept = await run_in_threadpool(_sweep, state, settings)
        except DBAPIError as exc:  # a read-only or locked database still serves its pages; /health says so
            log.warning("cannot write the database at startup (%s): %s", database_problem(exc), exc.orig)
            swept = 0
        log.info("leaderboard %r ready (scorer %s; %d stuck submission(s) marked failed)",
                 state.leaderboard.config().name, state.scorer.version, swept)
        sweeper = asyncio.create_task(_sweep_forever(state, settings))
        try:
            yield
        finally:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
            state.close()

    app = FastAPI(
        title="TpuGraphs leaderboard",
        description="Upload submissions, read the leaderboard, choose final submissions. "
                    "Authenticate with `Authorization: Bearer TEAM_TOKEN`.",
        lifespan=lifespan,
        docs_url=None,  # /docs is a page of our own (routers.pages); no scripts from a CDN
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.token_throttle = TokenThrottle()
    app.state.sign_in_limit = SignInLimit()
    app.include_router(health.router)
    app.include_router(competition.router)
    app.include_router(boards.router)
    app.include_router(submissions.router)
    app.include_router(pages.router)
    app.mount("/static", StaticFiles(directory=PACKAGE_DIR / "static"), name="static")
    _add_error_handlers(app)
    app.add_middleware(UploadSizeLimit, max_body_bytes=settings.max_upload_bytes + MULTIPART_SLACK_BYTES)
    app.add_middleware(SecurityHeaders)  # added last: outermost, so the upload cap's 413 gets the headers too
    return app


def app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory`` (``tpugraphs leaderboard serve --workers N`` uses it)."""
    return create_app(Settings.from_env())


# ---------------------------------------------------------------------------------------------
# Errors


def _wants_json(path: str) -> bool:
    return path.startswith("/api/") or path in ("/api", "/health", "/openapi.json")


def error_page_html(title: str, message: str, status_code: int) -> str:
    """The styled error page (needs no database: it must render when the database is down)."""
    return pages.templates.get_template("error.html").render(title=title, message=message,
                                                             status_code=status_code)


def _error_page(title: str, message: str, status_code: int, headers: dict | None = None) -> HTMLResponse:
    return HTMLResponse(error_page_html(title, message, status_code), status_code=status_code,
                        headers=headers)


DATABASE_RETRY_S = 60
_NOTHING_LOST = ("Nothing you sent in this request was counted; try again in a minute, and if it keeps "
                 "failing, tell the host.")
DATABASE_MESSAGES = {
    "locked": "The leaderboard's database is busy (locked by another program) and could not be written. "
              + _NOTHING_LOST,
    "read-only": "The leaderboard's database cannot be written right now (the host's side is read-only); "
                 "pages can still be read. " + _NOTHING_LOST,
    "unreachable": "The leaderboard cannot reach its database right now. " + _NOTHING_LOST,
}

_TITLES = {401: "Not signed in", 403: "Refused", 404: "Not found", 405: "Not allowed here", 409: "Conflict",
           413: "Too large", 422: "Bad request", 429: "Too many requests", 500: "Server error",
           503: "Unavailable", 504: "Too slow"}


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(LeaderboardError)
    async def leaderboard_error(request: Request, exc: LeaderboardError) -> Response:
        if _wants_json(request.url.path):
            return JSONResponse(exc.payload(), status_code=exc.status_code, headers=exc.headers)
        return _error_page(_TITLES.get(exc.status_code, "Refused"), exc.message, exc.status_code, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> Response:
        # Name the fields only: FastAPI's default answer echoes the input back.
        fields = sorted({".".join(str(p) for p in err.get("loc", ())[1:]) or "request"
                         for err in exc.errors()})
        message = (f"Bad request: check {', '.join(fields)} (a submission is a multipart upload in the field "
                   "'file').")
        if _wants_json(request.url.path):
            return JSONResponse({"detail": message}, status_code=422)
        return _error_page("Bad request", message, 422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        detail = exc.detail if isinstance(exc.detail, str) else "request refused"
        if _wants_json(request.url.path):
            return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=exc.headers)
        if exc.status_code == 404:
            detail = f"There is no page at {request.url.path}. The pages are listed at the top."
        elif exc.status_code == 405:
            detail = (f"{request.method} is not how {request.url.path} is used; follow a link or a form "
                      "of this site.")
        return _error_page(_TITLES.get(exc.status_code, "Refused"), detail, exc.status_code, exc.headers)

    @app.exception_handler(ClientDisconnect)
    async def client_gone(request: Request, exc: ClientDisconnect) -> Response:
        # The client closed the connection (or the server did: too slow); nobody reads this answer.
        log.info("%s: the client went away before its request arrived whole", request_for_log(request))
        return Response(status_code=400)

    @app.exception_handler(DBAPIError)
    async def database_error(request: Request, exc: DBAPIError) -> Response:
        problem = database_problem(exc)
        if problem is None:
            return await unexpected(request, exc)
        log.error("database %s on %s: %s", problem, request_for_log(request), exc.orig)
        message = DATABASE_MESSAGES[problem]
        headers = {"Retry-After": str(DATABASE_RETRY_S)}
        if _wants_json(request.url.path):
            return JSONResponse({"detail": message, "database": problem}, status_code=503, headers=headers)
        return _error_page("Unavailable", message, 503, headers)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Response:
        reference = uuid.uuid4().hex[:12]
        log.error("unhandled error %s on %s", reference, request_for_log(request), exc_info=exc)
        message = f"Internal error on the server (reference {reference}); the host can look it up in the log."
        if _wants_json(request.url.path):
            return JSONResponse({"detail": message}, status_code=500)
        return _error_page("Server error", message, 500)


class SecurityHeaders:
    """Headers that keep pages from being framed, sniffed or made to run foreign scripts (pure ASGI)."""

    # same-origin: nothing of a URL reaches other sites, and the browser sends our own forms' real
    # Origin (under no-referrer it would send "Origin: null" and the CSRF check could not tell).
    HEADERS = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"same-origin"),
               (b"content-security-policy", _PAGE_CSP.encode()), (b"x-frame-options", b"DENY")]

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = self.HEADERS

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []), *(h for h in extra if h[0] not in present)]
            await send(message)

        await self.app(scope, receive, send_with_headers)


# ---------------------------------------------------------------------------------------------
# Upload cap


class _BodyTooLarge(Exception):
    pass


class UploadSizeLimit:
    """Refuse request bodies over ``max_body_bytes`` with 413, before reading them in full.

    A declared ``Content-Length`` over the cap is refused before any byte is read; a chunked body is
    counted as it streams and refused as soon as it passes the cap (the app's own answer to the
    interrupted body is replaced by the 413).
    """

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            await self._refuse(scope, send)
            return

        seen = 0
        too_large = False
        started = False

        async def counting_receive() -> Message:
            nonlocal seen, too_large
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body_bytes:
                    too_large = True
                    raise _BodyTooLarge
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if too_large:
                return  # the app's answer to the cut body is dropped; the 413 goes out instead
            started = True
            await send(message)

        with contextlib.suppress(_BodyTooLarge):
            await self.app(scope, counting_receive, guarded_send)
        if too_large and not started:
            await self._refuse(scope, send)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        limit_mib = (self.max_body_bytes - MULTIPART_SLACK_BYTES) / 2**20
        message = (f"The upload is larger than the server's limit of {limit_mib:.1f} MiB. "
                   "Nothing was stored or counted.")
        if _wants_json(scope["path"]):
            body, content_type = json.dumps({"detail": message}).encode(), b"application/json"
        else:  # a web form: the site's error page, not raw JSON
            body, content_type = (error_page_html(_TITLES[413], message, 413).encode(),
                                  b"text/html; charset=utf-8")
        await send({"type": "http.response.start", "status": 413, "headers": [
            (b"content-type", content_type), (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]})
        await send({"type": "http.response.body", "body": body})
