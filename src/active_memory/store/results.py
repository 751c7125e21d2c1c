"""Plain results of the store's admin operations, and its capacity limits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from active_memory.models.lessons import LessonDraft

__all__ = [
    "DEFAULT_LIMITS",
    "HistoryEntry",
    "HistoryOp",
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


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One revision of a lesson. ``draft`` is None for a retirement, a purge marker, or content
    erased by ``purge``; ``source_revision`` is the revision a ``revert`` copied."""

    id: str
    revision: int
    op: HistoryOp
    generation: int
    run_id: str
    time: str
    draft: LessonDraft | None
    source_revision: int | None = None

    @property
    def erased(self) -> bool:
        return self.op in ("upsert", "revert") and self.draft is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "revision": self.revision,
            "op": self.op,
            "generation": self.generation,
            "run_id": self.run_id,
            "time": self.time,
            "source_revision": self.source_revision,
            "erased": self.erased,
            "lesson": None if self.draft is None else self.draft.model_dump(mode="json"),
        }


@dataclass(frozen=True, slots=True)
class Tombstone:
    """A retired id: only its revision and kind remain."""

    id: str
    revision: int
    kind: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "revision": self.revision, "retired": True, "kind": self.kind}


@dataclass(frozen=True, slots=True)
class StoreCheck:
    """``check()``: SQLite's integrity verdict plus quick counts."""

    path: str
    schema_version: str
    migrations: int
    generation: int
    live: int
    tombstones: int
    history_rows: int
    content_bytes: int
    file_bytes: int
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "ok": self.ok,
            "problems": list(self.problems),
            "schema_version": self.schema_version,
            "migrations": self.migrations,
            "generation": self.generation,
            "live": self.live,
            "tombstones": self.tombstones,
            "history_rows": self.history_rows,
            "content_bytes": self.content_bytes,
            "file_bytes": self.file_bytes,
        }


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What an import did; ``generation`` is unchanged when every line was already present."""

    generation: int
    created: tuple[str, ...] = ()
    replaced: tuple[str, ...] = ()
    retired: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()

    @property
    def changed(self) -> int:
        return len(self.created) + len(self.replaced) + len(self.retired)

    def to_dict(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "created": list(self.created),
            "replaced": list(self.replaced),
            "retired": list(self.retired),
            "unchanged": list(self.unchanged),
        }


@dataclass(frozen=True, slots=True)
class PurgeReceipt:
    """A purge: the tombstone's new revision, how many past revisions lost their content, and
    whether the freed bytes also left the WAL (False while another connection held it open)."""

    id: str
    revision: int
    generation: int
    erased_revisions: int
    scrubbed: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "revision": self.revision,
            "generation": self.generation,
            "erased_revisions": self.erased_revisions,
            "scrubbed": self.scrubbed,
        }
