"""Helpers shared by the leaderboard tests: a tiny competition, uploads, a live server.

The tiny competition is built here (a few npz test graphs per collection and a matching solution),
so these tests need nothing else. Kept out of conftest.py under a name of its own so that
``from lb_support import ...`` cannot pick up another folder's conftest.
"""

from __future__ import annotations

import csv
import io
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np
import pytest

from competition.collections import COLLECTIONS
from competition.data.graphs import LayoutGraph, TileGraph, save_graph
from competition.data.tree import split_dir
from leaderboard.database import Database
from leaderboard.service import Leaderboard

IN_CI = bool(os.environ.get("CI"))

TILE_CONFIGS = [3, 7, 10, 12, 8, 6]
LAYOUT_CONFIGS = [9, 12]  # per layout collection


def skip_or_fail(reason: str) -> None:
    """Skip locally; under CI a missing service is a failure (CI must run these tests)."""
    if IN_CI:
        pytest.fail(f"{reason} (CI is set: this test must run there)")
    pytest.skip(reason)


# ---------------------------------------------------------------------------------------------
# A tiny competition


def _tile_graph(rng: np.random.Generator, n_configs: int) -> TileGraph:
    n = 4
    return TileGraph(
        node_feat=rng.random((n, 140), dtype=np.float32),
        node_opcode=rng.integers(1, 120, n).astype(np.uint8),
        edge_index=np.array([[1, 0], [2, 1], [3, 2]], dtype=np.int64),
        config_runtime=np.zeros(n_configs, dtype=np.int64),  # test files carry no labels
        config_feat=rng.random((n_configs, 24), dtype=np.float32),
        config_runtime_normalizers=np.zeros(n_configs, dtype=np.int64),
    )


def _layout_graph(rng: np.random.Generator, n_configs: int) -> LayoutGraph:
    n, nc = 5, 2
    return LayoutGraph(
        node_feat=rng.random((n, 140), dtype=np.float32),
        node_opcode=rng.integers(1, 120, n).astype(np.uint8),
        edge_index=np.array([[1, 0], [2, 1], [3, 2], [4, 3]], dtype=np.int64),
        config_runtime=np.zeros(n_configs, dtype=np.int64),
        node_config_feat=rng.integers(-1, 6, (n_configs, nc, 18)).astype(np.float32),
        node_config_ids=np.array([1, 3], dtype=np.int64),
        node_splits=np.array([[0]], dtype=np.int64),
    )


@dataclass
class TinyCompetition:
    """Public data, solution and submission makers of a small competition."""

    data_dir: Path
    solution_path: Path
    runtimes: dict[str, np.ndarray]  # row ID -> hidden runtimes
    usage: dict[str, str]
    private_strings: list[str] = field(default_factory=list)  # text that must never reach a participant

    @property
    def solution_csv(self) -> bytes:
        return self.solution_path.read_bytes()

    def submission(self, seed: int | None = None, *, noise: float = 0.5) -> bytes:
        """A valid submission: the true order (``seed`` None) or a noisy ranking of it."""
        rng = np.random.default_rng(seed)
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["ID", "TopConfigs"])
        for row_id, runtime in self.runtimes.items():
            key = np.log(runtime.astype(float))
            if seed is not None:
                key = key + rng.normal(0, noise, runtime.size)
            order = np.argsort(key, kind="stable")
            if row_id.startswith("tile:"):
                order = order[:5]
            writer.writerow([row_id, ";".join(map(str, order))])
        return out.getvalue().encode()

    def invalid_submission(self) -> bytes:
        """A file with a wrong header and a missing row: refused with a readable message."""
        rows = self.submission().decode().splitlines()
        return ("Id,Top\n" + "\n".join(rows[2:]) + "\n").encode()


