"""What a team's pages show: its submissions, its files, its final selection, its public history."""

from __future__ import annotations

import zlib
from collections.abc import Container, Iterable
from datetime import datetime

from sqlalchemy import func, select, update

from competition.scoring import Solution
from leaderboard.errors import Conflict, Forbidden, NotFound
from leaderboard.models import MAX_ID, SCORED, Submission, Team, utcnow
from leaderboard.service.competition import CompetitionStore
from leaderboard.views import TeamInfo, iso, submission_view


class History(CompetitionStore):
    """Submissions as a team and others see them."""

    def submissions_of(self, team_id: int, *, private_visible: bool, limit: int | None = None,
                       offset: int = 0) -> list[dict]:
        """A team's submissions, newest first, as the team may see them (``limit`` from ``offset``)."""
        with self.db.reader() as session:
            rows = session.scalars(
                select(Submission).where(Submission.team_id == team_id).order_by(Submission.id.desc())
                .limit(limit).offset(offset)
            )
            return [submission_view(row, private_visible) for row in rows]

    def scored_history(self, team_id: int, *, private_visible: bool,
                       private_of: Container[int] | None = None) -> list[dict]:
        """A team's scored submissions as anyone may see them (time and scores, no file), newest first.

        Private scores only once ``private_visible``, and then only of the ids in ``private_of``
        (None: of all); ``final`` marks those ids.
        """
        with self.db.reader() as session:
            rows = session.execute(
                select(Submission.id, Submission.created_at, Submission.public_score,
                       Submission.private_score)
                .where(Submission.team_id == team_id, Submission.status == SCORED)
                .order_by(Submission.id.desc())
            ).all()
        history = []
        for i, created, public, private in rows:
            shown = private_visible and (private_of is None or i in private_of)
            history.append({"id": i, "submitted_at": iso(created), "public_score": public,
                            "final": private_of is not None and i in private_of,
                            **({"private_score": private} if shown else {})})
        return history

    def count_submissions(self, team_id: int) -> int:
        with self.db.reader() as session:
            return int(session.scalar(select(func.count()).select_from(Submission)
                                      .where(Submission.team_id == team_id)) or 0)

    def submission_file(self, team: TeamInfo, submission_id: int) -> tuple[str, bytes, bool]:
        """``(file name, stored bytes, whole)`` of one of the team's submissions; NotFound for any other id.

        ``whole`` is False for an invalid file of which only the first ``KEPT_PREFIX_BYTES`` were kept.
        """
        missing = NotFound(f"Your team has no submission {submission_id}.")
        if not 1 <= submission_id <= MAX_ID:
            raise missing
        with self.db.reader() as session:
            row = session.get(Submission, submission_id)
            if row is None or row.team_id != team.id:
                raise missing
            content = zlib.decompress(row.content) if row.content else b""
            return row.file_name, content, len(content) >= row.size_bytes

    def set_selected(self, team: TeamInfo, submission_id: int, selected: bool, *,
                     now: datetime | None = None) -> dict:
        """Select (or unselect) a scored submission for the private board, at most ``max_selected``."""
        now = now or utcnow()
        config = self.config()
        if config.is_closed(now):
            raise Forbidden("The competition is closed; final selections can no longer change.")
        if not 1 <= submission_id <= MAX_ID:  # the database cannot hold it: no such submission
            raise NotFound(f"Your team has no submission {submission_id}.")
        with self.db.writer() as session:
            # Serialise one team's selection changes (PostgreSQL; SQLite's BEGIN IMMEDIATE already does).
            session.execute(select(Team.id).where(Team.id == team.id).with_for_update())
            row = session.get(Submission, submission_id)
            if row is None or row.team_id != team.id:
                raise NotFound(f"Your team has no submission {submission_id}.")
            if selected and row.status != SCORED:
                raise Conflict(f"Submission {submission_id} is {row.status}; only scored submissions can "
                               "be selected.")
            if selected and not row.selected:
                count = session.scalar(select(func.count()).select_from(Submission).where(
                    Submission.team_id == team.id, Submission.selected.is_(True)))
                if count >= config.max_selected:
                    raise Conflict(
                        f"Your team already selected {count} submissions, the most allowed; "
                        "unselect one first."
                    )
            row.selected = selected
            session.flush()
            return submission_view(row, config.private_visible(now))

    # -- private intervals ---------------------------------------------------------------------

    def fill_private_intervals(self, submission_ids: Iterable[int], solution: Solution | None = None) -> int:
        """Compute and store the private interval of each listed scored submission that has none yet.

        Called once the private board is shown (``leaderboard.intervals``); returns how many were
        computed. The solution is parsed from the database unless given (the server passes its
        scorer's). A submission rescored meanwhile is left for the next call.
        """
        from leaderboard.intervals import private_interval

        with self.db.reader() as session:
            missing = [(i, version) for i, version, stored in session.execute(
                select(Submission.id, Submission.scorer_version, Submission.private_interval)
                .where(Submission.id.in_(list(submission_ids)), Submission.status == SCORED)
            ) if stored is None]
        computed = 0
        for submission_id, version in sorted(missing):
            if solution is None:
                solution = self.load_solution()
            with self.db.reader() as session:
                row = session.get(Submission, submission_id)
                content, file_name = zlib.decompress(row.content), row.file_name
            interval = private_interval(content, solution, source_name=file_name)
            with self.db.writer() as session:
                computed += session.execute(
                    update(Submission)
                    .where(Submission.id == submission_id, Submission.status == SCORED,
                           Submission.scorer_version == version)
                    .values(private_interval=interval)
                    .execution_options(synchronize_session=False)
                ).rowcount
        return computed

