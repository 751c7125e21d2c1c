"""Importing a task's response with the postmortem's own admission.

A response is refused as a whole when it is not the task's (another task id, or the digest of
an earlier export: stale), when its answer does not satisfy the contract, or when maintenance
leaves a supplied card or a staged finding undecided; a refused response is moved aside as
``response.refused.json`` and the task stays open. Items of an accepted answer that admission
refuses are recorded by stage and code, never by text.

The cards a maintenance answer decides are the session's own record of what was supplied (the
ids and revisions in ``state.json``, loaded from the store), never the task folder's
``supplied.json``: that folder is the agent's to write, and a card planted there (another
repository's, say) must not be retired by the publication. A ``supplied.json`` that is missing,
unreadable or not what was exported refuses the response and asks for fresh maintenance, so the
session is never stuck on a task folder it cannot trust. The checkout must still be the one the
task was exported against: otherwise the import stops (restore it, or start a new session).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from active_memory.admission.validate import (
    MAX_ANSWER_BYTES,
    AdmissionContext,
    admit_discovery,
    admit_maintenance,
)
from active_memory.bounded_input import read_json
from active_memory.errors import ActiveMemoryError, InputRefused
from active_memory.history_init.identity import Probes
from active_memory.history_init.records import review_config, task_record
from active_memory.history_init.state import (
    HeldFinding,
    InitRefused,
    SessionState,
    StagedFinding,
    TaskEntry,
)
from active_memory.history_init.tasks import RESPONSE_FILE
from active_memory.models.changes import Rejection
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import Lesson
from active_memory.postmortem.inspection import inspect
from active_memory.store.sqlite import SqliteStore

__all__ = ["Imported", "check_basis", "import_response", "supplied_lessons"]

REFUSED_FILE = "response.refused.json"
SUPPLIED_FILE = "supplied.json"
_STAGED_ACTIONS = ("keep", "defer")


@dataclass(frozen=True, slots=True)
class Imported:
    """What one import did: the updated state, or why the response was refused."""

    state: SessionState
    refused: str | None = None
    # The task folder cannot be trusted or read: the caller exports fresh maintenance.
    reexport: bool = False


def task_checkout(state: SessionState, task: TaskEntry) -> str:
    if task.kind == "discovery":
        return state.run(task.run).checkout
    return state.repository(task.repository).checkout


def check_basis(state: SessionState, task: TaskEntry, probes: Probes) -> None:
    """InitRefused when the task's checkout is gone, changed identity or changed source."""
    checkout = task_checkout(state, task)
    probe = probes.probe(checkout)
    where = f"the checkout {checkout!r} of task {task.id!r}"
    if probe.code is not None or probe.root is None:
        raise InitRefused(
            f"{where} cannot be used now ({probe.reason}); restore it, or start "
            "a new session with appropriate exclusions"
        )
    if probe.key != task.basis.repository:
        raise InitRefused(
            f"{where} is now {probe.key!r}, not {task.basis.repository!r}; restore "
            "its remote, or start a new session"
        )
    if probe.fingerprint != task.basis.fingerprint:
        raise InitRefused(
            f"{where} changed since the task was exported (its source fingerprint "
            "differs); restore it, or start a new session"
        )


def supplied_lessons(task: TaskEntry, store: SqliteStore) -> list[Lesson] | str:
    """The cards the session supplied to ``task``, from the store at the recorded revisions;
    a sentence instead when one of them is no longer at its revision."""
    lessons = []
    for lesson_id, revision in task.supplied:
        try:
            lesson = store.get(lesson_id)
        except ActiveMemoryError:
            return f"the supplied card {lesson_id!r} is no longer in the store"
        if lesson.revision != revision:
            return f"the supplied card {lesson_id!r} changed since it was exported"
        lessons.append(lesson)
    return lessons


def _supplied_file_problem(task: TaskEntry, lessons: Sequence[Lesson]) -> str | None:
    """Why the task folder's supplied.json is not the one exported, or None."""
    path = Path(task.folder) / SUPPLIED_FILE
    if not os.path.lexists(path):
        return "its supplied.json is missing"
    if not stat.S_ISREG(os.lstat(path).st_mode):
        return "its supplied.json is not a regular file"
    try:
        data = read_json(
            path, what=f"supplied cards of task {task.id!r}", max_bytes=MAX_ANSWER_BYTES
        )
    except InputRefused as refused:
        return f"its supplied.json {refused.problem}"
    if data != [lesson.model_dump(mode="json") for lesson in lessons]:
        return "its supplied.json differs from the cards this session supplied"
    return None


def _refuse(
    state: SessionState, task: TaskEntry, reason: str, *, reexport: bool = False
) -> Imported:
    """The response refused and moved aside; when it cannot be moved (a folder already named
    response.refused.json, say) it is removed, so the same response is never read twice."""
    folder = Path(task.folder)
    then = "fresh maintenance tasks were exported" if reexport else "write a new response.json"
    try:
        os.replace(folder / RESPONSE_FILE, folder / REFUSED_FILE)
    except OSError as error:
        try:
            os.unlink(folder / RESPONSE_FILE)
        except OSError:
            return Imported(
                state,
                f"{task.id}: {reason}, and response.json could not be moved aside "
                f"({error.strerror or error}); remove {REFUSED_FILE} and response.json from "
                "the task folder, then write a new response.json",
                reexport,
            )
        reason += (
            f" (it was removed: it could not be kept as {REFUSED_FILE}, {error.strerror or error})"
        )
    return Imported(state, f"{task.id}: {reason}; {then}", reexport)


