"""A quick look at one session file: its first and last 256 KiB, never the whole of it.

Enough for the inventory: the session id, working directory, first and last timestamps, the
models named in those stretches, and whether it holds any conversation at all.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from active_memory.evidence.sources.lines import iter_lines, parse_line
from active_memory.evidence.sources.timestamps import stamp_ms
from active_memory.harnesses import harness_row

__all__ = ["Scan", "scan_session"]

SPAN = 256 * 1024
_CWD = re.compile(r"<cwd>([^<\n]{1,4096})</cwd>")


@dataclass(slots=True)
class Scan:
    session_id: str | None = None
    cwd: str | None = None
    started: int | None = None
    ended: int | None = None
    models: set[str] = field(default_factory=set)
    conversation: bool = False
    problem: str | None = None

    def saw(self, when: int | None) -> None:
        if when is not None:
            self.started = when if self.started is None else min(self.started, when)
            self.ended = when if self.ended is None else max(self.ended, when)


def _text(value: Any) -> str | None:
    return value[:4096] if isinstance(value, str) and value else None


def _get(value: Any, *keys: str) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _environment_cwd(item: Any) -> str | None:
    """The legacy Codex form names its cwd only inside the environment-context message."""
    if not isinstance(item, dict) or item.get("role") != "user":
        return None
    for block in item.get("content") or ():
        text = block.get("text") if isinstance(block, dict) else None
        found = _CWD.search(text) if isinstance(text, str) else None
        if found:
            return found.group(1).strip()
    return None


def _look(harness: str, value: dict[str, Any], scan: Scan) -> None:
    kind = value.get("type")
    # A Claude Code file of sidechain lines only has no main conversation to review.
    main = not (harness == "claude" and value.get("isSidechain"))
    records = harness_row(harness).conversation_records
    scan.conversation = scan.conversation or (main and kind in records)
    if harness == "claude":
        scan.saw(stamp_ms(value.get("timestamp")))
        if not value.get("isSidechain"):
            scan.session_id = scan.session_id or _text(value.get("sessionId"))
            scan.cwd = scan.cwd or _text(value.get("cwd"))
        model = _get(value, "message", "model") if kind == "assistant" else None
    elif harness == "codex":
        payload = value.get("payload") if isinstance(value.get("payload"), dict) else value
        scan.saw(stamp_ms(value.get("timestamp")))
        if kind == "session_meta" or "instructions" in value or "git" in value:
            scan.session_id = scan.session_id or _text(_get(payload, "id"))
        scan.cwd = scan.cwd or _text(_get(payload, "cwd")) or _environment_cwd(payload)
        model = _get(payload, "model") if kind == "turn_context" else None
    elif harness == "pi":
        scan.saw(stamp_ms(value.get("timestamp")))
        if kind == "session":
            scan.session_id = scan.session_id or _text(value.get("id"))
            scan.cwd = scan.cwd or _text(value.get("cwd"))
        model = value.get("modelId") or _get(value, "message", "model")
    else:
        data = value.get("data")
        scan.saw(stamp_ms(value.get("timestamp")))
        if kind == "session.start":
            scan.session_id = scan.session_id or _text(_get(data, "sessionId"))
            scan.cwd = scan.cwd or _text(_get(data, "context", "cwd"))
        model = _get(data, "newModel") or _get(data, "model") or _get(data, "selectedModel")
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
    for value in _head(path):
        _look(harness, value, scan)
    for value in _tail(path, size):
        _look(harness, value, scan)
    if not scan.conversation:
        scan.problem = "no conversation in its first and last 256 KiB"
    return scan
