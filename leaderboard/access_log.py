"""The access log without secrets: query strings are redacted before a line is written.

The API takes tokens only in the ``Authorization`` header and refuses ``?token=``, but a client can
still send one in a URL; uvicorn's access log would then keep it. Every query value is replaced by
``REDACTED`` except those of the few parameters the pages use (``board``, ``page``).

>>> redact_path("/api/submissions/mine?token=7.secret&board=private")
'/api/submissions/mine?token=REDACTED&board=private'
"""

from __future__ import annotations

import logging
from urllib.parse import parse_qsl, quote

REDACTED = "REDACTED"
SHOWN_PARAMETERS = frozenset({"board", "page"})


def redact_path(path: str) -> str:
    """``path`` with the value of every query parameter outside ``SHOWN_PARAMETERS`` replaced (and the
    parameter itself, unless its name is a short plain word)."""
    base, question, query = path.partition("?")
    if not question:
        return path
    pairs = parse_qsl(query, keep_blank_values=True)
    if not pairs:
        return f"{base}?{REDACTED}" if query else base + "?"
    return base + "?" + "&".join(_shown(key, value) for key, value in pairs)


def _shown(key: str, value: str) -> str:
    if key in SHOWN_PARAMETERS:
        return f"{key}={quote(value, safe='')}"
    # A key may itself be the secret ("?7.abc..."): only a short plain name is kept.
    return f"{key}={REDACTED}" if key.isidentifier() and key.isascii() and len(key) <= 30 else REDACTED


class RedactQuery(logging.Filter):
    """A filter for ``uvicorn.access``: its records carry ``(client, method, path, version, status)``."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], redact_path(args[2]), *args[3:])
        return True
