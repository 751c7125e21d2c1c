"""Run logs read across runs: counts by stage, code, specialist or prompt version.

:func:`summarize` folds the records of one or more run logs (see :mod:`active_memory.runlog`)
into rows keyed by what a maintainer asks about: which admission stage refuses most, which
rejection codes, how each specialist fares, and how each prompt version (specialist and prompt
sha256) did. Pure over the records it is given; torn lines were already skipped and counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from active_memory.models.base import dataclass_json
from active_memory.runlog import LogValue

__all__ = ["GROUPINGS", "Grouping", "Row", "Summary", "summarize"]

Grouping: TypeAlias = Literal["stage", "code", "specialist", "prompt"]
GROUPINGS: tuple[Grouping, ...] = ("stage", "code", "specialist", "prompt")
Record = Mapping[str, LogValue]


@dataclass
class Row:
    """One group: ``rejections`` for stage and code; the specialist columns for the others
    (``cache_read_tokens`` is the part of ``input_tokens`` a prompt cache served)."""

    key: str
    rejections: int = 0
    sessions: int = 0
    accepted: int = 0
    rejected: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    duration_ms: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, object]:
        return dataclass_json(self)


@dataclass(frozen=True)
class Summary:
    by: Grouping
    records: int
    torn: int
    runs: int
    postmortems: Mapping[str, int]
    rows: tuple[Row, ...]

    def to_dict(self) -> dict[str, object]:
        # Each row through its own to_dict, so its counts come out sorted as a row's do.
        return {**dataclass_json(self), "rows": [row.to_dict() for row in self.rows]}


def _int(value: LogValue | None) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _text(value: LogValue | None, missing: str = "-") -> str:
    return value if isinstance(value, str) and value else missing


def _key(record: Record, by: Grouping) -> str | None:
    event = record.get("event")
    if by in ("stage", "code"):
        if event != "rejection":
            return None
        stage = _text(record.get("stage"))
        return stage if by == "stage" else f"{stage}:{_text(record.get('code'))}"
    if event != "postmortem_specialist":
        return None
    role = _text(record.get("role"))
    if by == "specialist":
        return role
    return f"{role} {_text(record.get('prompt_sha256'), 'unknown')[:16]}"


def _add(row: Row, record: Record) -> None:
    if record.get("event") == "rejection":
        row.rejections += 1
        return
    row.sessions += 1
    row.accepted += _int(record.get("accepted")) + sum(
        _int(record.get(name)) for name in ("kept", "adapted", "retired", "deferred")
    )
    row.rejected += _int(record.get("rejected"))
    row.input_tokens += _int(record.get("input_tokens"))
    row.output_tokens += _int(record.get("output_tokens"))
    row.cache_read_tokens += _int(record.get("cache_read_tokens"))
    row.duration_ms += _int(record.get("duration_ms"))
    row.statuses[_text(record.get("status"))] += 1
    error = record.get("error_code")
    if isinstance(error, str) and error:
        row.errors[error] += 1


def summarize(
    records: Iterable[Record], *, by: Grouping = "stage", since_ms: int | None = None, torn: int = 0
) -> Summary:
    """Fold ``records`` (optionally only those at or after ``since_ms``) grouped ``by``."""
    kept = [r for r in records if since_ms is None or _int(r.get("time_ms")) >= since_ms]
    rows: dict[str, Row] = {}
    postmortems: Counter[str] = Counter()
    runs: set[str] = set()
    for record in kept:
        run_id = record.get("run_id")
        if isinstance(run_id, str):
            runs.add(run_id)
        if record.get("event") == "postmortem":
            postmortems[_text(record.get("status"))] += 1
        key = _key(record, by)
        if key is not None:
            _add(rows.setdefault(key, Row(key)), record)
    ordered = sorted(rows.values(), key=lambda row: (-(row.rejections or row.sessions), row.key))
    return Summary(
        by=by,
        records=len(kept),
        torn=torn,
        runs=len(runs),
        postmortems=dict(sorted(postmortems.items())),
        rows=tuple(ordered),
    )
