"""Named, append-only schema migrations, recorded with a checksum in ``schema_migrations``.

Rules: never edit or reorder a migration once released; add ``m00N_<what>`` at the end. The
checksum of every applied migration is stored, and opening a store whose recorded checksum
differs from the code refuses to continue, so an edited migration is caught on the first open
instead of leaving stores with silently different schemas.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from active_memory.store.checked_rows import backfill_checksums
from active_memory.store.search_text import SQLITE_SEARCH_STATEMENTS, create_fts_index

__all__ = [
    "MIGRATIONS",
    "Migration",
    "MigrationMismatch",
    "applied_migrations",
    "apply_pending",
    "pending_migrations",
]


@dataclass(frozen=True, slots=True)
class Migration:
    """SQL statements, then optionally a Python step over the rows, in one transaction."""

    name: str
    statements: tuple[str, ...]
    # An SQLite connection, or a psycopg one for a PostgreSQL migration.
    backfill: Callable[[Any], None] | None = None

    @property
    def checksum(self) -> str:
        text = "\n;\n".join(statement.strip() for statement in self.statements)
        if self.backfill is not None:  # the step is part of the definition, by its name
            text += f"\n;\nbackfill {self.backfill.__module__}.{self.backfill.__qualname__}"
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


class MigrationMismatch(Exception):
    """The recorded migrations do not match the code; the message says which one and how."""


_LEDGER = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    seq INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    checksum TEXT NOT NULL,
    applied_at TEXT NOT NULL
)
"""

# What a row of ``records`` may hold and the indexes that scope a snapshot's reads: the same in
# the PostgreSQL schema (store/postgres/schema.py), whose ``records`` has the same columns, so
# both stores refuse the same rows. The lines after the first are indented to stand inside the
# CREATE TABLE statements that use it, since every character counts in their released checksums.
RECORDS_CHECKS = """CHECK ((deleted = 1) = (body IS NULL)),
            CHECK ((deleted = 1) = (evidence IS NULL)),
            CHECK (deleted = 0 OR (repository IS NULL AND graph_hash IS NULL AND node_id IS NULL
                                   AND size = 0)),
            CHECK (deleted = 1 OR kind = 'graph' OR (repository IS NOT NULL
                                                     AND graph_hash IS NULL AND node_id IS NULL)),
            CHECK (deleted = 1 OR kind = 'repository' OR (graph_hash IS NOT NULL
                                                          AND node_id IS NOT NULL))"""
RECORDS_SCOPE_INDEXES = (
    """
        CREATE INDEX records_repository_scope ON records (repository, id)
        WHERE kind = 'repository' AND deleted = 0
        """,
    """
        CREATE INDEX records_graph_scope ON records (graph_hash, id)
        WHERE kind = 'graph' AND deleted = 0
        """,
)

m001_initial = Migration(
    "m001_initial",
    (
        """
        CREATE TABLE meta (
            singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
            generation INTEGER NOT NULL CHECK (generation >= 0),
            live_count INTEGER NOT NULL DEFAULT 0,
            record_count INTEGER NOT NULL DEFAULT 0,
            content_bytes INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL
        )
        """,
        """
        INSERT INTO meta (singleton, generation, created_at)
        VALUES (1, 0, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
        """,
        # One row per id ever published. A retired id keeps its row as a tombstone: id, revision
        # and kind only (scope, card and evidence are content), so it can never be recreated.
        f"""
        CREATE TABLE records (
            id TEXT PRIMARY KEY NOT NULL,
            revision INTEGER NOT NULL CHECK (revision > 0),
            deleted INTEGER NOT NULL CHECK (deleted IN (0, 1)),
            kind TEXT NOT NULL CHECK (kind IN ('repository', 'graph')),
            repository TEXT,
            graph_hash TEXT,
            node_id TEXT,
            body TEXT,
            evidence TEXT,
            size INTEGER NOT NULL CHECK (size >= 0),
            {RECORDS_CHECKS}
        )
        """,
        *RECORDS_SCOPE_INDEXES,
        # Capacity counters kept by triggers, so a capacity check reads one row instead of
        # scanning 10,000 records in every publication; `check` compares them with a recount.
        """
        CREATE TRIGGER records_count_insert AFTER INSERT ON records BEGIN
            UPDATE meta SET live_count = live_count + (NEW.deleted = 0),
                            record_count = record_count + 1,
                            content_bytes = content_bytes + NEW.size;
        END
        """,
        """
        CREATE TRIGGER records_count_update AFTER UPDATE ON records BEGIN
            UPDATE meta SET live_count = live_count + (NEW.deleted = 0) - (OLD.deleted = 0),
                            content_bytes = content_bytes + NEW.size - OLD.size;
        END
        """,
        """
        CREATE TRIGGER records_count_delete AFTER DELETE ON records BEGIN
            UPDATE meta SET live_count = live_count - (OLD.deleted = 0),
                            record_count = record_count - 1,
                            content_bytes = content_bytes - OLD.size;
        END
        """,
        """
        CREATE TABLE history (
            id TEXT NOT NULL REFERENCES records (id),
            revision INTEGER NOT NULL CHECK (revision > 0),
            op TEXT NOT NULL CHECK (op IN ('upsert', 'retire', 'revert', 'purge')),
            body TEXT,
            evidence TEXT,
            source_revision INTEGER,
            generation INTEGER NOT NULL CHECK (generation > 0),
            run_id TEXT NOT NULL,
            time TEXT NOT NULL,
            PRIMARY KEY (id, revision)
        )
        """,
    ),
)

