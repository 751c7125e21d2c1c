"""``PostgresStore``: one tenant's lessons in a PostgreSQL database, implementing
``ActiveMemoryBackend`` and the admin operations of ``SqliteStore``.

The planning and writing logic is the SQLite store's own (``checked``, ``writes``, ``admin``,
``transfer``, ``codec``, and ``engine``, whose ``EngineStore`` serves the admin operations both
stores share), run through :class:`~.session.PgSession`; this module only owns the transactions.
Every operation that a hosted service performs for a remote run takes ``within``, the
:class:`~active_memory.store.access.AccessScope` of the request's credential, and is then
confined to it inside the same transaction (see ``store/access.py``).
"""

from __future__ import annotations

from contextlib import AbstractContextManager

import psycopg
from psycopg_pool import ConnectionPool

from active_memory.errors import ConfigError, ScopeRefused, SnapshotError, StoreUnavailable
from active_memory.models.changes import Publication
from active_memory.store import admin
from active_memory.store.access import (
    SCOPED_STATE_COLUMNS,
    AccessScope,
    states_of,
    states_within,
)
from active_memory.store.backend import (
    PublicationControl,
    PublicationReceipt,
    Snapshot,
    SnapshotRequest,
)
from active_memory.store.checked import publish_checked, refuse_flagged
from active_memory.store.checked_rows import StoredLessons, verify_snapshot_rows
from active_memory.store.codec import DecodedContent, DecodedRows
from active_memory.store.engine import EngineStore
from active_memory.store.engine_steps import select_snapshot
from active_memory.store.migrations import MigrationMismatch
from active_memory.store.postgres.at_once import publish_at_once
from active_memory.store.postgres.schema import apply_pending, check_current, tenant_schema
from active_memory.store.postgres.session import (
    PgSession,
    open_pool,
    reading,
    redacted,
    writing,
)
from active_memory.store.postgres.statement_text import rows_query
from active_memory.store.postgres.tenant_code import tenant_code_problems
from active_memory.store.results import DEFAULT_LIMITS, StoreCheck, StoreLimits
from active_memory.store.writes import STATE_COLUMNS, read_generation

__all__ = ["PostgresStore", "is_postgres_url"]

_MIGRATIONS = "SELECT name FROM schema_migrations ORDER BY seq"
# The tenant's tables (the transaction's search_path is its schema), indexes and TOAST included.
_TABLE_BYTES = (
    "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
    "JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = current_schema() AND c.relkind = 'r'"
)


def is_postgres_url(location: str) -> bool:
    return location.startswith(("postgresql://", "postgres://"))


