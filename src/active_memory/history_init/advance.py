"""One call of ``memory init``: take the session one step as far as it can go, then answer.

First call: inventory, then export the discovery tasks. Every call after: import the responses
written since, and when a phase is complete export the next (maintenance once every discovery
is in; publication once every maintenance task is in). A lesson change in the store since
maintenance was exported keeps the staged findings and exports fresh maintenance instead; so
does a revision conflict at publication. Each step is saved before the next starts.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from active_memory.errors import RevisionConflict
from active_memory.history_init.identity import Probes
from active_memory.history_init.inventory import candidates, take_inventory
from active_memory.history_init.publication import INTENT_FILE, cleanup, publish, recover
from active_memory.history_init.records import review_config, task_record
from active_memory.history_init.responses import import_response
from active_memory.history_init.session_dir import (
    clear_interrupted_start,
    open_session_dir,
    session_lock,
)
from active_memory.history_init.state import (
    InitRefused,
    SessionState,
    TaskEntry,
    load_state,
    save_state,
)
from active_memory.history_init.tasks import TASK_FILE, discovery_tasks, maintenance_tasks
from active_memory.postmortem.preparation import snapshot_request
from active_memory.store.sqlite import SqliteStore

__all__ = ["Answer", "InitOptions", "advance", "parse_ignore"]


def parse_ignore(values: Sequence[str] | None) -> tuple[str, ...] | None:
    """Comma-, space-separated or repeated values, exact; None when the flag was not given."""
    if not values:
        return None
    found: list[str] = []
    for value in values:
        found += [part for chunk in value.split(",") for part in chunk.split() if part]
    return tuple(sorted(set(found)))


@dataclass(frozen=True, slots=True)
class InitOptions:
    directory: Path
    store: Path
    ignore_repos: tuple[str, ...] | None = None
    ignore_graphs: tuple[str, ...] | None = None
    roots: Mapping[str, Path] | None = None
    saved_runs: Path | None = None


@dataclass(frozen=True, slots=True)
class Answer:
    """What a call reports: the phase, the next action and what is behind them."""

    directory: Path
    state: SessionState
    candidates: int
    refused: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def open_tasks(self) -> tuple[TaskEntry, ...]:
        return tuple(task for task in self.state.tasks if task.status == "open")

    @property
    def next_action(self) -> str:
        if self.state.phase == "complete":
            return "none"
        return "answer_tasks" if self.open_tasks else "call_again"

    def to_json(self) -> dict[str, Any]:
        state = self.state
        done = [task for task in state.tasks if task.status == "done"]
        return {
            "session": str(self.directory),
            "phase": state.phase,
            "next_action": self.next_action,
            "instructions": instructions(self),
            "ignore_repos": list(state.ignore_repos),
            "ignore_graphs": list(state.ignore_graphs),
            "inventory": {
                "candidates": self.candidates,
                "selected": len(state.runs),
                "excluded": len(state.exclusions),
            },
            "runs": [run.model_dump(mode="json", exclude={"record_dir"}) for run in state.runs],
            "exclusions": [item.model_dump(mode="json") for item in state.exclusions],
            "repositories": [
                {"repository": r.repository, "checkout": r.checkout, "aliases": list(r.aliases)}
                for r in state.repositories
            ],
            "tasks": {
                "done": len(done),
                "open": len(self.open_tasks),
                "items": [
                    {
                        "task": t.id,
                        "kind": t.kind,
                        "specialist": t.specialist,
                        "task_file": str(Path(t.folder) / TASK_FILE),
                        "response_file": str(Path(t.folder) / "response.json"),
                    }
                    for t in self.open_tasks
                ],
            },
            "refused": list(self.refused),
            # Items of accepted answers admission refused: by stage and code, never by text.
            "rejections": [
                {"task": t.id, **{k: r.get(k) for k in ("index", "stage", "code", "id")}}
                for t in done
                for r in t.rejections
            ],
            "notes": list(self.notes),
            "staged": {
                "staged": sum(f.status == "staged" for f in state.staged),
                "kept": sum(f.status == "kept" for f in state.staged),
                "deferred": sum(f.status == "deferred" for f in state.staged),
                "quarantined": len(state.held),
            },
            "receipt": None if state.receipt is None else state.receipt.model_dump(mode="json"),
        }


def instructions(answer: Answer) -> str:
    if answer.state.phase == "complete":
        return "The session is complete (see its receipt); calling again returns the same receipt."
    if answer.open_tasks:
        return (
            f"Answer each open task: read its task_file and write its response_file, then "
            f"call `active-memory memory init --dir {answer.directory}` again."
        )
    return f"Call `active-memory memory init --dir {answer.directory}` again."


def _check_lists(state: SessionState, options: InitOptions) -> None:
    for flag, given, saved in (
        ("--ignore-repos", options.ignore_repos, state.ignore_repos),
        ("--ignore-graphs", options.ignore_graphs, state.ignore_graphs),
    ):
        if given is not None and given != saved:
            shown = " ".join(saved) or "(none)"
            raise InitRefused(
                f"{flag} differs from the list this session was started with ({shown}); saved "
                "lists apply on resume without repeating them; to change them start a new "
                "session with another --dir",
                bad_input=True,
            )


def _new_state(options: InitOptions, directory: Path, notes: list[str]) -> SessionState:
    found = candidates(options.roots, options.saved_runs)
    repos, graphs = options.ignore_repos or (), options.ignore_graphs or ()
    taken = take_inventory(found, directory, repos, graphs)
    if taken.unmatched:
        notes.append(
            f"{', '.join(taken.unmatched)} matched no run of the inventory (values are exact "
            "and case-sensitive; see each run's aliases); if that was a typo, start a new "
            "session with another --dir"
        )
    return SessionState(
        session_id=secrets.token_hex(8),
        created_ms=int(time.time() * 1000),
        store=os.path.abspath(options.store),
        ignore_repos=repos,
        ignore_graphs=graphs,
        runs=taken.runs,
        exclusions=taken.exclusions,
        repositories=taken.repositories,
    )


def _lessons_changed(state: SessionState, store: SqliteStore) -> bool:
    """Whether the store's lessons in a maintenance task's scope differ from those supplied."""
    for task in state.tasks:
        if task.kind != "maintenance":
            continue
        record = task_record(state, task)
        snapshot = store.snapshot(snapshot_request(record, review_config(record)))
        scope = "graph" if task.specialist.startswith("graph") else "repository"
        visible = {
            (lesson.id, lesson.revision)
            for lesson in snapshot.lessons
            if lesson.scope.kind == scope
        }
        supplied = {
            pair
            for other in state.tasks
            if other.specialist == task.specialist
            for pair in other.supplied
        }
        if not visible <= supplied or any(pair not in visible for pair in task.supplied):
            return True
    return False


async def _maintenance_round(
    state: SessionState, directory: Path, store: SqliteStore
) -> SessionState:
    """Fresh maintenance: staged findings kept (back to undecided), every task re-exported, the
    state saved."""
    round_ = state.maintenance_round + 1
    staged = tuple(f.model_copy(update={"status": "staged"}) for f in state.staged)
    kept = tuple(t for t in state.tasks if t.kind == "discovery")
    state = state.model_copy(
        update={
            "phase": "maintenance",
            "maintenance_round": round_,
            "staged": staged,
            "tasks": kept,
        }
    )
    tasks = await maintenance_tasks(state, directory, store, round_)
    state = state.model_copy(update={"tasks": kept + tasks})
    save_state(directory, state)
    return state


def _apply_staged(state: SessionState, notes: list[str]) -> SessionState:
    """Each staged finding as its maintenance decided. One no maintenance task could decide
    (the newest run of its repository disables that scope) is deferred, never kept, and said."""
    actions = {finding: action for task in state.tasks for finding, action in task.staged_actions}
    staged = tuple(
        f.model_copy(update={"status": "kept" if actions.get(f.id) == "keep" else "deferred"})
        for f in state.staged
    )
    orphans = sum(f.id not in actions for f in state.staged)
    if orphans:
        notes.append(
            f"{orphans} staged finding(s) had no maintenance task (the newest run of the "
            "repository disables that scope) and were deferred, not published"
        )
    return state.model_copy(update={"staged": staged})


async def _step(
    state: SessionState, directory: Path, store: SqliteStore, refused: list[str], notes: list[str]
) -> SessionState:
    if state.phase == "discovery" and not state.tasks and state.runs:
        state = state.model_copy(update={"tasks": await discovery_tasks(state, directory, store)})
        save_state(directory, state)
        return state
    if state.phase == "maintenance" and _lessons_changed(state, store):
        notes.append(
            "the store's lessons changed since maintenance was exported: staged "
            "findings are kept and fresh maintenance tasks were exported"
        )
        return await _maintenance_round(state, directory, store)
    probes = Probes()
    for task in state.tasks:
        current = next(t for t in state.tasks if t.id == task.id)
        imported = import_response(state, current, probes, store)
        if imported.refused is not None:
            refused.append(imported.refused)
        if imported.state is not state:
            state = imported.state
            save_state(directory, state)
        if imported.reexport:
            notes.append(
                "a maintenance task folder could not be trusted: staged findings are kept "
                "and fresh maintenance tasks were exported"
            )
            return await _maintenance_round(state, directory, store)
    if any(task.status == "open" for task in state.tasks):
        return state
    if state.phase == "discovery":
        state = await _maintenance_round(state, directory, store)
        if state.tasks and any(task.status == "open" for task in state.tasks):
            return state
    state = _apply_staged(state, notes).model_copy(update={"phase": "publication"})
    save_state(directory, state)
    try:
        return publish(directory, state, store)
    except RevisionConflict as conflict:
        notes.append(f"{conflict}; staged findings are kept and fresh maintenance was exported")
        return await _maintenance_round(state, directory, store)


def _advance_with_store(
    state: SessionState, directory: Path, refused: list[str], notes: list[str]
) -> SessionState:
    with SqliteStore(state.store) as store:
        if state.phase == "complete":
            if (directory / INTENT_FILE).exists():
                cleanup(directory, state, store)
            return state
        if state.phase == "publication":
            state = recover(directory, state, store) or state
        if state.phase != "complete":
            state = asyncio.run(_step(state, directory, store, refused, notes))
        return state


def _describe(error: OSError | ValueError) -> str:
    if isinstance(error, OSError):
        where = f" ({error.filename})" if error.filename else ""
        return f"{error.strerror or type(error).__name__}{where}"
    return f"{type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"


def advance(options: InitOptions) -> Answer:
    """Take the session at ``options.directory`` as far as it can go now."""
    directory, existing = open_session_dir(options.directory)
    with session_lock(directory):
        state = load_state(directory) if existing else None
        refused: list[str] = []
        notes: list[str] = []
        if state is None:
            clear_interrupted_start(directory)
            state = _new_state(options, directory, notes)
            save_state(directory, state)
        else:
            _check_lists(state, options)
            if os.path.abspath(options.store) != state.store:
                raise InitRefused(
                    f"this session publishes to the store {state.store!r}; pass "
                    "that --store, or start a new session",
                    bad_input=True,
                )
        try:
            try:
                state = _advance_with_store(state, directory, refused, notes)
            except (OSError, ValueError) as error:
                # A session file this call could not read or write (JSON and pydantic errors
                # are ValueErrors): one refusal, never a traceback. Every checkpoint before it
                # is kept, so calling again resumes; a file that keeps failing is damaged.
                raise InitRefused(
                    f"the session could not advance: {_describe(error)}; call again, and if "
                    "the same error returns, start a new session with another --dir"
                ) from None
        except InitRefused as refusal:
            refusal.phase = (load_state(directory) or state).phase
            raise
        return Answer(
            directory, state, len(state.runs) + len(state.exclusions), tuple(refused), tuple(notes)
        )
