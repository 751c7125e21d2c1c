"""Counterfactual recall: a run's recorded tool calls replayed through recall's own matcher.

A receipt keeps the root-relative paths a call touched (never its arguments), so a replayed call
carries those paths; its identifiers and topic words come from them as recall reads them from
any call. Each conversation is replayed in receipt order: a node's graph lessons at the start of
each of its executions (``nodeInjectionTokens``), then each call's matches, ranked as recall
ranks them, framed under ``hookInjectionTokens`` (the record's runtime settings, recall's
defaults otherwise), an ``id@revision`` at most once per conversation, and a card that did not
fit staying eligible for later calls. Which revision a lesson has in a replay is the caller's:
the one live at the run's start, or the one live now.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import ValidationError

from active_memory.errors import ActiveMemoryError
from active_memory.evidence.failures import Position, RunFailure, conversation_of
from active_memory.impact.timeline import CardVersion
from active_memory.models.config import ActiveMemoryConfig
from active_memory.models.runs import RunRecord, ToolReceipt
from active_memory.recall.index import RecallIndex
from active_memory.recall.signals import ToolCall, WorkspaceRoot, extract_signals

if TYPE_CHECKING:
    from active_memory.recall.card import RecallCard

__all__ = ["Placement", "Replay", "Replayer"]

# Receipt paths are already root-relative; any absolute root turns them back into themselves.
_ROOT = WorkspaceRoot(("/replayed-workspace",))
_MATCH_CACHE = 65_536
# The cards a framing was given (each ``id@revision``) and its budget in bytes.
_Framing = tuple[tuple[tuple[str, int], ...], int]


@dataclass(frozen=True, slots=True)
class Placement:
    """A replay's answer: per (conversation, lesson id) the position of its first delivery
    (the execution's index in the conversation, and the receipt seq, -1 for its prompt), the
    pairs the budget cut before any delivery, and each execution's index."""

    delivered: dict[tuple[str, str], Position] = field(default_factory=dict)
    cut: dict[tuple[str, str], Position] = field(default_factory=dict)
    order: dict[str, int] = field(default_factory=dict)

    def before(self, lesson_id: str, failure: RunFailure) -> bool:
        """Whether the card reached the failing conversation by the failing execution's end:
        in an earlier execution, or in its own (its prompt or any of its calls)."""
        where = self.delivered.get((failure.conversation, lesson_id))
        index = self.order.get(failure.execution)
        return where is not None and index is not None and where[0] <= index


@dataclass(slots=True)
class Replay:
    """One run prepared once: its conversations' calls and each call's matches."""

    record: RunRecord
    repository: str | None
    conversations: dict[str, list[tuple[str, ToolReceipt | None]]]  # (execution, call or None)
    matches: dict[int, tuple[CardVersion, ...]]  # receipt seq -> versions matched, ranked
    hook_bytes: int
    node_bytes: int
    use_repository: bool
    use_graph: bool


class Replayer:
    """A union index over every revision of every lesson, and replays against it."""

    def __init__(self, versions: Sequence[CardVersion]) -> None:
        self._versions = versions
        self._indexes: dict[str | None, RecallIndex] = {}
        self._cache: dict[tuple[str | None, tuple[str, ...]], tuple[CardVersion, ...]] = {}
        self._framed: dict[_Framing, tuple[tuple[RecallCard, ...], tuple[RecallCard, ...]]] = {}

    def _index(self, repository: str | None) -> RecallIndex:
        index = self._indexes.get(repository)
        if index is None:
            index = self._indexes[repository] = RecallIndex(self._versions, repository=repository)
        return index

    def _match(self, repository: str | None, paths: tuple[str, ...]) -> tuple[CardVersion, ...]:
        key = (repository, paths)
        found = self._cache.get(key)
        if found is None:
            signals = extract_signals(ToolCall("replay", {"paths": list(paths)}), _ROOT)
            found = tuple(m.lesson for m in self._index(repository).match(signals))  # type: ignore[misc]
            if len(self._cache) >= _MATCH_CACHE:
                self._cache.clear()
            self._cache[key] = found
        return found

    def _frame(
        self, eligible: Sequence[RecallCard], budget: int
    ) -> tuple[tuple[RecallCard, ...], tuple[RecallCard, ...]]:
        """The cards recall's framing delivers and leaves out, remembered by the cards
        (``id@revision`` names one card here) and the budget: the same cards recur across runs,
        and framing each again was a tenth of a replay."""
        # Framing loads the frame screens: ``lessons stats`` over a store without runs, a
        # reading command, never pays for them (tests/cli/test_lazy_commands.py).
        from active_memory.recall.render import render

        key = (tuple((card.id, card.revision) for card in eligible), budget)
        found = self._framed.get(key)
        if found is None:
            rendering = render(eligible, budget_bytes=budget)
            found = (rendering.delivered, rendering.left_out)
            if len(self._framed) >= _MATCH_CACHE:
                self._framed.clear()
            self._framed[key] = found
        return found

    def prepare(self, record: RunRecord) -> Replay:
        repository = record.checkout.repository if record.checkout is not None else None
        settings = _settings(record)
        calls: dict[str, list[ToolReceipt]] = {}
        for receipt in sorted(record.receipts, key=lambda r: r.seq):
            if receipt.execution is not None:
                calls.setdefault(receipt.execution, []).append(receipt)
        conversations: dict[str, list[tuple[str, ToolReceipt | None]]] = {}
        for execution in sorted(record.executions, key=lambda e: (e.started_ms, e.id)):
            events = conversations.setdefault(conversation_of(execution), [])
            events.append((execution.id, None))
            events.extend((execution.id, receipt) for receipt in calls.get(execution.id, ()))
        matches = {
            receipt.seq: self._match(repository, receipt.paths)
            for receipt in record.receipts
            if receipt.paths
        }
        return Replay(
            record,
            repository,
            conversations,
            matches,
            settings.hook_injection_bytes,
            settings.node_injection_bytes,
            settings.repository,
            settings.graph,
        )

    def place(self, replay: Replay, live: Callable[[str], int | None]) -> Placement:
        """Replay every conversation with each lesson at revision ``live(id)`` (None: absent)."""
        placement = Placement()
        record = replay.record
        nodes = {e.id: e.node_id for e in record.executions}
        graph_hash = record.graph.hash
        for conversation, events in replay.conversations.items():
            given: set[str] = set()
            step = -1  # the execution's index in the conversation: each opens with its prompt
            for execution, receipt in events:
                where: Position
                if receipt is None:
                    step += 1
                    placement.order[execution] = step
                    if not replay.use_graph:
                        continue
                    where = (step, -1)
                    cards = self._index(replay.repository).graph_lessons(
                        graph_hash, nodes[execution], replay.repository
                    )
                    candidates = [c for c in cards if live(c.id) == c.revision]
                    budget = replay.node_bytes
                else:
                    if not replay.use_repository:
                        continue
                    where = (step, receipt.seq)
                    found = replay.matches.get(receipt.seq, ())
                    candidates = [c for c in found if live(c.id) == c.revision]
                    budget = replay.hook_bytes
                eligible = [c for c in candidates if c.id not in given]
                if not eligible:
                    continue
                delivered, left_out = self._frame(eligible, budget)
                for card in delivered:
                    given.add(card.id)
                    placement.delivered.setdefault((conversation, card.id), where)
                for card in left_out:
                    placement.cut.setdefault((conversation, card.id), where)
        return placement


def _settings(record: RunRecord) -> ActiveMemoryConfig:
    section = record.runtime.get("activeMemory")
    if isinstance(section, dict):
        try:
            return ActiveMemoryConfig.parse(section)
        except (ActiveMemoryError, ValidationError):
            pass  # a record the host accepted has valid settings; otherwise recall's defaults
    return ActiveMemoryConfig()
