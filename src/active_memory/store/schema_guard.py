"""Refuse to write through SQL that active-memory did not put in a store file.

A trigger runs inside every write that touches its table, with the writer's rights: one
planted in a store file (by another tool, or an attacker who could write the file once) would
run on the next publication or import, and could rewrite what was just checked. So each write
transaction of an SQLite store, once it holds the lock, compares the file's triggers and views
with those its recorded migrations create, and refuses the write when one is not ours, naming
it and ``store check``. ``store check`` itself only reads, so it can still report the object.
"""

from __future__ import annotations

import functools
import sqlite3

from active_memory.errors import StoreError
from active_memory.store.migrations import MIGRATIONS, applied_migrations, apply_pending

__all__ = ["foreign_code", "refuse_foreign_code"]

_EXECUTABLE = ("trigger", "view")
_SCHEMA = (
    "SELECT type, name, CAST(sql AS BLOB) FROM sqlite_master "
    f"WHERE type IN ({', '.join(repr(kind) for kind in _EXECUTABLE)})"
)


def _objects(conn: sqlite3.Connection) -> dict[tuple[str, str], bytes]:
    return {(str(kind), str(name)): bytes(sql or b"") for kind, name, sql in conn.execute(_SCHEMA)}


@functools.cache
def _ours(migrations: int) -> dict[tuple[str, str], bytes]:
    """The triggers and views the first ``migrations`` migrations create, as SQLite stores
    their text."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        apply_pending(conn, MIGRATIONS[:migrations])
        return _objects(conn)
    finally:
        conn.close()


def foreign_code(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """(kind, name) of every trigger or view in the store that its migrations did not create
    as it is, sorted."""
    ours = _ours(min(len(applied_migrations(conn)), len(MIGRATIONS)))
    return sorted(key for key, sql in _objects(conn).items() if ours.get(key) != sql)


def refuse_foreign_code(conn: sqlite3.Connection) -> None:
    """StoreError naming the first trigger or view that is not ours (see the module)."""
    found = foreign_code(conn)
    if found:
        kind, name = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise StoreError(
            f"the lesson store holds a {kind} {name!r}{more} that active-memory did not "
            "create, which would run inside this write; nothing was written, run "
            "`active-memory store check` and restore the store from a backup"
        )
