"""The database's share of a direct publication, for ``team_bench.py``'s floor.

``recording`` captures what ``PostgresStore.publish`` sends for each publication that goes out
whole (``store/postgres/at_once.py``): the read before the lock, then every statement of the
locked pipeline between the writers' lock and the ``COMMIT``. ``replay`` sends a recording
again, on a tenant seeded as the recorded one was, through the same ``read_all_once`` and
``writing_at_once``: the same reads, the same lock, the same writes and the same commits, with
none of the client's own work (no drafts to build, screen, check, encode or checksum). What
that takes is what PostgreSQL (and psycopg sending it) needs for these publications under one
tenant's lock, whatever the client.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

Recorded = list[tuple[tuple[str, ...], list[tuple[str, str, Any]]]]


@contextmanager
def recording() -> Iterator[Recorded]:
    """Within the block, each publication sent whole appends ``(the read's queries, the
    locked statements as (method, sql, parameters))``."""
    from active_memory.store.postgres import at_once
    from active_memory.store.postgres.session import PgSession

    recorded: Recorded = []
    real_read, real_execute, real_many = (
        at_once.read_all_once, PgSession.execute, PgSession.executemany
    )  # fmt: skip

    def read(pool: Any, schema: str, where: str, queries: Any) -> Any:
        recorded.append((tuple(queries), []))
        return real_read(pool, schema, where, queries)

    def execute(self: PgSession, query: str, parameters: Any = None, /) -> Any:
        if recorded:
            recorded[-1][1].append(("execute", query, parameters))
        return real_execute(self, query, parameters)

    def executemany(self: PgSession, query: str, parameters: Any, /) -> Any:
        rows = list(parameters)
        if recorded:
            recorded[-1][1].append(("executemany", query, rows))
        return real_many(self, query, rows)

    at_once.read_all_once = read  # type: ignore[assignment]
    PgSession.execute = execute  # type: ignore[method-assign]
    PgSession.executemany = executemany  # type: ignore[method-assign]
    try:
        yield recorded
    finally:
        at_once.read_all_once = real_read
        PgSession.execute = real_execute  # type: ignore[method-assign]
        PgSession.executemany = real_many  # type: ignore[method-assign]


def save(recorded: Recorded, path: Path) -> None:
    if any(not statements for _, statements in recorded):
        raise SystemExit("a recorded publication was not sent whole: no floor to replay")
    path.write_bytes(pickle.dumps(recorded))


def replay(url: str, tenant: str, path: Path, ready: Any) -> None:
    """Send the recording at ``path`` to ``tenant``, one publication after another, once
    ``ready()`` returns (the race's start)."""
    from active_memory.store.postgres.schema import tenant_schema
    from active_memory.store.postgres.session import open_pool, read_all_once, writing_at_once

    recorded: Recorded = pickle.loads(path.read_bytes())  # written by this benchmark
    schema = tenant_schema(tenant)
    pool = open_pool(url, max_size=1)
    try:
        ready()
        for queries, statements in recorded:
            read_all_once(pool, schema, "replaying", queries)
            with writing_at_once(pool, schema, "replaying", lock_timeout_ms=60_000) as session:
                for method, sql, parameters in statements:
                    getattr(session, method)(sql, parameters)
    finally:
        pool.close()