def _codes(rejections: Sequence[Rejection]) -> tuple[dict[str, Any], ...]:
    return tuple(r.model_dump(mode="json") for r in rejections)


def _context(state: SessionState, task: TaskEntry) -> AdmissionContext:
    record = task_record(state, task)
    inspected = inspect(record)
    return AdmissionContext(
        run=record,
        config=review_config(record).active_memory,
        checkout=inspected.state,
        verifier=inspected.verifier,
    )


def _staged_actions(raw: object, expected: Sequence[str]) -> tuple[tuple[str, str], ...] | str:
    if not isinstance(raw, list) or not all(isinstance(item, Mapping) for item in raw):
        return '"staged" must be a list of {"id", "action", "reason"} objects'
    actions: dict[str, str] = {}
    for item in raw:
        finding, action = item.get("id"), item.get("action")
        if finding not in expected:
            return f"staged id {str(finding)[:64]!r} is not a finding of this task"
        if action not in _STAGED_ACTIONS:
            return f"staged action {str(action)[:16]!r} must be keep or defer"
        if finding in actions:
            return f"staged id {finding!r} is decided twice"
        actions[str(finding)] = str(action)
    missing = [finding for finding in expected if finding not in actions]
    if missing:
        return f"{len(missing)} staged finding(s) have no decision, e.g. {missing[0]!r}"
    return tuple((finding, actions[finding]) for finding in expected)


def import_response(
    state: SessionState, task: TaskEntry, probes: Probes, store: SqliteStore
) -> Imported:
    """Import ``task``'s response.json if there is one (``Imported(state)`` unchanged if not)."""
    path = Path(task.folder) / RESPONSE_FILE
    if task.status != "open" or not os.path.lexists(path):
        return Imported(state)
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):  # never read through a link: it could name any file
        return _refuse(state, task, "response.json is a symlink, not a file written for it")
    if not stat.S_ISREG(info.st_mode):
        return Imported(
            state,
            f"{task.id}: response.json is not a regular file; remove it and write the "
            "response as a file",
        )
    try:
        data = read_json(path, what=f"response of task {task.id!r}", max_bytes=2 * MAX_ANSWER_BYTES)
    except InputRefused as refused:
        return _refuse(state, task, f"response.json {refused.problem}")
    if not isinstance(data, Mapping) or "answer" not in data:
        return _refuse(state, task, 'it is not an object with "task", "digest" and "answer"')
    if data.get("task") != task.id:
        return _refuse(state, task, f"it names task {str(data.get('task'))[:80]!r}")
    if data.get("digest") != task.digest:
        return _refuse(
            state,
            task,
            "it is stale: its digest is not this export's (the task "
            "was exported again); answer the current task.json",
        )
    check_basis(state, task, probes)
    context = _context(state, task)
    if task.kind == "discovery":
        found = admit_discovery(data["answer"], task.specialist, context)
        if any(r.stage == "shape" and r.index < 0 for r in found.rejections):
            return _refuse(state, task, "its answer does not satisfy contract.schema.json")
        staged = tuple(
            StagedFinding(
                id=new_lesson_id(),
                task=task.id,
                specialist=task.specialist,
                repository=task.repository,
                graph_hash=task.graph_hash,
                draft=item.proposal.draft.model_dump(mode="json"),
            )
            for item in found.proposals
        )
        held = tuple(
            HeldFinding(
                id=new_lesson_id(),
                task=task.id,
                run_id=context.run.run_id,
                specialist=task.specialist,
                signals=item.signals,
                draft=item.proposal.draft.model_dump(mode="json"),
            )
            for item in found.quarantined
        )
        done = task.model_copy(
            update={
                "status": "done",
                "rejections": _codes(found.rejections),
                "quarantined": len(found.quarantined),
            }
        )
        state = state.replace_task(done)
        return Imported(
            state.model_copy(update={"staged": state.staged + staged, "held": state.held + held})
        )
    supplied = supplied_lessons(task, store)
    if isinstance(supplied, str):
        return _refuse(state, task, supplied, reexport=True)
    problem = _supplied_file_problem(task, supplied)
    if problem is not None:
        return _refuse(state, task, f"{problem} (the task folder was changed)", reexport=True)
    result = admit_maintenance(data["answer"], task.specialist, supplied, context)
    if not result.complete:
        codes = ", ".join(sorted({r.code for r in result.rejections})) or "incomplete"
        return _refuse(
            state,
            task,
            f"its answer was refused as a whole ({codes}): it must decide every card of "
            "supplied.json exactly once, by its id, and name no other id",
        )
    actions = _staged_actions(data.get("staged", []), task.staged)
    if isinstance(actions, str):
        return _refuse(state, task, actions)
    done = task.model_copy(
        update={
            "status": "done",
            "rejections": _codes(result.rejections),
            "staged_actions": actions,
            "mutations": tuple(m.model_dump(mode="json") for m in result.mutations),
        }
    )
    return Imported(state.replace_task(done))
