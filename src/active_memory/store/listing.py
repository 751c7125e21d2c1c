"""Pages of the store for the browser: filtered, searched, sorted, counted and sliced in SQL.

A page of live lessons costs two grouped counts over indexed columns (by repository, by graph),
one count of the matching rows and one ``LIMIT``/``OFFSET`` read of the page's rows; the only
rows read whole are the page's, verified by their checksum (the writer validated and screened
what it checksummed) and read for their title, without building a model. A search matches the
words of titles and recommendations through the full-text index (``store.search_text``): no
whole-store read, whatever the store's size. Sorts and filters read indexed columns (the
partial indexes of ``m005_lesson_search``). Retired ids page the same way, each with the title
of its last stored revision (none once purged).

With ``within`` (the memory service, for a token's scope: ``store/access.py``) the same reads
are confined in SQL to the rows that scope reaches, the counts included: a lesson the token
does not reach is neither listed nor counted; a tombstone is listed when its last live scope
(``scope_repository``, ``scope_graph_hash``: PostgreSQL's schema keeps them) is reached.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any, Literal

from active_memory.errors import StoreError
from active_memory.models.lessons import GraphScope, Lesson
from active_memory.store.access import AccessScope, reached_rows
from active_memory.store.checked_rows import verify_rows
from active_memory.store.codec import LIVE_COLUMNS, RecordError
from active_memory.store.counts import SCOPE_RECOUNT
from active_memory.store.search_text import (
    NOT_UPGRADED_NOTE,
    card_text,
    folded_text,
    has_fts_index,
    has_table,
    like_note,
    like_patterns,
    pg_tsquery,
    query_words,
    sqlite_fts_query,
)
from active_memory.store.sql import SqlConnection
from active_memory.store.unreadable import fetch_rows

__all__ = [
    "SORTS",
    "LessonListing",
    "LessonSort",
    "ListedLesson",
    "RetiredLesson",
    "RetiredListing",
    "list_page",
    "retired_page",
]

LessonSort = Literal["oldest", "newest", "revised"]
# Each order ends on the primary key, so a page boundary is stable; each is an index's order.
SORTS: dict[str, str] = {
    "oldest": "records.id",
    "newest": "records.id DESC",
    "revised": "records.revision DESC, records.id DESC",
}
# A search joins the index's tables to ``records``, so every column is named with its table.
_COLUMNS = ", ".join(f"records.{name.strip()}" for name in LIVE_COLUMNS.split(","))
_RECORDS = "records"
# Matches a PostgreSQL search reads whole before ordering them, rather than walk the id order.
_FEW_MATCHES = 2000
_PG_MATCH = "records.id IN (SELECT id FROM lesson_text WHERE words @@ CAST(? AS tsquery))"
# The FTS5 matches joined to their rows: one lookup a match, never a set of ids to build.
_FTS_SOURCE = (
    "lesson_text JOIN lesson_text_rows AS text_row ON text_row.key = lesson_text.rowid "
    "JOIN records ON records.id = text_row.id"
)


@dataclass(frozen=True, slots=True)
class ListedLesson:
    """What a list shows of a live lesson: id, revision, title and the scope columns."""

    id: str
    revision: int
    title: str
    kind: str
    repository: str | None
    graph_hash: str | None
    node_id: str | None

    @classmethod
    def of(cls, lesson: Lesson) -> ListedLesson:
        scope = lesson.scope
        if isinstance(scope, GraphScope):
            return cls(lesson.id, lesson.revision, lesson.title, scope.kind, scope.repository,
                       scope.graph_hash, scope.node_id)  # fmt: skip
        return cls(lesson.id, lesson.revision, lesson.title, scope.kind, scope.repository,
                   None, None)  # fmt: skip


@dataclass(frozen=True, slots=True)
class LessonListing:
    """The lessons of one page, how many match, every live lesson's count by repository and
    by graph, and ``note`` when the search could not use its index."""

    lessons: tuple[ListedLesson, ...]
    page: int
    pages: int
    matching: int
    repositories: dict[str, int]
    graphs: dict[str, int]
    note: str | None = None


@dataclass(frozen=True, slots=True)
class RetiredLesson:
    """A tombstone, with the title of its last stored revision (None once purged)."""

    id: str
    revision: int
    kind: str
    title: str | None


@dataclass(frozen=True, slots=True)
class RetiredListing:
    rows: tuple[RetiredLesson, ...]
    page: int
    pages: int
    matching: int


def _title(body: object) -> str | None:
    try:
        title = json.loads(body)["title"]  # type: ignore[arg-type]
    except (TypeError, ValueError, KeyError):
        return None
    return title if isinstance(title, str) else None


def _listed(rows: list[tuple[Any, ...]]) -> tuple[ListedLesson, ...]:
    try:
        verify_rows(rows)
    except RecordError as error:
        raise StoreError(
            f"stored lesson {error}; run `active-memory store check` and restore it from a "
            "backup or history"
        ) from None
    listed = []
    for lesson_id, revision, body, _, kind, repository, graph_hash, node_id, _ in rows:
        title = _title(body)
        if title is None:  # checksummed by its writer, so only a writer's bug gets here
            raise StoreError(f"stored lesson {lesson_id!r} has no title; run `active-memory "
                             "store check`")  # fmt: skip
        listed.append(ListedLesson(lesson_id, revision, title, kind, repository, graph_hash,
                                   node_id))  # fmt: skip
    return tuple(listed)


def _search(conn: SqlConnection, words: list[str]) -> tuple[str, str, list[str], str | None]:
    """The rows to read (a FROM clause), the condition matching rows whose title or
    recommendation has every word (as the start of a word), its parameters, and a note when
    the search cannot use an index."""
    if not isinstance(conn, sqlite3.Connection):  # PostgreSQL: the GIN index of lesson_text
        return _RECORDS, _PG_MATCH, [pg_tsquery(words)], None
    if has_fts_index(conn):
        return _FTS_SOURCE, "lesson_text MATCH ?", [sqlite_fts_query(words)], None
    patterns = like_patterns(words)
    if not has_table(conn, "lesson_text_rows"):  # read-only, before m005_lesson_search
        conn.create_function("active_memory_card_text", 1, _card_words, deterministic=True)
        condition = " AND ".join(["active_memory_card_text(records.body) LIKE ?"] * len(patterns))
        return _RECORDS, condition, patterns, NOT_UPGRADED_NOTE
    each = " AND ".join(["(' ' || title || ' ' || recommendation) LIKE ?"] * len(patterns))
    condition = f"records.id IN (SELECT id FROM lesson_text_rows WHERE {each})"
    return _RECORDS, condition, patterns, like_note(conn)


def _card_words(body: object) -> str:
    """A stored card's folded words, each after a space (as ``like_patterns`` expects)."""
    return " " + folded_text(" ".join(card_text(body)))


