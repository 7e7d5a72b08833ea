"""The HTTP API: uploads, limits, boards, selection, refusals and errors, through FastAPI's TestClient."""

from __future__ import annotations

from datetime import timedelta

import pytest
from lb_support import bearer, upload

from competition.scoring import load_solution, score_submission
from leaderboard.models import FAILED, RECEIVED, Submission, utcnow
from leaderboard.service import FAILED_MESSAGE, STUCK_MESSAGE, TIMEOUT_MESSAGE


@pytest.fixture
def team(leaderboard):
    return leaderboard.add_team("Alpha")[1]


@pytest.fixture
def other_team(leaderboard):
    return leaderboard.add_team("Beta")[1]


def test_health_and_competition_info(client):
    health = client.get("/health")
    assert health.status_code == 200 and health.json()["status"] == "ok"
    info = client.get("/api/competition").json()
    assert info["daily_limit"] == 3 and info["max_selected"] == 2
    assert info["closed"] is False and info["private_board_visible"] is False
    assert info["max_upload_bytes"] == 64 * 1024
    assert client.get("/openapi.json").status_code == 200


def test_upload_is_scored_with_the_kits_scorer(client, team, tiny):
    content = tiny.submission(seed=1)
    answer = upload(client, team, content, "my<sub>.csv")
    assert answer.status_code == 201, answer.text
    body = answer.json()
    expected = score_submission(content, load_solution(tiny.solution_csv))
    assert body["status"] == "scored"
    assert body["public_score"] == expected.public  # same number, full precision
    assert body["public_collections"] == pytest.approx(expected.public_collections)
    assert body["file_name"] == "my<sub>.csv"
    assert body["remaining_today"] == 2 and body["daily_limit"] == 3
    assert body["resets_at"].endswith("T00:00:00Z")
    assert not {"private_score", "private_collections", "score", "private"} & body.keys()


def test_invalid_file_gets_the_validators_message_and_does_not_count(client, team, tiny):
    answer = upload(client, team, tiny.invalid_submission(), "bad.csv")
    assert answer.status_code == 422
    body = answer.json()
    assert "bad.csv: line 1: the header is 'Id,Top'" in body["detail"]
    assert body["status"] == "invalid"
    assert {p["rule"] for p in body["problems"]} == {"header", "missing-id"}
    mine = client.get("/api/submissions/mine", headers=bearer(team)).json()
    assert mine["remaining_today"] == 3
    assert mine["submissions"][0]["status"] == "invalid"
    assert "INVALID submission" in mine["submissions"][0]["error"]


@pytest.mark.parametrize("headers", [
    {},
    {"Authorization": "Bearer nonsense"},
    {"Authorization": "Bearer 1.wrong-secret"},
    {"Authorization": "Bearer 99.wrong-secret"},
    {"Authorization": "Basic dXNlcjpwYXNz"},
])
def test_bad_or_missing_token_is_401(client, team, tiny, headers):
    answer = client.post("/api/submissions", headers=headers,
                         files={"file": ("s.csv", tiny.submission(), "text/csv")})
    assert answer.status_code == 401
    assert "token" in answer.json()["detail"]
    assert client.get("/api/submissions/mine", headers=headers).status_code == 401


def test_daily_limit_429_with_remaining_and_reset(client, team, tiny):
    for seed in range(3):
        assert upload(client, team, tiny.submission(seed)).status_code == 201
    refused = upload(client, team, tiny.submission(9))
    assert refused.status_code == 429
    body = refused.json()
    assert body["remaining_today"] == 0 and body["daily_limit"] == 3
    assert body["resets_at"].endswith("T00:00:00Z")
    assert "Daily limit reached: 3 of 3" in body["detail"]
    retry_after = int(refused.headers["Retry-After"])
    assert 0 < retry_after <= 24 * 3600


def test_limit_is_per_utc_day(leaderboard, team, tiny):
    me = leaderboard.authenticate(team)
    scorer = _scorer(tiny)
    day1 = utcnow().replace(hour=23, minute=59, second=0)
    for seed in range(3):
        leaderboard.submit(me, tiny.submission(seed), "s.csv", scorer.score, scorer_version="v", now=day1)
    with pytest.raises(Exception, match="Daily limit reached"):
        leaderboard.submit(me, tiny.submission(5), "s.csv", scorer.score, scorer_version="v", now=day1)
    day2 = day1 + timedelta(minutes=2)
    answer = leaderboard.submit(me, tiny.submission(5), "s.csv", scorer.score, scorer_version="v", now=day2)
    assert answer["remaining_today"] == 2


def _scorer(tiny):
    from leaderboard.scorer import Scorer

    return Scorer(load_solution(tiny.solution_csv), timeout_s=30)


