"""What one credential may touch inside its tenant, checked by the store itself.

A hosted backend serves many repositories of one tenant from one schema. The service derives an
:class:`AccessScope` from the request's credential (never from the request body) and hands it to
the store, which confines every operation to it:

* a snapshot is taken for the credential's repository (a run naming another is refused);
* a draft may only be written into the credential's repository, or as a graph lesson
  unqualified or qualified by that repository (and of the credential's graph, when it has one);
* a stored lesson may only be changed, read back (history), reverted or purged when the scope
  it last had while live is within the credential's;
* a lesson's scope can change from one revision to the next (repository S's lesson made
  tenant-wide), so history, revert and purge also check its past revisions: history and purge
  are refused whole when any revision with content lies outside the scope (the stricter choice:
  a partial history would hide that the lesson was once another repository's, and purge would
  erase that repository's text), and revert is refused when the revision it would republish
  lies outside. The PostgreSQL schema keeps that scope in
  ``scope_repository`` and ``scope_graph_hash`` through retirement and purge (a tombstone keeps
  no content); a tombstone that was never live in this store (imported as one) has no known
  scope and is refused to every scoped credential.

The checks on stored rows run inside the write transaction, after the writers' lock, so a row
cannot move out of scope between the check and the write.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import groupby
from typing import Any

from active_memory.errors import ScopeRefused
from active_memory.models.lessons import GraphScope, LessonDraft, Scope
from active_memory.store.backend import RunIdentity, SnapshotRequest
from active_memory.store.results import HistoryEntry
from active_memory.store.sql import SqlConnection
from active_memory.store.writes import STATE_COLUMNS, RowState, rows_by_id, states_of_rows

__all__ = [
    "SCOPED_STATE_COLUMNS",
    "AccessScope",
    "reachable_ids",
    "reached_rows",
    "refuse_out_of_scope",
    "refuse_revisions_out_of_scope",
    "states_of",
    "states_of_scoped_rows",
    "states_within",
    "whole_histories_within",
]


@dataclass(frozen=True, slots=True)
class AccessScope:
    """A credential's reach: one repository of its tenant and, optionally, one graph."""

    tenant: str
    repository: str
    graph_hash: str | None = None

    def describe(self) -> str:
        graph = f", graph {self.graph_hash!r}" if self.graph_hash else ""
        return f"tenant {self.tenant!r}, repository {self.repository!r}{graph}"

    def allows(self, kind: str, repository: str | None, graph_hash: str | None) -> bool:
        if kind == "repository":
            return repository == self.repository
        if repository not in (None, self.repository):
            return False
        return self.graph_hash is None or graph_hash == self.graph_hash

    def allows_scope(self, scope: Scope) -> bool:
        graph_hash = scope.graph_hash if isinstance(scope, GraphScope) else None
        return self.allows(scope.kind, scope.repository, graph_hash)

    def allows_draft(self, draft: LessonDraft) -> bool:
        return self.allows_scope(draft.scope)

    def confine(self, request: SnapshotRequest) -> SnapshotRequest:
        """The request with this scope's repository; ScopeRefused when the run names another
        repository or a graph this scope does not reach."""
        identity = request.identity
        if identity.repository not in (None, self.repository):
            raise ScopeRefused(f"repository {identity.repository!r}", self.describe())
        graph = identity.graph_hash
        if request.graph and graph is not None and self.graph_hash not in (None, graph):
            raise ScopeRefused(f"graph {graph!r}", self.describe())
        confined = RunIdentity(identity.run_id, self.repository, graph)
        return replace(request, identity=confined)


def _stored_scopes(
    conn: SqlConnection, ids: list[str]
) -> dict[str, tuple[str, str | None, str | None] | None]:
    """Each id that has a row: the (kind, repository, graph hash) it last had while live, None
    when it never had content here (a tombstone imported as one)."""
    scopes: dict[str, tuple[str, str | None, str | None] | None] = {}
    columns = "id, kind, scoped, scope_repository, scope_graph_hash"
    for lesson_id, kind, scoped, repository, graph_hash in rows_by_id(conn, columns, ids):
        scopes[str(lesson_id)] = (str(kind), repository, graph_hash) if scoped else None
    return scopes


