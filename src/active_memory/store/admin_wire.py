"""The memory service's admin routes on the wire, beside the snapshot and publication ones
(``store/wire.py``, whose error table they share).

===========================  ===============  ==================================================
route                        body             answer
===========================  ===============  ==================================================
``POST /v1/lesson``          LessonIdBody     LessonAnswer (the live lesson)
``POST /v1/histories``       HistoriesBody    HistoriesAnswer (a page of every lesson's history)
``GET /v1/retired``                           RetiredAnswer (tombstones the token reaches)
``GET /v1/export``                            ExportAnswer (the lines of ``lessons export``)
``POST /v1/import``          ImportBody       ImportReport
``GET /v1/review``                            HeldAnswer (held proposals the token reaches)
``POST /v1/review/show``     LessonIdBody     HeldWire
``POST /v1/review/hold``     HoldBody         HeldCountAnswer
``POST /v1/review/approve``  ApproveBody      ReceiptAnswer
``POST /v1/review/reject``   LessonIdBody     RejectAnswer
===========================  ===============  ==================================================

Every lesson's history comes in pages of at most :data:`HISTORY_PAGE_LESSONS` whole lessons and
:data:`HISTORY_PAGE_BYTES` of entries (a lesson whose history alone is larger comes alone), in
id order, each holding only lessons whose every revision the token reaches (the lessons
``POST /v1/history`` would not refuse); the client asks again after ``next`` until it is null.
Neither a page nor its ``next`` names a lesson outside the token's scope.

A quarantined proposal that is not held answers 404 ``not_found`` with ``subject`` set to
:data:`HELD_SUBJECT`, which the client raises as QuarantineNotFound.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import groupby
from operator import attrgetter
from typing import Annotated

from pydantic import Field

from active_memory.models.base import Model
from active_memory.models.fields import OneLine
from active_memory.models.ids import LessonId
from active_memory.models.lessons import Lesson, LessonDraft
from active_memory.store.engine import REVIEW_RUN
from active_memory.store.quarantine_rows import QuarantineEntry
from active_memory.store.results import HistoryEntry, Tombstone
from active_memory.store.wire import HistoryEntryWire, RunId

__all__ = [
    "HELD_SUBJECT",
    "HISTORY_PAGE_BYTES",
    "HISTORY_PAGE_LESSONS",
    "ApproveBody",
    "ExportAnswer",
    "HeldAnswer",
    "HeldCountAnswer",
    "HeldWire",
    "HistoriesAnswer",
    "HistoriesBody",
    "HoldBody",
    "ImportBody",
    "LessonAnswer",
    "LessonIdBody",
    "RejectAnswer",
    "RetiredAnswer",
]

HELD_SUBJECT = "quarantined proposal"
# Lessons per page of every lesson's history: a page of typical histories is a few hundred KB.
HISTORY_PAGE_LESSONS = 200
# Bytes of entries per page: far below the client's answer limit (96 MiB by default), however
# long the histories of 200 lessons are.
HISTORY_PAGE_BYTES = 4 * 1024 * 1024
# A held proposal's signals are `stage:code` tokens, its role a specialist's name.
_Token = Annotated[str, OneLine(200)]


class LessonIdBody(Model):
    id: LessonId


class LessonAnswer(Model):
    lesson: Lesson


class HistoriesBody(Model):
    """The page past lesson ``after`` (the first page without it)."""

    after: LessonId | None = None


class HistoriesAnswer(Model):
    """A page's revisions, ordered by id then revision; ``next`` is where the next page starts
    (null: none is left)."""

    entries: tuple[HistoryEntryWire, ...]
    next: LessonId | None

    @classmethod
    def page(
        cls, entries: Iterable[HistoryEntry], last: str | None, *, budget: int
    ) -> HistoriesAnswer:
        """The page of ``entries`` (ordered by id, each lesson whole) read up to ``last``:
        whole lessons are added while their entries' JSON stays within ``budget`` bytes, the
        first lesson always; when one is left out, the next page starts after the last kept."""
        kept: list[HistoryEntryWire] = []
        size = 0
        for _, revisions in groupby(entries, key=attrgetter("id")):
            lesson = [HistoryEntryWire.of(entry) for entry in revisions]
            weight = sum(len(wire.model_dump_json().encode("utf-8")) for wire in lesson)
            if kept and size + weight > budget:
                return cls(entries=tuple(kept), next=kept[-1].id)
            kept.extend(lesson)
            size += weight
        return cls(entries=tuple(kept), next=last)


class RetiredAnswer(Model):
    """Each tombstone as (id, revision, kind)."""

    tombstones: tuple[tuple[str, int, str], ...]

    @classmethod
    def of(cls, tombstones: tuple[Tombstone, ...]) -> RetiredAnswer:
        return cls(tombstones=tuple((t.id, t.revision, t.kind) for t in tombstones))

    def items(self) -> tuple[Tombstone, ...]:
        return tuple(Tombstone(id=i, revision=r, kind=k) for i, r, k in self.tombstones)


class ExportAnswer(Model):
    lines: tuple[str, ...]


class ImportBody(Model):
    lines: tuple[str, ...]
    replace: bool = False
    run_id: RunId = "import"


class HeldWire(Model):
    """A :class:`QuarantineEntry` on the wire."""

    id: LessonId
    run_id: RunId
    role: _Token
    signals: Annotated[tuple[_Token, ...], Field(max_length=64)]
    draft: LessonDraft
    time: Annotated[str, OneLine(40, allow_empty=True)] = ""

    @classmethod
    def of(cls, entry: QuarantineEntry) -> HeldWire:
        return cls(
            id=entry.id,
            run_id=entry.run_id,
            role=entry.role,
            signals=entry.signals,
            draft=entry.draft,
            time=entry.time,
        )

    def entry(self) -> QuarantineEntry:
        return QuarantineEntry(
            id=self.id,
            run_id=self.run_id,
            role=self.role,
            signals=self.signals,
            draft=self.draft,
            time=self.time,
        )


class HeldAnswer(Model):
    entries: tuple[HeldWire, ...]


class HoldBody(Model):
    entries: Annotated[tuple[HeldWire, ...], Field(min_length=1, max_length=1000)]


class HeldCountAnswer(Model):
    held: int


class ApproveBody(Model):
    id: LessonId
    run_id: RunId = REVIEW_RUN


class RejectAnswer(Model):
    id: str
    scrubbed: bool
