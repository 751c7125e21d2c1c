"""The failures a run record shows, and the deliveries that came before them.

A record holds no tool results (a receipt never claims success), so a failure is read from what
the record does say about each execution:

* ``execution_error``: the execution ended ``error``, ``timeout`` or ``crashed`` (``cancelled``
  is a person's or the host's choice, not a failure of the agent);
* ``verifier_rejection``: an execution of a ``verifier`` node completed with a completion whose
  first word is a rejection (``REJECT``, ``REJECTED``, ``FAIL``, ``FAILED``, ``CHANGES
  REQUESTED``, ``NOT APPROVED``; any case, leading punctuation ignored).

A failure happens at the end of its execution: every tool call of that execution came before
it. A card delivered to the failing execution's conversation (once per conversation, so an
earlier execution of the same conversation counts too) before that end was in the agent's
context at the failure; :func:`deliveries_before_failures` counts those deliveries per
``id@revision``. A node prompt's delivery belongs to the execution the prompt started: it is
before that execution's calls and after every earlier execution of the conversation, so never
before an earlier execution's failure.
Pure functions over the record, deterministic order.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from active_memory.models.runs import Delivery, Execution, RunRecord, ToolReceipt

__all__ = [
    "ERROR_STATUSES",
    "Conversation",
    "FailureKind",
    "Position",
    "RunFailure",
    "conversation_of",
    "conversation_receipts",
    "conversations",
    "deliveries_before_failures",
    "delivery_position",
    "is_rejection",
    "run_failures",
    "tool_calls_after",
]

FailureKind: TypeAlias = Literal["execution_error", "verifier_rejection"]
ERROR_STATUSES = frozenset({"error", "timeout", "crashed"})
_REJECTION = re.compile(
    r"\A\W*(?:REJECT(?:ED)?|FAIL(?:ED)?|CHANGES[ _-]REQUESTED|NOT[ _-]APPROVED)\b", re.IGNORECASE
)


def is_rejection(completion: str | None) -> bool:
    """Whether a verifier's completion opens with a rejection verdict."""
    return completion is not None and _REJECTION.match(completion[:256]) is not None


def conversation_of(execution: Execution) -> str:
    """The conversation an execution belongs to: its own id stands in when none was recorded."""
    return execution.conversation_id or f"exec:{execution.id}"


@dataclass(frozen=True, slots=True)
class RunFailure:
    """One failed execution: what failed, how, and its tool calls in order (``receipts``)."""

    execution: str
    node_id: str
    conversation: str
    kind: FailureKind
    status: str
    receipts: tuple[ToolReceipt, ...]


def run_failures(record: RunRecord) -> tuple[RunFailure, ...]:
    """The record's failures in execution order (started, then id)."""
    kinds = {node.id: node.kind for node in record.graph.nodes}
    by_execution: dict[str, list[ToolReceipt]] = {}
    for receipt in sorted(record.receipts, key=lambda r: r.seq):
        if receipt.execution is not None:
            by_execution.setdefault(receipt.execution, []).append(receipt)
    found: list[RunFailure] = []
    for execution in sorted(record.executions, key=lambda e: (e.started_ms, e.id)):
        kind: FailureKind | None = None
        if execution.status in ERROR_STATUSES:
            kind = "execution_error"
        elif (
            kinds.get(execution.node_id) == "verifier"
            and execution.status == "completed"
            and is_rejection(execution.completion)
        ):
            kind = "verifier_rejection"
        if kind is not None:
            found.append(
                RunFailure(
                    execution=execution.id,
                    node_id=execution.node_id,
                    conversation=conversation_of(execution),
                    kind=kind,
                    status=execution.status,
                    receipts=tuple(by_execution.get(execution.id, ())),
                )
            )
    return tuple(found)


