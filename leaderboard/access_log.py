"""The access log without secrets: query values and token-shaped path segments are redacted.

The API takes tokens only in the ``Authorization`` header and refuses ``?token=``, but a client can
still put one in a URL (a query value, a path such as ``/teams/<token>``); uvicorn's access log would
then keep it. Before a line is written:

- every query value is replaced by ``REDACTED``, except a ``board`` of ``public`` or ``private`` and a
  ``page`` that is a number (the only ones the pages use); a key that is not a short plain name is
  itself replaced;
- every path segment shaped like a team token (``<team id>.<secret>``), a session cookie, or a long
  random string (24 or more letters, digits, ``-`` and ``_``, with letters and digits both) is
  replaced, whatever the path.

>>> redact_path("/api/submissions/mine?token=7.secret&board=private")
'/api/submissions/mine?token=REDACTED&board=private'
>>> redact_path("/teams/7.Zm9vYmFyYmF6cXV4cXV1eA?board=7.secret")
'/teams/REDACTED?board=REDACTED'
"""

from __future__ import annotations

import logging
import re
from urllib.parse import parse_qsl, quote, unquote

REDACTED = "REDACTED"
SHOWN_VALUES = {"board": re.compile(r"public|private"), "page": re.compile(r"\d{1,6}")}
_TOKEN_SHAPED = re.compile(r"\d{1,18}\.[A-Za-z0-9_\-]{6,}")
_RANDOM_LOOKING = re.compile(r"(?=[A-Za-z0-9_\-]*[A-Za-z])(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]{24,}")


def _secret_like(segment: str) -> bool:
    text = unquote(segment).strip()
    return bool(_TOKEN_SHAPED.fullmatch(text) or _RANDOM_LOOKING.fullmatch(text))


def redact_path(path: str) -> str:
    """``path`` with its secrets replaced (see the module's docstring)."""
    base, question, query = path.partition("?")
    base = "/".join(REDACTED if _secret_like(segment) else segment for segment in base.split("/"))
    if not question:
        return base
    pairs = parse_qsl(query, keep_blank_values=True)
    if not pairs:
        return f"{base}?{REDACTED}" if query else base + "?"
    return base + "?" + "&".join(_shown(key, value) for key, value in pairs)


def _shown(key: str, value: str) -> str:
    allowed = SHOWN_VALUES.get(key)
    if allowed is not None and allowed.fullmatch(value):
        return f"{key}={quote(value, safe='')}"
    # A key may itself be the secret ("?7.abc..."): only a short plain name is kept.
    plain = key.isidentifier() and key.isascii() and len(key) <= 30 and not _secret_like(key)
    return f"{key}={REDACTED}" if plain else REDACTED


class RedactQuery(logging.Filter):
    """A filter for ``uvicorn.access``: its records carry ``(client, method, path, version, status)``."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], redact_path(args[2]), *args[3:])
        return True
