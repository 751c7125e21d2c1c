"""What the SQLite and the PostgreSQL store do alike, each inside its own engine's transaction.

The planning and writing logic (``checked``, ``writes``, ``admin``, ``transfer``) already runs
over :class:`~active_memory.store.sql.SqlConnection`. This module holds the operations both
stores compose from it the same way (a snapshot's SELECT, a checked revert, a purge, an import)
and :class:`EngineStore`, the base that serves the reads both expose unchanged, and the
quarantine's review (hold, list, show, approve, reject), through the subclass's own
``_reading()`` and ``_writing()`` transactions. Each store keeps what differs: how it opens and
locks a transaction, SQLite's scrub of the file after a purge or a rejection, the access scopes
a hosted PostgreSQL store checks.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager

from active_memory.errors import (
    ImportConflict,
    PublicationError,
    RevisionConflict,
    RevisionMismatch,
    ScopeRefused,
)
from active_memory.models.changes import Mutation, Publication
from active_memory.models.lessons import Lesson
from active_memory.store import admin
from active_memory.store.access import AccessScope, refuse_out_of_scope
from active_memory.store.backend import PublicationControl, PublicationReceipt, SnapshotRequest
from active_memory.store.checked import publish_checked
from active_memory.store.closing import Closing
from active_memory.store.codec import LIVE_COLUMNS, DecodedContent, DecodedRows
from active_memory.store.counts import rebuild_counts
from active_memory.store.listing import (
    LessonListing,
    LessonSort,
    RetiredListing,
    list_page,
    retired_page,
)
from active_memory.store.quarantine_rows import (
    QuarantineEntry,
    drop_held,
    hold_entries,
    read_held,
    read_held_entry,
)
from active_memory.store.results import (
    HistoryEntry,
    ImportReport,
    PurgeReceipt,
    StoreLimits,
    Tombstone,
)
from active_memory.store.sql import SqlConnection
from active_memory.store.transfer import ImportEntry, lesson_line, parse_lines, plan_import
from active_memory.store.writes import Change, apply_changes, read_generation, read_states

__all__ = [
    "ADMIN_RUN",
    "REVIEW_RUN",
    "EngineStore",
    "import_entries",
    "purge_marked",
    "revert_checked",
    "select_snapshot",
]

# The run id a revert or purge is recorded under in the history when the caller names none.
ADMIN_RUN = "admin"
# The run id an approved quarantined proposal is published under when the caller names none.
REVIEW_RUN = "review"


def select_snapshot(
    conn: SqlConnection, request: SnapshotRequest
) -> tuple[int, list[tuple[object, ...]]]:
    """The generation and the live ``LIVE_COLUMNS, checksum`` rows in ``request``'s scope,
    sorted by id, read in the caller's read transaction (not yet verified)."""
    identity = request.identity
    columns = f"{LIVE_COLUMNS}, checksum"
    generation = read_generation(conn)
    rows: list[tuple[object, ...]] = []
    if request.repository and identity.repository is not None:
        rows += conn.execute(
            f"SELECT {columns} FROM records "
            "WHERE kind = 'repository' AND deleted = 0 AND repository = ?",
            (identity.repository,),
        ).fetchall()
    if request.graph and identity.graph_hash is not None:
        rows += conn.execute(
            f"SELECT {columns} FROM records "
            "WHERE kind = 'graph' AND deleted = 0 AND graph_hash = ? "
            "AND (repository IS NULL OR repository = ?)",
            (identity.graph_hash, identity.repository),
        ).fetchall()
    rows.sort(key=lambda row: str(row[0]))
    return generation, rows


def revert_checked(
    conn: SqlConnection,
    change: Change,
    expected_revision: int | None,
    *,
    run_id: str,
    limits: StoreLimits,
) -> PublicationReceipt:
    """Write ``change`` (from ``admin.plan_revert``) in the caller's write transaction;
    RevisionConflict when ``expected_revision`` is given and is not the current revision."""
    current = change.revision - 1
    if expected_revision is not None and current != expected_revision:
        raise RevisionConflict([RevisionMismatch(change.id, expected_revision, current)])
    generation = apply_changes(conn, [change], run_id=run_id, limits=limits)
    return PublicationReceipt(generation, {change.id: change.revision})


def purge_marked(
    conn: SqlConnection, lesson_id: str, *, run_id: str, limits: StoreLimits
) -> PurgeReceipt:
    """Erase the past contents of retired ``lesson_id`` and write its purge marker (none when
    an earlier purge left nothing to erase), in the caller's write transaction. ``scrubbed``
    is False: only the engine can say whether the freed bytes left its files."""
    marker, erased = admin.plan_purge(conn, lesson_id)
    if marker is None:
        revision = read_states(conn, [lesson_id])[lesson_id].revision
        generation = read_generation(conn)
    else:
        revision = marker.revision
        generation = apply_changes(conn, [marker], run_id=run_id, limits=limits)
    return PurgeReceipt(
        id=lesson_id,
        revision=revision,
        generation=generation,
        erased_revisions=erased,
        scrubbed=False,
    )


