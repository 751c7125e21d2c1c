"""``SqliteStore``: the embedded lesson store, implementing ``ActiveMemoryBackend``.

One connection per instance, guarded by a lock, so an instance may be shared by threads (calls
are serialised); processes coordinate through SQLite's own locking (WAL readers never block the
single writer; writers queue on ``BEGIN IMMEDIATE`` up to the busy timeout).

A snapshot verifies every row it reads against the checksum its writer stored (see
``checked_rows``) and decodes each lesson when it is first read; the lessons of rows that have
not changed since this instance last decoded them are reused (``codec.DecodedRows``), so a
long-lived reader such as a broker re-reads a large store for the price of the SELECT, a hash
and a comparison per row.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from active_memory.errors import (
    ConfigError,
    ImportConflict,
    RevisionConflict,
    RevisionMismatch,
    SnapshotError,
    StoreError,
)
from active_memory.models.changes import Publication
from active_memory.models.lessons import Lesson
from active_memory.store import admin
from active_memory.store.backend import (
    PublicationControl,
    PublicationReceipt,
    Snapshot,
    SnapshotRequest,
)
from active_memory.store.backup import backup_to
from active_memory.store.checked import checked_changes, publication_receipt
from active_memory.store.checked_rows import StoredLessons, verify_rows
from active_memory.store.closing import Closing
from active_memory.store.codec import LIVE_COLUMNS, DecodedRows, RecordError
from active_memory.store.connect import (
    companions_absent,
    live_connection,
    open_connection,
    release_companions,
)
from active_memory.store.files import backup_destination_problem
from active_memory.store.init_receipts import delete_receipt, publish_with_receipt, read_receipt
from active_memory.store.paths import DEFAULT_NAMESPACE, check_store_location, default_store_path
from active_memory.store.quarantine_rows import QuarantineEntry
from active_memory.store.results import (
    DEFAULT_LIMITS,
    HistoryEntry,
    ImportReport,
    PurgeReceipt,
    StoreCheck,
    StoreLimits,
    Tombstone,
)
from active_memory.store.transfer import lesson_line, parse_lines, plan_import
from active_memory.store.unreadable import safe_message
from active_memory.store.writes import (
    apply_changes,
    read_states,
    read_transaction,
    scrub_file,
    write_transaction,
)

__all__ = ["SqliteStore"]

_ADMIN_RUN = "admin"


class SqliteStore(Closing):
    """A private SQLite lesson store at ``path`` (default: ``default_store_path(namespace)``).

    ``read_only=True`` opens an existing, migrated store with ``mode=ro``: it never creates,
    migrates or writes. ``limits`` exists for tests and embedders with smaller budgets.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        read_only: bool = False,
        busy_timeout_ms: int = 5000,
        limits: StoreLimits = DEFAULT_LIMITS,
    ) -> None:
        if isinstance(busy_timeout_ms, bool) or not isinstance(busy_timeout_ms, int):
            raise ConfigError("busy_timeout_ms", f"{busy_timeout_ms!r} must be an integer")
        if busy_timeout_ms < 0:
            raise ConfigError("busy_timeout_ms", f"{busy_timeout_ms!r} must be 0 or more")
        chosen = default_store_path(namespace) if path is None else check_store_location(path)
        # abspath, not resolve(): resolving would follow the very symlink we must refuse.
        self._path = Path(os.path.abspath(os.fspath(chosen)))
        self._read_only = read_only
        self._limits = limits
        self._decoded = DecodedRows(capacity=2 * max(limits.max_live, 1))
        self._lock = threading.RLock()
        # A read that found no -wal/-shm leaves none: a refused listing as much as a good one.
        self._release = read_only and companions_absent(self._path)
        self._conn: sqlite3.Connection | None = open_connection(
            self._path, read_only=read_only, busy_timeout_ms=busy_timeout_ms
        )

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._path

    @property
    def read_only(self) -> bool:
        return self._read_only

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
                if self._release:
                    release_companions(self._path)

    def _connection(self, *, write: bool = False) -> sqlite3.Connection:
        return live_connection(self._conn, self._path, read_only=self._read_only, write=write)

    @contextlib.contextmanager
    def _reading(self, failure: type[StoreError] = StoreError) -> Iterator[sqlite3.Connection]:
        with self._lock:
            conn = self._connection()
            try:
                with read_transaction(conn):
                    yield conn
            except (sqlite3.Error, UnicodeDecodeError) as error:
                raise failure(
                    f"reading the lesson store {str(self._path)!r} failed "
                    f"({safe_message(error)}); run `active-memory store check`"
                ) from None

    # -- the backend protocol --------------------------------------------------------------

    def generation(self) -> int:
        with self._reading() as conn:
            (value,) = conn.execute("SELECT generation FROM meta").fetchone()
            return int(value)

    def snapshot(self, request: SnapshotRequest) -> Snapshot:
        """Every live lesson in scope, sorted by id, read in one transaction.

        Each row is verified against its checksum here, so a damaged row refuses the whole
        snapshot; the lessons are decoded from the verified rows on first access.
        """
        identity = request.identity
        columns = f"{LIVE_COLUMNS}, checksum"
        with self._reading(SnapshotError) as conn:
            (generation,) = conn.execute("SELECT generation FROM meta").fetchone()
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
        try:
            verify_rows(rows)
        except RecordError as error:
            raise SnapshotError(
                f"stored lesson {error}; the snapshot was refused rather than returned "
                "incomplete, run `active-memory store check`"
            ) from None
        return Snapshot(int(generation), StoredLessons(rows, self._decoded))

    def publish(
        self, publication: Publication, control: PublicationControl | None = None
    ) -> PublicationReceipt:
        """Commit every mutation or none; see ``ActiveMemoryBackend.publish``."""
        with self._lock:
            conn = self._connection(write=True)
            with write_transaction(conn, control):
                if not publication.mutations:
                    (generation,) = conn.execute("SELECT generation FROM meta").fetchone()
                    return PublicationReceipt(int(generation), {})
                changes = checked_changes(conn, publication)
                generation = apply_changes(
                    conn, changes, run_id=publication.run_id, limits=self._limits
                )
        return publication_receipt(generation, changes)

    # -- memory init's receipts (store/init_receipts.py) ------------------------------------

    def publish_once(
        self,
        publication: Publication,
        session: str,
        control: PublicationControl | None = None,
        held: Sequence[QuarantineEntry] = (),
    ) -> tuple[PublicationReceipt, bool]:
        """The checked publication, the ``held`` quarantine entries and the receipt row for
        ``session`` in one transaction; ``(stored receipt, False)`` without writing when
        ``session`` already published."""
        with self._lock:
            conn = self._connection(write=True)
            with write_transaction(conn, control):
                return publish_with_receipt(conn, publication, session, self._limits, held)

    def init_receipt(self, session: str) -> PublicationReceipt | None:
        with self._reading() as conn:
            return read_receipt(conn, session)

    def drop_init_receipt(self, session: str) -> None:
        with self._lock:
            conn = self._connection(write=True)
            with write_transaction(conn):
                delete_receipt(conn, session)

    # -- admin -----------------------------------------------------------------------------

    def list_lessons(
        self,
        repository: str | None = None,
        graph_hash: str | None = None,
        node_id: str | None = None,
    ) -> tuple[Lesson, ...]:
        """Live lessons sorted by id; each filter given must match its column exactly."""
        with self._reading() as conn:
            return admin.list_live(
                conn, repository=repository, graph_hash=graph_hash, node_id=node_id
            )

    def list_retired(self) -> tuple[Tombstone, ...]:
        with self._reading() as conn:
            return admin.list_tombstones(conn)

    def get(self, lesson_id: str) -> Lesson:
        """The live lesson; LessonNotFound (LessonRetired for a tombstone) otherwise."""
        with self._reading() as conn:
            return admin.get_lesson(conn, lesson_id)

    def history(self, lesson_id: str) -> tuple[HistoryEntry, ...]:
        """Every revision of ``lesson_id``, oldest first (content erased by purge is None)."""
        with self._reading() as conn:
            return admin.read_history(conn, lesson_id)

    def revert(
        self,
        lesson_id: str,
        to_revision: int,
        *,
        expected_revision: int | None = None,
        run_id: str = _ADMIN_RUN,
    ) -> PublicationReceipt:
        """Write ``to_revision``'s content as a new revision, checked like a publication.

        ``expected_revision`` (when given) must be the current revision, else RevisionConflict.
        """
        with self._lock:
            conn = self._connection(write=True)
            with write_transaction(conn):
                change = admin.plan_revert(conn, lesson_id, to_revision)
                if expected_revision is not None and change.revision - 1 != expected_revision:
                    raise RevisionConflict(
                        [RevisionMismatch(lesson_id, expected_revision, change.revision - 1)]
                    )
                generation = apply_changes(conn, [change], run_id=run_id, limits=self._limits)
        return PublicationReceipt(generation, {lesson_id: change.revision})

    def purge(self, lesson_id: str, *, run_id: str = _ADMIN_RUN) -> PurgeReceipt:
        """Erase every past content of a retired lesson, then scrub the file and its WAL.

        The tombstone (id, kind, a new revision marking the purge) stays so the id can never
        be recreated. Secure delete zeroes freed cells; VACUUM and a truncating checkpoint
        then drop stale pages from the main file and the WAL.
        """
        with self._lock:
            conn = self._connection(write=True)
            with write_transaction(conn):
                marker, erased = admin.plan_purge(conn, lesson_id)
                if marker is None:
                    state = read_states(conn, [lesson_id])[lesson_id]
                    (generation,) = conn.execute("SELECT generation FROM meta").fetchone()
                    revision, generation = state.revision, int(generation)
                else:
                    revision = marker.revision
                    generation = apply_changes(conn, [marker], run_id=run_id, limits=self._limits)
            scrubbed = scrub_file(conn)
        return PurgeReceipt(
            id=lesson_id,
            revision=revision,
            generation=generation,
            erased_revisions=erased,
            scrubbed=scrubbed,
        )

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
        self, lines: Iterable[str], *, replace: bool = False, run_id: str = "import"
    ) -> ImportReport:
        """Import an export, all or nothing (semantics in ``store/transfer.py``).

        Raises LessonValidationError for a bad line (before touching the store) and
        ImportConflict listing every colliding id.
        """
        entries = parse_lines(lines)
        with self._lock:
            conn = self._connection(write=True)
            with write_transaction(conn):
                plan = plan_import(conn, entries, replace=replace)
                if plan.conflicts:
                    raise ImportConflict(plan.conflicts)
                if plan.changes:
                    generation = apply_changes(
                        conn, plan.changes, run_id=run_id, limits=self._limits
                    )
                else:
                    (current,) = conn.execute("SELECT generation FROM meta").fetchone()
                    generation = int(current)
        return ImportReport(
            generation=generation,
            created=tuple(plan.created),
            replaced=tuple(plan.replaced),
            retired=tuple(plan.retired),
            unchanged=tuple(plan.unchanged),
        )

    def backup(self, destination: str | os.PathLike[str], *, force: bool = False) -> Path:
        """Copy the store with SQLite's online backup API to ``destination`` (0600).

        Safe while other processes write: the copy is one consistent read. It is written to a
        temporary file beside ``destination`` and renamed over it atomically. An existing
        ``destination`` is refused unless ``force`` (and then only a regular file); the store
        itself, its SQLite companions and directories are always refused.
        """
        target = Path(os.path.abspath(os.fspath(destination)))
        problem = backup_destination_problem(self._path, target, force=force)
        if problem is not None:
            raise StoreError(f"backup destination {str(target)!r} {problem}")
        with self._lock:
            # Named for this process, so a later backup or check removes it if we are killed.
            return backup_to(self._connection(), self._path, target)

    def check(self) -> StoreCheck:
        """``PRAGMA integrity_check`` and ``foreign_key_check`` plus counts."""
        with self._reading() as conn:
            return admin.check_store(conn, self._path)
