"""The admin protocol: what ``lessons``, ``lessons review``, the browser and the MCP server ask
of a store, beside the backend protocol's snapshot and publication.

One protocol, three implementations: :class:`~active_memory.store.sqlite.SqliteStore` and
:class:`~active_memory.store.postgres.PostgresStore` serve it from the one SQL engine they share
(:class:`~active_memory.store.engine.EngineStore`), and
:class:`~active_memory.store.remote.RemoteBackend` speaks it to the memory service, which serves
it from its PostgreSQL store confined to the token's scope (``server/admin_routes.py``). A
test holds every implementation to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol, runtime_checkable

from active_memory.models.lessons import Lesson
from active_memory.store.backend import ActiveMemoryBackend, PublicationReceipt
from active_memory.store.listing import LessonListing, LessonSort, RetiredListing
from active_memory.store.quarantine_rows import QuarantineEntry
from active_memory.store.results import HistoryEntry, ImportReport, PurgeReceipt, Tombstone

__all__ = ["AdminBackend"]


@runtime_checkable
class AdminBackend(ActiveMemoryBackend, Protocol):
    """Snapshot and publication, and every admin operation; errors as the stores raise them
    (LessonNotFound, LessonRetired, RevisionConflict, ImportConflict, QuarantineNotFound,
    PublicationError, ScopeRefused through the service)."""

    def list_lessons(
        self,
        repository: str | None = None,
        graph_hash: str | None = None,
        node_id: str | None = None,
    ) -> tuple[Lesson, ...]: ...

    def lesson_page(
        self,
        *,
        repository: str | None = None,
        graph: str | None = None,
        query: str | None = None,
        page: int = 1,
        per_page: int = 50,
        sort: LessonSort = "oldest",
    ) -> LessonListing:
        """One page of the live lessons (``page`` clamped to those there are), filtered,
        searched and counted by the store in SQL (``store/listing.py``); through the service,
        over the token's scope alone. The browser's list page and ``lessons list --search``."""
        ...

    def retired_page(self, *, page: int = 1, per_page: int = 50) -> RetiredListing:
        """One page of the retired ids, newest first, with their last stored titles."""
        ...

    def list_retired(self) -> tuple[Tombstone, ...]: ...

    def get(self, lesson_id: str) -> Lesson: ...

    def history(self, lesson_id: str) -> tuple[HistoryEntry, ...]: ...

    def histories(self) -> Iterator[HistoryEntry]:
        """Every lesson's revisions (the lessons :meth:`history` would not refuse), ordered by
        id then revision: one query on a store, a page of whole lessons per request through
        the service; each entry decoded as the caller reaches it."""
        ...

    def revert(
        self, lesson_id: str, to_revision: int, *, expected_revision: int | None = None
    ) -> PublicationReceipt: ...

    def purge(self, lesson_id: str) -> PurgeReceipt: ...

    def export(self) -> Iterator[str]: ...

    def import_lines(
        self, lines: Iterable[str], *, replace: bool = False, run_id: str = "import"
    ) -> ImportReport: ...

    def held(self) -> tuple[QuarantineEntry, ...]: ...

    def held_entry(self, lesson_id: str) -> QuarantineEntry: ...

    def hold(self, entries: Sequence[QuarantineEntry]) -> None: ...

    def approve_held(self, lesson_id: str, *, run_id: str = ...) -> PublicationReceipt: ...

    def reject_held(self, lesson_id: str) -> bool: ...

    def close(self) -> None: ...
