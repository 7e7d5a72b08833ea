"""Team tokens: ``<team id>.<secret>``, stored only as their SHA-256.

The team id part finds the team; the whole token is hashed and compared with the stored hash with
``hmac.compare_digest`` (constant time), so the lookup never depends on secret bytes, a token
works only with its own team id, and a database dump does not reveal working tokens.

>>> token, digest = new_token(7)
>>> parse_token(token)[0]
7
>>> token_matches(token, digest), token_matches(token + "x", digest)
(True, False)
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

SECRET_BYTES = 32


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token(team_id: int) -> tuple[str, str]:
    """A fresh token for ``team_id`` and the hash to store."""
    token = f"{team_id}.{secrets.token_urlsafe(SECRET_BYTES)}"  # the secret part never contains '.'
    return token, _hash(token)


def parse_token(token: str) -> tuple[int, str] | None:
    """``(team id, secret)``, or None when ``token`` is not shaped like a token."""
    team_part, dot, secret = token.strip().partition(".")
    if not dot or not secret or not team_part.isdigit() or len(team_part) > 18:
        return None
    return int(team_part), secret


def token_matches(token: str, stored_hash: str) -> bool:
    """Whether ``token`` hashes to ``stored_hash``, compared in constant time."""
    well_formed = parse_token(token) is not None
    return hmac.compare_digest(_hash(token.strip()).encode(), stored_hash.encode()) and well_formed


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` (or ``Token TOKEN``) header."""
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() not in ("bearer", "token") or not value.strip():
        return None
    return value.strip()
