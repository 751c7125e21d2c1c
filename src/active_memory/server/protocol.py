"""uvicorn's httptools protocol with a deadline on every request's arrival, connection caps and
a bounded request head, against slow and greedy clients.

uvicorn bounds the idle time between requests on a kept-alive connection, but neither the time
a request takes to arrive nor the size of its head: a client sending a byte a second holds a
connection (and a slot) for as long as it likes. Here each request, head and body, must have
arrived within ``request_timeout`` seconds of its connection opening or of the last answer
owed before it; otherwise the client gets ``408`` and the connection is closed. A request that
has fully arrived is no longer timed here: the application answers it.

The answer is guarded the same way: once the client stops reading, so that the transport's
buffer stays above its high-water mark for ``request_timeout`` seconds, the connection is
aborted (its buffered answer dropped), so a client that never reads cannot hold an answer of
up to ``max_response_bytes`` in memory and a worker waiting on it.

Connections are capped per peer address (``max_per_client``) and overall
(``max_connections``): one over either cap is answered at once with a JSON ``503``
(``{"error": "unavailable", ...}``) and closed, before anything is read, so one client holding
hundreds of half-sent requests exhausts only its own share and other peers keep being served.
uvicorn's own ``limit_concurrency`` is left off: it answers in plain text, and only once the
request arrived.

A request head is bounded at ``max_head_bytes`` whether it arrives in pieces or whole (llhttp,
httptools' parser, bounds none): every read that starts in a head is counted up to the head's
end, and a larger head is answered ``431`` in JSON and the connection closed. The part of a head
in a read where something else ended first (the request before it, pipelined, or blank lines)
is not counted: such a head may exceed the bound by less than one read (h11, which bounded only
the incomplete part it buffered, let a whole head pipelined in one read through at any size).
What a chunked body sends beside its data (chunk sizes and extensions, trailers) is bounded the
same, each chunk allowed its size line; trailers are dropped, as uvicorn's h11 protocol drops
them. A request that llhttp refuses (a non-numeric or negative ``Content-Length``,
``Content-Length`` with ``Transfer-Encoding``, a bare LF...) is answered ``400`` in JSON, naming
llhttp's reason. A request offering to switch protocols (``Connection: Upgrade`` with
``Upgrade``, or ``CONNECT``) is answered ``400`` in JSON before the application runs: llhttp
reads no body behind such a head, and what follows it must never be parsed as requests.
A refusal of a request still arriving (``431``, ``400``) closes lingering: the answer and our
end of the stream go out, and what the client is still sending is read and dropped for up to
``LINGER_S`` before the connection closes. Closing at once, with its data unread, makes the
kernel reset the connection, and a reset can destroy the answer before the client reads it. The
application's own refusals of a request whose body is still arriving (a ``Content-Length`` over
the cap, a token over its rates, a missing credential) close the same way: the request cycle
closes through :class:`_LingeringTransport`. A refusal of a request pipelined behind one still
being answered is written after that answer (uvicorn parses on while an answer is owed), and so
is the ``503`` to a request past ``MAX_PIPELINED`` held on one connection, which then closes.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any, ClassVar, NoReturn, cast

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

__all__ = ["REQUEST_ARRIVED", "guarded_protocol"]

# The ASGI extension (a callable in ``scope["extensions"]``) that tells the application whether
# its request has arrived whole, head and body, in this protocol's buffer: taking the body then
# waits for nothing and reads nothing more from the client.
REQUEST_ARRIVED = "active_memory.request_arrived"

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
LINGER_S = 2.0
# Requests held on one connection waiting for an earlier one's answer: uvicorn parses every
# request of a read at once, each into a request cycle, where h11 kept the rest as bytes.
MAX_PIPELINED = 16
# What a chunk's size line and closing CRLF take beyond its data: 16 hex digits and two CRLFs.
_CHUNK_FRAMING = 24
_HEAD_END = b"\r\n\r\n"
_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*([^\r\n]{0,40})", re.IGNORECASE)


def _json_answer(status: str, code: str, message: str) -> bytes:
    body = json.dumps({"error": code, "message": message}).encode()
    return (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\nconnection: close\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode() + body


_BUSY = _json_answer(
    "503 Service Unavailable",
    "unavailable",
    "the service is at its connection limit; retry in a moment",
)
_TOO_MANY_PIPELINED = _json_answer(
    "503 Service Unavailable",
    "unavailable",
    f"this connection sent more than {MAX_PIPELINED} requests ahead of their answers, as many "
    "as the service holds; read the answers before sending more",
)
# llhttp reads no body behind an offer to switch protocols (Connection: Upgrade, CONNECT): the
# bytes after the head would be parsed as further requests. The service switches to none.
_UPGRADE_REFUSED = _json_answer(
    "400 Bad Request",
    "bad_request",
    "the service switches to no other protocol; send the request without the Upgrade and "
    "Connection: Upgrade headers (and not as CONNECT)",
)
_TOO_MANY_FROM_YOU = _json_answer(
    "503 Service Unavailable",
    "unavailable",
    "this address holds as many connections as the service allows one client; close some "
    "or reuse them (keep-alive), then retry",
)


class _RefusedAtHead(Exception):
    """Raised in a parser callback to stop llhttp at a request refused from its head alone (its
    answer in ``_GuardedProtocol._refusal``)."""


class _LingeringTransport:
    """The connection's transport as uvicorn's request cycle sees it: a close while the client
    is still sending its request body lingers (see the module); everything else is the
    transport's own."""

    def __init__(self, transport: asyncio.Transport, protocol: _GuardedProtocol) -> None:
        self._transport = transport
        self._protocol = protocol

    def close(self) -> None:
        if not self._protocol.linger_instead_of_closing():
            self._transport.close()

    def is_closing(self) -> bool:
        return self._protocol._lingering is not None or self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class _GuardedProtocol(HttpToolsProtocol):
    request_timeout: float = 10.0
    max_connections: int = 256
    max_per_client: int = 32
    max_head_bytes: int = 16 * 1024
    # Open connections per peer address, of this server (one class per server, one loop).
    peers: ClassVar[dict[str, int]] = {}
    _arrival: asyncio.TimerHandle | None = None
    _stalled: asyncio.TimerHandle | None = None
    _peer: str | None = None
    # Whether the parser is in the body of the last request whose head it read (else that
    # request arrived whole, or none did yet: what comes is a head).
    _in_body: bool = False
    _head_seen: int = 0
    _head_tail: bytes = b""
    _lingering: asyncio.TimerHandle | None = None
    _arriving: bytes = b""
    # Of a body being read: bytes received that were not body (chunk framing, trailers), chunks.
    _unframed: int = 0
    _chunks: int = 0
    # A refusal waiting for the answers owed to requests pipelined ahead of the refused one.
    _deferred: bytes | None = None
    # The answer to a request refused in a parser callback, which stops llhttp by raising.
    _refusal: bytes | None = None
    # The request whose application runs (uvicorn keeps only the last one read, ``cycle``).
    _running: RequestResponseCycle | None = None

    def _arrived(self) -> bool:
        """Whether the last request whose head was read has arrived whole and waits for its
        answer."""
        return not self._in_body and self.cycle is not None and not self.cycle.response_complete

    def _arm(self) -> None:
        self._disarm()
        if not self._arrived():
            self._arrival = self.loop.call_later(self.request_timeout, self._too_slow)

    def _disarm(self) -> None:
        if self._arrival is not None:
            self._arrival.cancel()
            self._arrival = None

    def _too_slow(self) -> None:
        self._arrival = None
        if self._arrived() or self.transport.is_closing() or self._lingering:
            return
        self.logger.info("closing a connection whose request did not arrive in time")
        if self.cycle is None or not self.cycle.response_started:
            self.transport.write(_TIMEOUT)
        if self.cycle is not None:
            self.cycle.keep_alive = False
        self._tell_all_gone()
        self.transport.close()

    def _tell_all_gone(self) -> None:
        """Tell every request of the connection not answered yet, the one running and those
        queued behind it, that the client is gone (uvicorn tells only the last one read): the
        running one's application stops waiting and writing, and its next send is dropped."""
        for cycle in (self._running, self.cycle, *(cycle for cycle, _ in self.pipeline)):
            if cycle is not None and not cycle.response_complete:
                cycle.disconnected = True
                cycle.message_event.set()

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
        self._running = cycle
        super()._start_asgi_task(cycle, app)

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self.transport = cast(asyncio.Transport, _LingeringTransport(transport, self))
        peername = transport.get_extra_info("peername")
        self._peer = str(peername[0]) if isinstance(peername, tuple) and peername else "?"
        held = self.peers.get(self._peer, 0) + 1
        self.peers[self._peer] = held
        if held > self.max_per_client:
            self._refuse(_TOO_MANY_FROM_YOU)
        elif len(self.connections) > self.max_connections:
            self._refuse(_BUSY)
        else:
            self._arm()

    def _refuse(self, answer: bytes) -> None:
        self.logger.info("refusing a connection: %s", answer.split(b"\r\n", 1)[0].decode())
        self.transport.write(answer)
        self.transport.close()

    def linger_instead_of_closing(self) -> bool:
        """Whether a close asked for while the request body is still arriving became a
        lingering close (False: close now)."""
        raw = cast(_LingeringTransport, self.transport)._transport
        if (
            self._lingering is not None
            or not self._in_body
            or raw.is_closing()
            or not raw.can_write_eof()
        ):
            return False
        self._disarm()
        raw.write_eof()
        raw.resume_reading()  # uvicorn may have paused it: what arrives must be read to drop
        self._lingering = self.loop.call_later(LINGER_S, raw.close)
        return True

    def _answer_owed(self) -> bool:
        """Whether a request pipelined ahead of the one being read still waits for its answer:
        a refusal written now would land inside that answer."""
        if self._in_body:  # the request read has its cycle, queued while another runs
            return bool(self.pipeline)
        return self.cycle is not None and not self.cycle.response_complete

    def _refuse_arriving(self, answer: bytes) -> None:
        """Refuse a request the client is still sending: answer, then close lingering."""
        self._disarm()
        if self._answer_owed():
            if self._in_body:
                self.pipeline.popleft()  # the refused request's own cycle, never to be run
            self._deferred = answer
            self.flow.pause_reading()
            return
        self._send_refusal(answer)

    def _send_refusal(self, answer: bytes) -> None:
        self.logger.info("refusing a request: %s", answer.split(b"\r\n", 1)[0].decode())
        cycle = self.cycle
        if self._in_body and cycle is not None and not cycle.response_started:
            # The refusal is its answer: the application, waiting for the body, learns that the
            # client is gone, and what it would send is dropped.
            cycle.disconnected = True
            cycle.message_event.set()
        self.transport.write(answer)
        if not self.transport.can_write_eof():
            self.transport.close()
            return
        self.transport.write_eof()  # after the answer; the client's end stays open to drain
        self.flow.resume_reading()  # paused while answers were owed: what arrives is dropped
        self._lingering = self.loop.call_later(LINGER_S, self.transport.close)

    def _head_too_large(self, data: bytes) -> bool:
        """Whether the head being received, counted across reads, exceeds the bound."""
        seen = self._head_tail + data
        end = seen.find(_HEAD_END)
        if end == -1:
            self._head_seen += len(data)
            self._head_tail = seen[-3:]
            return self._head_seen > self.max_head_bytes
        size = self._head_seen - len(self._head_tail) + end + len(_HEAD_END)
        self._head_seen, self._head_tail = 0, b""
        return size > self.max_head_bytes

    def send_400_response(self, msg: str) -> None:
        # uvicorn answers a request llhttp refuses in plain text; here in JSON, with its reason.
        declared = _CONTENT_LENGTH.search(self._arriving)
        if declared is not None and not declared[1].isdigit():
            problem = (
                f"its Content-Length {declared[1].decode('ascii', 'replace')!r} is not a byte "
                "count; send the body's length in bytes"
            )
        else:
            problem = f"({msg.rstrip('.')}); check its request line and headers"
        self._refuse_arriving(
            _json_answer(
                "400 Bad Request", "bad_request", f"the request is not valid HTTP/1.1 {problem}"
            )
        )

    def data_received(self, data: bytes) -> None:
        if self._lingering is not None or self._deferred is not None:
            return  # the rest of a refused request, read only to be dropped
        if self.transport.is_closing():
            return
        if not self._in_body and self._head_too_large(data):
            self._refuse_arriving(
                _json_answer(
                    "431 Request Header Fields Too Large",
                    "too_large",
                    f"the request head exceeds {self.max_head_bytes} bytes; send fewer or "
                    "shorter headers",
                )
            )
            return
        self._unset_keepalive_if_required()
        if self._in_body:
            self._unframed += len(data)  # less the body in it (on_body)
        # Kept (not copied) only while llhttp parses it: a head it refuses is explained from it.
        self._arriving = data
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._refuse_arriving(_UPGRADE_REFUSED)  # refused at its head already: not reached
        except httptools.HttpParserError as error:
            refusal, self._refusal = self._refusal, None
            if refusal is not None:
                self._refuse_arriving(refusal)
            else:
                self.send_400_response(str(error) or "Invalid HTTP request received.")
        else:
            if self._in_body and self._framing_too_large():
                self._refuse_arriving(
                    _json_answer(
                        "431 Request Header Fields Too Large",
                        "too_large",
                        f"the request's trailers and chunk framing exceed {self.max_head_bytes} "
                        "bytes; send the body with a Content-Length, or without trailers",
                    )
                )
        finally:
            self._arriving = b""

    def _framing_too_large(self) -> bool:
        """Whether what a chunked body sent beside its data (sizes, extensions, trailers) is over
        the head's bound: llhttp bounds none, and httptools gathers a trailer whole in memory.
        What follows the head in the read where it ended is not counted (that read is not split
        between head and body): such framing may exceed the bound by less than one read."""
        self._unframed = max(self._unframed, 0)
        return self._unframed > self.max_head_bytes + _CHUNK_FRAMING * self._chunks

    def _refuse_at_head(self, answer: bytes) -> NoReturn:
        """Stop llhttp before the request's cycle exists: the connection ends after what is
        owed, then this answer."""
        self._refusal = answer
        raise _RefusedAtHead

    def on_headers_complete(self) -> None:
        if self.parser.should_upgrade():
            self._refuse_at_head(_UPGRADE_REFUSED)  # before its body is parsed as requests
        if len(self.pipeline) >= MAX_PIPELINED:
            self._refuse_at_head(_TOO_MANY_PIPELINED)
        # The head ended, whatever the last read held: the next head is counted afresh.
        self._in_body, self._head_seen, self._head_tail = True, 0, b""
        self._unframed = self._chunks = 0
        super().on_headers_complete()
        # Trailers (after a chunked body) are gathered apart, bounded and dropped, as uvicorn's
        # h11 protocol drops them: the application has the request's headers already.
        self.headers = []
        cycle = self.cycle
        if cycle is not None and cycle.scope is self.scope:  # the new request's cycle
            extensions = cast(dict[str, Any], self.scope.setdefault("extensions", {}))
            extensions[REQUEST_ARRIVED] = lambda: not cycle.more_body

    def on_chunk_header(self) -> None:
        self._chunks += 1

    def on_body(self, body: bytes) -> None:
        self._unframed -= len(body)
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._in_body = False
        # The request has arrived: its deadline ends, unless its answer went out before its
        # body came (a 404, kept alive) and nothing is queued; the deadline armed then bounds
        # the next request's arrival, and nothing else would (uvicorn's keep-alive timer was
        # cancelled when this body's bytes came).
        if self.cycle is None or not self.cycle.response_complete or self.pipeline:
            self._disarm()
        super().on_message_complete()

    def on_response_complete(self) -> None:
        if self._deferred is not None and not self.pipeline and not self.transport.is_closing():
            # The answers owed ahead of a refused request are written: now the refusal.
            self.server_state.total_requests += 1
            answer, self._deferred = self._deferred, None
            self._send_refusal(answer)
            return
        super().on_response_complete()
        # The deadline is the last request's, counted from the end of the answers owed before
        # it: while one is still queued, the request now started has its answer to write, and a
        # 408 armed now would land in its place.
        if self._deferred is None and not self.pipeline and not self.transport.is_closing():
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
        self._tell_all_gone()
        self.transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._lingering is not None:
            self._lingering.cancel()
            self._lingering = None
        if self._peer is not None:
            held = self.peers.get(self._peer, 1) - 1
            if held > 0:
                self.peers[self._peer] = held
            else:
                self.peers.pop(self._peer, None)
            self._peer = None
        if self._stalled is not None:
            self._stalled.cancel()
            self._stalled = None
        self._tell_all_gone()
        super().connection_lost(exc)


def guarded_protocol(
    request_timeout: float,
    *,
    max_connections: int = 256,
    max_per_client: int = 32,
    max_head_bytes: int = 16 * 1024,
) -> type[HttpToolsProtocol]:
    """The protocol class to hand ``uvicorn.Config(http=...)``, one per server (it counts the
    server's connections per peer)."""
    settings: dict[str, Any] = {
        "request_timeout": float(request_timeout),
        "max_connections": max_connections,
        "max_per_client": max_per_client,
        "max_head_bytes": max_head_bytes,
        "peers": {},
    }
    return type("GuardedProtocol", (_GuardedProtocol,), settings)
