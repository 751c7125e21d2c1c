"""The evidence's delivery entries name the receipts of the tool calls a lesson rode on."""

from __future__ import annotations

from active_memory.evidence.builder import _deliveries
from active_memory.models.runs import Delivery

KEY = "lesson-01JWKQ7Z3M8V4T2R6N0P5X9C1B"


def _delivery(receipt: int | None, conversation: str = "c1") -> Delivery:
    return Delivery(lesson_id=KEY, revision=2, node_id="build", conversation_id=conversation,
                    channel="hook", execution="e1", receipt_seq=receipt)  # fmt: skip


def test_hook_deliveries_list_their_receipts_in_order() -> None:
    (entry,) = _deliveries([_delivery(7), _delivery(3, "c2"), _delivery(7, "c3")])
    assert entry["receipts"] == ["receipt:3", "receipt:7"]
    assert entry["count"] == 3


def test_deliveries_without_receipts_keep_their_former_shape() -> None:
    (entry,) = _deliveries([_delivery(None)])
    assert "receipts" not in entry
    assert entry == {"lesson": f"{KEY}@2", "count": 1, "channels": ["hook"], "nodes": ["build"],
                     "conversations": 1, "executions": ["exec:e1"]}  # fmt: skip
