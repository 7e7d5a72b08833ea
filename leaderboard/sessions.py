"""Browser sessions of the web pages: a signed cookie, bound to the browser that signed in.

A sibling origin (another port of the same host, a sibling subdomain) can write this site's cookies:
it can evict the session cookie with junk cookies and plant one of its own, obtained by signing in
with its own team's token ("cookie tossing"). Three things keep such a cookie from making a victim
upload for the planter's team:

1. The cookie never holds a team token. It is ``<team id>.<browser key digest>.<mac>``, the MAC an
   HMAC-SHA256 keyed with the team's stored token hash, so only this server can make one, a planted
   raw token is not a session, and resetting a team's token ends all its sessions.
2. Each session is bound to the browser it was made in. The pages' own script keeps a random
   browser key in ``localStorage``, which only pages of this exact origin can read or write, and
   adds it to every form. A sign-in records the key's digest in the cookie; an upload or a
   selection change is accepted only when the form's key matches it, so a session made in another
   browser (the planter's) is refused with a page that names its team and asks the person to
   confirm it, before anything counts. Without JavaScript no key is sent and sessions are unbound
   (then only point 3 protects).
3. Over HTTPS (``request.url.scheme``, or ``Settings.secure_cookies`` behind a TLS proxy) the
   cookie is ``__Host-tpugraphs_session``: Secure, host-only, path ``/``. Browsers refuse such a
   cookie from a sibling subdomain and from any page served over plain HTTP.
"""

from __future__ import annotations

import hashlib
import hmac

from fastapi import Request

SESSION_COOKIE = "tpugraphs_session"
SECURE_SESSION_COOKIE = "__Host-" + SESSION_COOKIE
LEGACY_TOKEN_COOKIE = "tpugraphs_token"  # earlier versions kept the raw token; never read, only cleared
BROWSER_KEY_FIELD = "browser_key"
UNBOUND = "-"  # the digest part of a session made without a browser key (no JavaScript)


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


def _mac(team_id: int, digest: str, token_hash: str) -> str:
    return hmac.new(token_hash.encode(), f"session|{team_id}|{digest}".encode(), hashlib.sha256).hexdigest()


def new_session(team_id: int, token_hash: str, browser_key: str | None) -> str:
    """The cookie value of a session for ``team_id`` made in the browser holding ``browser_key``."""
    digest = key_digest(browser_key)
    return f"{team_id}.{digest}.{_mac(team_id, digest, token_hash)}"


def parse_session(value: str | None) -> tuple[int, str, str] | None:
    """``(team id, key digest, mac)`` of a cookie value shaped like a session; None otherwise."""
    parts = (value or "").split(".")
    if len(parts) != 3 or not parts[0].isdigit() or len(parts[0]) > 10:
        return None
    return int(parts[0]), parts[1], parts[2]


def session_valid(value: str, token_hash: str) -> bool:
    parsed = parse_session(value)
    if parsed is None:
        return False
    team_id, digest, mac = parsed
    return hmac.compare_digest(mac.encode(), _mac(team_id, digest, token_hash).encode())


def same_browser(session_digest: str, browser_key: str | None) -> bool:
    """Whether a form's browser key is the one the session was made with (both absent: no JavaScript)."""
    return hmac.compare_digest(session_digest.encode(), key_digest(browser_key).encode())
