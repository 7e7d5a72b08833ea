"""Rankings: the SQL public board against an obvious reference, and the private board's final selections."""

from __future__ import annotations

from datetime import datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from leaderboard.boards import board_csv, private_board, public_board
from leaderboard.database import Database
from leaderboard.models import FAILED, INVALID, SCORED, Submission, Team

T0 = datetime(2024, 1, 1)

submission_strategy = st.tuples(
    st.integers(0, 4),  # team index
    st.sampled_from([0.1, 0.5, 0.5, 0.9, 1.0, -0.3]),  # public score: few values, many ties
    st.sampled_from([0.2, 0.6, 0.7]),  # private score
    st.integers(0, 50),  # minutes after T0 (several submissions can share a minute)
    st.sampled_from([SCORED, SCORED, SCORED, INVALID, FAILED]),
)


def _database(teams: int, submissions, disqualified=()) -> Database:
    db = Database("sqlite://")
    db.create_schema()
    with db.writer() as session:
        for t in range(teams):
            session.add(Team(id=t + 1, name=f"team{t}", name_key=f"team{t}", token_hash="", created_at=T0,
                             disqualified_at=T0 if t in disqualified else None))
        session.flush()
        for i, (team, public, private, minute, status, *selected) in enumerate(submissions, start=1):
            scored = status == SCORED
            session.add(Submission(
                id=i, team_id=team + 1, created_at=T0 + timedelta(minutes=minute), file_name="s.csv",
                size_bytes=1, sha256="", content=b"", status=status,
                public_score=public if scored else None, private_score=private if scored else None,
                selected=bool(selected and selected[0]),
            ))
    return db


def _reference_public(submissions, disqualified=()) -> list[tuple[str, float, int]]:
    best: dict[int, tuple] = {}
    counts: dict[int, int] = {}
    for i, (team, public, _private, minute, status) in enumerate(submissions, start=1):
        if status != SCORED or team in disqualified:
            continue
        counts[team] = counts.get(team, 0) + 1
        key = (-public, minute, i)
        if team not in best or key < best[team]:
            best[team] = key
    ranked = sorted(best.items(), key=lambda item: item[1])
    return [(f"team{team}", -key[0], counts[team]) for team, key in ranked]


@settings(max_examples=60, deadline=None)
@given(st.lists(submission_strategy, max_size=25), st.sets(st.integers(0, 4), max_size=2))
def test_public_board_matches_the_reference(submissions, disqualified):
    db = _database(5, submissions, disqualified)
    board = public_board(db)
    assert [(e.team, e.score, e.entries) for e in board] == _reference_public(submissions, disqualified)
    assert [e.rank for e in board] == list(range(1, len(board) + 1))


def test_private_board_uses_selected_else_best_public():
    submissions = [
        # team0 selects a submission with a poor public but good private score: that one counts.
        (0, 0.9, 0.3, 0, SCORED, False),
        (0, 0.2, 0.8, 1, SCORED, True),
        # team1 selects nothing: its 2 best public ones stand (0.7 and 0.6 public), not the 0.1 one.
        (1, 0.7, 0.5, 0, SCORED, False),
        (1, 0.6, 0.6, 1, SCORED, False),
        (1, 0.1, 0.99, 2, SCORED, False),
        # team2 ties team1 on private 0.6 but later: ranked after it.
        (2, 0.5, 0.6, 5, SCORED, False),
    ]
    board = private_board(_database(3, submissions), max_selected=2)
    assert [(e.team, e.score, e.entries) for e in board] == [("team0", 0.8, 2), ("team1", 0.6, 3),
                                                             ("team2", 0.6, 1)]
    assert [e.submission_id for e in board] == [2, 4, 6]


def test_public_ties_go_to_the_earlier_submission_across_teams():
    submissions = [(0, 0.5, 0.1, 10, SCORED), (1, 0.5, 0.1, 5, SCORED), (2, 0.5 + 1e-12, 0.1, 20, SCORED)]
    board = public_board(_database(3, submissions))
    assert [e.team for e in board] == ["team2", "team1", "team0"]  # full precision, then time


def test_board_csv_keeps_full_precision_and_quotes_names():
    db = _database(1, [(0, 0.123456789012345, 0.2, 0, SCORED)])
    with db.writer() as session:
        session.get(Team, 1).name = 'Team "A", B'
    text = board_csv(public_board(db))
    assert text.splitlines()[0] == "rank,team,score,entries,last_submission,submission_id,submitted_at"
    assert '"Team ""A"", B"' in text and "0.123456789012345" in text
