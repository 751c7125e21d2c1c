"""Recall straight from the lesson store, for a helper that found no broker.

A plain harness user without ``active-memory serve`` still gets recall: the helper opens the
store read-only, indexes the workspace's repository lessons and answers. It is slower than a
resident broker (the index is built per call) and exposures are kept in a small private file
per conversation beside the store, so a card is still delivered once per conversation. A call
that names no conversation (no session id nor transcript) is answered untracked: nothing is
remembered for it.

Those files are pruned opportunistically: at most once a day, when a delivery is recorded,
files not written for :data:`EXPOSURE_MAX_AGE_S` (7 days) are removed, looking at no more than
:data:`PRUNE_LIMIT` of them.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from active_memory.hooks.dispatch import HARNESSES, answer_hook
from active_memory.hooks.standalone import private_dir
from active_memory.recall.index import RecallIndex
from active_memory.recall.recall_session import RecallSession
from active_memory.recall.signals import WorkspaceRoot
from active_memory.repository import repository_key
from active_memory.store.backend import RunIdentity, SnapshotRequest
from active_memory.store.sqlite import SqliteStore

__all__ = [
    "EXPOSURE_MAX_AGE_S",
    "PRUNE_EVERY_S",
    "PRUNE_LIMIT",
    "answer_from_store",
    "exposure_file",
    "prune_exposures",
]

EXPOSURE_MAX_AGE_S = 7 * 24 * 3600
PRUNE_EVERY_S = 24 * 3600
PRUNE_LIMIT = 4096
_PRUNED_MARKER = ".pruned"


def exposure_file(store: Path, workspace: str, conversation: str) -> Path:
    """Where exposures of one conversation in one workspace are kept."""
    digest = hashlib.sha256(f"{os.path.realpath(workspace)}\0{conversation}".encode()).hexdigest()
    return store.parent / "exposure" / f"{digest[:32]}.keys"


def prune_exposures(
    directory: Path,
    *,
    keep: Path | None = None,
    now: float | None = None,
    max_age_s: float = EXPOSURE_MAX_AGE_S,
    every_s: float = PRUNE_EVERY_S,
    limit: int = PRUNE_LIMIT,
) -> int:
    """Remove exposure files older than ``max_age_s`` if no prune ran in ``every_s``.

    Bounded: looks at no more than ``limit`` entries. Returns how many files were removed.
    """
    now = time.time() if now is None else now
    marker = directory / _PRUNED_MARKER
    try:
        if now - marker.stat().st_mtime < every_s:
            return 0
    except FileNotFoundError:
        pass
    except OSError:
        return 0
    removed = 0
    try:
        with os.scandir(directory) as entries:
            for count, entry in enumerate(entries):
                if count >= limit:
                    break
                if not entry.name.endswith(".keys") or entry.path == str(keep):
                    continue
                try:
                    if now - entry.stat(follow_symlinks=False).st_mtime > max_age_s:
                        os.unlink(entry.path)
                        removed += 1
                except OSError:
                    continue  # another process pruned it first, or it is not ours
        marker.touch(mode=0o600)
        os.utime(marker, (now, now))
    except OSError:
        pass
    return removed


def _read_keys(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").split()
    except OSError:
        return []


def answer_from_store(
    harness: str, payload: bytes, *, store: str, workspace: str
) -> tuple[bytes, Callable[[], None]] | None:
    """The encoded answer and a commit callback (record once printed), or None."""
    adapter = HARNESSES.get(harness)
    try:
        document = json.loads(payload)
    except ValueError:
        return None
    parsed = adapter.parse(document) if adapter is not None else None
    if parsed is None:
        return None
    conversation = os.environ.get("ACTIVE_MEMORY_CONVERSATION") or parsed.session_id
    repository = repository_key(workspace)
    identity = RunIdentity("hook-fallback", repository=repository)
    with SqliteStore(store, read_only=True) as backend:
        snapshot = backend.snapshot(SnapshotRequest(identity, repository=True, graph=False))
    session = RecallSession(
        RecallIndex(snapshot.lessons, repository=repository), WorkspaceRoot.at(workspace)
    )
    ledger_path = None
    if conversation:
        ledger_path = exposure_file(Path(store), workspace, conversation)
        session.ledger.mark_delivered(conversation, _read_keys(ledger_path))
    answer = answer_hook(
        session,
        harness,
        document,
        node_id=os.environ.get("ACTIVE_MEMORY_NODE"),
        conversation_id=conversation,
        execution_id=os.environ.get("ACTIVE_MEMORY_EXECUTION"),
        workspace_only=True,
    )

    def commit() -> None:
        recall = answer.recall
        if recall is None or not recall.claim.lessons:
            return
        answer.commit()
        if ledger_path is None:
            return  # untracked: nothing to remember
        private_dir(ledger_path.parent)
        prune_exposures(ledger_path.parent, keep=ledger_path)
        lines = "".join(f"{lesson.key}\n" for lesson in recall.claim.lessons)
        descriptor = os.open(ledger_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(descriptor, "a", encoding="utf-8") as handle:
            handle.write(lines)

    return answer.body, commit
