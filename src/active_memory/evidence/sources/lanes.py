"""What every session source shares while converting: lanes, receipts and the cuts it made.

A *lane* is one conversation (the main one, or a subagent's) becoming one execution with its
own normalised transcript. Transcript files are written through a small pool of open handles
(the least recently used is closed and later reopened for appending), so a session with a
thousand subagents never holds a thousand files open. Receipts are a ring (the first and the
latest half kept) with the true count beside it, and every record a source could not convert
whole is counted in :class:`SourceCuts`, which the evidence builder turns into truncation
entries: nothing leaves a session without a recorded cut.
"""

from __future__ import annotations

import json
import os
from collections import Counter, OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from active_memory.evidence.budget import cut_text
from active_memory.models.runs import ExecutionStatus, ToolReceipt

__all__ = [
    "RECEIPT_RING",
    "RECORD_TEXT_BYTES",
    "REJECTED_REASON",
    "BoundedMap",
    "Lane",
    "ReceiptRing",
    "SessionWriter",
    "SourceCuts",
    "relative_path",
]

# Half the evidence builder's 64 KiB line limit: a record written here, with its role, tool and
# time around the text, is never cut again by the builder's pager, so it keeps its role, tool,
# head and tail (the middle cut with a marker).
RECORD_TEXT_BYTES = 32 * 1024
RECEIPT_RING = 512
TOOL_NAME_CHARS = 128
# The cut a source records for each tool call the user rejected (it did nothing: no receipt).
REJECTED_REASON = "tool call the user rejected: kept in the transcript as rejected, not a receipt"
_OPEN_FILES = 32


def _file_name(lane_id: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in lane_id)
    return f"{safe[:96]}.jsonl"


@dataclass(slots=True)
class Lane:
    """One conversation being converted into one execution."""

    id: str
    conversation: str
    file: str
    order: int
    started: int | None = None
    ended: int | None = None
    models: Counter[str] = field(default_factory=Counter)
    completion: str | None = None
    interrupted: bool = False  # the latest user turn stopped the agent
    failed: bool = False  # the latest model answer was an API error
    records: int = 0
    last_message: str | None = None  # a model answer split over several lines counts once
    unavailable: str | None = None
    warmup: bool = False

    @property
    def status(self) -> ExecutionStatus:
        if self.interrupted:
            return "cancelled"
        return "error" if self.failed else "completed"

    def saw(self, when: int | None) -> None:
        if when is not None:
            self.started = when if self.started is None else min(self.started, when)
            self.ended = when if self.ended is None else max(self.ended, when)

    def used(self, model: Any) -> None:
        # Placeholders such as Claude Code's "<synthetic>" name no model.
        if isinstance(model, str) and model and not model.startswith("<"):
            self.models[model[:128]] += 1

    def finish(self, text: str) -> None:
        self.completion = cut_text(text, RECORD_TEXT_BYTES)[0]


