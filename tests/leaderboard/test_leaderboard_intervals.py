"""Private score intervals (issue 13, item 7): a host option; after the reveal each team's counted
submission shows its private score with a 95 % bootstrap interval over the Private test graphs.

Checked: the figures are ``competition.stats``'s (never a metric or bootstrap of the leaderboard's
own), computed once and then only read, on SQLite and PostgreSQL, in the JSON API, on the pages in
Chromium (390 px too), absent when the option is off, and nowhere before the reveal (the leak test
in test_leaderboard_trust.py searches for them too). The command line: init, configure, reveal.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from lb_support import LiveServer, assert_fits_width, bearer, init_competition, upload

import leaderboard.intervals as intervals_module
from competition.cli import main
from competition.scoring import load_solution
from competition.stats import load_graph_scores, report
from leaderboard.app import create_app
from leaderboard.boards import private_board
from leaderboard.database import Database
from leaderboard.intervals import private_interval
from leaderboard.models import Submission, utcnow
from leaderboard.scorer import Scorer
from leaderboard.service import Leaderboard
from leaderboard.settings import Settings

NOISE = 5.0  # very noisy rankings: tile graphs score differently, so the intervals have a width


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'leaderboard.db'}"
    return request.getfixturevalue("postgres_db")


def _expected(tiny, content: bytes) -> dict:
    """The interval straight from the kit's statistics, as ``tpugraphs report --usage Private`` gives it."""
    result = report(load_graph_scores(content, load_solution(tiny.solution_csv), usage="Private"),
                    draws=2000, seed=0, confidence=0.95)
    return result.to_json_dict()


def _play(leaderboard: Leaderboard, tiny) -> dict[str, bytes]:
    """Three teams, two submissions each; returns the content of every submission by id."""
    scorer = Scorer(load_solution(tiny.solution_csv))
    contents = {}
    for t, name in enumerate(("Alpha", "Beta", "Gamma")):
        team = leaderboard.authenticate(leaderboard.add_team(name)[1])
        for k in range(2):
            content = tiny.submission(10 * t + k, noise=NOISE)
            result = leaderboard.submit(team, content, f"{name}-{k}.csv", scorer.score, scorer_version="v")
            contents[result["id"]] = content
    return contents


def _stored(leaderboard: Leaderboard) -> dict[int, dict | None]:
    with leaderboard.db.reader() as session:
        return {s.id: s.private_interval for s in session.query(Submission)}


def test_the_interval_is_the_kit_bootstrap_of_the_private_graphs(tiny):
    solution = load_solution(tiny.solution_csv)
    content = tiny.submission(2, noise=NOISE)
    stored = private_interval(content, solution)
    expected = _expected(tiny, content)
    assert (stored["score"], stored["low"], stored["high"]) == (expected["score"], expected["ci_low"],
                                                                 expected["ci_high"])
    assert stored["low"] < stored["score"] < stored["high"]  # noisy tile graphs: a real width
    private_ids = [i for i, usage in tiny.usage.items() if usage == "Private"]
    assert stored["graphs"] == len(private_ids)
    for name, ci in stored["collections"].items():
        assert ci["low"] <= ci["score"] <= ci["high"]
        assert ci["graphs"] == sum(i.startswith(name + ":") for i in private_ids)
        assert (ci["low"], ci["high"]) == (expected["collections"][name]["ci_low"],
                                           expected["collections"][name]["ci_high"])
    assert private_interval(content, solution) == stored  # fixed seed: the same numbers every time
    # The estimate is the private score the scorer stores for the submission.
    assert stored["score"] == pytest.approx(Scorer(solution).score(content, "s.csv").private, abs=1e-12)


