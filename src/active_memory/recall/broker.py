"""The resident recall endpoint of a run: loopback only, guarded by a run-scoped token.

One port speaks two protocols, told apart by the first four bytes:

* the helper protocol: 4-byte big-endian length-prefixed frames. A request frame is a 32-byte
  HMAC-SHA256 tag (keyed by the token) followed by the JSON it signs, ``{"nonce", "harness",
  "payload", "node_id", "conversation_id", "execution_id"}``; the tag is checked before the JSON
  is parsed, and a nonce seen before is refused. It is answered by one frame holding the tag of
  the answer (keyed by the token, over the helper's nonce and the answer) and the harness answer
  itself (≤ 32 KiB); the helper checks the tag, prints the answer and sends an acknowledgement
  frame, and only then is the exposure recorded. The token itself never crosses the wire;
* HTTP/1.1 ``POST /hook`` (or ``/hook/<harness>``) as Claude Code ``http`` hooks and ``curl``
  send it: the JSON payload as body, ``Authorization: Bearer <token>``, the harness in the path
  or an ``X-Active-Memory-Harness`` header, ids in ``X-Active-Memory-Node``/``-Conversation``/
  ``-Execution`` (percent-encoded). The token is checked once the head is read, before the body
  is. The exposure is recorded once the response was written.

A refused request (wrong or missing token, malformed, oversized) is closed without running
recall (nothing is logged but the fact). Every connection must deliver a whole request within
``REQUEST_TIMEOUT_S`` and may then idle ``KEEPALIVE_IDLE_S`` between HTTP requests. Which
connections the broker holds (``max_connections``, ``max_per_peer`` from one local user,
``reserved_slots`` for the broker's own user) and which one makes way for a newcomer is
:mod:`active_memory.recall.broker_limits`: sockets that connect and stall can only delay a
caller, never lock one out, and other users cannot take the slots the helper's calls need. Ids
are recorded only when they are short, printable text (:func:`active_memory.recall.wire.id_field`).

The server is an asyncio loop in one background thread, so a host can drive it from synchronous
code; recall itself is a few dictionary lookups and runs on that loop between reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import secrets
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from active_memory.errors import RecallError
from active_memory.recall.broker_limits import (
    MAX_CONNECTIONS,
    MAX_PER_PEER,
    RESERVED_SLOTS,
    BrokerLimits,
    ConnectionSlots,
    Held,
    PeerNames,
    descriptor_cap,
    owner_peer,
)
from active_memory.recall.exchange import EMPTY_ANSWER, MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES
from active_memory.recall.wire import (
    ANSWER_CONTEXT,
    HTTP_STARTS,
    MAC_BYTES,
    MAX_FRAME_BYTES,
    MAX_HEADER_BYTES,
    REQUEST_CONTEXT,
    HttpRequest,
    WireError,
    frame,
    header_id,
    http_response,
    id_field,
    is_ack,
    mac,
    read_body,
    read_head,
)

__all__ = [
    "EMPTY_ANSWER",
    "MAX_CONNECTIONS",
    "MAX_PER_PEER",
    "MAX_REQUEST_BYTES",
    "MAX_RESPONSE_BYTES",
    "RESERVED_SLOTS",
    "BrokerAnswer",
    "BrokerLimits",
    "BrokerRequest",
    "Handler",
    "RecallBroker",
]

REQUEST_TIMEOUT_S = 1.0
KEEPALIVE_IDLE_S = 5.0
IO_TIMEOUT_S = 2.0
ACK_TIMEOUT_S = 1.0
REPLAY_WINDOW = 4096
_NONCE_CHARS = (16, 64)

try:  # POSIX: how many bytes a socket holds unread (Windows has neither module)
    import fcntl
    import termios
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]
    termios = None  # type: ignore[assignment]

_log = logging.getLogger("active_memory.recall.broker")


@dataclass(frozen=True, slots=True)
class BrokerRequest:
    """One hook call as the broker received it, before any harness-specific parsing."""

    harness: str
    payload: Any
    node_id: str | None = None
    conversation_id: str | None = None
    execution_id: str | None = None
    call_id: str | None = None  # the helper's nonce: one receipt per call, whoever answers
    max_chars: int | None = None  # a smaller cap the harness applies (Claude's restricted mode)


class BrokerAnswer(Protocol):
    """A harness answer in flight: its JSON body, committed once handed over or released."""

    @property
    def body(self) -> bytes: ...

    def commit(self) -> None: ...

    def release(self) -> None: ...


Handler = Callable[[BrokerRequest], BrokerAnswer]


@dataclass(frozen=True, slots=True)
class _Static:
    body: bytes

    def commit(self) -> None:
        return None

    def release(self) -> None:
        return None


def _cap(value: object) -> int | None:
    """A helper's ``max_chars``: a whole number from 1 to the response limit, else none."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_RESPONSE_BYTES:
        return value
    return None


