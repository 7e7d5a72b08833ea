"""Log lines without secrets: anything shaped like a token in a request line is redacted.

The API takes tokens only in the ``Authorization`` header and refuses ``?token=``, but a client can
still put one anywhere in a request line: a query value, a path segment (``/teams/<token>.json``,
``x<token>``, ``Bearer%20<token>``), even the HTTP method. Before a line with a request's method or
path is written (uvicorn's access log, and the server's own lines naming a request):

- the method and the path are percent-decoded (repeatedly, so ``%252E`` counts as ``.``), and every
  run of 16 or more characters of a token's alphabet (letters, digits, ``-`` and ``_``; a token's
  secret is 43 of them) is replaced by ``REDACTED``, wherever it stands and whatever surrounds it; so
  is every path segment shaped like a whole token (``<team id>.<secret>``). What is left is shown
  with control and non-ASCII characters percent-encoded again, so a line stays one line;
- every query value is replaced by ``REDACTED``, except a ``board`` of ``public`` or ``private`` and a
  ``page`` that is a number (the only ones the pages use); a key that is not a short plain name is
  itself replaced.

The server's own paths never hold such a run (its longest segment, ``submissions``, has 11).

>>> redact_path("/api/submissions/mine?token=7.secret&board=private")
'/api/submissions/mine?token=REDACTED&board=private'
>>> redact_path("/teams/7.Zm9vYmFyYmF6cXV4cXV1eA.json?board=7.secret")
'/teams/7.REDACTED.json?board=REDACTED'
>>> redact_method("PUTZm9vYmFyYmF6cXV4cXV1eA")
'REDACTED'
"""

from __future__ import annotations

import logging
import re
from urllib.parse import parse_qsl, quote, unquote

from starlette.requests import Request

REDACTED = "REDACTED"
SHOWN_VALUES = {"board": re.compile(r"public|private"), "page": re.compile(r"\d{1,6}")}
SECRET_RUN = 16  # a run of the token alphabet this long is taken for (part of) a secret
_RUN = re.compile(rf"[A-Za-z0-9_\-]{{{SECRET_RUN},}}")
_TOKEN_SHAPED = re.compile(r"\d{1,18}\.[A-Za-z0-9_\-]{6,}")
_KEPT = "/?&=:;,.~!$'()*+@[]-_"  # shown as they are; anything else outside letters and digits is encoded


def _decoded(text: str) -> str:
    for _ in range(4):  # %252E -> %2E -> .
        once = unquote(text, errors="replace")
        if once == text:
            break
        text = once
    return text


def redact_text(text: str) -> str:
    """``text`` decoded, with every run of the token alphabet of ``SECRET_RUN`` or more characters and
    every token-shaped segment replaced, and encoded again for one log line."""
    decoded = _decoded(text)
    segments = (REDACTED if _TOKEN_SHAPED.fullmatch(segment.strip()) else segment
                for segment in decoded.split("/"))
    return quote(_RUN.sub(REDACTED, "/".join(segments)), safe=_KEPT)


def redact_method(method: str) -> str:
    """An HTTP method as logged: a client may send anything shaped like a method, a token included."""
    return redact_text(method)


def redact_path(path: str) -> str:
    """``path`` (with its query) with its secrets replaced (see the module's docstring)."""
    base, question, query = path.partition("?")
    base = redact_text(base)
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
    plain = (key.isidentifier() and key.isascii() and len(key) <= 30 and not _RUN.search(key)
             and not _TOKEN_SHAPED.search(key))
    return f"{key}={REDACTED}" if plain else REDACTED


def request_for_log(request: Request) -> str:
    """``METHOD PATH?QUERY`` of a request, redacted, for the server's own log lines."""
    query = request.url.query
    return f"{redact_method(request.method)} {redact_path(request.url.path + ('?' + query if query else ''))}"


class RedactQuery(logging.Filter):
    """A filter for ``uvicorn.access``: its records carry ``(client, method, path, version, status)``;
    the method and the path are redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            method = redact_method(args[1]) if isinstance(args[1], str) else args[1]
            record.args = (args[0], method, redact_path(args[2]), *args[3:])
        return True
