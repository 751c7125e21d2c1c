"""What the MCP tools read from the lesson store: always read-only, always this workspace's.

The store is opened read-only (``mode=ro``: it is never created, migrated or written) for each
tool call and closed after it, so a server left running holds no connection between calls and
sees every publication. The recall index is rebuilt only when the store moved since the last
call: its generation, or the file itself (another inode, size or modification time), since a
store restored or copied over this one may stand at the same generation with other lessons.
The recall session keeps its exposures across that swap.

Nothing here returns a lesson the workspace does not own (:meth:`Workspace.owns`), and a lesson
of another repository is reported exactly as an id that does not exist, so a client cannot tell
the two apart.

``explain`` adds the lesson's ledger (:mod:`active_memory.ledger`): what it has done, counted
from the run records, run logs, latched outcomes and reports under the ``runs`` folders (default:
the ``runs`` folder beside the store, where an in-process host keeps each run's state), the
exposure files beside the store, and whether a proposal with its id waits in the quarantine.
Those sources are read again on every ``explain``, so a run that settled meanwhile counts.

A team store (PostgreSQL, or the memory service through a token) is given open as ``team``
instead of a path: it is read through the same calls, its generation alone tells whether it
moved, and its ledgers count the ``runs`` folders given (it has no folder beside it).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from active_memory.errors import LessonNotFound, LessonRetired
from active_memory.ledger import LedgerSources, LessonLedger, lesson_ledger, store_sources
from active_memory.mcp_server.workspace import Workspace
from active_memory.models.lessons import Lesson
from active_memory.recall.index import RecallIndex
from active_memory.store.admin_backend import AdminBackend
from active_memory.store.backend import RunIdentity, SnapshotRequest
from active_memory.store.results import HistoryEntry
from active_memory.store.team_or_file import team_or_file

__all__ = ["Explained", "StoreReads"]


@dataclass(frozen=True, slots=True)
class Explained:
    """One lesson as ``explain`` shows it: live (``lesson``) or retired (``retired_at``), with
    every revision of it, oldest first, its ledger, and the ledger source files that could not
    be read (each with why)."""

    lesson: Lesson | None
    history: tuple[HistoryEntry, ...]
    retired_at: int | None
    ledger: LessonLedger
    skipped: tuple[str, ...] = ()


def _file_stamp(path: Path | None) -> tuple[int, ...]:
    """What tells the store file apart from one put in its place (0s when it is missing: the
    open that follows names the problem; and for a team store, which has no file)."""
    if path is None:
        return (0, 0, 0, 0)
    try:
        info = os.stat(path)
    except OSError:
        return (0, 0, 0, 0)
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


class StoreReads:
    """The workspace's lessons in the store at ``path``, or in the open ``team`` store (then
    ``path`` is None; the caller closes it)."""

    def __init__(
        self,
        path: Path | None,
        workspace: Workspace,
        *,
        runs: Sequence[Path] = (),
        team: AdminBackend | None = None,
    ) -> None:
        if (path is None) == (team is None):
            raise ValueError("StoreReads reads either a store file (path) or a team store")
        self.path = None if path is None else Path(os.path.abspath(path))
        self.team = team
        self.workspace = workspace
        self.runs = tuple(Path(os.path.abspath(folder)) for folder in runs)
        self._stamp: tuple[int, ...] | None = None
        self._index: RecallIndex | None = None

    def _store(self) -> AbstractContextManager[AdminBackend]:
        return team_or_file(self.team, self.path)

    def recall_index(self) -> tuple[int, RecallIndex, bool]:
        """The index of the workspace's repository lessons, its generation, and whether it was
        rebuilt by this call (the store moved)."""
        # Taken before opening: a file replaced after it is another file at the next call.
        file = _file_stamp(self.path)
        with self._store() as store:
            generation = store.generation()
            if self._index is not None and (generation, *file) == self._stamp:
                return generation, self._index, False
            identity = RunIdentity("mcp", repository=self.workspace.key)
            snapshot = store.snapshot(SnapshotRequest(identity, repository=True, graph=False))
        self._index = RecallIndex(snapshot.lessons, repository=self.workspace.key)
        self._stamp = (snapshot.generation, *file)
        return snapshot.generation, self._index, True

    def _sources(self) -> LedgerSources:
        return store_sources(self.runs, self.path)

    def explain(self, lesson_id: str) -> Explained | None:
        """The lesson, its history and ledger; None when it is not this workspace's (or never
        was)."""
        with self._store() as store:
            live: Lesson | None = None
            retired_at: int | None = None
            try:
                live = store.get(lesson_id)
            except LessonRetired as retired:
                retired_at = retired.revision
            except LessonNotFound:
                return None
            history = store.history(lesson_id)
            # A tombstone keeps no scope: the last revision with content tells whose it was.
            drafts = [entry.draft for entry in history if entry.draft is not None]
            owner = live if live is not None else (drafts[-1] if drafts else None)
            if owner is None or not self.workspace.owns(owner):
                return None
            sources = self._sources()
            held = [entry.id for entry in store.held() if entry.id == lesson_id]
            ledger = lesson_ledger(lesson_id, store, sources, quarantined=held)
        return Explained(live, history, retired_at, ledger, sources.skipped)

    def lessons(
        self, *, graph_hash: str | None = None, node_id: str | None = None
    ) -> tuple[Lesson, ...]:
        """Repository lessons of the workspace (no ``graph_hash``), else the graph lessons of
        ``graph_hash`` (one node's with ``node_id``) a run of this repository would see."""
        with self._store() as store:
            if graph_hash is None:
                found = store.list_lessons(repository=self.workspace.key)
                return tuple(lesson for lesson in found if lesson.scope.kind == "repository")
            found = store.list_lessons(graph_hash=graph_hash, node_id=node_id)
        return tuple(lesson for lesson in found if self.workspace.owns(lesson))
