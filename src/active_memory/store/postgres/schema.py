"""PostgreSQL schema of one tenant: named, append-only, checksummed migrations.

The same tables as the SQLite store (``meta``, ``records``, ``history``, ``quarantine``) in the
PostgreSQL dialect, so the shared SQL of ``admin``, ``transfer`` and ``writes`` runs on both.
Each tenant has a schema of its own (``am_tenant_<name>``) with its own ``schema_migrations``
ledger; the ledger rules (order, names, checksums; a newer or edited migration refuses to open)
are those of :func:`active_memory.store.migrations.pending_migrations`, applied to this list.

Ids sort with the "C" collation, byte order like SQLite's, whatever the database's locale. Live
rows carry the writer's checksum from the start (SQLite gained it in ``m002_row_checksums``;
no PostgreSQL store predates it, so there is nothing to backfill).
"""

from __future__ import annotations

import re

from psycopg import Connection, sql

from active_memory.errors import ConfigError
from active_memory.store.migrations import (
    RECORDS_CHECKS,
    RECORDS_SCOPE_INDEXES,
    Migration,
    MigrationMismatch,
    pending_migrations,
)
from active_memory.store.search_text import PG_SEARCH_STATEMENTS, fill_pg_text

__all__ = [
    "PG_MIGRATIONS",
    "TENANT_PATTERN",
    "applied_migrations",
    "apply_pending",
    "tenant_schema",
]

TENANT_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,39}")
_NOW = """to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')"""

_LEDGER = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    seq integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL UNIQUE,
    checksum text NOT NULL,
    applied_at text NOT NULL
)
"""

m001_initial = Migration(
    "m001_initial",
    (
        """
        CREATE TABLE meta (
            singleton integer PRIMARY KEY CHECK (singleton = 1),
            generation bigint NOT NULL CHECK (generation >= 0),
            live_count bigint NOT NULL DEFAULT 0,
            record_count bigint NOT NULL DEFAULT 0,
            content_bytes bigint NOT NULL DEFAULT 0,
            created_at text NOT NULL
        )
        """,
        f"INSERT INTO meta (singleton, generation, created_at) VALUES (1, 0, {_NOW})",
        f"""
        CREATE TABLE records (
            id text COLLATE "C" PRIMARY KEY,
            revision bigint NOT NULL CHECK (revision > 0),
            deleted integer NOT NULL CHECK (deleted IN (0, 1)),
            kind text NOT NULL CHECK (kind IN ('repository', 'graph')),
            repository text,
            graph_hash text,
            node_id text,
            body text,
            evidence text,
            size integer NOT NULL CHECK (size >= 0),
            checksum text,
            scoped integer NOT NULL DEFAULT 0 CHECK (scoped IN (0, 1)),
            scope_repository text,
            scope_graph_hash text,
            {RECORDS_CHECKS}
        )
        """,
        *RECORDS_SCOPE_INDEXES,
        # The capacity counters, kept as SQLite's triggers keep them. The function is bound to
        # the schema it was created in, so it can never update another tenant's counters.
        """
        CREATE FUNCTION records_count() RETURNS trigger LANGUAGE plpgsql
        SET search_path FROM CURRENT AS $$
        BEGIN
            IF TG_OP = 'INSERT' THEN
                UPDATE meta SET live_count = live_count + (NEW.deleted = 0)::int,
                                record_count = record_count + 1,
                                content_bytes = content_bytes + NEW.size;
            ELSIF TG_OP = 'UPDATE' THEN
                UPDATE meta SET live_count = live_count + (NEW.deleted = 0)::int
                                             - (OLD.deleted = 0)::int,
                                content_bytes = content_bytes + NEW.size - OLD.size;
            ELSE
                UPDATE meta SET live_count = live_count - (OLD.deleted = 0)::int,
                                record_count = record_count - 1,
                                content_bytes = content_bytes - OLD.size;
            END IF;
            RETURN NULL;
        END
        $$
        """,
        """
        CREATE TRIGGER records_count AFTER INSERT OR UPDATE OR DELETE ON records
        FOR EACH ROW EXECUTE FUNCTION records_count()
        """,
        # The scope a row last had while live, kept through retirement and purge (a tombstone
        # keeps no content), so the service can tell whose tombstone an id is.
        """
        CREATE FUNCTION records_scope() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.deleted = 0 THEN
                NEW.scoped := 1;
                NEW.scope_repository := NEW.repository;
                NEW.scope_graph_hash := NEW.graph_hash;
            ELSIF TG_OP = 'UPDATE' THEN
                NEW.scoped := OLD.scoped;
                NEW.scope_repository := OLD.scope_repository;
                NEW.scope_graph_hash := OLD.scope_graph_hash;
            END IF;
            RETURN NEW;
        END
        $$
        """,
        """
        CREATE TRIGGER records_scope BEFORE INSERT OR UPDATE ON records
        FOR EACH ROW EXECUTE FUNCTION records_scope()
        """,
        """
        CREATE TABLE history (
            id text COLLATE "C" NOT NULL REFERENCES records (id),
            revision bigint NOT NULL CHECK (revision > 0),
            op text NOT NULL CHECK (op IN ('upsert', 'retire', 'revert', 'purge')),
            body text,
            evidence text,
            source_revision bigint,
            generation bigint NOT NULL CHECK (generation > 0),
            run_id text NOT NULL,
            time text NOT NULL,
            PRIMARY KEY (id, revision)
        )
        """,
    ),
)

# Proposals held for review by weak screening signals (store/quarantine.py), as in SQLite's
# m003_quarantine: the draft as JSON, apart from the live records, deleted when decided.
m002_quarantine = Migration(
    "m002_quarantine",
    (
        """
        CREATE TABLE quarantine (
            id text COLLATE "C" PRIMARY KEY,
            run_id text NOT NULL,
            role text NOT NULL,
            kind text NOT NULL CHECK (kind IN ('repository', 'graph')),
            signals text NOT NULL,
            draft text NOT NULL,
            time text NOT NULL
        )
        """,
    ),
)

# The browser at scale, as SQLite's m005_lesson_search: the live cards' folded words under a GIN
# index for full-text search, and the indexes the browser's sorts and filters read.
m003_lesson_search = Migration("m003_lesson_search", PG_SEARCH_STATEMENTS, backfill=fill_pg_text)

# The counters' triggers fire on an UPDATE only when a column they count changed. A new revision
# of a lesson that keeps its scope and its size then writes neither the meta row nor its
# scope's count, where each wrote once a row (scope_counts twice: a decrement and an increment
# that cancelled out), under the writers' lock. Their functions are m001's and m003's.
m004_quiet_counters = Migration(
    "m004_quiet_counters",
    (
        "DROP TRIGGER records_count ON records",
        """
        CREATE TRIGGER records_count AFTER INSERT OR DELETE ON records
        FOR EACH ROW EXECUTE FUNCTION records_count()
        """,
        """
        CREATE TRIGGER records_count_update AFTER UPDATE ON records
        FOR EACH ROW WHEN (OLD.deleted <> NEW.deleted OR OLD.size <> NEW.size)
        EXECUTE FUNCTION records_count()
        """,
        "DROP TRIGGER scope_counts ON records",
        """
        CREATE TRIGGER scope_counts AFTER INSERT OR DELETE ON records
        FOR EACH ROW EXECUTE FUNCTION scope_counts()
        """,
        """
        CREATE TRIGGER scope_counts_update AFTER UPDATE ON records
        FOR EACH ROW WHEN ((OLD.deleted, OLD.kind, OLD.repository, OLD.graph_hash)
                           IS DISTINCT FROM (NEW.deleted, NEW.kind, NEW.repository, NEW.graph_hash))
        EXECUTE FUNCTION scope_counts()
        """,
    ),
)

PG_MIGRATIONS: tuple[Migration, ...] = (
    m001_initial,
    m002_quarantine,
    m003_lesson_search,
    m004_quiet_counters,
)


def tenant_schema(tenant: str) -> str:
    """The schema holding ``tenant``'s lessons; ConfigError for a name that is not one."""
    if not isinstance(tenant, str) or not TENANT_PATTERN.fullmatch(tenant):
        raise ConfigError(
            "tenant",
            f"{tenant!r} must be 1-40 characters of a-z, 0-9 and _, starting with a letter",
        )
    return f"am_tenant_{tenant}"


