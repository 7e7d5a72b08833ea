"""Connecting to the database, and transactions that serialise writers on SQLite and PostgreSQL.

``Database.reader()`` opens an ordinary transaction. ``Database.writer()`` opens one meant to
write: on SQLite it starts with ``BEGIN IMMEDIATE``, taking the write lock at once, so two writers
never both read a value and then race to update it (a deferred SQLite transaction that reads and
then writes can also fail outright when another writer got in between). On PostgreSQL rows are
locked by the statements themselves (conditional ``UPDATE``, ``SELECT ... FOR UPDATE``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, event, inspect
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from leaderboard.models import Base

# How long a statement waits for a lock another connection holds before it gives up (the server then
# answers 503 with Retry-After): SQLite's busy timeout, PostgreSQL's lock_timeout.
LOCK_TIMEOUT_S = 5.0
# After a checkpoint SQLite truncates its WAL file to this size; without a limit the file stays as
# large as the largest burst of writes until the last connection closes.
SQLITE_WAL_SIZE_LIMIT_BYTES = 4 * 1024 * 1024


def database_problem(exc: BaseException) -> str | None:
    """"read-only", "locked" or "unreachable" for a database error a participant can only wait out
    (the host must act); None for any other error (a bug)."""
    if not isinstance(exc, DBAPIError):
        return None
    text = str(getattr(exc, "orig", exc)).lower()
    if "readonly" in text or "read-only" in text or "read only" in text:
        return "read-only"
    if "locked" in text or "lock timeout" in text or "could not obtain lock" in text:
        return "locked"
    if isinstance(exc, OperationalError) or exc.connection_invalidated:
        return "unreachable"
    return None


WRITE_PROBLEMS = {
    "read-only": "the database refuses writes (a read-only file, file system or server)",
    "locked": "another program holds the database's write lock",
    "unreachable": "the database cannot be reached",
}


class DatabaseURLError(ValueError):
    """A --db value that is not a usable SQLAlchemy URL."""


def sqlite_file(url: str) -> Path | None:
    """The file of an SQLite URL; None for another database, an in-memory one or a malformed URL."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    if parsed.database.startswith("file:"):  # a URI filename (?uri=true): left to SQLite
        return None
    return Path(parsed.database)


def read_only_reason(path: Path) -> str | None:
    """Why an existing SQLite file can only be read, or None when this process can write it.

    In WAL mode SQLite writes the database file, its ``-wal`` and ``-shm`` files, and creates the last
    two in the database's folder when they are missing. ``os.access`` asks the kernel without opening
    the file (a second descriptor on the file would drop SQLite's locks when closed), so the answer
    covers permissions, an immutable file and a read-only file system."""
    suffixes = ("", "-wal", "-shm")
    for suffix in suffixes:
        file = Path(f"{path}{suffix}")
        if file.exists() and not os.access(file, os.W_OK):
            return f"{file.name} is not writable ({_why_not_writable(file)})"
    missing = [suffix for suffix in suffixes[1:] if not Path(f"{path}{suffix}").exists()]
    if missing and not os.access(path.parent, os.W_OK | os.X_OK):
        return f"the database's folder is not writable ({_why_not_writable(path.parent)})"
    return None


def _why_not_writable(path: Path) -> str:
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return "a read-only file system"
    except OSError:
        pass
    return "no write permission, or an immutable file"


def free_disk_bytes(path: Path) -> int | None:
    """Bytes this process may still write on the file system of ``path``'s folder; None if unknown."""
    try:
        stat = os.statvfs(path.parent)
    except OSError:
        return None
    return stat.f_bavail * stat.f_frsize