def import_entries(
    conn: SqlConnection,
    entries: tuple[ImportEntry, ...],
    *,
    replace: bool,
    run_id: str,
    limits: StoreLimits,
) -> ImportReport:
    """Import parsed lines all or nothing in the caller's write transaction (semantics in
    ``store/transfer.py``); ImportConflict listing every colliding id."""
    plan = plan_import(conn, entries, replace=replace)
    if plan.conflicts:
        raise ImportConflict(plan.conflicts)
    if plan.changes:
        generation = apply_changes(conn, plan.changes, run_id=run_id, limits=limits)
    else:
        generation = read_generation(conn)
    return ImportReport(
        generation=generation,
        created=tuple(plan.created),
        replaced=tuple(plan.replaced),
        retired=tuple(plan.retired),
        unchanged=tuple(plan.unchanged),
    )


class EngineStore(Closing):
    """The operations a store serves the same way on either engine, each in one transaction
    that the subclass opens: ``_reading()`` a read transaction, ``_writing()`` a write
    transaction holding the writers' lock. ``_limits`` bounds what a write may add."""

    _limits: StoreLimits
    # The live listing and the read of every history decode through it (``codec``).
    _contents: DecodedContent
    # The snapshot's live lessons decode through it.
    _decoded: DecodedRows

    def _reading(self) -> AbstractContextManager[SqlConnection]:
        raise NotImplementedError

    def _writing(
        self, control: PublicationControl | None = None
    ) -> AbstractContextManager[SqlConnection]:
        raise NotImplementedError

    def _forget_purged(self, lesson_id: str, erased: Iterable[tuple[str, str]]) -> None:
        """Once a purge committed, the decoded memory lets go of the purged text too."""
        self._contents.forget(erased)
        self._decoded.forget(lesson_id)

    def generation(self) -> int:
        with self._reading() as conn:
            return read_generation(conn)

    def list_lessons(
        self,
        repository: str | None = None,
        graph_hash: str | None = None,
        node_id: str | None = None,
    ) -> tuple[Lesson, ...]:
        """Live lessons sorted by id; each filter given must match its column exactly."""
        with self._reading() as conn:
            return admin.list_live(
                conn,
                repository=repository,
                graph_hash=graph_hash,
                node_id=node_id,
                contents=self._contents,
            )

    def lesson_page(
        self,
        *,
        repository: str | None = None,
        graph: str | None = None,
        query: str | None = None,
        page: int = 1,
        per_page: int = 50,
        sort: LessonSort = "oldest",
        within: AccessScope | None = None,
    ) -> LessonListing:
        """One page of the live lessons, filtered, searched and sliced in SQL
        (``store.listing``); with ``within``, only what that scope reaches is listed or
        counted."""
        with self._reading() as conn:
            return list_page(conn, repository=repository, graph=graph, query=query, page=page,
                             per_page=per_page, sort=sort, within=within)  # fmt: skip

    def retired_page(
        self, *, page: int = 1, per_page: int = 50, within: AccessScope | None = None
    ) -> RetiredListing:
        """One page of the retired ids, newest first, with their last stored titles; with
        ``within``, those whose last live scope it reaches."""
        with self._reading() as conn:
            return retired_page(conn, page=page, per_page=per_page, within=within)

    def list_retired(self) -> tuple[Tombstone, ...]:
        with self._reading() as conn:
            return admin.list_tombstones(conn)

    def get(self, lesson_id: str) -> Lesson:
        """The live lesson; LessonNotFound (LessonRetired for a tombstone) otherwise."""
        with self._reading() as conn:
            return admin.get_lesson(conn, lesson_id)

    def export(self) -> Iterator[str]:
        """JSON lines (no newline) for every live lesson and tombstone, sorted by id, read at
        one generation."""
        with self._reading() as conn:
            lessons = admin.list_live(conn)
            tombstones = admin.list_tombstones(conn)
        items: list[Lesson | Tombstone] = [*lessons, *tombstones]
        items.sort(key=lambda item: item.id)
        return (lesson_line(item) for item in items)

    def import_lines(
        self,
        lines: Iterable[str],
        *,
        replace: bool = False,
        run_id: str = "import",
        control: PublicationControl | None = None,
    ) -> ImportReport:
        """Import an export, all or nothing (semantics in ``store/transfer.py``).

        Raises LessonValidationError for a bad line (before touching the store) and
        ImportConflict listing every colliding id. ``control``, as for every write here,
        bounds and stops the write where the engine can (``PublicationControl.hold_s``).
        """
        entries = parse_lines(lines)
        with self._writing(control) as conn:
            return import_entries(
                conn, entries, replace=replace, run_id=run_id, limits=self._limits
            )

    def history(self, lesson_id: str) -> tuple[HistoryEntry, ...]:
        """Every revision of ``lesson_id``, oldest first (content erased by purge is None)."""
        with self._reading() as conn:
            return admin.read_history(conn, lesson_id)

    def histories(self) -> Iterator[HistoryEntry]:
        """Every lesson's revisions, ordered by id then revision, as :meth:`history` gives
        them: one query in one read transaction, each entry decoded as the caller reaches it."""
        with self._reading() as conn:
            rows = admin.read_all_history_rows(conn)
        return admin.history_entries(rows, self._contents)

    def revert(
        self,
        lesson_id: str,
        to_revision: int,
        *,
        expected_revision: int | None = None,
        run_id: str = ADMIN_RUN,
    ) -> PublicationReceipt:
        """Write ``to_revision``'s content as a new revision, checked like a publication.

        ``expected_revision`` (when given) must be the current revision, else RevisionConflict.
        """
        with self._writing() as conn:
            change = admin.plan_revert(conn, lesson_id, to_revision)
            return revert_checked(
                conn, change, expected_revision, run_id=run_id, limits=self._limits
            )

    def rebuild_counts(self) -> None:
        """Set the counts triggers keep (capacity counters, live lessons by repository and by
        graph) to a recount of the rows: ``store check --repair``. No lesson changes, nor the
        generation."""
        with self._writing() as conn:
            rebuild_counts(conn)

    # -- the quarantine's review -----------------------------------------------------------

    def held(self, *, within: AccessScope | None = None) -> tuple[QuarantineEntry, ...]:
        """Every held proposal, oldest first, then by id; with ``within``, only those whose
        draft that scope reaches."""
        with self._reading() as conn:
            entries = read_held(conn)
        if within is None:
            return entries
        return tuple(entry for entry in entries if within.allows_draft(entry.draft))

    def held_entry(self, lesson_id: str, *, within: AccessScope | None = None) -> QuarantineEntry:
        """The held proposal ``lesson_id``; QuarantineNotFound, or ScopeRefused outside
        ``within``."""
        with self._reading() as conn:
            entry = read_held_entry(conn, lesson_id)
        _refuse_held_outside(entry, within)
        return entry

    def hold(
        self,
        entries: Sequence[QuarantineEntry],
        *,
        within: AccessScope | None = None,
        control: PublicationControl | None = None,
    ) -> None:
        """Keep ``entries`` for review, all or none; an id already held is replaced. With
        ``within``, ScopeRefused when a draft, or the entry it would replace, lies outside it
        (nothing is kept)."""
        if not entries:
            return
        for entry in entries:
            _refuse_held_outside(entry, within)
        with self._writing(control) as conn:
            if within is not None:
                refuse_out_of_scope(conn, [entry.id for entry in entries], within)
                # Replacing a held entry is changing it: another repository's stays theirs.
                for held in read_held(conn):
                    if held.id in {entry.id for entry in entries}:
                        _refuse_held_outside(held, within)
            hold_entries(conn, entries)

    def approve_held(
        self,
        lesson_id: str,
        *,
        run_id: str = REVIEW_RUN,
        within: AccessScope | None = None,
        control: PublicationControl | None = None,
    ) -> PublicationReceipt:
        """Publish the held draft as a new lesson (a create expecting revision 0, so it cannot
        overwrite anything) and drop the entry, in one transaction. Screened again first: a
        strong signal today's detectors find refuses the approval (PublicationError); the weak
        signals it was held for are what the person approved."""
        # The screens load on use, as in store.transfer: a reading command never needs them.
        from active_memory.screening.cards import screen_card
        from active_memory.screening.verdict import is_weak

        entry = self.held_entry(lesson_id, within=within)
        strong = [code for code in screen_card(entry.draft) if not is_weak(code)]
        if strong:
            raise PublicationError(
                f"quarantined proposal {lesson_id!r} now trips {', '.join(strong)}; "
                f"reject it with `active-memory lessons review reject {lesson_id}`"
            )
        mutation = Mutation(op="upsert", id=lesson_id, expected_revision=0, draft=entry.draft)
        publication = Publication(run_id=run_id, mutations=(mutation,))
        with self._writing(control) as conn:
            # Read again under the writers' lock: the entry screened above is the one published.
            if read_held_entry(conn, lesson_id) != entry:
                raise PublicationError(
                    f"quarantined proposal {lesson_id!r} changed while it was being approved; "
                    "show it again and decide"
                )
            if within is not None:
                refuse_out_of_scope(conn, [lesson_id], within)
            receipt = publish_checked(conn, publication, self._limits)
            drop_held(conn, lesson_id)
        return receipt

    def reject_held(
        self,
        lesson_id: str,
        *,
        within: AccessScope | None = None,
        control: PublicationControl | None = None,
    ) -> bool:
        """Delete the held proposal; whether its content also left the engine's files (False
        here: only the engine can say, SQLite's store scrubs its file)."""
        with self._writing(control) as conn:
            _refuse_held_outside(read_held_entry(conn, lesson_id), within)
            drop_held(conn, lesson_id)
        return False


def _refuse_held_outside(entry: QuarantineEntry, within: AccessScope | None) -> None:
    if within is not None and not within.allows_draft(entry.draft):
        raise ScopeRefused(f"quarantined proposal {entry.id!r}", within.describe())
