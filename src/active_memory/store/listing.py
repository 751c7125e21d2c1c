"""One page of the live lessons, for the browser: filtered, counted and sliced in SQL.

A page costs two grouped counts over indexed columns (by repository, by graph), one count of the
matching rows and one ``LIMIT``/``OFFSET`` read of the page's rows, the only ones decoded into
lessons; no whole-store read, whatever the store's size. A title search reads the matching rows'
ids and titles (not the lessons) and compares case-folded titles in Python, as ``str.casefold``
does: SQL's ``lower`` folds ASCII only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from active_memory.models.lessons import Lesson
from active_memory.store.admin import _decode_all, _fetch
from active_memory.store.codec import LIVE_COLUMNS
from active_memory.store.sql import SqlConnection

__all__ = ["LessonListing", "list_page"]


@dataclass(frozen=True, slots=True)
class LessonListing:
    """The lessons of one page (sorted by id), how many match, and every live lesson's count by
    repository and by graph."""

    lessons: tuple[Lesson, ...]
    page: int
    pages: int
    matching: int
    repositories: dict[str, int]
    graphs: dict[str, int]


def _title(body: object) -> str:
    try:
        title = json.loads(body)["title"]  # type: ignore[arg-type]
    except (TypeError, ValueError, KeyError):
        return ""
    return title if isinstance(title, str) else ""


def list_page(
    conn: SqlConnection,
    *,
    repository: str | None,
    graph: str | None,
    query: str | None,
    page: int,
    per_page: int,
) -> LessonListing:
    """Page ``page`` (clamped to those there are) of the live lessons of ``repository`` and
    ``graph`` whose title holds ``query`` (case-folded), by id."""
    repositories = dict(_fetch(conn, "SELECT repository, COUNT(*) FROM records WHERE deleted = 0 "
                                     "AND repository IS NOT NULL GROUP BY repository"))  # fmt: skip
    graphs = dict(_fetch(conn, "SELECT graph_hash, COUNT(*) FROM records WHERE deleted = 0 "
                               "AND kind = 'graph' GROUP BY graph_hash"))  # fmt: skip
    clauses, params = ["deleted = 0"], []
    if repository:
        clauses.append("repository = ?")
        params.append(repository)
    if graph:
        clauses.append("kind = 'graph' AND graph_hash = ?")
        params.append(graph)
    where = " AND ".join(clauses)
    needle = (query or "").casefold().strip()
    ids: list[str] | None = None
    if needle:
        found = _fetch(conn, f"SELECT id, body FROM records WHERE {where} ORDER BY id", params)
        ids = [str(row[0]) for row in found if needle in _title(row[1]).casefold()]
        matching = len(ids)
    else:
        matching = int(_fetch(conn, f"SELECT COUNT(*) FROM records WHERE {where}", params)[0][0])
    pages = max(1, -(-matching // per_page))
    page = min(max(page, 1), pages)
    start = (page - 1) * per_page
    if ids is not None:
        shown = ids[start : start + per_page]
        marks = ", ".join("?" * len(shown))
        rows = _fetch(conn, f"SELECT {LIVE_COLUMNS} FROM records WHERE id IN ({marks}) "
                            "ORDER BY id", shown) if shown else []  # fmt: skip
    else:
        rows = _fetch(conn, f"SELECT {LIVE_COLUMNS} FROM records WHERE {where} ORDER BY id "
                            "LIMIT ? OFFSET ?", [*params, per_page, start])  # fmt: skip
    counts = ({str(k): int(v) for k, v in repositories.items()},
              {str(k): int(v) for k, v in graphs.items()})  # fmt: skip
    return LessonListing(_decode_all(rows), page, pages, matching, *counts)
