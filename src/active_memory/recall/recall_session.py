"""A recall session: one frozen index, its exposure ledger and tool receipts.

``recall`` turns a tool call into a framed answer and a report (every matched card with its
score, the association that matched, and whether it was delivered, skipped as already delivered
in this conversation, or left out for budget). ``guidance`` does the same for a node prompt with
the node's graph lessons. Both return a pending :class:`Recall`: the caller commits it once the
text was handed over, or releases it.

The session reads its ``activeMemory`` settings through :class:`RecallConfig` (a runtime
``ActiveMemoryConfig`` satisfies it) and defaults to :class:`RecallSettings`, so the hook
fallback runs it without importing the models: nothing here loads them, ``dataclasses``,
``typing`` or ``threading`` at import. ``manifest=False`` keeps no receipts and no delivery
records, for that fallback, whose exposures live in a file.
"""

from __future__ import annotations

from _thread import allocate_lock

from active_memory.recall.card import card_key
from active_memory.recall.exposure import ExposureLedger, ReceiptRing
from active_memory.recall.render import Rendering, render
from active_memory.recall.signals import extract_signals
from active_memory.type_checking import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, Literal, Protocol, TypeAlias

    from active_memory.models.runs import Delivery, ToolReceipt
    from active_memory.recall.card import RecallCard
    from active_memory.recall.exposure import Channel, Claim
    from active_memory.recall.index import Match, RecallIndex
    from active_memory.recall.signals import ToolCall, WorkspaceRoot

    Outcome: TypeAlias = Literal["delivered", "already_delivered", "left_out"]
    Candidate: TypeAlias = tuple[RecallCard, int | None, str]  # card, score (None: graph), reason

    class RecallConfig(Protocol):
        """What a session reads of the ``activeMemory`` section."""

        @property
        def repository(self) -> bool: ...

        @property
        def graph(self) -> bool: ...

        @property
        def hook_injection_bytes(self) -> int: ...

        @property
        def node_injection_bytes(self) -> int: ...


__all__ = [
    "UNKNOWN_CONVERSATION",
    "Caller",
    "CardReport",
    "Recall",
    "RecallReport",
    "RecallSession",
    "RecallSettings",
]

# What an untracked caller's deliveries are recorded under.
UNKNOWN_CONVERSATION = "unknown"


class RecallSettings:
    """The ``activeMemory`` defaults in the units a session reads (a test keeps them equal to
    ``ActiveMemoryConfig()``): both channels on, 8,000 hook and 16,000 node tokens of 4 bytes."""

    __slots__ = ("graph", "hook_injection_bytes", "node_injection_bytes", "repository")

    def __init__(
        self,
        *,
        repository: bool = True,
        graph: bool = True,
        hook_injection_bytes: int = 8_000 * 4,
        node_injection_bytes: int = 16_000 * 4,
    ) -> None:
        self.repository = repository
        self.graph = graph
        self.hook_injection_bytes = hook_injection_bytes
        self.node_injection_bytes = node_injection_bytes


class Caller:
    """Who is calling: the node, its provider conversation and (optionally) the execution.

    ``tracked=False`` when the conversation is unknown: every matching card is offered and the
    exposure is not remembered (see :mod:`active_memory.recall.exposure`). ``shared=True`` for a
    harness's hook call: the helper's store fallback may answer the same conversation from
    another process, so its exposures go to the run's ledger files too.
    """

    __slots__ = ("conversation_id", "execution_id", "node_id", "shared", "tracked")

    def __init__(
        self,
        node_id: str,
        conversation_id: str,
        execution_id: str | None = None,
        tracked: bool = True,
        shared: bool = False,
    ) -> None:
        self.node_id = node_id
        self.conversation_id = conversation_id
        self.execution_id = execution_id
        self.tracked = tracked
        self.shared = shared

    def __repr__(self) -> str:
        return (f"Caller({self.node_id!r}, {self.conversation_id!r}, {self.execution_id!r}, "
                f"tracked={self.tracked})")  # fmt: skip


