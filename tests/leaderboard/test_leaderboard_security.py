"""Regression tests for the holes a security review of the leaderboard found (issue 12, items 1-7).

Uncounted uploads have their own daily cap and are not stored whole; every state-changing form
needs a CSRF token and this site's Origin; a token never switches teams silently; out-of-range ids
are 401/404 on SQLite and PostgreSQL; the stored solution is verified at start; pages link with
relative URLs; /docs loads nothing from other sites; error pages have the site's navigation.
"""

from __future__ import annotations

import re
import socket
import threading
import zlib
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from lb_support import LiveServer, bearer, form_fields, form_post, init_competition, upload

from competition.cli import main
from leaderboard.app import create_app
from leaderboard.csrf import CSRF_COOKIE
from leaderboard.errors import SolutionTampered
from leaderboard.models import CompetitionRow, DailyQuota, Submission, utcnow
from leaderboard.routers.pages import TOKEN_COOKIE
from leaderboard.service import KEPT_PREFIX_BYTES
from leaderboard.settings import Settings


def _app(settings: Settings, **changes) -> TestClient:
    from dataclasses import replace

    return TestClient(create_app(replace(settings, **changes)), raise_server_exceptions=False)


def _rows(leaderboard) -> list[Submission]:
    with leaderboard.db.reader() as session:
        return list(session.query(Submission).order_by(Submission.id))


# ---------------------------------------------------------------------------------------------
# 1. Uploads that do not count: a daily cap of their own, stored only in part; a storage cap


def test_uncounted_uploads_have_a_daily_cap_answered_429(leaderboard, settings, tiny):
    token = leaderboard.add_team("Alpha")[1]
    with _app(settings, max_uncounted_per_day=2) as client:
        for _ in range(2):
            assert upload(client, token, tiny.invalid_submission()).status_code == 422
        refused = upload(client, token, tiny.submission(1))  # even a valid file: the cap is reached
        assert refused.status_code == 429
        body = refused.json()
        assert ("Too many uploads that did not count today" in body["detail"]
                and "tpugraphs validate" in body["detail"])
        assert body["uncounted_today"] == 2 and body["max_uncounted_per_day"] == 2
        assert 0 < int(refused.headers["Retry-After"]) <= 24 * 3600
        assert len(_rows(leaderboard)) == 2  # the refused upload was neither stored nor scored
        with leaderboard.db.reader() as session:
            assert session.query(DailyQuota).count() == 0  # and nothing counted toward the daily limit
        page = form_post(client, "/submit", data={"token": token},
                         files={"file": ("s.csv", tiny.submission(2))})
        assert page.status_code == 429 and "Too many uploads that did not count" in page.text
        rules = client.get("/rules").text
        assert "At most 2 uploads per team per UTC day may end invalid" in rules


def test_uncounted_cap_is_per_utc_day(leaderboard, tiny):
    from leaderboard.scorer import Scorer

    team = leaderboard.add_team("Alpha")[0]
    scorer = Scorer(leaderboard.load_solution())
    day1 = utcnow().replace(hour=23, minute=58)
    with pytest.raises(Exception, match="line 1"):
        leaderboard.submit(team, tiny.invalid_submission(), "b.csv", scorer.score, scorer_version="v",
                           now=day1, max_uncounted_per_day=1)
    with pytest.raises(Exception, match="Too many uploads"):
        leaderboard.submit(team, tiny.submission(1), "s.csv", scorer.score, scorer_version="v", now=day1,
                           max_uncounted_per_day=1)
    answer = leaderboard.submit(team, tiny.submission(1), "s.csv", scorer.score, scorer_version="v",
                                now=day1 + timedelta(minutes=3), max_uncounted_per_day=1)
    assert answer["status"] == "scored"


