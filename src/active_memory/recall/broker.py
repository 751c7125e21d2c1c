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
The server runs in background threads so a host can drive it from synchronous code.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import secrets
import socket
import socketserver
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import unquote

from active_memory.errors import RecallError

__all__ = [
    "EMPTY_ANSWER",
    "MAX_REQUEST_BYTES",
    "MAX_RESPONSE_BYTES",
    "BrokerAnswer",
    "BrokerRequest",
    "Handler",
    "RecallBroker",
]

MAX_REQUEST_BYTES = 256 * 1024
MAX_RESPONSE_BYTES = 32 * 1024
MAX_HEADER_BYTES = 16 * 1024
MAX_CONNECTIONS = 64
IO_TIMEOUT_S = 2.0
ACK_TIMEOUT_S = 1.0
KEEPALIVE_IDLE_S = 5.0
EMPTY_ANSWER = b"{}"
_HTTP_STARTS = (b"POST", b"GET ", b"PUT ", b"HEAD", b"DELE", b"OPTI", b"PATC")

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


def _recv_exact(sock: socket.socket, size: int) -> bytes | None:
    chunks, remaining = [], size
    while remaining:
        chunk = sock.recv(min(remaining, 65536))
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _frame(body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + body


def _is_ack(data: bytes | None) -> bool:
    if not data:
        return False
    try:
        message = json.loads(data)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("ack") is True


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _http_response(status: str, body: bytes, *, keep_alive: bool) -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: {'keep-alive' if keep_alive else 'close'}"
        "\r\n\r\n"
    )
    return head.encode("ascii") + body


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    # Parallel tool calls connect at once; the default backlog of 5 drops SYNs (1 s retries).
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], broker: RecallBroker) -> None:
        self.broker = broker
        super().__init__(address, _Connection)