def _pending(writer: asyncio.StreamWriter, reader: asyncio.StreamReader) -> Callable[[], bool]:
    """Whether bytes of ``writer``'s connection wait to be read, in the kernel or the stream."""
    sock = writer.get_extra_info("socket")
    fd = sock.fileno() if sock is not None else -1

    def pending() -> bool:
        # The stream's own buffer is private API; asyncio has no public count of buffered bytes.
        if getattr(reader, "_buffer", None):
            return True
        if fd < 0 or fcntl is None:
            return False
        try:
            waiting = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
        except OSError:
            return False
        return int.from_bytes(waiting, sys.byteorder) > 0

    return pending


class RecallBroker:
    """A loopback endpoint serving recall to hook helpers, ``curl`` hooks and HTTP hooks."""

    def __init__(
        self,
        handler: Handler,
        *,
        token: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        limits: BrokerLimits | None = None,
    ) -> None:
        if host not in ("127.0.0.1", "::1", "localhost"):
            raise RecallError(f"broker host {host!r} is not loopback; use 127.0.0.1")
        limits = limits or BrokerLimits()
        self.token = token or secrets.token_urlsafe(32)
        self._key = self.token.encode("utf-8")
        self._handler = handler
        self._requested = (host, port)
        self._peers = PeerNames()
        owner = owner_peer() if self._peers.by_user else None
        self._slots = ConnectionSlots(limits, owner=owner,
                                      total=descriptor_cap(limits.max_connections))  # fmt: skip
        self._nonces: OrderedDict[str, None] = OrderedDict()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self._address: tuple[str, int] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self) -> RecallBroker:
        if self._thread is not None:
            return self
        loop = asyncio.new_event_loop()
        host, port = self._requested
        serving = asyncio.start_server(self._serve, host, port, backlog=1024,
                                       limit=MAX_HEADER_BYTES)  # fmt: skip
        try:
            server = loop.run_until_complete(serving)
        except OSError as exc:
            loop.close()
            raise RecallError(
                f"cannot listen on {host}:{port} ({exc.strerror}); choose another port or 0"
            ) from exc
        bound = server.sockets[0].getsockname()
        self._loop, self._server, self._address = loop, server, (str(bound[0]), int(bound[1]))
        self._thread = threading.Thread(target=loop.run_forever, name="active-memory-broker",
                                        daemon=True)  # fmt: skip
        self._thread.start()
        return self

    @property
    def address(self) -> tuple[str, int]:
        if self._address is None:
            raise RecallError("the broker is not running; call start() first")
        return self._address

    @property
    def url(self) -> str:
        host, port = self.address
        return f"http://{host}:{port}/hook"

    @property
    def connection_stats(self) -> dict[str, int]:
        """Connections held now, displaced to admit newer ones and refused since start, and the
        peers holding connections now."""
        return self._slots.stats()

    def close(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self._address = None
        future = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
        with contextlib.suppress(Exception):
            future.result(timeout=5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        loop.close()
        self._loop = self._thread = self._server = None

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for connection in list(self._slots.held):
            connection.abort()
        self._peers.close()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=IO_TIMEOUT_S)
        if self._server is not None:
            await self._server.wait_closed()

    def __enter__(self) -> RecallBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _authorised(self, token: object) -> bool:
        if not isinstance(token, str) or not token:
            return False
        return hmac.compare_digest(token.encode("utf-8"), self._key)

    def _answer(self, request: BrokerRequest) -> BrokerAnswer:
        try:
            answer = self._handler(request)
        except Exception:
            _log.exception("recall failed for a %s hook; answering empty", request.harness)
            return _Static(EMPTY_ANSWER)
        if len(answer.body) > MAX_RESPONSE_BYTES:
            answer.release()
            _log.warning("a %s answer exceeded %d bytes; answering empty", request.harness,
                         MAX_RESPONSE_BYTES)  # fmt: skip
            return _Static(EMPTY_ANSWER)
        return answer

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = self._peers.name(writer.get_extra_info("peername"),
                                writer.get_extra_info("sockname"))  # fmt: skip
        connection = Held(peer, writer.transport.abort, _pending(writer, reader))
        if not self._slots.admit(connection):
            writer.transport.abort()
            return
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        deadline = asyncio.get_running_loop().time() + REQUEST_TIMEOUT_S
        try:
            async with asyncio.timeout_at(deadline):
                first = await reader.readexactly(1)
                self._slots.heard(connection)  # its first byte: no longer a silent socket
                first += await reader.readexactly(3)
            if first in HTTP_STARTS:
                await self._serve_http(reader, writer, connection, first, deadline)
            else:
                length = int.from_bytes(first, "big")
                await self._serve_frame(reader, writer, connection, length, deadline)
        except (OSError, EOFError, TimeoutError, asyncio.IncompleteReadError):
            pass  # the client went away, stalled or was displaced; nothing was handed over
        finally:
            self._slots.release(connection)
            writer.close()

    def _fresh(self, nonce: object) -> str | None:
        """The request's nonce when it is well formed and not seen before (no replays)."""
        low, high = _NONCE_CHARS
        if not isinstance(nonce, str) or not low <= len(nonce) <= high or not nonce.isalnum():
            return None
        if nonce in self._nonces:
            return None
        self._nonces[nonce] = None
        if len(self._nonces) > REPLAY_WINDOW:
            self._nonces.popitem(last=False)
        return nonce

    async def _serve_frame(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        connection: Held,
        length: int,
        deadline: float,
    ) -> None:
        if not MAC_BYTES < length <= MAX_FRAME_BYTES:
            _log.info("refused a helper frame of %d bytes", length)
            return
        async with asyncio.timeout_at(deadline):
            data = await reader.readexactly(length)
        tag, body = data[:MAC_BYTES], data[MAC_BYTES:]
        # The signature is checked before a byte of the body is parsed.
        if not hmac.compare_digest(tag, mac(self._key, REQUEST_CONTEXT, body)):
            _log.info("refused a helper frame not signed with the run's token")
            return
        self._slots.busy(connection)
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            _log.info("refused a signed helper frame that is not JSON")
            return
        nonce = self._fresh(message.get("nonce")) if isinstance(message, dict) else None
        if nonce is None:
            _log.info("refused a helper frame without a fresh nonce (a replay?)")
            return
        harness = message.get("harness")
        request = BrokerRequest(
            harness=harness if isinstance(harness, str) else "",
            payload=message.get("payload"),
            node_id=id_field(message.get("node_id")),
            conversation_id=id_field(message.get("conversation_id")),
            execution_id=id_field(message.get("execution_id")),
            call_id=nonce,
            max_chars=_cap(message.get("max_chars")),
        )
        answer = self._answer(request)
        signed = mac(self._key, ANSWER_CONTEXT, nonce.encode("ascii"), answer.body) + answer.body
        ack = None
        try:
            writer.write(frame(signed))
            async with asyncio.timeout(IO_TIMEOUT_S):
                await writer.drain()
            async with asyncio.timeout(ACK_TIMEOUT_S):
                size = int.from_bytes(await reader.readexactly(4), "big")
                if 0 < size <= 1024:
                    ack = await reader.readexactly(size)
        except (OSError, EOFError, TimeoutError, asyncio.IncompleteReadError):
            ack = None
        finally:
            # The exposure counts only once the helper says it printed the answer.
            if is_ack(ack):
                answer.commit()
            else:
                answer.release()

    async def _serve_http(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        connection: Held,
        start: bytes,
        deadline: float,
    ) -> None:
        while True:
            try:
                async with asyncio.timeout_at(deadline):
                    head = await read_head(reader, start)
                    scheme, _, token = head.headers.get("authorization", "").partition(" ")
                    if not (scheme.lower() == "bearer" and self._authorised(token.strip())):
                        _log.info("refused an HTTP %s %s with a wrong or missing token",
                                  head.method, head.path)  # fmt: skip
                        raise WireError("401 Unauthorized")
                    self._slots.busy(connection)
                    request = await read_body(reader, writer, head)
            except WireError as refusal:
                # Refused: answered and closed, so a refused caller holds no connection.
                writer.write(http_response(refusal.status, EMPTY_ANSWER, keep_alive=False))
                return
            status, answer = self._route(request)
            keep_alive = request.head.keep_alive and status == "200 OK"
            try:
                writer.write(http_response(status, answer.body, keep_alive=keep_alive))
                async with asyncio.timeout(IO_TIMEOUT_S):
                    await writer.drain()
            except BaseException:
                answer.release()
                raise
            answer.commit()
            if not keep_alive:
                return
            self._slots.idle(connection)
            async with asyncio.timeout(KEEPALIVE_IDLE_S):
                start = await reader.readexactly(1)
            deadline = asyncio.get_running_loop().time() + REQUEST_TIMEOUT_S

    def _route(self, request: HttpRequest) -> tuple[str, BrokerAnswer]:
        head = request.head
        headers, path = head.headers, head.path
        if head.method == "GET" and path == "/health":
            return "200 OK", _Static(b'{"ok":true}')
        if path != "/hook" and not path.startswith("/hook/"):
            return "404 Not Found", _Static(EMPTY_ANSWER)
        if head.method != "POST":
            return "405 Method Not Allowed", _Static(EMPTY_ANSWER)
        harness = path[len("/hook/") :] if path.startswith("/hook/") else ""
        harness = harness or headers.get("x-active-memory-harness", "")
        try:
            payload = json.loads(request.body) if request.body else None
        except (ValueError, RecursionError):
            return "400 Bad Request", _Static(EMPTY_ANSWER)
        hook = BrokerRequest(
            harness,
            payload,
            header_id(headers.get("x-active-memory-node")),
            header_id(headers.get("x-active-memory-conversation")),
            header_id(headers.get("x-active-memory-execution")),
        )
        return "200 OK", self._answer(hook)