def test_invalid_file_keeps_only_its_first_kib_and_the_problems(client, leaderboard, tiny):
    token = leaderboard.add_team("Alpha")[1]
    big = tiny.invalid_submission() + b"x" * 20_000
    answer = upload(client, token, big)
    assert answer.status_code == 422
    (row,) = _rows(leaderboard)
    with leaderboard.db.reader() as session:
        stored = zlib.decompress(session.get(Submission, row.id).content)
    assert stored == big[:KEPT_PREFIX_BYTES] and row.size_bytes == len(big)
    assert "INVALID submission" in row.error and "line 1" in row.error  # the report is kept whole


def test_team_storage_cap_refuses_with_413(leaderboard, settings, tiny):
    token = leaderboard.add_team("Alpha")[1]
    one_file = len(zlib.compress(tiny.submission(1), 1))
    with _app(settings, max_team_bytes=one_file + 10) as client:
        assert upload(client, token, tiny.submission(1)).status_code == 201
        refused = upload(client, token, tiny.submission(2))
        assert refused.status_code == 413
        assert "per team" in refused.json()["detail"] and refused.json()["max_team_bytes"] == one_file + 10
        assert len(_rows(leaderboard)) == 1
        assert "MiB of submission files per team" in client.get("/rules").text


# ---------------------------------------------------------------------------------------------
# 2. CSRF and the token login


@pytest.fixture
def teams(leaderboard):
    return leaderboard.add_team("Alpha")[1], leaderboard.add_team("Beta")[1]


@pytest.mark.parametrize("headers", [
    {},  # no Origin, no Referer
    {"Origin": "http://evil.example"},  # another site
    {"Origin": "http://lb.testserver"},  # a sibling (same-site) host
    {"Origin": "null"},  # a page that hid its origin
    {"Origin": "null", "Referer": "http://evil.example/page"},
])
def test_login_from_another_origin_is_refused(client, teams, headers):
    data, _ = form_fields(client, {"token": teams[1]})  # even with the right CSRF token
    answer = client.post("/mine", data=data, headers=headers, follow_redirects=False)
    assert answer.status_code == 403 and "did not come from this site" in answer.text
    assert TOKEN_COOKIE not in answer.headers.get("set-cookie", "")


def test_form_without_the_csrf_token_is_refused(client, teams, tiny):
    client.get("/rules")
    origin = {"Origin": "http://testserver"}
    assert client.post("/mine", data={"token": teams[0]}, headers=origin).status_code == 403
    wrong = client.post("/mine", data={"token": teams[0], "csrf": "x" * 43}, headers=origin)
    assert wrong.status_code == 403
    up = client.post("/submit", data={"token": teams[0]}, headers=origin,
                     files={"file": ("s.csv", tiny.submission(1))})
    assert up.status_code == 403
    assert client.get("/api/submissions/mine", headers=bearer(teams[0])).json()["submissions"] == []


def test_same_origin_referer_is_enough_when_origin_is_missing(client, teams):
    data, _ = form_fields(client, {"token": teams[0]})
    answer = client.post("/mine", data=data, headers={"Referer": "http://testserver/mine"},
                         follow_redirects=False)
    assert answer.status_code == 303


def test_selection_change_from_a_sibling_subdomain_is_refused(client, leaderboard, teams, tiny):
    sub_id = upload(client, teams[0], tiny.submission(1)).json()["id"]
    assert form_post(client, "/mine", data={"token": teams[0]}).status_code == 200
    assert form_post(client, f"/mine/{sub_id}/select").status_code == 200
    data, _ = form_fields(client)
    forged = client.post(f"/mine/{sub_id}/unselect", data=data, headers={"Origin": "https://x.testserver"})
    assert forged.status_code == 403
    no_token = client.post(f"/mine/{sub_id}/unselect", headers={"Origin": "http://testserver"})
    assert no_token.status_code == 403
    mine = client.get("/api/submissions/mine", headers=bearer(teams[0])).json()["submissions"]
    assert mine[0]["selected"] is True
    assert client.post("/logout", headers={"Origin": "http://evil.example"}).status_code == 403


