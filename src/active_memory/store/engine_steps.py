"""The steps the SQLite and the PostgreSQL store compose the same way, each inside a transaction
the caller opened (``EngineStore`` in ``store/engine.py`` opens them): a snapshot's SELECT, a
checked revert, a purge, an import, and the access scope's confinement of a listing and an
import (``store/access.py``).
"""

from __future__ import annotations

from collections.abc import Iterable

from active_memory.errors import ImportConflict, RevisionConflict, RevisionMismatch, ScopeRefused
from active_memory.store import admin
from active_memory.store.access import AccessScope, reachable_ids
from active_memory.store.backend import PublicationReceipt, SnapshotRequest
from active_memory.store.codec import LIVE_COLUMNS
from active_memory.store.results import ImportReport, PurgeReceipt, StoreLimits, Tombstone
from active_memory.store.sql import SqlConnection
from active_memory.store.transfer import ImportEntry, plan_import
from active_memory.store.writes import Change, apply_changes, read_generation, read_states

__all__ = [
    "import_entries",
    "purge_marked",
    "refuse_import_outside",
    "revert_checked",
    "select_snapshot",
    "tombstones_within",
]


def select_snapshot(
    conn: SqlConnection, request: SnapshotRequest
) -> tuple[int, list[tuple[object, ...]]]:
    """The generation and the live ``LIVE_COLUMNS, checksum`` rows in ``request``'s scope,
    sorted by id, read in the caller's read transaction (not yet verified)."""
    identity = request.identity
    columns = f"{LIVE_COLUMNS}, checksum"
    generation = read_generation(conn)
    rows: list[tuple[object, ...]] = []
    if request.repository and identity.repository is not None:
        rows += conn.execute(
            f"SELECT {columns} FROM records "
            "WHERE kind = 'repository' AND deleted = 0 AND repository = ?",
            (identity.repository,),
        ).fetchall()
    if request.graph and identity.graph_hash is not None:
        rows += conn.execute(
            f"SELECT {columns} FROM records "
            "WHERE kind = 'graph' AND deleted = 0 AND graph_hash = ? "
            "AND (repository IS NULL OR repository = ?)",
            (identity.graph_hash, identity.repository),
        ).fetchall()
    rows.sort(key=lambda row: str(row[0]))
    return generation, rows


def revert_checked(
    conn: SqlConnection,
    change: Change,
    expected_revision: int | None,
    *,
    run_id: str,
    limits: StoreLimits,
) -> PublicationReceipt:
    """Write ``change`` (from ``admin.plan_revert``) in the caller's write transaction;
    RevisionConflict when ``expected_revision`` is given and is not the current revision."""
    current = change.revision - 1
    if expected_revision is not None and current != expected_revision:
        raise RevisionConflict([RevisionMismatch(change.id, expected_revision, current)])
    generation = apply_changes(conn, [change], run_id=run_id, limits=limits)
    return PublicationReceipt(generation, {change.id: change.revision})


def purge_marked(
    conn: SqlConnection, lesson_id: str, *, run_id: str, limits: StoreLimits
) -> PurgeReceipt:
    """Erase the past contents of retired ``lesson_id`` and write its purge marker (none when
    an earlier purge left nothing to erase), in the caller's write transaction. ``scrubbed``
    is False: only the engine can say whether the freed bytes left its files."""
    marker, erased = admin.plan_purge(conn, lesson_id)
    if marker is None:
        revision = read_states(conn, [lesson_id])[lesson_id].revision
        generation = read_generation(conn)
    else:
        revision = marker.revision
        generation = apply_changes(conn, [marker], run_id=run_id, limits=limits)
    return PurgeReceipt(
        id=lesson_id,
        revision=revision,
        generation=generation,
        erased_revisions=erased,
        scrubbed=False,
    )


def import_entries(
    conn: SqlConnection,
    entries: tuple[ImportEntry, ...],
    *,
    replace: bool,
    run_id: str,
    limits: StoreLimits,
) -> ImportReport:
    """Import parsed lines all or nothing in the caller's write transaction (semantics in
    ``store/transfer.py``); ImportConflict listing every colliding id."""
    plan = plan_import(conn, entries, replace=replace)
    if plan.conflicts:
        raise ImportConflict(plan.conflicts)
    if plan.changes:
        generation = apply_changes(conn, plan.changes, run_id=run_id, limits=limits)
    else:
        generation = read_generation(conn)
    return ImportReport(
        generation=generation,
        created=tuple(plan.created),
        replaced=tuple(plan.replaced),
        retired=tuple(plan.retired),
        unchanged=tuple(plan.unchanged),
    )


def tombstones_within(conn: SqlConnection, within: AccessScope | None) -> tuple[Tombstone, ...]:
    """The tombstones sorted by id; with ``within``, those whose last live scope it reaches."""
    tombstones = admin.list_tombstones(conn)
    if within is None:
        return tombstones
    reached = reachable_ids(conn, [t.id for t in tombstones], within)
    return tuple(t for t in tombstones if t.id in reached)


def refuse_import_outside(entries: Iterable[ImportEntry], within: AccessScope) -> None:
    """ScopeRefused for the first parsed line whose draft lies outside ``within``, or that is
    a tombstone (it carries no scope to check)."""
    for entry in entries:
        if entry.draft is None:
            raise ScopeRefused(
                f"the tombstone of lesson {entry.id!r} (line {entry.line}); import "
                "tombstones with the database's own URL",
                within.describe(),
            )
        if not within.allows_draft(entry.draft):
            raise ScopeRefused(f"lesson {entry.id!r} (line {entry.line})", within.describe())
