"""What a Kaggle competitor expects of the pages (issue 12), checked in headless Chromium on the DOM.

Submission history (description, per-collection public scores, download, newest first, pages),
local times and the deadline countdown, the own team highlighted, a team page, which submissions
count when none are selected, the shake-up after the reveal, and no horizontal overflow at 390 px.
The API and command-line sides (description, download, the schema version) run through TestClient.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from lb_support import LiveServer, assert_fits_width, bearer, form_post, init_competition, upload
from sqlalchemy import text

from competition.cli import main
from competition.scoring import load_solution, score_submission
from leaderboard.app import create_app
from leaderboard.boards import private_board, public_board
from leaderboard.database import Database
from leaderboard.errors import NotInitialised
from leaderboard.models import SCHEMA_VERSION, utcnow
from leaderboard.scorer import Scorer
from leaderboard.service import Leaderboard
from leaderboard.settings import Settings

TOKYO = ZoneInfo("Asia/Tokyo")
DEADLINE = (utcnow() + timedelta(days=3, hours=5)).replace(microsecond=0, second=0)


# ---------------------------------------------------------------------------------------------
# API and command line


def test_description_and_download_through_the_api(client, leaderboard, tiny):
    token = leaderboard.add_team("Alpha")[1]
    content = tiny.submission(1)
    answer = client.post("/api/submissions", headers=bearer(token), data={"description": "GNN\nv2 \x1b  run"},
                         files={"file": ("a.csv", content, "text/csv")})
    assert answer.status_code == 201 and answer.json()["description"] == "GNN v2 run"
    sub_id = answer.json()["id"]
    got = client.get(f"/api/submissions/{sub_id}/file", headers=bearer(token))
    assert got.status_code == 200 and got.content == content
    assert got.headers["content-disposition"].startswith('attachment; filename="a.csv"')
    other = leaderboard.add_team("Beta")[1]
    assert client.get(f"/api/submissions/{sub_id}/file", headers=bearer(other)).status_code == 404
    assert client.get(f"/api/submissions/{sub_id}/file").status_code == 401
    assert client.get("/api/submissions/99999999999/file", headers=bearer(token)).status_code == 404
    bad = upload(client, token, tiny.invalid_submission() + b"x" * 5000, "bad.csv").json()["submission_id"]
    part = client.get(f"/api/submissions/{bad}/file", headers=bearer(token))
    assert len(part.content) == 1024 and "first-1024-bytes-of-bad.csv" in part.headers["content-disposition"]


def test_submit_with_a_description_from_the_command_line(leaderboard, settings, tiny, tmp_path, capsys):
    token = leaderboard.add_team("Alpha")[1]
    sub = tmp_path / "s.csv"
    sub.write_bytes(tiny.submission(2))
    with LiveServer(create_app(settings)) as server:
        code = main(["submit", str(sub), "--server", server.url, "--token", token, "-m",
                     "lightgbm, 500 trees"])
    out = capsys.readouterr().out
    assert code == 0 and "Description: lightgbm, 500 trees" in out
    assert leaderboard.submissions_of(1, private_visible=False)[0]["description"] == "lightgbm, 500 trees"


def test_a_database_of_another_schema_version_is_refused_naming_both(sqlite_url, tiny):
    lb = init_competition(sqlite_url, tiny)
    with lb.db.writer() as session:
        session.execute(text("UPDATE competition SET schema_version = 99"))
    with pytest.raises(NotInitialised, match=f"schema version 99, this kit reads {SCHEMA_VERSION}"):
        Leaderboard(Database(sqlite_url)).config()
    lb.db.dispose()


def test_final_submissions_are_shown_before_the_deadline(client, leaderboard, tiny):
    token = leaderboard.add_team("Alpha")[1]
    ids = [upload(client, token, tiny.submission(seed, noise=1.5)).json()["id"] for seed in range(3)]
    publics = {s["id"]: s["public_score"] for s in leaderboard.submissions_of(1, private_visible=False)}
    best_two = sorted(ids, key=lambda i: (-publics[i], i))[:2]
    form_post(client, "/mine", data={"token": token})
    page = client.get("/mine").text
    note = re.search(r'<p id="final-note">(.*?)</p>', page, re.S).group(1)
    assert "You selected none, so your 2 best public submissions" in note
    assert sorted(int(i) for i in re.findall(r"#(\d+)", note)) == sorted(best_two)
    form_post(client, f"/mine/{ids[0]}/select")
    note = re.search(r'<p id="final-note">(.*?)</p>', client.get("/mine").text, re.S).group(1)
    assert "Your selected submissions" in note and [int(i) for i in re.findall(r"#(\d+)", note)] == [ids[0]]


# ---------------------------------------------------------------------------------------------
# In Chromium

@pytest.fixture
def cup(sqlite_url, tiny):
    """Three teams with scored submissions; Alpha has many (pages of history)."""
    leaderboard = init_competition(sqlite_url, tiny, daily_limit=40, name="Kaggle-like cup",
                                   deadline=DEADLINE)
    scorer = Scorer(load_solution(tiny.solution_csv))
    tokens = {}
    for name in ("Alpha", "Beta", "A team with a rather long name that goes on and on"):
        team, tokens[name] = leaderboard.add_team(name)
    alpha = leaderboard.authenticate(tokens["Alpha"])
    for seed in range(23):
        leaderboard.submit(alpha, tiny.submission(seed, noise=2.0), f"alpha-{seed}.csv", scorer.score,
                           scorer_version="v", description=f"try {seed}")
    for seed, name in ((30, "Beta"), (31, "A team with a rather long name that goes on and on")):
        leaderboard.submit(leaderboard.authenticate(tokens[name]), tiny.submission(seed, noise=1.0), "b.csv",
                           scorer.score, scorer_version="v")
    with LiveServer(create_app(Settings(db_url=sqlite_url, board_cache_s=0.0))) as server:
        yield server.url, tokens, leaderboard
    leaderboard.db.dispose()


def _sign_in(page, url: str, token: str) -> None:
    page.goto(url + "/mine")
    page.fill("input[name=token]", token)
    page.click("form[action='/mine'] button[type=submit]")


@pytest.mark.slow
def test_history_description_collections_download_and_pages(browser, cup, tiny, tmp_path):
    url, tokens, leaderboard = cup
    page = browser.new_page(accept_downloads=True)
    _sign_in(page, url, tokens["Alpha"])
    good = tmp_path / "newest.csv"
    good.write_bytes(tiny.submission(99))
    page.goto(url + "/submit")
    page.set_input_files("input[name=file]", str(good))
    page.fill("input[name=description]", "ensemble of <b>three</b>")
    page.click("form[action='/submit'] button[type=submit]")
    assert page.inner_text("#public-score")

    page.goto(url + "/mine")
    ids = [int(t) for t in page.locator("#history > tbody > tr[id^=sub-] > td:first-child").all_inner_texts()]
    assert len(ids) == 20 and ids == sorted(ids, reverse=True)  # newest first, one page of 20
    newest = page.locator(f"#sub-{ids[0]}")
    assert newest.locator(".description").inner_text() == "ensemble of <b>three</b>"  # as text
    assert newest.locator("td.public table.collections").is_hidden()
    newest.locator("td.public summary").click()
    expected = score_submission(good, load_solution(tiny.solution_csv))
    rows = newest.locator("td.public table.collections tr").all_inner_texts()
    assert len(rows) == len(expected.public_collections)
    for name, value in expected.public_collections.items():
        assert f"{name}\t{value:.4f}" in rows
    with page.expect_download() as info:
        newest.locator("td.file a").click()
    assert info.value.suggested_filename == "newest.csv"
    assert Path(info.value.path()).read_bytes() == good.read_bytes()

    assert "Page 1 of 2 (24 submissions)" in page.inner_text("#pages")
    page.click("#pages a[rel=next]")
    older = [int(t)
             for t in page.locator("#history > tbody > tr[id^=sub-] > td:first-child").all_inner_texts()]
    assert len(older) == 4 and max(older) < min(ids)
    page.close()


@pytest.mark.slow
def test_local_times_and_the_deadline_countdown(browser, cup):
    url, _, _ = cup
    context = browser.new_context(timezone_id="Asia/Tokyo", locale="en-GB")
    page = context.new_page()
    page.goto(url + "/")
    deadline = page.locator("#deadline time")
    local = DEADLINE.replace(tzinfo=UTC).astimezone(TOKYO)
    assert deadline.inner_text().startswith(local.strftime("%Y-%m-%d %H:%M"))
    assert deadline.get_attribute("title") == DEADLINE.isoformat().replace("T", " ") + " UTC"
    countdown = page.locator("[data-countdown]").inner_text()
    assert re.fullmatch(r"3 d (4|5) h \d+ min left", countdown), countdown
    board_time = page.locator("#board time").first
    utc = datetime.fromisoformat(board_time.get_attribute("title").removesuffix(" UTC")).replace(tzinfo=UTC)
    assert board_time.inner_text().startswith(utc.astimezone(TOKYO).strftime("%Y-%m-%d %H:%M"))
    context.close()


@pytest.mark.slow
def test_own_team_is_highlighted_and_team_page(browser, cup):
    url, tokens, leaderboard = cup
    page = browser.new_page()
    page.goto(url + "/")
    assert page.locator("#board tr.own").count() == 0  # nobody signed in
    _sign_in(page, url, tokens["Beta"])
    page.goto(url + "/")
    own = page.locator("#board tr.own")
    assert own.count() == 1 and "Beta" in own.inner_text() and own.get_attribute("aria-current") == "true"
    assert page.inner_text("#signed-in-team") == "Beta"

    page.click("#board a:has-text('Alpha')")
    assert page.inner_text("#team-name") == "Alpha"
    board = {e.team: e for e in public_board(leaderboard.db)}
    assert page.inner_text("#public-rank") == str(board["Alpha"].rank)
    assert page.inner_text("#best-public") == f"{board['Alpha'].score:.4f}"
    assert page.inner_text("#entries") == "23"
    # Before the close, as on Kaggle: best public score and entries, not the team's history.
    assert page.locator("#team-history").count() == 0 and page.locator("#history-hidden").count() == 1
    assert "alpha-" not in page.content() and "try 1" not in page.content()  # files and notes stay private
    assert page.locator("#private-rank").count() == 0
    page.close()


@pytest.mark.slow
def test_after_the_reveal_public_and_private_rank_side_by_side(browser, cup):
    url, tokens, leaderboard = cup
    leaderboard.reveal()
    public = {e.team: e.rank for e in public_board(leaderboard.db)}
    private = private_board(leaderboard.db, 2)
    page = browser.new_page()
    page.goto(url + "/?board=private")
    rows = page.locator("#board > tbody > tr")
    assert rows.count() == len(private)
    for i, entry in enumerate(private):
        row = rows.nth(i)
        assert row.locator(".public-rank").inner_text() == str(public[entry.team])
        change = public[entry.team] - entry.rank
        shown = row.locator(".shake").inner_text()
        assert shown == ("=" if change == 0 else f"▲ {change}" if change > 0 else f"▼ {-change}")
    first = rows.nth(0)
    first.locator("summary").click()
    cells = first.locator("table.collections tr").all_inner_texts()
    assert cells == [f"{k}\t{v:.4f}" for k, v in private[0].collections.items()]

    page.goto(url + f"/teams/{private[0].team_id}")
    assert page.inner_text("#private-rank") == "1"
    assert page.locator("#private-collections tbody tr").count() == len(private[0].collections)
    _sign_in(page, url, tokens["Alpha"])
    assert page.locator("#history td.private summary").count() > 0
    assert ("closed by the host" in page.inner_text("#closed")
            and page.locator("nav a[href='/submit']").count() == 0)
    page.close()


@pytest.mark.slow
@pytest.mark.parametrize("revealed", [False, True])
def test_no_horizontal_overflow_at_390px(browser, cup, revealed):
    url, tokens, leaderboard = cup
    if revealed:
        leaderboard.reveal()
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    _sign_in(page, url, tokens["A team with a rather long name that goes on and on"])
    paths = ["/", "/submit", "/mine", "/rules", "/docs", "/teams/1", "/teams/3", "/no-such-page",
             "/mine?page=2"]
    paths += ["/?board=private"] if revealed else []
    for path in paths:
        page.goto(url + path)
        assert_fits_width(page, path)
        # Every button and link within reach.
        beyond = page.evaluate("[...document.querySelectorAll('button, a, input')].filter(e => {"
                               "const r = e.getBoundingClientRect(); return r.width && r.right > 391})"
                               ".map(e => e.outerHTML.slice(0, 80))")
        assert beyond == [], f"{path}: {beyond} out of reach"
    context.close()
