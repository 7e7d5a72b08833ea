"""What a fourth security review found (issue 58), against real servers.

No team can lock another out (the throttle is per address and per (address, claimed team), its memory
bounded, proxies trusted only as configured), names with invisible or blank characters are refused
(Chromium shows why), /health reports a database it cannot write (immutable file, full disk) and a
read-only start serves pages, tokens are redacted by shape in every log line, uploads from an allowed
team stay within a memory bound, session ids are random, sign-ins are rate-limited, one member cannot
sign the team out, and ``serve`` refuses NaN, infinities and bad hosts in one line. Several loopback
source addresses (127.0.0.2, 127.0.0.3) play the clients behind different addresses.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from lb_support import (
    LiveServer,
    bearer,
    client_from,
    form_post,
    init_competition,
    known_team,
    rss_bytes,
    served_in_a_child,
)

from competition.cli import main
from leaderboard import sessions
from leaderboard.app import create_app
from leaderboard.errors import LimitReached
from leaderboard.models import WebSession
from leaderboard.names import check_team_name
from leaderboard.settings import Settings
from leaderboard.throttle import (
    ADDRESS_FAILURES,
    SIGN_INS_PER_TEAM,
    TEAM_FAILURES,
    WINDOW_S,
    SignInLimit,
    TokenThrottle,
)
from leaderboard.uploads import ReceivedFile

MIB = 1 << 20
HOME, RIVAL = "127.0.0.2", "127.0.0.3"  # two client addresses
MINE = "/api/submissions/mine"


@pytest.fixture(scope="module")
def site(tiny, tmp_path_factory):
    """One competition on SQLite served over HTTP for the module: ``(server, leaderboard, app)``."""
    url = f"sqlite:///{tmp_path_factory.mktemp('lockout') / 'leaderboard.db'}"
    leaderboard = init_competition(url, tiny, daily_limit=2)
    app = create_app(Settings(db_url=url, board_cache_s=0.0, max_upload_bytes=16 * MIB))
    _slow_refill(app)
    with LiveServer(app) as server:
        yield server, leaderboard, app
    leaderboard.db.dispose()


def _slow_refill(app) -> None:
    """Budgets refilled over an hour, not a minute, so that counts do not depend on the test's speed."""
    app.state.token_throttle = TokenThrottle(window_s=3600.0)
    app.state.sign_in_limit = SignInLimit(window_s=3600.0)


_team = known_team  # every team a test makes is one the running server knows


def _codes(address: str, base_url: str, tokens: list[str], workers: int = 1) -> list[int]:
    with client_from(address, base_url, timeout=60) as client, ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda token: client.get(MINE, headers=bearer(token)).status_code, tokens))


# ---------------------------------------------------------------------------------------------
# 1-2. The throttle: no lockout of a rival, per (address, team); bounded memory, no global reset


def _rival_cannot_lock_out(base_url: str, leaderboard, wrong_count: int, *, one_process: bool) -> list[int]:
    """A rival at RIVAL floods wrong tokens claiming the victim's team while the victim, at HOME, uses
    the right one: every right call succeeds. Returns the rival's answers."""
    victim, token = _team(leaderboard, "Victim")
    wrong = [f"{victim.id}.wrong{i:040d}" for i in range(wrong_count)]
    with ThreadPoolExecutor(2) as pool:
        rival = pool.submit(_codes, RIVAL, base_url, wrong, 8)
        time.sleep(0.2)  # the flood is under way
        right = pool.submit(_codes, HOME, base_url, [token] * 15, 3)
        rival_codes, right_codes = rival.result(), right.result()
    assert right_codes == [200] * 15
    assert set(rival_codes) <= {401, 429} and 429 in rival_codes
    if one_process:  # (with two, the next connection may reach the other process and its budgets)
        assert _codes(RIVAL, base_url, [token]) == [429]  # from the guessing address the secret is refused
    assert _codes(HOME, base_url, [token]) == [200]
    return rival_codes


def test_a_rivals_wrong_tokens_never_refuse_the_right_token_on_sqlite(site):
    server, leaderboard, _ = site
    rival = _rival_cannot_lock_out(server.url, leaderboard, 60, one_process=True)
    assert rival.count(401) == TEAM_FAILURES  # one process: the rival's budget for the team, exactly