def reached_rows(access: AccessScope) -> tuple[str, list[object]]:
    """A condition on the ``records`` table (and its parameters) true for the rows whose last
    live scope ``access`` reaches, as :meth:`AccessScope.allows` says: a query that pages
    confines itself before its limit, so neither a page nor where the next one starts can name
    (or count) a lesson outside the scope."""
    graph = "" if access.graph_hash is None else " AND scope_graph_hash = ?"
    condition = (
        "scoped = 1 AND ((kind = 'repository' AND scope_repository = ?) OR "
        f"(kind <> 'repository' AND (scope_repository IS NULL OR scope_repository = ?){graph}))"
    )
    params: list[object] = [access.repository, access.repository]
    if access.graph_hash is not None:
        params.append(access.graph_hash)
    return condition, params


def reachable_ids(conn: SqlConnection, ids: Iterable[str], access: AccessScope) -> set[str]:
    """The stored ids among ``ids`` whose last live scope ``access`` reaches."""
    scopes = _stored_scopes(conn, list(dict.fromkeys(ids)))
    return {
        lesson_id
        for lesson_id, stored in scopes.items()
        if stored is not None and access.allows(*stored)
    }


def refuse_out_of_scope(conn: SqlConnection, ids: Iterable[str], access: AccessScope) -> None:
    """ScopeRefused for the first stored id ``access`` does not reach; ids without a row pass
    (they are new)."""
    wanted = list(dict.fromkeys(ids))
    scopes = _stored_scopes(conn, wanted)
    for lesson_id in wanted:
        if lesson_id not in scopes:
            continue
        stored = scopes[lesson_id]
        if stored is None or not access.allows(*stored):
            raise ScopeRefused(f"lesson {lesson_id!r}", access.describe())


# What ``states_within`` reads of a row: ``STATE_COLUMNS``, then the stored scope.
SCOPED_STATE_COLUMNS = f"{STATE_COLUMNS}, scoped, scope_repository, scope_graph_hash"


def states_within(
    conn: SqlConnection, ids: Iterable[str], access: AccessScope
) -> dict[str, RowState]:
    """:func:`refuse_out_of_scope`, and what ``writes.read_states`` reads of the same rows, in
    one SELECT under the writers' lock where the two took two (a checked publication through
    the service needs both)."""
    wanted = list(dict.fromkeys(ids))
    return states_of_scoped_rows(rows_by_id(conn, SCOPED_STATE_COLUMNS, wanted), wanted, access)


def states_of(
    rows: Iterable[Sequence[Any]], wanted: Iterable[str], access: AccessScope | None
) -> dict[str, RowState]:
    """The states of rows read as ``STATE_COLUMNS`` (``writes.states_of_rows``), or, with an
    ``access`` to confine them to, as ``SCOPED_STATE_COLUMNS`` (:func:`states_of_scoped_rows`);
    columns after those are left alone."""
    if access is None:
        return states_of_rows(rows)
    return states_of_scoped_rows(rows, wanted, access)


def states_of_scoped_rows(
    rows: Iterable[Sequence[Any]], wanted: Iterable[str], access: AccessScope
) -> dict[str, RowState]:
    """:func:`states_within` over rows already read as ``SCOPED_STATE_COLUMNS`` (PostgreSQL
    reads them with its writers' lock); ``wanted``: every id the batch names."""
    states: dict[str, RowState] = {}
    reached: dict[str, bool] = {}
    for lesson_id, *state, scoped, scope_repository, scope_graph_hash in rows:
        found = states[lesson_id] = RowState.from_columns(*state)
        reached[lesson_id] = bool(scoped) and access.allows(
            found.kind, scope_repository, scope_graph_hash
        )
    for lesson_id in wanted:  # ids without a row pass: they are new
        if not reached.get(lesson_id, True):
            raise ScopeRefused(f"lesson {lesson_id!r}", access.describe())
    return states


def refuse_revisions_out_of_scope(
    lesson_id: str, entries: Iterable[HistoryEntry], access: AccessScope
) -> None:
    """ScopeRefused when any revision of ``lesson_id`` with content is outside ``access``."""
    for entry in entries:
        if entry.draft is not None and not access.allows_draft(entry.draft):
            raise ScopeRefused(
                f"lesson {lesson_id!r} (its revision {entry.revision})", access.describe()
            )


def whole_histories_within(
    entries: Iterable[HistoryEntry], access: AccessScope
) -> Iterator[HistoryEntry]:
    """The entries (ordered by id, from ids whose stored scope ``access`` reaches) of every
    lesson whose revisions with content all lie within ``access``: the lessons a one-lesson
    history read would not refuse, each kept whole or left out whole."""
    for _, revisions in groupby(entries, key=lambda entry: entry.id):
        lesson = list(revisions)
        if all(e.draft is None or access.allows_draft(e.draft) for e in lesson):
            yield from lesson
