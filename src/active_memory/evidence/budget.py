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
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from active_memory.evidence.redact import redact_text
from active_memory.evidence.salience import Salience
from active_memory.models.runs import canonical_json

__all__ = [
    "EXCERPT_BYTES",
    "MARGIN",
    "TranscriptBudget",
    "cut_marker",
    "cut_text",
    "json_size",
    "marked_cuts",
    "redact_and_cut",
    "utf8_len",
]

# What an excerpt costs beside its records (execution ref, counts, brackets): charged while the
# excerpt holds a record, so many executions do not fill the budget with empty excerpts.
EXCERPT_BYTES = 112

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
    # Shrink both ends by the share the escapes overshoot (not a fixed quarter, which left a
    # text of many newlines a quarter under its room).
    while (size := json_size(head_text + tail_text) - 2) > room and (head_text or tail_text):
        head_keep = min(len(head_text) - 1, len(head_text) * room // size)
        tail_keep = min(len(tail_text) - 1, len(tail_text) * room // size)
        head_text = head_text[: max(0, head_keep)]
        tail_text = tail_text[len(tail_text) - max(0, tail_keep) :] if tail_keep > 0 else ""
    kept = utf8_len(head_text) + utf8_len(tail_text)
    return head_text + cut_marker(original - kept) + tail_text, original - kept


_MARKER = re.compile(r"…\[cut (\d{1,15}) bytes\]…")


def marked_cuts(text: str) -> int:
    """The bytes the ``…[cut N bytes]…`` markers in ``text`` say were cut before."""
    if "[cut " not in text:
        return 0
    return sum(int(found) for found in _MARKER.findall(text))


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
    source_cut: int = 0  # bytes a session source already cut from this text (its markers)
    tier: int = len(Salience)  # its salience; the task (pinned) ranks above every tier
    escapes: int = 0  # characters of head and tail that JSON escapes with a backslash

    @property
    def weight(self) -> int:
        # What the record weighs as an evidence entry once cut to record_bytes (its JSON:
        # '{"n":…,"role":"…","text":"…","tool":"…","receipt":"…"},'), so the transcript budget
        # matches the evidence it yields; memory per record stays under 2 * (record + margin).
        # JSON escapes count (a newline is two bytes); a cut keeps record_bytes of JSON, its
        # marker included.
        text = len(self.head) + (len(self.tail) if self.tail else 0) + self.escapes
        if self.tail is not None or text > self.record_bytes:
            text = self.record_bytes
        fields = 17 + len(str(self.number))
        if self.role:
            fields += len(self.role) + 10
        if self.tool:
            fields += len(self.tool) + 10
        if self.receipt:
            fields += len(self.receipt) + 13
        return text + fields


_TIERS = len(Salience)


@dataclass(slots=True)
class _Lane:
    pinned: _Record | None = None  # the task: the first record that is not a system prompt
    pinned_once: bool = False
    # Kept records by salience tier, oldest first in each: the lowest tier is reclaimed first.
    tiers: list[deque[_Record]] = field(default_factory=lambda: [deque() for _ in range(_TIERS)])
    last_call: tuple[_Record, int] | None = None  # the latest tool call and its tier
    weight: int = 0
    seen: int = 0
    seen_bytes: int = 0
    dropped: int = 0
    dropped_bytes: int = 0
    pager_cuts: int = 0
    # Set by TranscriptBudget.excerpt: what the builder cut from the kept records, and what a
    # session source had cut from them before (each cut once in the cut list, with its bytes).
    cut_bytes: int = 0
    source_cuts: int = 0
    source_cut_bytes: int = 0
    kept_tiers: tuple[int, ...] = ()  # the salience of each kept record, in record order

    @property
    def body(self) -> bool:
        return any(self.tiers)

    @property
    def rank(self) -> int:
        """Which lanes give up a record first: those holding more than their task and their
        lessons (0), then those down to their task (1), then those down to task and lessons (2):
        a failure outlives another execution's bare task."""
        if any(self.tiers[tier] for tier in range(Salience.LESSON)):
            return 0
        return 2 if self.tiers[Salience.LESSON] else 1

    def oldest_of_lowest_tier(self) -> _Record:
        return next(tier for tier in self.tiers if tier).popleft()

    def kept(self) -> list[_Record]:
        records = [record for tier in self.tiers for record in tier]
        if self.pinned:
            records.append(self.pinned)
        return sorted(records, key=lambda record: record.number)


def _escapes(text: str) -> int:
    return text.count("\n") + text.count('"') + text.count("\\") + text.count("\t")


def _count_hidden_source_cut(text: str, cut: int, source_cut: int) -> str:
    """The builder's marker counts the source's cut bytes whose marker it removed, so the text
    says how much of the original is missing there (the source's own cut stays listed apart)."""
    builder_marker = cut_marker(cut)
    hidden = source_cut - (marked_cuts(text) - cut)
    if hidden <= 0 or builder_marker not in text:
        return text
    return text.replace(builder_marker, cut_marker(cut + hidden), 1)


class TranscriptBudget:
    """Per-execution excerpts under one fixed byte budget.

    Every execution keeps its first record that is not a system prompt (the task it was given).
    When the total passes the budget, a record of the execution holding the most is reclaimed:
    the oldest of its lowest salience tier (:mod:`.salience`), so routine reads go first and
    failures, rejected calls and first explorations last. Once every execution is down to its
    task and its lessons, bare tasks go before lessons (a failure outlives another execution's
    task); an execution's own task goes after its lessons. A verbose execution therefore pays
    for itself instead of pushing out everyone else's evidence.
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
        salience: Salience = Salience.CONTEXT,
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
        record.source_cut = marked_cuts(text)
        record.escapes = _escapes(record.head) + (_escapes(record.tail) if record.tail else 0)
        if not lane.pinned_once and role != "system":
            lane.pinned, lane.pinned_once = record, True
        else:
            record.tier = salience
            lane.tiers[salience].append(record)
            self._promote_failed_call(lane, role, tool, salience)
            if role == "assistant" and tool:
                lane.last_call = (record, salience)
        lane.seen += 1
        lane.seen_bytes += original_bytes
        lane.pager_cuts += cut_by_pager
        self._grow(lane_id, lane, record.weight)
        while self.total > self.budget and self._reclaim():
            pass

    @staticmethod
    def _promote_failed_call(
        lane: _Lane, role: str | None, tool: str | None, salience: Salience
    ) -> None:
        """A failed or rejected result makes its call a lesson too: the call says what was tried."""
        if role == "assistant" or not (tool or role == "tool") or lane.last_call is None:
            return
        call, tier = lane.last_call
        lane.last_call = None
        if salience == Salience.LESSON and tier != Salience.LESSON:
            kept = lane.tiers[tier]
            if kept and kept[-1] is call:  # not yet reclaimed, and nothing of its tier since
                kept.pop()
                call.tier = Salience.LESSON
                lesson = lane.tiers[Salience.LESSON]
                # Kept in record order: the call came before the result just appended.
                lesson.insert(len(lesson) - 1, call)

    def _grow(self, lane_id: int, lane: _Lane, delta: int) -> None:
        held = lane.weight > 0
        lane.weight += delta
        self.total += delta
        if held != (lane.weight > 0):
            self.total += EXCERPT_BYTES if lane.weight > 0 else -EXCERPT_BYTES
        heapq.heappush(self._heap, (lane.rank, -lane.weight, lane_id))
        if len(self._heap) > 4 * len(self.lanes) + 64:
            self._heap = [(item.rank, -item.weight, key)
                          for key, item in self.lanes.items() if item.weight]  # fmt: skip
            heapq.heapify(self._heap)

    def _reclaim(self) -> bool:
        # Lanes that still hold more than their task and lessons come first, then bare tasks,
        # then lessons: see _Lane.rank.
        while self._heap:
            rank, weight, lane_id = heapq.heappop(self._heap)
            lane = self.lanes[lane_id]
            if (rank, -weight) != (lane.rank, lane.weight) or lane.weight == 0:
                continue
            if lane.body:
                record = lane.oldest_of_lowest_tier()
            elif lane.pinned is not None:
                record, lane.pinned = lane.pinned, None
            else:
                continue
            lane.dropped += 1
            lane.dropped_bytes += record.original_bytes
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
        lane.cut_bytes = lane.source_cuts = lane.source_cut_bytes = 0
        kept = lane.kept()
        lane.kept_tiers = tuple(record.tier for record in kept)
        for record in kept:
            if record.tail is None:
                text, cut = redact_and_cut(record.head, self.record_bytes)
            else:
                head = redact_text(record.head).encode("utf-8")
                tail = redact_text(record.tail).encode("utf-8")
                text, cut = _join(head, tail, self.record_bytes, record.original_bytes)
            if record.source_cut:
                lane.source_cuts += 1
                lane.source_cut_bytes += record.source_cut
            if cut:
                text = _count_hidden_source_cut(text, cut, record.source_cut)
            lane.cut_bytes += cut
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
