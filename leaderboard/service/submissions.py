"""Uploads: recorded, scored and counted under the daily limit and the server's caps.

A submission goes through three short transactions, none held open while scoring:

1. a ``received`` row is written (the upload is on record before any work is done). The caps are
   checked in the same write transaction, one upload of a team at a time (SQLite: ``BEGIN
   IMMEDIATE``; PostgreSQL: the team row's lock), and uploads still ``received`` count against
   them, so concurrent uploads cannot pass a cap together. The row holds only the file's first
   ``KEPT_PREFIX_BYTES``: a file that ends invalid, failed or refused is never written whole, so
   the database (and SQLite's WAL) does not grow by what it refused;
2. the file is validated and scored (``Scorer``, with a time limit);
3. in one write transaction the team's counter for the UTC day is raised by a conditional
   ``UPDATE ... SET used = used + 1 WHERE used < limit`` and the row turns ``scored`` with the
   whole file. The database serialises that statement (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL:
   the row lock, with the condition re-checked after waiting), so concurrent uploads can never
   count past the limit. When the counter is full the transaction is rolled back and the row is
   marked ``refused``; its score is never shown.

Only scored submissions count toward the limit: an invalid file (``invalid``), a scorer fault or
time-out (``failed``) and a refused one do not. They have bounds of their own, so that uncounted
uploads cannot fill the database or the scorer: at most ``max_uncounted_per_day`` of them per team
and UTC day (uploads in flight included), each keeps only its first ``KEPT_PREFIX_BYTES`` (the
validator's report is kept in full), and a team's stored files never pass ``max_team_bytes``
(compressed; an upload in flight counts at its uncompressed size). A row still ``received`` long
after the time limit belonged to a server process that died; ``sweep_stuck`` marks it failed with
a message saying it was not counted, and step 3 only ever turns a row that is still ``received``
into ``scored``, so a swept submission can never be counted afterwards.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable
from datetime import date, datetime, time, timedelta
from pathlib import PurePosixPath

from sqlalchemy import Select, case, func, null, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from competition.scoring import ScoreReport, SubmissionInvalid
from leaderboard.errors import (
    DescriptionTooLong,
    Forbidden,
    InvalidSubmission,
    LimitReached,
    PayloadTooLarge,
    ScoringFailed,
    ScoringTimedOut,
)
from leaderboard.models import (
    FAILED,
    INVALID,
    RECEIVED,
    REFUSED,
    SCORED,
    DailyQuota,
    Submission,
    Team,
    utcnow,
)
from leaderboard.service.competition import CompetitionStore, breaks_the_line
from leaderboard.uploads import ReceivedFile
from leaderboard.views import Quota, TeamInfo, iso, submission_view

log = logging.getLogger("leaderboard")


MAX_FILE_NAME = 255
MAX_DESCRIPTION = 500
KEPT_PREFIX_BYTES = 1024  # what is kept of an invalid or refused file
UNCOUNTED = (INVALID, FAILED, REFUSED)  # the outcomes bounded by max_uncounted_per_day
IN_FLIGHT_RETRY_S = 10  # Retry-After when uploads still being scored fill the uncounted cap

STUCK_MESSAGE = (
    "The server stopped while scoring this submission. It was not scored and does not count toward "
    "your daily limit; please submit the file again."
)
FAILED_MESSAGE = (
    "Scoring failed because of a problem on the server, not in your file. This submission does not "
    "count toward your daily limit; the host has been told. Please try again later."
)
TIMEOUT_MESSAGE = (
    "Scoring took longer than the server's time limit. This submission does not count toward your "
    "daily limit; please try again later."
)
REFUSED_MESSAGE = "Refused: the daily limit was reached before this submission was counted."


def clean_file_name(name: str | None) -> str:
    """The base name of an uploaded file, without control characters or line separators, at most 255
    characters."""
    base = PurePosixPath((name or "").replace("\\", "/")).name
    base = "".join(ch for ch in base if not breaks_the_line(ch)).strip()
    return base[:MAX_FILE_NAME] or "submission.csv"


def clean_description(text: str | None) -> str | None:
    """A submission's note on one line: control characters and line breaks become spaces; None if empty.

    Its length is checked by ``check_description`` (never cut silently).
    """
    if text is None:
        return None
    return " ".join("".join(" " if breaks_the_line(ch) else ch for ch in text).split()) or None


def check_description(text: str | None) -> str | None:
    """The cleaned description; DescriptionTooLong past ``MAX_DESCRIPTION`` characters (the one limit of the
    form, the API and ``tpugraphs submit -m``)."""
    cleaned = clean_description(text)
    if cleaned is not None and len(cleaned) > MAX_DESCRIPTION:
        raise DescriptionTooLong(
            f"The description has {len(cleaned)} characters; at most {MAX_DESCRIPTION} are allowed. "
            "Shorten it; nothing was stored or counted.", max_description_chars=MAX_DESCRIPTION,
        )
    return cleaned


def _insert_ignore(session: Session, model: type, **values: object) -> None:
    """INSERT a row unless its primary key exists (both dialects; a savepoint elsewhere)."""
    dialect = session.get_bind().dialect.name
    if dialect in ("sqlite", "postgresql"):
        if dialect == "sqlite":
            from sqlalchemy.dialects.sqlite import insert
        else:
            from sqlalchemy.dialects.postgresql import insert
        session.execute(insert(model).values(**values).on_conflict_do_nothing())
        return
    try:
        with session.begin_nested():
            session.add(model(**values))
    except IntegrityError:
        pass


class Submissions(CompetitionStore):
    """Uploads: recorded, scored and counted under the daily limit and the caps."""

    def quota(self, team_id: int, daily_limit: int, now: datetime) -> Quota:
        day = now.date()
        with self.db.reader() as session:
            used = session.scalar(
                select(DailyQuota.used).where(DailyQuota.team_id == team_id, DailyQuota.day == day)
            )
        return Quota(daily_limit, int(used or 0), datetime.combine(day + timedelta(days=1), time()))

    def admit(self, team: TeamInfo, *, now: datetime | None = None,
              max_uncounted_per_day: int | None = None) -> None:
        """The checks an upload passes before its body is read: the competition is open, the team not
        disqualified, its daily limit not reached and its uncounted uploads (in flight included) under
        the cap. Raises Forbidden or LimitReached; the checks in ``_record`` and ``_count`` are the
        ones that hold under concurrency."""
        now = now or utcnow()
        config = self.config()
        if config.is_closed(now):
            raise Forbidden(config.closed_message())
        if team.disqualified:
            raise Forbidden("Your team has been disqualified; submissions are refused.")
        quota = self.quota(team.id, config.daily_limit, now)
        if quota.remaining <= 0:
            raise self._limit_reached(quota, now)
        if max_uncounted_per_day is not None:
            with self.db.reader() as session:
                uncounted, in_flight = _uncounted_counts(session, team.id, now)
            if uncounted >= max_uncounted_per_day:
                raise self._too_many_uncounted(uncounted, in_flight, max_uncounted_per_day, quota, now)

    def submit(
        self,
        team: TeamInfo,
        content: bytes | ReceivedFile,
        file_name: str | None,
        score: Callable[[bytes | ReceivedFile, str], ScoreReport],
        *,
        scorer_version: str,
        now: datetime | None = None,
        max_uncounted_per_day: int | None = None,
        max_team_bytes: int | None = None,
        description: str | None = None,
    ) -> dict:
        """Record, score and count one upload; returns the participant's view of it plus the quota.

        ``content`` is the file (its bytes, or a ``ReceivedFile`` on disk, read only when scored).
        ``score`` is ``Scorer.score``: it raises SubmissionInvalid (a ParticipantVisibleError),
        ScoringTimeout or a host fault. ``max_uncounted_per_day`` bounds the team's invalid, failed
        and refused uploads per UTC day, ``max_team_bytes`` its stored (compressed) files; None: no bound.
        ``description`` is the team's note on the submission (cleaned, at most ``MAX_DESCRIPTION``
        characters). Raises Forbidden (closed, disqualified), LimitReached (the daily limit, or too many
        uncounted uploads), PayloadTooLarge (the team's storage is full), InvalidSubmission, ScoringFailed or
        ScoringTimedOut; each carries the participant-safe message.
        """
        from leaderboard.scorer import ScoringTimeout

        now = now or utcnow()
        description = check_description(description)
        self.admit(team, now=now, max_uncounted_per_day=max_uncounted_per_day)
        config = self.config()
        quota = self.quota(team.id, config.daily_limit, now)
        upload = content if isinstance(content, ReceivedFile) else ReceivedFile.from_bytes(content)
        file_name = clean_file_name(file_name)
        sha256, compressed_size = upload.digest_and_compressed_size()
        submission_id = self._record(team.id, upload, sha256, file_name, description, now, quota,
                                     max_uncounted_per_day=max_uncounted_per_day,
                                     max_team_bytes=max_team_bytes, compressed_size=compressed_size)

        try:
            report = score(upload, file_name)
        except SubmissionInvalid as exc:  # the validator's report
            self._finish(submission_id, INVALID, str(exc), scorer_version)
            log.info("submission %d of team %d invalid", submission_id, team.id)
            raise InvalidSubmission(str(exc), submission_id=submission_id, status=INVALID,
                                    problems=_problems(exc)) from None
        except ScoringTimeout:
            self._finish(submission_id, FAILED, TIMEOUT_MESSAGE, scorer_version)
            log.error("submission %d of team %d: scoring timed out", submission_id, team.id)
            raise ScoringTimedOut(TIMEOUT_MESSAGE, submission_id=submission_id, status=FAILED) from None
        except Exception:
            log.exception("submission %d of team %d: scoring failed", submission_id, team.id)
            self._finish(submission_id, FAILED, FAILED_MESSAGE, scorer_version)
            raise ScoringFailed(FAILED_MESSAGE, submission_id=submission_id, status=FAILED) from None

        outcome = self._count(submission_id, team.id, config.daily_limit, now.date(), report, scorer_version,
                             upload.compressed())
        if outcome == "swept":
            raise ScoringFailed(STUCK_MESSAGE, submission_id=submission_id, status=FAILED)
        if outcome == "limit":
            self._finish(submission_id, REFUSED, REFUSED_MESSAGE, scorer_version)
            raise self._limit_reached(self.quota(team.id, config.daily_limit, now), now,
                                      submission_id=submission_id)
        log.info("submission %d of team %d scored: public %.6f", submission_id, team.id, report.public)
        with self.db.reader() as session:
            view = submission_view(session.get(Submission, submission_id), config.private_visible(now))
        return {**view, **self.quota(team.id, config.daily_limit, now).as_dict()}

    def _record(self, team_id: int, upload: ReceivedFile, sha256: str, file_name: str,
                description: str | None, now: datetime, quota: Quota, *,
                max_uncounted_per_day: int | None, max_team_bytes: int | None, compressed_size: int) -> int:
        """Step 1: check the caps and write the ``received`` row (the file's prefix only) in one
        transaction."""
        with self.db.writer() as session:
            # One upload of the team at a time from here to the commit (PostgreSQL; SQLite's BEGIN
            # IMMEDIATE already serialises every writer), so the counts below cannot go stale.
            session.execute(select(Team.id).where(Team.id == team_id).with_for_update())
            if max_uncounted_per_day is not None:
                uncounted, in_flight = _uncounted_counts(session, team_id, now)
                if uncounted >= max_uncounted_per_day:
                    raise self._too_many_uncounted(uncounted, in_flight, max_uncounted_per_day, quota, now)
            if max_team_bytes is not None:
                stored = int(session.scalar(_stored_bytes_query(team_id)) or 0)
                if stored + compressed_size > max_team_bytes:
                    raise PayloadTooLarge(
                        f"Your team's stored submissions take {stored / 2**20:.1f} MiB; this file "
                        f"would pass the server's limit of {max_team_bytes / 2**20:.1f} MiB per team. "
                        "Nothing was stored or counted; ask the host.", stored_bytes=stored,
                        max_team_bytes=max_team_bytes,
                    )
            row = Submission(
                team_id=team_id, created_at=now, file_name=file_name, size_bytes=upload.size,
                sha256=sha256, content=zlib.compress(upload.head(KEPT_PREFIX_BYTES), 1),
                status=RECEIVED, selected=False, description=description,
            )
            session.add(row)
            session.flush()
            return row.id

    def _count(self, submission_id: int, team_id: int, daily_limit: int, day: date,
               report: ScoreReport, scorer_version: str, compressed: bytes) -> str:
        """Step 3: take one unit of the day's quota and mark scored with the whole file, or neither.

        Returns 'ok', 'limit' or 'swept'. The file is written last, once the quota is taken, so a
        refused file never reaches the database (nor SQLite's WAL).
        """
        outcome = "ok"
        try:
            with self.db.writer() as session:
                still_received = session.scalar(
                    select(Submission.status).where(Submission.id == submission_id))
                if still_received != RECEIVED:
                    outcome = "swept"
                    raise _Rollback
                _insert_ignore(session, DailyQuota, team_id=team_id, day=day, used=0)
                taken = session.execute(
                    update(DailyQuota)
                    .where(DailyQuota.team_id == team_id, DailyQuota.day == day,
                           DailyQuota.used < daily_limit)
                    .values(used=DailyQuota.used + 1)
                    .execution_options(synchronize_session=False)
                ).rowcount
                if taken != 1:
                    outcome = "limit"
                    raise _Rollback
                marked = session.execute(
                    update(Submission)
                    .where(Submission.id == submission_id, Submission.status == RECEIVED)
                    .values(status=SCORED, quota_day=day, content=compressed,
                            **score_values(report, scorer_version))
                    .execution_options(synchronize_session=False)
                ).rowcount
                if marked != 1:  # swept by another process between the read above and here (PostgreSQL)
                    outcome = "swept"
                    raise _Rollback
        except _Rollback:
            pass
        return outcome

    def _finish(self, submission_id: int, status: str, error: str, scorer_version: str | None) -> None:
        """Record a verdict other than scored, unless the row already left 'received' (it keeps its
        prefix)."""
        with self.db.writer() as session:
            session.execute(
                update(Submission)
                .where(Submission.id == submission_id, Submission.status == RECEIVED)
                .values(status=status, error=error, scorer_version=scorer_version, scored_at=utcnow())
                .execution_options(synchronize_session=False)
            )

    def stored_bytes(self, team_id: int) -> int:
        """Bytes of the team's stored (compressed) files; an upload in flight at its uncompressed size."""
        with self.db.reader() as session:
            return int(session.scalar(_stored_bytes_query(team_id)) or 0)

    @staticmethod
    def _too_many_uncounted(uncounted: int, in_flight: int, cap: int, quota: Quota,
                            now: datetime) -> LimitReached:
        if uncounted - in_flight < cap:  # uploads still being scored hold the rest: soon over
            return LimitReached(
                f"Too many uploads at once: {in_flight} of your team's uploads are still being "
                f"scored, and with the {uncounted - in_flight} that did not count today they reach the "
                f"server's cap of {cap} uncounted uploads per team per day. Wait for them to finish; nothing "
                "was stored or counted.",
                headers={"Retry-After": str(IN_FLIGHT_RETRY_S)}, uncounted_today=uncounted,
                in_flight=in_flight, max_uncounted_per_day=cap, **quota.as_dict(),
            )
        wait = max(1, int((quota.resets_at - now).total_seconds()))
        return LimitReached(
            f"Too many uploads that did not count today: {uncounted} of your team's uploads today (UTC) were "
            f"invalid, failed or refused, and the server takes at most {cap} such uploads per team per day. "
            f"Check files with 'tpugraphs validate' before uploading. Uploads open again at "
            f"{iso(quota.resets_at)}; nothing was stored or counted.",
            headers={"Retry-After": str(wait)}, uncounted_today=uncounted, in_flight=in_flight,
            max_uncounted_per_day=cap, **quota.as_dict(),
        )

    @staticmethod
    def _limit_reached(quota: Quota, now: datetime, **extra: object) -> LimitReached:
        wait = max(1, int((quota.resets_at - now).total_seconds()))
        hours, minutes = divmod(wait // 60, 60)
        return LimitReached(
            f"Daily limit reached: {quota.used} of {quota.daily_limit} submissions counted today (UTC). "
            f"Failed and invalid submissions do not count. The limit resets at {iso(quota.resets_at)} "
            f"(in {hours} h {minutes} min).",
            headers={"Retry-After": str(wait)},
            **extra, **quota.as_dict(),
        )

    def sweep_stuck(self, older_than: datetime) -> int:
        """Mark failed (not counted) every submission still 'received' that arrived before ``older_than``."""
        stuck = (Submission.status == RECEIVED) & (Submission.created_at < older_than)
        with self.db.reader() as session:
            if not session.scalar(select(func.count()).select_from(Submission).where(stuck)):
                return 0
        with self.db.writer() as session:
            swept = session.execute(
                update(Submission).where(stuck).values(status=FAILED, error=STUCK_MESSAGE, scored_at=utcnow())
                .execution_options(synchronize_session=False)
            ).rowcount
        if swept:
            log.warning("marked %d stuck submission(s) failed", swept)
        return swept


def _uncounted_counts(session: Session, team_id: int, now: datetime) -> tuple[int, int]:
    """``(uncounted, in flight)``: the team's uploads of ``now``'s UTC day that did not count or are
    still being scored, and of those the ones still being scored."""
    start = datetime.combine(now.date(), time())
    in_flight = func.sum(case((Submission.status == RECEIVED, 1), else_=0))
    total, flying = session.execute(select(func.count(), in_flight).select_from(Submission).where(
        Submission.team_id == team_id, Submission.status.in_((*UNCOUNTED, RECEIVED)),
        Submission.created_at >= start, Submission.created_at < start + timedelta(days=1),
    )).one()
    return int(total or 0), int(flying or 0)


def _stored_bytes_query(team_id: int) -> Select:
    # A row in flight holds only its prefix yet; it counts at its whole size until it is scored or not.
    size = case((Submission.status == RECEIVED, Submission.size_bytes), else_=func.length(Submission.content))
    return select(func.coalesce(func.sum(size), 0)).where(Submission.team_id == team_id)


class _Rollback(Exception):
    """Ends a write transaction without committing (the caller knows why)."""


def score_values(report: ScoreReport, scorer_version: str) -> dict:
    return {
        "public_score": float(report.public),
        "private_score": float(report.private),
        "score": float(report.score),
        "public_collections": {k: float(v) for k, v in report.public_collections.items()},
        "private_collections": {k: float(v) for k, v in report.private_collections.items()},
        "private_interval": null(),  # computed again when next shown (SQL NULL, not JSON null)
        "scorer_version": scorer_version,
        "scored_at": utcnow(),
    }


def _problems(exc: SubmissionInvalid) -> list[dict]:
    """The validator's problems as JSON-ready dicts (participant-safe by the validator's contract)."""
    return [{"line": p.line, "row_id": p.row_id, "rule": p.rule, "message": p.message}
            for p in exc.result.problems]