def build_tiny_competition(root: Path, seed: int = 7) -> TinyCompetition:
    rng = np.random.default_rng(seed)
    data_dir = root / "public"
    runtimes: dict[str, np.ndarray] = {}
    usage: dict[str, str] = {}
    normalizers: dict[str, np.ndarray] = {}
    g = 0
    for collection in COLLECTIONS:
        counts = TILE_CONFIGS if collection.task.name == "tile" else LAYOUT_CONFIGS
        for n_configs in counts:
            stem = rng.bytes(16).hex()
            row_id = collection.row_id(stem)
            graph = (_tile_graph(rng, n_configs) if collection.task.name == "tile"
                     else _layout_graph(rng, n_configs))
            save_graph(graph, split_dir(data_dir, collection, "test") / f"{stem}.npz")
            # 7-digit runtimes: distinctive strings for the leak test.
            runtimes[row_id] = rng.integers(1_000_000, 9_999_999, n_configs)
            if collection.task.name == "tile":
                normalizers[row_id] = rng.integers(1_000_000, 9_999_999, n_configs)
            usage[row_id] = "Public" if g % 2 == 0 else "Private"
            g += 1
    solution_path = root / "private" / "solution.csv"
    solution_path.parent.mkdir(parents=True)
    with open(solution_path, "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["ID", "Runtimes", "Normalizers", "Usage"])
        for row_id, runtime in runtimes.items():
            norm = normalizers.get(row_id)
            writer.writerow([row_id, ";".join(map(str, runtime)),
                             "" if norm is None else ";".join(map(str, norm)), usage[row_id]])
    private_strings = [";".join(map(str, r)) for r in runtimes.values()]
    private_strings += [str(v) for r in runtimes.values() for v in r]
    return TinyCompetition(data_dir, solution_path, runtimes, usage, private_strings)


def init_competition(url: str, tiny: TinyCompetition, **rules) -> Leaderboard:
    db = Database(url)
    rules.setdefault("name", "Tiny <b>competition</b>")
    return Leaderboard.initialise(db, solution_csv=tiny.solution_csv, **rules)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def upload(client, token: str | None, content: bytes, name: str = "submission.csv"):
    headers = bearer(token) if token else {}
    return client.post("/api/submissions", headers=headers, files={"file": (name, content, "text/csv")})


def form_fields(client, data: dict | None = None) -> tuple[dict, dict]:
    """``(data, headers)`` for a web-form post as the site's own page sends it: CSRF token and Origin."""
    from leaderboard.csrf import CSRF_COOKIE

    if CSRF_COOKIE not in client.cookies:
        client.get("/rules")  # any page sets the token cookie
    return {**(data or {}), "csrf": client.cookies[CSRF_COOKIE]}, {"Origin": str(client.base_url).rstrip("/")}


def form_post(client, url: str, data: dict | None = None, **kwargs):
    """POST a web form the way a browser on the site's page does (CSRF token field, same-origin Origin)."""
    data, headers = form_fields(client, data)
    return client.post(url, data=data, headers={**headers, **kwargs.pop("headers", {})}, **kwargs)


# ---------------------------------------------------------------------------------------------
# A real HTTP server in a thread


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def served_in_a_child(db_url: str, *serve_args: str, start_s: float = 60.0, log_to: Path | None = None
                      ) -> Iterator[tuple[str, subprocess.Popen]]:
    """``tpugraphs leaderboard serve`` in a child process on a free loopback port: yields ``(base url,
    process)`` once /health answers, and stops it afterwards. Fails the test with the server's output
    when it exits or does not answer within ``start_s``. ``log_to``: a file that keeps the server's
    output (stdout and stderr) for the test to read."""
    port = free_port()
    root = Path(__file__).resolve().parents[2]
    with open(log_to, "w+b") if log_to else tempfile.TemporaryFile() as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "competition.cli", "leaderboard", "serve", "--db", db_url,
             "--port", str(port), "--log-level", "warning", *serve_args],
            cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, stdout=output, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + start_s
            while True:
                try:
                    if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    output.seek(0)
                    pytest.fail(f"the server did not start: {output.read().decode(errors='replace')}")
                time.sleep(0.1)
            yield url, process
        finally:
            process.terminate()
            process.wait(timeout=30)


def client_from(address: str, base_url: str, **kwargs) -> httpx.Client:
    """An HTTP client whose connections come from the loopback ``address`` (127.0.0.2, 127.0.0.3, ...):
    to the server, another client address."""
    return httpx.Client(base_url=base_url, transport=httpx.HTTPTransport(local_address=address), **kwargs)


class LiveServer:
    """uvicorn serving ``app`` on a loopback port in a background thread (``config``: more of
    ``uvicorn.Config``'s options, e.g. ``http=`` the server's protocol)."""

    def __init__(self, app, **config) -> None:
        import uvicorn

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port,
                                                    log_level="warning", lifespan="on", **config))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


def assert_fits_width(page, path: str, width: int = 390) -> None:
    """The page at ``path`` (already loaded) opens its first details and needs no sideways scrolling."""
    for summary in page.locator("summary").all()[:3]:
        summary.click()
    scroll_width = page.evaluate("document.documentElement.scrollWidth")
    assert scroll_width <= width, f"{path} is {scroll_width} px wide at a {width} px viewport"
    # Nor inside: no table or block that must be scrolled sideways.
    scrolled = page.evaluate("[...document.querySelectorAll('.wide, pre')].filter("
                             "e => e.scrollWidth > e.clientWidth + 1).map(e => e.id || e.className)")
    assert scrolled == [], f"{path}: {scrolled} scroll sideways"


def known_team(leaderboard, prefix: str):
    """A new team (a unique name from ``prefix``), returned once a running server knows it: the server reads
    the list of teams (added by another process, as ``add-team`` does) at most every
    ``KnownTeams.REFRESH_S`` and counts a team it has not read as unknown to the token throttle."""
    import uuid

    from leaderboard.deps import KnownTeams

    added = leaderboard.add_team(f"{prefix} {uuid.uuid4().hex[:8]}")
    time.sleep(KnownTeams.REFRESH_S)
    return added


def rss_bytes(pid: int) -> int:
    """A process's resident memory now (``VmRSS`` of /proc), for the tests that bound a server's memory."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")
