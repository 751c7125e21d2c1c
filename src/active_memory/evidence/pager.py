"""History (transcript JSONL) read in bounded pages.

A page holds at most ``max_records`` lines and stops once it has kept ``max_bytes``. A line
longer than ``max_line_bytes`` keeps only its first ``max_line_bytes`` bytes (``cut=True``,
``size`` says how long it was): the rest is skipped in fixed chunks, so no line is ever held in
memory whole. Memory per page is therefore bounded by ``max_bytes + max_line_bytes`` whatever
the file's size.

Cancellation is checked between pages, never inside one: :func:`iter_pages` raises
:class:`~active_memory.errors.EvidenceCancelled` before reading the next page once the token is
set. Any object with ``is_set() -> bool`` is a token (``threading.Event``, ``asyncio.Event``,
:class:`active_memory.cancel.CancelToken`).
"""

from __future__ import annotations

import codecs
import errno
import os
from collections.abc import Iterator
from dataclasses import dataclass
from io import BufferedReader
from typing import Protocol

from active_memory.bounded_input import open_regular
from active_memory.cancel import CancelToken
from active_memory.errors import EvidenceCancelled, EvidenceError

__all__ = [
    "CancelToken",
    "Cancellation",
    "Page",
    "PageLimits",
    "TranscriptLine",
    "iter_pages",
    "read_page",
]

_SKIP_CHUNK = 1 << 16


class Cancellation(Protocol):
    def is_set(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class PageLimits:
    max_records: int = 256
    max_bytes: int = 256 * 1024
    max_line_bytes: int = 64 * 1024

    def __post_init__(self) -> None:
        for name in ("max_records", "max_bytes", "max_line_bytes"):
            if getattr(self, name) < 1:
                raise EvidenceError(f"page limit {name}={getattr(self, name)!r} must be >= 1")


@dataclass(frozen=True, slots=True)
class TranscriptLine:
    """One non-blank line: its 1-based number, its text (a prefix when ``cut``), its byte size."""

    number: int
    text: str
    size: int
    cut: bool = False


@dataclass(frozen=True, slots=True)
class Page:
    lines: tuple[TranscriptLine, ...]
    next_offset: int
    next_line: int
    done: bool


def _decode(raw: bytes, *, complete: bool) -> str:
    if complete:
        return raw.decode("utf-8", "replace")
    # A cut may split a UTF-8 sequence: drop the incomplete tail instead of inventing a char.
    return codecs.getincrementaldecoder("utf-8")("replace").decode(raw, final=False)


def _read_line(stream: BufferedReader, limit: int) -> tuple[bytes, int, bool] | None:
    """``(kept bytes, original size without newline, cut)`` or None at end of file."""
    raw = stream.readline(limit + 1)
    if not raw:
        return None
    if raw.endswith(b"\n"):
        body = raw[:-1]
        return body, len(body), False
    if len(raw) <= limit:
        return raw, len(raw), False
    size = len(raw)
    while True:
        chunk = stream.readline(_SKIP_CHUNK)
        if not chunk:
            break
        if chunk.endswith(b"\n"):
            size += len(chunk) - 1
            break
        size += len(chunk)
    return raw[:limit], size, True


def _page(stream: BufferedReader, line_number: int, limits: PageLimits) -> Page:
    lines: list[TranscriptLine] = []
    kept = 0
    while len(lines) < limits.max_records and kept < limits.max_bytes:
        item = _read_line(stream, limits.max_line_bytes)
        if item is None:
            return Page(tuple(lines), stream.tell(), line_number, done=True)
        body, size, cut = item
        number = line_number
        line_number += 1
        body = body.rstrip(b"\r") if not cut else body
        if not body.strip():
            continue
        lines.append(TranscriptLine(number, _decode(body, complete=not cut), size, cut))
        kept += len(body)
    offset = stream.tell()
    done = not stream.peek(1)
    return Page(tuple(lines), offset, line_number, done=done)


def _open(path: str | os.PathLike[str]) -> BufferedReader:
    """The transcript, opened only when it is a regular file (a FIFO would block ``open`` and a
    device never end); InputRefused otherwise, FileNotFoundError when nothing is there."""
    if not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, "no such file", os.fspath(path))
    stream = os.fdopen(open_regular(path, what=repr(os.fspath(path))), "rb")
    assert isinstance(stream, BufferedReader)
    return stream


def read_page(
    path: str | os.PathLike[str],
    offset: int = 0,
    line_number: int = 1,
    limits: PageLimits | None = None,
) -> Page:
    """One page starting at byte ``offset`` (which is line ``line_number``)."""
    with _open(path) as stream:
        stream.seek(offset)
        return _page(stream, line_number, limits or PageLimits())


def iter_pages(
    path: str | os.PathLike[str],
    limits: PageLimits | None = None,
    cancel: Cancellation | None = None,
) -> Iterator[Page]:
    """Every page of ``path`` in order; raises EvidenceCancelled between pages once cancelled."""
    limits = limits or PageLimits()
    line_number = 1
    with _open(path) as stream:
        while True:
            if cancel is not None and cancel.is_set():
                raise EvidenceCancelled(str(path))
            page = _page(stream, line_number, limits)
            line_number = page.next_line
            yield page
            if page.done:
                return