def make_engine(url: str, lock_timeout_s: float = LOCK_TIMEOUT_S) -> Engine:
    """An engine for ``url``; SQLite gets WAL mode, a busy timeout and explicit BEGIN statements,
    PostgreSQL a lock timeout. An SQLite file in a folder the server cannot write, without its
    ``-wal`` and ``-shm`` files, is opened read-only and immutable (SQLite could not open it otherwise):
    pages are served, every write answers 503 "read-only", until a restart with a writable folder."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise DatabaseURLError(
            f"{url!r} is not a database URL; expected e.g. sqlite:///leaderboard.db or "
            "postgresql+psycopg://user:password@host/dbname"
        ) from None
    try:
        if parsed.get_backend_name() == "sqlite":
            path = sqlite_file(url)
            if path is not None and path.is_file() and _unopenable_for_writing(path):
                parsed = make_url(f"sqlite:///file:{quote(str(path.resolve()))}?mode=ro&immutable=1&uri=true")
            engine = create_engine(parsed, connect_args={"timeout": lock_timeout_s,
                                                         "check_same_thread": False})
            _configure_sqlite(engine)
        else:
            engine = create_engine(parsed, pool_pre_ping=True, pool_size=10, max_overflow=20,
                                   connect_args={"options": f"-c lock_timeout={int(lock_timeout_s * 1000)}"})
    except (NoSuchModuleError, ModuleNotFoundError) as exc:
        raise DatabaseURLError(f"no database driver for {parsed.drivername!r}: {exc}") from None
    return engine


def _unopenable_for_writing(path: Path) -> bool:
    """Whether SQLite would fail to open this WAL database at all: it cannot create the missing ``-shm``."""
    return (not Path(f"{path}-shm").exists() and not os.access(path.parent, os.W_OK | os.X_OK))


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:
        dbapi_connection.isolation_level = None  # let us emit BEGIN ourselves (pysqlite's is deferred)
        cursor = dbapi_connection.cursor()
        # WAL lets readers (the leaderboard) go on while a submission is being written (a database opened
        # read-only and immutable keeps its mode: SQLite ignores the request).
        if cursor.execute("PRAGMA journal_mode").fetchone()[0] != "memory":
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA journal_size_limit={SQLITE_WAL_SIZE_LIMIT_BYTES}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection) -> None:
        immediate = connection.get_execution_options().get("write_transaction", False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


class Database:
    """The engine plus session factories for reading and for writing."""

    def __init__(self, url: str, lock_timeout_s: float = LOCK_TIMEOUT_S) -> None:
        self.url = url
        self.lock_timeout_s = lock_timeout_s
        self.engine = make_engine(url, lock_timeout_s)
        self._read_sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._write_sessions = sessionmaker(
            self.engine.execution_options(write_transaction=True), expire_on_commit=False
        )

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def reader(self) -> Iterator[Session]:
        """A session in a transaction for reads; rolled back at the end."""
        with self._read_sessions() as session, session.begin():
            yield session

    @contextmanager
    def writer(self) -> Iterator[Session]:
        """A session in a write transaction; committed on success, rolled back on an exception."""
        with self._write_sessions() as session, session.begin():
            yield session

    def create_schema(self) -> None:
        Base.metadata.create_all(self.engine)

    def has_schema(self) -> bool:
        return inspect(self.engine).has_table("competition")

    def checkpoint(self, *, truncate: bool = False) -> None:
        """SQLite: copy the WAL into the database file; ``truncate`` also empties the WAL file (it
        waits for readers, so only at shutdown). Nothing to do on PostgreSQL."""
        if self.dialect != "sqlite":
            return
        with self.engine.connect() as connection:
            connection.exec_driver_sql(f"PRAGMA wal_checkpoint({'TRUNCATE' if truncate else 'PASSIVE'})")

    def write_problem(self, min_free_bytes: int = 0) -> tuple[str, str] | None:
        """Why a write would fail now, as ``(state, reason)``; None when it would succeed.

        SQLite: the database's files and folder must be writable by this process ("read-only": a
        rolled-back write cannot tell, since in WAL mode it never reaches the file, and a connection
        opened before the file turned read-only still writes its WAL), and its disk must have
        ``min_free_bytes`` free ("disk-full": SQLite reuses its WAL, so small writes still succeed
        on a full disk until an upload needs room). Both databases: a write rolled back ("read-only",
        "locked", "unreachable")."""
        path = sqlite_file(self.url) if self.dialect == "sqlite" else None
        if path is not None:
            reason = read_only_reason(path)
            if reason is not None:
                return "read-only", reason
            free = free_disk_bytes(path)
            if free is not None and free < min_free_bytes:
                return "disk-full", (f"{free / 2**20:.1f} MiB free on the database's disk; uploads need at "
                                     f"least {min_free_bytes / 2**20:.0f} MiB")
        state = self.writable()
        return None if state == "ok" else (state, WRITE_PROBLEMS[state])

    def writable(self) -> str:
        """"ok", or why nothing can be written now ("read-only", "locked", "unreachable"): a write that is
        rolled back, waiting at most a second for a lock."""
        sqlite = self.dialect == "sqlite"
        try:
            with self.engine.connect() as connection:
                if sqlite:
                    connection.exec_driver_sql("PRAGMA busy_timeout=1000")
                    connection.commit()
                try:
                    if not sqlite:
                        connection.exec_driver_sql("SET LOCAL lock_timeout = '1s'")
                    connection.exec_driver_sql("UPDATE competition SET id = id WHERE id = 1")
                finally:
                    connection.rollback()
                    if sqlite:
                        connection.exec_driver_sql(f"PRAGMA busy_timeout={int(self.lock_timeout_s * 1000)}")
                        connection.commit()
        except DBAPIError as exc:
            return database_problem(exc) or "unreachable"
        return "ok"

    def dispose(self) -> None:
        self.engine.dispose()