@pytest.mark.slow
def test_a_rivals_wrong_tokens_never_refuse_the_right_token_on_postgresql_with_two_workers(postgres_db, tiny):
    leaderboard = init_competition(postgres_db, tiny)
    with served_in_a_child(postgres_db, "--workers", "2") as (url, _):
        rival = _rival_cannot_lock_out(url, leaderboard, 60, one_process=False)
    assert TEAM_FAILURES <= rival.count(401) <= 2 * TEAM_FAILURES + 2  # each worker keeps its own budgets
    leaderboard.db.dispose()


def test_a_prankster_behind_a_shared_address_costs_only_their_own_address_and_team(site):
    """A class behind HOME: one member guesses at Target and at made-up team ids until the address's
    budget is spent. Every classmate's right token still works from HOME; Target's works from anywhere
    else, and from HOME once the window has passed (not tested: a minute)."""
    server, leaderboard, app = site
    target, target_token = _team(leaderboard, "Target")
    classmates = [_team(leaderboard, "Classmate") for _ in range(4)]
    assert _codes(HOME, server.url, [f"{target.id}.prank{i}" for i in range(TEAM_FAILURES)]) == \
        [401] * TEAM_FAILURES
    assert _codes(HOME, server.url, [target_token]) == [429]  # that secret is being guessed from HOME
    assert _codes(RIVAL, server.url, [target_token]) == [200]  # ... not from anywhere else
    made_up = [f"{900_000 + i}.typo" for i in range(ADDRESS_FAILURES)]
    codes = _codes(HOME, server.url, made_up)
    assert codes == [401] * (ADDRESS_FAILURES - TEAM_FAILURES) + [429] * TEAM_FAILURES  # address spent
    assert _codes(HOME, server.url, ["no-team-id"]) == [429]
    assert _codes(HOME, server.url, [token for _, token in classmates]) == [200] * 4  # never refused
    # From the spent address one wrong token per untouched team is still checked, then that team waits.
    first = classmates[0]
    assert _codes(HOME, server.url, [f"{first[0].id}.wrong"]) == [401]
    assert _codes(HOME, server.url, [first[1], classmates[1][1]]) == [429, 200]
    assert _codes(RIVAL, server.url, [first[1]]) == [200]
    throttle: TokenThrottle = app.state.token_throttle
    assert not any(team >= 900_000 for _, team in throttle.pairs.entries)  # made-up ids keep no entry


def test_fresh_team_ids_from_one_address_do_not_bypass_its_budget_nor_reset_anyones(site):
    """Finding 2: thousands of wrong tokens claiming fresh team ids from one address are checked only
    up to the address's budget, and they clear nothing: a team guessed at from another address stays
    refused there."""
    server, leaderboard, app = site
    guessed, _ = _team(leaderboard, "Guessed")
    assert _codes(RIVAL, server.url, [f"{guessed.id}.w{i}" for i in range(TEAM_FAILURES)]) == \
        [401] * TEAM_FAILURES
    flood = [f"{2_000_000 + i}.fresh" for i in range(400)]
    codes = _codes("127.0.0.4", server.url, flood, 8)
    assert codes.count(401) == ADDRESS_FAILURES and codes.count(429) == 400 - ADDRESS_FAILURES
    assert _codes(RIVAL, server.url, [f"{guessed.id}.again"]) == [429]  # its budget was not reset
    throttle: TokenThrottle = app.state.token_throttle
    assert len(throttle.pairs) < 50 and len(throttle.addresses) < 50


