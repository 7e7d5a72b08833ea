"""Issue 24, items 5 and 6: one description limit everywhere, throttled token checks, no tokens in
logs, no line separators in stored names."""

from __future__ import annotations

import logging

import pytest
from lb_support import LiveServer, bearer, form_post, upload

from competition.data.remote.leaderboard_client import ServerRefused, format_status, upload_submission
from leaderboard.access_log import RedactQuery, redact_path
from leaderboard.app import create_app
from leaderboard.models import Submission
from leaderboard.service import MAX_DESCRIPTION, clean_file_name
from leaderboard.throttle import TEAM_FAILURES, TokenThrottle


def _rows(leaderboard) -> list[Submission]:
    with leaderboard.db.reader() as session:
        return list(session.query(Submission))


# ---------------------------------------------------------------------------------------------
# 5. The description limit


def test_a_description_at_the_limit_is_kept_whole(client, leaderboard, tiny):
    token = leaderboard.add_team("Alpha")[1]
    text = "d" * MAX_DESCRIPTION
    answer = client.post("/api/submissions", headers=bearer(token), data={"description": text},
                         files={"file": ("s.csv", tiny.submission(1), "text/csv")})
    assert answer.status_code == 201 and answer.json()["description"] == text


@pytest.mark.parametrize("length", [MAX_DESCRIPTION + 1, 2_000, 2_001, 50_000])
def test_a_longer_description_is_refused_naming_the_limit(client, leaderboard, tiny, length):
    token = leaderboard.add_team("Alpha")[1]
    answer = client.post("/api/submissions", headers=bearer(token), data={"description": "d" * length},
                         files={"file": ("s.csv", tiny.submission(1), "text/csv")})
    assert answer.status_code == 422
    assert answer.json()["detail"].startswith(f"The description has {length} characters; at most "
                                              f"{MAX_DESCRIPTION}")
    assert answer.json()["max_description_chars"] == MAX_DESCRIPTION
    page = form_post(client, "/submit", data={"token": token, "description": "d" * length},
                     files={"file": ("s.csv", tiny.submission(1), "text/csv")})
    assert page.status_code == 422 and f"at most {MAX_DESCRIPTION} are allowed" in page.text
    assert _rows(leaderboard) == []


def test_the_form_and_the_api_state_the_same_limit(client):
    assert f'maxlength="{MAX_DESCRIPTION}"' in client.get("/submit").text
    assert client.get("/api/competition").json()["max_description_chars"] == MAX_DESCRIPTION


def test_submit_m_refuses_a_long_description_before_uploading(leaderboard, settings, tiny, tmp_path):
    token = leaderboard.add_team("Alpha")[1]
    path = tmp_path / "s.csv"
    path.write_bytes(tiny.submission(1))
    refusal = f"has {MAX_DESCRIPTION + 1} characters; the server takes at most"
    with LiveServer(create_app(settings)) as server, pytest.raises(ServerRefused, match=refusal):
        upload_submission(server.url, token, path, description="m" * (MAX_DESCRIPTION + 1))
    assert _rows(leaderboard) == []


# ---------------------------------------------------------------------------------------------
# 6. Throttled token checks, tokens out of the log, names on one line


def test_token_guessing_on_the_api_is_throttled_and_logged_once(client, leaderboard, caplog):
    team_id = leaderboard.add_team("Alpha")[0].id
    good = leaderboard.reset_token("Alpha")[1]
    with caplog.at_level(logging.WARNING, logger="leaderboard"):
        codes = [client.get("/api/submissions/mine", headers=bearer(f"{team_id}.guess{i}")).status_code
                 for i in range(TEAM_FAILURES + 5)]
        right = client.get("/api/submissions/mine", headers=bearer(good))
    assert codes == [401] * TEAM_FAILURES + [429] * 5
    assert right.status_code == 429 and int(right.headers["Retry-After"]) >= 1  # guessing learns nothing
    assert f"Too many wrong tokens for team {team_id}" in right.json()["detail"]
    assert sum("throttling token checks" in r.getMessage() for r in caplog.records) == 1


def test_the_login_form_is_throttled_too(client, leaderboard):
    leaderboard.add_team("Alpha")
    codes = [form_post(client, "/mine", data={"token": f"1.guess{i}"}).status_code
             for i in range(TEAM_FAILURES + 2)]
    assert codes == [401] * TEAM_FAILURES + [429] * 2


