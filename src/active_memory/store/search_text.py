"""Full-text search over the live lessons' titles and recommendations, on either engine.

Both engines index words folded here, in Python, by the rule the query is folded by
(:func:`folded_words`: case-folded with ``str.casefold``, NFKD, marks removed, split into runs
of letters and digits), so a word inside a path, a dotted name or a number is a word of its
own (``tests/conftest.py`` is ``tests``, ``conftest``, ``py``), ``Straße`` is ``strasse`` and
``ﬁle`` is ``file``, whatever the engine's tokenizer or the database's locale would say.

SQLite keeps the folded text of each live row in ``lesson_text_rows`` and indexes it in the FTS5
table ``lesson_text`` (external content, ``ascii`` tokenizer: the text is already folded and its
words are separated by spaces; its rowid is the text table's ``INTEGER PRIMARY KEY``, which
VACUUM keeps, unlike the implicit rowid of ``records``). The writer keeps both, in the same
transaction as the rows (:func:`text_statements`, from ``writes.apply_changes``, the one path
every publish, retire, revert, purge and import takes): a store runs with ``trusted_schema``
off, which refuses JSON functions and virtual tables inside triggers. A purge merges the index
(``optimize``), so the words of an erased lesson leave the index's pages before the purge's
scrub. An SQLite built without FTS5 keeps the text table alone, and a search compares words
with ``LIKE`` (no index), which :data:`LIKE_NOTE` says; on a store indexed by another build it
leaves the index alone and marks it stale (``lesson_text_stale``), and the next writer with FTS5
rebuilds it (:func:`resync_fts_index`, run whenever a store opens for writing). A store not yet
upgraded (read-only) folds the stored cards the same way, one by one.

PostgreSQL keeps a ``tsvector`` of each live row's folded words in ``lesson_text`` (GIN index),
built from the words as they are (``array_to_tsvector``), written by the same writer path, and
matched with a ``tsquery`` of prefixes given as they are: no parser, no locale.

A query is its words (at most :data:`MAX_WORDS`), each matched as the start of a word, all of
them required; a word is cut to :data:`WORD_CHARS` characters on both sides.
"""

from __future__ import annotations

import json
import re
import sqlite3
import unicodedata
from collections.abc import Sequence
from typing import Any

__all__ = [
    "COUNT_ALL",
    "LIKE_NOTE",
    "MAX_WORDS",
    "NOT_UPGRADED_NOTE",
    "PG_SEARCH_STATEMENTS",
    "SQLITE_SEARCH_STATEMENTS",
    "STALE_NOTE",
    "WORD_CHARS",
    "card_text",
    "create_fts_index",
    "fill_pg_text",
    "folded_text",
    "folded_words",
    "fts5_available",
    "has_fts_index",
    "has_table",
    "like_note",
    "like_patterns",
    "pg_tsquery",
    "query_problem",
    "query_words",
    "resync_fts_index",
    "sqlite_fts_query",
    "text_matches",
    "text_statements",
]

MAX_WORDS = 16
# A stored word and a query word are cut to this many characters alike (a PostgreSQL lexeme
# holds at most 2,047 bytes; NFKD can make one character of a card several).
WORD_CHARS = 200
# Ids a statement names at most (SQLite's default limit of host parameters is 32,766).
_BATCH = 300
_WORD = re.compile(r"[^\W_]+")

LIKE_NOTE = "this SQLite has no FTS5, so the search compares words with LIKE (no index)"

STALE_NOTE = (
    "this store's search index is out of date (an SQLite without FTS5 wrote to it), so the "
    "search compares words with LIKE (no index); open it once for writing to rebuild the index "
    "(e.g. `active-memory store check`)"
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
    # A row here: an SQLite without FTS5 changed the text table, so the FTS5 index no longer
    # matches it (rebuilt by the next writer that has FTS5).
    "CREATE TABLE lesson_text_stale (key INTEGER PRIMARY KEY CHECK (key = 1))",
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
    "tokenize = 'ascii')"
)
_STALE = "INSERT OR IGNORE INTO lesson_text_stale (key) VALUES (1)"


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
    """Fill ``lesson_text_rows`` with the live rows' folded text, and index it with FTS5 when
    this SQLite has FTS5 (searches use ``LIKE`` otherwise). The Python step of
    ``m005_lesson_search``."""
    rows = conn.execute("SELECT id, body FROM records WHERE deleted = 0").fetchall()
    conn.executemany(
        "INSERT INTO lesson_text_rows (id, title, recommendation) VALUES (?, ?, ?)",
        [(lesson_id, *_folded_card(body)) for lesson_id, body in rows],
    )
    if fts5_available(conn):
        conn.execute(_CREATE_FTS)
        conn.execute("INSERT INTO lesson_text (lesson_text) VALUES ('rebuild')")


