"""Browser sessions of the web pages: one server-side row per sign-in, bound to the browser that made it.

A sibling origin (another port of the same host, a sibling subdomain) can write this site's cookies:
it can evict the session cookie with junk cookies and plant one of its own, obtained by signing in
with its own team's token ("cookie tossing"). What keeps such a cookie from making a victim upload
for the planter's team:

1. Each sign-in is a row of its own (``models.WebSession``); the cookie is ``<session id>.<secret>``,
   the id random (it counts nothing), and only the secret's SHA-256 is stored. A cookie names one
   sign-in: signing out deletes the row (the old cookie value then signs nobody in), ``reset-token``
   deletes all of a team's rows, and a session ends ``SESSION_LIFETIME`` after its sign-in. A raw team
   token planted as a cookie is no session.
2. Each session is bound to the browser it was made in. The pages' own script keeps a random
   browser key in ``localStorage``, which only pages of this exact origin can read or write, and
   adds it to every form. A sign-in records the key's digest; an upload or a selection change is
   accepted only when the form's key matches it. A session made in another browser (the planter's)
   is refused with a box that shows the team's name, its id and when that session signed in, and
   asks the person to confirm it. The confirmation carries the session and team it showed; if the
   cookie names another one by the time it is clicked, nothing is confirmed and the page says so.
   Confirming replaces the session by a new one bound to this browser (the planter's copy of the
   cookie then signs nobody in). Without JavaScript no key is sent and sessions are unbound (then
   only point 3 protects).
3. Over HTTPS (``request.url.scheme``, or ``Settings.secure_cookies`` behind a TLS proxy) the
   cookie is ``__Host-tpugraphs_session``: Secure, host-only, path ``/``. Browsers refuse such a
   cookie from a sibling subdomain and from any page served over plain HTTP.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from fastapi import Request

from leaderboard.views import TeamInfo

SESSION_COOKIE = "tpugraphs_session"
SECURE_SESSION_COOKIE = "__Host-" + SESSION_COOKIE
BROWSER_KEY_FIELD = "browser_key"
UNBOUND = "-"  # the digest of a session made without a browser key (no JavaScript)
SESSION_LIFETIME = timedelta(days=30)
# Sessions kept per team (a browser holds one: signing in again replaces it); past it a new sign-in ends
# the team's most recent other one, so repeated sign-ins end each other, never the earlier sessions.
MAX_SESSIONS_PER_TEAM = 50


@dataclass(frozen=True)
class SignedIn:
    """The session a cookie names: its team, its id, the browser it is bound to, when it signed in."""

    team: TeamInfo
    session_id: int
    browser_digest: str
    signed_in_at: datetime


def secure(request: Request, secure_cookies: bool) -> bool:
    """Whether the browser reached this site over HTTPS (as the host says, or as the request shows)."""
    return secure_cookies or request.url.scheme == "https"


def cookie_name(request: Request, secure_cookies: bool) -> str:
    return SECURE_SESSION_COOKIE if secure(request, secure_cookies) else SESSION_COOKIE


def key_digest(browser_key: str | None) -> str:
    """The digest a session records for a browser key; UNBOUND for none or a malformed one."""
    key = (browser_key or "").strip()
    if not 16 <= len(key) <= 128 or not key.isalnum():
        return UNBOUND
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def same_browser(session_digest: str, browser_key: str | None) -> bool:
    """Whether a form's browser key is the one the session was made with (both absent: no JavaScript)."""
    return hmac.compare_digest(session_digest.encode(), key_digest(browser_key).encode())


def new_secret() -> tuple[str, str]:
    """A fresh session secret and the hash to store."""
    secret = secrets.token_urlsafe(32)
    return secret, secret_hash(secret)


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def cookie_value(session_id: int, secret: str) -> str:
    return f"{session_id}.{secret}"


def parse_cookie(value: str | None) -> tuple[int, str] | None:
    """``(session id, secret)`` of a cookie value shaped like a session; None otherwise."""
    session_part, dot, secret = (value or "").partition(".")
    if not dot or not session_part.isdigit() or len(session_part) > 10 or not 20 <= len(secret) <= 100:
        return None
    return int(session_part), secret


def secret_matches(secret: str, stored_hash: str) -> bool:
    return hmac.compare_digest(secret_hash(secret).encode(), stored_hash.encode())
