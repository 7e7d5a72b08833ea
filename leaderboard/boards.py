"""Public and private leaderboards, and their CSV export.

Both rank teams at full float64 precision, higher first; a tie goes to the team whose deciding
submission came first (then the lower submission id). Disqualified teams are left out. Only
``scored`` submissions take part.

- **Public**: a team's best public score over all its scored submissions.
- **Private**: a team's best private score over its *final* submissions: the ones it selected, or,
  when it selected none, its ``max_selected`` best public ones (ties to the earlier). The private
  score of a submission the team did not make final never counts, as on Kaggle.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select

from leaderboard.database import Database
from leaderboard.models import SCORED, Submission, Team
from leaderboard.views import iso


@dataclass(frozen=True)
class BoardEntry:
    rank: int
    team: str
    score: float
    entries: int  # scored submissions of the team
    last_submission: datetime  # time of its latest scored submission
    submission_id: int  # the submission that gives the score
    submitted_at: datetime  # ... and when it arrived
    team_id: int = 0
    collections: dict[str, float] | None = None  # that submission's per-collection scores on this board
    # Private board with the host's interval option, once shown: leaderboard.intervals.private_interval's
    # dict.
    interval: dict | None = None

    @property
    def has_interval(self) -> bool:
        return self.interval is not None and self.interval.get("low") is not None

    def collection_interval(self, name: str) -> dict | None:
        return (self.interval or {}).get("collections", {}).get(name)

    def as_dict(self) -> dict:
        entry = {"rank": self.rank, "team": self.team, "score": self.score, "entries": self.entries,
                 "last_submission": iso(self.last_submission), "submitted_at": iso(self.submitted_at)}
        if self.has_interval:
            entry["ci_low"], entry["ci_high"] = self.interval["low"], self.interval["high"]
            entry["collections"] = {
                name: {"score": value, "ci_low": ci["low"], "ci_high": ci["high"], "graphs": ci["graphs"]}
                for name, value in (self.collections or {}).items()
                if (ci := self.collection_interval(name)) is not None
            }
        return entry


def public_board(db: Database) -> list[BoardEntry]:
    """Best public score per team, ranked; one SQL query (window functions, SQLite and PostgreSQL)."""
    per_team = Submission.team_id
    ranked = (
        select(
            Team.name.label("team"),
            Submission.id.label("submission_id"),
            Team.id.label("team_id"),
            Submission.public_score.label("score"),
            Submission.public_collections.label("collections"),
            Submission.created_at.label("submitted_at"),
            func.row_number().over(
                partition_by=per_team,
                order_by=(Submission.public_score.desc(), Submission.created_at, Submission.id),
            ).label("position"),
            func.count().over(partition_by=per_team).label("entries"),
            func.max(Submission.created_at).over(partition_by=per_team).label("last_submission"),
        )
        .join(Team, Team.id == Submission.team_id)
        .where(Submission.status == SCORED, Team.disqualified_at.is_(None))
        .subquery()
    )
    query = (
        select(ranked)
        .where(ranked.c.position == 1)
        .order_by(ranked.c.score.desc(), ranked.c.submitted_at, ranked.c.submission_id)
    )
    with db.reader() as session:
        rows = session.execute(query).all()
    return [
        BoardEntry(rank=i, team=r.team, score=float(r.score), entries=int(r.entries),
                   last_submission=r.last_submission, submission_id=r.submission_id,
                   submitted_at=r.submitted_at, team_id=r.team_id, collections=r.collections)
        for i, r in enumerate(rows, start=1)
    ]


@dataclass(frozen=True)
class _Scored:
    id: int
    created_at: datetime
    public: float
    private: float
    selected: bool
    collections: dict[str, float] | None = None  # private, per collection
    interval: dict | None = None  # private, stored by leaderboard.intervals


def final_submissions(submissions: list[_Scored], max_selected: int) -> list[_Scored]:
    """The submissions that stand for a team on the private board."""
    chosen = [s for s in submissions if s.selected]
    if chosen:
        return chosen
    return sorted(submissions, key=lambda s: (-s.public, s.created_at, s.id))[:max_selected]


def private_board(db: Database, max_selected: int, *, intervals: bool = False) -> list[BoardEntry]:
    """Best private score per team over its final submissions, ranked (host-side until revealed).

    With ``intervals`` each entry carries its submission's stored private interval (None where
    none is stored yet).
    """
    query = (
        select(Team.id, Team.name, Submission.id, Submission.created_at, Submission.public_score,
               Submission.private_score, Submission.selected, Submission.private_collections,
               Submission.private_interval)
        .join(Team, Team.id == Submission.team_id)
        .where(Submission.status == SCORED, Team.disqualified_at.is_(None))
        .order_by(Submission.id)
    )
    by_team: dict[tuple[int, str], list[_Scored]] = {}
    with db.reader() as session:
        for (team_id, name, sub_id, created, public, private, selected, collections,
             interval) in session.execute(query):
            by_team.setdefault((team_id, name), []).append(
                _Scored(sub_id, created, public, private, bool(selected), collections,
                        interval if intervals else None))
    best = []
    for team, subs in by_team.items():
        top = min(final_submissions(subs, max_selected), key=lambda s: (-s.private, s.created_at, s.id))
        best.append((team, top, len(subs), max(s.created_at for s in subs)))
    best.sort(key=lambda item: (-item[1].private, item[1].created_at, item[1].id))
    return [
        BoardEntry(rank=i, team=name, score=float(top.private), entries=entries, last_submission=last,
                   submission_id=top.id, submitted_at=top.created_at, team_id=team_id,
                   collections=top.collections, interval=top.interval)
        for i, ((team_id, name), top, entries, last) in enumerate(best, start=1)
    ]


def final_ids(db: Database, team_id: int, max_selected: int) -> tuple[list[int], bool]:
    """The ids of the team's submissions that stand for it on the private board, and whether it chose them.

    Reads only public figures, so it may be shown to the team before the reveal.
    """
    query = (select(Submission.id, Submission.created_at, Submission.public_score, Submission.selected)
             .where(Submission.team_id == team_id, Submission.status == SCORED))
    with db.reader() as session:
        subs = [_Scored(i, created, public, 0.0, bool(selected))
                for i, created, public, selected in session.execute(query)]
    final = final_submissions(subs, max_selected)
    return [s.id for s in final], any(s.selected for s in subs)


def board_csv(entries: list[BoardEntry]) -> str:
    """``rank,team,score,entries,last_submission,submission_id,submitted_at`` with full-precision scores."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["rank", "team", "score", "entries", "last_submission", "submission_id", "submitted_at"])
    for e in entries:
        writer.writerow([e.rank, e.team, repr(e.score), e.entries, iso(e.last_submission), e.submission_id,
                         iso(e.submitted_at)])
    return out.getvalue()
