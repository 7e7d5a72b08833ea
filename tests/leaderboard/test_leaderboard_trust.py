"""Nothing hidden leaks before the reveal, pages escape what participants control, tokens are safe.

The leak test plays a whole competition session through the API and the pages (uploads valid,
invalid and over the limit, history, selection, boards, docs, errors), keeps every status line,
header and body, and searches them for each private score in several formats and for the
solution's runtimes, and, with the host's private-interval option on, for the bootstrap interval
each scored submission would show after the reveal. After the reveal the same search must find
the private scores and the intervals (so the search itself works).
"""

from __future__ import annotations

import logging
import zlib

import pytest
from lb_support import bearer, form_fields, form_post, upload

from competition.scoring import load_solution
from leaderboard import auth
from leaderboard.boards import private_board
from leaderboard.intervals import private_interval
from leaderboard.models import SCORED, Submission
from leaderboard.service import clean_file_name

PAGES = ["/", "/?board=private", "/rules", "/submit", "/mine", "/docs", "/openapi.json", "/health",
         "/teams/1", "/teams/2", "/static/style.css", "/no-such-page", "/api/no-such-thing"]


def _formats(value: float) -> set[str]:
    return {repr(value), f"{value:.4f}", f"{value:.5f}", f"{value:.6f}", f"{value:.8f}", f"{value:.10f}",
            str(round(value, 4)), str(round(value, 6))}


class Recorder:
    def __init__(self, client) -> None:
        self.client = client
        self.seen: list[str] = []

    def __call__(self, method: str, url: str, **kwargs):
        if method == "POST" and not url.startswith("/api/"):  # a web form, as the site's page sends it
            kwargs["data"], kwargs["headers"] = form_fields(self.client, kwargs.get("data"))
        response = self.client.request(method, url, **kwargs)
        self.seen.append(f"{response.status_code} {url}\n"
                         + "\n".join(f"{k}: {v}" for k, v in response.headers.items()) + "\n" + response.text)
        return response

    def text(self) -> str:
        return "\n".join(self.seen)


def _session(call: Recorder, tiny, alpha: str, beta: str) -> None:
    # Seeds picked so that no submission's private score equals any public figure (checked below).
    for seed in (100, 101, 102):
        call("POST", "/api/submissions", headers=bearer(alpha),
             files={"file": ("a.csv", tiny.submission(seed))})
    call("POST", "/api/submissions", headers=bearer(alpha),
         files={"file": ("over.csv", tiny.submission(103))})
    call("POST", "/api/submissions", headers=bearer(beta),
         files={"file": ("bad.csv", tiny.invalid_submission())})
    call("POST", "/api/submissions", headers=bearer(beta), files={"file": ("b.csv", tiny.submission(104))})
    call("GET", "/api/leaderboard")
    call("GET", "/api/leaderboard?board=private")
    call("GET", "/api/competition")
    call("GET", "/api/submissions/mine", headers=bearer(alpha))
    call("GET", "/api/submissions/mine", headers=bearer(beta))
    call("POST", "/api/submissions/1/select", headers=bearer(alpha))
    call("POST", "/api/submissions/1/unselect", headers=bearer(alpha))
    call("POST", "/submit", data={"token": beta}, files={"file": ("page.csv", tiny.submission(105))})
    call("POST", "/submit", data={"token": beta}, files={"file": ("page-bad.csv", tiny.invalid_submission())})
    call("POST", "/mine", data={"token": beta})
    call("POST", "/mine/5/select")
    for page in PAGES:
        call("GET", page)
    call("POST", "/logout")


def _private_values(leaderboard, *, collections: bool) -> set[str]:
    strings: set[str] = set()
    with leaderboard.db.reader() as session:
        for sub in session.query(Submission).filter_by(status=SCORED):
            extra = sub.private_collections.values() if collections else ()
            for value in (sub.private_score, sub.score, *extra):
                strings |= _formats(value)
    return strings


def _interval_values(leaderboard, tiny) -> dict[int, set[str]]:
    """Per scored submission: its private interval's bounds (overall and per collection) as text."""
    solution = load_solution(tiny.solution_csv)
    found: dict[int, set[str]] = {}
    with leaderboard.db.reader() as session:
        for sub in session.query(Submission).filter_by(status=SCORED):
            ci = private_interval(zlib.decompress(sub.content), solution)
            bounds = [ci["low"], ci["high"]] + [v for c in ci["collections"].values()
                                                for v in (c["low"], c["high"])]
            found[sub.id] = set().union(*(_formats(v) for v in bounds))
    return found


def _public_values(leaderboard) -> set[str]:
    strings: set[str] = set()
    with leaderboard.db.reader() as session:
        for sub in session.query(Submission).filter_by(status=SCORED):
            for value in (sub.public_score, *sub.public_collections.values()):
                strings |= _formats(value)
    return strings


