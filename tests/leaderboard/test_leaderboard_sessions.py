"""Web sessions a sibling origin cannot plant (issue 24, item 2): cookie tossing, in Chromium and over HTTP.

The attack: a page on another port of the same host (cookies do not tell ports apart) writes 200
junk cookies, evicting the HttpOnly session cookie, then plants a session the attacker made by
signing in with their own team's token. The victim's browser now says it is signed in as the
attacker's team; an upload must not count for that team before the victim confirms it.
"""

from __future__ import annotations

import httpx
import pytest
from fastapi.testclient import TestClient
from lb_support import LiveServer, form_post, init_competition

from leaderboard import sessions
from leaderboard.app import create_app
from leaderboard.models import Submission
from leaderboard.settings import Settings

ATTACKER_KEY = "a" * 32
VICTIM_KEY = "b" * 32


def _submissions_of(leaderboard, team_id: int) -> int:
    with leaderboard.db.reader() as session:
        return session.query(Submission).filter_by(team_id=team_id).count()


def _session_made_elsewhere(base_url: str, token: str, browser_key: str) -> str:
    """The attacker signs in on the real site, in their own browser, and keeps the session cookie."""
    with httpx.Client(base_url=base_url) as attacker:
        attacker.get("/rules")
        signed_in = attacker.post("/mine", data={"token": token, "csrf": attacker.cookies["tpugraphs_csrf"],
                                                  sessions.BROWSER_KEY_FIELD: browser_key},
                                  headers={"Origin": base_url})
        assert signed_in.status_code == 303
        return signed_in.cookies[sessions.SESSION_COOKIE]


# ---------------------------------------------------------------------------------------------
# Over HTTP (TestClient)


def test_the_cookie_holds_a_session_never_the_token(client, leaderboard):
    _, token = leaderboard.add_team("Alpha")
    answer = form_post(client, "/mine", data={"token": token}, follow_redirects=False)
    assert answer.status_code == 303
    value = client.cookies[sessions.SESSION_COOKIE]
    assert token not in value and token.split(".", 1)[1] not in answer.headers["set-cookie"]
    assert "HttpOnly" in answer.headers["set-cookie"] and "SameSite=strict" in answer.headers["set-cookie"]
    assert "Signed in as" in client.get("/mine").text


@pytest.mark.parametrize("planted", ["token", "forged secret", "another session's id"])
def test_a_planted_token_or_forged_session_signs_nobody_in(client, leaderboard, planted):
    _, alpha_token = leaderboard.add_team("Alpha")
    _, beta_token = leaderboard.add_team("Beta")
    first = leaderboard.sign_in(beta_token, None)[1]
    second = leaderboard.sign_in(beta_token, None)[1]
    value = {"token": alpha_token, "forged secret": first[:-4] + "AAAA",
             "another session's id": second.split(".")[0] + "." + first.split(".", 1)[1]}[planted]
    client.cookies.set(sessions.SESSION_COOKIE, value)
    assert "Signed in as" not in client.get("/mine").text


def test_a_token_reset_ends_the_teams_sessions(client, leaderboard):
    _, token = leaderboard.add_team("Alpha")
    form_post(client, "/mine", data={"token": token})
    assert "Signed in as" in client.get("/mine").text
    leaderboard.reset_token("Alpha")
    assert "Signed in as" not in client.get("/mine").text


def test_a_session_made_in_another_browser_uploads_nothing_until_confirmed(client, leaderboard, tiny):
    attacker, attacker_token = leaderboard.add_team("Team C")
    client.cookies.set(sessions.SESSION_COOKIE, leaderboard.sign_in(attacker_token, ATTACKER_KEY)[1])
    victim = {"file": ("mine.csv", tiny.submission(1), "text/csv")}
    refused = form_post(client, "/submit", data={sessions.BROWSER_KEY_FIELD: VICTIM_KEY}, files=victim)
    assert refused.status_code == 409
    assert ("Nothing was uploaded" in refused.text and "Team C" in refused.text
            and 'id="confirm-team"' in refused.text)
    select = form_post(client, "/mine/1/select", data={sessions.BROWSER_KEY_FIELD: VICTIM_KEY})
    assert select.status_code == 409
    assert _submissions_of(leaderboard, attacker.id) == 0
    # The person confirms the team they see named: the session is bound to this browser, uploads go on.
    planted_id = client.cookies[sessions.SESSION_COOKIE].split(".")[0]
    confirmed = form_post(client, "/session/confirm", follow_redirects=False, data={
        sessions.BROWSER_KEY_FIELD: VICTIM_KEY, "session_id": planted_id, "team_id": str(attacker.id)})
    assert confirmed.status_code == 303
    accepted = form_post(client, "/submit", data={sessions.BROWSER_KEY_FIELD: VICTIM_KEY},
                         files={"file": ("mine.csv", tiny.submission(1), "text/csv")})
    assert accepted.status_code == 200 and 'id="public-score"' in accepted.text
    assert _submissions_of(leaderboard, attacker.id) == 1


