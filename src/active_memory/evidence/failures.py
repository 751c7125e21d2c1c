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
earlier execution of the same conversation counts too) was in the agent's context before the
failure; :func:`deliveries_before_failures` counts those deliveries per ``id@revision``.
Pure functions over the record, deterministic order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from active_memory.models.runs import Delivery, Execution, RunRecord, ToolReceipt

__all__ = [
    "ERROR_STATUSES",
    "FailureKind",
    "RunFailure",
    "conversation_of",
    "conversation_receipts",
    "deliveries_before_failures",
    "delivery_seq",
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

    @property
    def last_seq(self) -> int | None:
        return self.receipts[-1].seq if self.receipts else None


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


def delivery_seq(delivery: Delivery, conversation_receipts: Sequence[ToolReceipt]) -> int:
    """Where a delivery sits among the conversation's tool calls: the seq of the call it rode
    on (recorded, else the first call at or after its time); -1 for a node prompt, which
    precedes every call. A hook delivery after the last call sits past the end."""
    if delivery.receipt_seq is not None:
        return delivery.receipt_seq
    if delivery.channel == "prompt" or delivery.time_ms is None:
        return -1
    for receipt in conversation_receipts:
        if receipt.time_ms >= delivery.time_ms:
            return receipt.seq
    return conversation_receipts[-1].seq + 1 if conversation_receipts else -1


def tool_calls_after(
    delivery: Delivery, failure: RunFailure, conversation_receipts: Sequence[ToolReceipt]
) -> int | None:
    """How many tool calls of the conversation the agent made with the card before the failure:
    those at or after the delivery up to the failing execution's last call. None when the
    delivery came after the failure."""
    start = delivery_seq(delivery, conversation_receipts)
    end = failure.last_seq
    if end is None:  # the failing execution made no call: its conversation's calls preceded it
        end = conversation_receipts[-1].seq if conversation_receipts else -1
    if start > end and not (start == -1 and end == -1):
        return None
    return sum(1 for receipt in conversation_receipts if start <= receipt.seq <= end)


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
    receipts = conversation_receipts(record)
    counts: dict[str, int] = {}
    for delivery in record.deliveries:
        owner = conversation.get(delivery.execution or "", delivery.conversation_id)
        calls = receipts.get(owner, ())
        if any(
            failure.conversation == owner and tool_calls_after(delivery, failure, calls) is not None
            for failure in failures
        ):
            counts[delivery.key] = counts.get(delivery.key, 0) + 1
    return counts
