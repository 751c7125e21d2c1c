"""The slice of a DB-API connection the shared store logic uses, so both engines run it.

``admin``, ``transfer`` and ``writes`` plan and apply changes through ``conn.execute(sql,
params)`` with ``?`` placeholders, reading rows as tuples. ``sqlite3.Connection`` is one as it
is; :class:`~active_memory.store.postgres.session.PgSession` adapts a psycopg connection (the
placeholders become ``%s``). The SQL in those modules is written in the dialect both share.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

__all__ = ["SqlConnection", "SqlCursor"]


class SqlCursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class SqlConnection(Protocol):
    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> SqlCursor: ...