def test_over_https_the_cookie_is_host_prefixed_and_a_plain_one_is_ignored(leaderboard, settings):
    from dataclasses import replace

    _, token = leaderboard.add_team("Alpha")
    app = create_app(replace(settings, secure_cookies=True))
    with TestClient(app, base_url="https://lb.test", raise_server_exceptions=False) as client:
        answer = form_post(client, "/mine", data={"token": token}, follow_redirects=False)
        cookie = answer.headers["set-cookie"]
        assert (cookie.startswith(sessions.SECURE_SESSION_COOKIE + "=") and "Secure" in cookie
                and "Domain" not in cookie)
        assert "Signed in as" in client.get("/mine").text
        value = client.cookies[sessions.SECURE_SESSION_COOKIE]
        client.cookies.clear()
        client.cookies.set(sessions.SESSION_COOKIE, value)  # what a plain-HTTP sibling page could plant
        assert "Signed in as" not in client.get("/mine").text


def test_secure_cookies_is_read_from_the_environment():
    assert Settings.from_env({"TPUGRAPHS_LEADERBOARD_SECURE_COOKIES": "True"}).secure_cookies is True
    assert Settings.from_env({"TPUGRAPHS_LEADERBOARD_SECURE_COOKIES": "False"}).secure_cookies is False


# ---------------------------------------------------------------------------------------------
# In Chromium: the attack as reported, from a page on another port


def _tossing_page(session_value: str):
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse
    from starlette.routing import Route

    html = f"""<!doctype html><title>cute cats</title><script>
      for (let i = 0; i < 200; i++) document.cookie = "junk" + i + "=" + "x".repeat(40) + "; path=/";
      document.cookie = "{sessions.SESSION_COOKIE}={session_value}; path=/; max-age=3600";
      document.title = "planted";
    </script>"""
    return Starlette(routes=[Route("/", lambda request: HTMLResponse(html))])


def _wait_for_cookie(context, url: str, name: str, value: str, timeout_s: float = 10.0) -> None:
    """Until the browser's cookie store sends ``name=value`` to ``url`` (fails after ``timeout_s``)."""
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        sent = {c["name"]: c["value"] for c in context.cookies(url)}
        if sent.get(name) == value:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"the planted {name} cookie never reached the cookie store "
                        f"(it holds {sent.get(name)!r})")
        time.sleep(0.05)


@pytest.mark.slow
def test_cookie_tossing_from_another_port_fails_in_a_browser(browser, sqlite_url, tiny, tmp_path):
    leaderboard = init_competition(sqlite_url, tiny, daily_limit=5)
    victim, victim_token = leaderboard.add_team("Victims")
    attacker, attacker_token = leaderboard.add_team("Team C")
    upload = tmp_path / "victim.csv"
    upload.write_bytes(tiny.submission(4))
    with LiveServer(create_app(Settings(db_url=sqlite_url, board_cache_s=0.0))) as site:
        planted = _session_made_elsewhere(site.url, attacker_token, ATTACKER_KEY)
        with LiveServer(_tossing_page(planted)) as sibling:
            context = browser.new_context()
            page = context.new_page()
            page.goto(site.url + "/mine")
            page.fill("input[name=token]", victim_token)
            page.click("button[type=submit]")
            assert page.inner_text("#signed-in-team") == "Victims"

            page.goto(sibling.url + "/")  # the same host on another port: it shares the cookie jar
            page.wait_for_function("document.title === 'planted'")
            # A page's cookie writes reach the browser's cookie store asynchronously; on a loaded machine
            # the next navigation could otherwise still carry the victim's cookie.
            _wait_for_cookie(context, site.url, sessions.SESSION_COOKIE, planted)

            page.goto(site.url + "/submit")
            assert page.inner_text("#signed-in-team") == "Team C"  # the attack reached the cookies...
            page.set_input_files("input[name=file]", str(upload))
            page.click("form[action='/submit'] button[type=submit]")
            assert "Nothing was uploaded" in page.inner_text("#error")  # ...and was stopped before counting
            assert "Team C" in page.inner_text("#confirm-team")
    assert _submissions_of(leaderboard, attacker.id) == 0
    assert _submissions_of(leaderboard, victim.id) == 0
    leaderboard.db.dispose()
