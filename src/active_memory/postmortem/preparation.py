"""Preparation, before any specialist runs: the store snapshot, the checkout (its state, a
citation verifier and its fingerprint), the private evidence folder and the provider.

Every step runs under the shared deadline. A failure here is every specialist's failure at once,
raised as :class:`Unprepared`: the postmortem reports it; a trial turns it into a
PostmortemError. :func:`maintenance_input` gives a maintenance specialist its batches of the
current lessons and their before/current changes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from active_memory.admission.validate import AdmissionContext
from active_memory.agents.providers.base import ModelProvider
from active_memory.agents.specialists import SPECS, Batch, ProgressCallback, SpecialistEnv
from active_memory.agents.tool_loop import SessionLimits
from active_memory.daemon_threads import in_daemon_thread
from active_memory.errors import EvidenceError, ProviderError, StoreError
from active_memory.evidence.private import prepare_private_dir
from active_memory.models.config import RuntimeConfig
from active_memory.models.lessons import Lesson
from active_memory.models.runs import Binding, RunRecord
from active_memory.postmortem.batching import maintenance_batches
from active_memory.postmortem.binding import declared_connections, provider_for
from active_memory.postmortem.changes import lesson_changes, visible_set
from active_memory.postmortem.failures import Failure, one_line, unexpected
from active_memory.postmortem.inspection import Inspection, checkout_status, host_facts, inspect
from active_memory.postmortem.options import PostmortemOptions
from active_memory.postmortem.report import CheckoutStatus
from active_memory.store.backend import RunIdentity, Snapshot, SnapshotRequest

__all__ = [
    "MaintenanceInput",
    "Prepared",
    "Unprepared",
    "existing_lessons",
    "in_thread",
    "maintenance_input",
    "output_caps",
    "prepare",
    "snapshot_request",
]

T = TypeVar("T")


class Unprepared(Exception):
    """Preparation failed for every specialist at once (snapshot, evidence folder, provider).
    Internal: the postmortem reports it; a trial turns it into a PostmortemError."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


@dataclass(frozen=True, slots=True)
class Prepared:
    """What the review starts from. ``owned_provider`` is the provider this postmortem created
    (from the factory or the registry) and must close; None when the caller handed one over."""

    snapshot: Snapshot
    env: SpecialistEnv
    fingerprint: str | None
    checkout: CheckoutStatus
    owned_provider: ModelProvider | None


@dataclass(frozen=True, slots=True)
class MaintenanceInput:
    """A maintenance specialist's batches, and the ``(id, revision)`` pairs of its scope it saw
    (what a revision conflict is compared against)."""

    batches: tuple[Batch, ...] = ()
    reviewed: frozenset[tuple[str, int]] = frozenset()


def snapshot_request(record: RunRecord, config: RuntimeConfig) -> SnapshotRequest:
    checkout = record.checkout
    identity = RunIdentity(
        run_id=record.run_id,
        repository=checkout.repository if checkout is not None else None,
        graph_hash=record.graph_hash,
    )
    memory = config.active_memory
    return SnapshotRequest(identity=identity, repository=memory.repository, graph=memory.graph)


async def in_thread(deadline: float, function: Callable[..., T], *args: object) -> T:
    """``function(*args)`` in a daemon thread; TimeoutError once ``deadline`` passes (the
    thread is abandoned then, and cannot keep the process from exiting)."""
    remaining = max(0.0, deadline - time.monotonic())
    async with asyncio.timeout(remaining):
        return await in_daemon_thread(function, *args)


async def _step(
    deadline: float, code: str, what: str, function: Callable[..., T], *args: object
) -> T:
    """One preparation step under the deadline; any failure is Unprepared."""
    try:
        return await in_thread(deadline, function, *args)
    except TimeoutError:
        failure = Failure("timed_out", "timed_out", "the deadline passed while preparing")
        raise Unprepared(failure) from None
    except StoreError as error:
        raise Unprepared(Failure("failed", "store_error", one_line(str(error)))) from None
    except Exception as error:
        raise Unprepared(unexpected(code, what, error)) from None


