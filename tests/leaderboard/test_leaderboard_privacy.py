"""Team pages show what Kaggle shows (issue 24, item 3).

Before the close: best public score and entries, no list of submissions or their times. After it:
the scored submissions, with a private score only on the team's final ones (its selected ones, or
its best public ones when it selected none), unless the host serves with full disclosure.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from fastapi.testclient import TestClient

from leaderboard.app import create_app
from leaderboard.boards import final_ids
from leaderboard.models import Submission
from leaderboard.scorer import Scorer


def _private_scores_on(html: str) -> list[str]:
    rows = re.findall(r"<tr[^>]*><td><time.*?</tr>", html, flags=re.S)
    return [re.findall(r'<td class="num">([^<]*)</td>', row)[1] for row in rows]


@pytest.fixture
def scored_team(leaderboard, tiny):
    team, _ = leaderboard.add_team("Alpha")
    scorer = Scorer(leaderboard.load_solution())
    ids = [leaderboard.submit(team, tiny.submission(seed, noise=0.2 * (seed + 1)), f"s{seed}.csv",
                              scorer.score, scorer_version=scorer.version)["id"] for seed in range(3)]
    scorer.close()
    return team, ids


def test_before_the_close_a_team_page_lists_no_submissions(client, leaderboard, scored_team):
    team, _ = scored_team
    page = client.get(f"/teams/{team.id}")
    assert page.status_code == 200
    assert 'id="team-history"' not in page.text and 'id="history-hidden"' in page.text
    assert re.search(r'id="entries">3<', page.text)
    assert page.text.count("<time") <= 2  # the last submission (and a deadline), not a history of times


@pytest.mark.parametrize("selected", [False, True])
def test_after_the_close_private_scores_only_of_final_submissions(client, leaderboard, scored_team, selected):
    team, ids = scored_team
    if selected:
        leaderboard.set_selected(team, ids[2], True)
    leaderboard.reveal()
    final, _ = final_ids(leaderboard.db, team.id, leaderboard.config().max_selected)
    assert len(final) == (1 if selected else 2)
    with leaderboard.db.reader() as session:
        private = {s.id: s.private_score for s in session.query(Submission)}
    page = client.get(f"/teams/{team.id}").text
    shown = _private_scores_on(page)
    newest_first = sorted(ids, reverse=True)
    assert shown == [f"{private[i]:.4f}" if i in final else "-" for i in newest_first]
    for i in set(ids) - set(final):
        assert f"{private[i]:.4f}" not in page


def test_full_disclosure_shows_every_private_score(leaderboard, settings, scored_team):
    team, ids = scored_team
    leaderboard.reveal()
    with leaderboard.db.reader() as session:
        private = {s.id: s.private_score for s in session.query(Submission)}
    with TestClient(create_app(replace(settings, full_disclosure=True)),
                    raise_server_exceptions=False) as client:
        shown = _private_scores_on(client.get(f"/teams/{team.id}").text)
    assert shown == [f"{private[i]:.4f}" for i in sorted(ids, reverse=True)]