# A position in a conversation: (the execution's index in it, a receipt seq). An execution's
# prompt comes before its calls (-1), its end after them (_END); later executions come after.
Position: TypeAlias = tuple[int, int]
_END = 1 << 62


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation: its executions in order (started, then id) with their starts, and its
    tool calls in seq order."""

    executions: tuple[str, ...]
    starts: tuple[int, ...]
    receipts: tuple[ToolReceipt, ...]
    _order: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._order.update((execution, i) for i, execution in enumerate(self.executions))

    def index(self, execution: str | None) -> int | None:
        return self._order.get(execution) if execution is not None else None

    def position(self, receipt: ToolReceipt) -> Position:
        index = self.index(receipt.execution)
        return (len(self.executions) if index is None else index, receipt.seq)

    def end(self, execution: str) -> Position:
        """Where an execution of this conversation ends: after its last call."""
        index = self.index(execution)
        return (len(self.executions) if index is None else index, _END)


def conversations(record: RunRecord) -> dict[str, Conversation]:
    """Each conversation's executions and tool calls, in order."""
    executions: dict[str, list[Execution]] = {}
    for execution in sorted(record.executions, key=lambda e: (e.started_ms, e.id)):
        executions.setdefault(conversation_of(execution), []).append(execution)
    receipts = conversation_receipts(record)
    return {
        owner: Conversation(
            tuple(e.id for e in members),
            tuple(e.started_ms for e in members),
            receipts.get(owner, ()),
        )
        for owner, members in executions.items()
    }


def _prompt_index(delivery: Delivery, conversation: Conversation) -> int:
    """The execution whose prompt carried a prompt delivery: the one it names, else the last
    one started at or before its time, else (no more to go on) the conversation's first."""
    index = conversation.index(delivery.execution)
    if index is not None:
        return index
    if delivery.time_ms is not None:
        return max(0, bisect_right(conversation.starts, delivery.time_ms) - 1)
    return 0


def delivery_position(delivery: Delivery, conversation: Conversation) -> Position:
    """Where a delivery sits in its conversation. A node prompt is before the calls of the
    execution it started, and after every call of the executions before it; a hook delivery is
    at the call it rode on (recorded, else the first call at or after its time), or past the
    end when it came after the last call."""
    calls = conversation.receipts
    if delivery.channel == "prompt":
        return (_prompt_index(delivery, conversation), -1)
    if delivery.receipt_seq is not None:
        for receipt in calls:
            if receipt.seq == delivery.receipt_seq:
                return conversation.position(receipt)
    elif delivery.time_ms is not None:
        for receipt in calls:
            if receipt.time_ms >= delivery.time_ms:
                return conversation.position(receipt)
    index = conversation.index(delivery.execution)
    return (len(conversation.executions) if index is None else index, _END)


def tool_calls_after(
    delivery: Delivery, failure: RunFailure, conversation: Conversation
) -> int | None:
    """How many tool calls of the conversation the agent made with the card before the failure:
    those from the delivery to the failing execution's end. None when the delivery came after
    the failure (a later execution's prompt, a call after its end)."""
    start = delivery_position(delivery, conversation)
    end = conversation.end(failure.execution)
    if start > end:
        return None
    return sum(1 for r in conversation.receipts if start <= conversation.position(r) <= end)


def conversation_receipts(record: RunRecord) -> dict[str, tuple[ToolReceipt, ...]]:
    """Each conversation's tool calls in seq order."""
    conversation = {e.id: conversation_of(e) for e in record.executions}
    grouped: dict[str, list[ToolReceipt]] = {}
    for receipt in sorted(record.receipts, key=lambda r: r.seq):
        owner = conversation.get(receipt.execution or "")
        if owner is not None:
            grouped.setdefault(owner, []).append(receipt)
    return {owner: tuple(receipts) for owner, receipts in grouped.items()}


def deliveries_before_failures(record: RunRecord) -> dict[str, int]:
    """Per ``id@revision``: the deliveries that reached a conversation before it failed."""
    failures = run_failures(record)
    if not failures:
        return {}
    conversation = {e.id: conversation_of(e) for e in record.executions}
    found = conversations(record)
    counts: dict[str, int] = {}
    for delivery in record.deliveries:
        owner = conversation.get(delivery.execution or "", delivery.conversation_id)
        if owner not in found:
            continue  # a conversation no execution recorded: nothing there failed
        if any(
            failure.conversation == owner
            and tool_calls_after(delivery, failure, found[owner]) is not None
            for failure in failures
        ):
            counts[delivery.key] = counts.get(delivery.key, 0) + 1
    return counts