def test_a_throttled_team_gets_its_budget_back_and_other_teams_and_addresses_are_not_affected():
    from leaderboard.errors import LimitReached

    now = [0.0]
    throttle = TokenThrottle(team_failures=3, address_failures=100, window_s=60.0, clock=lambda: now[0])
    for _ in range(3):
        throttle.settle(throttle.reserve("a", 1, team_exists=True), right=False)  # 3 wrong tokens for team 1
    with pytest.raises(LimitReached, match="Too many wrong tokens for team 1 from your address") as refused:
        throttle.reserve("a", 1, team_exists=True)
    assert 1 <= int(refused.value.headers["Retry-After"]) <= 21
    throttle.settle(throttle.reserve("b", 1, team_exists=True), right=True)  # another address is untouched
    throttle.settle(throttle.reserve("a", 2, team_exists=True), right=True)  # and so is another team
    now[0] += 20.0  # one failure's worth refilled
    throttle.reserve("a", 1, team_exists=True)


@pytest.mark.parametrize(("path", "logged"), [
    ("/api/submissions/mine?token=7.s3cret", "/api/submissions/mine?token=REDACTED"),
    ("/?board=private", "/?board=private"),
    ("/mine?page=2&token=7.s3cret", "/mine?page=2&token=REDACTED"),
    ("/x?7.s3cret", "/x?REDACTED"),
    ("/x?a=1&a=7.s3cret", "/x?a=REDACTED&a=REDACTED"),
    ("/health", "/health"),
])
def test_query_strings_are_redacted_in_the_access_log(path, logged):
    assert redact_path(path) == logged
    record = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
                               ("127.0.0.1:5", "GET", path, "1.1", 401), None)
    RedactQuery().filter(record)
    assert "s3cret" not in record.getMessage()


def test_serve_installs_the_redacting_filter():
    from leaderboard.actions import _log_config

    config = _log_config("info")
    assert config["handlers"]["access"]["filters"] == ["redact_query"]
    assert config["filters"]["redact_query"]["()"] == "leaderboard.access_log.RedactQuery"


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085", "\n", "\r", "\x0b", "\u200e"])
def test_line_separators_never_reach_stored_names(client, leaderboard, tiny, separator):
    assert clean_file_name(f"a{separator}b.csv") == "ab.csv"
    with pytest.raises(ValueError, match="control characters or line separators"):
        leaderboard.add_team(f"Team{separator}X")
    if separator.isascii():
        return  # an HTTP client percent-encodes ASCII controls in a multipart file name
    token = leaderboard.add_team("Alpha")[1]
    answer = upload(client, token, tiny.submission(1), name=f"sub{separator}mission.csv")
    assert answer.status_code == 201 and answer.json()["file_name"] == "submission.csv"


def test_submit_status_prints_each_submission_on_one_line():
    mine = {"team": "A", "submissions": [{"id": 1, "status": "scored", "file_name": "x\u2028y.csv",
                                          "public_score": 0.5, "submitted_at": "2026-01-01T00:00:00Z"}],
            "remaining_today": 1, "daily_limit": 5, "used_today": 4, "resets_at": "2026-01-02T00:00:00Z"}
    text = format_status(mine)
    assert "\u2028" not in text and "x?y.csv" in text


# ---------------------------------------------------------------------------------------------
# 7. Polish, checked in headless Chromium


def test_favicon_is_served(client):
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    assert client.get("/static/favicon.svg").status_code == 200
    assert '<link rel="icon" href="/static/favicon.svg"' in client.get("/").text


# For each path on /docs: the characters before each line break the browser made (must all be "/").
_BREAKS_IN_PATHS = """() => [...document.querySelectorAll('code.path')].map(code => {
  const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
  const chars = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (let i = 0; i < node.length; i++) {
      const range = document.createRange(); range.setStart(node, i); range.setEnd(node, i + 1);
      chars.push([node.data[i], range.getBoundingClientRect().top]);
    }
  }
  const before = [];
  for (let i = 1; i < chars.length; i++) if (chars[i][1] > chars[i - 1][1] + 2) before.push(chars[i - 1][0]);
  return before;
})"""


@pytest.mark.slow
def test_docs_favicon_and_headings_in_a_browser(browser, leaderboard, settings):
    with LiveServer(create_app(settings)) as server:
        context = browser.new_context(viewport={"width": 390, "height": 844})
        page = context.new_page()
        missing = []
        page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
        page.goto(server.url + "/docs")
        intro = page.inner_text("#api-intro")
        assert "`" not in intro and "Authorization: Bearer TEAM_TOKEN" in page.inner_text("#api-intro code")
        breaks = page.evaluate(_BREAKS_IN_PATHS)
        assert any(breaks), "no path wraps at 390 px: the check saw nothing"
        assert all(ch == "/" for path in breaks for ch in path), breaks
        page.goto(server.url + "/")
        assert page.inner_text("h1") == "Public leaderboard" and page.locator("#boards").count() == 0
        leaderboard.reveal()
        page.goto(server.url + "/?board=private")
        assert page.inner_text("h1") == "Leaderboard"
        assert page.locator("#boards a.current").inner_text() == "Private"
        page.wait_for_timeout(300)  # let the browser ask for an icon if it is going to
        assert missing == [], missing
        context.close()
