"""The quarantine table's rows: :class:`QuarantineEntry` and how it is written and read.

Two writers hold entries: :class:`~active_memory.store.quarantine.Quarantine` (a review's own
connection) and memory init's receipts (``store/init_receipts.py``, inside the publishing
transaction of the SQLite store). Both write the row here, in the caller's transaction, so the
columns and the time format (which orders the review list) are defined once. This module sits
below both and below the SQLite store, which names the entry type in ``publish_once``, so none
of them needs another's module for it.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass

from active_memory.models.lessons import LessonDraft

__all__ = ["COLUMNS", "QuarantineEntry", "entry_from_row", "hold_entries"]

COLUMNS = "id, run_id, role, signals, draft, time"


@dataclass(frozen=True, slots=True)
class QuarantineEntry:
    """One held proposal: the lesson id it would be published under, who proposed it in which
    run, the weak signals it tripped and the whole draft."""

    id: str
    run_id: str
    role: str
    signals: tuple[str, ...]
    draft: LessonDraft
    time: str


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def entry_from_row(row: sqlite3.Row | tuple[object, ...]) -> QuarantineEntry:
    """The entry of a row selected as :data:`COLUMNS`."""
    lesson_id, run_id, role, signals, draft, when = row
    return QuarantineEntry(
        id=str(lesson_id),
        run_id=str(run_id),
        role=str(role),
        signals=tuple(json.loads(str(signals))),
        draft=LessonDraft.model_validate_json(str(draft)),
        time=str(when),
    )


def hold_entries(conn: sqlite3.Connection, entries: Sequence[QuarantineEntry]) -> None:
    """Write ``entries`` in the caller's transaction; an id already held is replaced, an entry
    without a time is stamped now."""
    conn.executemany(
        "INSERT OR REPLACE INTO quarantine (id, run_id, role, kind, signals, draft, time) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (
                entry.id,
                entry.run_id,
                entry.role,
                entry.draft.scope.kind,
                json.dumps(list(entry.signals)),
                entry.draft.model_dump_json(),
                entry.time or _now(),
            )
            for entry in entries
        ],
    )
