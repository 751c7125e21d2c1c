"""The truncation report: every cut the builder made, grouped by section and reason."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Cut", "CutLog", "TruncationReport"]

_REFS_SHOWN = 16


@dataclass(frozen=True, slots=True)
class Cut:
    """``count`` items of ``section`` were dropped or shortened, ``bytes`` removed, and why.

    ``refs`` names up to 16 affected executions (``exec:<id>``); ``more_refs`` counts the rest.
    """

    section: str
    reason: str
    count: int
    bytes: int = 0
    refs: tuple[str, ...] = ()
    more_refs: int = 0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"section": self.section, "reason": self.reason, "count": self.count}
        if self.bytes:
            out["bytes"] = self.bytes
        if self.refs:
            out["refs"] = list(self.refs)
        if self.more_refs:
            out["more_refs"] = self.more_refs
        return out


@dataclass(frozen=True, slots=True)
class TruncationReport:
    budget_bytes: int
    size_bytes: int
    cuts: tuple[Cut, ...] = ()

    @property
    def truncated(self) -> bool:
        return bool(self.cuts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "evidence_truncated": self.truncated,
            "budget_bytes": self.budget_bytes,
            "cuts": [cut.to_dict() for cut in self.cuts],
        }


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

    def to_dict(self, budget_bytes: int) -> dict[str, Any]:
        return TruncationReport(budget_bytes, 0, self.cuts()).to_dict()
