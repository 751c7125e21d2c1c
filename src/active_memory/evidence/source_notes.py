"""What a converted session says about its own cuts, carried into the truncation report.

A session source writes, in the record's runtime, the cuts it made before the builder saw the
record (``source_cuts``: lines over the limit or unreadable, subagents whose file is missing),
the true number of tool calls (``receipts_total``: the record keeps a ring of 512) and the
executions whose transcript is unavailable (``subagents_unavailable``). The builder reports each
as a cut, so nothing a session held leaves the evidence unsaid. A host's own record, without
these keys, is unaffected.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from active_memory.evidence.truncation import CutLog
from active_memory.models.runs import RunRecord

__all__ = ["log_source_cuts", "receipts_made", "unavailable_refs"]

_RING_REASON = "the session source keeps the first and latest 512 tool calls as receipts"


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def log_source_cuts(record: RunRecord, log: CutLog) -> None:
    cuts = record.runtime.get("source_cuts")
    if not isinstance(cuts, list):
        return
    for cut in cuts[:64]:
        if not isinstance(cut, Mapping):
            continue
        section, reason = cut.get("section"), cut.get("reason")
        if isinstance(section, str) and isinstance(reason, str):
            log.add(f"source.{section[:64]}", reason[:256], count=_count(cut.get("count")),
                    size=_count(cut.get("bytes")))  # fmt: skip


def receipts_made(record: RunRecord, log: CutLog | None = None) -> int:
    """How many tool calls the run made: the record's receipts, or the source's true count."""
    kept = len(record.receipts)
    made = _count(record.runtime.get("receipts_total"))
    if made <= kept:
        return kept
    if log is not None:
        log.add("receipts", _RING_REASON, count=made - kept)
    return made


def unavailable_refs(record: RunRecord) -> dict[str, str]:
    """Why each execution marked unavailable could not be read: its own ``unavailable``, else
    (records converted before executions carried it) the runtime's list."""
    refs = {execution.ref: execution.unavailable for execution in record.executions
            if execution.unavailable}  # fmt: skip
    ids = record.runtime.get("subagents_unavailable")
    for item in ids[:4096] if isinstance(ids, list) else ():
        if isinstance(item, str):
            refs.setdefault(f"exec:{item}", "subagent transcript file not found")
    return refs
