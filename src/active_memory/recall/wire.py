"""The broker's two wire protocols, read from and written to asyncio streams.

Helper frames are a 4-byte big-endian length then JSON. HTTP is the small subset hooks use:
a request line, headers, a ``Content-Length`` body (no chunked encoding), keep-alive.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from active_memory.recall.exchange import MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES

__all__ = [
    "HTTP_STARTS",
    "MAX_HEADER_BYTES",
    "MAX_REQUEST_BYTES",
    "MAX_RESPONSE_BYTES",
    "HttpRequest",
    "WireError",
    "frame",
    "http_response",
    "is_ack",
    "read_frame",
    "read_http",
    "text_field",
]

MAX_HEADER_BYTES = 16 * 1024
HTTP_STARTS = (b"POST", b"GET ", b"PUT ", b"HEAD", b"DELE", b"OPTI", b"PATC")


class WireError(Exception):
    """A request the broker refuses; ``status`` is the HTTP status to answer with, if any."""

    def __init__(self, status: str) -> None:
        self.status = status
        super().__init__(status)


@dataclass(frozen=True, slots=True)
class HttpRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    keep_alive: bool


def frame(body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + body


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
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("ack") is True


async def read_http(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, start: bytes = b""
) -> HttpRequest:
    """One HTTP request; ``start`` holds bytes already read from its first line."""
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
    if length and headers.get("expect", "").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        await writer.drain()
    body = await reader.readexactly(length) if length else b""
    keep_alive = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
    return HttpRequest(method, target.split("?", 1)[0], headers, body, keep_alive)


def http_response(status: str, body: bytes, *, keep_alive: bool) -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: {'keep-alive' if keep_alive else 'close'}"
        "\r\n\r\n"
    )
    return head.encode("ascii") + body


def text_field(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