# The two reports stay plain classes with to_dict, not models: the hook fallback builds
# them on every tool call and must not load pydantic (tests/recall/test_imports.py).
class CardReport:
    """One matched card in a report: its score, the association that matched, the outcome."""

    __slots__ = ("id", "outcome", "reason", "revision", "score")

    def __init__(
        self, id: str, revision: int, score: int | None, reason: str, outcome: Outcome
    ) -> None:
        self.id = id
        self.revision = revision
        self.score = score
        self.reason = reason
        self.outcome = outcome

    @property
    def key(self) -> str:
        return f"{self.id}@{self.revision}"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "revision": self.revision, "score": self.score,
                "reason": self.reason, "outcome": self.outcome}  # fmt: skip

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CardReport):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"CardReport({self.key!r}, {self.score}, {self.reason!r}, {self.outcome!r})"


class RecallReport:
    """What one recall matched and did with each card; never the card text."""

    __slots__ = ("budget_bytes", "cards", "channel", "paths", "tool", "used_bytes")

    def __init__(
        self,
        channel: Channel,
        tool: str,
        paths: tuple[str, ...],
        cards: tuple[CardReport, ...],
        budget_bytes: int,
        used_bytes: int,
    ) -> None:
        self.channel = channel
        self.tool = tool
        self.paths = paths
        self.cards = cards
        self.budget_bytes = budget_bytes
        self.used_bytes = used_bytes

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


class Recall:
    """A framed answer in flight. ``text`` is empty when nothing is to be delivered.

    ``report`` is built on first read from what the recall matched and framed (``unbuilt``:
    the channel, tool, paths and rendering), so an answerer that never reads it (an agent
    framework's tool call) does not pay for it; it is the same report either way.
    """

    __slots__ = ("_report", "_unbuilt", "caller", "candidates", "claim", "receipt", "text")

    def __init__(
        self,
        text: str,
        report: RecallReport | None,
        claim: Claim,
        receipt: ToolReceipt | None = None,
        candidates: tuple[Candidate, ...] = (),
        caller: Caller | None = None,
        *,
        unbuilt: tuple[Channel, str, tuple[str, ...], Rendering] | None = None,
    ) -> None:
        if report is None and unbuilt is None:
            # Imported where raised: the hook path loads no exception tree (about 1 ms a call).
            from active_memory.errors import RecallError

            raise RecallError("a recall needs its report, or what to build it from")
        self.text = text
        self._report = report
        self._unbuilt = unbuilt
        self.claim = claim
        self.receipt = receipt
        self.candidates = candidates
        self.caller = caller

    @property
    def report(self) -> RecallReport:
        report = self._report
        if report is None:
            assert self._unbuilt is not None  # the constructor holds one of the two
            channel, tool, paths, rendering = self._unbuilt
            report = self._report = _report(channel, tool, paths, self.candidates, rendering)
        return report

    @property
    def delivered(self) -> tuple[str, ...]:
        """The ``id@revision`` of the cards ``text`` holds, in its order: the report's
        ``delivered``, read from the claim without building the report."""
        return self.claim.keys

    def __repr__(self) -> str:
        return f"Recall({self.text!r}, {self.report.to_dict()!r})"

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
    # The rendered cards are a subsequence of the matches: as many means every match, none
    # delivered and none left out means every match went to this conversation before.
    common: Outcome | None = None
    if len(rendering.delivered) == len(matches):
        common = "delivered"
    elif not rendering.delivered and not rendering.left_out:
        common = "already_delivered"
    if common is not None:
        cards = tuple(CardReport(lesson.id, lesson.revision, score, reason, common)
                      for lesson, score, reason in matches)  # fmt: skip
    else:
        delivered = {card_key(lesson) for lesson in rendering.delivered}
        left_out = {card_key(lesson) for lesson in rendering.left_out}
        reports = []
        for lesson, score, reason in matches:
            key = card_key(lesson)
            outcome: Outcome = (
                "delivered" if key in delivered else "left_out" if key in left_out
                else "already_delivered"
            )  # fmt: skip
            reports.append(CardReport(lesson.id, lesson.revision, score, reason, outcome))
        cards = tuple(reports)
    used = rendering.used_bytes
    return RecallReport(channel, tool, paths, cards, rendering.budget_bytes, used)


def _choose_nothing(eligible: tuple[RecallCard, ...]) -> tuple[RecallCard, ...]:
    return ()


