"""Final trimming: make the serialized payload fit the budget, largest evidence first.

Phases, each tried only while the payload is still over budget, each cutting only what the
excess needs:

1. shrink the largest evidence arrays (each execution's transcript records, receipts), keeping
   the first and the latest item and at least one excerpt record per execution; within an
   excerpt the lowest salience tier goes first (routine reads before failures), oldest first;
2. cut the longest strings (completions, excerpt texts) with a marker, down to 256 bytes;
3. drop executions' completions, largest first;
4. drop single excerpt records and receipts, one at a time from the largest array, so many
   equal excerpts lose only as many records as the excess needs, never all at once (an emptied
   excerpt goes whole: its counts alone say nothing the cut list does not);
5. cut the initial input to 256 bytes, then replace the inline runtime and graph by their
   private-file pointers;
6. drop executions from the listing, the ordinary ones first and the latest of them first
   (failed, retried, first and latest stay longest), counting them by node in
   ``executions_left_out``: the listing is the last thing the budget gives up.

Lessons and lesson changes are never trimmed: a specialist must see every supplied card, so when
they alone exceed the budget the builder fails and the caller splits the batch.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from active_memory.evidence.budget import cut_text, json_size
from active_memory.evidence.listing import listing_order
from active_memory.evidence.shrink import water_level
from active_memory.evidence.truncation import CutLog
from active_memory.models.runs import canonical_json

__all__ = ["Trimmer"]

MIN_STRING = 256
_ARRAYS_REASON = (
    "largest evidence array shrunk to fit the budget (routine records first; first and latest kept)"
)
_LAST_REASON = "budget too small to keep an excerpt of every execution"
_STRING_REASON = "long string cut with a marker to fit the budget"
_EXECUTIONS_REASON = (
    "executions dropped from the listing: budget too small (counted by node in executions_left_out)"
)


def _drop_index(items: list[Any], *, transcript: bool, ranks: list[int] | None = None) -> int:
    """The item to drop: of those that are neither the first (for a transcript: the task, the
    first record that is not a system prompt) nor the latest, the oldest of the lowest salience
    rank (all one rank without ``ranks``); then the first; the latest goes last."""
    first = 0
    if transcript:
        first = next((i for i, item in enumerate(items) if item.get("role") != "system"), 0)
    middle = [index for index in range(len(items) - 1) if index != first]
    if not middle:
        return 0
    if ranks is None or len(ranks) != len(items):
        return middle[0]
    return min(middle, key=lambda index: (ranks[index], index))


@dataclass(slots=True)
class _Array:
    section: str
    items: list[Any]
    floor: int
    ref: str | None = None
    counter: dict[str, Any] | None = None  # an excerpt whose records_dropped follows the cuts
    ranks: list[int] | None = None  # each record's salience tier, dropped along with it

    def size(self) -> int:
        return json_size(self.items)


class Trimmer:
    """Trims ``payload`` in place; ``finish`` stamps the truncation report into it."""

    def __init__(
        self,
        payload: dict[str, Any],
        budget: int,
        log: CutLog,
        verifiers: frozenset[str] = frozenset(),
        tiers: dict[str, list[int]] | None = None,
    ) -> None:
        self.payload = payload
        # Per excerpt (by execution ref), its records' salience tiers: the lowest goes first.
        self.tiers = tiers or {}
        self.budget = budget
        self.log = log
        self.verifiers = verifiers  # the verifier nodes, whose executions stay listed longer

    def serialize(self) -> str:
        self.payload["evidence_truncated"] = bool(self.log)
        self.payload["truncation"] = self.log.report(self.budget).model_dump(mode="json")
        return canonical_json(self.payload)

    def excess(self) -> int:
        return len(self.serialize().encode("utf-8")) - self.budget

    def run(self) -> str:
        phases: list[Callable[[int], bool]] = [
            self._arrays,
            self._strings,
            self._completions,
            self._last_items,
            self._sections,
            self._executions,
        ]
        for phase in phases:
            for _ in range(64):
                excess = self.excess()
                if excess <= 0:
                    return self.serialize()
                if not phase(excess):
                    break
        return self.serialize()

    def _candidates(self, last: bool) -> list[_Array]:
        arrays: list[_Array] = []
        for excerpt in self.payload.get("transcripts", []):
            arrays.append(
                _Array(
                    "transcripts[].records",
                    excerpt["records"],
                    0 if last else 1,
                    excerpt["execution"],
                    excerpt,
                    self.tiers.get(excerpt["execution"]),
                )
            )
        if "receipts" in self.payload:
            arrays.append(_Array("receipts", self.payload["receipts"], 0 if last else 2))
        return [array for array in arrays if len(array.items) > array.floor]

    def _drop(self, array: _Array, reason: str) -> int:
        index = _drop_index(array.items, transcript=array.counter is not None, ranks=array.ranks)
        if array.ranks is not None and len(array.ranks) == len(array.items):
            array.ranks.pop(index)
        dropped = json_size(array.items.pop(index)) + 1
        if array.counter is not None:
            array.counter["records_dropped"] = array.counter.get("records_dropped", 0) + 1
        self.log.add(array.section, reason, size=dropped, ref=array.ref)
        if array.counter is not None and not array.items:
            excerpts: list[dict[str, Any]] = self.payload["transcripts"]
            place = next(i for i, item in enumerate(excerpts) if item is array.counter)
            dropped += json_size(excerpts.pop(place)) + 1
        return dropped

    def _arrays(self, excess: int) -> bool:
        arrays = self._candidates(last=False)
        if not arrays:
            return False
        sizes = [array.size() for array in arrays]
        level = water_level(sizes, excess + 64)
        changed = False
        for array, size in zip(arrays, sizes, strict=True):
            while size > level and len(array.items) > array.floor:
                size -= self._drop(array, _ARRAYS_REASON)
                changed = True
        return changed

    def _last_items(self, excess: int) -> bool:
        """One item at a time from the largest array, until the excess is gone."""
        arrays = self._candidates(last=True)
        if not arrays:
            return False
        # Ties go to the later array: the first executions' excerpts are the ones kept longest.
        heap = [(-array.size(), -index) for index, array in enumerate(arrays)]
        heapq.heapify(heap)
        removed = 0
        while heap and removed < excess + 64:
            size, index = heapq.heappop(heap)
            array = arrays[-index]
            reason = _LAST_REASON if len(array.items) == 1 else _ARRAYS_REASON
            dropped = self._drop(array, reason)
            removed += dropped
            if array.items:
                heapq.heappush(heap, (size + dropped, index))
        return removed > 0

    def _string_slots(self) -> list[tuple[dict[str, Any], str, str, int]]:
        slots: list[tuple[dict[str, Any], str, str, int]] = []
        for execution in self.payload.get("executions", []):
            if isinstance(execution.get("completion"), str):
                text = execution["completion"]
                slots.append((execution, "completion", "executions[].completion", len(text)))
        for excerpt in self.payload.get("transcripts", []):
            for record in excerpt["records"]:
                text = record["text"]
                slots.append((record, "text", "transcripts[].records[].text", len(text)))
        return [slot for slot in slots if slot[3] > MIN_STRING]

    def _strings(self, excess: int) -> bool:
        slots = self._string_slots()
        if not slots:
            return False
        sizes = [len(slot[0][slot[1]].encode("utf-8")) for slot in slots]
        # Each cut string gains a marker of about 32 bytes: only the strings cut pay it.
        level = water_level(sizes, excess + 64, MIN_STRING)
        above = sum(1 for size in sizes if size > level)
        level = water_level(sizes, excess + 64 + 32 * above, MIN_STRING)
        changed = False
        for (holder, key, section, _), size in zip(slots, sizes, strict=True):
            if size > level:
                text, cut = cut_text(holder[key], level)
                if cut:
                    holder[key] = text
                    changed = True
                    self.log.add(section, _STRING_REASON, size=cut)
        return changed

    def _completions(self, excess: int) -> bool:
        executions: list[dict[str, Any]] = self.payload.get("executions", [])
        with_completion = [item for item in executions if "completion" in item]
        for item in sorted(with_completion, key=lambda e: -json_size(e["completion"])):
            if excess <= 0:
                break
            text = item.pop("completion")
            excess -= json_size(text) + 14
            self.log.add(
                "executions[].completion",
                "completion dropped: budget too small",
                size=len(text.encode("utf-8")),
                ref=item.get("ref"),
            )
        return bool(with_completion)

    def _executions(self, excess: int) -> bool:
        executions: list[dict[str, Any]] = self.payload.get("executions", [])
        if not executions:
            return False
        # The listing's own order, from its far end: the ordinary executions in the middle of
        # the run go first; the first, the latest and a verifier's go last.
        order = listing_order(executions, self.verifiers)[::-1]
        left_out: dict[str, int] = dict(self.payload.get("executions_left_out", {}))
        gone: set[int] = set()
        for index in order:
            if excess <= 0:
                break
            item = executions[index]
            size = json_size(item) + 1
            node = str(item.get("node"))
            excess -= size - (0 if node in left_out else len(node) + 12)
            left_out[node] = left_out.get(node, 0) + 1
            gone.add(index)
            self.log.add("executions", _EXECUTIONS_REASON, size=size, ref=item.get("ref"))
        executions[:] = [item for index, item in enumerate(executions) if index not in gone]
        self.payload["executions_left_out"] = dict(sorted(left_out.items()))
        return bool(gone)

    def _sections(self, excess: int) -> bool:
        run = self.payload.get("run", {})
        if isinstance(run.get("initial_input"), str):
            text, cut = cut_text(run["initial_input"], MIN_STRING)
            if cut:
                run["initial_input"] = text
                self.log.add("run.initial_input", _STRING_REASON, size=cut)
                return True
        for key in ("runtime", "graph", "transcripts"):
            if key in self.payload:
                size = json_size(self.payload.pop(key))
                pointer = self.payload.get("private_files", {}).get(key)
                where = f"; complete copy in private file {pointer!r}" if pointer else ""
                self.log.add(key, f"section dropped: budget too small{where}", size=size)
                return True
        return False
