"""Transcript excerpts per execution: paged reads into one fixed transcript budget.

Native transcript lines are JSON objects ``{"role", "text", "tool"?, "time_ms"?}``; any other
JSON is kept as its compact encoding, and a line that is not JSON is kept as text. Memory stays
bounded by the budget plus one page, however long the history.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import Field

from active_memory.bounded_input import parse_json
from active_memory.errors import InputRefused
from active_memory.evidence.budget import MARGIN, TranscriptBudget
from active_memory.evidence.pager import Cancellation, PageLimits, TranscriptLine, iter_pages
from active_memory.models.base import Model
from active_memory.models.runs import Execution, canonical_json

__all__ = ["Excerpt", "collect_excerpts", "project_line"]


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


_OPENING = re.compile(r'^\{(?:\s*"(role|tool|time_ms)"\s*:\s*(?:"([^"\\]{0,128})"|\d{1,16})\s*,)+')
_TEXT_KEY = re.compile(r'^\s*"(?:text|content)"\s*:\s*"')


def _salvage(head: str) -> tuple[str | None, str | None, str]:
    """Role and tool of a native line cut by the pager, when they open it (as the session
    sources write them), and the text's start without its JSON quoting."""
    opening = _OPENING.match(head[:1024])
    if opening is None:
        return None, None, head
    fields = dict(re.findall(r'"(role|tool)"\s*:\s*"([^"\\]{0,128})"', opening.group(0)))
    rest = head[opening.end() :]
    text = _TEXT_KEY.match(rest)
    body = rest[text.end() :] if text else rest
    # Unescape what can be: the kept text is a prefix of a JSON string, never closed.
    with contextlib.suppress(ValueError):
        body = json.loads('"' + body.rstrip("\\") + '"')
    return fields.get("role"), fields.get("tool"), body


def project_line(line: TranscriptLine) -> tuple[str | None, str | None, str]:
    """``(role, tool, text)`` of one transcript line."""
    if line.cut:
        # The cut may split a credential; drop the stretch the redaction patterns cannot vouch for.
        role, tool, text = _salvage(line.text)
        return role, tool, text[: max(0, len(text) - MARGIN)]
    try:
        # Bounded like every other input: deep nesting or a 5,000-digit number is kept as text.
        value = parse_json(line.text, what="transcript line")
    except InputRefused:
        return None, None, line.text
    if not isinstance(value, dict):
        return None, None, canonical_json(value)
    role = value.get("role") if isinstance(value.get("role"), str) else None
    tool = value.get("tool") if isinstance(value.get("tool"), str) else None
    for key in ("text", "content"):
        if isinstance(value.get(key), str):
            return role, tool, value[key]
    rest = {k: v for k, v in value.items() if k not in ("role", "tool", "time_ms")}
    return role, tool, canonical_json(rest)


def collect_excerpts(
    executions: Sequence[Execution],
    *,
    budget_bytes: int,
    record_bytes: int,
    limits: PageLimits | None = None,
    cancel: Cancellation | None = None,
) -> tuple[Excerpt, ...]:
    """Stream every execution's transcript, in record order, through one TranscriptBudget."""
    budget = TranscriptBudget(budget_bytes, record_bytes)
    unavailable: dict[int, str] = {}
    for index, execution in enumerate(executions):
        if execution.transcript is None:
            continue
        try:
            for page in iter_pages(execution.transcript, limits, cancel):
                for line in page.lines:
                    role, tool, text = project_line(line)
                    budget.add(
                        index,
                        number=line.number,
                        role=role,
                        tool=tool,
                        text=text,
                        original_bytes=line.size,
                        cut_by_pager=line.cut,
                    )
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
            )
        )
    return tuple(out)
