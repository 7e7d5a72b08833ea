"""Concurrent uploads never count past the daily limit, on SQLite and on a real PostgreSQL server.

Ten uploads for one team with a limit of five go to a real HTTP server at once. A barrier inside
scoring holds every request until all ten have passed the early quota check, so all ten then race
for the counter; exactly five may win. The multi-process test runs ``serve --workers 2``.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from lb_support import LiveServer, bearer, init_competition, served_in_a_child

from leaderboard.app import create_app
from leaderboard.models import REFUSED, SCORED, DailyQuota, Submission
from leaderboard.settings import Settings

UPLOADS, LIMIT = 10, 5


def _fire(url: str, token: str, contents: list[bytes]) -> list[httpx.Response]:
    def one(content: bytes) -> httpx.Response:
        return httpx.post(f"{url}/api/submissions", headers=bearer(token), timeout=60,
                          files={"file": ("s.csv", content, "text/csv")})

    with ThreadPoolExecutor(len(contents)) as pool:
        return list(pool.map(one, contents))


def _race(db_url: str, tiny) -> None:
    leaderboard = init_competition(db_url, tiny, daily_limit=LIMIT)
    _, token = leaderboard.add_team("Racers")
    app = create_app(Settings(db_url=db_url, board_cache_s=0.0))
    with LiveServer(app) as server:
        barrier = threading.Barrier(UPLOADS, timeout=30)
        original = app.state.scorer.score

        def score_together(content: bytes, name: str):
            barrier.wait()  # every upload has passed the early check before any is counted
            return original(content, name)

        app.state.scorer.score = score_together
        answers = _fire(server.url, token, [tiny.submission(seed) for seed in range(UPLOADS)])
    codes = sorted(a.status_code for a in answers)
    assert codes == [201] * LIMIT + [429] * (UPLOADS - LIMIT), [a.text for a in answers]
    with leaderboard.db.reader() as session:
        statuses = sorted(s.status for s in session.query(Submission))
        used = session.query(DailyQuota).one().used
    assert statuses == [REFUSED] * (UPLOADS - LIMIT) + [SCORED] * LIMIT
    assert used == LIMIT
    leaderboard.db.dispose()


def test_concurrent_uploads_respect_the_limit_on_sqlite(sqlite_url, tiny):
    _race(sqlite_url, tiny)


@pytest.mark.slow
def test_concurrent_uploads_respect_the_limit_on_postgresql(postgres_db, tiny):
    _race(postgres_db, tiny)


@pytest.mark.slow
def test_two_server_processes_share_one_limit_on_postgresql(postgres_db, tiny):
    leaderboard = init_competition(postgres_db, tiny, daily_limit=LIMIT)
    _, token = leaderboard.add_team("Racers")
    with served_in_a_child(postgres_db, "--workers", "2") as (url, _):
        answers = _fire(url, token, [tiny.submission(seed) for seed in range(UPLOADS)])
    assert sorted(a.status_code for a in answers) == [201] * LIMIT + [429] * (UPLOADS - LIMIT)
    with leaderboard.db.reader() as session:
        assert session.query(DailyQuota).one().used == LIMIT
        assert session.query(Submission).filter_by(status=SCORED).count() == LIMIT
    leaderboard.db.dispose()
