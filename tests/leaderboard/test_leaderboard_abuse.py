"""What an attacker, a crowd behind one address or a broken host tries (issue 53), against real servers.

Look-alike team names, a confirmation that binds exactly the sign-in it showed (Chromium), sessions
that end at sign-out, uploads refused before their body is read and held on disk (with the server's
memory measured), a token throttle that holds under concurrency and spares a shared address, tokens
out of the log, host commands that refuse bad values in one line, a locked or read-only database
answered 503, and slow clients closed. One SQLite server serves most of the module; PostgreSQL where
the database matters.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from lb_support import (
    LiveServer,
    bearer,
    form_post,
    init_competition,
    known_team,
    rss_bytes,
    served_in_a_child,
)

from competition.cli import main
from leaderboard import sessions
from leaderboard.app import create_app
from leaderboard.csrf import CSRF_COOKIE
from leaderboard.errors import Conflict
from leaderboard.models import DailyQuota, Submission, utcnow
from leaderboard.names import name_key
from leaderboard.server import deadline_protocol
from leaderboard.settings import Settings
from leaderboard.throttle import ADDRESS_FAILURES, TEAM_FAILURES
from leaderboard.uploads import SPOOL_BYTES, ReceivedFile

MIB = 1 << 20


@pytest.fixture(scope="module")
def site(tiny, tmp_path_factory):
    """One competition on SQLite served over HTTP for the module: ``(server, leaderboard, app)``."""
    url = f"sqlite:///{tmp_path_factory.mktemp('abuse') / 'leaderboard.db'}"
    leaderboard = init_competition(url, tiny, daily_limit=2)
    app = create_app(Settings(db_url=url, board_cache_s=0.0, max_upload_bytes=16 * MIB))
    with LiveServer(app, http=deadline_protocol(1.0, 1.5)) as server:
        yield server, leaderboard, app
    leaderboard.db.dispose()


_team = known_team  # every team a test makes is one the running server knows


def _count(leaderboard, team_id: int) -> int:
    with leaderboard.db.reader() as session:
        return session.query(Submission).filter_by(team_id=team_id).count()


# ---------------------------------------------------------------------------------------------
# 1. Names unique by what a person sees


@pytest.mark.parametrize(("existing", "look_alike"), [
    ("Team B", "Team  B"), ("Team B", " team b "), ("Team B", "Team \u0412"), ("Team A", "Team \u0410"),
    ("Team A", "\uff34\uff45\uff41\uff4d \uff21"), ("Team A", "Team \u0391"), ("Modem", "Rnodern"),
])
def test_a_look_alike_name_is_refused_naming_the_existing_team(leaderboard, existing, look_alike):
    team, _ = leaderboard.add_team(existing)
    with pytest.raises(Conflict, match=f"{existing!r} \\(id {team.id}\\) already exists"):
        leaderboard.add_team(look_alike)
    other, _ = leaderboard.add_team("Somebody else")
    with pytest.raises(Conflict, match=f"{existing!r}"):
        leaderboard.rename_team("Somebody else", look_alike)
    assert leaderboard.rename_team("Somebody else", "Somebody Else").name == "Somebody Else"  # its own
    assert name_key(existing) == name_key(look_alike)


def test_names_are_stored_as_shown_and_commands_find_them_by_what_they_look_like(sqlite_url, tiny, capsys):
    init_competition(sqlite_url, tiny).db.dispose()
    assert main(["leaderboard", "add-team", "--db", sqlite_url, "  Team   \uff22  "]) == 0
    assert "Added team 'Team B'" in capsys.readouterr().err
    assert main(["leaderboard", "add-team", "--db", sqlite_url, "team \u0412"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "'Team B' (id 1) already exists" in err
    assert main(["leaderboard", "rename-team", "--db", sqlite_url, "team b", "Bravo"]) == 0
    assert main(["leaderboard", "reset-token", "--db", sqlite_url, "BRAVO"]) == 0


def test_look_alike_names_are_refused_on_postgresql(postgres_db, tiny):
    leaderboard = init_competition(postgres_db, tiny)
    leaderboard.add_team("Team A")
    with pytest.raises(Conflict, match="'Team A'"):
        leaderboard.add_team("TEAM \u0410")
    leaderboard.db.dispose()


# ---------------------------------------------------------------------------------------------
# 2. The confirmation names the sign-in and binds exactly it (Chromium)


def _sign_in_elsewhere(base_url: str, token: str) -> str:
    """A sign-in made in another browser (the attacker's): its cookie value."""
    with httpx.Client(base_url=base_url) as other:
        other.get("/rules")
        fields = {"token": token, "csrf": other.cookies[CSRF_COOKIE], sessions.BROWSER_KEY_FIELD: "e" * 32}
        answer = other.post("/mine", data=fields, headers={"Origin": base_url})
        assert answer.status_code == 303
        return answer.cookies[sessions.SESSION_COOKIE]


@pytest.mark.slow
def test_the_confirmation_shows_the_sign_in_and_binds_only_it(browser, site, tiny, tmp_path):
    server, leaderboard, _ = site
    attacker, attacker_token = _team(leaderboard, "Planter")
    other, other_token = _team(leaderboard, "Second planter")
    victim, victim_token = _team(leaderboard, "Victim")
    planted = _sign_in_elsewhere(server.url, attacker_token)
    upload_file = tmp_path / "mine.csv"
    upload_file.write_bytes(tiny.submission(3))
    context = browser.new_context()
    page = context.new_page()
    page.goto(server.url + "/mine")
    page.fill("input[name=token]", victim_token)
    page.click("button[type=submit]")
    assert page.inner_text("#signed-in-team") == victim.name
    context.add_cookies([{"name": sessions.SESSION_COOKIE, "value": planted, "url": server.url}])

    page.goto(server.url + "/submit")
    page.set_input_files("input[name=file]", str(upload_file))
    page.click("form[action='/submit'] button[type=submit]")
    box = page.inner_text("#confirm-team")
    assert attacker.name in box and page.inner_text("#confirm-team-id") == str(attacker.id)
    assert page.locator("#confirm-signed-in-at time").get_attribute("datetime").endswith("Z")
    # Between showing the box and the click, the cookie is re-planted with another team's sign-in.
    replanted = _sign_in_elsewhere(server.url, other_token)
    context.add_cookies([{"name": sessions.SESSION_COOKIE, "value": replanted, "url": server.url}])
    page.click("#confirm-team form[action='/session/confirm'] button")
    assert "changed after the page asked you to confirm it" in page.inner_text("#error")
    assert "nothing was confirmed" in page.inner_text("#error")
    assert other.name in page.inner_text("#confirm-team")  # the box now shows the sign-in it holds
    assert leaderboard.session_of(planted) is not None  # the first planted sign-in was not confirmed
    assert [_count(leaderboard, t.id) for t in (attacker, other, victim)] == [0, 0, 0]
    # Confirming what is shown binds exactly that sign-in to this browser, under a new cookie.
    page.click("#confirm-team form[action='/session/confirm'] button")
    page.set_input_files("input[name=file]", str(upload_file))
    page.click("form[action='/submit'] button[type=submit]")
    from playwright.sync_api import expect

    expect(page.locator("#public-score")).to_have_count(1)  # waits for the scored page (a loaded machine)
    assert _count(leaderboard, other.id) == 1 and _count(leaderboard, attacker.id) == 0
    context.close()


def test_the_page_after_an_upload_says_who_is_signed_in(site, tiny):
    server, leaderboard, _ = site
    team, token = _team(leaderboard, "Header")
    with httpx.Client(base_url=server.url) as client:
        answer = form_post(client, "/submit", data={"token": token},
                           files={"file": ("s.csv", tiny.submission(1), "text/csv")})
    assert answer.status_code == 200 and 'id="public-score"' in answer.text
    assert 'id="signed-in-team"' in answer.text and team.name in answer.text and "sign out" in answer.text


# ---------------------------------------------------------------------------------------------
# 3. Sessions: one per sign-in, ended by sign-out and reset-token, on both databases


def _session_lifecycle(base_url: str, leaderboard) -> None:
    team, token = _team(leaderboard, "Sessions")
    with httpx.Client(base_url=base_url) as browser_a:
        assert form_post(browser_a, "/mine", data={"token": token}).status_code == 303
        assert team.name in browser_a.get("/mine").text
        value = browser_a.cookies[sessions.SESSION_COOKIE]
        form_post(browser_a, "/logout")
        assert form_post(browser_a, "/mine", data={"token": token}).status_code == 303
        assert browser_a.cookies[sessions.SESSION_COOKIE] != value  # each sign-in a session of its own
        form_post(browser_a, "/logout")
    with httpx.Client(base_url=base_url, cookies={sessions.SESSION_COOKIE: value}) as replay:
        assert "Signed in as" not in replay.get("/mine").text  # the old cookie signs nobody in
    with httpx.Client(base_url=base_url) as browser_b:
        form_post(browser_b, "/mine", data={"token": token})
        assert "Signed in as" in browser_b.get("/mine").text
        leaderboard.reset_token(team.name)
        assert "Signed in as" not in browser_b.get("/mine").text


def test_sign_out_and_reset_token_end_sessions_on_sqlite(site):
    server, leaderboard, _ = site
    _session_lifecycle(server.url, leaderboard)


@pytest.mark.slow
def test_sign_out_and_reset_token_end_sessions_on_postgresql(postgres_db, tiny):
    leaderboard = init_competition(postgres_db, tiny)
    with LiveServer(create_app(Settings(db_url=postgres_db, board_cache_s=0.0))) as server:
        _session_lifecycle(server.url, leaderboard)
    leaderboard.db.dispose()


# ---------------------------------------------------------------------------------------------
# 4. The throttle: atomic under concurrency, per claimed team and per address


def test_a_concurrent_burst_of_wrong_tokens_is_held_to_the_teams_budget(site):
    server, leaderboard, _ = site
    team, _ = _team(leaderboard, "Guessed")

    def guess(i: int) -> int:
        return httpx.get(f"{server.url}/api/submissions/mine", headers=bearer(f"{team.id}.wrong{i:040d}"),
                         timeout=30).status_code

    with ThreadPoolExecutor(20) as pool:
        codes = sorted(pool.map(guess, range(20)))
    assert codes == [401] * TEAM_FAILURES + [429] * (20 - TEAM_FAILURES)


def test_a_shared_address_is_not_turned_against_its_own_users(client, leaderboard):
    """A class behind one address: one person's pranks spend the address's budget, the others still
    sign in; only the team being guessed at is refused, from anywhere."""
    attacked, attacked_token = leaderboard.add_team("Attacked")
    _, bystander_token = leaderboard.add_team("Bystander")
    _, late_token = leaderboard.add_team("Late")
    mine = "/api/submissions/mine"
    for i in range(TEAM_FAILURES):
        assert client.get(mine, headers=bearer(f"{attacked.id}.prank{i}")).status_code == 401
    for i in range(ADDRESS_FAILURES - TEAM_FAILURES):  # typos claiming other (unknown) teams
        assert client.get(mine, headers=bearer(f"{1000 + i}.typo")).status_code == 401
    assert client.get(mine, headers=bearer("no-team-id")).status_code == 429  # the address is spent
    assert client.get(mine, headers=bearer(bystander_token)).status_code == 200  # its team untouched
    refused = client.get(mine, headers=bearer(attacked_token))
    assert refused.status_code == 429 and "Too many wrong tokens for team" in refused.json()["detail"]
    # A right token from the spent address goes on; a wrong one for an untouched team is checked once,
    # then that team counts as guessed at from here.
    assert client.get(mine, headers=bearer(f"{late_token.split('.')[0]}.wrong")).status_code == 401
    assert client.get(mine, headers=bearer(late_token)).status_code == 429


# ---------------------------------------------------------------------------------------------
# 5. Uploads: checked before the body is read, held on disk, memory bounded


def _multipart_head(boundary: str, fields: dict[str, str], file_bytes: int) -> tuple[bytes, int]:
    """The start of a multipart body (fields, then the file part's header) and the whole body's length."""
    head = b"".join(f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
                    for k, v in fields.items())
    head += (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="s.csv"\r\n'
             "Content-Type: text/csv\r\n\r\n").encode()
    return head, len(head) + file_bytes + len(f"\r\n--{boundary}--\r\n")


def _answer_without_the_body(port: int, path: str, headers: dict[str, str], fields: dict[str, str]) -> str:
    """Send a request's headers and the start of a 16 MiB upload, then wait: the status line that comes
    back before the file is sent."""
    boundary = "b" + uuid.uuid4().hex
    head, length = _multipart_head(boundary, fields, 16 * MIB)
    lines = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", f"Content-Length: {length}",
             f"Content-Type: multipart/form-data; boundary={boundary}",
             *(f"{k}: {v}" for k, v in headers.items())]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + head + b"ID,TopConfigs\n")
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer.partition(b"\r\n\r\n")[2]) < _length(answer):
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
        return answer.decode("latin-1")