def test_public_url_setting_names_the_accepted_origin(leaderboard, settings, teams):
    with _app(settings, public_url="https://lb.example.org") as client:
        data, _ = form_fields(client, {"token": teams[0]})
        here = client.post("/mine", data=data, headers={"Origin": "http://testserver"},
                           follow_redirects=False)
        assert here.status_code == 403  # the Host is not the public address
        ok = client.post("/mine", data=data, headers={"Origin": "https://lb.example.org"},
                         follow_redirects=False)
        assert ok.status_code == 303


def test_token_login_never_switches_teams_without_asking(client, teams):
    alpha, beta = teams
    assert form_post(client, "/mine", data={"token": alpha}).status_code == 200
    ask = form_post(client, "/mine", data={"token": beta})
    assert ask.status_code == 200 and "Switch team?" in ask.text
    assert 'id="current-team">Alpha<' in ask.text and 'id="new-team">Beta<' in ask.text
    # not switched
    assert "Signed in as" in client.get("/mine").text and ">Alpha<" in client.get("/mine").text
    done = form_post(client, "/mine/switch", data={"token": beta}, follow_redirects=False)
    assert done.status_code == 303
    assert 'id="signed-in-team" class="team">Beta<' in client.get("/").text


def test_upload_form_with_another_teams_token_is_refused(client, teams, tiny):
    alpha, beta = teams
    form_post(client, "/mine", data={"token": alpha})
    answer = form_post(client, "/submit", data={"token": beta}, files={"file": ("s.csv", tiny.submission(1))})
    assert answer.status_code == 409 and "signed in as team &#39;Alpha&#39;" in answer.text
    for token in teams:
        assert client.get("/api/submissions/mine", headers=bearer(token)).json()["submissions"] == []


def test_csrf_cookie_is_httponly_and_strict(client):
    cookie = client.get("/").headers["set-cookie"].lower()
    assert CSRF_COOKIE in cookie and "httponly" in cookie and "samesite=strict" in cookie


# ---------------------------------------------------------------------------------------------
# 3. Out-of-range ids: 401/404, never 500, on both databases

BAD_TOKENS = ["2147483648.x", "99999999999999999.x", "0.x", "-1.x", "1e3.x"]
BAD_IDS = ["2147483648", "99999999999999999999999999", "0", "-5"]


def _out_of_range_checks(client, token: str) -> None:
    for bad in BAD_TOKENS:
        answer = client.get("/api/submissions/mine", headers=bearer(bad))
        assert answer.status_code == 401, (bad, answer.text)
    for bad in BAD_IDS:
        for action in ("select", "unselect"):
            answer = client.post(f"/api/submissions/{bad}/{action}", headers=bearer(token))
            assert answer.status_code == 404, (bad, answer.text)
    form_post(client, "/mine", data={"token": token})
    for bad in BAD_IDS:
        assert form_post(client, f"/mine/{bad}/select").status_code == 404


def test_out_of_range_ids_on_sqlite(client, leaderboard, caplog):
    _out_of_range_checks(client, leaderboard.add_team("Alpha")[1])
    assert "unhandled error" not in caplog.text


@pytest.mark.slow
def test_out_of_range_ids_on_postgresql(postgres_db, tiny, caplog):
    leaderboard = init_competition(postgres_db, tiny)
    token = leaderboard.add_team("Alpha")[1]
    with TestClient(create_app(Settings(db_url=postgres_db, board_cache_s=0.0)),
                    raise_server_exceptions=False) as client:
        _out_of_range_checks(client, token)
    leaderboard.db.dispose()
    assert "unhandled error" not in caplog.text


