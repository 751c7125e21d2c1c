"""Admin reads and repairs behind the stores (SQLite and PostgreSQL): list, get, history, revert,
purge, check (SQLite's whole file; PostgreSQL's rows through :func:`row_problems`).

Functions take an open connection (``store.sql.SqlConnection``); the store owns locking and
transactions. Decoding failures become StoreError naming the id, never a silently shorter list,
and never quoting the stored text. ``check`` reads every row the way the listings do, so a row
a listing cannot read is a problem ``check`` reports by id.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from active_memory.errors import LessonNotFound, LessonRetired, PublicationError, StoreError
from active_memory.limits import LIMITS
from active_memory.models.lessons import Lesson
from active_memory.store.checked_rows import verify_rows
from active_memory.store.codec import (
    LIVE_COLUMNS,
    DecodedContent,
    RecordError,
    decode_draft,
    decode_lesson,
)
from active_memory.store.counts import capacity_problems, scope_count_problems
from active_memory.store.migrations import MIGRATIONS, applied_migrations, apply_pending
from active_memory.store.results import HistoryEntry, HistoryOp, StoreCheck, Tombstone
from active_memory.store.sql import SqlConnection, SqliteConnection
from active_memory.store.unreadable import (
    fetch_rows,
    raw_cells,
    text_cell,
    undecodable_ids,
)
from active_memory.store.writes import (
    Change,
    count_capacity,
    read_generation,
    read_states,
)

__all__ = [
    "capacity_problems",
    "check_store",
    "get_lesson",
    "history_entries",
    "list_live",
    "list_tombstones",
    "plan_purge",
    "plan_revert",
    "read_all_history_rows",
    "read_history",
    "row_problems",
    "scope_count_problems",
]

_HISTORY_OPS: tuple[HistoryOp, ...] = ("upsert", "retire", "revert", "purge")


def _decode_all(
    rows: list[tuple[object, ...]], contents: DecodedContent | None = None
) -> tuple[Lesson, ...]:
    lessons = []
    for row in rows:
        try:
            lessons.append(decode_lesson(row, contents))
        except RecordError as error:
            raise StoreError(
                f"stored lesson {row[0]!r} {error}; run `active-memory store check` and restore "
                "it from a backup or history"
            ) from None
    return tuple(lessons)


def list_live(
    conn: SqlConnection,
    *,
    repository: str | None = None,
    graph_hash: str | None = None,
    node_id: str | None = None,
    contents: DecodedContent | None = None,
) -> tuple[Lesson, ...]:
    """Live lessons sorted by id; with ``contents``, decoded through its memory."""
    clauses, params = ["deleted = 0"], []
    for column, value in (
        ("repository", repository),
        ("graph_hash", graph_hash),
        ("node_id", node_id),
    ):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    rows = fetch_rows(
        conn,
        f"SELECT {LIVE_COLUMNS} FROM records WHERE {' AND '.join(clauses)} ORDER BY id",
        params,
    )
    return _decode_all(rows, contents)


def list_tombstones(conn: SqlConnection) -> tuple[Tombstone, ...]:
    rows = fetch_rows(conn, "SELECT id, revision, kind FROM records WHERE deleted = 1 ORDER BY id")
    return tuple(Tombstone(id=str(i), revision=int(r), kind=str(k)) for i, r, k in rows)


def get_lesson(conn: SqlConnection, lesson_id: str) -> Lesson:
    sql = f"SELECT {LIVE_COLUMNS}, deleted FROM records WHERE id = ?"
    rows = fetch_rows(conn, sql, (lesson_id,))
    found = rows[0] if rows else None
    if found is None:
        raise LessonNotFound(lesson_id)
    if found[-1]:
        raise LessonRetired(lesson_id, int(found[1]))
    return _decode_all([found[:-1]])[0]


_HISTORY_COLUMNS = "revision, op, body, evidence, source_revision, generation, run_id, time"


def read_history(conn: SqlConnection, lesson_id: str) -> tuple[HistoryEntry, ...]:
    rows = fetch_rows(
        conn,
        f"SELECT {_HISTORY_COLUMNS} FROM history WHERE id = ? ORDER BY revision",
        (lesson_id,),
    )
    if not rows:
        raise LessonNotFound(lesson_id)
    return tuple(_history_entry(lesson_id, row) for row in rows)


def stored_contents(conn: SqlConnection, lesson_id: str) -> list[tuple[str, str]]:
    """Every (body, evidence) stored for ``lesson_id``, live or past: what a purge erases and
    a store's decoded memory must forget with it."""
    rows = fetch_rows(
        conn,
        "SELECT body, evidence FROM history WHERE id = ? AND body IS NOT NULL "
        "AND evidence IS NOT NULL UNION SELECT body, evidence FROM records WHERE id = ? "
        "AND body IS NOT NULL AND evidence IS NOT NULL",
        (lesson_id, lesson_id),
    )
    return [(str(body), str(evidence)) for body, evidence in rows]