class _Connection(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        self.server.broker._serve(self.request)


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
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()

    def start(self) -> RecallBroker:
        if self._server is not None:
            return self
        try:
            server = _Server(self._requested, self)
        except OSError as exc:
            host, port = self._requested
            raise RecallError(
                f"cannot listen on {host}:{port} ({exc.strerror}); choose another port or 0"
            ) from exc
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05},
            name="active-memory-broker", daemon=True,
        )  # fmt: skip
        self._thread.start()
        return self

    @property
    def address(self) -> tuple[str, int]:
        if self._server is None:
            raise RecallError("the broker is not running; call start() first")
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        host, port = self.address
        return f"http://{host}:{port}/hook"

    def close(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        with self._lock:
            open_connections = list(self._connections)
        for connection in open_connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

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

    def _serve(self, sock: socket.socket) -> None:
        with self._lock:
            if len(self._connections) >= MAX_CONNECTIONS:
                return
            self._connections.add(sock)
        try:
            sock.settimeout(IO_TIMEOUT_S)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            first = _recv_exact(sock, 4)
            if first is None:
                return
            if first in _HTTP_STARTS:
                self._serve_http(sock, first)
            else:
                self._serve_frame(sock, int.from_bytes(first, "big"))
        except OSError:
            return  # the client went away or timed out; nothing was handed over
        finally:
            with self._lock:
                self._connections.discard(sock)

    def _serve_frame(self, sock: socket.socket, length: int) -> None:
        if not 0 < length <= MAX_REQUEST_BYTES:
            _log.info("refused a helper frame of %d bytes", length)
            return
        data = _recv_exact(sock, length)
        if data is None:
            return
        try:
            message = json.loads(data)
        except ValueError:
            _log.info("refused a helper frame that is not JSON")
            return
        if not isinstance(message, dict) or not self._authorised(message.get("token")):
            _log.info("refused a helper request with a wrong or missing token")
            return
        request = BrokerRequest(
            harness=str(message.get("harness") or ""),
            payload=message.get("payload"),
            node_id=_text(message.get("node_id")),
            conversation_id=_text(message.get("conversation_id")),
            execution_id=_text(message.get("execution_id")),
        )
        answer = self._answer(request)
        try:
            sock.sendall(_frame(answer.body))
            sock.settimeout(ACK_TIMEOUT_S)
            head = _recv_exact(sock, 4)
            size = int.from_bytes(head, "big") if head else 0
            ack = _recv_exact(sock, size) if 0 < size <= 1024 else None
        except OSError:
            ack = None
        if _is_ack(ack):
            answer.commit()
        else:
            answer.release()

    def _serve_http(self, sock: socket.socket, first: bytes) -> None:
        buffer = first
        while True:
            end = buffer.find(b"\r\n\r\n")
            while end < 0:
                if len(buffer) > MAX_HEADER_BYTES:
                    sock.sendall(_http_response("431 Request Header Fields Too Large",
                                                EMPTY_ANSWER, keep_alive=False))  # fmt: skip
                    return
                chunk = sock.recv(65536)
                if not chunk:
                    return
                buffer += chunk
                end = buffer.find(b"\r\n\r\n")
            head, buffer = buffer[:end].decode("latin-1"), buffer[end + 4 :]
            lines = head.split("\r\n")
            parts = lines[0].split(" ")
            if len(parts) != 3:
                sock.sendall(_http_response("400 Bad Request", EMPTY_ANSWER, keep_alive=False))
                return
            method, target, version = parts
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            keep_alive = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
            body, buffer, status = self._http_body(sock, method, headers, buffer)
            if status is not None:
                sock.sendall(_http_response(status, EMPTY_ANSWER, keep_alive=False))
                return
            status, answer = self._http_route(method, target, headers, body)
            try:
                sock.sendall(_http_response(status, answer.body, keep_alive=keep_alive))
            except OSError:
                answer.release()
                raise
            answer.commit()
            if not keep_alive:
                return
            sock.settimeout(KEEPALIVE_IDLE_S)
            if not buffer:
                buffer = sock.recv(65536)
                if not buffer:
                    return
            sock.settimeout(IO_TIMEOUT_S)

    def _http_body(
        self, sock: socket.socket, method: str, headers: dict[str, str], buffer: bytes
    ) -> tuple[bytes, bytes, str | None]:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return b"", b"", "411 Length Required"
        try:
            length = int(headers.get("content-length", "0"))
        except ValueError:
            return b"", b"", "400 Bad Request"
        if length < 0 or length > MAX_REQUEST_BYTES:
            return b"", b"", "413 Content Too Large"
        if length and headers.get("expect", "").lower() == "100-continue":
            sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        if len(buffer) < length:
            rest = _recv_exact(sock, length - len(buffer))
            if rest is None:
                return b"", b"", "400 Bad Request"
            buffer += rest
        return buffer[:length], buffer[length:], None

    def _http_route(
        self, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[str, BrokerAnswer]:
        path = target.split("?", 1)[0]
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if not (scheme.lower() == "bearer" and self._authorised(token.strip())):
            _log.info("refused an HTTP %s %s with a wrong or missing token", method, path)
            return "401 Unauthorized", _Static(EMPTY_ANSWER)
        if method == "GET" and path == "/health":
            return "200 OK", _Static(b'{"ok":true}')
        if path != "/hook" and not path.startswith("/hook/"):
            return "404 Not Found", _Static(EMPTY_ANSWER)
        if method != "POST":
            return "405 Method Not Allowed", _Static(EMPTY_ANSWER)
        harness = path[len("/hook/") :] if path.startswith("/hook/") else ""
        harness = harness or headers.get("x-active-memory-harness", "")
        try:
            payload = json.loads(body) if body else None
        except ValueError:
            return "400 Bad Request", _Static(EMPTY_ANSWER)

        def header(name: str) -> str | None:
            value = headers.get(f"x-active-memory-{name}", "")
            return unquote(value) or None

        request = BrokerRequest(
            harness, payload, header("node"), header("conversation"), header("execution")
        )
        return "200 OK", self._answer(request)