def test_the_throttles_memory_is_bounded_and_forgets_oldest_first_never_all():
    now = [0.0]
    throttle = TokenThrottle(team_failures=2, address_failures=3, window_s=60.0, clock=lambda: now[0],
                             max_entries=100)
    for _ in range(2):  # an address that spent its budget for team 1
        throttle.settle(throttle.reserve("typos", 1, team_exists=True), right=False)
    for i in range(1000):  # a thousand other addresses, each with a wrong token for an existing team
        now[0] += 0.001
        throttle.settle(throttle.reserve(f"10.0.{i // 256}.{i % 256}", 1 + i % 7, team_exists=True),
                        right=False)
    assert len(throttle.addresses) <= 100 and len(throttle.pairs) <= 100
    recent = "10.0.3.231"  # the last one: still remembered, its team budget partly spent
    assert throttle.pairs.peek((recent, 1 + 999 % 7)) is not None
    # Right tokens leave nothing behind.
    quiet = TokenThrottle(clock=lambda: now[0])
    for i in range(500):
        quiet.settle(quiet.reserve(f"192.0.2.{i % 250}", i, team_exists=True), right=True)
    assert len(quiet.addresses) == 0 and len(quiet.pairs) == 0
    # Entries are forgotten once their window has passed.
    now[0] += WINDOW_S + 1
    throttle.reserve("someone new", None, team_exists=False)
    assert len(throttle.addresses) <= 2


def test_a_right_token_from_an_address_that_never_guessed_its_team_is_never_refused():
    """A property over many interleavings: whatever others send (wrong tokens for any team, from any
    address, made-up ids), a right token from an address that sent no wrong token for its team within
    the window is admitted."""
    import random

    rng = random.Random(0)
    now = [0.0]
    throttle = TokenThrottle(clock=lambda: now[0])
    guessed: set[tuple[str, int]] = set()
    addresses = [f"10.0.0.{i}" for i in range(6)]
    for _ in range(5000):
        now[0] += rng.random() * 0.2
        address, team = rng.choice(addresses), rng.randrange(1, 12)
        if rng.random() < 0.7:  # a wrong token (an existing team, a made-up one, or no team id)
            claim = rng.choice([team, None, 1_000_000 + team])
            try:
                reservation = throttle.reserve(address, claim, team_exists=claim is not None and claim < 100)
            except LimitReached:
                continue
            throttle.settle(reservation, right=False)
            if claim is not None:
                guessed.add((address, claim))
        elif (address, team) not in guessed:
            throttle.settle(throttle.reserve(address, team, team_exists=True), right=True)
        if rng.random() < 0.01:  # a window passes for everyone
            now[0] += WINDOW_S
            guessed.clear()


def test_behind_a_proxy_only_the_trusted_proxys_forwarded_address_counts(tiny, tmp_path):
    """Proxies are trusted as configured: HOME is the proxy here. X-Forwarded-For from it names the
    client (two clients, two budgets); from RIVAL the same header is ignored (its own address counts)."""
    url = f"sqlite:///{tmp_path / 'lb.db'}"
    leaderboard = init_competition(url, tiny)
    team, token = leaderboard.add_team("Behind a proxy")
    app = create_app(Settings(db_url=url, board_cache_s=0.0))
    _slow_refill(app)
    def through(client, forwarded: str, tok: str) -> int:
        return client.get(MINE, headers={**bearer(tok), "X-Forwarded-For": forwarded}).status_code

    with LiveServer(app, proxy_headers=True, forwarded_allow_ips=HOME) as server, \
            client_from(HOME, server.url) as proxy, client_from(RIVAL, server.url) as spoofer:
        wrong = [through(proxy, "198.51.100.7", f"{team.id}.w{i}") for i in range(TEAM_FAILURES + 1)]
        assert wrong == [401] * TEAM_FAILURES + [429]
        assert through(proxy, "198.51.100.8", token) == 200  # another client behind the proxy
        spoofed = [through(spoofer, f"203.0.113.{i}", f"{team.id}.s{i}") for i in range(TEAM_FAILURES + 1)]
        assert spoofed == [401] * TEAM_FAILURES + [429]  # a header it may not send changes nothing
        assert through(spoofer, "198.51.100.9", token) == 429
    leaderboard.db.dispose()