def fts5_available(conn: sqlite3.Connection) -> bool:
    """Whether this SQLite has the FTS5 module (a store can be opened by builds without it)."""
    try:
        conn.execute("SELECT fts5_source_id()")
    except sqlite3.OperationalError:
        return False
    return True


def resync_fts_index(conn: sqlite3.Connection) -> bool:
    """Rebuild the FTS5 index of a store whose text table an SQLite without FTS5 changed (or
    create it, for a store upgraded by one), in its own write transaction; True when it did.
    Nothing to do, or no FTS5 here: False, and one read."""
    if not has_table(conn, "lesson_text_rows") or not fts5_available(conn):
        return False
    if has_table(conn, "lesson_text") and not _is_stale(conn):
        return False
    conn.execute("BEGIN IMMEDIATE")
    try:
        if not has_table(conn, "lesson_text"):
            conn.execute(_CREATE_FTS)
        conn.execute("INSERT INTO lesson_text (lesson_text) VALUES ('rebuild')")
        conn.execute("DELETE FROM lesson_text_stale")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return True


def has_table(conn: sqlite3.Connection, name: str) -> bool:
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return found is not None


def _is_stale(conn: sqlite3.Connection) -> bool:
    if not has_table(conn, "lesson_text_stale"):
        return False
    return conn.execute("SELECT 1 FROM lesson_text_stale").fetchone() is not None


def has_fts_index(conn: sqlite3.Connection) -> bool:
    """Whether a search can use the FTS5 index: there is one, this SQLite can read it, and no
    build without FTS5 has changed the text since it was built."""
    return has_table(conn, "lesson_text") and fts5_available(conn) and not _is_stale(conn)


def like_note(conn: sqlite3.Connection) -> str:
    """Why a search of a store with its text table compares words with ``LIKE``."""
    return STALE_NOTE if has_table(conn, "lesson_text") and fts5_available(conn) else LIKE_NOTE


def text_statements(
    conn: object, changed: Sequence[tuple[str, tuple[str, str] | None, bool]]
) -> list[tuple[str, tuple[object, ...]]]:
    """The statements that bring the search text up to date with ``changed`` rows, each
    ``(id, (title, recommendation) of the card written or None, purged)``, in a few statements
    per batch; none for a store without the text table. The writer passes the texts of the
    drafts it encoded, so no card is parsed back from its JSON. An SQLite without FTS5 marks an
    FTS5 index stale instead of writing it, and a stale index is rebuilt whole instead of
    written row by row."""
    if not changed:
        return []
    ids = tuple(lesson_id for lesson_id, _, _ in changed)
    live = [(lesson_id, folded_text(card[0]), folded_text(card[1]))
            for lesson_id, card, _ in changed if card is not None]  # fmt: skip
    if not isinstance(conn, sqlite3.Connection):
        return _pg_text_statements(ids, live)
    if not has_table(conn, "lesson_text_rows"):
        return []
    indexed = has_table(conn, "lesson_text")
    usable = indexed and fts5_available(conn)
    rebuild = usable and _is_stale(conn)
    write_index = usable and not rebuild
    statements: list[tuple[str, tuple[object, ...]]] = []
    for start in range(0, len(ids), _BATCH):
        part = ids[start : start + _BATCH]
        marks = ", ".join("?" * len(part))
        if write_index:
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
        if write_index:
            marks = ", ".join("?" * len(part_rows))
            statements.append((
                "INSERT INTO lesson_text (rowid, title, recommendation) SELECT key, title, "
                f"recommendation FROM lesson_text_rows WHERE id IN ({marks})",
                tuple(row[0] for row in part_rows),
            ))  # fmt: skip
    if indexed and not usable:
        statements.append((_STALE, ()))
    if rebuild:
        statements += [("INSERT INTO lesson_text (lesson_text) VALUES ('rebuild')", ()),
                       ("DELETE FROM lesson_text_stale", ())]  # fmt: skip
    elif write_index and any(purged for _, _, purged in changed):
        statements.append(("INSERT INTO lesson_text (lesson_text) VALUES ('optimize')", ()))
    return statements


