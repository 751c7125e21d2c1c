"""Transcript excerpts per execution: paged reads into one fixed transcript budget.

Native transcript lines are JSON objects ``{"role", "text", "tool"?, "receipt"?, "time_ms"?}``;
any other JSON is kept as its compact encoding, and a line that is not JSON is kept as text.
Each tool-call record that is one of the run's receipts carries ``receipt: "receipt:<seq>"``
(:mod:`.receipt_labels`). Memory stays bounded by the budget plus one page, however long the
history.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from active_memory.bounded_input import parse_json
from active_memory.errors import InputRefused
from active_memory.evidence.budget import MARGIN, TranscriptBudget
from active_memory.evidence.pager import Cancellation, PageLimits, TranscriptLine, iter_pages
from active_memory.evidence.receipt_labels import ReceiptLabels
from active_memory.evidence.salience import SalienceClassifier
from active_memory.models.base import Model
from active_memory.models.runs import Execution, ToolReceipt, canonical_json

__all__ = [
    "Excerpt",
    "Projected",
    "TranscriptReading",
    "collect_excerpts",
    "project_line",
    "project_record",
]


def _says_nothing(value: object) -> bool:
    return not value


class Excerpt(Model):
    """What survived of one execution's transcript, with counts that make every cut visible.

    Its JSON form (``model_dump(mode="json")``) leaves out ``records_cut`` when none was cut and
    ``unavailable`` when the transcript was read.
    """

    execution: str
    records: tuple[dict[str, Any], ...]
    records_total: int
    bytes_total: int
    records_dropped: int
    records_cut: int = Field(exclude_if=_says_nothing)
    unavailable: str | None = Field(None, exclude_if=_says_nothing)
    # For the cut list only (not in the JSON form): bytes of the records reclaimed, bytes the
    # builder cut from kept records, and the kept records a session source had cut before.
    bytes_dropped: int = Field(0, exclude=True)
    bytes_cut: int = Field(0, exclude=True)
    source_cuts: int = Field(0, exclude=True)
    source_cut_bytes: int = Field(0, exclude=True)
    # Each kept record's salience tier (evidence.salience; the task ranks above all), which final
    # trimming follows too.
    tiers: tuple[int, ...] = Field((), exclude=True)


_OPENING = re.compile(
    r'^\{(?:\s*"(role|tool|receipt|time_ms)"\s*:\s*(?:"([^"\\]{0,128})"|\d{1,16})\s*,)+'
)
_TEXT_KEY = re.compile(r'^\s*"(?:text|content)"\s*:\s*"')


@dataclass(frozen=True, slots=True)
class Projected:
    """One transcript line as the evidence sees it: role, tool, text and the call's identity."""

    role: str | None
    tool: str | None
    text: str
    time_ms: int | None = None
    receipt: int | None = None


