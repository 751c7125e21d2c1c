"""``team_or_file``: the team store a reader was given, or its store file opened for one block.

A reader such as the MCP server or the review page holds either an open team store (PostgreSQL
or the memory service's client, which its caller opened and closes) or the path of a SQLite
store file, which it opens afresh for each read so that it always sees the file's latest
commit and holds no connection between reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from active_memory.store.sqlite import SqliteStore

__all__ = ["team_or_file"]

Team = TypeVar("Team")


@contextmanager
def team_or_file(
    team: Team | None, path: Path | None, *, read_only: bool = True
) -> Iterator[Team | SqliteStore]:
    """``team`` as it is (left open) when there is one, else the store file at ``path``,
    opened for the block and closed after it."""
    if team is not None:
        yield team
        return
    assert path is not None  # a reader holds a team store or a store file
    with SqliteStore(path, read_only=read_only) as store:
        yield store
