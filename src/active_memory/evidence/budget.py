"""Byte budgets: explicit string cuts, and the fixed transcript budget that reclaims fairly.

Sizes are UTF-8 bytes of the canonical JSON encoding (sorted keys, no spaces), the encoding the
serialized evidence uses. A cut string keeps its head and its tail around an explicit marker,
``…[cut 1234 bytes]…``, so both a task's opening and its final answer survive.

Redaction happens before any cut, and on a little more text than is kept (``MARGIN`` characters
around each cut point), so a cut never leaves half a credential that the patterns can no longer
recognise.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from active_memory.evidence.redact import redact_text
from active_memory.models.runs import canonical_json

__all__ = [
    "MARGIN",
    "TranscriptBudget",
    "cut_marker",
    "cut_text",
    "json_size",
    "redact_and_cut",
    "utf8_len",
]

# Longer than any single-line credential the patterns know; PEM blocks match to the text's edge.
MARGIN = 1024


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def json_size(value: Any) -> int:
    return utf8_len(canonical_json(value))


def cut_marker(cut_bytes: int) -> str:
    return f"…[cut {cut_bytes} bytes]…"


def _head(data: bytes, size: int) -> str:
    return data[:size].decode("utf-8", "ignore")


def _tail(data: bytes, size: int) -> str:
    return data[len(data) - size :].decode("utf-8", "ignore") if size > 0 else ""


def _join(head: bytes, tail: bytes, max_bytes: int, original: int) -> tuple[str, int]:
    """Head and tail around a marker, at most ``max_bytes`` (counted in JSON-escaped form)."""
    marker_room = utf8_len(cut_marker(original))
    room = max_bytes - marker_room
    if room < 8:
        marker = "…[cut]…"
        return (marker, original) if utf8_len(marker) <= max_bytes else ("", original)
    head_text = _head(head, room * 2 // 3)
    tail_text = _tail(tail, room - room * 2 // 3)
    # JSON escapes (quotes, backslashes, control characters) can make text grow when encoded.
    while json_size(head_text + tail_text) - 2 > room and (head_text or tail_text):
        head_text = head_text[: len(head_text) * 3 // 4]
        tail_text = tail_text[len(tail_text) // 4 :]
    kept = utf8_len(head_text) + utf8_len(tail_text)
    return head_text + cut_marker(original - kept) + tail_text, original - kept


def cut_text(text: str, max_bytes: int) -> tuple[str, int]:
    """``text`` within ``max_bytes`` encoded bytes, and how many bytes were cut (0: unchanged)."""
    # No character encodes to more than six bytes (a \uXXXX escape): short texts need no count.
    if len(text) * 6 <= max_bytes or json_size(text) - 2 <= max_bytes:
        return text, 0
    data = text.encode("utf-8")
    return _join(data, data, max_bytes, len(data))


def redact_and_cut(text: str, max_bytes: int) -> tuple[str, int]:
    """Redact secrets, then cut to ``max_bytes``; only the kept ends (plus margins) are scanned."""
    if len(text) <= 2 * (max_bytes + MARGIN):
        return cut_text(redact_text(text), max_bytes)
    original = utf8_len(text)
    head = redact_text(text[: max_bytes + MARGIN]).encode("utf-8")
    tail = redact_text(text[-(max_bytes + MARGIN) :]).encode("utf-8")
    return _join(head, tail, max_bytes, original)


@dataclass(slots=True)
class _Record:
    number: int
    role: str | None
    tool: str | None
    head: str
    tail: str | None
    original_bytes: int
    cut_by_pager: bool

    record_bytes: int = 0
    receipt: str | None = None  # the receipt:<seq> this tool call is, when it is one

    @property
    def weight(self) -> int:
        # About what the record will weigh once cut to record_bytes, so the transcript budget
        # matches the evidence it yields; memory per record stays under 2 * (record + margin).
        label = len(self.receipt) + 12 if self.receipt else 0
        return (
            min(len(self.head) + (len(self.tail) if self.tail else 0), self.record_bytes)
            + 48
            + label
        )


@dataclass(slots=True)
class _Lane:
    pinned: _Record | None = None  # the task: the first record that is not a system prompt
    pinned_once: bool = False
    body: deque[_Record] = field(default_factory=deque)
    weight: int = 0
    seen: int = 0
    seen_bytes: int = 0
    dropped: int = 0
    pager_cuts: int = 0

    def kept(self) -> list[_Record]:
        records = [*self.body, self.pinned] if self.pinned else list(self.body)
        return sorted(records, key=lambda record: record.number)


class TranscriptBudget:
    """Per-execution excerpts under one fixed byte budget.

    Every execution keeps its first record that is not a system prompt (the task it was given)
    and a window of its latest records. When the total passes the budget, the oldest kept record
    of the execution holding the most is reclaimed; an execution's task goes only once every
    execution is down to its task. A verbose execution therefore pays for itself instead of
    pushing out everyone else's evidence.
    """

    def __init__(self, budget_bytes: int, record_bytes: int) -> None:
        self.budget = budget_bytes
        self.record_bytes = record_bytes
        self.lanes: dict[int, _Lane] = {}
        self.total = 0
        self._heap: list[tuple[int, int, int]] = []

    def add(
        self,
        lane_id: int,
        *,
        number: int,
        role: str | None,
        tool: str | None,
        text: str,
        original_bytes: int,
        cut_by_pager: bool,
        receipt: str | None = None,
    ) -> None:
        lane = self.lanes.setdefault(lane_id, _Lane())
        keep = self.record_bytes + MARGIN
        if len(text) <= 2 * keep and not cut_by_pager:
            record = _Record(number, role, tool, text, None, original_bytes, cut_by_pager,
                             self.record_bytes, receipt)  # fmt: skip
        else:
            # The text's full size for the cut marker: a pager-cut line only knows its line size.
            size = original_bytes if cut_by_pager else utf8_len(text)
            tail = text[-keep:] if len(text) > keep else ""
            record = _Record(number, role, tool, text[:keep], tail, size, cut_by_pager,
                             self.record_bytes, receipt)  # fmt: skip
        if not lane.pinned_once and role != "system":
            lane.pinned, lane.pinned_once = record, True
        else:
            lane.body.append(record)
        lane.seen += 1
        lane.seen_bytes += original_bytes
        lane.pager_cuts += cut_by_pager
        self._grow(lane_id, lane, record.weight)
        while self.total > self.budget and self._reclaim():
            pass

    def _grow(self, lane_id: int, lane: _Lane, delta: int) -> None:
        lane.weight += delta
        self.total += delta
        heapq.heappush(self._heap, (0 if lane.body else 1, -lane.weight, lane_id))
        if len(self._heap) > 4 * len(self.lanes) + 64:
            self._heap = [(0 if item.body else 1, -item.weight, key)
                          for key, item in self.lanes.items() if item.weight]  # fmt: skip
            heapq.heapify(self._heap)

    def _reclaim(self) -> bool:
        # Lanes that still hold more than their task come first: an execution's last record
        # goes only once every execution is down to one.
        while self._heap:
            rank, weight, lane_id = heapq.heappop(self._heap)
            lane = self.lanes[lane_id]
            if (rank, -weight) != (0 if lane.body else 1, lane.weight) or lane.weight == 0:
                continue
            if lane.body:
                record = lane.body.popleft()
            elif lane.pinned is not None:
                record, lane.pinned = lane.pinned, None
            else:
                continue
            lane.dropped += 1
            self._grow(lane_id, lane, -record.weight)
            return True
        return False

    def excerpt(self, lane_id: int) -> tuple[list[dict[str, Any]], int]:
        """The kept records as evidence entries (redacted, cut) and how many were cut."""
        lane = self.lanes.get(lane_id)
        if lane is None:
            return [], 0
        entries: list[dict[str, Any]] = []
        cuts = 0
        for record in lane.kept():
            if record.tail is None:
                text, cut = redact_and_cut(record.head, self.record_bytes)
            else:
                head = redact_text(record.head).encode("utf-8")
                tail = redact_text(record.tail).encode("utf-8")
                text, cut = _join(head, tail, self.record_bytes, record.original_bytes)
            cuts += bool(cut) or record.cut_by_pager
            entry: dict[str, Any] = {"n": record.number, "text": text}
            if record.role:
                entry["role"] = record.role
            if record.tool:
                entry["tool"] = record.tool
            if record.receipt:
                entry["receipt"] = record.receipt
            entries.append(entry)
        return entries, cuts

    def stats(self, lane_id: int) -> _Lane | None:
        return self.lanes.get(lane_id)
