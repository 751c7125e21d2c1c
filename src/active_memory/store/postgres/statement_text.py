"""The texts of the PostgreSQL store's statements that carry their values in themselves.

A transaction's start, its settings and a read of the rows a batch names go to the server as
one simple query, or one prepared statement, rather than with bound parameters: a round trip
fewer, or a statement that stays prepared. Every value written into such a text is first
checked against a plain pattern (a schema name, an integer, a lesson id): a quote or a
backslash can never reach the text, because a value that could hold one is refused, never
escaped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from active_memory.errors import StoreError

__all__ = ["STATEMENT_TIMEOUT_MS", "configure", "locking", "opening", "rows_query"]

STATEMENT_TIMEOUT_MS = 60_000


@lru_cache(maxsize=1024)
def opening(
    begin: str, schema: str, lock_timeout_ms: int | None, ahead: str | None, locks: bool
) -> bytes:
    """``BEGIN``, the settings for the transaction only and ``ahead`` (``FOR UPDATE`` when it
    ``locks``), as one simple query (no parameters: a pipeline of three statements cost psycopg
    more CPU than the two round trips it saved, over a local socket). The values are a
    validated schema name and integers; a quote or a backslash in them is refused rather than
    escaped."""
    statements = [begin, configure(schema, lock_timeout_ms)]
    if ahead is not None:
        statements.append(f"{ahead} FOR UPDATE" if locks else ahead)
    return "; ".join(statements).encode()


@lru_cache(maxsize=256)
def locking(schema: str, lock_timeout_ms: int) -> bytes:
    """The settings of a write sent whole and its writers' lock, in one statement (prepared
    once run often: parsing it would hold the lock longer). Its settings are made before the
    row is locked (PostgreSQL locks the rows a scan returns, the settings among their
    columns), so the lock timeout bounds the wait; the table is named with its schema, which
    the statement's own ``search_path`` cannot yet be. The generic plans it asks for: left to
    choose, PostgreSQL plans the guard (``at_once``) anew on every run, preferring a plan for
    each run's values (a third of a publication's statement time on the server); the generic
    plan reads the same few rows by their key."""
    settings = configure(schema, lock_timeout_ms, generic=True)
    return f'{settings}, generation FROM "{schema}".meta FOR UPDATE'.encode()


@lru_cache(maxsize=1024)
def configure(schema: str, lock_timeout_ms: int | None, *, generic: bool = False) -> str:
    """The ``SELECT set_config(…)`` of a transaction's settings, each for it only; ``generic``:
    its prepared statements run on the plan made once for each (see :func:`locking`)."""
    settings = {"search_path": f'"{schema}"', "statement_timeout": str(STATEMENT_TIMEOUT_MS)}
    if lock_timeout_ms is not None:
        settings["lock_timeout"] = str(int(lock_timeout_ms))
    if generic:
        settings["plan_cache_mode"] = "force_generic_plan"
    for value in settings.values():
        if not _PLAIN_SETTING.fullmatch(value):
            raise StoreError(f"refusing the setting {value!r}: not a plain schema name or number")
    return "SELECT " + ", ".join(
        f"set_config('{name}', '{value}', true)" for name, value in settings.items()
    )


_PLAIN_SETTING = re.compile(r'"?[a-z][a-z0-9_]{0,62}"?|[0-9]{1,12}')
_PLAIN_LESSON_ID = re.compile(r"lesson-[0-9A-HJKMNP-TV-Z]{26}")
_ROWS_AHEAD = 500  # as many ids as a chunk of ``writes.rows_by_id``


def rows_query(columns: str, ids: Sequence[str]) -> str | None:
    """``SELECT columns FROM records`` for the rows of ``ids``, their values written into the
    text, for a write to read in a simple query with its transaction's start: with the lock
    (``writing``'s ``then``) or before it (``at_once``), one round trip fewer either way; None,
    so the caller reads them the usual way (or writes the locked way) with bound parameters,
    when there is no id, more than a batch's worth, or one that is not a plain lesson id (no
    quote, no backslash can then reach the text: each value is refused, never escaped)."""
    wanted = list(dict.fromkeys(ids))
    if not wanted or len(wanted) > _ROWS_AHEAD or not all(map(_PLAIN_LESSON_ID.fullmatch, wanted)):
        return None
    values = ", ".join(f"'{lesson_id}'" for lesson_id in wanted)
    return f"SELECT {columns} FROM records WHERE id IN ({values})"
