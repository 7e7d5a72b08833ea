"""Server settings: where the database is and the limits of one server process.

Competition rules (deadline, daily limit, final selections) live in the database, set by
``tpugraphs leaderboard init``/``configure``, so that every server process agrees on them. What is
here is per process and comes from the command line or, for ``--workers N`` where uvicorn imports
the app itself, from ``TPUGRAPHS_LEADERBOARD_*`` environment variables.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

DEFAULT_DB_URL = "sqlite:///leaderboard.db"
ENV_PREFIX = "TPUGRAPHS_LEADERBOARD_"


@dataclass(frozen=True)
class Settings:
    """Per-process server settings.

    Attributes:
        db_url: SQLAlchemy URL (``sqlite:///leaderboard.db``, ``postgresql+psycopg://user@host/db``).
        max_upload_bytes: largest submission file accepted; larger uploads get 413 before they are
            read in full. A Kaggle-sized submission is about 0.3 MB.
        scoring_timeout_s: time limit of one scoring, queueing for a scoring slot included; past it
            the submission is marked failed (not counted) and the participant told so.
        scoring_slots: submissions scored at once by this process (threads); more wait in line.
        stuck_grace_s: a submission still "received" this long after its time limit is marked
            failed by any server process (its scorer died with a crashed or restarted server).
        board_cache_s: how long a computed leaderboard is reused; another process's new scores show
            up within this time (this process's own at once).
        display_decimals: digits shown on the web pages; the API and ranking use full precision.
        max_uncounted_per_day: uploads per team and UTC day that may end invalid, failed or refused
            (they do not count toward the daily limit); past it uploads are refused with 429 until
            the next UTC day, before the file is stored or scored.
        max_team_bytes: stored bytes (compressed files) per team; an upload that would pass it is
            refused with 413. Invalid files keep only their first KiB, so this bounds valid ones.
        public_url: the address participants use (``https://lb.example.org``), for a server behind a
            proxy that rewrites the Host header: web forms are accepted only from pages of this
            origin. Empty: from pages of the host the request was sent to. Never used to build links
            (pages link with relative URLs).
        secure_cookies: the browser reaches the site over HTTPS through a proxy that does not say so
            (no ``X-Forwarded-Proto`` from 127.0.0.1): the session cookie gets the ``__Host-`` prefix
            and ``Secure`` anyway. A request that arrives as HTTPS gets them without this.
        full_disclosure: after the close, team pages show the private score of every scored
            submission; by default only of each team's final ones, as on Kaggle.
        header_timeout_s: a request's line and headers must arrive within this (and a kept-alive
            connection's next request too); slower connections are closed (``leaderboard.server``).
        body_timeout_s: a request's body must arrive within this from its headers; slower ones are
            closed, an upload with nothing stored or counted.
        db_lock_timeout_s: how long a statement waits for a database lock held elsewhere; past it
            the request is answered 503 with Retry-After.
        min_free_disk_bytes: SQLite: with less free space on the database's disk, ``/health`` answers
            503 ``disk-full`` (an upload writes its file to the database and its WAL).
        trusted_proxies: addresses or networks (comma-separated) whose ``X-Forwarded-For`` and
            ``X-Forwarded-Proto`` headers are believed (``serve --trusted-proxy``); ``none``: nobody's.
    """

    db_url: str = DEFAULT_DB_URL
    max_upload_bytes: int = 16 * 1024 * 1024
    scoring_timeout_s: float = 60.0
    scoring_slots: int = 2
    stuck_grace_s: float = 60.0
    board_cache_s: float = 1.0
    display_decimals: int = 4
    max_uncounted_per_day: int = 20
    max_team_bytes: int = 200 * 1024 * 1024
    public_url: str = ""
    secure_cookies: bool = False
    full_disclosure: bool = False
    header_timeout_s: float = 10.0
    body_timeout_s: float = 120.0
    db_lock_timeout_s: float = 5.0
    min_free_disk_bytes: int = 64 * 1024 * 1024
    trusted_proxies: str = "127.0.0.1,::1"

    def to_env(self) -> dict[str, str]:
        """The environment variables that :meth:`from_env` reads back."""
        return {ENV_PREFIX + key.upper(): str(value) for key, value in asdict(self).items()}

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        """Settings from ``TPUGRAPHS_LEADERBOARD_*`` variables; defaults for the missing ones."""
        environ = dict(os.environ if environ is None else environ)
        values: dict[str, object] = {}
        for key, default in asdict(cls()).items():
            raw = environ.get(ENV_PREFIX + key.upper())
            if raw is not None:
                values[key] = (raw.strip().lower() in ("1", "true", "yes") if isinstance(default, bool)
                               else type(default)(raw))
        return cls(**values)
