"""Bounded file reading for the investigation tools: lines, windows, git internals, key blocks.

Files are read as bytes in chunks of at most 64 KiB, so a huge single-line file costs no more
memory than a long file with short lines. Lines end at ``\\n`` only (a trailing ``\\r`` is
dropped), so ``read_file`` and ``search_text`` number lines the same way.
"""

from __future__ import annotations

import codecs
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from active_memory.bounded_input import open_regular
from active_memory.errors import InputRefused
from active_memory.evidence.redact import redact_text

__all__ = [
    "CHUNK_BYTES",
    "KEY_REDACTED",
    "MAX_SCAN_BYTES",
    "KeyBlocks",
    "Line",
    "LineReader",
    "Refused",
    "bounded",
    "decode",
    "is_binary",
    "is_git_internal",
    "open_file",
    "read_window",
]

CHUNK_BYTES = 64 * 1024
MAX_SCAN_BYTES = 64 * 1024 * 1024
KEY_REDACTED = "[redacted:private-key]"
_BINARY_PROBE = 8192
# Enough of a line to see a PEM marker, for lines that are skipped or only tracked.
_PROBE_BYTES = 256
# A cut line is redacted with this much beyond the cut, so a credential the cut would split is
# still whole, and recognised, when redaction runs.
_REDACT_MARGIN = 4096
_KEY_BEGIN = re.compile(rb"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY")
_KEY_END = re.compile(rb"-----END (?:[A-Z0-9]+ )*PRIVATE KEY")


class Refused(Exception):
    """A call the model must correct; its message becomes the error result."""


def open_file(path: Path) -> BinaryIO:
    """``path`` opened for reading only when it is a regular file: a FIFO planted in a checkout
    would block ``open`` until a writer came, a device could be read for ever."""
    try:
        descriptor = open_regular(path, what=repr(path.name))
    except InputRefused as refused:
        raise Refused(str(refused)) from None
    return os.fdopen(descriptor, "rb")


def is_binary(path: Path) -> bool:
    with open_file(path) as handle:
        return b"\0" in handle.read(_BINARY_PROBE)


def is_git_internal(parts: Iterable[str]) -> bool:
    """Whether a relative path goes through ``.git`` (any case: some file systems ignore it)."""
    return any(part.casefold() == ".git" for part in parts)


def bounded(text: str, limit: int, hint: str) -> str:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    cut = data[:limit].decode("utf-8", errors="ignore")
    return f"{cut}\n[truncated at {limit} bytes; {hint}]"


def decode(data: bytes, *, cut: bool) -> str:
    """UTF-8 text; a line cut mid-character loses the partial character, not a mangled one."""
    if not cut:
        return data.decode("utf-8", errors="replace")
    return codecs.getincrementaldecoder("utf-8")("replace").decode(data, final=False)


@dataclass(frozen=True, slots=True)
class Line:
    """One line: its first bytes (no newline) and its whole length in bytes."""

    data: bytes
    size: int

    @property
    def cut(self) -> bool:
        return self.size > len(self.data)


class LineReader:
    """Lines from a binary file, keeping at most ``keep`` bytes of each; counts bytes scanned."""

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle
        self.scanned = 0

    def next(self, keep: int) -> Line | None:
        piece = self._handle.readline(CHUNK_BYTES)
        if not piece:
            return None
        kept = piece[:keep]
        size = len(piece)
        # The rest of an over-long line is read chunk by chunk and dropped.
        while not piece.endswith(b"\n"):
            piece = self._handle.readline(CHUNK_BYTES)
            if not piece:
                break
            if len(kept) < keep:
                kept += piece[: keep - len(kept)]
            size += len(piece)
        self.scanned += size
        if piece.endswith(b"\n"):
            size -= 1
            kept = kept[:size]
            if len(kept) == size and kept.endswith(b"\r"):
                kept, size = kept[:-1], size - 1
        return Line(kept, size)

    def at_end(self) -> bool:
        position = self._handle.tell()
        more = self._handle.read(1)
        self._handle.seek(position)
        return not more


class KeyBlocks:
    """Tracks PEM private-key blocks line by line.

    ``redact_text`` recognises a key by its BEGIN or END marker; a read window or a search match
    taken from the middle of a key has neither, so such lines are hidden here.
    """

    def __init__(self) -> None:
        self.inside = False

    def feed(self, data: bytes) -> bool:
        """Whether this line is part of a key block (its markers included)."""
        if not self.inside and _KEY_BEGIN.search(data):
            self.inside = not _KEY_END.search(data)
            return True
        if self.inside:
            if _KEY_END.search(data):
                self.inside = False
            return True
        return False


def read_window(
    path: Path,
    shown: str,
    *,
    offset: int,
    limit: int,
    max_bytes: int,
    deadline: float | None,
) -> str:
    """Lines ``offset`` onwards, at most ``limit`` of them and about ``max_bytes`` of text.

    The window stops before a line that does not fit; a first line longer than ``max_bytes``
    alone is cut with a marker. Skipping to ``offset`` reads at most 64 MiB.
    """
    keys = KeyBlocks()
    with open_file(path) as handle:
        reader = LineReader(handle)
        for number in range(1, offset):
            skipped = reader.next(_PROBE_BYTES)
            if skipped is None:
                return f"{shown}: no lines from line {offset} (the file has {number - 1} lines)"
            keys.feed(skipped.data)
            _check_scan(reader, deadline, f"reaching line {offset}")
        texts: list[str] = []
        count = used = 0
        more = in_key = False
        while count < limit:
            keep = max_bytes + _REDACT_MARGIN if not count else max(max_bytes - used, _PROBE_BYTES)
            line = reader.next(keep)
            if line is None:
                break
            secret = keys.feed(line.data)
            cost = (0 if in_key else len(KEY_REDACTED) + 1) if secret else line.size + 1
            if count and used + cost > max_bytes:
                more = True
                break
            count += 1
            if secret and not in_key:
                texts.append(KEY_REDACTED + "\n")
            elif not secret:
                texts.append(_line_text(line, offset + count - 1, max_bytes))
            in_key = secret
            used += min(cost, max_bytes + 1)
            _check_scan(reader, deadline, f"reading from line {offset}")
        more = more or (count > 0 and not reader.at_end())
    if not count:
        return f"{shown}: no lines from line {offset} (the file has {offset - 1} lines)"
    end = offset + count - 1
    tail = f"; more follows, continue with offset={end + 1}" if more else "; end of file"
    return f"{shown} lines {offset}-{end}{tail}\n" + "".join(texts)


def _line_text(line: Line, number: int, max_bytes: int) -> str:
    if line.size <= max_bytes:
        return decode(line.data, cut=False) + "\n"
    redacted = redact_text(decode(line.data, cut=True)).encode("utf-8")
    shown = decode(redacted[:max_bytes], cut=True)
    return f"{shown} [line {number} cut: {max_bytes} of {line.size} bytes shown]\n"


def _check_scan(reader: LineReader, deadline: float | None, doing: str) -> None:
    if reader.scanned > MAX_SCAN_BYTES:
        raise Refused(
            f"stopped {doing}: read {MAX_SCAN_BYTES // (1024 * 1024)} MiB of the file "
            "without getting there; search for the text instead"
        )
    if deadline is not None and time.monotonic() >= deadline:
        raise Refused(f"stopped {doing}: the session deadline passed")
