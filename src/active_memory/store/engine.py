"""What the SQLite and the PostgreSQL store do alike, each inside its own engine's transaction.

The planning and writing logic (``checked``, ``writes``, ``admin``, ``transfer``) already runs
over :class:`~active_memory.store.sql.SqlConnection`, and ``store/engine_steps.py`` composes it
into the steps both stores take alike (a snapshot's SELECT, a checked revert, a purge, an
import). :class:`EngineStore` is the base that serves the admin operations (list, show,
history, revert, purge, export, import) and the quarantine's review (hold, list, show, approve,
reject) through the subclass's own ``_reading()`` and ``_writing()`` transactions. Each takes
``within``, the access scope a hosted PostgreSQL store confines a credential's request to
(``store/access.py``; only that schema keeps the scope a row last had). Each store keeps what
differs: how it opens and locks a transaction, and SQLite's scrub of its file after a purge or
a rejection (``_scrub``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import ClassVar

from active_memory.errors import ConfigError, PublicationError, ScopeRefused
from active_memory.models.changes import Mutation, Publication
from active_memory.models.lessons import Lesson
from active_memory.store import admin
from active_memory.store.access import (
    AccessScope,
    reached_rows,
    refuse_out_of_scope,
    refuse_revisions_out_of_scope,
    whole_histories_within,
)
from active_memory.store.backend import PublicationControl, PublicationReceipt
from active_memory.store.checked import publish_checked
from active_memory.store.closing import Closing
from active_memory.store.codec import DecodedContent, DecodedRows
from active_memory.store.counts import rebuild_counts
from active_memory.store.engine_steps import (
    import_entries,
    purge_marked,
    refuse_import_outside,
    revert_checked,
    tombstones_within,
)
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
from active_memory.store.transfer import lesson_line, parse_lines
from active_memory.store.writes import read_generation

__all__ = ["ADMIN_RUN", "REVIEW_RUN", "EngineStore"]

# The run id a revert or purge is recorded under in the history when the caller names none.
ADMIN_RUN = "admin"
# The run id an approved quarantined proposal is published under when the caller names none.
REVIEW_RUN = "review"


class EngineStore(Closing):
    """The operations a store serves the same way on either engine, each in one transaction
    that the subclass opens: ``_reading()`` a read transaction, ``_writing()`` a write
    transaction holding the writers' lock. ``_limits`` bounds what a write may add."""

    # Whether the schema keeps the scope each row last had, which ``within`` is checked against.
    _keeps_scopes: ClassVar[bool] = False

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

    def _confine(self, within: AccessScope | None) -> None:
        """Refuse ``within`` where the schema keeps no scope a row last had (``store/access.py``:
        only PostgreSQL's does): a scope there would be half applied, or fail mid-read."""
        if within is not None and not self._keeps_scopes:
            raise ConfigError(
                "within",
                "an access scope confines a team store's credential, and this store keeps no "
                "scopes; call it without one",
            )

    def _scrub(self) -> bool:
        """Once a purge or a rejection committed: whether the freed content also left the
        engine's files. False here: only an engine that scrubs its files can say so."""
        return False

    def _serial(self) -> AbstractContextManager[object]:
        """Held across a purge's or a rejection's write and its :meth:`_scrub`, so that no other
        call comes between them in a store that serialises its calls (SQLite's)."""
        return nullcontext()

    def generation(self) -> int:
        with self._reading() as conn:
            return read_generation(conn)

    def list_lessons(
        self,
        repository: str | None = None,
        graph_hash: str | None = None,
        node_id: str | None = None,
        *,
        within: AccessScope | None = None,
    ) -> tuple[Lesson, ...]:
        """Live lessons sorted by id; each filter given must match its column exactly; with
        ``within``, only those it reaches."""
        self._confine(within)
        with self._reading() as conn:
            found = admin.list_live(
                conn,
                repository=repository,
                graph_hash=graph_hash,
                node_id=node_id,
                contents=self._contents,
            )
        if within is None:
            return found
        return tuple(lesson for lesson in found if within.allows_scope(lesson.scope))

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
        self._confine(within)
        with self._reading() as conn:
            return list_page(conn, repository=repository, graph=graph, query=query, page=page,
                             per_page=per_page, sort=sort, within=within)  # fmt: skip

    def retired_page(
        self, *, page: int = 1, per_page: int = 50, within: AccessScope | None = None
    ) -> RetiredListing:
        """One page of the retired ids, newest first, with their last stored titles; with
        ``within``, those whose last live scope it reaches."""
        self._confine(within)
        with self._reading() as conn:
            return retired_page(conn, page=page, per_page=per_page, within=within)

    def list_retired(self, *, within: AccessScope | None = None) -> tuple[Tombstone, ...]:
        """Tombstones sorted by id; with ``within``, only those whose last live scope it
        reaches (a tombstone imported as one has none and is left out)."""
        self._confine(within)
        with self._reading() as conn:
            return tombstones_within(conn, within)

    def get(self, lesson_id: str, *, within: AccessScope | None = None) -> Lesson:
        """The live lesson; LessonNotFound (LessonRetired for a tombstone) otherwise."""
        self._confine(within)
        with self._reading() as conn:
            if within is not None:
                refuse_out_of_scope(conn, [lesson_id], within)
            return admin.get_lesson(conn, lesson_id)

    def export(self, *, within: AccessScope | None = None) -> Iterator[str]:
        """JSON lines (no newline) for every live lesson and tombstone (with ``within``: that
        it reaches), sorted by id, read at one generation."""
        self._confine(within)
        with self._reading() as conn:
            lessons = admin.list_live(conn)
            tombstones = tombstones_within(conn, within)
        if within is not None:
            lessons = tuple(lesson for lesson in lessons if within.allows_scope(lesson.scope))
        items: list[Lesson | Tombstone] = [*lessons, *tombstones]
        items.sort(key=lambda item: item.id)
        return (lesson_line(item) for item in items)

    def import_lines(
        self,
        lines: Iterable[str],
        *,
        replace: bool = False,
        run_id: str = "import",
        within: AccessScope | None = None,
        control: PublicationControl | None = None,
    ) -> ImportReport:
        """Import an export, all or nothing (semantics in ``store/transfer.py``).

        Raises LessonValidationError for a bad line (before touching the store) and
        ImportConflict listing every colliding id; with ``within``, ScopeRefused for a lesson
        outside it or for a tombstone line (it carries no scope to check), before anything is
        written. ``control``, as for every write here, bounds and stops the write where the
        engine can (``PublicationControl.hold_s``).
        """
        self._confine(within)
        entries = parse_lines(lines)
        if within is not None:
            refuse_import_outside(entries, within)
        with self._writing(control) as conn:
            if within is not None:
                refuse_out_of_scope(conn, (entry.id for entry in entries), within)
            return import_entries(
                conn, entries, replace=replace, run_id=run_id, limits=self._limits
            )

    def history(
        self, lesson_id: str, *, within: AccessScope | None = None
    ) -> tuple[HistoryEntry, ...]:
        """Every revision of ``lesson_id``, oldest first (content erased by purge is None);
        with ``within``, ScopeRefused unless every revision with content is within it."""
        self._confine(within)
        with self._reading() as conn:
            if within is not None:
                refuse_out_of_scope(conn, [lesson_id], within)
            entries = admin.read_history(conn, lesson_id)
        if within is not None:
            refuse_revisions_out_of_scope(lesson_id, entries, within)
        return entries

    def histories(self, *, within: AccessScope | None = None) -> Iterator[HistoryEntry]:
        """Every lesson's revisions, ordered by id then revision, as :meth:`history` gives
        them: one query in one read transaction, each entry decoded as the caller reaches it;
        with ``within``, only the lessons :meth:`history` would not refuse (each whole)."""
        return self._histories(within, after=None, lessons=None)[0]

    def history_page(
        self, *, within: AccessScope | None = None, after: str | None = None, lessons: int
    ) -> tuple[tuple[HistoryEntry, ...], str | None]:
        """One page of :meth:`histories`: the lessons past ``after``, at most ``lessons`` read,
        and the id the next page starts after (None when no lesson is left)."""
        entries, last = self._histories(within, after=after, lessons=lessons)
        return tuple(entries), last

    def _histories(
        self, within: AccessScope | None, *, after: str | None, lessons: int | None
    ) -> tuple[Iterator[HistoryEntry], str | None]:
        # The scope is applied in the query, before the page is cut: a page and the id the next
        # one starts after only ever name lessons ``within`` reaches.
        self._confine(within)
        reach = None if within is None else reached_rows(within)
        with self._reading() as conn:
            rows = admin.read_all_history_rows(conn, after=after, lessons=lessons, reach=reach)
        read = len({row[0] for row in rows})
        last = str(rows[-1][0]) if rows and lessons is not None and read >= lessons else None
        entries = admin.history_entries(rows, self._contents)
        if within is not None:
            entries = whole_histories_within(entries, within)
        return entries, last

    def revert(
        self,
        lesson_id: str,
        to_revision: int,
        *,
        expected_revision: int | None = None,
        run_id: str = ADMIN_RUN,
        within: AccessScope | None = None,
        control: PublicationControl | None = None,
    ) -> PublicationReceipt:
        """Write ``to_revision``'s content as a new revision, checked like a publication.

        ``expected_revision`` (when given) must be the current revision, else RevisionConflict;
        with ``within``, ScopeRefused for a lesson or a revision outside it.
        """
        self._confine(within)
        with self._writing(control) as conn:
            if within is not None:
                refuse_out_of_scope(conn, [lesson_id], within)
            change = admin.plan_revert(conn, lesson_id, to_revision)
            # Republishing an old revision is a publication of its draft: the same rule.
            draft = change.draft
            if within is not None and draft is not None and not within.allows_draft(draft):
                raise ScopeRefused(
                    f"revision {to_revision} of lesson {lesson_id!r}", within.describe()
                )
            return revert_checked(
                conn, change, expected_revision, run_id=run_id, limits=self._limits
            )

    def purge(
        self,
        lesson_id: str,
        *,
        run_id: str = ADMIN_RUN,
        within: AccessScope | None = None,
        control: PublicationControl | None = None,
    ) -> PurgeReceipt:
        """Erase every past content of a retired lesson; its tombstone (id, kind, a new
        revision marking the purge) stays so the id can never be recreated. With ``within``,
        ScopeRefused for a lesson or any revision outside it. ``scrubbed``: whether the freed
        content also left the engine's files (:meth:`_scrub`)."""
        self._confine(within)
        with self._serial():
            with self._writing(control) as conn:
                if within is not None:
                    refuse_out_of_scope(conn, [lesson_id], within)
                    past = admin.read_history(conn, lesson_id)
                    refuse_revisions_out_of_scope(lesson_id, past, within)
                erased = admin.stored_contents(conn, lesson_id)
                receipt = purge_marked(conn, lesson_id, run_id=run_id, limits=self._limits)
            # The decoded memory lets go of the purged text too.
            self._contents.forget(erased)
            self._decoded.forget(lesson_id)
            scrubbed = self._scrub()
        return receipt.model_copy(update={"scrubbed": scrubbed})

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
        self._confine(within)
        with self._reading() as conn:
            entries = read_held(conn)
        if within is None:
            return entries
        return tuple(entry for entry in entries if within.allows_draft(entry.draft))

    def held_entry(self, lesson_id: str, *, within: AccessScope | None = None) -> QuarantineEntry:
        """The held proposal ``lesson_id``; QuarantineNotFound, or ScopeRefused outside
        ``within``."""
        self._confine(within)
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
        self._confine(within)
        if not entries:
            return
        for entry in entries:
            _refuse_held_outside(entry, within)
        with self._writing(control) as conn:
            if within is not None:
                ids = [entry.id for entry in entries]
                refuse_out_of_scope(conn, ids, within)
                # Replacing a held entry is changing it: another repository's stays theirs.
                replaced = set(ids)
                for held in read_held(conn):
                    if held.id in replaced:
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
        self._confine(within)
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
        """Delete the held proposal; whether its content also left the engine's files
        (:meth:`_scrub`)."""
        self._confine(within)
        with self._serial():
            with self._writing(control) as conn:
                _refuse_held_outside(read_held_entry(conn, lesson_id), within)
                drop_held(conn, lesson_id)
            return self._scrub()


def _refuse_held_outside(entry: QuarantineEntry, within: AccessScope | None) -> None:
    if within is not None and not within.allows_draft(entry.draft):
        raise ScopeRefused(f"quarantined proposal {entry.id!r}", within.describe())
