"""The PostgreSQL lesson store: one schema per tenant, the shared store logic, a pool.

Needs the ``postgres`` extra (``pip install 'active-memory[postgres]'``: psycopg 3 and
psycopg_pool); :func:`active_memory.store.select.open_backend` names it when it is missing.
"""

from __future__ import annotations

from active_memory.store.postgres.schema import PG_MIGRATIONS, TENANT_PATTERN, tenant_schema
from active_memory.store.postgres.store import PostgresStore, is_postgres_url

__all__ = ["PG_MIGRATIONS", "TENANT_PATTERN", "PostgresStore", "is_postgres_url", "tenant_schema"]