# ---------------------------------------------------------------------------------------------
# 4. The stored solution is verified; a non-UTF-8 one and a missing database are refused


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_tampered_solution_is_refused_at_start(leaderboard, settings, capsys):
    with leaderboard.db.writer() as session:
        row = session.get(CompetitionRow, 1)
        row.solution_csv = row.solution_csv[: len(row.solution_csv) // 2]  # truncated
    with pytest.raises(SolutionTampered, match="changed or truncated"), TestClient(create_app(settings)):
        pass
    code, _, err = run(capsys, "leaderboard", "serve", "--db", settings.db_url)
    assert code == 1 and "changed or truncated" in err
    code, _, err = run(capsys, "leaderboard", "rescore", "--db", settings.db_url)
    assert code == 1 and "changed or truncated" in err


def test_non_utf8_solution_is_refused_with_a_message(tiny, tmp_path, capsys):
    bad = tmp_path / "solution.csv"
    bad.write_bytes(tiny.solution_csv.replace(b"Public", "Públic".encode("latin-1"), 1))
    url = f"sqlite:///{tmp_path / 'lb.db'}"
    code, _, err = run(capsys, "leaderboard", "init", "--db", url, "--solution", str(bad), "--data",
                       str(tiny.data_dir))
    assert code == 1 and "not UTF-8" in err and "Traceback" not in err


def test_non_utf8_stored_solution_is_refused_by_serve(leaderboard, settings, capsys):
    import hashlib

    with leaderboard.db.writer() as session:
        row = session.get(CompetitionRow, 1)
        row.solution_csv = row.solution_csv + b"\xff\n"
        row.solution_sha256 = hashlib.sha256(row.solution_csv).hexdigest()
    code, _, err = run(capsys, "leaderboard", "serve", "--db", settings.db_url)
    assert code == 1 and "not UTF-8" in err


def test_serve_on_a_missing_sqlite_file_refuses_and_creates_nothing(tmp_path, capsys):
    path = tmp_path / "typo.db"
    code, _, err = run(capsys, "leaderboard", "serve", "--db", f"sqlite:///{path}")
    assert code == 1 and "no such database file" in err
    assert not path.exists()
    with pytest.raises(Exception, match="no such database file"), \
            TestClient(create_app(Settings(db_url=f"sqlite:///{path}"))):
        pass
    assert not path.exists()


# ---------------------------------------------------------------------------------------------
# 5, 6. No Host-derived URLs; no Swagger UI from a CDN


def test_pages_never_reflect_the_host_header(client, leaderboard):
    token = leaderboard.add_team("Alpha")[1]
    form_post(client, "/mine", data={"token": token})
    for path in ("/", "/rules", "/submit", "/mine", "/docs", "/no-such-page"):
        answer = client.get(path, headers={"Host": "evil.example"})
        assert "evil.example" not in answer.text, path
        assert "evil.example" not in answer.headers.get("location", "")
    assert 'href="/static/style.css"' in client.get("/").text


def test_api_docs_are_served_without_other_sites(client):
    docs = client.get("/docs")
    text = docs.text.replace("<wbr>", "")  # paths may wrap after a slash
    assert docs.status_code == 200 and "/api/submissions" in text and "/openapi.json" in text
    scripts = re.findall(r"<script[^>]*>", docs.text)
    assert scripts == ['<script src="/static/local-time.js" defer>',
                       '<script src="/static/browser-key.js" defer>']
    assert "cdn" not in docs.text.lower()
    assert "default-src 'self'" in docs.headers["content-security-policy"]
    assert client.get("/redoc").status_code == 404
    assert client.get("/openapi.json").json()["paths"]


# ---------------------------------------------------------------------------------------------
# 7. Error pages, closed state, dropped connections, rows left "received"


def _is_site_page(answer) -> bool:
    return (answer.headers["content-type"].startswith("text/html")
            and 'href="/static/style.css"' in answer.text
            and '<a href="/mine">My submissions</a>' in answer.text)


def test_form_upload_over_the_request_cap_is_a_page_not_json(client, leaderboard, tiny):
    token = leaderboard.add_team("Alpha")[1]
    data, headers = form_fields(client, {"token": token})
    huge = b"x" * (2 * 1024 * 1024)  # past the request cap (64 KiB + 1 MiB of multipart slack)
    answer = client.post("/submit", data=data, headers=headers, files={"file": ("big.csv", huge)})
    assert answer.status_code == 413 and _is_site_page(answer)
    assert "larger than the server" in answer.text and "limit of 0.1 MiB" in answer.text
    assert "content-security-policy" in answer.headers


def test_error_pages_are_styled_with_navigation(client, leaderboard, monkeypatch):
    assert _is_site_page(missing := client.get("/no-such-page")) and missing.status_code == 404
    assert _is_site_page(wrong := client.get("/logout")) and wrong.status_code == 405
    data, headers = form_fields(client)
    bad = client.post("/submit", data=data, headers=headers)  # no file
    assert bad.status_code == 422 and _is_site_page(bad)

    def explode(*args, **kwargs):
        raise RuntimeError("internal detail")

    monkeypatch.setattr(client.app.state.board_cache, "current", explode)
    broken = client.get("/")
    assert broken.status_code == 500 and _is_site_page(broken) and "internal detail" not in broken.text


def test_closed_banner_after_an_early_reveal_and_no_uploads_offered(client, leaderboard, tiny):
    leaderboard.configure(deadline=utcnow() + timedelta(days=30))
    token = leaderboard.add_team("Alpha")[1]
    upload(client, token, tiny.submission(1))
    form_post(client, "/mine", data={"token": token})
    leaderboard.reveal()
    mine = client.get("/mine").text
    assert "closed by the host" in mine and "deadline" not in mine.split('id="closed"')[1].split("</p>")[0]
    assert 'href="/submit"' not in mine and "<button type=\"submit\">Select" not in mine
    assert "can no longer change" in mine


def test_received_rows_are_explained(client, leaderboard):
    token = leaderboard.add_team("Alpha")[1]
    team = leaderboard.authenticate(token)
    with leaderboard.db.writer() as session:
        session.add(Submission(team_id=team.id, created_at=utcnow(), file_name="s.csv", size_bytes=1,
                               sha256="0" * 64, content=b"", status="received"))
    form_post(client, "/mine", data={"token": token})
    page = client.get("/mine").text
    assert "Not scored yet" in page and "does not count toward your daily limit" in page


def _dropping_server() -> tuple[int, threading.Thread]:
    """A server that answers /api/competition, then reads an upload and closes without answering."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        for _ in range(2):
            conn, _ = listener.accept()
            with conn:
                request = conn.recv(65536)
                if request.startswith(b"GET"):
                    body = b'{"max_upload_bytes": 1000000}'
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                                 + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
                else:
                    conn.settimeout(2)
                    try:
                        while conn.recv(65536):
                            pass
                    except TimeoutError:
                        pass
        listener.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return port, thread


def test_submit_after_a_dropped_connection_says_it_may_have_counted(tiny, tmp_path, capsys):
    port, thread = _dropping_server()
    sub = tmp_path / "s.csv"
    sub.write_bytes(tiny.submission(1))
    code, _, err = run(capsys, "submit", str(sub), "--server", f"http://127.0.0.1:{port}", "--token", "1.x",
                       "--timeout", "10")
    thread.join(10)
    assert code == 1
    assert "may have reached the server" in err and "tpugraphs submit --status" in err


def test_submit_status_lists_the_teams_submissions(leaderboard, settings, tiny, capsys):
    token = leaderboard.add_team("Alpha")[1]
    with LiveServer(create_app(settings)) as server:
        sub = Path(settings.db_url.removeprefix("sqlite:///")).parent / "s.csv"
        sub.write_bytes(tiny.submission(1))
        assert run(capsys, "submit", str(sub), "--server", server.url, "--token", token)[0] == 0
        code, out, _ = run(capsys, "submit", "--status", "--server", server.url, "--token", token)
    assert (code == 0 and "Team Alpha: 2 of 3 submissions left today" in out and "scored" in out
            and "s.csv" in out)