class BoundedMap(OrderedDict[str, str]):
    """A dict that forgets its oldest keys past ``limit``: tool ids and chain links stay
    bounded however many records a session holds."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def remember(self, key: str, value: str) -> None:
        self[key] = value
        self.move_to_end(key)
        if len(self) > self.limit:
            self.popitem(last=False)


class SourceCuts:
    """Records a source shortened or could not read, by (section, reason)."""

    def __init__(self) -> None:
        self._cuts: dict[tuple[str, str], list[int]] = {}

    def add(self, section: str, reason: str, *, count: int = 1, size: int = 0) -> None:
        entry = self._cuts.setdefault((section, reason), [0, 0])
        entry[0] += count
        entry[1] += size

    def count(self, section: str) -> int:
        return sum(entry[0] for (name, _), entry in self._cuts.items() if name == section)

    def as_runtime(self) -> list[dict[str, Any]]:
        return [
            {"section": section, "reason": reason, "count": count, "bytes": size}
            for (section, reason), (count, size) in sorted(self._cuts.items())
        ]


class ReceiptRing:
    """The first and the latest ``RECEIPT_RING // 2`` receipts, and how many there were.

    A call the user rejected is withdrawn: it did nothing, so it is no receipt, and ``made``
    (the true count of receipts) leaves it out while seqs stay as they were issued.
    """

    def __init__(self) -> None:
        self.first: list[ToolReceipt] = []
        self.last: deque[ToolReceipt] = deque(maxlen=RECEIPT_RING // 2)
        self.total = 0
        self.withdrawn = 0

    def add(self, execution: str, when: int | None, tool: str, paths: list[str]) -> int:
        """Record one tool call; returns its ``seq``, the number ``receipt:<seq>`` cites."""
        receipt = ToolReceipt(
            seq=self.total,
            execution=execution,
            time_ms=when or 0,
            tool=tool[:TOOL_NAME_CHARS] or "tool",
            paths=tuple(dict.fromkeys(path for path in paths if path))[:16],
        )
        # By seq, not by room: a withdrawn early receipt never lets a later one into the first.
        if self.total < RECEIPT_RING // 2:
            self.first.append(receipt)
        else:
            self.last.append(receipt)
        self.total += 1
        return receipt.seq

    def withdraw(self, seq: int) -> None:
        """The call ``seq`` was rejected by the user: it is no receipt."""
        if not 0 <= seq < self.total:
            return
        self.withdrawn += 1
        for kept in (self.first, self.last):
            found = next((receipt for receipt in kept if receipt.seq == seq), None)
            if found is not None:
                kept.remove(found)
                return

    def kept(self) -> tuple[ToolReceipt, ...]:
        return (*self.first, *self.last)

    @property
    def made(self) -> int:
        """Tool calls that are receipts: every call but the rejected ones."""
        return self.total - self.withdrawn

    @property
    def dropped(self) -> int:
        return self.made - len(self.first) - len(self.last)


class SessionWriter:
    """Lanes and their normalised transcripts under ``workdir/transcripts``."""

    def __init__(self, workdir: Path) -> None:
        self.folder = workdir / "transcripts"
        self.lanes: dict[str, Lane] = {}
        self._open: OrderedDict[str, IO[str]] = OrderedDict()

    def lane(self, lane_id: str, conversation: str) -> Lane:
        lane = self.lanes.get(lane_id)
        if lane is None:
            lane = Lane(lane_id, conversation, _file_name(lane_id), len(self.lanes))
            self.lanes[lane_id] = lane
        return lane

    def path(self, lane: Lane) -> Path:
        return self.folder / lane.file

    def _handle(self, lane: Lane) -> IO[str]:
        handle = self._open.get(lane.id)
        if handle is not None:
            self._open.move_to_end(lane.id)
            return handle
        if len(self._open) >= _OPEN_FILES:
            self._open.popitem(last=False)[1].close()
        # A converted transcript is a session's text: private from the first byte (0700/0600).
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if lane.records else os.O_TRUNC)
        descriptor = os.open(self.path(lane), flags | getattr(os, "O_CLOEXEC", 0), 0o600)
        # errors="replace": a surrogate that slipped past the parser never stops the conversion.
        handle = os.fdopen(descriptor, "a" if lane.records else "w", encoding="utf-8",
                           errors="replace")  # fmt: skip
        self._open[lane.id] = handle
        return handle

    def write(
        self,
        lane: Lane,
        role: str,
        text: str,
        when: int | None,
        tool: str | None = None,
        *,
        receipt: int | None = None,
    ) -> None:
        """One transcript record; ``receipt`` is the seq of the tool call it records, so the
        evidence can label the call with the ``receipt:<seq>`` a specialist cites."""
        if lane.warmup:
            return
        # Role, tool, receipt and time before the text: a line cut short still says whose it was.
        record: dict[str, Any] = {"role": role}
        if tool:
            record["tool"] = tool[:TOOL_NAME_CHARS]
        if receipt is not None:
            record["receipt"] = receipt
        if when is not None:
            record["time_ms"] = when
        record["text"] = cut_text(text, RECORD_TEXT_BYTES)[0]
        self._handle(lane).write(json.dumps(record, ensure_ascii=False) + "\n")
        lane.records += 1

    def close_lane(self, lane: Lane) -> None:
        handle = self._open.pop(lane.id, None)
        if handle is not None:
            handle.close()

    def close(self) -> None:
        while self._open:
            self._open.popitem()[1].close()


def relative_path(path: str, cwd: str | None) -> str:
    """``path`` relative to the session's working directory when it lies inside it."""
    path = path.strip()[:4096]
    if cwd and os.path.isabs(path):
        relative = os.path.relpath(os.path.normpath(path), cwd)
        if not relative.startswith(".."):
            return relative.replace(os.sep, "/")
    return os.path.normpath(path) if path else path
