"""Full-text search over the live lessons' titles and recommendations, on either engine.

SQLite keeps the text of each live row in ``lesson_text_rows`` and indexes it in the FTS5 table
``lesson_text`` (external content; its rowid is that table's ``INTEGER PRIMARY KEY``, which
VACUUM keeps, unlike the implicit rowid of ``records``). The writer keeps both, in the same
transaction as the rows (:func:`text_statements`, from ``writes.apply_changes``, the one path
every publish, retire, revert, purge and import takes): a store runs with ``trusted_schema``
off, which refuses JSON functions and virtual tables inside triggers. A purge merges the index
(``optimize``), so the words of an erased lesson leave the index's pages before the purge's
scrub. An SQLite built without FTS5 keeps the text table alone, and a search compares words
with ``LIKE`` (ASCII case folding, no index), which :data:`LIKE_NOTE` says; a store not yet
upgraded (read-only) compares the stored cards the same way.

PostgreSQL indexes ``lesson_text(body)`` (a tsvector of the card's title and recommendation,
``simple`` configuration) with GIN, over live rows: the index follows every write itself.

A query is its words (letters and digits, case-folded; at most :data:`MAX_WORDS`), each
matched as a prefix, all of them required.
"""

from __future__ import annotations

import json
import re
import sqlite3
import unicodedata
from collections.abc import Sequence

__all__ = [
    "COUNT_ALL",
    "LIKE_NOTE",
    "MAX_WORDS",
    "NOT_UPGRADED_NOTE",
    "PG_SEARCH_STATEMENTS",
    "SQLITE_SEARCH_STATEMENTS",
    "card_text",
    "create_fts_index",
    "has_fts_index",
    "has_table",
    "like_patterns",
    "pg_tsquery",
    "query_words",
    "sqlite_fts_query",
    "text_matches",
    "text_statements",
]

MAX_WORDS = 16
# Ids a statement names at most (SQLite's default limit of host parameters is 32,766).
_BATCH = 300
_WORD = re.compile(r"[^\W_]+")

LIKE_NOTE = (
    "this SQLite has no FTS5, so the search compares words with LIKE (no index; case folded "
    "for ASCII letters only)"
)

NOT_UPGRADED_NOTE = (
    "this store is not yet upgraded for search, so the search compares words with LIKE over "
    "whole cards (no index); open it once for writing (e.g. `active-memory store check`)"
)

# A live row adds one to its repository's count and, a graph lesson, to its graph's; the SELECT
# form lets the row's own state say whether it counts ({row} is NEW or OLD).
_COUNT_UP = """INSERT INTO scope_counts (kind, name, live)
            SELECT 'repository', {row}.repository, 1
            WHERE {row}.deleted = 0 AND {row}.repository IS NOT NULL
            ON CONFLICT (kind, name) DO UPDATE SET live = live + 1;
            INSERT INTO scope_counts (kind, name, live)
            SELECT 'graph', {row}.graph_hash, 1 WHERE {row}.deleted = 0 AND {row}.kind = 'graph'
            ON CONFLICT (kind, name) DO UPDATE SET live = live + 1;"""
_COUNT_DOWN = """UPDATE scope_counts SET live = live - 1
            WHERE {row}.deleted = 0 AND ((kind = 'repository' AND name = {row}.repository)
                  OR (kind = 'graph' AND {row}.kind = 'graph' AND name = {row}.graph_hash));"""
COUNT_ALL = (
    """
        INSERT INTO scope_counts (kind, name, live)
        SELECT 'repository', repository, COUNT(*) FROM records
        WHERE deleted = 0 AND repository IS NOT NULL GROUP BY repository
        """,
    """
        INSERT INTO scope_counts (kind, name, live)
        SELECT 'graph', graph_hash, COUNT(*) FROM records
        WHERE deleted = 0 AND kind = 'graph' GROUP BY graph_hash
        """,
)

SQLITE_SEARCH_STATEMENTS: tuple[str, ...] = (
    # Live lessons by repository and by graph, kept by triggers (plain SQL, which a store with
    # trusted_schema off still runs), so the browser's counts read a row a scope, not the store.
    """
        CREATE TABLE scope_counts (
            kind TEXT NOT NULL CHECK (kind IN ('repository', 'graph')),
            name TEXT NOT NULL,
            live INTEGER NOT NULL,
            PRIMARY KEY (kind, name)
        )
        """,
    f"""
        CREATE TRIGGER scope_counts_insert AFTER INSERT ON records WHEN NEW.deleted = 0 BEGIN
            {_COUNT_UP.format(row="NEW")}
        END
        """,
    f"""
        CREATE TRIGGER scope_counts_update AFTER UPDATE OF deleted, kind, repository, graph_hash
        ON records BEGIN
            {_COUNT_DOWN.format(row="OLD")}
            {_COUNT_UP.format(row="NEW")}
        END
        """,
    f"""
        CREATE TRIGGER scope_counts_delete AFTER DELETE ON records BEGIN
            {_COUNT_DOWN.format(row="OLD")}
        END
        """,
    *COUNT_ALL,
    """
        CREATE TABLE lesson_text_rows (
            key INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            title TEXT NOT NULL,
            recommendation TEXT NOT NULL
        )
        """,
    # The browser's sorts and filters over indexed columns: every live row by repository (graph
    # lessons may name one too), by revision, and the retired ids alone.
    """
        CREATE INDEX records_live_repository ON records (repository, id)
        WHERE deleted = 0 AND repository IS NOT NULL
        """,
    "CREATE INDEX records_live_revision ON records (revision, id) WHERE deleted = 0",
    "CREATE INDEX records_retired ON records (id) WHERE deleted = 1",
)

