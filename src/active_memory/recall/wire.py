"""The broker's two wire protocols, read from and written to asyncio streams.

Helper frames are a 4-byte big-endian length then a 32-byte HMAC-SHA256 tag and the JSON it
authenticates, keyed by the run's token: the helper never sends the token itself, and the broker
signs its answer with the helper's fresh nonce, so a listener that is not the broker (one that
bound the port after the broker exited) neither learns the token nor gets an answer relayed.
HTTP is the small subset hooks use: a request line, headers, a ``Content-Length`` body (no
chunked encoding), keep-alive. The head is read and the token checked before any body is read.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from active_memory.recall.exchange import (
    MAX_ID_CHARS,
    MAX_REQUEST_BYTES,
    MAX_RESPONSE_BYTES,
    id_field,
)

__all__ = [
    "ANSWER_CONTEXT",
    "HTTP_STARTS",
    "MAC_BYTES",
    "MAX_FRAME_BYTES",
    "MAX_HEADER_BYTES",
    "MAX_ID_CHARS",
    "MAX_REQUEST_BYTES",
    "MAX_RESPONSE_BYTES",
    "REQUEST_CONTEXT",
    "HttpHead",
    "HttpRequest",
    "WireError",
    "frame",
    "header_id",
    "http_response",
    "id_field",
    "is_ack",
    "mac",
    "opened_answer",
    "read_body",
    "read_frame",
    "read_head",
    "signed_request",
    "text_field",
]

MAX_HEADER_BYTES = 16 * 1024
HTTP_STARTS = (b"POST", b"GET ", b"PUT ", b"HEAD", b"DELE", b"OPTI", b"PATC")
MAC_BYTES = 32
# A request frame carries a payload of up to MAX_REQUEST_BYTES plus the tag and the envelope.
MAX_FRAME_BYTES = MAX_REQUEST_BYTES + MAC_BYTES + 4096
REQUEST_CONTEXT = b"active-memory request 2\n"
ANSWER_CONTEXT = b"active-memory answer 2\n"


class WireError(Exception):
    """A request the broker refuses; ``status`` is the HTTP status to answer with, if any."""

    def __init__(self, status: str) -> None:
        self.status = status
        super().__init__(status)


@dataclass(frozen=True, slots=True)
class HttpHead:
    method: str
    path: str
    headers: dict[str, str]
    length: int
    keep_alive: bool


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """A whole request: the head read (and authorised) first, then the body it announced."""

    head: HttpHead
    body: bytes


def frame(body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + body


def mac(key: bytes, context: bytes, *parts: bytes) -> bytes:
    """HMAC-SHA256 of ``context`` and ``parts`` under ``key`` (the token's UTF-8 bytes)."""
    return hmac.new(key, b"".join((context, *parts)), hashlib.sha256).digest()


def signed_request(token: str, message: Mapping[str, Any]) -> tuple[bytes, str]:
    """A whole helper request frame for ``message`` with a fresh nonce, and that nonce.

    For clients other than the command helper (tests, benchmarks, other hosts' tools).
    """
    nonce = secrets.token_hex(16)
    body = json.dumps({**message, "nonce": nonce}).encode("utf-8")
    return frame(mac(token.encode("utf-8"), REQUEST_CONTEXT, body) + body), nonce


def opened_answer(token: str, nonce: str, data: bytes) -> bytes | None:
    """The answer in an answer frame's body when the broker signed it for ``nonce``."""
    tag, answer = data[:MAC_BYTES], data[MAC_BYTES:]
    expected = mac(token.encode("utf-8"), ANSWER_CONTEXT, nonce.encode("ascii"), answer)
    return answer if hmac.compare_digest(tag, expected) else None


async def read_frame(reader: asyncio.StreamReader, length: int, limit: int) -> bytes:
    """The body of a frame whose length prefix was already read."""
    if not 0 < length <= limit:
        raise WireError("frame size")
    return await reader.readexactly(length)


def is_ack(data: bytes | None) -> bool:
    if not data:
        return False
    try:
        message = json.loads(data)
    except (ValueError, RecursionError):
        return False
    return isinstance(message, dict) and message.get("ack") is True


async def read_head(reader: asyncio.StreamReader, start: bytes = b"") -> HttpHead:
    """The request line and headers of one HTTP request; ``start`` holds bytes already read."""
    try:
        head = start + await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        raise WireError("431 Request Header Fields Too Large") from None
    if len(head) > MAX_HEADER_BYTES:
        raise WireError("431 Request Header Fields Too Large")
    lines = head[:-4].decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        raise WireError("400 Bad Request")
    method, target, version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raise WireError("411 Length Required")
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        raise WireError("400 Bad Request") from None
    if not 0 <= length <= MAX_REQUEST_BYTES:
        raise WireError("413 Content Too Large")
    keep_alive = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
    return HttpHead(method, target.split("?", 1)[0], headers, length, keep_alive)


async def read_body(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, head: HttpHead
) -> HttpRequest:
    """The rest of a request whose head was read (and whose caller was authorised)."""
    if head.length and head.headers.get("expect", "").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        await writer.drain()
    body = await reader.readexactly(head.length) if head.length else b""
    return HttpRequest(head, body)


def http_response(status: str, body: bytes, *, keep_alive: bool) -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: {'keep-alive' if keep_alive else 'close'}"
        "\r\n\r\n"
    )
    return head.encode("ascii") + body


def text_field(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def header_id(raw: str | None) -> str | None:
    """An id from a percent-encoded ``X-Active-Memory-*`` header, validated as ``id_field``."""
    if not raw or len(raw) > 3 * MAX_ID_CHARS:
        return None
    try:
        return id_field(unquote(raw, errors="strict"))
    except UnicodeDecodeError:
        return None
