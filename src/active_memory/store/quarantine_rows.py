"""The quarantine table's rows: :class:`QuarantineEntry` and how it is written and read.

Two writers hold entries: the stores' own review operations (``EngineStore.hold`` and the
rest, on SQLite and PostgreSQL alike) and memory init's receipts (``store/init_receipts.py``,
inside the publishing transaction of the SQLite store). Both write the row here, in the
caller's transaction, in the SQL dialect both engines share, so the columns and the time format
(which orders the review list) are defined once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

from active_memory.errors import QuarantineNotFound
from active_memory.models.lessons import LessonDraft
from active_memory.store.sql import SqlConnection

__all__ = [
    "COLUMNS",
    "QuarantineEntry",
    "drop_held",
    "entry_from_row",
    "hold_entries",
    "read_held",
    "read_held_entry",
]

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


def entry_from_row(row: tuple[object, ...]) -> QuarantineEntry:
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


def hold_entries(conn: SqlConnection, entries: Sequence[QuarantineEntry]) -> None:
    """Write ``entries`` in the caller's transaction; an id already held is replaced, an entry
    without a time is stamped now."""
    for entry in entries:
        conn.execute(
            "INSERT INTO quarantine (id, run_id, role, kind, signals, draft, time) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
            "run_id = excluded.run_id, role = excluded.role, kind = excluded.kind, "
            "signals = excluded.signals, draft = excluded.draft, time = excluded.time",
            (
                entry.id,
                entry.run_id,
                entry.role,
                entry.draft.scope.kind,
                json.dumps(list(entry.signals)),
                entry.draft.model_dump_json(),
                entry.time or _now(),
            ),
        )


def read_held(conn: SqlConnection) -> tuple[QuarantineEntry, ...]:
    """Every held proposal, oldest first, then by id."""
    rows = conn.execute(f"SELECT {COLUMNS} FROM quarantine ORDER BY time, id").fetchall()
    return tuple(entry_from_row(tuple(row)) for row in rows)


def read_held_entry(conn: SqlConnection, lesson_id: str) -> QuarantineEntry:
    """The held proposal ``lesson_id``; QuarantineNotFound when none is held."""
    row = conn.execute(f"SELECT {COLUMNS} FROM quarantine WHERE id = ?", (lesson_id,)).fetchone()
    if row is None:
        raise QuarantineNotFound(lesson_id)
    return entry_from_row(tuple(row))


def drop_held(conn: SqlConnection, lesson_id: str) -> None:
    conn.execute("DELETE FROM quarantine WHERE id = ?", (lesson_id,))