def _pg_text_statements(
    ids: tuple[str, ...], live: list[tuple[str, str, str]]
) -> list[tuple[str, tuple[object, ...]]]:
    # A live row's words replace its old ones in place (one statement where a delete and an
    # insert were two); only the rows left without a card lose theirs.
    written = {lesson_id for lesson_id, _, _ in live}
    gone = tuple(lesson_id for lesson_id in ids if lesson_id not in written)
    statements: list[tuple[str, tuple[object, ...]]] = []
    for start in range(0, len(gone), _BATCH):
        part = gone[start : start + _BATCH]
        statements.append(
            (f"DELETE FROM lesson_text WHERE id IN ({', '.join('?' * len(part))})", part)
        )
    for start in range(0, len(live), _BATCH):
        rows = [(lesson_id, f"{title} {text}".strip()) for lesson_id, title, text in
                live[start : start + _BATCH]]  # fmt: skip
        values = ", ".join(["(?, array_to_tsvector(string_to_array(?, ' ')))"] * len(rows))
        statements.append((f"INSERT INTO lesson_text (id, words) VALUES {values} "
                           "ON CONFLICT (id) DO UPDATE SET words = excluded.words",
                           tuple(value for row in rows for value in row)))  # fmt: skip
    return statements


def fill_pg_text(conn: Any) -> None:
    """Fill PostgreSQL's ``lesson_text`` from the live rows: the Python step of its
    ``m003_lesson_search`` (``conn`` a psycopg connection inside the migration)."""
    rows = conn.execute("SELECT id, body FROM records WHERE deleted = 0").fetchall()
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO lesson_text (id, words) VALUES "
            "(%s, array_to_tsvector(string_to_array(%s, ' ')))",
            [(lesson_id, " ".join(_folded_card(body)).strip()) for lesson_id, body in rows],
        )


# PostgreSQL: the folded words of each live row, as lexemes (the writer and fill_pg_text).
PG_SEARCH_STATEMENTS: tuple[str, ...] = (
    """
        CREATE TABLE lesson_text (
            id text COLLATE "C" PRIMARY KEY,
            words tsvector NOT NULL
        )
        """,
    "CREATE INDEX lesson_text_words ON lesson_text USING gin (words)",
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


def query_problem(query: str) -> str | None:
    """Why ``query`` cannot be searched, in one sentence for the person who typed it; None
    when it can."""
    words = folded_words(query)
    if not words:
        return "give at least one word (letters or digits)"
    if len(words) > MAX_WORDS:
        return f"give at most {MAX_WORDS} words (this search has {len(words)})"
    return None


def query_words(query: str | None) -> list[str]:
    """The words a search looks for, folded as the indexes' words are (:func:`folded_words`).
    ValueError for more than MAX_WORDS words (its message says so)."""
    words = folded_words(query or "")
    if len(words) > MAX_WORDS:
        raise ValueError(query_problem(query or ""))
    return words


def sqlite_fts_query(words: list[str]) -> str:
    """An FTS5 query: every word as a quoted prefix (words hold no quote), all required."""
    return " ".join(f'"{word}"*' for word in words)


def pg_tsquery(words: list[str]) -> str:
    """A ``tsquery`` text, read as it is: every word as a quoted prefix, all required."""
    return " & ".join(f"'{word}':*" for word in words)


def like_patterns(words: list[str]) -> list[str]:
    """``LIKE`` patterns, one a word, for the folded text with a space before each word: the
    word at the start of a word (words are letters and digits, so no character of a pattern
    but its ``%`` is a wildcard and no ESCAPE clause is needed)."""
    return [f"% {word}%" for word in words]


def folded_words(text: str) -> list[str]:
    """The words of ``text`` as both indexes hold them: case-folded, NFKD, marks removed,
    runs of letters and digits, each cut to WORD_CHARS characters."""
    if text.isascii():
        # Most cards: ASCII case-folds as lower() does, and NFKD leaves it without marks.
        plain = text.lower()
    else:
        plain = "".join(c for c in unicodedata.normalize("NFKD", text.casefold())
                        if not unicodedata.combining(c))  # fmt: skip
    return [word[:WORD_CHARS] for word in _WORD.findall(plain)]


def folded_text(text: str) -> str:
    """The folded words of ``text``, separated by spaces: what the indexes are given."""
    return " ".join(folded_words(text))


def _folded_card(body: object) -> tuple[str, str]:
    title, recommendation = card_text(body)
    return folded_text(title), folded_text(recommendation)


def text_matches(words: list[str], title: str, recommendation: str) -> bool:
    """Whether every one of ``words`` begins a word of the title or the recommendation: the
    search of a store that only lists its lessons (one served over HTTPS)."""
    found = folded_words(f"{title} {recommendation}")
    return all(any(w.startswith(word) for w in found) for word in words)
