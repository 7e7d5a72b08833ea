"""The web pages in headless Chromium: upload a file, see the score and the board, see an error.

Skipped when Chromium or Playwright is missing, except under CI where they must run.
"""

from __future__ import annotations

import pytest
from lb_support import LiveServer, init_competition

from competition.scoring import load_solution, score_submission
from leaderboard.app import create_app
from leaderboard.scorer import Scorer
from leaderboard.settings import Settings

pytestmark = pytest.mark.slow


@pytest.fixture
def site(sqlite_url, tiny):
    leaderboard = init_competition(sqlite_url, tiny, daily_limit=5, name="Browser cup")
    _, token = leaderboard.add_team("Alpha")
    evil, _ = leaderboard.add_team('<script>window.pwned = 1</script>')
    scorer = Scorer(load_solution(tiny.solution_csv))
    leaderboard.submit(evil, tiny.submission(8, noise=3.0), "x.csv", scorer.score, scorer_version="v")
    with LiveServer(create_app(Settings(db_url=sqlite_url, board_cache_s=0.0))) as server:
        yield server.url, token
    leaderboard.db.dispose()


def test_upload_score_board_and_error_in_a_browser(browser, site, tiny, tmp_path):
    url, token = site
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_bytes(tiny.submission(3))
    bad.write_bytes(tiny.invalid_submission())
    expected = score_submission(good, load_solution(tiny.solution_csv))

    page = browser.new_page()
    page.goto(url + "/")
    assert "window.pwned" in page.inner_text("#board")  # shown as text...
    assert page.evaluate("window.pwned") is None  # ...never run

    page.goto(url + "/submit")
    page.fill("input[name=token]", token)
    page.set_input_files("input[name=file]", str(good))
    page.click("button[type=submit]")
    assert page.inner_text("#public-score") == f"{expected.public:.4f}"

    page.click("text=Leaderboard")
    rows = page.inner_text("#board tbody")
    assert "Alpha" in rows and f"{expected.public:.4f}" in rows

    page.goto(url + "/submit")  # the token is remembered: no need to type it again
    assert "Submitting as" in page.content()
    page.set_input_files("input[name=file]", str(bad))
    page.click("button[type=submit]")
    error = page.inner_text("#error")
    assert "bad.csv: line 1: the header is 'Id,Top'" in error and "INVALID submission" in error

    page.goto(url + "/mine")
    history = page.inner_text("#history")
    assert "invalid" in history and "scored" in history and "good.csv" in history
    page.click("#history button:has-text('Select')")
    assert "selected" in page.inner_text("#history")

    page.goto(url + "/rules")
    assert "5 scored submissions per team per UTC day" in page.inner_text("main")
    page.close()


def test_wrong_token_in_the_form_is_explained(browser, site, tiny, tmp_path):
    url, _ = site
    good = tmp_path / "good.csv"
    good.write_bytes(tiny.submission(3))
    page = browser.new_page()
    page.goto(url + "/submit")
    page.fill("input[name=token]", "1.not-the-token")
    page.set_input_files("input[name=file]", str(good))
    page.click("button[type=submit]")
    assert "team token is not valid" in page.inner_text("#error")
    page.close()
