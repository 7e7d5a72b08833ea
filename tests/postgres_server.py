"""A throw-away PostgreSQL server on a loopback port, for the tests that need one (the leaderboard's
PostgreSQL tests, ``tpugraphs tune``'s shared study). scripts/install-test-services.sh installs the
server; CI must run these tests, so a missing server is the caller's ``missing(reason)`` (skip locally,
fail under CI)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def postgres_bin() -> Path:
    """$PG_BIN, else the newest /usr/lib/postgresql/<version>/bin (Debian's layout)."""
    if os.environ.get("PG_BIN"):
        return Path(os.environ["PG_BIN"])
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: int(p.parts[-3])
                   if p.parts[-3].isdigit() else 0)
    return found[-1].parent if found else Path("/usr/lib/postgresql/15/bin")


PG_BIN = postgres_bin()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def postgres_server(missing: Callable[[str], None]) -> Iterator[str]:
    """Start a server (as the postgres user when running as root), yield its SQLAlchemy URL (psycopg 3),
    stop it and remove its files."""
    for tool in ("initdb", "pg_ctl"):
        if not (PG_BIN / tool).exists():
            missing(f"PostgreSQL binaries not found in {PG_BIN} (apt-get install postgresql)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        missing("psycopg is not installed (pip install 'psycopg[binary]')")
    as_root = os.geteuid() == 0
    if as_root and shutil.which("runuser") is None:
        missing("running as root without runuser: cannot start PostgreSQL as the postgres user")
    base = Path(tempfile.mkdtemp(prefix="lb-pg-"))
    data, sockets = base / "data", base / "run"
    data.mkdir()
    sockets.mkdir()
    if as_root:
        for folder in (base, data, sockets):
            shutil.chown(folder, "postgres")
        base.chmod(0o755)

    def as_postgres(*cmd: str) -> subprocess.CompletedProcess:
        full = ["runuser", "-u", "postgres", "--", *cmd] if as_root else list(cmd)
        return subprocess.run(full, capture_output=True, text=True, timeout=120)

    port = _free_port()
    done = as_postgres(str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                       "--encoding=UTF8", "--no-sync")
    if done.returncode != 0:
        pytest.fail(f"initdb failed: {done.stderr}")
    options = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    done = as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(base / "log"),
                       "-w", "-t", "60", "start")
    if done.returncode != 0:
        log = (base / "log").read_text() if (base / "log").exists() else ""
        pytest.fail(f"PostgreSQL did not start: {done.stderr}\n{log}")
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(base, ignore_errors=True)