def test_api_shows_intervals_after_the_reveal_computed_once(db_url, tiny, monkeypatch):
    leaderboard = init_competition(db_url, tiny, private_intervals=True)
    contents = _play(leaderboard, tiny)
    calls = []
    real = intervals_module.private_interval
    monkeypatch.setattr(intervals_module, "private_interval",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    from fastapi.testclient import TestClient

    with TestClient(create_app(Settings(db_url=db_url, board_cache_s=0.0)),
                    raise_server_exceptions=False) as client:
        assert client.get("/api/leaderboard", params={"board": "private"}).status_code == 403
        public = client.get("/api/leaderboard").json()
        assert "interval" not in public and not any("ci_low" in e for e in public["entries"])
        assert calls == [] and not any(_stored(leaderboard).values())  # nothing computed before the reveal

        leaderboard.reveal()
        first = client.get("/api/leaderboard", params={"board": "private"}).json()
        assert len(calls) == 3  # one counted submission per team
        assert first["interval"]["confidence"] == 0.95 and first["interval"]["seed"] == 0
        board = private_board(leaderboard.db, 2)
        for entry, shown in zip(board, first["entries"], strict=True):
            expected = _expected(tiny, contents[entry.submission_id])
            assert (shown["team"], shown["score"]) == (entry.team, entry.score)
            assert (shown["ci_low"], shown["ci_high"]) == (expected["ci_low"], expected["ci_high"])
            assert shown["ci_low"] <= shown["score"] <= shown["ci_high"]
            assert shown["collections"].keys() == expected["collections"].keys()
            for name, ci in shown["collections"].items():
                assert ci["ci_low"] == expected["collections"][name]["ci_low"]
        stored = _stored(leaderboard)
        assert sorted(i for i, v in stored.items() if v) == sorted(e.submission_id for e in board)

        # Polled again (no board cache at all here): read back, never recomputed.
        for _ in range(3):
            again = client.get("/api/leaderboard", params={"board": "private"}).json()
            assert again["entries"] == first["entries"]
        assert len(calls) == 3
        # The team page shows its private interval from the same figures.
        team_page = client.get(f"/teams/{board[0].team_id}").text
        assert f"[{first['entries'][0]['ci_low']:.4f}, {first['entries'][0]['ci_high']:.4f}]" in team_page
    leaderboard.db.dispose()


def test_option_off_shows_no_interval_and_computes_nothing(client, leaderboard, tiny, monkeypatch):
    calls = []
    monkeypatch.setattr(intervals_module, "private_interval", lambda *a, **k: calls.append(1))
    token = leaderboard.add_team("Alpha")[1]
    upload(client, token, tiny.submission(1, noise=NOISE))
    leaderboard.reveal()
    body = client.get("/api/leaderboard", params={"board": "private"}).json()
    assert "interval" not in body and "ci_low" not in body["entries"][0]
    assert ('class="ci"' not in client.get("/?board=private").text
            and "interval" not in client.get("/rules").text)
    assert calls == []


def test_a_passed_deadline_shows_intervals_without_a_reveal_and_a_rescore_renews_them(sqlite_url, tiny):
    leaderboard = init_competition(sqlite_url, tiny, private_intervals=True)
    contents = _play(leaderboard, tiny)
    leaderboard.configure(deadline=utcnow() - timedelta(minutes=1))
    with LiveServer(create_app(Settings(db_url=sqlite_url, board_cache_s=0.0))) as server:
        import httpx

        shown = httpx.get(server.url + "/api/leaderboard", params={"board": "private"}).json()["entries"]
        assert all("ci_low" in e for e in shown)
        counted = [e.submission_id for e in private_board(leaderboard.db, 2)]
        before = _stored(leaderboard)
        assert all(before[i] for i in counted)
        leaderboard.rescore(load_solution(tiny.solution_csv), "v2")
        assert not any(_stored(leaderboard).values())  # a rescore clears them ...
        again = httpx.get(server.url + "/api/leaderboard", params={"board": "private"}).json()["entries"]
        assert again == shown  # ... and the next board computes the same figures again
        assert _stored(leaderboard)[counted[0]] == before[counted[0]]
        assert before[counted[0]]["low"] == _expected(tiny, contents[counted[0]])["ci_low"]
    leaderboard.db.dispose()


# ---------------------------------------------------------------------------------------------
# The command line


def test_init_configure_and_reveal_from_the_command_line(sqlite_url, tiny, capsys):
    init = ["leaderboard", "init", "--db", sqlite_url, "--solution", str(tiny.solution_path),
            "--data", str(tiny.data_dir)]
    assert main(init) == 0
    assert "bootstrap interval" not in capsys.readouterr().out
    leaderboard = Leaderboard(Database(sqlite_url))
    assert leaderboard.config().private_intervals is False  # off unless the host asks
    assert main(["leaderboard", "configure", "--db", sqlite_url, "--private-intervals"]) == 0
    assert "private score intervals on" in capsys.readouterr().out
    assert leaderboard.config().private_intervals is True
    contents = _play(leaderboard, tiny)
    assert main(["leaderboard", "reveal", "--db", sqlite_url]) == 0
    out = capsys.readouterr().out
    assert "Computed the private score interval of 3 counted submission(s)" in out
    top = private_board(leaderboard.db, 2)[0]
    expected = _expected(tiny, contents[top.submission_id])
    assert f"  1  {top.score:.6f}  [{expected['ci_low']:.6f}, {expected['ci_high']:.6f}]  {top.team}" in out
    assert main(["leaderboard", "configure", "--db", sqlite_url, "--no-private-intervals"]) == 0
    assert "private score intervals off" in capsys.readouterr().out
    assert main(["leaderboard", "reveal", "--db", sqlite_url]) == 0
    assert "[" not in capsys.readouterr().out  # hidden again; the stored figures stay for later
    leaderboard.db.dispose()


def test_init_with_private_intervals(sqlite_url, tiny, capsys):
    assert main(["leaderboard", "init", "--db", sqlite_url, "--solution", str(tiny.solution_path),
                 "--data", str(tiny.data_dir), "--private-intervals"]) == 0
    assert "95% bootstrap interval" in capsys.readouterr().out
    leaderboard = Leaderboard(Database(sqlite_url))
    assert leaderboard.config().private_intervals is True
    leaderboard.db.dispose()


# ---------------------------------------------------------------------------------------------
# In Chromium


@pytest.fixture
def revealed_cup(sqlite_url, tiny):
    leaderboard = init_competition(sqlite_url, tiny, private_intervals=True, name="Interval cup")
    contents = _play(leaderboard, tiny)
    leaderboard.add_team("A team with a rather long name that goes on and on, and on")
    token = leaderboard.add_team("Late")[1]
    leaderboard.reveal()
    with LiveServer(create_app(Settings(db_url=sqlite_url, board_cache_s=0.0))) as server:
        yield server.url, leaderboard, contents, token
    leaderboard.db.dispose()


@pytest.mark.slow
def test_private_board_and_team_page_show_the_intervals(browser, revealed_cup, tiny):
    url, leaderboard, contents, _token = revealed_cup
    page = browser.new_page()
    page.goto(url + "/?board=private")
    board = private_board(leaderboard.db, 2)
    rows = page.locator("#board > tbody > tr")
    assert rows.count() == len(board)
    assert "bootstrap interval" in page.inner_text("#interval-note")
    for i, entry in enumerate(board):
        expected = _expected(tiny, contents[entry.submission_id])
        score_cell = rows.nth(i).locator("td.score")
        assert (score_cell.locator(":scope > span.ci").inner_text()
                == f"[{expected['ci_low']:.4f}, {expected['ci_high']:.4f}]")
        score_cell.locator("summary").click()
        names = score_cell.locator("table.collections tr td:first-child").all_inner_texts()
        assert names == list(expected["collections"])
        shown = score_cell.locator("table.collections span.ci").all_inner_texts()
        assert shown == [f"[{ci['ci_low']:.4f}, {ci['ci_high']:.4f}]"
                         for ci in expected["collections"].values()]
        values = score_cell.locator("table.collections td.num").all_inner_texts()
        assert [v.split()[0] for v in values] == [f"{entry.collections[n]:.4f}" for n in names]
    top = board[0]
    expected = _expected(tiny, contents[top.submission_id])
    page.goto(url + f"/teams/{top.team_id}")
    assert page.inner_text("#private-interval") == f"[{expected['ci_low']:.4f}, {expected['ci_high']:.4f}]"
    rows = page.locator("#private-collections tbody tr")
    assert rows.count() == len(expected["collections"])
    single = [name for name, ci in expected["collections"].items() if ci["graphs"] == 1]
    assert all("(1 graph)" in rows.nth(list(expected["collections"]).index(n)).inner_text() for n in single)
    page.goto(url + "/rules")
    assert "not how it would move if the model were trained again" in page.inner_text("#intervals + dd")
    page.close()


@pytest.mark.slow
def test_intervals_fit_390px(browser, revealed_cup):
    url, leaderboard, _contents, token = revealed_cup
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    for path in ["/?board=private", "/teams/1", "/teams/2", "/rules"]:
        page.goto(url + path)
        if path != "/rules":  # the overall interval stays in view (per collection: on the team page)
            assert page.locator("td.score > span.ci, #private-interval").first.is_visible(), path
        assert_fits_width(page, path)
        clipped = page.evaluate("[...document.querySelectorAll('.ci')].filter(e => {"
                                "const r = e.getBoundingClientRect(); return r.width && r.right > 391})"
                                ".map(e => e.textContent)")
        assert clipped == [], f"{path}: intervals past the edge: {clipped}"
    context.close()


def test_a_team_page_without_a_private_entry_shows_no_interval(client, leaderboard, tiny):
    leaderboard.configure(private_intervals=True)
    alpha = leaderboard.add_team("Alpha")[1]
    leaderboard.add_team("Beta")
    upload(client, alpha, tiny.submission(1, noise=NOISE))
    leaderboard.reveal()
    assert 'id="private-interval"' in client.get("/teams/1").text
    assert 'id="private-interval"' not in client.get("/teams/2").text
    assert client.get("/api/submissions/mine", headers=bearer(alpha)).status_code == 200
