"""The postmortem: four specialists review a settled run; the host validates and publishes.

:func:`run_postmortem` is the whole job. It refuses to start (``PostmortemError``, before any
provider call) when the outcome is not latched or ``sourceNode`` does not name an agent binding
(and raises ConfigError for an override naming an unknown provider), and returns a ``skipped``
report when the postmortem or both scopes are off. Otherwise:

1. prepare (:mod:`.preparation`): read the current scoped snapshot, inspect and fingerprint the
   checkout, make the private evidence folder, build the provider, all under the shared
   ``timeoutMs`` deadline;
2. review (:mod:`.scheduling`): run the enabled specialists concurrently, each in its own
   sessions; when the deadline passes, stop the unfinished ones (nothing of theirs publishes);
3. publish (:mod:`.publication`): verify the checkout fingerprint, then publish every validated
   change in one checked batch during a bounded settlement, with conflict rounds;
4. return a :class:`PostmortemReport` (:mod:`.report_assembly`) and append it (allow-listed
   fields only) to the run log.

Ordinary failures (provider errors, contract violations, evidence errors, refused answers, and
whatever a provider factory, the backend or the id source raises) never raise into the caller
and never touch the run's latched outcome: they are report entries.
Cancellation through ``options.cancel`` fences new publication and drains a write already
started.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Callable

from active_memory.agents.prompts import SPECIALISTS
from active_memory.agents.providers.registry import close_provider
from active_memory.agents.specialists import SPECS
from active_memory.errors import PostmortemError
from active_memory.models.changes import Rejection
from active_memory.models.config import RuntimeConfig
from active_memory.models.runs import RunRecord
from active_memory.postmortem.binding import resolve_source_node, specialist_binding
from active_memory.postmortem.failures import unexpected
from active_memory.postmortem.options import PostmortemOptions
from active_memory.postmortem.preparation import Unprepared, prepare
from active_memory.postmortem.publication import publish
from active_memory.postmortem.quarantine_hold import hold_quarantined
from active_memory.postmortem.report import PostmortemReport
from active_memory.postmortem.report_assembly import assemble_report, skipped_report
from active_memory.postmortem.run_log import append_report
from active_memory.postmortem.scheduling import review
from active_memory.postmortem.state import ReviewState

__all__ = ["enabled_specialists", "run_postmortem", "sequential_ids"]

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def enabled_specialists(config: RuntimeConfig) -> tuple[str, ...]:
    """The specialists a configuration runs: a scope's opt-out disables its maintenance and
    its discovery; a disabled postmortem runs none."""
    if not config.postmortem.enabled:
        return ()
    memory = config.active_memory
    on = {"graph": memory.graph, "repository": memory.repository}
    return tuple(name for name in SPECIALISTS if on[SPECS[name].scope])


def sequential_ids(start_ms: int = 1_748_772_100_000, *, first: int = 1) -> Callable[[], str]:
    """A deterministic lesson id source for tests and demos: ``lesson-<ULID>`` with a fixed
    millisecond part and a counter (from ``first``) where a real id has random bits."""
    counter = itertools.count(first)

    def next_id() -> str:
        value = (start_ms << 80) | next(counter)
        chars = []
        for _ in range(26):
            chars.append(_CROCKFORD[value & 31])
            value >>= 5
        return "lesson-" + "".join(reversed(chars))

    return next_id


async def run_postmortem(record: RunRecord, options: PostmortemOptions) -> PostmortemReport:
    """Review ``record`` with the enabled specialists and publish what the host admits.

    Raises :class:`PostmortemError` only before any work: no latched outcome, or a sourceNode
    that is unknown or not an agent binding; ConfigError for an unknown override provider.
    """
    if record.outcome is None:
        raise PostmortemError(
            f"run {record.run_id!r} has no latched outcome; latch the main graph's outcome "
            "durably before the postmortem"
        )
    names = enabled_specialists(options.config)
    if not names:
        skipped, code = skipped_report(record, options.config)
        if options.run_log is not None:
            append_report(options.run_log, record, skipped, reason_code=code)
        return skipped
    node = resolve_source_node(record.graph, options.config.postmortem.source_node)
    binding = specialist_binding(node, options.override, options.provider)
    state = ReviewState(record, names, options, node=node, binding=binding)
    await _review_and_publish(state)
    report = await assemble_report(state)
    if options.run_log is not None:
        append_report(
            options.run_log, record, report, rejections=_rejections(state), binding=binding
        )
    return report


async def _watch_cancel(state: ReviewState) -> None:
    cancel = state.options.cancel
    if cancel is not None:
        await cancel.wait()
        state.control.cancel()


async def _review_and_publish(state: ReviewState) -> None:
    watcher = asyncio.ensure_future(_watch_cancel(state))
    try:
        try:
            state.prepared = await prepare(
                state.record,
                state.options,
                state.binding,
                deadline=state.deadline,
                progress=state.note,
            )
        except Unprepared as unprepared:
            state.fail_all(state.names, unprepared.failure)
        else:
            await review(state, state.names, state.prepared.snapshot)
            await publish(state)
            await hold_quarantined(state)
    except Exception as error:
        # A bug must not take the host's run down: whatever had not settled is reported
        # failed. Host cancellation (a BaseException) still propagates after the drain.
        _settle_unexpected(state, error)
    finally:
        watcher.cancel()
        owned = state.prepared.owned_provider if state.prepared is not None else None
        if owned is not None:
            with contextlib.suppress(Exception):
                await close_provider(owned)


def _settle_unexpected(state: ReviewState, error: Exception) -> None:
    failure = unexpected("internal_error", "the postmortem stopped", error)
    for name in state.names:
        result = state.results.get(name)
        settled = (result is not None and not result.changes) or name in state.skipped
        if name not in state.failures and name not in state.published and not settled:
            state.fail(name, failure)


def _rejections(state: ReviewState) -> tuple[Rejection, ...]:
    meters = state.meters
    return tuple(r for name in SPECIALISTS if name in meters for r in meters[name].rejections)
