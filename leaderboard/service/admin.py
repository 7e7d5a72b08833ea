"""Host operations on the whole competition: the reveal and rescoring."""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import null, select, update

from competition.errors import ParticipantVisibleError
from competition.scoring import Solution
from leaderboard.models import FAILED, INVALID, SCORED, CompetitionRow, Submission, utcnow
from leaderboard.service.competition import CompetitionStore
from leaderboard.service.submissions import FAILED_MESSAGE, score_values
from leaderboard.views import CompetitionConfig

log = logging.getLogger("leaderboard")


@dataclass
class RescoreSummary:
    version: str
    rescored: int = 0
    changed: int = 0
    status_changes: dict[str, int] = field(default_factory=dict)  # "scored->invalid" -> count


class Admin(CompetitionStore):
    """The host's operations."""

    def reveal(self, *, now: datetime | None = None) -> CompetitionConfig:
        """Close the competition and show the private board (idempotent)."""
        self.config()
        with self.db.writer() as session:
            row = session.get(CompetitionRow, 1)
            if row.revealed_at is None:
                row.revealed_at = now or utcnow()
        return self.config()

    def rescore(
        self,
        solution: Solution,
        scorer_version: str,
        *,
        progress: Callable[[Iterable[int], int], Iterable[int]] | None = None,
    ) -> RescoreSummary:
        """Score again every scored or invalid submission, recording ``scorer_version`` on each.

        Failed and refused submissions are left alone: their teams were told they did not count and
        to submit again, so scoring them now would hand out extra submissions. Quotas are not
        touched. A submission that turns invalid is also unselected. An invalid file of which only
        the first ``KEPT_PREFIX_BYTES`` were kept stays as it is (it cannot be scored again).
        """
        from leaderboard.scorer import score_now

        summary = RescoreSummary(version=scorer_version)
        with self.db.reader() as session:
            ids = list(session.scalars(
                select(Submission.id).where(Submission.status.in_((SCORED, INVALID))).order_by(Submission.id)
            ))
        for submission_id in progress(ids, len(ids)) if progress else ids:
            with self.db.reader() as session:
                row = session.get(Submission, submission_id)
                content, file_name = zlib.decompress(row.content), row.file_name
                before = (row.status, row.public_score, row.private_score)
            if len(content) < row.size_bytes:  # an invalid file kept only in part
                continue
            values: dict[str, object]
            try:
                report = score_now(content, solution, file_name)
                values = {"status": SCORED, "error": None, **score_values(report, scorer_version)}
            except ParticipantVisibleError as exc:
                # SubmissionInvalid and any other participant-facing refusal
                values = {"status": INVALID, "error": str(exc), "selected": False,
                          **_no_scores(scorer_version)}
            except Exception:
                log.exception("rescoring submission %d failed", submission_id)
                values = {"status": FAILED, "error": FAILED_MESSAGE, "selected": False,
                          **_no_scores(scorer_version)}
            with self.db.writer() as session:
                session.execute(update(Submission).where(Submission.id == submission_id).values(**values)
                                .execution_options(synchronize_session=False))
            summary.rescored += 1
            after = (values["status"], values.get("public_score"), values.get("private_score"))
            if after != before:
                summary.changed += 1
            if after[0] != before[0]:
                key = f"{before[0]}->{after[0]}"
                summary.status_changes[key] = summary.status_changes.get(key, 0) + 1
        return summary


def _no_scores(scorer_version: str) -> dict:
    return {"public_score": None, "private_score": None, "score": None, "public_collections": None,
            "private_collections": None, "private_interval": null(), "scorer_version": scorer_version,
            "scored_at": utcnow()}
