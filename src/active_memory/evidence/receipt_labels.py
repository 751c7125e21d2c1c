"""Which transcript record is which tool receipt: the ``receipt:<seq>`` a specialist cites.

Admission accepts ``receipt:<seq>`` when ``seq`` is a receipt of the run record and (for
attribution) the receipt's execution is the node's. A transcript tool-call record is therefore
labelled only with a receipt the record holds for the same execution:

- a session source writes the seq beside the call (``"receipt": 12``): the label is that seq when
  the record still holds the receipt (the ring keeps the first and latest 512, and a call the
  user rejected is no receipt) and it belongs to this execution;
- a host's transcript names no seq: an assistant record with a tool and a time is matched to the
  execution's receipts of the same tool and time, in seq order, each receipt used once.

A call with no such receipt gets no label, never one admission would refuse: receipts of
imported executions or of nodes that are no bound agent (admission's ``receipt_imported`` and
``receipt_auxiliary``) label nothing either (:func:`citable_receipts`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from active_memory.models.runs import RunRecord, ToolReceipt

__all__ = ["ReceiptLabels", "citable_receipts", "receipt_label"]

TOOL_CHARS = 128


def receipt_label(seq: int) -> str:
    """The reference admission resolves for receipt ``seq``."""
    return f"receipt:{seq}"


def citable_receipts(record: RunRecord) -> tuple[ToolReceipt, ...]:
    """The receipts admission accepts as this run's evidence of the execution they name."""
    agents = {node.id for node in record.graph.nodes if node.is_agent}
    current = {e.id for e in record.executions if not e.imported and e.node_id in agents}
    return tuple(receipt for receipt in record.receipts if receipt.execution in current)


class ReceiptLabels:
    """Labels transcript records, in transcript order, with the receipts of a run record."""

    def __init__(self, receipts: Iterable[ToolReceipt]) -> None:
        self._unused: dict[int, tuple[str, str, int]] = {}
        self._calls: dict[tuple[str, str, int], deque[int]] = {}
        for receipt in sorted(receipts, key=lambda item: item.seq):
            if receipt.execution is None:
                continue  # admission cannot attribute it: no record is labelled with it
            key = (receipt.execution, receipt.tool[:TOOL_CHARS], receipt.time_ms)
            self._unused[receipt.seq] = key
            self._calls.setdefault(key, deque()).append(receipt.seq)

    def label(
        self,
        execution: str,
        *,
        role: str | None,
        tool: str | None,
        time_ms: int | None,
        seq: int | None,
    ) -> str | None:
        """The ``receipt:<seq>`` of this record, or None when it records no receipt."""
        if seq is not None:
            key = self._unused.get(seq)
            if key is None or key[0] != execution:
                return None
            self._use(seq, key)
            return receipt_label(seq)
        if role != "assistant" or not tool or time_ms is None:
            return None
        key = (execution, tool[:TOOL_CHARS], time_ms)
        queue = self._calls.get(key)
        if not queue:
            return None
        found = queue[0]
        self._use(found, key)
        return receipt_label(found)

    def _use(self, seq: int, key: tuple[str, str, int]) -> None:
        # Each receipt labels one record at most.
        del self._unused[seq]
        self._calls[key].remove(seq)