def test_public_board_ranks_best_score_and_breaks_ties_by_time(client, team, other_team, tiny):
    perfect = tiny.submission()
    assert upload(client, team, tiny.submission(3, noise=2.0)).status_code == 201
    assert upload(client, other_team, perfect).status_code == 201
    assert upload(client, team, perfect).status_code == 201  # same score, later: Beta stays first
    board = client.get("/api/leaderboard").json()
    assert board["board"] == "public"
    assert [(e["rank"], e["team"], e["entries"]) for e in board["entries"]] == [(1, "Beta", 1),
                                                                                (2, "Alpha", 2)]
    assert board["entries"][0]["score"] == board["entries"][1]["score"] == 1.0


def test_private_board_only_after_reveal_then_uploads_close(client, leaderboard, team, tiny):
    assert upload(client, team, tiny.submission(1)).status_code == 201
    hidden = client.get("/api/leaderboard", params={"board": "private"})
    assert hidden.status_code == 403 and "after the deadline" in hidden.json()["detail"]
    leaderboard.reveal()
    shown = client.get("/api/leaderboard", params={"board": "private"}).json()
    expected = score_submission(tiny.submission(1), load_solution(tiny.solution_csv))
    assert shown["entries"][0]["score"] == expected.private
    mine = client.get("/api/submissions/mine", headers=bearer(team)).json()
    assert mine["submissions"][0]["private_score"] == expected.private
    closed = upload(client, team, tiny.submission(2))
    assert closed.status_code == 403 and "closed" in closed.json()["detail"]


def test_deadline_closes_uploads_and_opens_the_private_board(client, leaderboard, team, tiny):
    leaderboard.configure(deadline=utcnow() - timedelta(minutes=1))
    refused = upload(client, team, tiny.submission(1))
    assert refused.status_code == 403 and "deadline passed" in refused.json()["detail"]
    assert client.get("/api/leaderboard", params={"board": "private"}).status_code == 200


def test_selection_rules(client, team, other_team, tiny):
    invalid_id = upload(client, team, tiny.invalid_submission()).json()["submission_id"]
    ids = [upload(client, team, tiny.submission(seed)).json()["id"] for seed in range(3)]
    for sub_id in ids[:2]:
        answer = client.post(f"/api/submissions/{sub_id}/select", headers=bearer(team))
        assert answer.status_code == 200 and answer.json()["selected"] is True
    too_many = client.post(f"/api/submissions/{ids[2]}/select", headers=bearer(team))
    assert too_many.status_code == 409 and "unselect one first" in too_many.json()["detail"]
    assert client.post(f"/api/submissions/{ids[0]}/unselect", headers=bearer(team)).status_code == 200
    assert client.post(f"/api/submissions/{ids[2]}/select", headers=bearer(team)).status_code == 200
    not_scored = client.post(f"/api/submissions/{invalid_id}/select", headers=bearer(team))
    assert not_scored.status_code == 409 and "invalid" in not_scored.json()["detail"]
    foreign = client.post(f"/api/submissions/{ids[0]}/select", headers=bearer(other_team))
    assert foreign.status_code == 404
    selected = [s["id"]
                for s in client.get("/api/submissions/mine", headers=bearer(team)).json()["submissions"]
                if s["selected"]]
    assert sorted(selected) == sorted([ids[1], ids[2]])


def test_upload_over_the_cap_is_413(client, team):
    big = b"ID,TopConfigs\n" + b"x" * (200 * 1024)
    answer = upload(client, team, big)
    assert answer.status_code == 413 and "limit" in answer.json()["detail"]


def test_streamed_upload_over_the_cap_is_refused_before_the_end(client, team):
    def body():
        # A multipart body without Content-Length, sent in chunks; the server must stop reading early.
        yield b'--b\r\nContent-Disposition: form-data; name="file"; filename="s.csv"\r\n\r\n'
        for _ in range(100):
            yield b"0" * 65536
        yield b"\r\n--b--\r\n"

    answer = client.post("/api/submissions",
                         headers={**bearer(team), "Content-Type": "multipart/form-data; boundary=b"},
                         content=body())
    assert answer.status_code == 413


def test_live_server_answers_413_before_a_chunked_body_ends(leaderboard, settings, team):
    import select
    import socket

    from lb_support import LiveServer

    from leaderboard.app import create_app

    with (LiveServer(create_app(settings)) as server,
          socket.create_connection(("127.0.0.1", server.port)) as sock):
        sock.sendall(
            b"POST /api/submissions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
            b"Authorization: Bearer " + team.encode() + b"\r\n"
            b"Content-Type: multipart/form-data; boundary=b\r\n\r\n"
        )
        head = b'--b\r\nContent-Disposition: form-data; name="file"; filename="s.csv"\r\n\r\n'
        sock.sendall(b"%x\r\n%s\r\n" % (len(head), head))
        chunk = b"0" * 16384
        sent, answer = 0, b""
        for _ in range(2000):  # up to 32 MiB; the cap is 64 KiB plus 1 MiB of multipart slack
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:
                answer = sock.recv(65536)
                break
            try:
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except (BrokenPipeError, ConnectionResetError):
                answer = sock.recv(65536)
                break
            sent += len(chunk)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert sent < 2000 * len(chunk)  # answered long before the body's end (kernel buffers absorb some MiB)


