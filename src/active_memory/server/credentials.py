"""The service's credentials: per tenant and scope, stored hashed, in the service's database.

A token reads ``amt_<id>_<secret>``: ``id`` (16 hex characters) finds the row, ``secret`` (32
random bytes, URL-safe) is what proves possession. Only the SHA-256 of the secret is stored (a
random 256-bit secret needs no slow hash: it cannot be guessed, only stolen, and a stolen table
holds no token). The secret is shown once, by ``create``; ``list`` shows ids, scopes, labels and
dates; ``revoke`` stamps the row, and a revoked or expired credential is refused at once (there
is no cache). The comparison is constant-time.

A credential may be bound to one run (``server token create --run RUN_ID``): the service then
refuses a write (publication, revert, purge) under any other run id, so a token handed to one CI
job cannot record its changes as another run's.

A credential may review (``server token create --review``): only such a token approves or
rejects a held proposal through the service, so a token that can hold a proposal (any host's,
after a postmortem) cannot also publish it past the screen by approving it itself.

The table lives in the schema ``am_service``, beside the tenants' schemas, with its own
checksummed migration ledger.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from active_memory.errors import ConfigError, StoreError
from active_memory.models.base import Model
from active_memory.models.fields import RepositoryKey, one_line_problem
from active_memory.store.access import AccessScope
from active_memory.store.migrations import Migration
from active_memory.store.postgres.schema import apply_pending, tenant_schema
from active_memory.store.postgres.session import reading, updating

__all__ = ["SERVICE_SCHEMA", "Credential", "CredentialStore", "IssuedToken"]

SERVICE_SCHEMA = "am_service"
_TOKEN = re.compile(r"amt_([0-9a-f]{16})_([A-Za-z0-9_-]{43})")
_GRAPH_HASH = re.compile(r"[0-9a-f]{64}")

m001_credentials = Migration(
    "m001_credentials",
    (
        """
        CREATE TABLE credentials (
            id text PRIMARY KEY,
            tenant text NOT NULL,
            repository text NOT NULL,
            graph_hash text,
            label text NOT NULL,
            secret_sha256 text NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            expires_at timestamptz,
            revoked_at timestamptz
        )
        """,
    ),
)
# Append-only: a credential bound to one run id (NULL: any run of its scope).
m002_run_binding = Migration(
    "m002_run_binding",
    ("ALTER TABLE credentials ADD COLUMN run_id text",),
)
# Append-only: a credential allowed to approve and reject held proposals.
m003_review = Migration(
    "m003_review",
    ("ALTER TABLE credentials ADD COLUMN review boolean NOT NULL DEFAULT false",),
)
SERVICE_MIGRATIONS = (m001_credentials, m002_run_binding, m003_review)
_RUN_ID_BYTES = 200  # the wire's RunId


class _Repository(Model):
    repository: RepositoryKey


@dataclass(frozen=True, slots=True)
class Credential:
    id: str
    tenant: str
    repository: str
    graph_hash: str | None
    label: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    run_id: str | None = None
    review: bool = False

    @property
    def scope(self) -> AccessScope:
        return AccessScope(self.tenant, self.repository, self.graph_hash)

    def refuses_run(self, run_id: str) -> bool:
        """Whether a write under ``run_id`` is outside this credential's run binding."""
        return self.run_id is not None and run_id != self.run_id

    def state(self, now: datetime) -> str:
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        return "active"


@dataclass(frozen=True, slots=True)
class IssuedToken:
    credential: Credential
    token: str  # shown once; never stored


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


_COLUMNS = (
    "id, tenant, repository, graph_hash, label, created_at, expires_at, revoked_at, run_id, review"
)
# The check of every request: one statement on an autocommit connection of the pool (its
# own snapshot, no transaction to open and close), its text fixed and the id a parameter, so
# the pool's connections prepare it (``session._prepare_threshold``, which also switches that
# off for a pooler that cannot keep them): one round trip, neither side parsing or planning it
# again. A transaction opened, set up and committed around the same read
# cost this process about twice the CPU, on every request. It runs under no statement timeout
# of ours (a session-wide one would also cut off migrations, and leak to other clients behind a
# transaction pooler): a read of one row by its key waits only behind a migration of this
# schema, which the service applies once, at its start.
_CHECK = f"SELECT {_COLUMNS}, secret_sha256, now() FROM {SERVICE_SCHEMA}.credentials WHERE id = %s"


