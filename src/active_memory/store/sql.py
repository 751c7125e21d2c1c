"""The slice of a DB-API connection the shared store logic uses, so both engines run it.

``admin``, ``transfer`` and ``writes`` plan and apply changes through ``conn.execute(sql,
params)`` (``executemany`` for one write over many rows) with ``?`` placeholders, reading rows
as tuples, and send a run of writes whose results they need only at the end inside
``conn.pipeline()``. :class:`SqliteConnection` is
``sqlite3.Connection`` with a pipeline that does nothing (SQLite runs in process: a statement
costs no round trip); :class:`~active_memory.store.postgres.session.PgSession` adapts a psycopg
connection (the placeholders become ``%s``; its pipeline sends the statements without waiting
for each other's results). The SQL in those modules is written in the dialect both share.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol

__all__ = ["SqlConnection", "SqlCursor", "SqliteConnection"]


class SqlCursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class SqlConnection(Protocol):
    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> SqlCursor: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> object:
        """One statement run once per parameter row (no result is read): SQLite prepares it
        once; PostgreSQL sends every row in the pipeline, psycopg preparing the statement on
        the server at its first run (unless prepared statements are off, ``PgSession``)."""
        ...

    def pipeline(self, *, last: bool = False) -> AbstractContextManager[object]:
        """Statements executed inside may be sent before the results of the earlier ones have
        come back; every result is there once the block ends (or at the first fetch).

        ``last``: the transaction is to commit once these statements succeed, whatever they
        return, and nothing more runs in it: an engine may send its ``COMMIT`` with them
        (PostgreSQL: one round trip fewer while other writers wait for the lock)."""
        ...


class SqliteConnection(sqlite3.Connection):
    """The lesson store's SQLite connections (``sqlite3.connect(…, factory=…)``)."""

    def pipeline(self, *, last: bool = False) -> AbstractContextManager[object]:
        return nullcontext()  # in process: the transaction's end costs no round trip
