"""What a specialist's sessions share and count: the run's environment, the stop signal the
evidence builder polls, the running meter the report reads after a failure, a maintenance
batch, a session's subject and the validated result."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias

from active_memory.admission.validate import (
    AdmissionContext,
    BoundDecision,
    Downgrade,
    QuarantinedProposal,
)
from active_memory.agents.providers.base import ModelProvider, TokenUsage
from active_memory.agents.tool_loop import Session, SessionLimits
from active_memory.cancel import CancelToken
from active_memory.models.changes import Mutation, Proposal, Rejection
from active_memory.models.lessons import Lesson
from active_memory.models.runs import Binding, RunRecord

__all__ = [
    "Batch",
    "Meter",
    "ProgressCallback",
    "ScopeKind",
    "SessionSubject",
    "SpecialistEnv",
    "StopSignal",
    "Validated",
]

ProgressCallback = Callable[[str, str], None]
ScopeKind: TypeAlias = Literal["graph", "repository"]


class StopSignal:
    """``is_set()`` once the host cancelled or the deadline passed (``share``, when given, is the
    specialist's own, read each time): evidence paging stops between two pages (the builder runs
    in a worker thread that task cancellation cannot reach)."""

    def __init__(
        self,
        deadline: float,
        cancel: CancelToken | None = None,
        share: Callable[[], float] | None = None,
    ) -> None:
        self._deadline = deadline
        self._cancel = cancel
        self._share = share

    def is_set(self) -> bool:
        cancelled = self._cancel is not None and self._cancel.cancelled
        until = self._deadline if self._share is None else min(self._deadline, self._share())
        return cancelled or time.monotonic() >= until


@dataclass(frozen=True, slots=True)
class SpecialistEnv:
    """What every specialist of one postmortem shares: the run, the binding, the deadline."""

    record: RunRecord
    binding: Binding
    provider: ModelProvider
    admission: AdmissionContext
    private_dir: Path
    checkout_root: Path | None
    host_facts: tuple[str, ...]
    evidence_budget: int
    deadline: float
    cancel: CancelToken | None = None
    limits: SessionLimits = field(default_factory=SessionLimits)
    progress: ProgressCallback | None = None
    # This specialist's fair share of ``deadline`` (set per specialist by the postmortem).
    share: Callable[[], float] | None = None

    def note(self, specialist: str, state: str) -> None:
        if self.progress is not None:
            self.progress(specialist, state)


@dataclass
class Meter:
    """One specialist's running counts; kept by the orchestrator, so a failed or cancelled
    specialist still reports the tokens it spent. ``next_batch`` keeps replay labels unique
    across conflict re-invocations."""

    specialist: str
    batches: int = 0
    next_batch: int = 0
    conflict_retries: int = 0
    sessions: list[Session] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None

    @property
    def usage(self) -> TokenUsage:
        total = TokenUsage()
        for session in self.sessions:
            total += session.usage
        return total

    @property
    def retries(self) -> int:
        return sum(session.retries for session in self.sessions)

    @property
    def text_calls(self) -> int:
        return sum(session.text_calls for session in self.sessions)

    @property
    def answered_model(self) -> str | None:
        """The model the server said answered, as its first session heard it."""
        return next((s.answered_model for s in self.sessions if s.answered_model), None)

    @property
    def elapsed_ms(self) -> int:
        end = self.ended if self.ended is not None else time.monotonic()
        return int((end - self.started) * 1000)


@dataclass(frozen=True, slots=True)
class Batch:
    """One maintenance session's supplied lessons and the before/current change entries that
    travel with them (``{id, before_revision, current_revision, change}``)."""

    lessons: tuple[Lesson, ...]
    changes: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class SessionSubject:
    """What one session reviews beside the run's evidence: ``label`` names a maintenance batch
    (``batch 2 of 3``), ``lessons`` are its supplied lessons and ``changes`` their change
    entries; ``existing`` are the lessons already in a discovery specialist's scope (shown so
    it can avoid duplicates, never decided)."""

    label: str | None = None
    lessons: Sequence[Lesson] = ()
    changes: Sequence[Mapping[str, Any]] = ()
    existing: Sequence[Lesson] = ()


@dataclass(frozen=True, slots=True)
class Validated:
    """A specialist's complete, host-validated result, ready to publish.

    Maintenance carries mutations; discovery carries proposals, which become new lessons when
    ids are assigned at publication, and quarantined proposals, held for review instead.
    """

    specialist: str
    mutations: tuple[Mutation, ...] = ()
    proposals: tuple[Proposal, ...] = ()
    decisions: tuple[BoundDecision, ...] = ()
    downgrades: tuple[Downgrade, ...] = ()
    quarantined: tuple[QuarantinedProposal, ...] = ()

    @property
    def changes(self) -> int:
        return len(self.mutations) + len(self.proposals)