def _credential(row: tuple[object, ...]) -> Credential:
    ident, tenant, repository, graph_hash, label, created, expires, revoked, run_id, review = row
    return Credential(
        str(ident),
        str(tenant),
        str(repository),
        None if graph_hash is None else str(graph_hash),
        str(label),
        created,  # type: ignore[arg-type]
        expires,  # type: ignore[arg-type]
        revoked,  # type: ignore[arg-type]
        None if run_id is None else str(run_id),
        bool(review),
    )


class CredentialStore:
    """The credentials table of one service database, over a shared pool."""

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool
        with pool.connection() as conn:
            apply_pending(conn, SERVICE_SCHEMA, SERVICE_MIGRATIONS)

    def create(
        self,
        *,
        tenant: str,
        repository: str,
        graph_hash: str | None = None,
        label: str = "",
        expires_in: timedelta | None = None,
        run_id: str | None = None,
        review: bool = False,
    ) -> IssuedToken:
        tenant_schema(tenant)  # ConfigError for a bad tenant name
        _Repository.parse({"repository": repository}, where="--repository-key")
        if graph_hash is not None and not _GRAPH_HASH.fullmatch(graph_hash):
            raise ConfigError("--graph", f"{graph_hash!r} must be 64 lowercase hex characters")
        if len(label) > 200 or not label.isprintable():
            raise ConfigError("--label", "must be one printable line of at most 200 characters")
        if expires_in is not None and expires_in <= timedelta(0):
            raise ConfigError("--expires-in", "must be a positive duration")
        problem = None if run_id is None else one_line_problem(run_id, _RUN_ID_BYTES)
        if problem is not None:
            raise ConfigError("--run", f"{run_id!r} {problem}")
        ident, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
        expires = None if expires_in is None else datetime.now(UTC) + expires_in
        with updating(self._pool, SERVICE_SCHEMA, "creating a credential") as session:
            row = session.execute(
                "INSERT INTO credentials (id, tenant, repository, graph_hash, label, "
                "secret_sha256, expires_at, run_id, review) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                f"RETURNING {_COLUMNS}",
                (
                    ident,
                    tenant,
                    repository,
                    graph_hash,
                    label,
                    _digest(secret),
                    expires,
                    run_id,
                    review,
                ),
            ).fetchone()
        return IssuedToken(_credential(row), f"amt_{ident}_{secret}")

    def list_credentials(self, tenant: str | None = None) -> tuple[Credential, ...]:
        query = f"SELECT {_COLUMNS} FROM credentials"
        params: tuple[str, ...] = ()
        if tenant is not None:
            query, params = query + " WHERE tenant = ?", (tenant,)
        with reading(self._pool, SERVICE_SCHEMA, "listing credentials") as session:
            rows = session.execute(query + " ORDER BY tenant, created_at, id", params).fetchall()
        return tuple(_credential(row) for row in rows)

    def revoke(self, ident: str) -> Credential:
        with updating(self._pool, SERVICE_SCHEMA, "revoking a credential") as session:
            row = session.execute(
                "UPDATE credentials SET revoked_at = coalesce(revoked_at, now()) WHERE id = ? "
                f"RETURNING {_COLUMNS}",
                (ident,),
            ).fetchone()
        if row is None:
            raise StoreError(f"no credential {ident!r}; `active-memory server token list`")
        return _credential(row)

    def authenticate(self, token: str) -> Credential | None:
        """The active credential ``token`` proves, or None (malformed, unknown, wrong secret,
        revoked or expired: the caller says only "refused")."""
        match = _TOKEN.fullmatch(token)
        if match is None:
            return None
        ident, secret = match.groups()
        try:
            with self._pool.connection() as conn:
                row = conn.execute(_CHECK, (ident,)).fetchone()
        except (PoolTimeout, psycopg.Error) as error:
            raise StoreError(f"checking a credential failed ({error}); retry") from None
        presented = _digest(secret)
        if row is None:
            hmac.compare_digest(presented, presented)  # the same work for an unknown id
            return None
        *fields, stored, now = row
        if not hmac.compare_digest(presented, str(stored)):
            return None
        credential = _credential(tuple(fields))
        return credential if credential.state(now) == "active" else None
