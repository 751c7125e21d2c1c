"""A PostgreSQL publication sent whole: the writers' lock held only while the server writes.

The locked way (:func:`~active_memory.store.postgres.session.writing`) takes the tenant's lock,
reads the batch's rows, and only then lets this client plan the writes: the lock is held
across a round trip and the wait for this process to be scheduled again, which on a busy host
is most of the time other writers spend queued. Here the rows and the counters are read first,
without the lock (one round trip), the batch is checked and planned against them, and
everything else goes out in one pipeline: the start, the lock, the guarded step of the
generation, the writes and the ``COMMIT``. Under the lock the guard compares each row with what
was read (revision, tombstone, kind, checksum and stored scope: every write changes the
revision and the checksum), the counters with the limits, and the time with the publication's
deadline (checked again once the lock is held, as the locked way does); a difference divides by
zero, which rolls the transaction back before anything is written, and the caller publishes the
locked way instead (which refuses a publication past its deadline).

What the read finds is an answer in itself when it refuses the batch: a revision that does not
match, or a stored scope outside the credential's, is reported as of that read, as a
publication checked a moment earlier would have been (revisions only ever move on).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from psycopg_pool import ConnectionPool

from active_memory.limits import LIMITS
from active_memory.models.changes import Publication
from active_memory.store.access import SCOPED_STATE_COLUMNS, AccessScope, states_of
from active_memory.store.backend import PublicationControl, PublicationReceipt
from active_memory.store.checked import changes_against, publication_receipt
from active_memory.store.postgres.session import (
    RowsMoved,
    read_all_once,
    writing_at_once,
)
from active_memory.store.postgres.statement_text import rows_query
from active_memory.store.results import StoreLimits
from active_memory.store.search_text import text_statements
from active_memory.store.writes import (
    META_ROW,
    Capacity,
    Change,
    cannot_cross,
    check_bounds,
    plan_writes,
)

__all__ = ["publish_at_once"]

# What is read of each row, and compared under the lock: the scoped state, then the checksum.
_READ = f"{SCOPED_STATE_COLUMNS}, checksum"

# Under the lock, the next generation, written only when every row the batch names is as read
# (those that were missing still are), no limit can be passed and the publication's deadline,
# if any, has not passed (the seconds it had left when sent, counted from the transaction's
# start, as the server's clock tells); else a division by zero, which aborts the transaction.
# The rows read come as one JSON array (one parameter: binding a column's array each cost this
# client more than the server's parse of the JSON); the counters' bounds as
# ``writes.cannot_cross``.
_GUARDED_GENERATION = """UPDATE meta SET generation = generation + 1 WHERE 1 = 1 / coalesce((
    coalesce(extract(epoch FROM clock_timestamp() - transaction_timestamp()) < ?::float8, true)
    AND generation < ?
    AND live_count + ? <= ? AND record_count + ? <= ? AND content_bytes + ? <= ?
    AND (SELECT count(*) FROM records WHERE id = ANY(?::text[])) = ?
    AND (SELECT count(*) FROM records AS r JOIN jsonb_to_recordset(?::jsonb)
        AS v(id text, revision bigint, deleted integer, kind text, checksum text, scoped integer,
             scope_repository text, scope_graph_hash text)
        ON r.id = v.id AND r.revision = v.revision AND r.deleted = v.deleted
        AND r.kind = v.kind AND r.checksum IS NOT DISTINCT FROM v.checksum
        AND r.scoped = v.scoped
        AND r.scope_repository IS NOT DISTINCT FROM v.scope_repository
        AND r.scope_graph_hash IS NOT DISTINCT FROM v.scope_graph_hash) = ?
), false)::integer RETURNING generation"""
# The names of the read columns (``_READ``), as the guard's JSON gives them.
_READ_NAMES = tuple(name.strip() for name in _READ.split(","))


def publish_at_once(
    pool: ConnectionPool,
    schema: str,
    where: str,
    publication: Publication,
    limits: StoreLimits,
    *,
    within: AccessScope | None = None,
    control: PublicationControl | None = None,
    lock_timeout_ms: int = 5000,
) -> PublicationReceipt | None:
    """Publish ``publication`` (its drafts already screened) sent whole; RevisionConflict or
    ScopeRefused as of the read before the lock; None when it must be published the locked
    way: no mutation, more than a read's worth, a limit within reach, rows that changed
    between the read and the lock, or a ``control`` that refuses it (the locked way then says
    so, before anything is compared, as every engine does)."""
    if control is not None and control.refusal() is not None:
        return None
    ids = [mutation.id for mutation in publication.mutations]
    rows_read = rows_query(_READ, ids)
    if rows_read is None:
        return None
    (meta,), rows = read_all_once(pool, schema, f"reading {where}", (META_ROW, rows_read))
    generation, *counters = (int(value) for value in meta)
    states = states_of((row[:-1] for row in rows), ids, within)  # less the checksum
    changes = changes_against(publication, states)
    check_bounds(changes, generation + 1)
    planned = plan_writes(changes, limits)
    if not cannot_cross(Capacity(*counters), changes, planned.grown, limits):
        return None
    guard = _guard(ids, rows, changes, planned.grown, limits)
    try:
        with writing_at_once(
            pool, schema, f"writing {where}", control, lock_timeout_ms=lock_timeout_ms
        ) as session:
            deadline = None if control is None else control.deadline
            left = None if deadline is None else deadline - time.monotonic()
            sent = session.execute(_GUARDED_GENERATION, (left, *guard))
            for sql, parameter_rows in planned.writes:
                session.executemany(sql, parameter_rows)
            statements = planned.history_statements(publication.run_id, None)
            for sql, parameters in statements + text_statements(session, planned.texts):
                session.execute(sql, parameters)
    except RowsMoved:
        return None
    (written,) = sent.fetchone()
    return publication_receipt(int(written), changes)


def _guard(
    ids: Sequence[str],
    rows: Sequence[Sequence[Any]],
    changes: Sequence[Change],
    grown: int,
    limits: StoreLimits,
) -> tuple[object, ...]:
    count = len(changes)
    read = json.dumps([dict(zip(_READ_NAMES, row, strict=True)) for row in rows])
    return (
        LIMITS.stored_integer_max,
        count, limits.max_live, count, limits.max_rows, grown, limits.max_total_bytes,
        list(dict.fromkeys(ids)), len(rows),
        read, len(rows),
    )  # fmt: skip