def read_all_history_rows(
    conn: SqlConnection,
    *,
    after: str | None = None,
    lessons: int | None = None,
    reach: tuple[str, list[object]] | None = None,
) -> list[Any]:
    """Every lesson's revisions as stored, ``id`` first, ordered by id then revision: one query
    in the caller's read transaction; :func:`history_entries` decodes them after it ends.

    ``after`` starts past that id and ``lessons`` stops after that many whole lessons: the
    pages the memory service answers in. ``reach`` (a condition on ``records`` and its
    parameters, ``access.reached_rows``) keeps only the lessons whose row meets it, before the
    page is cut."""
    conditions: list[str] = []
    params: list[object] = []
    if after is not None:
        conditions.append("id > ?")
        params.append(after)
    if reach is not None:
        conditions.append(f"id IN (SELECT id FROM records WHERE {reach[0]})")
        params.extend(reach[1])
    where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
    if lessons is not None:
        where = f"WHERE id IN (SELECT DISTINCT id FROM history {where} ORDER BY id LIMIT ?)"
        params.append(lessons)
    return fetch_rows(
        conn, f"SELECT id, {_HISTORY_COLUMNS} FROM history {where} ORDER BY id, revision", params
    )


def history_entries(
    rows: Iterable[Sequence[Any]], contents: DecodedContent | None = None
) -> Iterator[HistoryEntry]:
    """The :class:`HistoryEntry` of each :func:`read_all_history_rows` row, in their order,
    decoded one at a time (a consumer that stops early decodes no more); with ``contents``,
    through its memory (a live revision a listing decoded is not validated again)."""
    for row in rows:
        yield _history_entry(str(row[0]), row[1:], contents)


def _history_entry(
    lesson_id: str, row: Sequence[Any], contents: DecodedContent | None = None
) -> HistoryEntry:
    revision, op, body, evidence, source, generation, run_id, time = row
    draft = None
    if body is not None:
        try:
            draft = (
                decode_draft(body, evidence) if contents is None else contents.draft(body, evidence)
            )
        except RecordError as error:
            raise StoreError(f"revision {revision} of {lesson_id!r} {error}") from None
    return HistoryEntry(
        id=lesson_id,
        revision=int(revision),
        op=_op(op),
        generation=generation,
        run_id=str(run_id),
        time=str(time),
        draft=draft,
        source_revision=None if source is None else int(source),
    )


def _op(value: object) -> HistoryOp:
    for op in _HISTORY_OPS:
        if value == op:
            return op
    raise StoreError(f"history holds an unknown operation {value!r}; the store is damaged")


def plan_revert(conn: SqlConnection, lesson_id: str, to_revision: int) -> Change:
    """The change that writes ``to_revision``'s content as a new revision (in a write txn)."""
    state = read_states(conn, [lesson_id]).get(lesson_id)
    if state is None:
        raise LessonNotFound(lesson_id)
    if state.deleted:
        raise PublicationError(
            f"lesson {lesson_id!r} is retired (revision {state.revision}); a retired id cannot "
            "come back, publish a new lesson instead"
        )
    if to_revision == state.revision:
        raise PublicationError(f"lesson {lesson_id!r} is already at revision {to_revision}")
    row = conn.execute(
        "SELECT body, evidence FROM history WHERE id = ? AND revision = ?",
        (lesson_id, to_revision),
    ).fetchone()
    if row is None:
        raise PublicationError(
            f"lesson {lesson_id!r} has no revision {to_revision}; "
            f"`active-memory lessons history {lesson_id}` lists its revisions"
        )
    if row[0] is None:
        raise PublicationError(
            f"revision {to_revision} of {lesson_id!r} has no content (a retirement or erased by "
            "purge); pick another revision"
        )
    try:
        draft = decode_draft(row[0], row[1])
    except RecordError as error:
        raise StoreError(f"revision {to_revision} of {lesson_id!r} {error}") from None
    # The screens load on use: every store command imports this module, and their patterns are
    # most of a reading command's start-up.
    from active_memory.screening.cards import screen_card

    problems = screen_card(draft)
    if problems:
        # An old revision may predate today's detectors; republishing it would inject it again.
        raise PublicationError(
            f"revision {to_revision} of {lesson_id!r} is refused by the admission screen "
            f"({', '.join(problems)}); pick another revision or publish a corrected lesson"
        )
    return Change(
        lesson_id, "revert", state.revision + 1, state.kind, draft, source_revision=to_revision,
        keeps_scope=state.holds_scope_of(draft),
    )  # fmt: skip