def _length(answer: bytes) -> int:
    for line in answer.partition(b"\r\n\r\n")[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":")[1])
    return 0


def test_a_refused_team_is_answered_before_its_file_is_sent(site, tiny):
    server, leaderboard, _ = site
    team, token = _team(leaderboard, "Spent")
    with leaderboard.db.writer() as session:
        session.add(DailyQuota(team_id=team.id, day=utcnow().date(), used=2))
    api = _answer_without_the_body(server.port, "/api/submissions", bearer(token), {})
    assert api.startswith("HTTP/1.1 429") and "Daily limit reached" in api
    with httpx.Client(base_url=server.url) as browser:
        browser.get("/rules")
        csrf = browser.cookies[CSRF_COOKIE]
    form = _answer_without_the_body(server.port, "/submit",
                                    {"Origin": server.url, "Cookie": f"{CSRF_COOKIE}={csrf}"},
                                    {"csrf": csrf, "token": token, "description": "late"})
    assert form.startswith("HTTP/1.1 429") and "Daily limit reached" in form
    wrong = _answer_without_the_body(server.port, "/api/submissions", bearer(f"{team.id}.wrong"), {})
    assert wrong.startswith("HTTP/1.1 401")
    assert _count(leaderboard, team.id) == 0


def test_an_upload_is_held_on_disk_past_a_small_size():
    received = ReceivedFile.from_bytes(b"x" * (SPOOL_BYTES + 1), "s.csv")
    assert received._file._rolled and received.size == SPOOL_BYTES + 1  # on disk, not in memory
    assert received.read() == b"x" * (SPOOL_BYTES + 1)
    received.close()