_CREATE_FTS = (
    "CREATE VIRTUAL TABLE lesson_text USING fts5(title, recommendation, "
    "content = 'lesson_text_rows', content_rowid = 'key', "
    "tokenize = 'unicode61 remove_diacritics 2')"
)


def card_text(body: object) -> tuple[str, str]:
    """The title and recommendation of a stored card; empty for a body that is not a card
    (a damaged row is ``store check``'s to report, not a reason to stop a migration)."""
    try:
        card = json.loads(body)  # type: ignore[arg-type]
        title, recommendation = card["title"], card["recommendation"]
    except (TypeError, ValueError, KeyError):
        return "", ""
    if not isinstance(title, str) or not isinstance(recommendation, str):
        return "", ""
    return title, recommendation


def create_fts_index(conn: sqlite3.Connection) -> None:
    """Fill ``lesson_text_rows`` from the live rows, and index it with FTS5 when this SQLite
    has FTS5 (searches use ``LIKE`` otherwise). The Python step of ``m005_lesson_search``."""
    rows = conn.execute("SELECT id, body FROM records WHERE deleted = 0").fetchall()
    conn.executemany(
        "INSERT INTO lesson_text_rows (id, title, recommendation) VALUES (?, ?, ?)",
        [(lesson_id, *card_text(body)) for lesson_id, body in rows],
    )
    try:
        conn.execute(_CREATE_FTS)
    except sqlite3.OperationalError as error:
        if "no such module" not in str(error):
            raise
        return
    conn.execute("INSERT INTO lesson_text (lesson_text) VALUES ('rebuild')")


def has_table(conn: sqlite3.Connection, name: str) -> bool:
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return found is not None


def has_fts_index(conn: sqlite3.Connection) -> bool:
    return has_table(conn, "lesson_text")


def text_statements(
    conn: object, changed: Sequence[tuple[str, str | None, bool]]
) -> list[tuple[str, tuple[object, ...]]]:
    """The statements that bring an SQLite store's search text up to date with ``changed``
    rows, each ``(id, body or None, purged)``, in a few statements per batch; none for
    PostgreSQL (its index follows the rows) or a store without the text table."""
    if not changed or not isinstance(conn, sqlite3.Connection):
        return []
    if not has_table(conn, "lesson_text_rows"):
        return []
    indexed = has_fts_index(conn)
    ids = tuple(lesson_id for lesson_id, _, _ in changed)
    live = [(lesson_id, *card_text(body)) for lesson_id, body, _ in changed if body is not None]
    statements: list[tuple[str, tuple[object, ...]]] = []
    for start in range(0, len(ids), _BATCH):
        part = ids[start : start + _BATCH]
        marks = ", ".join("?" * len(part))
        if indexed:
            statements.append((
                "INSERT INTO lesson_text (lesson_text, rowid, title, recommendation) SELECT "
                f"'delete', key, title, recommendation FROM lesson_text_rows WHERE id IN ({marks})",
                part,
            ))  # fmt: skip
        statements.append((f"DELETE FROM lesson_text_rows WHERE id IN ({marks})", part))
    for start in range(0, len(live), _BATCH):
        part_rows = live[start : start + _BATCH]
        values = ", ".join(["(?, ?, ?)"] * len(part_rows))
        flat = tuple(value for row in part_rows for value in row)
        statements.append(
            (f"INSERT INTO lesson_text_rows (id, title, recommendation) VALUES {values}", flat)
        )
        if indexed:
            marks = ", ".join("?" * len(part_rows))
            statements.append((
                "INSERT INTO lesson_text (rowid, title, recommendation) SELECT key, title, "
                f"recommendation FROM lesson_text_rows WHERE id IN ({marks})",
                tuple(row[0] for row in part_rows),
            ))  # fmt: skip
    if indexed and any(purged for _, _, purged in changed):
        statements.append(("INSERT INTO lesson_text (lesson_text) VALUES ('optimize')", ()))
    return statements