class PostgresStore(EngineStore):
    """The lessons of ``tenant`` in the database at ``url`` (a ``postgresql://`` URL).

    The tenant's schema is created and migrated on first open. ``pool`` shares one connection
    pool between the stores of several tenants (the service does); the store then leaves it
    open on ``close``.

    A purge or a rejection leaves ``scrubbed`` False: PostgreSQL's MVCC keeps dead tuples until
    VACUUM reclaims them, which this does not force; run ``VACUUM`` on the tenant's schema to
    reclaim them.
    """

    # The tenant schema keeps the scope each row last had (``scoped``, ``scope_repository``).
    _keeps_scopes = True

    def __init__(
        self,
        url: str,
        *,
        tenant: str,
        pool: ConnectionPool | None = None,
        pool_size: int = 8,
        lock_timeout_ms: int = 5000,
        limits: StoreLimits = DEFAULT_LIMITS,
    ) -> None:
        if not isinstance(url, str) or not is_postgres_url(url):
            raise ConfigError("url", "must be a postgresql:// URL")
        self._schema = tenant_schema(tenant)
        self.tenant = tenant
        self._where = f"{redacted(url)}, tenant {tenant!r}"
        self._limits = limits
        self._lock_timeout_ms = lock_timeout_ms
        self._decoded = DecodedRows(capacity=2 * max(limits.max_live, 1))
        self._contents = DecodedContent(capacity=2 * max(limits.max_live, 1))
        self._owns_pool = pool is None
        opened = open_pool(url, max_size=pool_size) if pool is None else pool
        self._pool: ConnectionPool | None = opened
        try:
            with opened.connection() as conn:
                apply_pending(conn, self._schema)
        except MigrationMismatch as error:
            self.close()
            raise StoreUnavailable(self._where, str(error)) from None
        except psycopg.Error as error:
            self.close()
            raise StoreUnavailable(self._where, f"cannot be initialised ({error})") from None

    def check_migrations(self) -> None:
        """StoreUnavailable when the tenant's migration ledger no longer matches this version
        (edited, rolled back or advanced by another process since this store opened)."""
        try:
            with self._open_pool().connection() as conn:
                check_current(conn, self._schema)
        except MigrationMismatch as error:
            raise StoreUnavailable(self._where, str(error)) from None
        except psycopg.Error as error:
            raise StoreUnavailable(self._where, f"cannot be read ({error})") from None

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        if self._pool is not None and self._owns_pool:
            self._pool.close()
        self._pool = None

    def _open_pool(self) -> ConnectionPool:
        if self._pool is None:
            raise StoreUnavailable(self._where, "is closed")
        return self._pool

    def _reading(
        self, failure: type[SnapshotError] | None = None, *, generation: bool = False
    ) -> AbstractContextManager[PgSession]:
        """A read transaction; ``generation``: its start reads the generation as well."""
        where = f"reading {self._where}"
        if failure is None:
            return reading(self._open_pool(), self._schema, where, generation=generation)
        return reading(self._open_pool(), self._schema, where, failure, generation=generation)

    def _writing(
        self, control: PublicationControl | None = None, *, then: str | None = None
    ) -> AbstractContextManager[PgSession]:
        return writing(
            self._open_pool(),
            self._schema,
            f"writing {self._where}",
            control,
            lock_timeout_ms=self._lock_timeout_ms,
            then=then,
        )

    # -- the backend protocol ----------------------------------------------------------------

    def generation(self) -> int:
        with self._reading(generation=True) as session:  # read with the transaction's start
            return read_generation(session)

    def snapshot(self, request: SnapshotRequest, *, within: AccessScope | None = None) -> Snapshot:
        """Every live lesson in scope, sorted by id, read in one REPEATABLE READ transaction;
        each row verified against its checksum, its lesson decoded on first read."""
        generation, rows = self.snapshot_rows(request, within=within)
        return Snapshot(generation, StoredLessons(rows, self._decoded))

    def snapshot_rows(
        self, request: SnapshotRequest, *, within: AccessScope | None = None
    ) -> tuple[int, list[tuple[object, ...]]]:
        """The generation and the verified ``LIVE_COLUMNS, checksum`` rows of a snapshot, for
        the service to send on without decoding them; SnapshotError for a damaged row."""
        if within is not None:
            request = within.confine(request)
        with self._reading(SnapshotError, generation=True) as session:
            generation, rows = select_snapshot(session, request)
        verify_snapshot_rows(rows)
        return generation, rows

    def publish(
        self,
        publication: Publication,
        control: PublicationControl | None = None,
        *,
        within: AccessScope | None = None,
    ) -> PublicationReceipt:
        """Screen every draft, then commit every mutation or none; see
        ``ActiveMemoryBackend.publish``. With ``within``, ScopeRefused for a draft or a stored
        lesson outside that scope."""
        if within is not None:
            for mutation in publication.mutations:
                if mutation.draft is not None and not within.allows_draft(mutation.draft):
                    raise ScopeRefused(f"the draft of lesson {mutation.id!r}", within.describe())
        refuse_flagged(publication, control)
        receipt = publish_at_once(
            self._open_pool(), self._schema, self._where, publication, self._limits,
            within=within, control=control, lock_timeout_ms=self._lock_timeout_ms,
        )  # fmt: skip
        if receipt is not None:
            return receipt
        ids = [mutation.id for mutation in publication.mutations]
        # The rows' states (with the stored scopes for ``within``) are read with the writers'
        # lock, in the round trip that takes it: other writers wait through one fewer.
        ahead = rows_query(STATE_COLUMNS if within is None else SCOPED_STATE_COLUMNS, ids)
        with self._writing(control, then=ahead) as session:
            if ahead is not None:
                states = states_of(session.ahead_rows, ids, within)
            elif within is not None:  # the scopes and the revisions in one read
                states = states_within(session, ids, within)
            else:
                states = None
            return publish_checked(session, publication, self._limits, states, last=True)

    # -- admin (list, get, history, revert, purge, export, import, review: EngineStore) -----

    def check(self) -> StoreCheck:
        """The tenant's migration ledger, every live row and stored past revision validated
        (live rows against their checksums) and screened, the capacity counters and the counts
        by repository and graph against a recount, the schema's code against what its
        migrations created (``tenant_code``), and counts; ``file_bytes`` is the size of
        the tenant's tables. PostgreSQL's own files are its own tools' to check (amcheck)."""
        problems: list[str] = []
        try:
            self.check_migrations()
        except StoreUnavailable as error:
            problems.append(str(error))
        with self._reading() as session:
            problems += admin.row_problems(session) + admin.capacity_problems(session)
            problems += admin.scope_count_problems(session) + tenant_code_problems(session)
            applied = [str(row[0]) for row in session.execute(_MIGRATIONS).fetchall()]
            (table_bytes,) = session.execute(_TABLE_BYTES).fetchone()
            return admin.counted_check(session, self._where, applied, int(table_bytes), problems)
