"""The quarantine: proposals held back by weak screening signals, waiting for a person.

Admission quarantines a discovered lesson that passed every stage but tripped only weak signals
(:mod:`active_memory.screening.verdict`). The postmortem does not publish it; it keeps the
draft (card, scope and evidence) in the store's ``quarantine`` table, under the lesson id the
host assigned, with the signals as ``stage:code`` tokens. ``active-memory lessons review`` then
lists and shows them, and a person decides:

* approve publishes the draft through the store's checked publication (a create expecting
  revision 0, so it cannot overwrite anything), after screening it again: a strong signal
  today's detectors find refuses the approval. The entry is removed in the same transaction.
* reject deletes the entry; a SQLite store then scrubs its file (secure delete zeroes the freed
  cells, a truncating checkpoint and VACUUM drop stale pages), so no card content is left.

Every store keeps its quarantine: SQLite and PostgreSQL in a table beside the lessons
(``EngineStore.held``, ``hold``, ``approve_held``, ``reject_held``), the memory service through
its review routes (``RemoteBackend``, the same methods). :class:`Quarantine` is the same review
on a SQLite store named by its path, for the tools that hold a path rather than a store.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from active_memory.store.backend import PublicationReceipt
from active_memory.store.closing import Closing
from active_memory.store.engine import REVIEW_RUN
from active_memory.store.quarantine_rows import QuarantineEntry
from active_memory.store.sqlite import SqliteStore

__all__ = ["REVIEW_RUN", "Quarantine", "QuarantineEntry", "QuarantineKeeper", "quarantine_for"]


@runtime_checkable
class QuarantineKeeper(Protocol):
    """A backend that keeps held proposals: every store and the memory service's client."""

    def held(self) -> tuple[QuarantineEntry, ...]: ...

    def held_entry(self, lesson_id: str) -> QuarantineEntry: ...

    def hold(self, entries: Sequence[QuarantineEntry]) -> None: ...

    def approve_held(self, lesson_id: str, *, run_id: str = REVIEW_RUN) -> PublicationReceipt: ...

    def reject_held(self, lesson_id: str) -> bool: ...


class Quarantine(Closing):
    """The quarantine of the SQLite store at ``path`` (an existing or new private store)."""

    def __init__(
        self, path: str | os.PathLike[str], *, read_only: bool = False, busy_timeout_ms: int = 5000
    ) -> None:
        self._store = SqliteStore(path, read_only=read_only, busy_timeout_ms=busy_timeout_ms)

    @property
    def path(self) -> Path:
        return self._store.path

    def close(self) -> None:
        self._store.close()

    def hold(self, entries: Sequence[QuarantineEntry]) -> None:
        """Keep ``entries`` (all or none); an id already held is replaced."""
        self._store.hold(entries)

    def entries(self) -> tuple[QuarantineEntry, ...]:
        """Every held proposal, oldest first, then by id."""
        return self._store.held()

    def get(self, lesson_id: str) -> QuarantineEntry:
        return self._store.held_entry(lesson_id)

    def approve(self, lesson_id: str, *, run_id: str = REVIEW_RUN) -> PublicationReceipt:
        """Publish the held draft as a new lesson and drop the entry, in one transaction.
        Refused when today's screens find a strong signal in it."""
        return self._store.approve_held(lesson_id, run_id=run_id)

    def reject(self, lesson_id: str) -> bool:
        """Delete the entry and scrub the file; whether the scrub completed (a busy reader can
        keep old pages in the WAL until it finishes)."""
        return self._store.reject_held(lesson_id)


def quarantine_for(backend: object) -> QuarantineKeeper | None:
    """``backend`` itself when it keeps a quarantine it may write (a writable store, the memory
    service's client), else None (a read-only store: held proposals are then only counted)."""
    if not isinstance(backend, QuarantineKeeper):
        return None
    if getattr(backend, "read_only", False):
        return None
    return backend