def test_serve_configures_the_trusted_proxies_explicitly(sqlite_url, tiny, monkeypatch, capsys):
    import uvicorn

    init_competition(sqlite_url, tiny).db.dispose()
    started = {}
    monkeypatch.setattr(uvicorn, "run", lambda target, **kwargs: started.update(kwargs))
    port = str(_free_port())
    assert main(["leaderboard", "serve", "--db", sqlite_url, "--port", port]) == 0
    assert started["proxy_headers"] is True and started["forwarded_allow_ips"] == "127.0.0.1,::1"
    assert main(["leaderboard", "serve", "--db", sqlite_url, "--port", port,
                 "--trusted-proxy", "10.0.0.0/8, 192.0.2.1"]) == 0
    assert started["forwarded_allow_ips"] == "10.0.0.0/8,192.0.2.1"
    started.clear()
    assert main(["leaderboard", "serve", "--db", sqlite_url, "--port", port, "--trusted-proxy", "none"]) == 0
    assert started["proxy_headers"] is False and "forwarded_allow_ips" not in started


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---------------------------------------------------------------------------------------------
# 3. Names with characters that render as nothing or as a blank


# Every class the review tried, and their neighbours: variation selectors, the combining grapheme joiner,
# Mongolian free variation selectors, Khmer inherent vowels, Hangul fillers, the Braille blank, zero-width
# characters, the soft hyphen, tag characters.
INVISIBLE = ["\ufe00", "\ufe0f", "\U000e0100", "\U000e01ef", "\u034f", "\u180b", "\u180c", "\u180d",
             "\u17b4", "\u17b5", "\u3164", "\u115f", "\u1160", "\uffa0", "\u2800", "\u200b", "\u200c",
             "\u200d", "\u2060", "\ufeff", "\u00ad", "\U000e0041", "\u180e", "\U00016fe4"]


@pytest.mark.parametrize("hidden", INVISIBLE, ids=[f"U+{ord(c):04X}" for c in INVISIBLE])
def test_a_name_with_an_invisible_or_blank_character_is_refused_in_one_line(leaderboard, hidden):
    leaderboard.add_team("Team B")
    # Format characters (zero-width spaces and joiners, the soft hyphen, tags) are refused as control
    # characters, as since 1.0; the others name the character.
    reason = ("control characters" if unicodedata.category(hidden)[0] == "C"
              else f"cannot contain U\\+{ord(hidden):04X} .*renders as nothing or as a blank")
    for name in (f"Team B{hidden}", f"Team {hidden}B", f"{hidden}Team B", f"Team{hidden}B"):
        with pytest.raises(ValueError, match=reason):
            leaderboard.add_team(name)
        with pytest.raises(ValueError, match=reason):
            leaderboard.rename_team("Team B", name)
    assert check_team_name("Équipe Ünïcode 日本 ñ") == "Équipe Ünïcode 日本 ñ"  # visible letters pass