def plan_purge(conn: SqlConnection, lesson_id: str) -> tuple[Change | None, int]:
    """Erase the past contents of a retired id (in a write txn).

    Returns the purge marker to write (None when a previous purge already erased everything)
    and how many history rows lost their content.
    """
    state = read_states(conn, [lesson_id]).get(lesson_id)
    if state is None:
        raise LessonNotFound(lesson_id)
    if not state.deleted:
        raise PublicationError(
            f"lesson {lesson_id!r} is live at revision {state.revision}; purge only erases "
            "retired lessons, so retire it first"
        )
    erased = conn.execute(
        "UPDATE history SET body = NULL, evidence = NULL WHERE id = ? AND body IS NOT NULL",
        (lesson_id,),
    ).rowcount
    (last_op,) = conn.execute(
        "SELECT op FROM history WHERE id = ? ORDER BY revision DESC LIMIT 1", (lesson_id,)
    ).fetchone()
    if erased == 0 and last_op == "purge":
        return None, 0
    return Change(lesson_id, "purge", state.revision + 1, state.kind), erased


RowReader = Callable[[str, str], list[tuple[object, ...]]]


def _readable_rows(conn: sqlite3.Connection, columns: str, rest: str) -> list[tuple[object, ...]]:
    """The rows a listing would read, cell for cell, leaving out those whose text is not UTF-8
    (:func:`undecodable_ids` reports them)."""
    rows = []
    for raw in conn.execute(f"SELECT {raw_cells(columns)} FROM {rest}"):
        try:
            rows.append(tuple(text_cell(raw[i], raw[i + 1]) for i in range(0, len(raw), 2)))
        except UnicodeDecodeError:
            continue
    return rows


def _content_problems(conn: SqliteConnection) -> list[str]:
    """SQLite's text that is not UTF-8, then :func:`row_problems` over the rest."""
    problems = [
        f"stored lesson {label} has a {column} that is not UTF-8 text"
        for label, column in undecodable_ids(conn, "records")
    ]
    problems += [
        f"a past revision of lesson {label} has a {column} that is not UTF-8 text"
        for label, column in undecodable_ids(conn, "history")
    ]
    return problems + row_problems(conn, partial(_readable_rows, conn))


def row_problems(conn: SqlConnection, read: RowReader | None = None) -> list[str]:
    """Every live row and every stored past revision, read as the listings read them
    (``read(columns, rest)``; default a plain SELECT) and validated completely, every live
    card screened, and revisions within bounds; problems name ids, columns and codes, never
    stored text. Engine-neutral: PostgreSQL's ``store check`` runs it as it is."""
    from active_memory.screening.cards import screen_card  # on use, as in plan_revert
    from active_memory.screening.verdict import is_weak

    if read is None:
        read = partial(_plain_rows, conn)
    problems: list[str] = []
    for row in read(f"{LIVE_COLUMNS}, checksum", "records WHERE deleted = 0 ORDER BY id"):
        try:
            lesson = decode_lesson(row[:-1])
        except RecordError as error:
            problems.append(f"stored lesson {row[0]!r} {error}")
            continue
        try:  # what a snapshot checks: valid content edited by hand fails it
            verify_rows((row,))
        except RecordError as error:
            problems.append(f"stored lesson {error}")
        # A row written before every path screened (or past the named opt-out) keeps a valid
        # checksum; recall serves it, so the check names it for a person to retire or correct.
        # Strong signals only: a weak one is what a person accepts when approving a quarantined
        # proposal (`lessons review approve` screens strong signals again before publishing).
        codes = [code for code in screen_card(lesson.draft) if not is_weak(code)]
        if codes:
            problems.append(
                f"stored lesson {row[0]!r} trips the admission screen ({', '.join(codes)}); "
                "retire it or publish a corrected revision"
            )
    for lesson_id, revision, body, evidence in read(
        "id, revision, body, evidence", "history WHERE body IS NOT NULL ORDER BY id, revision"
    ):
        try:
            decode_draft(body, evidence)
        except RecordError as error:
            problems.append(f"revision {revision} of {lesson_id!r} {error}")
    return problems + _revision_problems(conn, read)


