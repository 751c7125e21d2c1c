"""The memory service's wire format, shared by the server and :class:`RemoteBackend`.

Every body is JSON validated once, at the edge, by these models (unknown fields refused). A
request never names a tenant, and its ``repository`` (when given) only has to agree with the
credential's: the scope is the credential's (``store/access.py``). Errors travel as
:class:`ErrorAnswer` with a stable ``error`` code; ``RemoteBackend`` raises the matching
exception of the tree for it.

========  ==============  =============================================================
status    ``error``       exception
========  ==============  =============================================================
400       bad_request     StoreError (a body that is not valid JSON of the right shape)
401       unauthorized    StoreUnavailable (missing, wrong, revoked or expired credential)
403       out_of_scope    ScopeRefused
404       not_found       LessonNotFound (LessonRetired: ``retired_at`` is set)
408       timeout         StoreError (the request did not arrive in time)
409       conflict        RevisionConflict, with ``mismatches``
412       fenced          PublicationFenced (the deadline passed before dispatch)
413       too_large       PublicationError (a body or a publication over the service's limits)
422       refused         PublicationError (malformed or over capacity)
422       screened        ScreenRefused, with ``screened``: each refused draft's id and codes
429       rate_limited    StoreError (the token is over its request or byte rate; ``Retry-After``)
503       unavailable     StoreError / SnapshotError (the store failed, or a write was stopped
                          under the lock; nothing committed)
========  ==============  =============================================================
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from pydantic import Field

from active_memory.models.base import Model
from active_memory.models.changes import Publication
from active_memory.models.fields import OneLine, RepositoryKey
from active_memory.models.ids import LessonId
from active_memory.models.lessons import Lesson, LessonDraft
from active_memory.store.results import HistoryEntry, HistoryRevision

__all__ = [
    "API_PREFIX",
    "SCREENING_CODE_PATTERN",
    "ErrorAnswer",
    "ErrorCode",
    "GenerationAnswer",
    "HistoryAnswer",
    "HistoryBody",
    "HistoryEntryWire",
    "LessonsAnswer",
    "MismatchWire",
    "PublishBody",
    "PurgeBody",
    "ReceiptAnswer",
    "RevertBody",
    "ScreenedWire",
    "SnapshotAnswer",
    "SnapshotBody",
    "StoredRow",
]

API_PREFIX = "/v1"

ErrorCode: TypeAlias = Literal[
    "bad_request",
    "unauthorized",
    "out_of_scope",
    "not_found",
    "timeout",
    "rate_limited",
    "conflict",
    "fenced",
    "too_large",
    "refused",
    "screened",
    "unavailable",
]
RunId = Annotated[str, OneLine(200)]
GraphHash = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class SnapshotBody(Model):
    run_id: RunId
    repository: RepositoryKey | None = None
    graph_hash: GraphHash | None = None
    include_repository: bool = True
    include_graph: bool = True


# A live row as stored: id, revision, card JSON, evidence JSON, kind, repository, graph hash,
# node id and the writer's checksum (``store/checked_rows.py``). The client verifies each row
# and decodes (validates) its lesson on first read, as a local store's snapshot does.
StoredRow = tuple[str, int, str, str, str, str | None, str | None, str | None, str]


class SnapshotAnswer(Model):
    generation: int
    rows: tuple[StoredRow, ...]


class PublishBody(Model):
    """``deadline_s``: seconds left of the run's deadline when the request was sent; the
    service fences the write once they have passed on its own clock."""

    publication: Publication
    deadline_s: Annotated[float, Field(ge=0, le=86_400)] | None = None


class ReceiptAnswer(Model):
    generation: int
    revisions: dict[str, int]
    retired: tuple[str, ...] = ()


class GenerationAnswer(Model):
    generation: int


class HistoryBody(Model):
    id: LessonId


class HistoryEntryWire(HistoryRevision):
    """A :class:`HistoryEntry` in its JSON form (``lesson`` for the draft, ``erased`` added)."""

    lesson: LessonDraft | None
    source_revision: int | None = None
    erased: bool = False

    @classmethod
    def of(cls, entry: HistoryEntry) -> HistoryEntryWire:
        return cls.parse(entry.model_dump(mode="json"))

    def entry(self) -> HistoryEntry:
        return HistoryEntry(
            id=self.id,
            revision=self.revision,
            op=self.op,
            generation=self.generation,
            run_id=self.run_id,
            time=self.time,
            draft=self.lesson,
            source_revision=self.source_revision,
        )


class HistoryAnswer(Model):
    entries: tuple[HistoryEntryWire, ...]


class LessonsAnswer(Model):
    """Every live lesson the credential's scope reaches (``GET /lessons``), sorted by id: what
    a ledger or a listing needs without a run identity."""

    lessons: tuple[Lesson, ...]


class RevertBody(Model):
    id: LessonId
    to_revision: Annotated[int, Field(ge=1)]
    expected_revision: Annotated[int, Field(ge=0)] | None = None
    run_id: RunId = "remote-admin"


class PurgeBody(Model):
    id: LessonId
    run_id: RunId = "remote-admin"


class MismatchWire(Model):
    id: str
    expected: int
    found: int
    tombstoned: bool = False


# A screening code as admission reports it (``secret:github_token``): a fixed vocabulary, so a
# client can show it without echoing anything the refused draft said. A test holds every code
# the screens can report to this pattern (a code outside it would fail the service's answer).
SCREENING_CODE_PATTERN = r"^[a-z_]+:[a-z0-9_.-]+$"
ScreeningCode = Annotated[str, Field(pattern=SCREENING_CODE_PATTERN, max_length=80)]


class ScreenedWire(Model):
    id: str
    codes: tuple[ScreeningCode, ...]


class ErrorAnswer(Model):
    error: ErrorCode
    message: str
    mismatches: tuple[MismatchWire, ...] = ()
    screened: tuple[ScreenedWire, ...] = ()
    retired_at: int | None = None
    subject: str | None = None  # out_of_scope: what was outside
    scope: str | None = None  # out_of_scope: the credential's scope