class RecallSession:
    """Serves recall for one workspace from one frozen index (replaceable as a whole)."""

    def __init__(
        self,
        index: RecallIndex,
        root: WorkspaceRoot,
        config: RecallConfig | None = None,
        *,
        ledger: ExposureLedger | None = None,
        receipts: ReceiptRing | None = None,
        manifest: bool = True,
    ) -> None:
        self._index = index
        self._index_lock = allocate_lock()
        self.root = root
        self.config: RecallConfig = config or RecallSettings()
        self.manifest = manifest
        self.ledger = ledger or ExposureLedger(records=manifest)
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
        call_id: str | None = None,
    ) -> Recall:
        """Match one tool call, record its receipt, and claim the cards that fit the budget.

        The budget is ``hookInjectionTokens`` × 4 bytes unless ``budget_bytes`` narrows it.
        ``call_id`` names the call across answerers (the helper's nonce): a call already
        receipted under it keeps its receipt. The claimed cards carry the receipt's seq.
        """
        signals = extract_signals(call, self.root)
        receipt = None
        if self.manifest:
            receipt = self.receipts.add(call.tool, signals.paths, caller.execution_id,
                                        call_id=call_id)  # fmt: skip
        matches: tuple[Match, ...] = ()
        if self.config.repository:
            matches = self._index.match(signals)
        budget = self.config.hook_injection_bytes
        if budget_bytes is not None:
            budget = min(budget, budget_bytes)
        candidates: tuple[Candidate, ...] = ()
        if matches:
            candidates = tuple((match.lesson, match.score, match.reason) for match in matches)
        paths = signals.paths
        seq = None if receipt is None else receipt.seq
        recall = self._claim("hook", call.tool, paths, candidates, caller, budget, max_chars, seq)
        recall.receipt = receipt
        return recall

    def rerender(self, recall: Recall, *, budget_bytes: int, max_chars: int | None) -> Recall:
        """Frame a released recall again under a smaller budget, without a second receipt."""
        recall.release()
        caller = recall.caller or Caller("unknown", UNKNOWN_CONVERSATION, tracked=False)
        report = recall.report
        seq = None if recall.receipt is None else recall.receipt.seq
        again = self._claim(report.channel, report.tool, report.paths, recall.candidates,
                            caller, max(budget_bytes, 0), max_chars, seq)  # fmt: skip
        again.receipt = recall.receipt
        return again

    def guidance(self, graph_hash: str, node_id: str, caller: Caller) -> Recall:
        """Graph lessons of one node for its prompt, under ``nodeInjectionTokens``."""
        lessons: tuple[RecallCard, ...] = ()
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
        receipt_seq: int | None = None,
    ) -> Recall:
        if not matches:
            # Most tool calls match nothing: a settled empty claim, an empty report.
            claim = self.ledger.claim(caller.conversation_id, (), _choose_nothing,
                                      node_id=caller.node_id, execution=caller.execution_id,
                                      channel=channel, tracked=caller.tracked,
                                      receipt_seq=receipt_seq, shared=caller.shared)  # fmt: skip
            report = RecallReport(channel, tool, paths, (), budget_bytes, 0)
            return Recall("", report, claim, candidates=matches, caller=caller)
        framed: list[Rendering] = []  # what choose framed: the ledger calls it once

        def choose(eligible: tuple[RecallCard, ...]) -> tuple[RecallCard, ...]:
            rendering = render(eligible, budget_bytes=budget_bytes, max_chars=max_chars)
            framed.append(rendering)
            return rendering.delivered

        claim = self.ledger.claim(
            caller.conversation_id,
            [lesson for lesson, _, _ in matches],
            choose,
            node_id=caller.node_id,
            execution=caller.execution_id,
            channel=channel,
            tracked=caller.tracked,
            receipt_seq=receipt_seq,
            shared=caller.shared,
        )
        # With lessons to offer the ledger always calls choose; the empty frame is a safeguard.
        rendering = framed[0] if framed else Rendering("", (), (), budget_bytes)
        return Recall(rendering.text, None, claim, candidates=matches, caller=caller,
                      unbuilt=(channel, tool, paths, rendering))  # fmt: skip
