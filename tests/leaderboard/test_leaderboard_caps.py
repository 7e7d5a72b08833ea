"""The uncounted-upload and storage caps hold under concurrency, and refused files leave no bloat (issue 24).

A burst of 30 concurrent invalid 1 MB uploads from one team goes to a real HTTP server while
scoring is held at a gate: uploads still being scored count against the caps, so at most the cap is
recorded and the rest are answered 429 at once; the gate opens when they have been. The database
(SQLite with its WAL, or PostgreSQL) grows by far less than the refused megabytes: a file that does
not count is never written whole. Rows that end failed keep no more than invalid ones.
"""

from __future__ import annotations

import base64
import random
import threading
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from lb_support import LiveServer, bearer, init_competition, upload

from leaderboard.app import create_app
from leaderboard.models import FAILED, INVALID, RECEIVED, Submission, utcnow
from leaderboard.service import KEPT_PREFIX_BYTES
from leaderboard.settings import Settings

BURST, CAP = 30, 20
MIB = 1 << 20


def _invalid_mib(tiny, seed: int) -> bytes:
    """An invalid file of about 1 MiB that compresses poorly (base64 of random bytes after a bad header)."""
    noise = base64.b64encode(random.Random(seed).randbytes(3 * MIB // 4))
    return tiny.invalid_submission() + noise


def _burst(url: str, token: str, contents: list[bytes], release: threading.Event,
           refusals_expected: int) -> list[httpx.Response]:
    """Upload all at once; open the gate once ``refusals_expected`` answers came back (or the rest stalls)."""
    def one(content: bytes) -> httpx.Response:
        return httpx.post(f"{url}/api/submissions", headers=bearer(token), timeout=90,
                          files={"file": ("s.csv", content, "text/csv")})

    answers = []
    with ThreadPoolExecutor(len(contents)) as pool:
        for done in as_completed([pool.submit(one, c) for c in contents]):
            answers.append(done.result())
            if len(answers) >= refusals_expected:
                release.set()
    return answers


def _gated(app, release: threading.Event) -> None:
    original = app.state.scorer.score

    def score_at_the_gate(content: bytes, name: str):
        release.wait(timeout=60)  # every upload is in flight until the refusals are all answered
        return original(content, name)

    app.state.scorer.score = score_at_the_gate


def _burst_of_invalid_uploads(db_url: str, tiny, size_of: Callable[[], int]) -> tuple[list[int], int]:
    leaderboard = init_competition(db_url, tiny, daily_limit=5)
    _, token = leaderboard.add_team("Burst")
    settings = Settings(db_url=db_url, board_cache_s=0.0, max_upload_bytes=2 * MIB, max_uncounted_per_day=CAP)
    app = create_app(settings)
    release = threading.Event()
    before = size_of()
    with LiveServer(app) as server:
        _gated(app, release)
        answers = _burst(server.url, token, [_invalid_mib(tiny, seed) for seed in range(BURST)], release,
                         refusals_expected=BURST - CAP)
        growth_running = size_of() - before
    codes = sorted(a.status_code for a in answers)
    refused = [a for a in answers if a.status_code == 429]
    assert all(int(a.headers["Retry-After"]) > 0 and "nothing was stored" in a.json()["detail"]
               for a in refused)
    with leaderboard.db.reader() as session:
        statuses = [s.status for s in session.query(Submission)]
    assert statuses == [INVALID] * CAP
    leaderboard.db.dispose()
    return codes, max(growth_running, size_of() - before)


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file())


def test_a_burst_of_invalid_uploads_stops_at_the_cap_on_sqlite(tmp_path, tiny):
    url = f"sqlite:///{tmp_path / 'leaderboard.db'}"
    codes, growth = _burst_of_invalid_uploads(url, tiny, lambda: _folder_bytes(tmp_path))
    assert codes == [422] * CAP + [429] * (BURST - CAP)
    # 30 MiB arrived, 20 KiB is kept: the database and its WAL grow by well under 1 MB.
    assert growth < MIB, f"the data folder grew by {growth} bytes"


@pytest.mark.slow
def test_a_burst_of_invalid_uploads_stops_at_the_cap_on_postgresql(postgres_db, tiny):
    from sqlalchemy import create_engine, text

    engine = create_engine(postgres_db)

    def database_bytes() -> int:
        with engine.connect() as connection:
            return int(connection.scalar(text("SELECT pg_database_size(current_database())")))

    codes, growth = _burst_of_invalid_uploads(postgres_db, tiny, database_bytes)
    engine.dispose()
    assert codes == [422] * CAP + [429] * (BURST - CAP)
    assert growth < MIB, f"the database grew by {growth} bytes"


def test_uploads_in_flight_count_against_the_storage_cap(sqlite_url, tiny):
    leaderboard = init_competition(sqlite_url, tiny, daily_limit=10)
    _, token = leaderboard.add_team("Hoarders")
    files = [tiny.submission(seed) for seed in range(8)]
    room = 3 * max(len(f) for f in files)  # three in flight at their whole size fit, a fourth does not
    app = create_app(Settings(db_url=sqlite_url, board_cache_s=0.0, max_team_bytes=room))
    release = threading.Event()
    with LiveServer(app) as server:
        _gated(app, release)
        answers = _burst(server.url, token, files, release, refusals_expected=len(files) - 3)
    assert sorted(a.status_code for a in answers) == [201] * 3 + [413] * (len(files) - 3)
    assert leaderboard.stored_bytes(leaderboard.authenticate(token).id) <= room
    leaderboard.db.dispose()


def test_sequential_invalid_uploads_do_not_grow_the_sqlite_folder(tmp_path, tiny):
    from fastapi.testclient import TestClient

    url = f"sqlite:///{tmp_path / 'leaderboard.db'}"
    leaderboard = init_competition(url, tiny)
    token = leaderboard.add_team("Careless")[1]
    before = _folder_bytes(tmp_path)
    settings = Settings(db_url=url, max_upload_bytes=2 * MIB, max_uncounted_per_day=100)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        for seed in range(BURST):
            assert upload(client, token, _invalid_mib(tiny, seed)).status_code == 422
    growth = _folder_bytes(tmp_path) - before
    assert growth < MIB, f"30 invalid 1 MiB uploads grew the folder by {growth} bytes"
    leaderboard.db.dispose()


# ---------------------------------------------------------------------------------------------
# Failed rows keep at most what invalid rows keep


def _stored(leaderboard, submission_id: int) -> bytes:
    with leaderboard.db.reader() as session:
        return zlib.decompress(session.get(Submission, submission_id).content)


@pytest.mark.parametrize("fault", ["timeout", "crash"])
def test_a_failed_scoring_keeps_only_the_prefix(leaderboard, tiny, fault):
    from leaderboard.errors import ScoringFailed, ScoringTimedOut
    from leaderboard.scorer import ScoringTimeout

    team = leaderboard.add_team("Unlucky")[0]
    content = tiny.submission(1) + b"\n" * 5000

    def broken(_content: bytes, _name: str):
        raise ScoringTimeout("too slow") if fault == "timeout" else RuntimeError("scorer bug")

    expected = ScoringTimedOut if fault == "timeout" else ScoringFailed
    with pytest.raises(expected) as caught:
        leaderboard.submit(team, content, "s.csv", broken, scorer_version="v")
    submission_id = caught.value.extra["submission_id"]
    assert _stored(leaderboard, submission_id) == content[:KEPT_PREFIX_BYTES]
    assert leaderboard.submission_file(team, submission_id)[2] is False  # offered as a part, not the file


def test_a_swept_row_keeps_only_the_prefix(leaderboard, tiny):
    team = leaderboard.add_team("Crashed")[0]
    content = tiny.submission(2) + b"\n" * 5000
    seen: dict[str, int] = {}

    def server_dies(_content: bytes, _name: str):
        with leaderboard.db.reader() as session:  # the row as a crash here would leave it
            row = session.query(Submission).one()
            seen["id"], seen["status"] = row.id, row.status
        assert leaderboard.sweep_stuck(utcnow() + timedelta(seconds=1)) == 1
        raise RuntimeError("the process died")

    with pytest.raises(Exception, match="server"):
        leaderboard.submit(team, content, "s.csv", server_dies, scorer_version="v")
    assert seen["status"] == RECEIVED
    with leaderboard.db.reader() as session:
        assert session.get(Submission, seen["id"]).status == FAILED
    assert _stored(leaderboard, seen["id"]) == content[:KEPT_PREFIX_BYTES]


def test_a_scored_file_is_kept_whole(client, leaderboard, tiny):
    token = leaderboard.add_team("Careful")[1]
    content = tiny.submission(3)
    answer = upload(client, token, content)
    assert answer.status_code == 201
    assert _stored(leaderboard, answer.json()["id"]) == content