def test_add_team_refuses_an_invisible_character_in_one_line(sqlite_url, tiny, capsys):
    init_competition(sqlite_url, tiny).db.dispose()
    assert main(["leaderboard", "add-team", "--db", sqlite_url, "Team B\ufe0f"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "U+FE0F (VARIATION SELECTOR-16)" in err


@pytest.mark.slow
def test_the_refused_characters_render_as_nothing_or_a_blank_in_chromium(browser, site):
    """Why they are refused: in Chromium, "Team B" followed by any of them is drawn exactly like "Team B";
    and the site can hold no such team to show in a confirmation box."""
    server, leaderboard, _ = site
    page = browser.new_page()
    page.goto(server.url + "/rules")
    # Each name drawn on a canvas: the pixels of "Team B" with the character are those of "Team B".
    drawn = page.evaluate("""names => names.map(name => {
        const canvas = document.createElement('canvas');
        canvas.width = 400; canvas.height = 40;
        const context = canvas.getContext('2d');
        context.font = '24px sans-serif'; context.fillStyle = '#000';
        context.fillText(name, 4, 30);
        return canvas.toDataURL();
    })""", ["Team B", "Team C", "Team B\U000f0000", *(f"Team B{ch}" for ch in INVISIBLE)])
    plain, other, no_glyph = drawn[:3]
    assert plain != other  # the comparison sees a one-letter difference
    # The fillers are blank glyphs of Hangul (Khitan) fonts; a machine without one draws its missing-glyph
    # box instead, as for a private-use character.
    fillers = {"\u3164", "\u115f", "\u1160", "\uffa0", "\U00016fe4"}
    visible = [f"U+{ord(ch):04X}" for ch, image in zip(INVISIBLE, drawn[3:], strict=True)
               if image != plain and not (ch in fillers and image == no_glyph)]
    assert visible == [], f"drawn visibly in Chromium: {visible}"
    # And no such look-alike can exist to be shown in a confirmation box.
    for ch in INVISIBLE[:3]:
        with pytest.raises(ValueError):
            leaderboard.add_team(f"Team B{ch}")
    page.close()


# ---------------------------------------------------------------------------------------------
# 4. /health tells the truth; a read-only start serves pages


def _chattr(flag: str, path: Path) -> None:
    done = subprocess.run(["chattr", flag, str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"chattr {flag} is not available here: {done.stderr.strip()}")


def test_health_reports_an_immutable_database_file_while_serving(tmp_path, tiny):
    if os.geteuid() != 0 or shutil.which("chattr") is None:
        pytest.skip("making a file immutable needs root and chattr")
    path = tmp_path / "leaderboard.db"
    leaderboard = init_competition(f"sqlite:///{path}", tiny)
    _, token = leaderboard.add_team("Alpha")
    with LiveServer(create_app(Settings(db_url=f"sqlite:///{path}", board_cache_s=0.0))) as server:
        assert httpx.get(f"{server.url}/health", timeout=30).status_code == 200
        _chattr("+i", path)
        try:
            health = httpx.get(f"{server.url}/health", timeout=30)
            page = httpx.get(f"{server.url}/", timeout=30)
            answer = httpx.post(f"{server.url}/api/submissions", headers=bearer(token), timeout=30,
                                files={"file": ("s.csv", tiny.submission(1), "text/csv")})
        finally:
            _chattr("-i", path)
        assert health.status_code == 503 and health.json()["database"] == "read-only", health.text
        assert "leaderboard.db is not writable" in health.json()["reason"]
        assert str(tmp_path) not in health.text  # no host path on a public page
        assert page.status_code == 200
        assert answer.status_code in (201, 503)  # a pooled connection may still write its WAL
        assert httpx.get(f"{server.url}/health", timeout=30).json()["database"] == "ok"
    leaderboard.db.dispose()


@contextmanager
def _small_disk(tmp_path: Path, mib: int):
    """A ``mib`` MiB tmpfs mounted under ``tmp_path`` (skips where mounting is not allowed)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={mib}m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small disk here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_health_reports_a_full_disk(tmp_path, tiny):
    if os.geteuid() != 0:
        pytest.skip("mounting a small disk needs root")
    with _small_disk(tmp_path, 16) as disk:
        url = f"sqlite:///{disk / 'leaderboard.db'}"
        init_competition(url, tiny).db.dispose()
        settings = Settings(db_url=url, board_cache_s=0.0, min_free_disk_bytes=4 * MIB)
        with LiveServer(create_app(settings)) as server:
            assert httpx.get(f"{server.url}/health", timeout=30).status_code == 200
            filler = disk / "filler"
            subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=1M", "count=64"], capture_output=True)
            health = httpx.get(f"{server.url}/health", timeout=30)
            assert health.status_code == 503 and health.json()["database"] == "disk-full", health.text
            assert "MiB free on the database's disk" in health.json()["reason"]
            assert httpx.get(f"{server.url}/", timeout=30).status_code == 200
            filler.unlink()
            assert httpx.get(f"{server.url}/health", timeout=30).status_code == 200


def test_a_database_in_a_read_only_folder_is_served_read_only(tmp_path, tiny, capsys, monkeypatch):
    if os.geteuid() != 0 or shutil.which("chattr") is None:
        pytest.skip("making a folder immutable needs root and chattr")
    folder = tmp_path / "ro"
    folder.mkdir()
    url = f"sqlite:///{folder / 'leaderboard.db'}"
    leaderboard = init_competition(url, tiny)
    _, token = leaderboard.add_team("Alpha")
    leaderboard.db.checkpoint(truncate=True)
    leaderboard.db.dispose()  # the last connection: SQLite removes -wal and -shm
    assert sorted(p.name for p in folder.iterdir()) == ["leaderboard.db"]
    _chattr("+i", folder)
    try:
        import uvicorn

        monkeypatch.setattr(uvicorn, "run", lambda *a, **k: None)
        assert main(["leaderboard", "serve", "--db", url, "--port", str(_free_port())]) == 0
        note = capsys.readouterr().err
        assert "the database can only be read (the database's folder is not writable" in note
        with LiveServer(create_app(Settings(db_url=url, board_cache_s=0.0))) as server:
            health = httpx.get(f"{server.url}/health", timeout=30)
            assert health.status_code == 503 and health.json()["database"] == "read-only"
            assert "folder is not writable" in health.json()["reason"]
            assert httpx.get(f"{server.url}/", timeout=30).status_code == 200
            assert httpx.get(f"{server.url}/rules", timeout=30).status_code == 200
            mine = httpx.get(f"{server.url}{MINE}", headers=bearer(token), timeout=30)
            assert mine.status_code == 200  # reading a team's own history works
            answer = httpx.post(f"{server.url}/api/submissions", headers=bearer(token), timeout=30,
                                files={"file": ("s.csv", tiny.submission(1), "text/csv")})
            assert answer.status_code == 503 and answer.json()["database"] == "read-only"
            with httpx.Client(base_url=server.url, timeout=30) as browser:
                signed = form_post(browser, "/mine", data={"token": token})
                assert signed.status_code == 503 and "cannot be written" in signed.text
    finally:
        _chattr("-i", folder)


# ---------------------------------------------------------------------------------------------
# 5. Tokens redacted by shape in every log line


def _shapes(token: str) -> list[str]:
    """Request targets that carry the token, or a 16-character piece of its secret, in every way the
    review tried and a few more (43 in all)."""
    team, secret = token.split(".")
    encoded = "".join(f"%{b:02X}" for b in token.encode())
    return [
        f"/teams/{token}", f"/teams/{token}.json", f"/static/{token}.css", f"/static/{token}",
        f"/{token}~", f"/{token};x", f"/({token})", f"/{token}%00", f"/x{token}", f"/{token}x",
        f"/Bearer%20{token}", f"/Authorization:%20Bearer%20{token}", f"/token={token}", f"/{secret[:23]}",
        f"/{secret[:16]}", f"/{secret[5:21]}", f"/{secret}", f"/api/submissions/{token}/file",
        f"/api/submissions/{token}", f"/mine/{token}/file", f"/{encoded}", f"/{quote(encoded)}",
        f"/teams/{team}%2E{secret}", f"/teams/{team}%252E{secret}", f"/a/{token}/b/{token}",
        f"/?board={token}", f"/?page={token}", f"/?{token}", f"/?{token}=1", f"/x?a=1&b={token}",
        f"/mine?token={token}", f"/?{secret[:20]}=x", f"/teams/{token}?board=public",
        f"/{token}%0A", f"/{token}%20HTTP/1.1", f"/%3C{token}%3E", f"/'{token}'",
        f"/%22{token}%22",
        f"/{token}#frag".replace("#", "%23"), f"/{token[:30]}..{token[30:]}", f"/static/{secret}.js",
        f"/{secret[::-1][:20]}{secret[:20]}", f"/teams/{token}/",
    ]


def _raw_request(port: int, line: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(line + b"\r\nHost: x\r\nConnection: close\r\n\r\n")
        while sock.recv(65536):
            pass


def test_tokens_never_reach_any_log_line_whatever_their_shape(tmp_path, tiny):
    url = f"sqlite:///{tmp_path / 'lb.db'}"
    leaderboard = init_competition(url, tiny)
    _, token = leaderboard.add_team("Alpha")
    leaderboard.db.dispose()
    secret = token.split(".")[1]
    log = tmp_path / "server.log"
    shapes = _shapes(token)
    assert len(shapes) == 43
    with served_in_a_child(url, "--log-level", "debug", log_to=log) as (base, _):
        port = int(base.rsplit(":", 1)[1])
        with httpx.Client(base_url=base, timeout=30) as client:
            for target in shapes:
                _raw_request(port, f"GET {target} HTTP/1.1".encode())
            for method in (token, secret, f"X{secret[:20]}"):  # the token as the HTTP method
                _raw_request(port, f"{method} / HTTP/1.1".encode())
            client.post("/api/submissions", headers=bearer(token), files={"file": ("s.csv", b"x")})
        time.sleep(0.5)
    logged = log.read_text(errors="replace")
    assert logged.count("REDACTED") >= 43
    leaks = {secret[i:i + 16] for i in range(len(secret) - 15)} & {
        logged[i:i + 16] for i in range(len(logged) - 15)}
    assert not leaks, f"{len(leaks)} 16-character pieces of the secret reached the log"


# ---------------------------------------------------------------------------------------------
# 6. Memory bounded for every upload


def test_the_scorer_validates_an_upload_from_disk_without_reading_it_whole(leaderboard, tiny, monkeypatch):
    from leaderboard.scorer import Scorer

    def no_whole_reads(self) -> bytes:
        raise AssertionError("the upload was read whole into memory")

    monkeypatch.setattr(ReceivedFile, "read", no_whole_reads)
    scorer = Scorer(leaderboard.load_solution())
    received = ReceivedFile.from_bytes(tiny.submission(1), "s.csv")
    assert scorer.score(received, "s.csv").public > 0
    received.close()
    scorer.close()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["one long line", "repeated rows", "unknown ids"])
def test_twenty_concurrent_16_mib_uploads_from_an_allowed_team_stay_within_128_mib(tmp_path, tiny, kind):
    url = f"sqlite:///{tmp_path / 'leaderboard.db'}"
    leaderboard = init_competition(url, tiny, daily_limit=5)
    _, token = leaderboard.add_team("Allowed")
    valid = tiny.submission(1)
    rows = valid.split(b"\n", 1)[1]
    size = 16 * MIB - 100
    unknown = rows.replace(b":", b"x:")  # every ID of another collection
    content = {"one long line": b"ID,TopConfigs\n" + b"0" * size,
               "repeated rows": (valid * (size // len(valid) + 1))[:size],
               "unknown ids": valid + (unknown * (size // len(unknown) + 1))[:size - len(valid)]}[kind]
    with served_in_a_child(url, "--max-uncounted-per-day", "100") as (base, process):
        httpx.get(f"{base}/", timeout=30)
        before = peak = rss_bytes(process.pid)
        done = threading.Event()

        def watch() -> None:
            nonlocal peak
            while not done.is_set():
                peak = max(peak, rss_bytes(process.pid))
                time.sleep(0.02)

        watcher = threading.Thread(target=watch)
        watcher.start()

        def one(_: int) -> httpx.Response:
            return httpx.post(f"{base}/api/submissions", headers=bearer(token), timeout=300,
                              files={"file": ("s.csv", content, "text/csv")})

        try:
            with ThreadPoolExecutor(20) as pool:
                answers = list(pool.map(one, range(20)))
        finally:
            done.set()
            watcher.join()
        after = rss_bytes(process.pid)
    assert [a.status_code for a in answers] == [422] * 20  # all admitted, validated and refused
    assert peak - before <= 128 * MIB, f"the server grew by {(peak - before) / MIB:.0f} MiB"
    assert after - before <= 64 * MIB, f"the server kept {(after - before) / MIB:.0f} MiB"
    leaderboard.db.dispose()


# ---------------------------------------------------------------------------------------------
# 7. Sessions: random ids, sign-ins rate-limited, a cap one member cannot turn against the team


def test_session_ids_are_random_and_count_nothing(site):
    server, leaderboard, _ = site
    _, token = _team(leaderboard, "Random ids")
    ids = []
    for i in range(6):
        with client_from(f"127.0.1.{i + 1}", server.url) as browser:
            assert form_post(browser, "/mine", data={"token": token}).status_code == 303
            ids.append(int(browser.cookies[sessions.SESSION_COOKIE].split(".")[0]))
    assert len(set(ids)) == 6
    assert max(ids) - min(ids) > 1000 and ids != sorted(ids)  # neither consecutive nor a counter


def test_sign_ins_are_rate_limited_per_address_and_team(site):
    server, leaderboard, _ = site
    _, token = _team(leaderboard, "Signing in")
    _, other_token = _team(leaderboard, "Other")
    with client_from("127.0.2.1", server.url) as browser:
        codes = [form_post(browser, "/mine", data={"token": token}).status_code
                 for _ in range(SIGN_INS_PER_TEAM + 1)]
        refused = form_post(browser, "/mine", data={"token": token})
        assert form_post(browser, "/logout").status_code == 303
        assert form_post(browser, "/mine", data={"token": other_token}).status_code == 303  # another team
    assert codes == [303] * SIGN_INS_PER_TEAM + [429]
    assert refused.status_code == 429 and "Too many sign-ins" in refused.text
    assert int(refused.headers["Retry-After"]) >= 1
    with client_from("127.0.2.2", server.url) as elsewhere:  # another address is not affected
        assert form_post(elsewhere, "/mine", data={"token": token}).status_code == 303


def test_the_sign_in_limit_spares_a_class_behind_one_address():
    now = [0.0]
    limit = SignInLimit(clock=lambda: now[0])
    for team in range(200):  # a class of 200, each signing in once, within the same minute
        limit.take("nat", team)
    with pytest.raises(LimitReached, match="Too many sign-ins of this team"):
        for _ in range(SIGN_INS_PER_TEAM + 1):
            limit.take("nat", 0)


def _one_member_cannot_sign_the_team_out(leaderboard) -> None:
    team, _ = _team(leaderboard, "Team")
    teammates = [leaderboard.start_session(team.id, f"teammate{i:02d}" + "k" * 16) for i in range(3)]
    no_script = leaderboard.start_session(team.id, None)
    for i in range(3 * sessions.MAX_SESSIONS_PER_TEAM):  # one member signs in again and again
        leaderboard.start_session(team.id, f"{i:04d}" + "m" * 28 if i % 2 else None)
    for value in (*teammates, no_script):
        assert leaderboard.session_of(value) is not None  # the earlier sessions all stand
    with leaderboard.db.reader() as session:
        assert session.query(WebSession).filter_by(team_id=team.id).count() == sessions.MAX_SESSIONS_PER_TEAM
    # Signing in again in the same browser replaces that browser's session, costing nobody else.
    again = leaderboard.start_session(team.id, "teammate00" + "k" * 16)
    assert leaderboard.session_of(teammates[0]) is None and leaderboard.session_of(again) is not None
    assert all(leaderboard.session_of(v) is not None for v in teammates[1:])


def test_one_member_cannot_sign_the_team_out_on_sqlite(leaderboard):
    _one_member_cannot_sign_the_team_out(leaderboard)


@pytest.mark.slow
def test_one_member_cannot_sign_the_team_out_on_postgresql(postgres_db, tiny):
    leaderboard = init_competition(postgres_db, tiny)
    _one_member_cannot_sign_the_team_out(leaderboard)
    leaderboard.db.dispose()


# ---------------------------------------------------------------------------------------------
# 8. serve refuses NaN, infinities, out-of-range numbers and bad hosts in one line


@pytest.mark.parametrize(("argv", "message"), [
    *(([f"--{option}={value}"], f"--{option} {value}: expected a finite number")
      for option in ("max-upload-mb", "scoring-timeout", "max-team-mb", "header-timeout", "body-timeout",
                     "board-cache")
      for value in ("nan", "inf", "-inf")),
    (["--scoring-timeout", "1e9"], "--scoring-timeout and --board-cache are seconds, at most 3600"),
    (["--max-upload-mb", "1e300"], "--max-upload-mb is at most 1024"),
    (["--host", "999.1.1.1"], "--host '999.1.1.1': not an IP address, nor a name this machine resolves"),
    (["--host", "not a host!"], "not an IP address, nor a name this machine resolves"),
    (["--trusted-proxy", "10.0.0.400"], "--trusted-proxy '10.0.0.400': expected an IP address or network"),
])
def test_serve_refuses_bad_numbers_and_hosts_in_one_line(sqlite_url, tiny, capsys, argv, message):
    init_competition(sqlite_url, tiny).db.dispose()
    assert main(["leaderboard", "serve", "--db", sqlite_url, *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and err.count("\n") == 0 and "Traceback" not in err


def test_serve_on_an_address_of_another_machine_says_so_in_one_line(sqlite_url, tiny, capsys):
    init_competition(sqlite_url, tiny).db.dispose()
    assert main(["leaderboard", "serve", "--db", sqlite_url, "--host", "192.0.2.1"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("tpugraphs leaderboard: cannot listen on 192.0.2.1:8000: ")
