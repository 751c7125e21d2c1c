"""What the MCP tools read from the lesson store: always read-only, always this workspace's.

The store is opened read-only (``mode=ro``: it is never created, migrated or written) for each
tool call and closed after it, so a server left running holds no connection between calls and
sees every publication. The recall index is rebuilt only when the store's generation moved
since the last call; the recall session keeps its exposures across that swap.

Nothing here returns a lesson the workspace does not own (:meth:`Workspace.owns`), and a lesson
of another repository is reported exactly as an id that does not exist, so a client cannot tell
the two apart.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from active_memory.errors import LessonNotFound, LessonRetired
from active_memory.mcp_server.workspace import Workspace
from active_memory.models.lessons import Lesson
from active_memory.recall.index import RecallIndex
from active_memory.store.backend import RunIdentity, SnapshotRequest
from active_memory.store.results import HistoryEntry
from active_memory.store.sqlite import SqliteStore

__all__ = ["Explained", "StoreReads"]


class Explained:
    """One lesson as ``explain`` shows it: live (``lesson``) or retired (``retired_at``), with
    every revision of it, oldest first."""

    __slots__ = ("history", "lesson", "retired_at")

    def __init__(
        self, lesson: Lesson | None, history: tuple[HistoryEntry, ...], retired_at: int | None
    ) -> None:
        self.lesson = lesson
        self.history = history
        self.retired_at = retired_at


class StoreReads:
    """The workspace's lessons in the store at ``path``."""

    def __init__(self, path: Path, workspace: Workspace) -> None:
        self.path = Path(os.path.abspath(path))
        self.workspace = workspace
        self._generation: int | None = None
        self._index: RecallIndex | None = None

    @contextmanager
    def _store(self) -> Iterator[SqliteStore]:
        with SqliteStore(self.path, read_only=True) as store:
            yield store

    def recall_index(self) -> tuple[int, RecallIndex, bool]:
        """The index of the workspace's repository lessons, its generation, and whether it was
        rebuilt by this call (the generation moved)."""
        with self._store() as store:
            generation = store.generation()
            if self._index is not None and generation == self._generation:
                return generation, self._index, False
            identity = RunIdentity("mcp", repository=self.workspace.key)
            snapshot = store.snapshot(SnapshotRequest(identity, repository=True, graph=False))
        self._index = RecallIndex(snapshot.lessons, repository=self.workspace.key)
        self._generation = snapshot.generation
        return snapshot.generation, self._index, True

    def explain(self, lesson_id: str) -> Explained | None:
        """The lesson and its history; None when it is not this workspace's (or never was)."""
        with self._store() as store:
            try:
                lesson = store.get(lesson_id)
            except LessonRetired as retired:
                history = store.history(lesson_id)
                # A tombstone keeps no scope: the last revision with content tells whose it was.
                drafts = [entry.draft for entry in history if entry.draft is not None]
                if not drafts or not self.workspace.owns(drafts[-1]):
                    return None
                return Explained(None, history, retired.revision)
            except LessonNotFound:
                return None
            if not self.workspace.owns(lesson):
                return None
            return Explained(lesson, store.history(lesson_id), None)

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