@pytest.mark.slow
def test_twenty_concurrent_16_mib_uploads_from_a_refused_team_leave_memory_bounded(tmp_path, tiny):
    url = f"sqlite:///{tmp_path / 'leaderboard.db'}"
    leaderboard = init_competition(url, tiny, daily_limit=1)
    team, token = leaderboard.add_team("Spent")
    with leaderboard.db.writer() as session:
        session.add(DailyQuota(team_id=team.id, day=utcnow().date(), used=1))
    content = b"ID,TopConfigs\n" + b"0" * (16 * MIB - 100)
    with served_in_a_child(url) as (base, process):
        before = rss_bytes(process.pid)

        def one(_: int) -> httpx.Response:
            return httpx.post(f"{base}/api/submissions", headers=bearer(token), timeout=120,
                              files={"file": ("s.csv", content, "text/csv")})

        with ThreadPoolExecutor(20) as pool:
            answers = list(pool.map(one, range(20)))
        after = rss_bytes(process.pid)
    assert [a.status_code for a in answers] == [429] * 20
    assert after - before <= 64 * MIB, f"the server grew by {(after - before) / MIB:.0f} MiB"
    leaderboard.db.dispose()


# ---------------------------------------------------------------------------------------------
# 6. Tokens out of the log


SECRET = "Zm9vYmFyYmF6cXV4cXV1eDEyMzQ1Njc4OTA"


