"""The second driver: ``--provider NAME`` answers the open tasks with this project's
specialists, each task one provider session, all under one shared deadline.

Every task is answered exactly as the model-free CLI would receive it from a host subagent: the
same prepared evidence and prompts, the answer written to the task's response file with its
digest, then imported by the same call as any response. A maintenance specialist is shown the
staged findings of its task (what a host subagent reads in ``staged.json``) as supplied cards
beside the store's, and decides them like any card: ``keep`` keeps the finding, ``retire``
defers it, and ``adapt`` defers it too (a staged finding is published as admitted or not at
all; the wish to change it is a reason to leave it inactive). A finding the answer leaves
undecided gets no decision, so the import refuses the response and the finding stays staged;
nothing is kept blindly. A task whose session fails stays open, with its reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from active_memory.agents.providers.base import ModelProvider
from active_memory.agents.providers.registry import close_provider
from active_memory.agents.specialists import SPECS, Meter, SessionSubject, answer_session
from active_memory.errors import ActiveMemoryError
from active_memory.history_init.advance import Answer, InitOptions, advance
from active_memory.history_init.records import review_config, task_record
from active_memory.history_init.responses import supplied_lessons
from active_memory.history_init.state import SessionState, TaskEntry, load_state
from active_memory.history_init.tasks import RESPONSE_FILE
from active_memory.models.lessons import Lesson, LessonDraft
from active_memory.postmortem.binding import (
    BindingOverride,
    resolve_source_node,
    specialist_binding as _binding,
)
from active_memory.postmortem.options import PostmortemOptions
from active_memory.postmortem.preparation import Unprepared, prepare
from active_memory.private_files import write_private_text
from active_memory.store.sqlite import SqliteStore

__all__ = ["drive"]

Progress = Callable[[str], None]


# What a maintenance decision on a staged finding means for it (see the module docstring).
_STAGED_ACTION = {"keep": "keep", "retire": "defer", "adapt": "defer"}


def _supplied(task: TaskEntry, store: SqliteStore) -> list[Lesson]:
    """The session's own record of the supplied cards, never the task folder's copy."""
    if task.kind != "maintenance":
        return []
    lessons = supplied_lessons(task, store)
    if isinstance(lessons, str):
        raise ActiveMemoryError(f"{lessons}; call again to export fresh maintenance")
    return lessons


def _staged_cards(state: SessionState, task: TaskEntry) -> list[Lesson]:
    """The task's staged findings as cards, under the ids they would be published with."""
    by_id = {finding.id: finding for finding in state.staged}
    return [
        Lesson.from_draft(finding, 1, LessonDraft.model_validate(by_id[finding].draft))
        for finding in task.staged
        if finding in by_id
    ]


def _split(answer: object, staged: set[str]) -> tuple[object, list[dict[str, str]]]:
    """The answer without the staged findings' decisions, and those as staged entries."""
    if not isinstance(answer, dict) or not isinstance(answer.get("decisions"), list):
        return answer, []  # the import refuses its shape
    decisions, entries = [], []
    for decision in answer["decisions"]:
        if not isinstance(decision, dict) or decision.get("id") not in staged:
            decisions.append(decision)
            continue
        action = _STAGED_ACTION.get(str(decision.get("action")))
        if action is None:
            continue  # no decision the import understands: the finding stays undecided
        reason = str(decision.get("reason") or "")[:500]
        if decision.get("action") != action:
            reason = f"the specialist would {decision.get('action')} it: {reason}"[:500]
        entries.append({"id": str(decision["id"]), "action": action, "reason": reason})
    return {**answer, "decisions": decisions}, entries


async def _answer(
    state: SessionState,
    task: TaskEntry,
    store: SqliteStore,
    override: BindingOverride,
    provider: ModelProvider | None,
    deadline: float,
    scratch: Path,
) -> None:
    record = task_record(state, task)
    config = review_config(record)
    node = resolve_source_node(record.graph, config.postmortem.source_node)
    binding = _binding(node, override, provider)
    options = PostmortemOptions(
        config=config,
        backend=store,
        private_dir=scratch / task.id,
        provider=provider,
        override=override,
    )
    try:
        prepared = await prepare(record, options, binding, deadline=deadline)
    except Unprepared as unprepared:
        raise ActiveMemoryError(unprepared.failure.message) from None
    try:
        spec = SPECS[task.specialist]
        lessons = _supplied(task, store) + _staged_cards(state, task)
        result = await answer_session(
            prepared.env, spec, Meter(task.specialist), SessionSubject(lessons=lessons), batch=0
        )
    finally:
        if prepared.owned_provider is not None:
            with contextlib.suppress(Exception):
                await close_provider(prepared.owned_provider)
    response: dict[str, Any] = {"task": task.id, "digest": task.digest, "answer": result.answer}
    if task.kind == "maintenance":
        response["answer"], response["staged"] = _split(result.answer, set(task.staged))
    write_private_text(Path(task.folder) / RESPONSE_FILE, json.dumps(response) + "\n")


async def _answer_open(
    answer: Answer,
    override: BindingOverride,
    provider: ModelProvider | None,
    deadline: float,
    progress: Progress | None,
) -> list[str]:
    state = load_state(answer.directory)
    assert state is not None
    failures: list[str] = []
    with (
        SqliteStore(state.store) as store,
        tempfile.TemporaryDirectory(prefix="active-memory-init-") as scratch,
    ):
        for task in answer.open_tasks:
            if time.monotonic() >= deadline:
                failures.append(f"{task.id}: the shared deadline passed")
                continue
            try:
                await _answer(state, task, store, override, provider, deadline, Path(scratch))
            except (ActiveMemoryError, TimeoutError) as error:
                failures.append(
                    f"{task.id}: {str(error).splitlines()[0] if str(error) else 'timed out'}"
                )
                continue
            if progress is not None:
                progress(f"answered     {task.id}")
    return failures


def drive(
    options: InitOptions,
    provider_name: str | None,
    model: str | None,
    seconds: float,
    *,
    provider: ModelProvider | None = None,
    progress: Progress | None = None,
) -> Answer:
    """Advance, answer every open task with the specialists, advance again, until the session
    completes, stops making progress or the shared deadline passes."""
    deadline = time.monotonic() + seconds
    override = BindingOverride(provider=provider_name, model=model)
    answer = advance(options)
    while answer.open_tasks and time.monotonic() < deadline:
        before = {(task.id, task.digest) for task in answer.open_tasks}
        failures = asyncio.run(_answer_open(answer, override, provider, deadline, progress))
        answer = advance(options)
        answer = Answer(
            answer.directory,
            answer.state,
            answer.candidates,
            answer.refused + tuple(failures),
            answer.notes,
        )
        if {(task.id, task.digest) for task in answer.open_tasks} == before:
            break  # nothing answered or everything refused: another round would repeat it
    return answer
