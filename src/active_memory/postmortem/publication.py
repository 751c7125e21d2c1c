"""Publication with conflict rounds: every validated change in one checked batch.

Before writing, the gate checks that the host has not cancelled, that the settlement deadline
has not passed and that the checkout still has the fingerprint it had when reviewed. A revision
conflict refreshes the snapshot and re-invokes the maintenance specialists that own the
conflicting ids (validated discoveries are kept; a refused new id is replaced), and stops with
``conflict`` when their visible lessons did not change. A conflict no planned id explains, or
one past :data:`MAX_CONFLICT_ROUNDS`, fails every pending specialist with ``conflict``.
"""

from __future__ import annotations

import asyncio
import time

from active_memory.agents.specialists import SPECS, Validated
from active_memory.errors import ProvenanceError, PublicationFenced, RevisionConflict, StoreError
from active_memory.postmortem.changes import visible_set
from active_memory.postmortem.failures import Failure, one_line, unexpected
from active_memory.postmortem.preparation import in_thread, snapshot_request
from active_memory.postmortem.publication_plan import Plan, dispatch, plan_publication
from active_memory.postmortem.report import LessonChange, SpecialistStatus
from active_memory.postmortem.scheduling import review
from active_memory.postmortem.state import ReviewState
from active_memory.provenance import verify_fingerprint
from active_memory.store.backend import Snapshot

__all__ = ["MAX_CONFLICT_ROUNDS", "publish"]

MAX_CONFLICT_ROUNDS = 3


def _stopped(state: ReviewState) -> SpecialistStatus:
    return "cancelled" if state.cancelled else "timed_out"


async def _checkout_unchanged(state: ReviewState) -> bool:
    checkout = state.record.checkout
    fingerprint = state.prepared.fingerprint if state.prepared is not None else None
    if fingerprint is None or checkout is None:
        return True
    try:
        await asyncio.to_thread(verify_fingerprint, checkout.path, fingerprint)
    except ProvenanceError:
        return False
    return True


async def _gate(state: ReviewState, pending: dict[str, Validated]) -> bool:
    """Whether publication may go ahead: not cancelled, in time, checkout unchanged."""
    if state.cancelled:
        state.control.cancel()
    refusal = state.control.refusal()
    if refusal is not None:
        status = _stopped(state)
        message = f"publication fenced ({refusal}); nothing of it was published"
        state.fail_all(pending, Failure(status, status, message))
        return False
    if not await _checkout_unchanged(state):
        state.checkout_changed = True
        message = (
            "the checkout changed during review (its fingerprint differs); "
            "publication refused, keep it unchanged until the postmortem publishes"
        )
        state.fail_all(pending, Failure("failed", "checkout_changed", message))
        return False
    return True


async def publish(state: ReviewState) -> None:
    """Publish what the specialists validated (a dry run only plans it), round after round
    until it is written, refused or fenced."""
    rounds = 0
    while True:
        pending = state.pending()
        if not pending or not await _gate(state, pending):
            return
        try:
            plan = plan_publication(state.record.run_id, pending, state.ids)
        except Exception as error:
            # The id source is host code; a broken one must not take the host's run down.
            failure = unexpected("internal_error", "assigning lesson ids failed", error)
            state.fail_all(pending, failure)
            return
        if state.options.dry_run:
            state.changes = list(plan.changes)
            return
        try:
            receipt = await dispatch(state.options.backend, plan.publication, state.control)
        except RevisionConflict as conflict:
            rounds += 1
            await _resolve(state, conflict, plan, rounds)
            continue
        except PublicationFenced as error:
            status = _stopped(state)
            state.fail_all(pending, Failure(status, status, one_line(str(error))))
            return
        except StoreError as error:
            state.fail_all(pending, Failure("failed", "store_error", one_line(str(error))))
            return
        except Exception as error:
            # A backend outside the library's error tree (a raw sqlite3 or OS error): whether it
            # wrote is unknown to us, so nothing is reported as published.
            state.fail_all(pending, unexpected("store_error", "publishing failed", error))
            return
        state.changes = [
            LessonChange(
                op=change.op,
                id=change.id,
                specialist=change.specialist,
                expected_revision=change.expected_revision,
                revision=receipt.revisions.get(change.id),
                title=change.title,
            )
            for change in plan.changes
        ]
        state.published.update(pending)
        for name in pending:
            state.note(name, "published")
        return


async def _resolve(state: ReviewState, conflict: RevisionConflict, plan: Plan, rounds: int) -> None:
    """After a conflict: fresh ids for refused new lessons, fresh maintenance for the rest.

    A conflict no planned mutation owns, or one more round than MAX_CONFLICT_ROUNDS, fails every
    pending specialist: retrying the same plan could only conflict again until the deadline,
    hammering the store."""
    owners = sorted({plan.owners[m.id] for m in conflict.mismatches if m.id in plan.owners})
    if not owners or rounds > MAX_CONFLICT_ROUNDS:
        why = (
            f"still conflicting after {MAX_CONFLICT_ROUNDS} retries"
            if owners
            else "the store refused ids this publication does not hold"
        )
        failure = Failure("conflict", "conflict", one_line(f"{conflict} ({why})"))
        state.fail_all(state.pending(), failure)
        return
    maintenance: list[str] = []
    for name in owners:
        if SPECS[name].maintenance:
            maintenance.append(name)
        else:
            for mismatch in conflict.mismatches:
                state.ids.forget(mismatch.id)
    if not maintenance:
        return
    if time.monotonic() >= state.deadline:
        message = "revision conflict and no time left before the deadline to decide again"
        state.fail_all(maintenance, Failure("conflict", "conflict", message))
        return
    request = snapshot_request(state.record, state.options.config)
    backend = state.options.backend
    try:
        snapshot: Snapshot = await in_thread(state.deadline, backend.snapshot, request)
    except Exception as error:
        message = f"revision conflict, and the snapshot could not be refreshed: {error}"
        state.fail_all(maintenance, Failure("conflict", "conflict", one_line(message)))
        return
    again: list[str] = []
    for name in maintenance:
        scope = SPECS[name].scope
        if visible_set(snapshot.lessons, scope) == state.reviewed.get(name):
            # A conflict the visible lessons do not explain (a hidden tombstone, a store that
            # lags): retrying would loop, so stop here.
            message = f"{one_line(str(conflict))} The visible {scope} lessons did not change"
            state.fail(name, Failure("conflict", "conflict", one_line(message)))
        else:
            state.results.pop(name)
            state.meters[name].conflict_retries += 1
            again.append(name)
    if again:
        await review(state, again, snapshot)