@pytest.mark.parametrize("path", [
    f"/?board=7.{SECRET}", f"/mine?page=7.{SECRET}", f"/api/submissions/7.{SECRET}/file",
    f"/teams/7.{SECRET}", f"/static/7.{SECRET}", f"/static/{SECRET}", f"/x?anything={SECRET}",
    f"/teams/7%2E{SECRET}", f"/mine?7.{SECRET}",
])
def test_tokens_never_reach_the_access_log(path):
    import logging

    from leaderboard.access_log import RedactQuery

    record = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
                               ("127.0.0.1:5", "GET", path, "1.1", 404), None)
    RedactQuery().filter(record)
    assert SECRET not in record.getMessage() and "REDACTED" in record.getMessage()


def test_shown_query_values_and_plain_paths_stay_readable():
    from leaderboard.access_log import redact_path

    assert redact_path("/?board=private") == "/?board=private"
    assert redact_path("/mine?page=3") == "/mine?page=3"
    assert redact_path("/teams/12") == "/teams/12" and redact_path("/static/style.css") == "/static/style.css"


# ---------------------------------------------------------------------------------------------
# 7. Host commands refuse bad values in one line


@pytest.mark.parametrize(("argv", "message"), [
    (["configure", "--daily-limit", "99999999999999999999"], "daily limit must be a whole number from 1 to"),
    (["configure", "--max-selected", "0"], "max selected must be a whole number from 1 to"),
    (["configure", "--name", ""], "the title cannot be empty"),
    (["configure", "--name", "x" * 5000], "the title has at most 200 characters, got 5000"),
    (["configure", "--name", "two\nlines"], "the title must be one line"),
    (["export", "--out", "/nonexistent/dir/x.csv"], "the folder /nonexistent/dir does not exist"),
    (["serve", "--port", "99999"], "--port 99999: a port is a number from 1 to 65535"),
    (["serve", "--body-timeout", "0"], "--header-timeout and --body-timeout are seconds"),
    (["serve", "--header-timeout", "99999"], "--header-timeout and --body-timeout are seconds"),
    (["serve", "--workers", "0"], "--workers, --scoring-slots, --max-upload-mb and --scoring-timeout must"),
    (["serve", "--workers", "1000"], "--workers and --scoring-slots at most 256"),
    (["serve", "--board-cache", "-1"], "--board-cache must be 0 (no caching) or more"),
    (["serve", "--max-uncounted-per-day", "0"], "--max-uncounted-per-day and --max-team-mb must be positive"),
    (["serve", "--public-url", "ftp://example.org"], "expected an http:// or https:// URL"),
    (["add-team", "a\u2028b"], "control characters or line separators"),
    (["add-team", "   "], "a team name cannot be empty"),
])
def test_host_commands_refuse_bad_values_in_one_line(sqlite_url, tiny, capsys, argv, message):
    init_competition(sqlite_url, tiny).db.dispose()
    assert main(["leaderboard", argv[0], "--db", sqlite_url, *argv[1:]]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and err.count("\n") == 0 and "Traceback" not in err


@pytest.mark.parametrize("workers", [1, 2])
def test_serve_hands_uvicorn_the_read_deadlines_and_the_settings(sqlite_url, tiny, capsys, monkeypatch,
                                                                 workers):
    """What `serve` starts, without starting it: one process gets the app and the deadline protocol; several
    read their settings (timeouts included) from the environment and the protocol by name."""
    import uvicorn

    init_competition(sqlite_url, tiny).db.dispose()
    started = {}
    monkeypatch.setattr(uvicorn, "run", lambda target, **kwargs: started.update(target=target, **kwargs))
    monkeypatch.setattr(os, "environ", dict(os.environ))
    assert main(["leaderboard", "serve", "--db", sqlite_url, "--host", "127.0.0.1", "--port", "8123",
                 "--workers", str(workers), "--header-timeout", "7", "--body-timeout", "30"]) == 0
    assert started["host"] == "127.0.0.1" and started["port"] == 8123
    assert "Serving" in capsys.readouterr().err
    if workers == 1:
        assert callable(started["target"]) and started["http"] is not None and "workers" not in started
    else:
        assert started["target"] == "leaderboard.app:app_from_env" and started["factory"] is True
        assert started["workers"] == 2 and started["http"] == "leaderboard.server:DeadlineProtocol"
        restored = Settings.from_env()
        assert (restored.header_timeout_s, restored.body_timeout_s) == (7.0, 30.0)


def test_serve_on_a_taken_address_says_so_in_one_line(sqlite_url, tiny, capsys, monkeypatch):
    import uvicorn

    init_competition(sqlite_url, tiny).db.dispose()

    def taken(*args, **kwargs):
        raise OSError(98, "Address already in use")

    monkeypatch.setattr(uvicorn, "run", taken)
    assert main(["leaderboard", "serve", "--db", sqlite_url, "--port", "8124"]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == "tpugraphs leaderboard: cannot listen on 127.0.0.1:8124: Address already in use"


# ---------------------------------------------------------------------------------------------
# 8. A locked or read-only database: 503, Retry-After, a message to act on; /health says so


def test_a_database_locked_from_outside_is_answered_503_at_once(tmp_path, tiny):
    path = tmp_path / "leaderboard.db"
    leaderboard = init_competition(f"sqlite:///{path}", tiny)
    _, token = leaderboard.add_team("Alpha")
    app = create_app(Settings(db_url=f"sqlite:///{path}", board_cache_s=0.0, db_lock_timeout_s=0.3))
    with LiveServer(app) as server:
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            started = time.monotonic()
            answer = httpx.post(f"{server.url}/api/submissions", headers=bearer(token), timeout=30,
                                files={"file": ("s.csv", tiny.submission(1), "text/csv")})
            took = time.monotonic() - started
            health = httpx.get(f"{server.url}/health", timeout=30)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert answer.status_code == 503 and int(answer.headers["Retry-After"]) > 0, answer.text
        assert "busy" in answer.json()["detail"] and "Nothing you sent" in answer.json()["detail"]
        assert took < 10
        assert health.status_code == 503 and health.json()["database"] == "locked"
        assert httpx.get(f"{server.url}/health", timeout=30).json()["database"] == "ok"
    leaderboard.db.dispose()


def test_a_read_only_sqlite_database_is_reported_and_answered_503(tmp_path, tiny):
    path = tmp_path / "leaderboard.db"
    leaderboard = init_competition(f"sqlite:///{path}", tiny)
    _, token = leaderboard.add_team("Alpha")
    leaderboard.db.dispose()
    read_only = f"sqlite:///file:{path}?mode=ro&uri=true"
    with LiveServer(create_app(Settings(db_url=read_only, board_cache_s=0.0))) as server:
        health = httpx.get(f"{server.url}/health", timeout=30)
        assert health.status_code == 503 and health.json()["database"] == "read-only"
        assert httpx.get(f"{server.url}/", timeout=30).status_code == 200  # pages are still read
        answer = httpx.post(f"{server.url}/api/submissions", headers=bearer(token), timeout=30,
                            files={"file": ("s.csv", tiny.submission(1), "text/csv")})
        assert answer.status_code == 503 and "cannot be written" in answer.json()["detail"]
        assert answer.headers["Retry-After"]


@pytest.mark.slow
def test_a_read_only_postgresql_database_is_reported_and_answered_503(postgres_db, tiny):
    import psycopg

    leaderboard = init_competition(postgres_db, tiny)
    _, token = leaderboard.add_team("Alpha")
    leaderboard.db.dispose()
    name = postgres_db.rsplit("/", 1)[1]
    admin_url = postgres_db.replace("postgresql+psycopg", "postgresql").rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
    with LiveServer(create_app(Settings(db_url=postgres_db, board_cache_s=0.0))) as server:
        health = httpx.get(f"{server.url}/health", timeout=30)
        assert health.status_code == 503 and health.json()["database"] == "read-only"
        answer = httpx.post(f"{server.url}/api/submissions", headers=bearer(token), timeout=30,
                            files={"file": ("s.csv", tiny.submission(1), "text/csv")})
        assert answer.status_code == 503 and "cannot be written" in answer.json()["detail"]


# ---------------------------------------------------------------------------------------------
# 9. Slow clients are closed


def _closed_within(port: int, first: bytes, seconds: float) -> bool:
    """Send ``first`` and then nothing: whether the server closes the connection within ``seconds``."""
    with socket.create_connection(("127.0.0.1", port), timeout=seconds) as sock:
        sock.sendall(first)
        try:
            while sock.recv(65536):
                pass
        except TimeoutError:
            return False
        return True


def test_slow_headers_and_slow_bodies_are_closed(site):
    server, _, _ = site
    assert _closed_within(server.port, b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: 1", 4)  # header: 1 s
    body = (b"POST /api/submissions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n"
            b"Content-Type: multipart/form-data; boundary=b\r\n\r\n--b")
    assert _closed_within(server.port, body, 4)  # body: 1.5 s (401: answered, the rest never comes)
    assert httpx.get(f"{server.url}/health", timeout=10).status_code == 200  # others are served


def test_malformed_upload_forms_are_refused_with_what_is_wrong(tmp_path, tiny):
    """Two files, too many fields, an oversized field: each refused in words, nothing counted; an unknown
    charset in the content type is read as latin-1 rather than failing."""
    url = f"sqlite:///{tmp_path / 'lb.db'}"
    leaderboard = init_competition(url, tiny)
    _, token = leaderboard.add_team("Alpha")
    app = create_app(Settings(db_url=url, board_cache_s=0.0))
    csv = tiny.submission(1)
    with LiveServer(app) as server:
        post = f"{server.url}/api/submissions"
        two = httpx.post(post, headers=bearer(token), timeout=30,
                         files=[("file", ("a.csv", csv, "text/csv")), ("file", ("b.csv", csv, "text/csv"))])
        assert two.status_code == 422 and "one file per submission" in two.json()["detail"], two.text
        many = httpx.post(post, headers=bearer(token), timeout=30, data={f"f{i}": "x" for i in range(12)},
                          files={"file": ("s.csv", csv, "text/csv")})
        assert many.status_code == 422 and "too many fields" in many.json()["detail"], many.text
        big = httpx.post(post, headers=bearer(token), timeout=30, data={"description": "x" * 300_000},
                         files={"file": ("s.csv", csv, "text/csv")})
        assert big.status_code == 413 and "'description' is over 256 KiB" in big.json()["detail"], big.text
        boundary = "b0und4ry"
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"s.csv\"\r\n"
                f"Content-Type: text/csv\r\n\r\n").encode() + csv + f"\r\n--{boundary}--\r\n".encode()
        odd = httpx.post(post, timeout=30, content=body, headers={
            **bearer(token), "Content-Type": f"multipart/form-data; boundary={boundary}; charset=no-such"})
        assert odd.status_code in (200, 201, 202), odd.text
    with leaderboard.db.reader() as session:
        assert session.query(Submission).count() == 1  # only the well-formed upload
