"""The resident recall endpoint of a run: loopback only, guarded by a run-scoped token.

One port speaks two protocols, told apart by the first four bytes:

* the helper protocol: 4-byte big-endian length-prefixed JSON frames. The request frame
  ``{"token", "harness", "payload", "node_id", "conversation_id", "execution_id"}`` (≤ 256 KiB)
  is answered by one frame holding the harness answer itself (≤ 32 KiB); the helper prints it and
  sends an acknowledgement frame, and only then is the exposure recorded;
* HTTP/1.1 ``POST /hook`` (or ``/hook/<harness>``) as Claude Code ``http`` hooks and ``curl``
  send it: the JSON payload as body, ``Authorization: Bearer <token>``, the harness in the path
  or an ``X-Active-Memory-Harness`` header, ids in ``X-Active-Memory-Node``/``-Conversation``/
  ``-Execution`` (percent-encoded). The exposure is recorded once the response was written.

A wrong or missing token is refused without running recall (nothing is logged but the fact).
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
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import unquote

from active_memory.errors import RecallError
from active_memory.recall.exchange import EMPTY_ANSWER, MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES
from active_memory.recall.wire import (
    HTTP_STARTS,
    MAX_HEADER_BYTES,
    HttpRequest,
    WireError,
    frame,
    http_response,
    is_ack,
    read_frame,
    read_http,
    text_field,
)

__all__ = [
    "EMPTY_ANSWER",
    "MAX_REQUEST_BYTES",
    "MAX_RESPONSE_BYTES",
    "BrokerAnswer",
    "BrokerRequest",
    "Handler",
    "RecallBroker",
]

MAX_CONNECTIONS = 64
IO_TIMEOUT_S = 2.0
ACK_TIMEOUT_S = 1.0
KEEPALIVE_IDLE_S = 5.0

_log = logging.getLogger("active_memory.recall.broker")


@dataclass(frozen=True, slots=True)
class BrokerRequest:
    """One hook call as the broker received it, before any harness-specific parsing."""

    harness: str
    payload: Any
    node_id: str | None = None
    conversation_id: str | None = None
    execution_id: str | None = None


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


class RecallBroker:
    """A loopback endpoint serving recall to hook helpers, ``curl`` hooks and HTTP hooks."""

    def __init__(
        self,
        handler: Handler,
        *,
        token: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        if host not in ("127.0.0.1", "::1", "localhost"):
            raise RecallError(f"broker host {host!r} is not loopback; use 127.0.0.1")
        self.token = token or secrets.token_urlsafe(32)
        self._handler = handler
        self._requested = (host, port)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self._address: tuple[str, int] | None = None
        self._connections: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self) -> RecallBroker:
        if self._thread is not None:
            return self
        loop = asyncio.new_event_loop()
        host, port = self._requested
        serving = asyncio.start_server(self._serve, host, port, backlog=128, limit=MAX_HEADER_BYTES)
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
        for writer in list(self._connections):
            writer.close()
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
        return hmac.compare_digest(token.encode("utf-8"), self.token.encode("utf-8"))

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
        if len(self._connections) >= MAX_CONNECTIONS:
            writer.close()
            return
        self._connections.add(writer)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        try:
            first = await asyncio.wait_for(reader.readexactly(4), IO_TIMEOUT_S)
            if first in HTTP_STARTS:
                await self._serve_http(reader, writer, first)
            else:
                await self._serve_frame(reader, writer, int.from_bytes(first, "big"))
        except (OSError, EOFError, TimeoutError, asyncio.IncompleteReadError):
            pass  # the client went away or stalled; nothing was handed over
        finally:
            self._connections.discard(writer)
            writer.close()

    async def _serve_frame(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, length: int
    ) -> None:
        try:
            data = await asyncio.wait_for(read_frame(reader, length, MAX_REQUEST_BYTES),
                                          IO_TIMEOUT_S)  # fmt: skip
            message = json.loads(data)
        except (WireError, ValueError):
            _log.info("refused a helper frame that is oversized or not JSON")
            return
        if not isinstance(message, dict) or not self._authorised(message.get("token")):
            _log.info("refused a helper request with a wrong or missing token")
            return
        request = BrokerRequest(
            harness=str(message.get("harness") or ""),
            payload=message.get("payload"),
            node_id=text_field(message.get("node_id")),
            conversation_id=text_field(message.get("conversation_id")),
            execution_id=text_field(message.get("execution_id")),
        )
        answer = self._answer(request)
        ack = None
        try:
            writer.write(frame(answer.body))
            await writer.drain()
            size = int.from_bytes(await asyncio.wait_for(reader.readexactly(4), ACK_TIMEOUT_S))
            if 0 < size <= 1024:
                ack = await asyncio.wait_for(reader.readexactly(size), ACK_TIMEOUT_S)
        except (OSError, EOFError, TimeoutError, asyncio.IncompleteReadError):
            ack = None
        finally:
            # The exposure counts only once the helper says it printed the answer.
            if is_ack(ack):
                answer.commit()
            else:
                answer.release()

    async def _serve_http(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, start: bytes
    ) -> None:
        timeout = IO_TIMEOUT_S
        while True:
            try:
                request = await asyncio.wait_for(read_http(reader, writer, start), timeout)
            except WireError as refusal:
                writer.write(http_response(refusal.status, EMPTY_ANSWER, keep_alive=False))
                await writer.drain()
                return
            status, answer = self._route(request)
            try:
                writer.write(http_response(status, answer.body, keep_alive=request.keep_alive))
                await writer.drain()
            except BaseException:
                answer.release()
                raise
            answer.commit()
            if not request.keep_alive:
                return
            start, timeout = b"", KEEPALIVE_IDLE_S

    def _route(self, request: HttpRequest) -> tuple[str, BrokerAnswer]:
        headers, path = request.headers, request.path
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if not (scheme.lower() == "bearer" and self._authorised(token.strip())):
            _log.info("refused an HTTP %s %s with a wrong or missing token", request.method, path)
            return "401 Unauthorized", _Static(EMPTY_ANSWER)
        if request.method == "GET" and path == "/health":
            return "200 OK", _Static(b'{"ok":true}')
        if path != "/hook" and not path.startswith("/hook/"):
            return "404 Not Found", _Static(EMPTY_ANSWER)
        if request.method != "POST":
            return "405 Method Not Allowed", _Static(EMPTY_ANSWER)
        harness = path[len("/hook/") :] if path.startswith("/hook/") else ""
        harness = harness or headers.get("x-active-memory-harness", "")
        try:
            payload = json.loads(request.body) if request.body else None
        except ValueError:
            return "400 Bad Request", _Static(EMPTY_ANSWER)

        def header(name: str) -> str | None:
            return unquote(headers.get(f"x-active-memory-{name}", "")) or None

        hook = BrokerRequest(
            harness, payload, header("node"), header("conversation"), header("execution")
        )
        return "200 OK", self._answer(hook)