def _provider(options: PostmortemOptions, binding: Binding) -> tuple[ModelProvider, bool]:
    """The sessions' provider and whether this postmortem owns it."""
    if options.provider is not None:
        return options.provider, False
    try:
        if options.provider_factory is not None:
            return options.provider_factory(binding), True
        return (
            provider_for(
                binding,
                connections=declared_connections(options.config.postmortem),
                connection=options.override.connection(),
            ),
            True,
        )
    except ProviderError as error:
        # A missing key or SDK keeps its cause, as a failed call does.
        raise Unprepared(Failure("failed", error.cause, one_line(str(error)))) from None
    except Exception as error:
        # A factory is host code: whatever it raises is this postmortem's provider failure.
        failure = unexpected("provider_error", "the provider could not be created", error)
        raise Unprepared(failure) from None


async def prepare(
    record: RunRecord,
    options: PostmortemOptions,
    binding: Binding,
    *,
    deadline: float,
    progress: ProgressCallback | None = None,
) -> Prepared:
    """Snapshot, inspect, make the evidence folder, then build the provider (last, so nothing
    created here needs closing when an earlier step fails). Raises :class:`Unprepared`."""
    snapshot = await _step(
        deadline,
        "store_error",
        "the store snapshot failed",
        options.backend.snapshot,
        snapshot_request(record, options.config),
    )
    inspected: Inspection = await _step(
        deadline, "internal_error", "inspecting the checkout failed", inspect, record
    )
    try:
        prepare_private_dir(options.private_dir)
    except EvidenceError as error:
        raise Unprepared(Failure("failed", "evidence_error", one_line(str(error)))) from None
    except OSError as error:
        failure = unexpected("evidence_error", "the private evidence folder failed", error)
        raise Unprepared(failure) from None
    provider, owned = _provider(options, binding)
    admission = AdmissionContext(
        run=record,
        config=options.config.active_memory,
        checkout=inspected.state,
        verifier=inspected.verifier,
    )
    checkout = record.checkout
    env = SpecialistEnv(
        record=record,
        binding=binding,
        provider=provider,
        admission=admission,
        private_dir=options.private_dir,
        checkout_root=checkout.path if checkout is not None else None,
        host_facts=host_facts(record, inspected.state),
        evidence_budget=options.evidence_budget,
        deadline=deadline,
        cancel=options.cancel,
        limits=output_caps(options.limits, options.config),
        progress=progress,
    )
    return Prepared(
        snapshot=snapshot,
        env=env,
        fingerprint=inspected.fingerprint,
        checkout=checkout_status(record, inspected),
        owned_provider=provider if owned else None,
    )


def output_caps(limits: SessionLimits, config: RuntimeConfig) -> SessionLimits:
    """``limits`` with the output caps the run's configuration sets (``globalAgents.postmortem``
    ``answerTokens``, ``investigationTokens``, ``reasoningTokens``)."""
    postmortem = config.postmortem
    return dataclasses.replace(
        limits,
        answer_tokens=postmortem.answer_tokens,
        investigation_tokens=postmortem.investigation_tokens,
        reasoning_tokens=postmortem.reasoning_tokens,
    )


def existing_lessons(lessons: Sequence[Lesson], name: str) -> tuple[Lesson, ...]:
    """What discovery specialist ``name`` is shown of the store: its scope's current lessons
    (to avoid proposing them again); maintenance decides its batches instead and gets none."""
    spec = SPECS[name]
    if spec.maintenance:
        return ()
    return tuple(lesson for lesson in lessons if lesson.scope.kind == spec.scope)


def maintenance_input(
    record: RunRecord,
    name: str,
    lessons: Sequence[Lesson],
    *,
    frozen: Sequence[Lesson] | None,
    budget: int,
) -> MaintenanceInput:
    """What maintenance specialist ``name`` decides, from the current ``lessons`` of the store;
    discovery gets nothing. Raises EvidenceError for a lesson too large for any batch."""
    spec = SPECS[name]
    if not spec.maintenance:
        return MaintenanceInput()
    scoped = [lesson for lesson in lessons if lesson.scope.kind == spec.scope]
    changes = lesson_changes(lessons, record.deliveries, frozen)[spec.scope]
    return MaintenanceInput(
        batches=maintenance_batches(scoped, changes, budget),
        reviewed=visible_set(scoped, spec.scope),
    )
