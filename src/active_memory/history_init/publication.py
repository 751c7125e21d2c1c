"""Publishing a session: every mutation across repositories in one checked transaction.

Only after complete maintenance coverage, and only after every selected checkout is rechecked
(present, same remote identity, same source fingerprint as its tasks' basis). Crash safety, in
order: the intent file (durable), the commit with its receipt row and the quarantined
discoveries held for review in the same store transaction
(:meth:`~active_memory.store.sqlite.SqliteStore.publish_once`), the durable completion
checkpoint (``state.json`` replaced atomically, fsynced), then the receipt row and the intent
file are removed. A process killed anywhere resumes to exactly one publication: the receipt row
says the commit happened, the checkpoint says the session is complete; a session with neither
publishes (the checked revisions make a repeat impossible to apply twice).

``ACTIVE_MEMORY_INIT_KILL_AT`` (``before_commit``, ``after_commit``, ``after_checkpoint``) makes
the process kill itself with SIGKILL at that point: it exists for the crash-recovery tests,
which must kill a real process at a real point between two durable writes.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from active_memory.history_init.identity import Probes
from active_memory.history_init.responses import check_basis
from active_memory.history_init.state import InitRefused, Receipt, SessionState, save_state
from active_memory.models.changes import Mutation, Publication
from active_memory.models.lessons import LessonDraft
from active_memory.private_files import fsync_directory, write_private_text
from active_memory.store.backend import PublicationReceipt
from active_memory.store.quarantine import QuarantineEntry
from active_memory.store.sqlite import SqliteStore

__all__ = [
    "INTENT_FILE",
    "KILL_VARIABLE",
    "cleanup",
    "finish",
    "publication",
    "publish",
    "recheck",
    "recover",
]

INTENT_FILE = "publication.intent.json"
KILL_VARIABLE = "ACTIVE_MEMORY_INIT_KILL_AT"


def _crash_point(name: str) -> None:
    if os.environ.get(KILL_VARIABLE) == name:
        os.kill(os.getpid(), signal.SIGKILL)


def run_id(state: SessionState) -> str:
    return f"memory-init-{state.session_id}"


def publication(state: SessionState) -> Publication:
    """Maintenance mutations first (task order), then every kept staged finding as new."""
    mutations = [
        Mutation.model_validate(raw)
        for task in state.tasks
        if task.kind == "maintenance"
        for raw in task.mutations
    ]
    for finding in state.staged:
        if finding.status == "kept":
            draft = LessonDraft.model_validate(finding.draft)
            mutations.append(Mutation(op="upsert", id=finding.id, expected_revision=0, draft=draft))
    return Publication(run_id=run_id(state), mutations=tuple(mutations))


def held_entries(state: SessionState) -> tuple[QuarantineEntry, ...]:
    """The quarantined discoveries, as the postmortem holds them for ``lessons review``."""
    return tuple(
        QuarantineEntry(
            id=held.id,
            run_id=held.run_id,
            role=held.specialist,
            signals=held.signals,
            draft=LessonDraft.model_validate(held.draft),
            time="",
        )
        for held in state.held
    )


def recheck(state: SessionState) -> None:
    """Every task's checkout as it was exported, just before publishing; InitRefused if not."""
    probes = Probes()
    for task in state.tasks:
        try:
            check_basis(state, task, probes)
        except InitRefused as refused:
            raise InitRefused(f"publication stopped, nothing was published: {refused}") from None


def _receipt(state: SessionState, stored: PublicationReceipt) -> Receipt:
    created = tuple(f.id for f in state.staged if f.status == "kept")
    deferred = tuple(f.id for f in state.staged if f.status == "deferred")
    return Receipt(
        session=state.session_id,
        generation=stored.generation,
        revisions=dict(stored.revisions),
        retired=tuple(stored.retired),
        created=created,
        deferred=deferred,
        quarantined=tuple(held.id for held in state.held),
    )


def finish(
    directory: Path, state: SessionState, store: SqliteStore, stored: PublicationReceipt
) -> SessionState:
    """Checkpoint the completed session durably, then drop the receipt row and the intent."""
    complete = state.model_copy(update={"phase": "complete", "receipt": _receipt(state, stored)})
    save_state(directory, complete)
    _crash_point("after_checkpoint")
    cleanup(directory, complete, store)
    return complete


def cleanup(directory: Path, state: SessionState, store: SqliteStore) -> None:
    store.drop_init_receipt(state.session_id)
    intent = directory / INTENT_FILE
    if intent.exists():
        intent.unlink()
        fsync_directory(directory)


def publish(directory: Path, state: SessionState, store: SqliteStore) -> SessionState:
    """Publish the session; the store's RevisionConflict when maintenance must decide again."""
    recheck(state)
    batch = publication(state)
    intent = {
        "session": state.session_id,
        "run_id": batch.run_id,
        "ids": [m.id for m in batch.mutations],
        "quarantined": [held.id for held in state.held],
    }
    write_private_text(directory / INTENT_FILE, json.dumps(intent) + "\n", durable=True)
    _crash_point("before_commit")
    stored, _fresh = store.publish_once(batch, state.session_id, held=held_entries(state))
    _crash_point("after_commit")
    return finish(directory, state, store, stored)


def recover(directory: Path, state: SessionState, store: SqliteStore) -> SessionState | None:
    """After an interruption: the completed state when the commit happened, else None."""
    stored = store.init_receipt(state.session_id)
    if stored is None:
        return None
    return finish(directory, state, store, stored)