def _number(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _salvage(head: str) -> Projected:
    """Role, tool, receipt and time of a native line cut by the pager, when they open it (as the
    session sources write them), and the text's start without its JSON quoting."""
    opening = _OPENING.match(head[:1024])
    if opening is None:
        return Projected(None, None, head)
    fields = dict(re.findall(r'"(role|tool)"\s*:\s*"([^"\\]{0,128})"', opening.group(0)))
    numbers = dict(re.findall(r'"(receipt|time_ms)"\s*:\s*(\d{1,16})', opening.group(0)))
    rest = head[opening.end() :]
    text = _TEXT_KEY.match(rest)
    body = rest[text.end() :] if text else rest
    # Unescape what can be: the kept text is a prefix of a JSON string, never closed.
    with contextlib.suppress(ValueError):
        body = json.loads('"' + body.rstrip("\\") + '"')
    time_ms, receipt = numbers.get("time_ms"), numbers.get("receipt")
    return Projected(
        fields.get("role"),
        fields.get("tool"),
        body,
        None if time_ms is None else int(time_ms),
        None if receipt is None else int(receipt),
    )


def project_record(line: TranscriptLine) -> Projected:
    """What one transcript line holds."""
    if line.cut:
        # The cut may split a credential; drop the stretch the redaction patterns cannot vouch for.
        found = _salvage(line.text)
        text = found.text
        return Projected(found.role, found.tool, text[: max(0, len(text) - MARGIN)],
                         found.time_ms, found.receipt)  # fmt: skip
    try:
        # Bounded like every other input: deep nesting or a 5,000-digit number is kept as text.
        value = parse_json(line.text, what="transcript line")
    except InputRefused:
        return Projected(None, None, line.text)
    if not isinstance(value, dict):
        return Projected(None, None, canonical_json(value))
    role = value.get("role") if isinstance(value.get("role"), str) else None
    tool = value.get("tool") if isinstance(value.get("tool"), str) else None
    time_ms, receipt = _number(value.get("time_ms")), _number(value.get("receipt"))
    for key in ("text", "content"):
        if isinstance(value.get(key), str):
            return Projected(role, tool, value[key], time_ms, receipt)
    rest = {k: v for k, v in value.items() if k not in ("role", "tool", "receipt", "time_ms")}
    return Projected(role, tool, canonical_json(rest), time_ms, receipt)


def project_line(line: TranscriptLine) -> tuple[str | None, str | None, str]:
    """``(role, tool, text)`` of one transcript line."""
    found = project_record(line)
    return found.role, found.tool, found.text


@dataclass(frozen=True, slots=True)
class TranscriptReading:
    """How a run's transcripts are read, whatever their budget: ``limits`` and ``cancel`` bound
    the paged reads, tool-call records that are one of ``receipts`` are labelled
    ``receipt:<seq>``, each text passes through ``rewrite`` (the paths made
    workspace-relative) before it is counted, and ``verifiers`` names the verifier nodes,
    whose rejections are lessons."""

    limits: PageLimits | None = None
    cancel: Cancellation | None = None
    receipts: Sequence[ToolReceipt] = ()
    rewrite: Callable[[str], str] | None = None
    verifiers: frozenset[str] = frozenset()


def collect_excerpts(
    executions: Sequence[Execution],
    reading: TranscriptReading,
    *,
    budget_bytes: int,
    record_bytes: int,
) -> tuple[Excerpt, ...]:
    """Stream every execution's transcript, in record order, through one TranscriptBudget, as
    ``reading`` says; each record is tiered by :class:`SalienceClassifier`."""
    limits, cancel, rewrite = reading.limits, reading.cancel, reading.rewrite
    budget = TranscriptBudget(budget_bytes, record_bytes)
    labels = ReceiptLabels(reading.receipts)
    tiers = SalienceClassifier()
    unavailable: dict[int, str] = {}
    for index, execution in enumerate(executions):
        if execution.transcript is None:
            continue
        verifier = execution.node_id in reading.verifiers
        retried = execution.attempt > 1 or execution.status != "completed"
        try:
            for page in iter_pages(execution.transcript, limits, cancel):
                for line in page.lines:
                    found = project_record(line)
                    text = found.text if rewrite is None else rewrite(found.text)
                    budget.add(
                        index,
                        number=line.number,
                        role=found.role,
                        tool=found.tool,
                        text=text,
                        original_bytes=line.size,
                        cut_by_pager=line.cut,
                        receipt=labels.label(execution.id, role=found.role, tool=found.tool,
                                             time_ms=found.time_ms, seq=found.receipt),
                        salience=tiers.classify(index, role=found.role, tool=found.tool,
                                                text=text, verifier=verifier, retried=retried),
                    )  # fmt: skip
        except FileNotFoundError:
            unavailable[index] = "transcript file not found"
        except OSError as exc:
            unavailable[index] = f"transcript unreadable ({exc.strerror or exc})"
        except InputRefused as refused:
            unavailable[index] = f"transcript unreadable (it {refused.problem})"
    out: list[Excerpt] = []
    for index, execution in enumerate(executions):
        lane = budget.stats(index)
        if lane is None and index not in unavailable:
            continue
        records, cuts = budget.excerpt(index)
        out.append(
            Excerpt(
                execution=execution.ref,
                records=tuple(records),
                records_total=lane.seen if lane else 0,
                bytes_total=lane.seen_bytes if lane else 0,
                records_dropped=lane.dropped if lane else 0,
                records_cut=cuts,
                unavailable=unavailable.get(index),
                bytes_dropped=lane.dropped_bytes if lane else 0,
                bytes_cut=lane.cut_bytes if lane else 0,
                source_cuts=lane.source_cuts if lane else 0,
                source_cut_bytes=lane.source_cut_bytes if lane else 0,
                tiers=lane.kept_tiers if lane else (),
            )
        )
    return tuple(out)
