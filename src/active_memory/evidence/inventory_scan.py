"""A quick look at one session file: its first and last 256 KiB, never the whole of it.

Enough for the inventory: the session id, working directory, first and last timestamps, the
models named in those stretches, and whether it holds any conversation at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

from active_memory.evidence.sources import session_peek
from active_memory.evidence.sources.lines import iter_lines, parse_line
from active_memory.evidence.sources.peek import Peek, Scan
from active_memory.evidence.sources.timestamps import stamp_ms
from active_memory.harnesses import harness_row
from active_memory.lanes import SPECIALIST_SESSION_MARKER

__all__ = ["SPECIALIST_SESSION_REASON", "Scan", "scan_session"]

SPAN = 256 * 1024
SPECIALIST_SESSION_REASON = "it is a postmortem specialist's own session, run on a harness lane"
# The marker opens the specialist's first message: it starts a JSON string in the file.
_MARKER = b'"' + SPECIALIST_SESSION_MARKER.encode("utf-8")


def _look(peek: Peek, records: tuple[str, ...], value: dict[str, Any], scan: Scan) -> None:
    scan.saw(stamp_ms(value.get("timestamp")))
    model, main = peek(value, scan)
    # A file of side-conversation lines only has no main conversation to review.
    scan.conversation = scan.conversation or (main and value.get("type") in records)
    if isinstance(model, str) and model and not model.startswith("<") and len(scan.models) < 32:
        scan.models.add(model[:128])


def _head(path: Path) -> Iterator[dict[str, Any]]:
    read = 0
    with closing(iter_lines(path, limit=SPAN)) as lines:
        for line in lines:
            read += line.size + 1
            if line.value is not None:
                yield line.value
            if read >= SPAN:
                return


def _tail(path: Path, size: int) -> Iterable[dict[str, Any]]:
    if size <= SPAN:
        return ()  # the head saw all of it
    with path.open("rb") as stream:
        stream.seek(size - SPAN)
        data = stream.read(SPAN)
    # The first line is most likely cut by the seek: skip it.
    lines = data.split(b"\n")[1:]
    values = (parse_line(line.decode("utf-8", "replace"))[0] for line in lines if line.strip())
    return [value for value in values if value is not None]


def scan_session(harness: str, path: Path) -> Scan:
    """What the first and last 256 KiB of ``path`` say, read as a ``harness`` session."""
    scan = Scan()
    size = path.stat().st_size
    peek, records = session_peek(harness), harness_row(harness).conversation_records
    for value in _head(path):
        _look(peek, records, value, scan)
    for value in _tail(path, size):
        _look(peek, records, value, scan)
    if not scan.conversation:
        scan.problem = "no conversation in its first and last 256 KiB"
    elif _specialist(path):
        # A harness lane's own session (agents/harness_lanes): reviewing it would learn from a
        # postmortem, not from work.
        scan.problem = SPECIALIST_SESSION_REASON
    return scan


def _specialist(path: Path) -> bool:
    with path.open("rb") as stream:
        return _MARKER in stream.read(SPAN)
