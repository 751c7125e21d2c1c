"""What a postmortem is given, in one frozen object shared with the single-specialist trial.

:func:`~active_memory.postmortem.entry.run_postmortem` and
:func:`~active_memory.postmortem.specialist_trial.try_specialist` take the same
:class:`PostmortemOptions`, so a trial prepares exactly what the postmortem would (the store
snapshot, the lesson changes, the checkout, the evidence folder, the binding and its provider).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from active_memory.agents.providers.base import ModelProvider
from active_memory.agents.specialists import ProgressCallback
from active_memory.agents.tool_loop import SessionLimits
from active_memory.cancel import CancelToken
from active_memory.evidence.builder import DEFAULT_BUDGET
from active_memory.models.config import RuntimeConfig
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import Lesson
from active_memory.models.runs import Binding
from active_memory.postmortem.binding import BindingOverride
from active_memory.runlog import RunLog
from active_memory.store.backend import ActiveMemoryBackend

__all__ = ["DEFAULT_SETTLEMENT_MS", "PostmortemOptions", "ProviderFactory"]

ProviderFactory = Callable[[Binding], ModelProvider]
DEFAULT_SETTLEMENT_MS = 5_000


@dataclass(frozen=True, kw_only=True)
class PostmortemOptions:
    """How to run a postmortem: where it reads and writes, which provider, what it may spend.

    ``config`` is the runtime configuration (``activeMemory`` scopes, ``globalAgents.postmortem``
    with its ``timeoutMs`` deadline and ``sourceNode``, and the only ``connections`` honoured:
    the runtime JSON embedded in a record is never read for them); ``backend`` the lesson store;
    ``private_dir`` receives the private evidence files (0700).

    ``provider`` (shared by every session; the caller keeps ownership and closes it) wins over
    ``provider_factory(binding)``; without either, the binding is resolved through the provider
    registry and the postmortem closes what it created. ``override`` changes the inherited
    binding (see :mod:`.binding`).

    ``frozen_lessons`` is the run's start snapshot when the host has it; it makes the
    before/current changes exact (otherwise they come from the delivery manifest). ``new_id``
    assigns ids to new lessons. ``settlement_ms`` bounds how long complete results may still
    publish after the deadline. ``dry_run`` does everything but publish. ``on_progress`` is
    called with ``(specialist, state)`` on every state change; ``run_log`` receives the
    report's allow-listed projection. ``cancel`` stops the review and fences publication.
    ``limits`` bounds each session's turns and tool calls; its output caps are replaced by the
    configuration's (``answerTokens``, ``investigationTokens``, ``reasoningTokens``), so a run's
    caps are set in one place.

    The trial never publishes and reports to its caller only: it ignores ``new_id``,
    ``dry_run``, ``settlement_ms``, ``run_log`` and ``on_progress``.
    """

    config: RuntimeConfig
    backend: ActiveMemoryBackend
    private_dir: Path
    provider: ModelProvider | None = None
    provider_factory: ProviderFactory | None = None
    override: BindingOverride = field(default_factory=BindingOverride)
    run_log: RunLog | None = None
    cancel: CancelToken | None = None
    new_id: Callable[[], str] = new_lesson_id
    evidence_budget: int = DEFAULT_BUDGET
    dry_run: bool = False
    frozen_lessons: tuple[Lesson, ...] | None = None
    settlement_ms: int = DEFAULT_SETTLEMENT_MS
    limits: SessionLimits = field(default_factory=SessionLimits)
    on_progress: ProgressCallback | None = None

    def __post_init__(self) -> None:
        # A host may hand over a str and a list; the object stays what its fields say.
        object.__setattr__(self, "private_dir", Path(self.private_dir))
        if self.frozen_lessons is not None:
            object.__setattr__(self, "frozen_lessons", tuple(self.frozen_lessons))
