"""Results of the store's admin operations, and its capacity limits.

The results are models on :class:`~active_memory.models.base.Model`: their JSON form
(``model_dump(mode="json")``) is what ``lessons`` and ``store`` print with ``--json`` and what
an export line of a tombstone holds, derived fields (``erased``, ``ok``, ``retired``) included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from pydantic import ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from active_memory.models.base import Model, Verdict
from active_memory.models.lessons import LessonDraft

__all__ = [
    "DEFAULT_LIMITS",
    "HistoryEntry",
    "HistoryOp",
    "HistoryRevision",
    "ImportReport",
    "PurgeReceipt",
    "StoreCheck",
    "StoreLimits",
    "Tombstone",
]

HistoryOp: TypeAlias = Literal["upsert", "retire", "revert", "purge"]


@dataclass(frozen=True, slots=True)
class StoreLimits:
    """Capacity of one store. A batch that would cross a limit fails whole, naming the limit."""

    max_live: int = 10_000
    max_rows: int = 100_000  # live lessons plus tombstones
    max_total_bytes: int = 64 * 1024 * 1024  # card + evidence JSON of every record
    max_body_bytes: int = 8 * 1024  # one card's JSON


DEFAULT_LIMITS = StoreLimits()


class HistoryRevision(Model):
    """What every revision of a lesson records, before its content: the fields a
    :class:`HistoryEntry` shares with its wire form (``store.wire.HistoryEntryWire``)."""

    id: str
    revision: int
    op: HistoryOp
    generation: int
    run_id: str
    time: str


class HistoryEntry(HistoryRevision):
    """One revision of a lesson. ``draft`` is None for a retirement, a purge marker, or content
    erased by ``purge``; ``source_revision`` is the revision a ``revert`` copied. The JSON form
    names the draft ``lesson`` and adds ``erased``."""

    model_config = ConfigDict(serialize_by_alias=True)

    draft: LessonDraft | None = Field(serialization_alias="lesson")
    source_revision: int | None = None

    @model_serializer(mode="wrap")
    def _with_erased(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out: dict[str, Any] = handler(self)
        out["erased"] = self.erased
        return out

    @property
    def erased(self) -> bool:
        return self.op in ("upsert", "revert") and self.draft is None


class Tombstone(Model):
    """A retired id: only its revision and kind remain (the JSON form adds ``retired``)."""

    id: str
    revision: int
    kind: str

    @model_serializer(mode="wrap")
    def _retired(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out: dict[str, Any] = handler(self)
        out["retired"] = True
        return out


class StoreCheck(Verdict):
    """``check()``: SQLite's integrity verdict plus quick counts (the JSON form adds ``ok``)."""

    path: str
    schema_version: str
    migrations: int
    generation: int
    live: int
    tombstones: int
    history_rows: int
    content_bytes: int
    file_bytes: int


class ImportReport(Model):
    """What an import did; ``generation`` is unchanged when every line was already present."""

    generation: int
    created: tuple[str, ...] = ()
    replaced: tuple[str, ...] = ()
    retired: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()

    @property
    def changed(self) -> int:
        return len(self.created) + len(self.replaced) + len(self.retired)


class PurgeReceipt(Model):
    """A purge: the tombstone's new revision, how many past revisions lost their content, and
    whether the freed bytes also left the WAL (False while another connection held it open)."""

    id: str
    revision: int
    generation: int
    erased_revisions: int
    scrubbed: bool
