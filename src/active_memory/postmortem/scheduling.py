"""Review scheduling: the specialists run concurrently, each in its own task, each under its
fair share of the deadline (:mod:`.shares`), none past the whole.

A specialist that cannot succeed on this run (:mod:`.skipping`) is not started; it settles as
skipped with its reason. A specialist whose share ran out fails ``timed_out`` alone, and the
time a settled one did not use goes to those still running. When the whole deadline passes or
the host cancels, the unfinished ones are cancelled (nothing of theirs publishes); each of the
others settles into a validated result or a failure. A session that timed out in its repair
turn says so, with the count of contract errors its last answer had.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Iterable, Sequence
from typing import Any

from active_memory.agents.specialists import Validated, run_specialist
from active_memory.postmortem.failures import classify, in_repair, unanswered
from active_memory.postmortem.preparation import existing_lessons, maintenance_input
from active_memory.postmortem.shares import FairShares
from active_memory.postmortem.skipping import skip_reason
from active_memory.postmortem.state import ReviewState
from active_memory.store.backend import Snapshot

__all__ = ["review"]


async def _wait(state: ReviewState, tasks: Iterable[asyncio.Task[Validated]]) -> None:
    """Until every task is done, the deadline passes or the host cancels."""
    pending = set(tasks)
    cancel = state.options.cancel
    waiter = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
    try:
        while pending and not state.cancelled:
            remaining = state.deadline - time.monotonic()
            if remaining <= 0:
                return
            watch: set[asyncio.Future[Any]] = set(pending)
            if waiter is not None:
                watch.add(waiter)
            await asyncio.wait(watch, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
            pending = {task for task in pending if not task.done()}
    finally:
        if waiter is not None:
            waiter.cancel()


async def _timed(
    state: ReviewState, name: str, snapshot: Snapshot, shares: FairShares
) -> Validated:
    prepared = state.prepared
    assert prepared is not None
    env = dataclasses.replace(prepared.env, share=shares.of(name))
    meter = state.meters[name]
    if meter.conflict_retries == 0:
        meter.started = time.monotonic()
    meter.ended = None
    try:
        # Planned inside the task: a lesson too large for any batch fails this specialist only.
        given = maintenance_input(
            state.record,
            name,
            snapshot.lessons,
            frozen=state.options.frozen_lessons,
            budget=state.options.evidence_budget,
        )
        state.reviewed[name] = given.reviewed
        existing = existing_lessons(snapshot.lessons, name)
        return await run_specialist(env, name, meter, batches=given.batches, existing=existing)
    finally:
        meter.ended = time.monotonic()
        shares.settle(name, meter.ended)


async def review(state: ReviewState, names: Sequence[str], snapshot: Snapshot) -> None:
    """Run ``names`` concurrently, each under its fair share of the deadline; settle each into
    a result or a failure. Unfinished specialists are cancelled: nothing of theirs publishes."""
    tasks: dict[str, asyncio.Task[Validated]] = {}
    prepared = state.prepared
    assert prepared is not None
    started: list[str] = []
    for name in names:
        reason = skip_reason(state.record, name, prepared.env, prepared.checkout)
        if reason is not None:
            state.skip(name, reason)
            continue
        started.append(name)
    shares = FairShares(started, started=time.monotonic(), deadline=state.deadline)
    for name in started:
        state.note(name, "running")
        tasks[name] = asyncio.create_task(
            _timed(state, name, snapshot, shares), name=f"postmortem:{name}"
        )
    try:
        await _wait(state, tasks.values())
    finally:
        for task in tasks.values():
            if not task.done():
                task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)
    for name, task in tasks.items():
        if task.cancelled():
            # Stopped at the deadline while waiting on the provider: a server that did not
            # answer, named with its wait, not a slow model's "stopped at the deadline".
            waiting = None if state.cancelled else unanswered(state.meters[name])
            stop = waiting or asyncio.CancelledError()
            state.fail(name, classify(stop, cancelled=state.cancelled))
            continue
        error = task.exception()
        if error is not None:
            failure = classify(error, cancelled=state.cancelled)
            state.fail(name, in_repair(failure, state.meters[name].sessions))
            continue
        result = task.result()
        state.results[name] = result
        state.note(name, f"validated, {result.changes} change(s)" if result.changes else
                   "nothing to do")  # fmt: skip