def test_file_just_over_the_limit_inside_the_slack_is_413(client, team):
    # Under the request cap (limit + multipart slack) but over the file limit itself.
    answer = upload(client, team, b"x" * (64 * 1024 + 10))
    assert answer.status_code == 413


def test_missing_file_field_is_a_short_422_without_echo(client, team):
    answer = client.post("/api/submissions", headers=bearer(team), data={"other": "SECRET-ECHO"})
    assert answer.status_code == 422
    assert "file" in answer.json()["detail"] and "SECRET-ECHO" not in answer.text


def test_unexpected_error_is_a_generic_500_without_traceback(client, team, tiny, caplog):
    def explode(*args, **kwargs):
        raise RuntimeError("internal detail /srv/private/solution.csv")

    client.app.state.leaderboard.quota = explode
    answer = upload(client, team, tiny.submission(1))
    assert answer.status_code == 500
    assert "Internal error" in answer.json()["detail"]
    assert "solution.csv" not in answer.text and "Traceback" not in answer.text
    assert "internal detail" in caplog.text  # logged host-side


def test_scorer_fault_is_visibly_failed_and_not_counted(client, team, tiny):
    def broken(content, name):
        raise ValueError("bug in the metric")

    client.app.state.scorer.score = broken
    answer = upload(client, team, tiny.submission(1))
    assert answer.status_code == 500
    body = answer.json()
    assert body["status"] == FAILED and body["detail"] == FAILED_MESSAGE and "bug" not in answer.text
    mine = client.get("/api/submissions/mine", headers=bearer(team)).json()
    assert mine["remaining_today"] == 3 and mine["submissions"][0]["status"] == FAILED


def test_scoring_timeout_is_visibly_failed_and_not_counted(client, team, tiny, monkeypatch):
    import threading

    from leaderboard import scorer as scorer_module

    release = threading.Event()
    real = scorer_module.score_now

    def stuck(content, solution, name):
        release.wait(10)
        return real(content, solution, name)

    monkeypatch.setattr(scorer_module, "score_now", stuck)
    client.app.state.scorer.timeout_s = 0.2
    try:
        answer = upload(client, team, tiny.submission(1))
    finally:
        release.set()
    assert answer.status_code == 504
    assert answer.json()["detail"] == TIMEOUT_MESSAGE
    mine = client.get("/api/submissions/mine", headers=bearer(team)).json()
    assert mine["remaining_today"] == 3 and mine["submissions"][0]["status"] == FAILED


def test_submission_swept_while_scoring_is_never_counted(client, leaderboard, team, tiny):
    scorer = client.app.state.scorer
    original = scorer.score

    def score_then_server_deems_it_dead(content, name):
        report = original(content, name)
        leaderboard.sweep_stuck(utcnow() + timedelta(hours=1))  # another process swept it meanwhile
        return report

    scorer.score = score_then_server_deems_it_dead
    answer = upload(client, team, tiny.submission(1))
    assert answer.status_code == 500 and answer.json()["detail"] == STUCK_MESSAGE
    mine = client.get("/api/submissions/mine", headers=bearer(team)).json()
    assert mine["remaining_today"] == 3
    assert client.get("/api/leaderboard").json()["entries"] == []


def test_stuck_submission_is_marked_failed_at_startup(leaderboard, settings, team):
    from fastapi.testclient import TestClient

    from leaderboard.app import create_app

    me = leaderboard.authenticate(team)
    with leaderboard.db.writer() as session:
        for minutes_ago in (30, 0):  # a dead one, and one another live process is scoring right now
            session.add(Submission(team_id=me.id, created_at=utcnow() - timedelta(minutes=minutes_ago),
                                   file_name="s.csv", size_bytes=1, sha256="0" * 64, content=b"",
                                   status=RECEIVED))
    with TestClient(create_app(settings)) as client:
        subs = client.get("/api/submissions/mine", headers=bearer(team)).json()["submissions"]
    assert [s["status"] for s in subs] == [RECEIVED, FAILED]  # newest first
    assert subs[1]["error"] == STUCK_MESSAGE
    assert leaderboard.quota(me.id, 3, utcnow()).used == 0


def test_disqualified_team_is_off_the_board_and_refused(client, leaderboard, team, other_team, tiny):
    upload(client, team, tiny.submission(1))
    upload(client, other_team, tiny.submission(2))
    leaderboard.disqualify("Alpha", reason="shared accounts")
    assert [e["team"] for e in client.get("/api/leaderboard").json()["entries"]] == ["Beta"]
    refused = upload(client, team, tiny.submission(3))
    assert refused.status_code == 403 and "disqualified" in refused.json()["detail"]
    leaderboard.disqualify("Alpha", undo=True)
    assert len(client.get("/api/leaderboard").json()["entries"]) == 2
