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
from collections.abc import Iterator, Sequence
from pathlib import Path

from active_memory.errors import (
    ConfigError,
    SnapshotError,
    StoreError,
)
from active_memory.models.changes import Publication
from active_memory.store import admin
from active_memory.store.backend import (
    PublicationControl,
    PublicationReceipt,
    Snapshot,
    SnapshotRequest,
)
from active_memory.store.backup import backup_to
from active_memory.store.checked import publish_checked, refuse_flagged
from active_memory.store.checked_rows import StoredLessons, verify_snapshot_rows
from active_memory.store.codec import DecodedContent, DecodedRows
from active_memory.store.connect import (
    companions_absent,
    live_connection,
    open_connection,
    release_companions,
)
from active_memory.store.engine import EngineStore
from active_memory.store.engine_steps import select_snapshot
from active_memory.store.files import backup_destination_problem
from active_memory.store.init_receipts import delete_receipt, publish_with_receipt, read_receipt
from active_memory.store.paths import DEFAULT_NAMESPACE, check_store_location, default_store_path
from active_memory.store.quarantine_rows import QuarantineEntry
from active_memory.store.results import DEFAULT_LIMITS, StoreCheck, StoreLimits
from active_memory.store.sql import SqliteConnection
from active_memory.store.unreadable import safe_message
from active_memory.store.writes import (
    read_transaction,
    scrub_file,
    write_transaction,
)

__all__ = ["SqliteStore"]


class SqliteStore(EngineStore):
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
        self._contents = DecodedContent(capacity=2 * max(limits.max_live, 1))
        self._lock = threading.RLock()
        # A read that found no -wal/-shm leaves none: a refused listing as much as a good one.
        self._release = read_only and companions_absent(self._path)
        self._conn: SqliteConnection | None = open_connection(
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

    def _connection(self, *, write: bool = False) -> SqliteConnection:
        return live_connection(self._conn, self._path, read_only=self._read_only, write=write)

    @contextlib.contextmanager
    def _reading(self, failure: type[StoreError] = StoreError) -> Iterator[SqliteConnection]:
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

    @contextlib.contextmanager
    def _writing(self, control: PublicationControl | None = None) -> Iterator[SqliteConnection]:
        with self._lock:
            conn = self._connection(write=True)
            with write_transaction(conn, control):
                yield conn

    # -- the backend protocol (generation: EngineStore) ------------------------------------

    def snapshot(self, request: SnapshotRequest) -> Snapshot:
        """Every live lesson in scope, sorted by id, read in one transaction.

        Each row is verified against its checksum here, so a damaged row refuses the whole
        snapshot; the lessons are decoded from the verified rows on first access.
        """
        with self._reading(SnapshotError) as conn:
            generation, rows = select_snapshot(conn, request)
        verify_snapshot_rows(rows, advice=", run `active-memory store check`")
        return Snapshot(generation, StoredLessons(rows, self._decoded))

    def publish(
        self, publication: Publication, control: PublicationControl | None = None
    ) -> PublicationReceipt:
        """Screen every draft, then commit every mutation or none; see
        ``ActiveMemoryBackend.publish``."""
        refuse_flagged(publication, control)
        with self._writing(control) as conn:
            return publish_checked(conn, publication, self._limits)

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
        ``session`` already published. The drafts are screened first, as by ``publish``: they
        come from a session folder on disk, which may have changed since admission read them."""
        refuse_flagged(publication, control)
        with self._writing(control) as conn:
            return publish_with_receipt(conn, publication, session, self._limits, held)

    def init_receipt(self, session: str) -> PublicationReceipt | None:
        with self._reading() as conn:
            return read_receipt(conn, session)

    def drop_init_receipt(self, session: str) -> None:
        with self._writing() as conn:
            delete_receipt(conn, session)

    # -- admin (list, get, history, revert, purge, export, import, review: EngineStore) -----

    def _scrub(self) -> bool:
        """After a purge or a rejection: secure delete zeroed the freed cells; a truncating
        checkpoint and VACUUM drop stale pages from the main file and the WAL, so no card
        content is left behind. Whether that completed (a busy reader can keep old pages in
        the WAL)."""
        return scrub_file(self._connection(write=True))

    def _serial(self) -> threading.RLock:
        return self._lock

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
