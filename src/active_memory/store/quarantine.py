"""The quarantine: proposals held back by weak screening signals, waiting for a person.

Admission quarantines a discovered lesson that passed every stage but tripped only weak signals
(:mod:`active_memory.screening.verdict`). The postmortem does not publish it; it keeps the
draft (card, scope and evidence) here, in the store's ``quarantine`` table, under the lesson id
the host assigned, with the signals as ``stage:code`` tokens. ``active-memory lessons review``
then lists and shows them, and a person decides:

* :meth:`Quarantine.approve` publishes the draft through the store's normal checked
  publication (a create expecting revision 0, so it cannot overwrite anything), after screening
  it again: a strong signal today's detectors find refuses the approval. The entry is then
  removed.
* :meth:`Quarantine.reject` deletes the entry and scrubs the file: secure delete zeroes the
  freed cells, a truncating checkpoint and VACUUM drop stale pages from the WAL and the main
  file, so no card content is left behind.

The table lives in the same private SQLite file as the lessons; this module opens its own
connection to it, so the lesson store's own code stays as it is.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from active_memory.errors import PublicationError, QuarantineNotFound, StoreError
from active_memory.models.changes import Mutation, Publication
from active_memory.store.backend import (
    ActiveMemoryBackend,
    PublicationControl,
    PublicationReceipt,
)
from active_memory.store.closing import Closing
from active_memory.store.connect import live_connection, open_connection
from active_memory.store.quarantine_rows import (
    COLUMNS,
    QuarantineEntry,
    entry_from_row,
    hold_entries,
)
from active_memory.store.sqlite import SqliteStore
from active_memory.store.writes import read_transaction, scrub_file, write_transaction

__all__ = ["REVIEW_RUN", "Quarantine", "QuarantineEntry", "quarantine_for"]

REVIEW_RUN = "review"


class Quarantine(Closing):
    """The quarantine table of the store at ``path`` (an existing or new private store)."""

    def __init__(
        self, path: str | os.PathLike[str], *, read_only: bool = False, busy_timeout_ms: int = 5000
    ) -> None:
        self._path = Path(os.path.abspath(os.fspath(path)))
        self._read_only = read_only
        self._conn: sqlite3.Connection | None = open_connection(
            self._path, read_only=read_only, busy_timeout_ms=busy_timeout_ms
        )

    @property
    def path(self) -> Path:
        return self._path

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _connection(self, *, write: bool = False) -> sqlite3.Connection:
        return live_connection(
            self._conn,
            self._path,
            read_only=self._read_only,
            write=write,
            changing="its quarantine",
        )

    def _failed(self, error: sqlite3.Error) -> StoreError:
        return StoreError(
            f"the quarantine of {str(self._path)!r} could not be read or written ({error}); "
            "run `active-memory store check`"
        )

    def hold(self, entries: Sequence[QuarantineEntry]) -> None:
        """Keep ``entries`` (all or none); an id already held is replaced."""
        if not entries:
            return
        conn = self._connection(write=True)
        try:
            with write_transaction(conn):
                hold_entries(conn, entries)
        except sqlite3.Error as error:
            raise self._failed(error) from error

    def entries(self) -> tuple[QuarantineEntry, ...]:
        """Every held proposal, oldest first, then by id."""
        conn = self._connection()
        try:
            with read_transaction(conn):
                rows = conn.execute(
                    f"SELECT {COLUMNS} FROM quarantine ORDER BY time, id"
                ).fetchall()
        except sqlite3.Error as error:
            raise self._failed(error) from error
        return tuple(entry_from_row(row) for row in rows)

    def get(self, lesson_id: str) -> QuarantineEntry:
        conn = self._connection()
        try:
            with read_transaction(conn):
                row = conn.execute(
                    f"SELECT {COLUMNS} FROM quarantine WHERE id = ?", (lesson_id,)
                ).fetchone()
        except sqlite3.Error as error:
            raise self._failed(error) from error
        if row is None:
            raise QuarantineNotFound(lesson_id)
        return entry_from_row(row)

    def approve(
        self, lesson_id: str, backend: ActiveMemoryBackend, *, run_id: str = REVIEW_RUN
    ) -> PublicationReceipt:
        """Publish the held draft as a new lesson through ``backend``'s checked publication,
        then drop the entry. Refused when today's screens find a strong signal in it."""
        # The screens load on use, as in store.transfer: `lessons stats` reads this table.
        from active_memory.screening.cards import screen_card
        from active_memory.screening.verdict import is_weak

        entry = self.get(lesson_id)
        strong = [code for code in screen_card(entry.draft) if not is_weak(code)]
        if strong:
            raise PublicationError(
                f"quarantined proposal {lesson_id!r} now trips {', '.join(strong)}; "
                f"reject it with `active-memory lessons review reject {lesson_id}`"
            )
        mutation = Mutation(op="upsert", id=lesson_id, expected_revision=0, draft=entry.draft)
        # Screened just above; the weak signals it was held for are what the person approved.
        reviewed = PublicationControl(screened_by="review")
        receipt = backend.publish(Publication(run_id=run_id, mutations=(mutation,)), reviewed)
        self._remove(lesson_id, scrub=False)
        return receipt

    def reject(self, lesson_id: str) -> bool:
        """Delete the entry and scrub the file; whether the scrub completed (a busy reader can
        keep old pages in the WAL until it finishes)."""
        self.get(lesson_id)
        return self._remove(lesson_id, scrub=True)

    def _remove(self, lesson_id: str, *, scrub: bool) -> bool:
        conn = self._connection(write=True)
        try:
            with write_transaction(conn):
                conn.execute("DELETE FROM quarantine WHERE id = ?", (lesson_id,))
        except sqlite3.Error as error:
            raise self._failed(error) from error
        return scrub_file(conn) if scrub else True


def quarantine_for(backend: ActiveMemoryBackend) -> Quarantine | None:
    """The quarantine of ``backend``'s store when it is a writable local SQLite store, else
    None (a remote or read-only backend keeps no quarantine; held proposals are then only
    counted)."""
    if isinstance(backend, SqliteStore) and not backend.read_only:
        return Quarantine(backend.path)
    return None
