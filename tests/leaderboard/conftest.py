"""Fixtures for the leaderboard tests: a tiny competition, apps, PostgreSQL, Chromium.

PostgreSQL and Chromium tests skip with a reason when the binaries are missing, except under CI
(the environment variable CI set), where they must run. Helpers live in lb_support.py.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from lb_support import TinyCompetition, build_tiny_competition, init_competition, skip_or_fail

from leaderboard.service import Leaderboard
from leaderboard.settings import Settings
from tests.postgres_server import postgres_server

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def pytest_configure(config) -> None:
    # Starlette's TestClient announces a move from httpx to httpx2; nothing to act on here.
    config.addinivalue_line("filterwarnings", "ignore:Using `httpx` with `starlette.testclient`")


@pytest.fixture(scope="session")
def tiny(tmp_path_factory) -> TinyCompetition:
    return build_tiny_competition(tmp_path_factory.mktemp("tiny_competition"))


# ---------------------------------------------------------------------------------------------
# A competition database and an app on it


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'leaderboard.db'}"


@pytest.fixture
def leaderboard(sqlite_url, tiny) -> Leaderboard:
    lb = init_competition(sqlite_url, tiny, daily_limit=3, max_selected=2)
    yield lb
    lb.db.dispose()


@pytest.fixture
def settings(sqlite_url) -> Settings:
    return Settings(db_url=sqlite_url, max_upload_bytes=64 * 1024, board_cache_s=0.0, scoring_timeout_s=30)


@pytest.fixture
def client(leaderboard, settings):
    from fastapi.testclient import TestClient

    from leaderboard.app import create_app

    with TestClient(create_app(settings), raise_server_exceptions=False) as test_client:
        yield test_client


# ---------------------------------------------------------------------------------------------
# PostgreSQL 15, started for the test session


@pytest.fixture(scope="session")
def postgres_url():
    """A throw-away PostgreSQL server on a loopback port; yields a SQLAlchemy URL (psycopg 3)."""
    with postgres_server(skip_or_fail) as url:
        yield url


@pytest.fixture
def postgres_db(postgres_url):
    """A fresh database on the session's PostgreSQL server, dropped afterwards."""
    import psycopg

    name = f"lb_{os.getpid()}_{time.monotonic_ns()}"
    admin = postgres_url.replace("postgresql+psycopg", "postgresql")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield postgres_url.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# ---------------------------------------------------------------------------------------------
# Chromium, driven by Playwright


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        skip_or_fail(f"Chromium not found at {CHROMIUM} (apt-get install -y chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("the playwright Python package is not installed")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update"],
        )
        yield chromium
        chromium.close()
