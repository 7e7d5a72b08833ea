"""The HTTP protocol the server runs: uvicorn's h11 protocol with deadlines for slow clients.

uvicorn closes a kept-alive connection that stays idle (``timeout_keep_alive``) but has no deadline
for a request that arrives slowly: a client sending its headers a byte at a time, or a body that
trickles, holds a connection (and, for an upload, a temporary file) for as long as it likes. Here:

- **headers**: a request's line and headers must be complete within ``header_timeout_s`` of the
  connection opening or of the previous response (for a kept-alive connection);
- **body**: a request's body must be complete within ``body_timeout_s`` of its headers (also when the
  server has already answered, e.g. refused an upload before reading it, and is discarding the rest).

Past either the connection is closed; an upload cut off this way stores and counts nothing. While the
server works on a request (scoring, with a time limit of its own) no deadline runs. ``serve`` installs
it (``uvicorn.run(http=...)``); its timeouts come from ``Settings`` (``--header-timeout``,
``--body-timeout``; worker processes read them from the environment).
"""

from __future__ import annotations

import asyncio
import logging

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("leaderboard")


class DeadlineProtocol(H11Protocol):
    """``H11Protocol`` that closes connections whose request head or body arrives too slowly."""

    header_timeout_s: float | None = None  # None: Settings.from_env()'s (a worker process)
    body_timeout_s: float | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if self.header_timeout_s is None or self.body_timeout_s is None:
            from leaderboard.settings import Settings

            settings = Settings.from_env()
            type(self).header_timeout_s = settings.header_timeout_s
            type(self).body_timeout_s = settings.body_timeout_s
        self._phase: str | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._follow_phase()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow_phase()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow_phase()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)

    def _follow_phase(self) -> None:
        """Arm the deadline of what the client is sending now: the request head, the body, or nothing."""
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        phase = "head" if state is h11.IDLE else "body" if state is h11.SEND_BODY else None
        if phase == self._phase:
            return
        self._phase = phase
        self._cancel()
        if phase is not None:
            limit = self.header_timeout_s if phase == "head" else self.body_timeout_s
            self._deadline = self.loop.call_later(float(limit), self._expire, phase)  # type: ignore[arg-type]

    def _expire(self, phase: str) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        log.info("closing a connection from %s: its request %s did not arrive within %g s",
                 self.client[0] if self.client else "?", "headers" if phase == "head" else "body",
                 self.header_timeout_s if phase == "head" else self.body_timeout_s)
        self.transport.close()

    def _cancel(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None


def deadline_protocol(header_timeout_s: float, body_timeout_s: float) -> type[DeadlineProtocol]:
    """``DeadlineProtocol`` with these deadlines (for a server in this process)."""
    return type("DeadlineProtocol", (DeadlineProtocol,),
                {"header_timeout_s": header_timeout_s, "body_timeout_s": body_timeout_s})
