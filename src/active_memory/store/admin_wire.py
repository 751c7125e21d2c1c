"""The memory service's admin routes on the wire, beside the snapshot and publication ones
(``store/wire.py``, whose error table they share).

===========================  ===============  ==================================================
route                        body             answer
===========================  ===============  ==================================================
``POST /v1/lesson``          LessonIdBody     LessonAnswer (the live lesson)
``POST /v1/histories``       HistoriesBody    HistoriesAnswer (a page of every lesson's history)
``GET /v1/retired``                           RetiredAnswer (tombstones the token reaches)
``POST /v1/lessons/page``    LessonPageBody   LessonPageAnswer (a browser page of live lessons)
``POST /v1/retired/page``    RetiredPageBody  RetiredPageAnswer (a browser page of retired ids)
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

A page of lessons or of retired ids is ``EngineStore.lesson_page`` or ``retired_page`` run by
the service on its store, confined in SQL to the token's scope (``store/listing.py``): a lesson
the token does not reach is neither listed nor counted. A page holds at most
:data:`MAX_PAGE_ROWS` rows.

A quarantined proposal that is not held answers 404 ``not_found`` with ``subject`` set to
:data:`HELD_SUBJECT`, which the client raises as QuarantineNotFound.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields
from itertools import groupby
from operator import attrgetter
from typing import Annotated, Literal

from pydantic import Field

from active_memory.models.base import Model
from active_memory.models.fields import OneLine
from active_memory.models.ids import LessonId
from active_memory.models.lessons import Lesson, LessonDraft, Title
from active_memory.store.engine import REVIEW_RUN
from active_memory.store.listing import (
    LessonListing,
    LessonSort,
    ListedLesson,
    RetiredLesson,
    RetiredListing,
)
from active_memory.store.quarantine_rows import QuarantineEntry
from active_memory.store.results import HistoryEntry, Tombstone
from active_memory.store.wire import GraphHash, HistoryEntryWire, RunId

__all__ = [
    "HELD_SUBJECT",
    "HISTORY_PAGE_BYTES",
    "HISTORY_PAGE_LESSONS",
    "MAX_PAGE_ROWS",
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
    "LessonPageAnswer",
    "LessonPageBody",
    "ListedWire",
    "RejectAnswer",
    "RetiredAnswer",
    "RetiredPageAnswer",
    "RetiredPageBody",
]

HELD_SUBJECT = "quarantined proposal"
# Lessons per page of every lesson's history: a page of typical histories is a few hundred KB.
HISTORY_PAGE_LESSONS = 200
# Bytes of entries per page: far below the client's answer limit (96 MiB by default), however
# long the histories of 200 lessons are.
HISTORY_PAGE_BYTES = 4 * 1024 * 1024
# Rows a page of lessons or of retired ids may hold (``lessons list --search`` asks for 1,000).
MAX_PAGE_ROWS = 1000
# A filter or a search as the browser's address or the CLI gave it: never parsed, only compared
# (longer than the request line the browser's server accepts).
_Filter = Annotated[str, Field(max_length=16 * 1024)]
_Count = Annotated[int, Field(ge=0)]
_PageNumber = Annotated[int, Field(ge=1)]
_Scoped = Annotated[str, OneLine(1024)]
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

    # The wire model has the entry's fields under the same names, so each converts field by field.
    @classmethod
    def of(cls, entry: QuarantineEntry) -> HeldWire:
        return cls(**{field.name: getattr(entry, field.name) for field in fields(entry)})

    def entry(self) -> QuarantineEntry:
        return QuarantineEntry(**dict(self))


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


class LessonPageBody(Model):
    """What ``EngineStore.lesson_page`` takes: filters, a search, a page and an order."""

    repository: _Filter | None = None
    graph: _Filter | None = None
    query: _Filter | None = None
    page: _PageNumber = 1
    per_page: Annotated[int, Field(ge=1, le=MAX_PAGE_ROWS)] = 50
    sort: LessonSort = "oldest"


class ListedWire(Model):
    """A :class:`ListedLesson` on the wire."""

    id: LessonId
    revision: _PageNumber
    title: Title
    kind: Literal["repository", "graph"]
    repository: _Scoped | None
    graph_hash: GraphHash | None
    node_id: _Scoped | None

    @classmethod
    def of(cls, row: ListedLesson) -> ListedWire:
        return cls(id=row.id, revision=row.revision, title=row.title, kind=row.kind,
                   repository=row.repository, graph_hash=row.graph_hash,
                   node_id=row.node_id)  # fmt: skip

    def listed(self) -> ListedLesson:
        return ListedLesson(self.id, self.revision, self.title, self.kind, self.repository,
                            self.graph_hash, self.node_id)  # fmt: skip


class LessonPageAnswer(Model):
    """A :class:`LessonListing` on the wire: the page's lessons and the counts of what the
    token reaches."""

    lessons: Annotated[tuple[ListedWire, ...], Field(max_length=MAX_PAGE_ROWS)]
    page: _PageNumber
    pages: _PageNumber
    matching: _Count
    repositories: dict[_Scoped, _Count]
    graphs: dict[GraphHash, _Count]
    note: Annotated[str, OneLine(1000)] | None = None

    @classmethod
    def of(cls, listing: LessonListing) -> LessonPageAnswer:
        return cls(lessons=tuple(ListedWire.of(row) for row in listing.lessons),
                   page=listing.page, pages=listing.pages, matching=listing.matching,
                   repositories=listing.repositories, graphs=listing.graphs,
                   note=listing.note)  # fmt: skip

    def listing(self) -> LessonListing:
        return LessonListing(tuple(row.listed() for row in self.lessons), self.page, self.pages,
                             self.matching, dict(self.repositories), dict(self.graphs),
                             note=self.note)  # fmt: skip


class RetiredPageBody(Model):
    page: _PageNumber = 1
    per_page: Annotated[int, Field(ge=1, le=MAX_PAGE_ROWS)] = 50


class RetiredPageAnswer(Model):
    """A :class:`RetiredListing` on the wire, each row as (id, revision, kind, title: null once
    purged)."""

    rows: Annotated[
        tuple[tuple[LessonId, _PageNumber, Literal["repository", "graph"], Title | None], ...],
        Field(max_length=MAX_PAGE_ROWS),
    ]
    page: _PageNumber
    pages: _PageNumber
    matching: _Count

    @classmethod
    def of(cls, listing: RetiredListing) -> RetiredPageAnswer:
        rows = tuple((r.id, r.revision, r.kind, r.title) for r in listing.rows)
        return cls(rows=rows, page=listing.page, pages=listing.pages, matching=listing.matching)

    def listing(self) -> RetiredListing:
        rows = tuple(RetiredLesson(i, r, k, t) for i, r, k, t in self.rows)
        return RetiredListing(rows, self.page, self.pages, self.matching)