def _plain_rows(conn: SqlConnection, columns: str, rest: str) -> list[tuple[object, ...]]:
    return [tuple(row) for row in conn.execute(f"SELECT {columns} FROM {rest}").fetchall()]


def _revision_problems(conn: SqlConnection, read: RowReader) -> list[str]:
    """Revisions past the bound (an edit outside the toolkit): an export of them could not be
    imported again, and no write can follow them."""
    top = LIMITS.revision_max
    found = [
        f"stored lesson {lesson_id!r} is at revision {revision}, past the highest revision "
        f"({top}); export it and import its content as a new lesson"
        for lesson_id, revision in read(
            "id, revision", f"records WHERE revision > {top} ORDER BY id"
        )
    ]
    (past,) = conn.execute(f"SELECT count(*) FROM history WHERE revision > {top}").fetchone()
    if past:
        found.append(f"{past} past revision(s) in the history are numbered over {top}")
    return found


def _schema(conn: sqlite3.Connection) -> dict[tuple[str, str], str]:
    rows = conn.execute(
        "SELECT type, name, CAST(sql AS BLOB) FROM sqlite_master "
        "WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"
    )
    return {
        (str(kind), str(name)): bytes(sql).decode("utf-8", "replace") for kind, name, sql in rows
    }


def _schema_problems(conn: sqlite3.Connection) -> list[str]:
    """Objects whose definition differs from what the migrations create: a damaged byte in
    the schema text can leave SQL that still parses but means something else."""
    expected_conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        apply_pending(expected_conn, MIGRATIONS[: len(applied_migrations(conn))])
        expected = _schema(expected_conn)
    finally:
        expected_conn.close()
    found = _schema(conn)
    return [
        f"the schema's {kind} {name!r} differs from the one active-memory created; restore the "
        "store from a backup"
        for kind, name in sorted(expected.keys() | found.keys())
        if expected.get((kind, name)) != found.get((kind, name))
    ]


def check_store(conn: SqliteConnection, path: Path) -> StoreCheck:
    """Integrity verdict, every stored lesson validated, plus counts; read in the caller's read
    transaction."""
    problems = [
        str(row[0]) for row in conn.execute("PRAGMA integrity_check") if str(row[0]).lower() != "ok"
    ]
    problems += [
        f"foreign key violation in {row[0]} row {row[1]}"
        for row in conn.execute("PRAGMA foreign_key_check")
    ]
    if not problems:
        problems += _schema_problems(conn)
    if not problems:  # decoding rows of a damaged file could fail in SQLite itself
        problems += _content_problems(conn)
    problems += capacity_problems(conn) + scope_count_problems(conn)
    applied = [name for name, _ in applied_migrations(conn)]
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    page_count = conn.execute("PRAGMA page_count").fetchone()[0]
    return counted_check(conn, str(path), applied, int(page_size) * int(page_count), problems)


def counted_check(
    conn: SqlConnection, where: str, applied: list[str], file_bytes: int, problems: list[str]
) -> StoreCheck:
    """A check's verdict with the store's counts, read in the caller's read transaction."""
    recount = count_capacity(conn)
    (history_rows,) = conn.execute("SELECT count(*) FROM history").fetchone()
    return StoreCheck(
        path=where,
        schema_version=applied[-1] if applied else "none",
        migrations=len(applied),
        generation=read_generation(conn),
        live=recount.live,
        tombstones=recount.rows - recount.live,
        history_rows=int(history_rows),
        content_bytes=recount.content_bytes,
        file_bytes=file_bytes,
        problems=tuple(problems),
    )