# Snapshots verify rows by checksum instead of re-validating every card (issue 10). Existing
# live rows are validated once here and given their checksum; a row that fails validation keeps
# none, so a snapshot refuses it and `store check` names it, exactly as before the upgrade.
m002_row_checksums = Migration(
    "m002_row_checksums",
    ("ALTER TABLE records ADD COLUMN checksum TEXT",),
    backfill=backfill_checksums,
)

# Proposals held for review by weak screening signals (store/quarantine.py): the draft as
# JSON, kept apart from the live records, deleted (never tombstoned) when approved or rejected.
m003_quarantine = Migration(
    "m003_quarantine",
    (
        """
        CREATE TABLE quarantine (
            id TEXT PRIMARY KEY NOT NULL,
            run_id TEXT NOT NULL,
            role TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('repository', 'graph')),
            signals TEXT NOT NULL,
            draft TEXT NOT NULL,
            time TEXT NOT NULL
        )
        """,
    ),
)

# Memory init's publication receipts (store/init_receipts.py): written in the publishing
# transaction itself, so a process killed between that commit and the session's local checkpoint
# finds its publication on resume instead of repeating it; removed once the checkpoint is durable.
m004_init_receipts = Migration(
    "m004_init_receipts",
    (
        """
        CREATE TABLE init_receipts (
            session TEXT PRIMARY KEY NOT NULL,
            receipt TEXT NOT NULL,
            time TEXT NOT NULL
        )
        """,
    ),
)

# The browser at scale (issue 33): the live lessons' text for full-text search (FTS5 where
# this SQLite has it, store/search_text.py) and the indexes its sorts and filters read.
m005_lesson_search = Migration(
    "m005_lesson_search",
    SQLITE_SEARCH_STATEMENTS,
    backfill=create_fts_index,
)

MIGRATIONS: tuple[Migration, ...] = (
    m001_initial,
    m002_row_checksums,
    m003_quarantine,
    m004_init_receipts,
    m005_lesson_search,
)


def applied_migrations(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """(name, checksum) of every recorded migration in order; [] for a fresh database."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()
    if exists is None:
        return []
    rows = conn.execute("SELECT name, checksum FROM schema_migrations ORDER BY seq").fetchall()
    return [(str(name), str(checksum)) for name, checksum in rows]


def pending_migrations(
    applied: list[tuple[str, str]], known: tuple[Migration, ...] = MIGRATIONS
) -> tuple[Migration, ...]:
    """The migrations still to run; raises MigrationMismatch when history and code disagree."""
    if len(applied) > len(known):
        newer = ", ".join(name for name, _ in applied[len(known) :])
        raise MigrationMismatch(
            f"it was migrated by a newer active-memory ({newer}); upgrade active-memory"
        )
    for position, (name, checksum) in enumerate(applied):
        expected = known[position]
        if name != expected.name:
            raise MigrationMismatch(
                f"migration #{position + 1} is recorded as {name!r} but this version expects "
                f"{expected.name!r}; restore a backup made by this version"
            )
        if checksum != expected.checksum:
            raise MigrationMismatch(
                f"migration {name!r} was applied with a different definition "
                f"(checksum {checksum[:12]}…, expected {expected.checksum[:12]}…); "
                "released migrations must never be edited"
            )
    return known[len(applied) :]


def apply_pending(conn: sqlite3.Connection, known: tuple[Migration, ...] = MIGRATIONS) -> int:
    """Apply every pending migration in one write transaction; returns how many ran.

    The ledger is re-read under the write lock, so two processes opening a fresh store at once
    apply each migration exactly once.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(_LEDGER)
        todo = pending_migrations(applied_migrations(conn), known)
        for migration in todo:
            for statement in migration.statements:
                conn.execute(statement)
            if migration.backfill is not None:
                migration.backfill(conn)
            conn.execute(
                "INSERT INTO schema_migrations (name, checksum, applied_at) "
                "VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                (migration.name, migration.checksum),
            )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return len(todo)
