"""The session's saved state: one private JSON file, replaced atomically and durably.

Everything a later call needs is here (the inventory, the ignore lists, the tasks with their
digests and source basis, staged findings, the receipt), so a call may start from any folder
and any crash leaves either the previous state or the next one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from active_memory.bounded_input import read_json
from active_memory.errors import ActiveMemoryError, InputRefused
from active_memory.private_files import write_private_text

__all__ = [
    "STATE_FILE",
    "Basis",
    "Exclusion",
    "HeldFinding",
    "InitRefused",
    "Phase",
    "Receipt",
    "RepositoryEntry",
    "RunEntry",
    "SessionState",
    "StagedFinding",
    "TaskEntry",
    "load_state",
    "save_state",
]

STATE_FILE = "state.json"
FORMAT = "active-memory-init/1"
_MAX_STATE_BYTES = 64 * 1024 * 1024

Phase = Literal["discovery", "maintenance", "publication", "complete"]
TaskStatus = Literal["open", "done", "stale"]


class InitRefused(ActiveMemoryError):
    """A call that cannot advance the session; the message says what to do. ``bad_input`` is
    exit 2 (the caller's arguments or session), otherwise exit 1."""

    def __init__(self, message: str, *, bad_input: bool = False) -> None:
        self.bad_input = bad_input
        self.phase: str | None = None  # the session's phase when the refusal came from it
        super().__init__(message)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Basis(_Frozen):
    """The source a task was exported against: None commit means the basis is unknown."""

    commit: str | None
    fingerprint: str | None
    repository: str


class RunEntry(_Frozen):
    key: str
    source: str
    harness: str
    run_id: str
    record_dir: str
    ended_ms: int
    workspace: str
    checkout: str
    repository: str
    aliases: tuple[str, ...]
    graph_name: str
    graph_hash: str


class Exclusion(_Frozen):
    source: str
    run_id: str | None
    code: str
    reason: str
    aliases: tuple[str, ...] = ()


class RepositoryEntry(_Frozen):
    repository: str
    checkout: str
    newest_run: str
    aliases: tuple[str, ...]
    head: str | None
    fingerprint: str


class TaskEntry(_Frozen):
    id: str
    kind: Literal["discovery", "maintenance"]
    specialist: str
    run: str
    repository: str
    graph_hash: str
    folder: str
    digest: str
    basis: Basis
    round: int = 0
    supplied: tuple[tuple[str, int], ...] = ()
    staged: tuple[str, ...] = ()
    status: TaskStatus = "open"
    # Maintenance results once imported: mutations (as JSON) and staged decisions.
    mutations: tuple[dict[str, Any], ...] = ()
    staged_actions: tuple[tuple[str, str], ...] = ()
    rejections: tuple[dict[str, Any], ...] = ()
    quarantined: int = 0


class StagedFinding(_Frozen):
    id: str
    task: str
    specialist: str
    repository: str
    graph_hash: str
    draft: dict[str, Any]
    status: Literal["staged", "kept", "deferred"] = "staged"


class HeldFinding(_Frozen):
    """A discovery admission quarantined (weak signals only): never published; held in the
    store's quarantine for ``lessons review`` by the session's publication, as a postmortem
    holds it."""

    id: str
    task: str
    run_id: str
    specialist: str
    signals: tuple[str, ...]
    draft: dict[str, Any]


class Receipt(_Frozen):
    session: str
    generation: int
    revisions: dict[str, int]
    retired: tuple[str, ...]
    created: tuple[str, ...]
    deferred: tuple[str, ...]
    quarantined: tuple[str, ...] = ()


class SessionState(_Frozen):
    format: Literal["active-memory-init/1"] = "active-memory-init/1"
    session_id: str
    created_ms: int
    store: str
    ignore_repos: tuple[str, ...]
    ignore_graphs: tuple[str, ...]
    phase: Phase = "discovery"
    runs: tuple[RunEntry, ...] = ()
    exclusions: tuple[Exclusion, ...] = ()
    repositories: tuple[RepositoryEntry, ...] = ()
    tasks: tuple[TaskEntry, ...] = ()
    staged: tuple[StagedFinding, ...] = ()
    held: tuple[HeldFinding, ...] = ()
    maintenance_round: int = 0
    receipt: Receipt | None = None

    def run(self, key: str) -> RunEntry:
        return next(run for run in self.runs if run.key == key)

    def repository(self, key: str) -> RepositoryEntry:
        return next(repo for repo in self.repositories if repo.repository == key)

    def replace_task(self, task: TaskEntry) -> SessionState:
        tasks = tuple(task if old.id == task.id else old for old in self.tasks)
        return self.model_copy(update={"tasks": tasks})


def load_state(directory: Path) -> SessionState | None:
    path = directory / STATE_FILE
    if not os.path.lexists(path):
        return None
    try:
        data = read_json(path, what="memory init session state", max_bytes=_MAX_STATE_BYTES)
        return SessionState.model_validate(data)
    except (InputRefused, ValidationError) as error:
        raise InitRefused(
            f"the session state {str(path)!r} is unreadable ({str(error).splitlines()[0]}); "
            "start a new session with another --dir",
            bad_input=True,
        ) from None


def save_state(directory: Path, state: SessionState) -> None:
    """Atomic replace, the file and the folder fsynced: a checkpoint survives a crash."""
    write_private_text(directory / STATE_FILE, state.model_dump_json(indent=1) + "\n", durable=True)
