"""uvicorn's h11 protocol with a deadline on every request's arrival, against slow clients.

uvicorn bounds the idle time between requests on a kept-alive connection and the size of a
request head, but not the time a request takes to arrive: a client sending a byte a second
holds a connection (and a slot) for as long as it likes. Here each request, head and body,
must have arrived within ``request_timeout`` seconds of its connection opening or of the
previous answer on it; otherwise the client gets ``408`` and the connection is closed. A
request that has fully arrived is no longer timed here: the application answers it.

The answer is guarded the same way: once the client stops reading, so that the transport's
buffer stays above its high-water mark for ``request_timeout`` seconds, the connection is
aborted (its buffered answer dropped), so a client that never reads cannot hold an answer of
up to ``max_response_bytes`` in memory and a worker waiting on it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["guarded_protocol"]

_TIMEOUT_BODY = json.dumps(
    {
        "error": "timeout",
        "message": "the request did not arrive in time; send it whole, without pauses",
    }
).encode()
_TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
    + f"content-length: {len(_TIMEOUT_BODY)}\r\n\r\n".encode()
    + _TIMEOUT_BODY
)
_ARRIVED = (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR)


class _GuardedH11Protocol(H11Protocol):
    request_timeout: float = 10.0
    _arrival: asyncio.TimerHandle | None = None
    _stalled: asyncio.TimerHandle | None = None

    def _arm(self) -> None:
        self._disarm()
        if self.conn.their_state not in _ARRIVED:
            self._arrival = self.loop.call_later(self.request_timeout, self._too_slow)

    def _disarm(self) -> None:
        if self._arrival is not None:
            self._arrival.cancel()
            self._arrival = None

    def _too_slow(self) -> None:
        self._arrival = None
        if self.conn.their_state in _ARRIVED or self.transport.is_closing():
            return
        self.logger.info("closing a connection whose request did not arrive in time")
        if self.cycle is None or not self.cycle.response_started:
            self.transport.write(_TIMEOUT)
        if self.cycle is not None:
            self.cycle.keep_alive = False
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        self.transport.close()

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state in _ARRIVED:
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._stalled is None:
            self._stalled = self.loop.call_later(self.request_timeout, self._stopped_reading)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._stalled is not None:
            self._stalled.cancel()
            self._stalled = None

    def _stopped_reading(self) -> None:
        self._stalled = None
        if not self.transport.is_closing():
            self.logger.info("aborting a connection whose client stopped reading its answer")
        self.transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._stalled is not None:
            self._stalled.cancel()
            self._stalled = None
        super().connection_lost(exc)


def guarded_protocol(request_timeout: float) -> type[H11Protocol]:
    """The protocol class to hand ``uvicorn.Config(http=...)``."""
    return type(
        "GuardedH11Protocol", (_GuardedH11Protocol,), {"request_timeout": float(request_timeout)}
    )
