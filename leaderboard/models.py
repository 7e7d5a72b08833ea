"""The leaderboard's tables.

One database holds one competition. Everything in it is host-only: the hidden solution, token
hashes, submitted files and private scores. Times are naive UTC ``datetime`` values (SQLite has no
time zones; PostgreSQL would otherwise shift them by the server's zone).
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from sqlalchemy import (
    JSON,
    Boolean,
    Date,
    DateTime,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# The layout of these tables; a database of another version is refused with both versions named.
SCHEMA_VERSION = 1
MAX_ID = 2**31 - 1  # the largest INTEGER key on PostgreSQL; a larger id names no row

# Submission statuses. "received" is transient: scoring is synchronous, so a row keeps it only while
# its request runs; one still "received" after the time limit belonged to a server that died.
RECEIVED, SCORED, INVALID, FAILED, REFUSED = "received", "scored", "invalid", "failed", "refused"


def utcnow() -> datetime:
    """Now, as the naive UTC datetime the tables store."""
    return datetime.now(UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    pass


class CompetitionRow(Base):
    """The competition's rules and hidden solution (a single row, id 1)."""

    __tablename__ = "competition"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    daily_limit: Mapped[int] = mapped_column(Integer)
    max_selected: Mapped[int] = mapped_column(Integer)
    deadline: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    revealed_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime)
    schema_version: Mapped[int] = mapped_column(Integer)
    # The solution file as given to `init`, byte for byte; only ever read to build a Scorer.
    solution_csv: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)
    solution_sha256: Mapped[str] = mapped_column(String(64))
    solution_rows: Mapped[int] = mapped_column(Integer)
    # Host option: after the reveal the private board shows each counted submission's bootstrap interval.
    private_intervals: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class Team(Base):
    __tablename__ = "team"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100))  # as shown (leaderboard.names.displayed)
    # What the name looks like (leaderboard.names.name_key): two teams never look alike.
    name_key: Mapped[str] = mapped_column(String(400), unique=True)
    token_hash: Mapped[str] = mapped_column(String(64))  # sha256 hex of the token's secret part
    created_at: Mapped[datetime] = mapped_column(DateTime)
    disqualified_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    disqualified_reason: Mapped[str | None] = mapped_column(Text, nullable=True)


class Submission(Base):
    __tablename__ = "submission"
    __table_args__ = (Index("ix_submission_team_status", "team_id", "status"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("team.id"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, index=True)
    file_name: Mapped[str] = mapped_column(String(255))
    size_bytes: Mapped[int] = mapped_column(Integer)
    sha256: Mapped[str] = mapped_column(String(64))
    content: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)  # zlib-compressed upload
    status: Mapped[str] = mapped_column(String(16), index=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)  # participant-safe text only
    public_score: Mapped[float | None] = mapped_column(Double, nullable=True)
    private_score: Mapped[float | None] = mapped_column(Double, nullable=True)
    score: Mapped[float | None] = mapped_column(Double, nullable=True)  # Public + Private rows
    public_collections: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    private_collections: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    scorer_version: Mapped[str | None] = mapped_column(String(64), nullable=True)
    scored_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    quota_day: Mapped[date | None] = mapped_column(Date, nullable=True)  # UTC day it counted on
    selected: Mapped[bool] = mapped_column(Boolean, default=False)
    description: Mapped[str | None] = mapped_column(Text, nullable=True)  # the team's note, set at upload
    # The private score's bootstrap interval over the Private graphs (leaderboard.intervals), computed once
    # when first shown after the reveal; cleared by a rescore. Host-only until the private board is shown.
    private_interval: Mapped[dict | None] = mapped_column(JSON, nullable=True)


class WebSession(Base):
    """One sign-in of a browser (leaderboard.sessions): the cookie is ``<id>.<secret>``, only the
    secret's SHA-256 is stored; sign-out and ``reset-token`` delete the row, which ends the session."""

    __tablename__ = "web_session"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("team.id", ondelete="CASCADE"), index=True)
    secret_hash: Mapped[str] = mapped_column(String(64))
    browser_digest: Mapped[str] = mapped_column(String(64))  # sessions.key_digest of the browser key
    created_at: Mapped[datetime] = mapped_column(DateTime)


class DailyQuota(Base):
    """Scored submissions of a team on one UTC day: the counter the daily limit is checked on."""

    __tablename__ = "daily_quota"

    team_id: Mapped[int] = mapped_column(ForeignKey("team.id"), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    used: Mapped[int] = mapped_column(Integer, default=0)
