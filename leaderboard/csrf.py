"""Web forms that change state only from this site's own pages: a CSRF token and an origin check.

Every page sets a random ``tpugraphs_csrf`` cookie (HttpOnly, SameSite=Strict) and puts the same
value in a hidden ``csrf`` field of each form; a form post is accepted only when

1. its ``Origin`` header (or, when the browser sent none or ``null``, its ``Referer``) names this
   site: the origin of ``Settings.public_url`` when set, else the host the request was sent to; a
   post with neither header is refused, and
2. its ``csrf`` field equals the cookie (compared in constant time).

The origin check stops every other site, a sibling subdomain included (it is same-site, so
SameSite cookies do not stop it, but its origin differs); the token stops a post that forged its
way past the first check, e.g. from a page that managed to set cookies for this host. The pages
send ``Referrer-Policy: same-origin``, under which browsers send the real ``Origin`` on these posts.
The JSON API takes no cookies (only ``Authorization: Bearer``), so it needs neither.
"""

from __future__ import annotations

import hmac
import secrets
from urllib.parse import urlsplit

from fastapi import Request

from leaderboard.errors import Forbidden

CSRF_COOKIE = "tpugraphs_csrf"
CSRF_FIELD = "csrf"

REFUSAL = ("This form did not come from this site's own page (its origin or security token is missing or "
           "wrong), so nothing was changed. Reload the page and try again.")


def new_token() -> str:
    return secrets.token_urlsafe(32)


def cookie_token(request: Request) -> str | None:
    """The CSRF token of the request's cookie, when it is one this server could have set."""
    value = request.cookies.get(CSRF_COOKIE, "")
    return value if 20 <= len(value) <= 100 and value.replace("-", "").replace("_", "").isalnum() else None


def _origin_of(url: str) -> tuple[str, str] | None:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return parts.scheme, parts.netloc.lower()


def sent_from_here(request: Request, public_url: str = "") -> bool:
    """Whether the request's Origin (else Referer) is this site's origin."""
    origin = request.headers.get("origin", "")
    source = origin if origin and origin != "null" else request.headers.get("referer", "")
    sender = _origin_of(source) if source else None
    if sender is None:
        return False
    if public_url:
        return sender == _origin_of(public_url)
    host = request.headers.get("host", "").lower()
    return bool(host) and sender[1] == host  # any scheme: a TLS proxy in front sees http


def check_token(request: Request, form_token: str) -> None:
    """Forbidden unless the form's CSRF token matches the cookie's."""
    expected = cookie_token(request)
    if expected is None or not hmac.compare_digest(form_token.encode(), expected.encode()):
        raise Forbidden(REFUSAL)


def check_form(request: Request, form_token: str, public_url: str = "") -> None:
    """Forbidden unless the post came from this site's page with the matching CSRF token."""
    if not sent_from_here(request, public_url):
        raise Forbidden(REFUSAL)
    check_token(request, form_token)
