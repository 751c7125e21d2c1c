"""A recall session: one frozen index, its exposure ledger and tool receipts.

``recall`` turns a tool call into a framed answer and a report (every matched card with its
score, the association that matched, and whether it was delivered, skipped as already delivered
in this conversation, or left out for budget). ``guidance`` does the same for a node prompt with
the node's graph lessons. Both return a pending :class:`Recall`: the caller commits it once the
text was handed over, or releases it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from active_memory.models.config import ActiveMemoryConfig
from active_memory.models.lessons import Lesson
from active_memory.models.runs import Delivery, ToolReceipt
from active_memory.recall.exposure import Channel, Claim, ExposureLedger, ReceiptRing
from active_memory.recall.index import Match, RecallIndex
from active_memory.recall.render import Rendering, render
from active_memory.recall.signals import ToolCall, WorkspaceRoot, extract_signals

__all__ = [
    "UNKNOWN_CONVERSATION",
    "Caller",
    "CardReport",
    "Recall",
    "RecallReport",
    "RecallSession",
]

Outcome = Literal["delivered", "already_delivered", "left_out"]
# What an untracked caller's deliveries are recorded under.
UNKNOWN_CONVERSATION = "unknown"


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: the node, its provider conversation and (optionally) the execution.

    ``tracked=False`` when the conversation is unknown: every matching card is offered and the
    exposure is not remembered (see :mod:`active_memory.recall.exposure`).
    """

    node_id: str
    conversation_id: str
    execution_id: str | None = None
    tracked: bool = True


@dataclass(frozen=True, slots=True)
class CardReport:
    id: str
    revision: int
    score: int | None
    reason: str
    outcome: Outcome

    @property
    def key(self) -> str:
        return f"{self.id}@{self.revision}"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "revision": self.revision, "score": self.score,
                "reason": self.reason, "outcome": self.outcome}  # fmt: skip


@dataclass(frozen=True, slots=True)
class RecallReport:
    """What one recall matched and did with each card; never the card text."""

    channel: Channel
    tool: str
    paths: tuple[str, ...]
    cards: tuple[CardReport, ...]
    budget_bytes: int
    used_bytes: int

    def _keys(self, outcome: Outcome) -> tuple[str, ...]:
        return tuple(card.key for card in self.cards if card.outcome == outcome)

    @property
    def delivered(self) -> tuple[str, ...]:
        return self._keys("delivered")

    @property
    def already_delivered(self) -> tuple[str, ...]:
        return self._keys("already_delivered")

    @property
    def left_out(self) -> tuple[str, ...]:
        return self._keys("left_out")

    def to_dict(self) -> dict[str, Any]:
        return {
            "channel": self.channel,
            "tool": self.tool,
            "paths": list(self.paths),
            "cards": [card.to_dict() for card in self.cards],
            "budget_bytes": self.budget_bytes,
            "used_bytes": self.used_bytes,
        }


Candidate = tuple[Lesson, int | None, str]  # lesson, score (None for graph guidance), reason


@dataclass(eq=False)
class Recall:
    """A framed answer in flight. ``text`` is empty when nothing is to be delivered."""

    text: str
    report: RecallReport
    claim: Claim
    receipt: ToolReceipt | None = field(default=None)
    candidates: tuple[Candidate, ...] = field(default=(), repr=False)
    caller: Caller | None = field(default=None, repr=False)

    def commit(self) -> tuple[Delivery, ...]:
        """The text was handed over: record its cards as delivered to the conversation."""
        return self.claim.commit()

    def release(self) -> None:
        """The text never reached the harness: its cards become eligible again."""
        self.claim.release()


def _report(
    channel: Channel,
    tool: str,
    paths: tuple[str, ...],
    matches: Sequence[Candidate],
    rendering: Rendering,
) -> RecallReport:
    delivered = {lesson.key for lesson in rendering.delivered}
    left_out = {lesson.key for lesson in rendering.left_out}
    cards = []
    for lesson, score, reason in matches:
        outcome: Outcome = (
            "delivered"
            if lesson.key in delivered
            else "left_out"
            if lesson.key in left_out
            else "already_delivered"
        )
        cards.append(CardReport(lesson.id, lesson.revision, score, reason, outcome))
    used = rendering.used_bytes
    return RecallReport(channel, tool, paths, tuple(cards), rendering.budget_bytes, used)


