"""The checkout before review: its state, a verifier for citations, its fingerprint, and the
host facts every specialist is told (checked by the host, not read from the evidence)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from active_memory.errors import ProvenanceError
from active_memory.models.runs import RunRecord
from active_memory.postmortem.report import CheckoutStatus
from active_memory.provenance import (
    CheckoutState,
    GitCheckoutVerifier,
    inspect_and_fingerprint,
)

__all__ = ["Inspection", "checkout_status", "host_facts", "inspect"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Inspection:
    """All None when there is no checkout to inspect; only a git work tree has a verifier and a
    fingerprint."""

    state: CheckoutState | None = None
    verifier: GitCheckoutVerifier | None = None
    fingerprint: str | None = None


def inspect(record: RunRecord) -> Inspection:
    """Inspect the record's checkout with git (local objects only); never raises."""
    checkout = record.checkout
    if checkout is None:
        return Inspection()
    try:
        # The fingerprint comes from the inspection's own git commands; a change after it (even
        # a file the verifier then lists) fails verify_fingerprint at publication.
        state, fingerprint = inspect_and_fingerprint(checkout.path)
        if not state.is_git:
            return Inspection(state)
        return Inspection(state, GitCheckoutVerifier.open(checkout.path), fingerprint)
    except ProvenanceError as error:
        # Repository citations then cannot verify; the host facts tell the specialists so.
        _log.info("checkout inspection failed: %s", error)
        return Inspection()


def checkout_status(record: RunRecord, inspected: Inspection) -> CheckoutStatus:
    """What admission can verify against: only a git work tree gives repository lessons a
    verifier."""
    if record.checkout is None:
        return "none"
    if inspected.state is None:
        return "uninspectable"
    return "git" if inspected.verifier is not None else "not_git"


def host_facts(record: RunRecord, state: CheckoutState | None) -> tuple[str, ...]:
    facts = [f"graph hash: {record.graph_hash}"]
    checkout = record.checkout
    if checkout is None or state is None:
        facts.append("checkout: none could be inspected; repository citations cannot verify")
        return tuple(facts)
    facts.append(f"repository key: {checkout.repository}")
    if not state.is_git:
        facts.append(
            "checkout: not a git work tree; adapt and retire of repository lessons "
            "are deferred by the host"
        )
    elif state.source_commit is not None:
        facts.append(f"checkout: commit {state.head}, clean (the inspected commit)")
    else:
        facts.append(
            f"checkout: commit {state.head} with uncommitted changes; adapt and "
            "retire of repository lessons are deferred by the host"
        )
    return tuple(facts)