# PostgreSQL: the function is IMMUTABLE (same body, same vector), as an index expression must
# be; a body that is not JSON indexes as nothing instead of failing the write.
PG_SEARCH_STATEMENTS: tuple[str, ...] = (
    """
        CREATE FUNCTION lesson_text(body text) RETURNS tsvector LANGUAGE plpgsql IMMUTABLE
        SET search_path FROM CURRENT AS $$
        DECLARE
            card jsonb;
            plain text;
        BEGIN
            IF body IS NULL THEN
                RETURN ''::tsvector;
            END IF;
            card := body::jsonb;
            plain := coalesce(card ->> 'title', '') || ' '
                     || coalesce(card ->> 'recommendation', '');
            BEGIN  -- marks off, as SQLite's remove_diacritics (normalize needs a UTF8 database)
                plain := regexp_replace(normalize(plain, NFKD), '[\u0300-\u036f]', '', 'g');
            EXCEPTION WHEN others THEN
                NULL;
            END;
            RETURN to_tsvector('simple'::regconfig, plain);
        EXCEPTION WHEN others THEN
            RETURN ''::tsvector;
        END
        $$
        """,
    "CREATE INDEX records_text ON records USING gin (lesson_text(body)) WHERE deleted = 0",
    """
        CREATE TABLE scope_counts (
            kind text NOT NULL CHECK (kind IN ('repository', 'graph')),
            name text COLLATE "C" NOT NULL,
            live bigint NOT NULL,
            PRIMARY KEY (kind, name)
        )
        """,
    # As SQLite's scope_counts triggers: the function is bound to the schema it was created
    # in, so it can never count into another tenant's table.
    """
        CREATE FUNCTION scope_counts() RETURNS trigger LANGUAGE plpgsql
        SET search_path FROM CURRENT AS $$
        BEGIN
            IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.deleted = 0 THEN
                UPDATE scope_counts SET live = live - 1
                WHERE (kind = 'repository' AND name = OLD.repository)
                   OR (kind = 'graph' AND OLD.kind = 'graph' AND name = OLD.graph_hash);
            END IF;
            IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.deleted = 0 THEN
                IF NEW.repository IS NOT NULL THEN
                    INSERT INTO scope_counts VALUES ('repository', NEW.repository, 1)
                    ON CONFLICT (kind, name) DO UPDATE SET live = scope_counts.live + 1;
                END IF;
                IF NEW.kind = 'graph' THEN
                    INSERT INTO scope_counts VALUES ('graph', NEW.graph_hash, 1)
                    ON CONFLICT (kind, name) DO UPDATE SET live = scope_counts.live + 1;
                END IF;
            END IF;
            RETURN NULL;
        END
        $$
        """,
    """
        CREATE TRIGGER scope_counts AFTER INSERT OR UPDATE OR DELETE ON records
        FOR EACH ROW EXECUTE FUNCTION scope_counts()
        """,
    *COUNT_ALL,
    """
        CREATE INDEX records_live_repository ON records (repository, id)
        WHERE deleted = 0 AND repository IS NOT NULL
        """,
    "CREATE INDEX records_live_revision ON records (revision, id) WHERE deleted = 0",
    "CREATE INDEX records_retired ON records (id) WHERE deleted = 1",
)


def query_words(query: str | None) -> list[str]:
    """The words a search looks for: letters and digits, case-folded and without marks (as
    both indexes fold them), the first MAX_WORDS."""
    return _folded_words(query or "")[:MAX_WORDS]


def sqlite_fts_query(words: list[str]) -> str:
    """An FTS5 query: every word as a quoted prefix (words hold no quote), all required."""
    return " ".join(f'"{word}"*' for word in words)


def pg_tsquery(words: list[str]) -> str:
    """A ``to_tsquery('simple', …)`` text: every word as a quoted prefix, all required."""
    return " & ".join(f"'{word}':*" for word in words)


def like_patterns(words: list[str]) -> list[str]:
    """``LIKE … ESCAPE '\\'`` patterns, one a word (words hold no wildcard but ``_``, which
    the word pattern leaves out)."""
    return [f"%{word}%" for word in words]


def _folded_words(text: str) -> list[str]:
    """The words of ``text`` as FTS5's ``unicode61 remove_diacritics 2`` indexes them, nearly:
    case-folded, marks removed."""
    plain = "".join(c for c in unicodedata.normalize("NFKD", text.casefold())
                    if not unicodedata.combining(c))  # fmt: skip
    return _WORD.findall(plain)


def text_matches(words: list[str], title: str, recommendation: str) -> bool:
    """Whether every one of ``words`` begins a word of the title or the recommendation: the
    search of a store that only lists its lessons (one served over HTTPS)."""
    found = _folded_words(f"{title} {recommendation}")
    return all(any(w.startswith(word) for w in found) for word in words)