def test_no_private_score_or_label_reaches_a_participant_before_the_reveal(client, leaderboard, tiny, caplog):
    caplog.set_level(logging.DEBUG)
    leaderboard.configure(private_intervals=True)  # the interval is one more private figure
    alpha = leaderboard.add_team("Alpha")[1]
    beta = leaderboard.add_team("Beta")[1]
    call = Recorder(client)
    _session(call, tiny, alpha, beta)
    # A per-collection private value can equal a public one by chance (tau over a dozen configs takes
    # few values); those are left out of the search, the final private scores must all be in it.
    intervals = _interval_values(leaderboard, tiny)
    private = (_private_values(leaderboard, collections=True) | set().union(*intervals.values())) \
        - _public_values(leaderboard)
    assert _private_values(leaderboard, collections=False) <= private
    seen = call.text()
    assert "Public score" in seen and "INVALID submission" in seen  # the session did happen
    leaked = sorted(s for s in private if s in seen)
    assert leaked == [], f"private scores found in responses: {leaked}"
    labels = sorted(s for s in tiny.private_strings if s in seen)
    assert labels == [], f"solution runtimes found in responses: {labels[:5]}"
    assert not [s for s in private | set(tiny.private_strings) if s in caplog.text]  # nor in the host's log

    leaderboard.reveal()
    after = Recorder(client)
    after("GET", "/api/leaderboard?board=private")
    after("GET", "/api/submissions/mine", headers=bearer(alpha))
    after("GET", "/?board=private")
    assert private & set(_formats_in(after.text(), private))  # now shown, so the search works
    shown = private_board(leaderboard.db, 2, intervals=True)
    assert shown and all(e.has_interval for e in shown)
    for entry in shown:  # each counted submission's interval bounds, now in the private board's JSON
        assert {repr(entry.interval["low"]), repr(entry.interval["high"])} <= intervals[entry.submission_id]
        assert f'"ci_low": {entry.interval["low"]!r}' in after.text()


def _formats_in(text: str, candidates: set[str]) -> list[str]:
    return [s for s in candidates if s in text]


def test_participant_text_is_escaped_in_pages(client, leaderboard, tiny):
    evil = '<script>alert("team")</script>'
    token = leaderboard.add_team(evil)[1]
    file_name = '<img src=x onerror=alert(1)>.csv'
    page = form_post(client, "/submit", data={"token": token},
                     files={"file": (file_name, tiny.submission(1))})
    assert page.status_code == 200
    assert "&lt;img src=x onerror=alert(1)&gt;.csv" in page.text and "<img src=x" not in page.text
    assert "&lt;script&gt;" in page.text and evil not in page.text
    board = client.get("/")
    assert "&lt;script&gt;alert(&#34;team&#34;)&lt;/script&gt;" in board.text and evil not in board.text
    assert "Tiny &lt;b&gt;competition&lt;/b&gt;" in board.text  # the host's title too
    form_post(client, "/submit", files={"file": (file_name, b"<script>x</script>\n")})
    history = client.get("/mine")  # the cookie set by the upload form
    assert history.status_code == 200 and "INVALID submission" in history.text
    assert "<script>x" not in history.text and "<img src=x" not in history.text
    assert "Content-Security-Policy" in history.headers and "no-store" in history.headers["Cache-Control"]


def test_token_cookie_is_httponly_and_samesite_strict(client, leaderboard):
    token = leaderboard.add_team("Alpha")[1]
    response = form_post(client, "/mine", data={"token": token}, follow_redirects=False)
    assert response.status_code == 303
    cookie = response.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    assert client.get("/api/submissions/mine").status_code == 401  # the API never takes the cookie


def test_tokens():
    token, digest = auth.new_token(12)
    assert token.startswith("12.") and len(token) > 40 and token.split(".")[1] not in digest
    assert auth.token_matches(token, digest)
    for wrong in ("", "12", "12.", "x.y", token[:-1], "13." + token.split(".")[1], token + " x"):
        assert not auth.token_matches(wrong, digest), wrong
    assert auth.bearer_token("Bearer abc") == "abc" and auth.bearer_token("token abc ") == "abc"
    assert auth.bearer_token("Basic abc") is None and auth.bearer_token(None) is None


def test_token_comparison_is_constant_time(monkeypatch):
    calls = []
    real = auth.hmac.compare_digest
    monkeypatch.setattr(auth.hmac, "compare_digest", lambda a, b: calls.append((a, b)) or real(a, b))
    token, digest = auth.new_token(1)
    auth.token_matches(token, digest)
    auth.token_matches("garbage", digest)
    assert len(calls) == 2


@pytest.mark.parametrize("name, ok", [("<b>x</b>", True), ("", False), (" ", False), ("a\nb", False),
                                      ("x" * 101, False)])
def test_team_names(leaderboard, name, ok):
    if ok:
        assert leaderboard.add_team(name)[0].name == name
    else:
        with pytest.raises(ValueError, match="team name"):
            leaderboard.add_team(name)


@pytest.mark.parametrize("raw, clean", [
    ("../../etc/passwd.csv", "passwd.csv"), ("C:\\Users\\me\\sub.csv", "sub.csv"),
    ("pa\x00ss\x1b wd.csv", "pass wd.csv"), ("", "submission.csv"), ("x" * 300, "x" * 255),
])
def test_file_names_are_cleaned(raw, clean):
    assert clean_file_name(raw) == clean


def test_uploaded_file_name_keeps_only_the_base_name(client, leaderboard, tiny):
    token = leaderboard.add_team("Alpha")[1]
    assert upload(client, token, tiny.submission(1), "../../etc/sub.csv").json()["file_name"] == "sub.csv"
