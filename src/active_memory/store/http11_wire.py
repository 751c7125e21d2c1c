"""One HTTP/1.1 connection to the memory service, at the socket: what ``Http11`` sends through.

A request is one write (its head and its body together). An answer is read by its framing, as
RFC 9112 sets it out for a client: ``Transfer-Encoding: chunked``, else ``Content-Length``,
else to the close; a 1xx answer before it is skipped; a 204 or 304 has no body. Anything else
(a transfer coding other than chunked, which the client never asks for; two lengths that
differ; a folded or nameless header line; a head over 64 KiB) is :class:`BadAnswer`, and the
connection is not used again. The body is bounded before it is read where its length is
known, and as it arrives where it is not.

Why not ``http.client``: its answer goes through the ``email`` package's header parser and a
file object made per answer, about 0.1 ms of the writer's CPU an exchange where the two
system calls cost 0.025 ms (``benchmarks/team_bench.py``'s writers are 8 processes sharing
2 cores with the service and PostgreSQL). The service answers in one known shape
(uvicorn's), and what is read here is then validated whole by the wire models.
"""

from __future__ import annotations

import select
import socket
import ssl

__all__ = ["BadAnswer", "Connection", "TooLarge"]

_HEAD_MAX = 64 * 1024  # a head, or a chunk's size line, longer than this is refused
_TRAILERS_MAX = 100
_RECV = 64 * 1024  # under malloc's mmap threshold: a larger buffer is mapped and unmapped each recv


class BadAnswer(Exception):
    """The bytes the service sent are not an HTTP/1.1 answer this client reads."""


class TooLarge(Exception):
    """The answer's body is over the bound; the connection holds the rest of it."""


class Connection:
    """A connected socket (TLS when a context is given), with what was read past the last
    answer (nothing, on a connection that can be used again)."""

    __slots__ = ("_buffer", "sock")

    def __init__(
        self, host: str, port: int, timeout_s: float, context: ssl.SSLContext | None
    ) -> None:
        """Connect (OSError: refused, unreachable, timed out, or TLS refused)."""
        sock = socket.create_connection((host, port), timeout=timeout_s)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as httpcore sets it
            if context is not None:
                sock = context.wrap_socket(sock, server_hostname=host)
        except BaseException:
            sock.close()
            raise
        self.sock = sock
        self._buffer = bytearray()

    def close(self) -> None:
        self.sock.close()

    def reusable(self) -> bool:
        """Whether this kept-alive connection can carry the next request: readable while no
        request is out means the service closed it (its keep-alive ran out) or sent what
        nobody asked for. Checked before sending, as httpcore does, so a publication is never
        sent on a connection already closed and then reported with an unknown outcome."""
        if self._buffer or self.sock.fileno() < 0:
            return False
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable

    def exchange(self, request: bytes, max_body: int) -> tuple[int, bytes, bool]:
        """Send ``request`` (head and body), read the answer: its status, its body, and whether
        the connection can be used again. OSError or BadAnswer when the answer is not read
        whole; TooLarge over ``max_body``."""
        self.sock.sendall(request)
        version, status, fields = self._head()
        while 100 <= status < 200:  # an interim answer (101 would switch protocols: not asked)
            if status == 101:
                raise BadAnswer("the service switched protocols unasked")
            version, status, fields = self._head()
        keep = version == "HTTP/1.1" and "close" not in _tokens(fields.get("connection", ""))
        if status in (204, 304):
            return status, b"", keep
        coding = fields.get("transfer-encoding")
        if coding is not None:
            if _tokens(coding) != ["chunked"]:
                raise BadAnswer(f"transfer coding {coding!r} was not asked for")
            return status, self._chunked(max_body), keep
        length = fields.get("content-length")
        if length is None:
            return status, self._to_close(max_body), False
        values = {value.strip() for value in length.split(",")}
        if len(values) != 1 or not (size := values.pop()).isdigit() or not size.isascii():
            raise BadAnswer(f"Content-Length {length!r} is not one length")
        if int(size) > max_body:
            raise TooLarge
        return status, self._exactly(int(size)), keep

    # -- reading -------------------------------------------------------------------------

    def _fill(self) -> None:
        data = self.sock.recv(_RECV)
        if not data:
            raise ConnectionResetError("the service closed the connection mid-answer")
        self._buffer += data

    def _head(self) -> tuple[str, int, dict[str, str]]:
        while (end := self._buffer.find(b"\r\n\r\n")) < 0:
            if len(self._buffer) > _HEAD_MAX:
                raise BadAnswer("the answer's head is over 64 KiB")
            self._fill()
        if end > _HEAD_MAX:
            raise BadAnswer("the answer's head is over 64 KiB")
        status_line, *lines = self._buffer[:end].decode("latin-1").split("\r\n")
        del self._buffer[: end + 4]
        version, _, rest = status_line.partition(" ")
        code = rest[:3]
        if version not in ("HTTP/1.1", "HTTP/1.0") or not (code.isdigit() and code.isascii()):
            raise BadAnswer(f"{status_line[:80]!r} is not an HTTP/1.1 status line")
        fields: dict[str, str] = {}
        for line in lines:
            name, colon, value = line.partition(":")
            if not colon or not name or name != name.strip(" \t"):  # folded, or no name
                raise BadAnswer(f"{line[:80]!r} is not a header line")
            name = name.lower()
            value = value.strip(" \t")
            fields[name] = f"{fields[name]}, {value}" if name in fields else value
        return version, int(code), fields

    def _line(self) -> bytes:
        while (end := self._buffer.find(b"\r\n")) < 0:
            if len(self._buffer) > _HEAD_MAX:
                raise BadAnswer("a chunk's size line is over 64 KiB")
            self._fill()
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 2]
        return line

    def _exactly(self, size: int) -> bytes:
        while len(self._buffer) < size:
            self._fill()
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    def _chunked(self, max_body: int) -> bytes:
        chunks: list[bytes] = []
        total = 0
        while True:
            size_text = self._line().split(b";", 1)[0].strip(b" \t")
            if not size_text or size_text.strip(b"0123456789abcdefABCDEF"):
                raise BadAnswer(f"{size_text[:20]!r} is not a chunk size")
            size = int(size_text, 16)
            if size == 0:
                break
            total += size
            if total > max_body:
                raise TooLarge
            chunks.append(self._exactly(size))
            if self._line():
                raise BadAnswer("a chunk does not end where its size says")
        for _ in range(_TRAILERS_MAX):
            if not self._line():
                return b"".join(chunks)
        raise BadAnswer(f"more than {_TRAILERS_MAX} trailer lines")

    def _to_close(self, max_body: int) -> bytes:
        while len(self._buffer) <= max_body:
            data = self.sock.recv(_RECV)
            if not data:
                break
            self._buffer += data
        if len(self._buffer) > max_body:
            raise TooLarge
        body = bytes(self._buffer)
        self._buffer.clear()
        return body


def _tokens(value: str) -> list[str]:
    return [token.strip(" \t").lower() for token in value.split(",") if token.strip(" \t")]
