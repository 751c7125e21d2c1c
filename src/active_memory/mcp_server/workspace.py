"""The repository an MCP server serves, and which paths and lessons belong to it.

The workspace is the git checkout holding the server's directory (its top level, as
``git rev-parse --show-toplevel`` finds it), else that directory itself; its key is
:func:`active_memory.repository.repository_key`, the derivation every hook and ``recall`` uses,
so a lesson published from a run in this checkout is the one served here. A lesson is this
workspace's when it is a repository lesson of that key, or a graph lesson that is unqualified or
qualified by that key: exactly what a run's snapshot of this repository would hold.

Paths are read as the hooks read them (:class:`~active_memory.recall.signals.WorkspaceRoot`):
lexically, relative to the root unless absolute, never following a symlink or touching the
file. A path that leaves the workspace is outside, and nothing is recalled for it. Both
spellings of the root are understood: the real one and the one the server was started under
(``/work/link`` when it points at the checkout), since a client sends paths as it opened them.
"""

from __future__ import annotations

import os
from pathlib import Path

from active_memory.models.lessons import Lesson, LessonDraft
from active_memory.recall.signals import WorkspaceRoot
from active_memory.repository import find_checkout, repository_key

__all__ = ["Workspace"]


class Workspace:
    """The served checkout: its root folder, its spellings for matching, and its key."""

    __slots__ = ("key", "root", "spellings")

    def __init__(self, root: Path, key: str, spelled: Path | None = None) -> None:
        self.root = root
        self.key = key
        # The spelling given and its real path: WorkspaceRoot keeps both, real one second.
        self.spellings = WorkspaceRoot.at(spelled or root)

    @classmethod
    def at(cls, directory: str | os.PathLike[str]) -> Workspace:
        """The workspace holding ``directory`` (an existing folder)."""
        start = Path(os.path.abspath(os.fspath(directory)))
        checkout = find_checkout(start)
        root = checkout if checkout is not None else Path(os.path.realpath(start))
        spelled = next((folder for folder in (start, *start.parents)
                        if os.path.realpath(folder) == str(root)), None)  # fmt: skip
        return cls(root, repository_key(root), spelled)

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r}, {self.key!r})"

    def relative(self, path: str, base: str | None = None) -> str | None:
        """``path`` relative to the root (``""`` for the root itself), read from ``base`` (an
        absolute folder inside the workspace, default the root); None when it is outside."""
        start = base if base is not None else self.spellings.primary
        return self.spellings.resolve(path, start, fallback=False)

    def owns(self, lesson: Lesson | LessonDraft) -> bool:
        """Whether a run of this repository would see ``lesson`` in its snapshot."""
        scope = lesson.scope
        if scope.kind == "repository":
            return scope.repository == self.key
        return scope.repository in (None, self.key)