def applied_migrations(conn: Connection[tuple[object, ...]], schema: str) -> list[tuple[str, str]]:
    exists = conn.execute(
        "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = 'schema_migrations'",
        (schema,),
    ).fetchone()
    if exists is None:
        return []
    rows = conn.execute(
        sql.SQL("SELECT name, checksum FROM {}.schema_migrations ORDER BY seq").format(
            sql.Identifier(schema)
        )
    ).fetchall()
    return [(str(name), str(checksum)) for name, checksum in rows]


def check_current(
    conn: Connection[tuple[object, ...]],
    schema: str,
    known: tuple[Migration, ...] = PG_MIGRATIONS,
) -> None:
    """MigrationMismatch unless ``schema``'s ledger records exactly ``known`` (one read)."""
    todo = pending_migrations(applied_migrations(conn, schema), known)
    if todo:
        raise MigrationMismatch(
            f"its ledger lacks {', '.join(m.name for m in todo)} (dropped or rolled back since "
            "it was opened); restart the service to migrate it again, or restore a backup"
        )


def apply_pending(
    conn: Connection[tuple[object, ...]],
    schema: str,
    known: tuple[Migration, ...] = PG_MIGRATIONS,
) -> int:
    """Create ``schema`` if needed and apply its pending migrations in one transaction.

    A transaction-scoped advisory lock on the schema's name makes two processes opening a new
    tenant at once apply each migration exactly once. Raises MigrationMismatch.
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (schema,))
        todo = pending_migrations(applied_migrations(conn, schema), known)
        if not todo:
            return 0
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("SET LOCAL search_path = {}").format(sql.Identifier(schema)))
        conn.execute(_LEDGER)
        for migration in todo:
            for statement in migration.statements:
                conn.execute(statement.encode("utf-8"))
            if migration.backfill is not None:
                migration.backfill(conn)
            conn.execute(
                f"INSERT INTO schema_migrations (name, checksum, applied_at) "
                f"VALUES (%s, %s, {_NOW})".encode(),
                (migration.name, migration.checksum),
            )
    return len(todo)
