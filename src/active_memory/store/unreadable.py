"""Damage that SQLite reports in words we must not repeat: undecodable text and schema.

Python's ``sqlite3`` turns a TEXT cell that is not UTF-8 into "Could not decode to UTF-8 column
'body' with text '…'", quoting the cell, and a damaged schema into a UnicodeDecodeError (SQLite's
own message quotes the broken schema bytes). Neither may reach a user as it is: the first puts
lesson text into an error, the second is a traceback. Here such errors become a sentence naming
the column, and a scan that reads text columns as bytes names the ids whose cells are not text.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from active_memory.errors import StoreError
from active_memory.store.sql import SqlConnection

__all__ = [
    "fetch_rows",
    "is_undecodable",
    "raw_cells",
    "safe_message",
    "text_cell",
    "undecodable_ids",
]

_UNDECODABLE = "Could not decode to UTF-8"
# What each scanned table calls its rows, and the text columns a reader decodes.
_TEXT_COLUMNS = {
    "records": ("id", "kind", "repository", "graph_hash", "node_id", "body", "evidence"),
    "history": ("id", "op", "body", "evidence", "run_id", "time"),
}


def is_undecodable(error: BaseException) -> bool:
    """Whether ``error`` is a text cell (or SQLite's message) that is not UTF-8."""
    if isinstance(error, UnicodeDecodeError):
        return True
    return isinstance(error, sqlite3.Error) and str(error).startswith(_UNDECODABLE)


def safe_message(error: BaseException) -> str:
    """``error`` in words that quote no stored text."""
    if isinstance(error, UnicodeDecodeError):
        return "its schema is damaged (SQLite's own message about it is not UTF-8 text)"
    text = str(error)
    if text.startswith(_UNDECODABLE):
        column = text.split("column ", 1)[-1].split(" with text", 1)[0]
        return f"a stored {column} is not UTF-8 text"
    return text


def raw_cells(columns: str) -> str:
    """A select list reading each of ``columns`` (comma separated) as its type and its value,
    TEXT as bytes, so no cell is decoded by SQLite; :func:`text_cell` turns a pair back."""
    return ", ".join(
        f"typeof({c}), CASE WHEN typeof({c}) = 'text' THEN CAST({c} AS BLOB) ELSE {c} END"
        for c in (name.strip() for name in columns.split(","))
    )


def text_cell(kind: object, raw: object) -> object:
    """The value a reader gets for a cell read through :func:`raw_cells`.

    Raises UnicodeDecodeError when a TEXT cell is not UTF-8; other types come back as stored.
    """
    if kind == "text" and isinstance(raw, bytes):
        return raw.decode("utf-8")
    return raw


def _label(rowid: object, raw_id: object) -> str:
    if isinstance(raw_id, bytes):
        try:
            return repr(raw_id.decode("utf-8"))
        except UnicodeDecodeError:
            pass
    return f"at row {rowid} (its id is not text)"


def undecodable_ids(conn: sqlite3.Connection, table: str) -> list[tuple[str, str]]:
    """``(row label, column)`` for every row of ``table`` with a TEXT cell that is not UTF-8.

    The label is the quoted id, or the row number when the id itself cannot be decoded.
    """
    columns = _TEXT_COLUMNS[table]
    cells = raw_cells(", ".join(columns))
    found: list[tuple[str, str]] = []
    for row in conn.execute(f"SELECT rowid, {cells} FROM {table} ORDER BY rowid"):
        rowid, values = row[0], row[1:]
        for index, column in enumerate(columns):
            try:
                text_cell(values[2 * index], values[2 * index + 1])
            except UnicodeDecodeError:
                found.append((_label(rowid, values[1]), column))
                break
    return found


def fetch_rows(conn: SqlConnection, sql: str, params: Any = ()) -> list[Any]:
    """Every row of ``sql``; a stored text that is not UTF-8 is a StoreError naming the ids."""
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError as error:
        # Only SQLite hands back text that is not UTF-8 (PostgreSQL refuses to store it).
        if not is_undecodable(error) or not isinstance(conn, sqlite3.Connection):
            raise
    unreadable = undecodable_ids(conn, "records") + undecodable_ids(conn, "history")
    shown = ", ".join(f"{label} ({column})" for label, column in unreadable[:5]) or "some rows"
    raise StoreError(
        f"stored lessons cannot be read, their text is not UTF-8: {shown}; run "
        "`active-memory store check` and restore them from a backup or history"
    )
