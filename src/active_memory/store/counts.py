"""The counts triggers keep, against a recount of the rows, and their rebuild from one.

Two sets, on either engine: the capacity counters in ``meta`` (live lessons, rows, content
bytes: what the limits are checked against) and ``scope_counts`` (live lessons by repository
and by graph: what the browser's filters show, from ``m005_lesson_search`` on SQLite and
``m003_lesson_search`` on PostgreSQL). Both are derived from ``records``; only an edit outside
active-memory (or a damaged file) makes them disagree, and ``store check --repair`` rebuilds
them (:func:`rebuild_counts`) in one write transaction, leaving every lesson and the
generation as they were.
"""

from __future__ import annotations

import sqlite3

from active_memory.store.search_text import COUNT_ALL, has_table
from active_memory.store.sql import SqlConnection
from active_memory.store.writes import count_capacity, read_capacity

__all__ = ["REPAIR", "SCOPE_RECOUNT", "capacity_problems", "rebuild_counts", "scope_count_problems"]

REPAIR = "active-memory store check --repair"
_SHOWN = 3  # scopes a finding names; the rest are counted
_NAME_CHARS = 60

# Live lessons by scope as (kind, name, count), counted from the rows: what scope_counts holds.
SCOPE_RECOUNT = """
    SELECT 'repository', repository, COUNT(*) FROM records
    WHERE deleted = 0 AND repository IS NOT NULL GROUP BY repository
    UNION ALL
    SELECT 'graph', graph_hash, COUNT(*) FROM records
    WHERE deleted = 0 AND kind = 'graph' GROUP BY graph_hash
"""


def capacity_problems(conn: SqlConnection) -> list[str]:
    """The capacity counters against a recount of the rows."""
    capacity, recount = read_capacity(conn), count_capacity(conn)
    if capacity == recount:
        return []
    return [
        f"capacity counters {capacity} disagree with a recount {recount}; the store was "
        f"edited outside active-memory: rebuild them with `{REPAIR}`"
    ]


def _has_scope_counts(conn: SqlConnection) -> bool:
    if isinstance(conn, sqlite3.Connection):
        return has_table(conn, "scope_counts")  # a store not yet upgraded has none
    (found,) = conn.execute("SELECT to_regclass('scope_counts') IS NOT NULL").fetchone()
    return bool(found)


def _scope(kind: str, name: str) -> str:
    shown = name if len(name) <= _NAME_CHARS else name[:_NAME_CHARS] + "…"
    return f"{kind} {shown!r}"


def scope_count_problems(conn: SqlConnection) -> list[str]:
    """One finding when ``scope_counts`` disagrees with a recount: the first scopes that
    differ, each with the count kept and the count found, and how to rebuild the table."""
    if not _has_scope_counts(conn):
        return []
    kept = {
        (str(kind), str(name)): int(live)
        for kind, name, live in conn.execute("SELECT kind, name, live FROM scope_counts")
        if int(live) != 0  # a scope whose last lesson left keeps its row at 0
    }
    counted = {
        (str(kind), str(name)): int(live) for kind, name, live in conn.execute(SCOPE_RECOUNT)
    }
    wrong = sorted(key for key in kept.keys() | counted.keys() if kept.get(key) != counted.get(key))
    if not wrong:
        return []
    named = ", ".join(
        f"{_scope(*key)} holds {kept.get(key, 0)} where a recount finds {counted.get(key, 0)}"
        for key in wrong[:_SHOWN]
    )
    more = f" and {len(wrong) - _SHOWN} more scope(s)" if len(wrong) > _SHOWN else ""
    return [
        f"the table scope_counts (live lessons by repository and graph, shown by the browser) "
        f"disagrees with a recount: {named}{more}; the store was edited outside active-memory: "
        f"rebuild the counts with `{REPAIR}`"
    ]


def rebuild_counts(conn: SqlConnection) -> None:
    """Set the capacity counters and ``scope_counts`` to a recount of ``records``; inside the
    caller's write transaction."""
    recount = count_capacity(conn)
    conn.execute(
        "UPDATE meta SET live_count = ?, record_count = ?, content_bytes = ?",
        (recount.live, recount.rows, recount.content_bytes),
    )
    if _has_scope_counts(conn):
        conn.execute("DELETE FROM scope_counts")
        for statement in COUNT_ALL:
            conn.execute(statement)