def _pages(matching: int, page: int, per_page: int) -> tuple[int, int]:
    pages = max(1, -(-matching // per_page))
    return min(max(page, 1), pages), pages


def _reached(within: AccessScope) -> tuple[str, list[str]]:
    """The condition on a live row's ``repository`` and ``graph_hash`` columns (and its
    ``kind``) that :meth:`AccessScope.allows` states, and its parameters."""
    repo, graph = "records.repository", "records.graph_hash"
    condition = (f"((records.kind = 'repository' AND {repo} = ?) OR (records.kind = 'graph' "
                 f"AND ({repo} IS NULL OR {repo} = ?)")  # fmt: skip
    params = [within.repository, within.repository]
    if within.graph_hash is not None:
        condition += f" AND {graph} = ?"
        params.append(within.graph_hash)
    return condition + "))", params


def _scope_counts(
    conn: SqlConnection, within: AccessScope | None
) -> tuple[dict[str, int], dict[str, int]]:
    """Live lessons by repository and by graph: a row a scope from the counts the triggers
    keep, or, on a store not yet upgraded (read-only), grouped over its indexes. Within a
    token's scope: its repository's row of the counts (or, confined to a graph, its rows
    grouped) and its graph lessons grouped by graph."""
    kept = not isinstance(conn, sqlite3.Connection) or has_table(conn, "scope_counts")
    if within is not None:
        reached, params = _reached(within)
        live = f"FROM records WHERE records.deleted = 0 AND {reached}"
        if kept and within.graph_hash is None:  # it reaches every lesson of its repository
            repositories = fetch_rows(conn, "SELECT name, live FROM scope_counts WHERE kind = "
                                        "'repository' AND name = ? AND live > 0",
                                  [within.repository])  # fmt: skip
        else:
            repositories = fetch_rows(conn, f"SELECT records.repository, COUNT(*) {live} AND "
                                        "records.repository IS NOT NULL GROUP BY "
                                        "records.repository", params)  # fmt: skip
        graphs = fetch_rows(conn, f"SELECT records.graph_hash, COUNT(*) {live} AND records.kind = "
                              "'graph' GROUP BY records.graph_hash", params)  # fmt: skip
        return ({str(k): int(v) for k, v in repositories}, {str(k): int(v) for k, v in graphs})
    kept_rows = "SELECT kind, name, live FROM scope_counts WHERE live > 0"
    counted: dict[str, dict[str, int]] = {"repository": {}, "graph": {}}
    for kind, name, live in fetch_rows(conn, kept_rows if kept else SCOPE_RECOUNT):
        counted[str(kind)][str(name)] = int(live)
    return counted["repository"], counted["graph"]


def _reached_count(
    conn: SqlConnection, within: AccessScope, repository: str | None, counts: dict[str, int]
) -> int | None:
    """How many live lessons of ``repository`` (or of every repository) ``within`` reaches,
    from its repository's kept count (``counts``, from ``scope_counts``) and its tenant-wide
    graph lessons; None when a count of the rows must be made (a scope confined to a graph, or
    a store without the kept counts)."""
    if within.graph_hash is not None or (
        isinstance(conn, sqlite3.Connection) and not has_table(conn, "scope_counts")
    ):
        return None
    mine = counts.get(within.repository, 0)
    if repository:
        return mine if repository == within.repository else 0
    tenant_wide = fetch_rows(conn, "SELECT COUNT(*) FROM records WHERE deleted = 0 AND "
                               "kind = 'graph' AND repository IS NULL")  # fmt: skip
    return mine + int(tenant_wide[0][0])


def _fts_page(
    conn: SqlConnection, match: str, page: int, per_page: int, sort: str
) -> tuple[list[Any], int, int, int]:
    """A search without filters, ordered by id, from the index alone: the text table holds
    exactly the live rows (the writer keeps it so), so the index counts the matches and
    orders their ids, and only the page's rows are read from ``records``."""
    matching = int(fetch_rows(conn, "SELECT COUNT(*) FROM lesson_text WHERE lesson_text MATCH ?",
                          [match])[0][0])  # fmt: skip
    page, pages = _pages(matching, page, per_page)
    direction = "DESC" if sort == "newest" else ""
    ids = [row[0] for row in fetch_rows(
        conn, "SELECT text_row.id FROM lesson_text JOIN lesson_text_rows AS text_row ON "
              "text_row.key = lesson_text.rowid WHERE lesson_text MATCH ? "
              f"ORDER BY text_row.id {direction} LIMIT ? OFFSET ?",
        [match, per_page, (page - 1) * per_page])]  # fmt: skip
    marks = ", ".join("?" * len(ids))
    rows = fetch_rows(conn, f"SELECT {_COLUMNS}, records.checksum FROM records WHERE records.id IN "
                        f"({marks}) AND records.deleted = 0 ORDER BY {SORTS[sort]}",
                  ids) if ids else []  # fmt: skip
    return rows, matching, page, pages


def list_page(
    conn: SqlConnection,
    *,
    repository: str | None,
    graph: str | None,
    query: str | None,
    page: int,
    per_page: int,
    sort: str = "oldest",
    within: AccessScope | None = None,
) -> LessonListing:
    """Page ``page`` (clamped to those there are) of the live lessons of ``repository`` and
    ``graph`` whose title or recommendation holds every word of ``query``, in ``sort`` order
    (a key of :data:`SORTS`); with ``within``, of those that scope reaches."""
    order = SORTS[sort]
    repositories, graphs = _scope_counts(conn, within)
    source, note = _RECORDS, None
    clauses: list[str] = []
    params: list[str] = []
    words = query_words(query)
    if words:
        source, condition, params, note = _search(conn, words)
        clauses.append(condition)
    clauses.append("records.deleted = 0")
    if repository:
        clauses += ["records.repository IS NOT NULL", "records.repository = ?"]
        params.append(repository)
    if graph:
        clauses.append("records.kind = 'graph' AND records.graph_hash = ?")
        params.append(graph)
    if within is not None:
        reached, reached_params = _reached(within)
        clauses.append(reached)
        params += reached_params
    where = " AND ".join(clauses)
    unfiltered = not repository and not graph and within is None
    if source == _FTS_SOURCE and unfiltered and sort != "revised":
        rows, matching, page, pages = _fts_page(conn, params[0], page, per_page, sort)
    else:
        counted = None
        if within is not None and not words and not graph:
            counted = _reached_count(conn, within, repository, repositories)
        if counted is None:
            counted = int(fetch_rows(conn, f"SELECT COUNT(*) FROM {source} WHERE {where}",
                                 params)[0][0])  # fmt: skip
        matching = counted
        page, pages = _pages(matching, page, per_page)
        select = f"SELECT {_COLUMNS}, records.checksum FROM {source} WHERE {where}"
        if words and not isinstance(conn, sqlite3.Connection) and matching <= _FEW_MATCHES:
            # PostgreSQL would walk the id index and test every row for a rare word (it guesses
            # 2% match); the count says the matches are few, so they are read first, by the GIN.
            select = f"WITH hit AS MATERIALIZED ({select}) SELECT * FROM hit AS records"
        elif words and not isinstance(conn, sqlite3.Connection):
            # Many match: the id order finds a page's rows soon. It guesses 200 and would read
            # every match through the GIN and sort them, so the test is hidden from the index.
            select = select.replace(_PG_MATCH, f"COALESCE({_PG_MATCH}, false)")
        rows = fetch_rows(conn, f"{select} ORDER BY {order} LIMIT ? OFFSET ?",
                      [*params, per_page, (page - 1) * per_page]) if matching else []  # fmt: skip
    return LessonListing(_listed(rows), page, pages, matching, repositories, graphs, note=note)


def retired_page(
    conn: SqlConnection, *, page: int, per_page: int, within: AccessScope | None = None
) -> RetiredListing:
    """Page ``page`` (clamped) of the retired ids, newest id first; with ``within``, of those
    whose last live scope it reaches (a tombstone imported as one has none: left out)."""
    where, params = "r.deleted = 1", list[object]()
    if within is not None:
        reached, params = reached_rows(within)
        where += f" AND {reached}"
    matching = int(fetch_rows(conn, f"SELECT COUNT(*) FROM records AS r WHERE {where}",
                          params)[0][0])  # fmt: skip
    page, pages = _pages(matching, page, per_page)
    rows = fetch_rows(
        conn,
        "SELECT r.id, r.revision, r.kind, (SELECT h.body FROM history AS h WHERE h.id = r.id "
        "AND h.body IS NOT NULL ORDER BY h.revision DESC LIMIT 1) FROM records AS r "
        f"WHERE {where} ORDER BY r.id DESC LIMIT ? OFFSET ?",
        [*params, per_page, (page - 1) * per_page],
    )
    found = tuple(
        RetiredLesson(str(lesson_id), int(revision), str(kind), _title(body))
        for lesson_id, revision, kind, body in rows
    )
    return RetiredListing(found, page, pages, matching)
