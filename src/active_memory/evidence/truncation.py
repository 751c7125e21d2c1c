"""The truncation report: every cut the builder made, grouped by section and reason.

The report's JSON form (``model_dump()``) is what the evidence payload carries as
``truncation``: ``evidence_truncated``, ``budget_bytes`` and the cuts, each without the zero
counts and empty lists that say nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from active_memory.models.base import Model

__all__ = ["Cut", "CutLog", "TruncationReport"]

_REFS_SHOWN = 16


def _says_nothing(value: object) -> bool:
    return not value


class Cut(Model):
    """``count`` items of ``section`` were dropped or shortened, ``bytes`` removed, and why.

    ``refs`` names up to 16 affected executions (``exec:<id>``); ``more_refs`` counts the rest.
    """

    section: str
    reason: str
    count: int
    bytes: int = Field(0, exclude_if=_says_nothing)
    refs: tuple[str, ...] = Field((), exclude_if=_says_nothing)
    more_refs: int = Field(0, exclude_if=_says_nothing)


class TruncationReport(Model):
    """What the builder cut to keep the payload within ``budget_bytes``; ``size_bytes`` is the
    final payload's size (not part of the JSON form: the payload cannot contain its own size)."""

    budget_bytes: int
    size_bytes: int = Field(exclude=True)
    cuts: tuple[Cut, ...] = ()

    @model_serializer(mode="wrap")
    def _flagged(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        fields: dict[str, Any] = handler(self)
        return {"evidence_truncated": self.truncated, **fields}

    @property
    def truncated(self) -> bool:
        return bool(self.cuts)


@dataclass(slots=True)
class _Entry:
    count: int = 0
    bytes: int = 0
    refs: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)


class CutLog:
    """Accumulates cuts; one entry per (section, reason) keeps the report itself bounded."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], _Entry] = {}

    def add(
        self, section: str, reason: str, *, count: int = 1, size: int = 0, ref: str | None = None
    ) -> None:
        if count <= 0:
            return
        entry = self._entries.setdefault((section, reason), _Entry())
        entry.count += count
        entry.bytes += max(0, size)
        if ref is not None and ref not in entry.seen:
            entry.seen.add(ref)
            entry.refs.append(ref)

    def __bool__(self) -> bool:
        return bool(self._entries)

    def cuts(self) -> tuple[Cut, ...]:
        return tuple(
            Cut(
                section=section,
                reason=reason,
                count=entry.count,
                bytes=entry.bytes,
                refs=tuple(entry.refs[:_REFS_SHOWN]),
                more_refs=max(0, len(entry.refs) - _REFS_SHOWN),
            )
            for (section, reason), entry in self._entries.items()
        )

    def report(self, budget_bytes: int, size_bytes: int = 0) -> TruncationReport:
        return TruncationReport(budget_bytes=budget_bytes, size_bytes=size_bytes, cuts=self.cuts())
