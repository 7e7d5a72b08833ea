"""Leaderboard server speed (issue 4, item 5), on loopback, with bounded loops.

1. Scoring throughput: Kaggle-sized submissions (benchmarks/kaggle_sized.py: 844 tile graphs with
   ~1M configs, 50 layout graphs x 1000 configs) uploaded over HTTP to ``tpugraphs leaderboard serve
   --workers 2`` (SQLite), from a few concurrent clients; every answer must be 201 with the same
   public score as the in-process scorer. Also the in-process rate of ``Scorer.score`` (one thread).
   Target: at least 20 submissions scored per second on 2 cores.
2. Board polling: a competition with 600 teams x 5 scored submissions; 50 clients poll
   ``GET /api/leaderboard`` on keep-alive connections (closed loop: each sends its next request as soon
   as the answer arrives, the harshest polling) against one server process. Target: p99 under 100 ms.

Client and server share the machine's cores, so the figures are conservative.

usage: python -m benchmarks.bench_leaderboard [--uploads 100] [--polls 60]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import httpx

from benchmarks.kaggle_sized import write_case
from competition.scoring import load_solution
from leaderboard.database import Database
from leaderboard.models import SCORED, Submission, Team, utcnow
from leaderboard.names import name_key
from leaderboard.scorer import Scorer
from leaderboard.service import Leaderboard

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """``tpugraphs leaderboard serve`` in a subprocess, until the ``with`` block ends."""

    def __init__(self, db_url: str, workers: int, *extra: str) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.cmd = [sys.executable, "-m", "competition.cli", "leaderboard", "serve", "--db", db_url,
                    "--port", str(self.port), "--workers", str(workers), "--log-level", "warning",
                    "--scoring-slots", "2", *extra]

    def __enter__(self) -> Server:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(self.cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"server exited: {self.process.stderr.read().decode()}")
            try:
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise SystemExit("server did not start within 120 s")

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def _competition(tmp: Path, solution_csv: bytes, *, name: str) -> tuple[str, Leaderboard]:
    url = f"sqlite:///{tmp / (name + '.db')}"
    leaderboard = Leaderboard.initialise(Database(url), name=name, solution_csv=solution_csv,
                                         daily_limit=100_000)
    return url, leaderboard


def bench_scoring(tmp: Path, uploads: int, concurrency: int = 4, workers: int = 2) -> dict:
    solution_path, submission_path = write_case(tmp / "case")
    solution_csv, content = solution_path.read_bytes(), submission_path.read_bytes()

    scorer = Scorer(load_solution(solution_csv))
    expected = scorer.score(content, "submission.csv").public
    times = []
    for _ in range(20):
        started = time.perf_counter()
        scorer.score(content, "submission.csv")
        times.append(time.perf_counter() - started)
    scorer.close()

    url, leaderboard = _competition(tmp, solution_csv, name="scoring")
    tokens = [leaderboard.add_team(f"team{i}")[1] for i in range(concurrency)]
    leaderboard.db.dispose()
    with Server(url, workers) as server:
        def upload_many(token: str, count: int) -> list[tuple[int, float | None]]:
            out = []
            with httpx.Client(base_url=server.url, timeout=120) as client:
                for _ in range(count):
                    answer = client.post("/api/submissions", headers={"Authorization": f"Bearer {token}"},
                                         files={"file": ("submission.csv", content, "text/csv")})
                    out.append((answer.status_code, answer.json().get("public_score")))
            return out

        upload_many(tokens[0], 2)  # warm-up: both workers' first requests
        per_client = max(1, uploads // concurrency)
        started = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as pool:
            results = [r for batch in pool.map(upload_many, tokens, [per_client] * concurrency)
                       for r in batch]
        elapsed = time.perf_counter() - started
    bad = [r for r in results if r != (201, expected)]
    if bad:
        raise SystemExit(f"{len(bad)} uploads did not score as expected, e.g. {bad[0]}")
    return {
        "submission_bytes": len(content),
        "in_process_ms_median": statistics.median(times) * 1e3,
        "in_process_per_s_one_thread": 1 / statistics.median(times),
        "http_uploads": len(results),
        "http_clients": concurrency,
        "server_workers": workers,
        "http_scored_per_s": len(results) / elapsed,
    }


def _fill_board(leaderboard: Leaderboard, teams: int, per_team: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    now = utcnow()
    with leaderboard.db.writer() as session:
        session.add_all(Team(id=t + 1, name=f"team {t:04d}", name_key=name_key(f"team {t:04d}"),
                             token_hash="", created_at=now)
                        for t in range(teams))
        session.flush()
        session.add_all(
            Submission(team_id=t + 1, created_at=now - timedelta(minutes=rng.randrange(100_000)),
                       file_name="s.csv", size_bytes=1, sha256="", content=b"", status=SCORED,
                       public_score=rng.random(), private_score=rng.random(), score=rng.random(),
                       public_collections={}, private_collections={})
            for t in range(teams) for _ in range(per_team)
        )


async def _poll(port: int, count: int, latencies: list[float]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = b"GET /api/leaderboard HTTP/1.1\r\nHost: bench\r\n\r\n"
    try:
        for _ in range(count):
            started = time.perf_counter()
            writer.write(request)
            await writer.drain()
            status = await reader.readline()
            if b" 200 " not in status:
                raise SystemExit(f"leaderboard answered {status!r}")
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            latencies.append(time.perf_counter() - started)
    finally:
        writer.close()


async def _poll_all(port: int, clients: int, polls: int) -> tuple[list[float], float]:
    latencies: list[float] = []
    started = time.perf_counter()
    await asyncio.gather(*(_poll(port, polls, latencies) for _ in range(clients)))
    return latencies, time.perf_counter() - started


def bench_board(tmp: Path, *, teams: int = 600, per_team: int = 5, clients: int = 50, polls: int = 60,
                workers: int = 1, board_cache_s: float = 1.0) -> dict:
    solution_path, _ = write_case(tmp / "case")
    url, leaderboard = _competition(tmp, solution_path.read_bytes(), name=f"board{workers}-{board_cache_s}")
    _fill_board(leaderboard, teams, per_team)
    leaderboard.db.dispose()
    with Server(url, workers, "--board-cache", str(board_cache_s)) as server:
        body = httpx.get(server.url + "/api/leaderboard").content
        asyncio.run(_poll_all(server.port, clients, 5))  # warm-up
        latencies, elapsed = asyncio.run(_poll_all(server.port, clients, polls))
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1e3

    return {
        "teams": teams,
        "board_bytes": len(body),
        "clients": clients,
        "requests": len(latencies),
        "server_workers": workers,
        "p50_ms": pct(0.50),
        "p90_ms": pct(0.90),
        "p99_ms": pct(0.99),
        "max_ms": latencies[-1] * 1e3,
        "requests_per_s": len(latencies) / elapsed,
    }


def run(uploads: int = 100, polls: int = 60) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        return {
            "cpu_count": os.cpu_count(),
            "scoring": bench_scoring(Path(tmp), uploads),
            "board": bench_board(Path(tmp), polls=polls),
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--uploads", type=int, default=100,
                        help="Kaggle-sized uploads to time (default: 100)")
    parser.add_argument("--polls", type=int, default=60, help="requests per polling client (default: 60)")
    args = parser.parse_args()
    figures = run(args.uploads, args.polls)
    print(json.dumps(figures, indent=2))
    scoring, board = figures["scoring"], figures["board"]
    ok = scoring["http_scored_per_s"] >= 20 and board["p99_ms"] < 100
    print(f"\nscoring over HTTP ({scoring['server_workers']} workers, {scoring['http_clients']} clients): "
          f"{scoring['http_scored_per_s']:.1f} Kaggle-sized submissions/s (target >= 20); in process "
          f"{scoring['in_process_ms_median']:.1f} ms each")
    print(f"public board, {board['clients']} polling clients, {board['teams']} teams: p50 "
          f"{board['p50_ms']:.1f} ms, p99 {board['p99_ms']:.1f} ms (target < 100 ms), "
          f"{board['requests_per_s']:.0f} requests/s")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
