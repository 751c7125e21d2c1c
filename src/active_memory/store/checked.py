"""A checked publication's plan, shared by every engine: expected revisions against found ones.

Runs inside the engine's write transaction, after the lock that serialises writers is held, so
nothing can commit between the comparison and the write. The screen of its drafts
(:func:`refuse_flagged`) runs before that transaction: it needs no lock, and a batch it
refuses should not keep other writers waiting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from active_memory.errors import RevisionConflict, RevisionMismatch, ScreenRefused
from active_memory.models.changes import Publication
from active_memory.store.backend import PublicationControl, PublicationReceipt
from active_memory.store.results import StoreLimits
from active_memory.store.sql import SqlConnection
from active_memory.store.writes import (
    Change,
    RowState,
    apply_changes,
    read_generation,
    read_states,
)

__all__ = [
    "changes_against",
    "checked_changes",
    "publication_receipt",
    "publish_checked",
    "refuse_flagged",
]


def refuse_flagged(publication: Publication, control: PublicationControl | None = None) -> None:
    """ScreenRefused naming every draft of ``publication`` that trips a screening signal, strong
    or weak (a batch that reaches a store directly has no quarantine to wait in); nothing when
    ``control.screened_by`` names the screen the drafts already passed."""
    if control is not None and control.screened_by is not None:
        return
    # The screens load here, on a write: every store command (and a read costs nothing of them)
    # imports this module, and the detectors' patterns are most of a CLI command's start-up.
    from active_memory.screening.cards import screen_publication

    flagged = screen_publication(publication.mutations)
    if flagged:
        raise ScreenRefused(flagged)


def checked_changes(
    conn: SqlConnection, publication: Publication, states: Mapping[str, RowState] | None = None
) -> list[Change]:
    """The row writes of ``publication``; RevisionConflict naming every id that does not match
    (a tombstoned id always conflicts). ``states``: the rows' states, read by the caller in
    this transaction (``access.states_within``), else read here."""
    if states is None:
        states = read_states(conn, (m.id for m in publication.mutations))
    return changes_against(publication, states)


def changes_against(publication: Publication, states: Mapping[str, RowState]) -> list[Change]:
    """The row writes of ``publication`` over rows in ``states``; RevisionConflict naming every
    id that does not match them (a tombstoned id always conflicts)."""
    mismatches: list[RevisionMismatch] = []
    changes: list[Change] = []
    for mutation in publication.mutations:
        state = states.get(mutation.id)
        found = 0 if state is None else state.revision
        tombstoned = state is not None and state.deleted
        if tombstoned or found != mutation.expected_revision:
            mismatches.append(
                RevisionMismatch(mutation.id, mutation.expected_revision, found, tombstoned)
            )
            continue
        if mutation.op == "upsert" and mutation.draft is not None:
            draft = mutation.draft
            changes.append(
                Change(mutation.id, "upsert", found + 1, draft.scope.kind, draft,
                       create=state is None,
                       keeps_scope=state is not None and state.holds_scope_of(draft))
            )  # fmt: skip
        elif state is not None:
            changes.append(Change(mutation.id, "retire", found + 1, state.kind))
    if mismatches:
        raise RevisionConflict(mismatches)
    return changes


def publication_receipt(generation: int, changes: Sequence[Change]) -> PublicationReceipt:
    return PublicationReceipt(
        generation,
        {change.id: change.revision for change in changes},
        tuple(change.id for change in changes if change.op == "retire"),
    )


def publish_checked(
    conn: SqlConnection,
    publication: Publication,
    limits: StoreLimits,
    states: Mapping[str, RowState] | None = None,
    *,
    last: bool = False,
) -> PublicationReceipt:
    """Check and write ``publication`` in the caller's write transaction; an empty one writes
    nothing and reports the current generation. ``states`` as for :func:`checked_changes`;
    ``last`` as for :func:`~active_memory.store.writes.apply_changes`."""
    if not publication.mutations:
        return PublicationReceipt(read_generation(conn), {})
    changes = checked_changes(conn, publication, states)
    generation = apply_changes(conn, changes, run_id=publication.run_id, limits=limits, last=last)
    return publication_receipt(generation, changes)