class RecallSession:
    """Serves recall for one workspace from one frozen index (replaceable as a whole)."""

    def __init__(
        self,
        index: RecallIndex,
        root: WorkspaceRoot,
        config: ActiveMemoryConfig | None = None,
        *,
        ledger: ExposureLedger | None = None,
        receipts: ReceiptRing | None = None,
    ) -> None:
        self._index = index
        self._index_lock = threading.Lock()
        self.root = root
        self.config = config or ActiveMemoryConfig()
        self.ledger = ledger or ExposureLedger()
        self.receipts = receipts or ReceiptRing()

    @property
    def index(self) -> RecallIndex:
        return self._index

    def replace_index(self, index: RecallIndex) -> None:
        """Swap in a newer snapshot's index; exposures and receipts carry over."""
        with self._index_lock:
            self._index = index

    def recall(
        self,
        call: ToolCall,
        caller: Caller,
        *,
        max_chars: int | None = None,
        budget_bytes: int | None = None,
    ) -> Recall:
        """Match one tool call, record its receipt, and claim the cards that fit the budget.

        The budget is ``hookInjectionTokens`` × 4 bytes unless ``budget_bytes`` narrows it.
        """
        signals = extract_signals(call, self.root)
        receipt = self.receipts.add(call.tool, signals.paths, caller.execution_id)
        matches: tuple[Match, ...] = ()
        if self.config.repository:
            matches = self._index.match(signals)
        budget = self.config.hook_injection_bytes
        if budget_bytes is not None:
            budget = min(budget, budget_bytes)
        candidates = tuple((match.lesson, match.score, match.reason) for match in matches)
        paths = signals.paths
        recall = self._claim("hook", call.tool, paths, candidates, caller, budget, max_chars)
        recall.receipt = receipt
        return recall

    def rerender(self, recall: Recall, *, budget_bytes: int, max_chars: int | None) -> Recall:
        """Frame a released recall again under a smaller budget, without a second receipt."""
        recall.release()
        caller = recall.caller or Caller("unknown", UNKNOWN_CONVERSATION, tracked=False)
        report = recall.report
        again = self._claim(report.channel, report.tool, report.paths, recall.candidates,
                            caller, max(budget_bytes, 0), max_chars)  # fmt: skip
        again.receipt = recall.receipt
        return again

    def guidance(self, graph_hash: str, node_id: str, caller: Caller) -> Recall:
        """Graph lessons of one node for its prompt, under ``nodeInjectionTokens``."""
        lessons: tuple[Lesson, ...] = ()
        if self.config.graph:
            lessons = self._index.graph_lessons(graph_hash, node_id, self._index.repository)
        reason = f"graph node {node_id}"
        candidates = tuple((lesson, None, reason) for lesson in lessons)
        budget = self.config.node_injection_bytes
        return self._claim("prompt", "prompt", (), candidates, caller, budget, None)

    def _claim(
        self,
        channel: Channel,
        tool: str,
        paths: tuple[str, ...],
        matches: tuple[Candidate, ...],
        caller: Caller,
        budget_bytes: int,
        max_chars: int | None,
    ) -> Recall:
        rendering = Rendering("", (), (), budget_bytes)

        def choose(eligible: tuple[Lesson, ...]) -> tuple[Lesson, ...]:
            nonlocal rendering
            rendering = render(eligible, budget_bytes=budget_bytes, max_chars=max_chars)
            return rendering.delivered

        claim = self.ledger.claim(
            caller.conversation_id,
            [lesson for lesson, _, _ in matches],
            choose,
            node_id=caller.node_id,
            execution=caller.execution_id,
            channel=channel,
            tracked=caller.tracked,
        )
        report = _report(channel, tool, paths, matches, rendering)
        return Recall(rendering.text, report, claim, candidates=matches, caller=caller)
