"""The postmortem: four specialists review a settled run; the host validates and publishes.

:func:`run_postmortem` is the whole job. It refuses to start (``PostmortemError``, before any
provider call) when the outcome is not latched or ``sourceNode`` does not name an agent binding,
and returns a ``skipped`` report when the postmortem or both scopes are off. Otherwise:

1. read the current scoped snapshot and the before/current lesson changes, inspect and
   fingerprint the checkout (all under the shared ``timeoutMs`` deadline);
2. run the enabled specialists concurrently, each in its own sessions (:mod:`.specialists`);
3. when the deadline passes, stop the unfinished ones (nothing of theirs publishes); complete
   results publish during a bounded settlement;
4. verify the checkout fingerprint, then publish every validated change in one checked batch;
   a revision conflict refreshes the snapshot and re-invokes the maintenance specialist that
   owns the conflicting ids (validated discoveries are kept), and stops with ``conflict``
   when its visible lessons did not change; a conflict no planned id explains, or one past
   ``MAX_CONFLICT_ROUNDS``, fails every pending specialist with ``conflict``;
5. return a :class:`PostmortemReport` and append it (allow-listed fields only) to the run log.

Ordinary failures (provider errors, contract violations, evidence errors, refused answers, and
whatever a provider factory, the backend or the id source raises) never raise into the caller
and never touch the run's latched outcome: they are report entries.
Cancellation through ``cancel`` fences new publication and drains a write already started.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from pathlib import Path

from active_memory.admission import contract_sha256
from active_memory.agents.prompts import SPECIALISTS, prompt_sha256
from active_memory.agents.providers.base import ModelProvider
from active_memory.agents.specialists import SPECS, ProgressCallback
from active_memory.agents.tool_loop import SessionLimits
from active_memory.cancel import CancelToken
from active_memory.errors import PostmortemError
from active_memory.evidence.builder import DEFAULT_BUDGET
from active_memory.models.config import RuntimeConfig
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import Lesson
from active_memory.models.runs import AuthoredGraph, Binding, GraphNode, RunRecord
from active_memory.postmortem.report import PostmortemReport, SpecialistReport
from active_memory.postmortem.run import PostmortemRun, ProviderFactory
from active_memory.postmortem.summary import append_report
from active_memory.runlog import RunLog
from active_memory.store.backend import ActiveMemoryBackend

__all__ = [
    "DEFAULT_SETTLEMENT_MS",
    "ProviderFactory",
    "enabled_specialists",
    "resolve_source_node",
    "run_postmortem",
    "sequential_ids",
]

DEFAULT_SETTLEMENT_MS = 5_000
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def resolve_source_node(graph: AuthoredGraph, source_node: str | None) -> GraphNode:
    """The agent node whose binding the specialists inherit.

    ``source_node`` must name an agent node (a worker or verifier with a binding); without it,
    the first worker in graph order, then the first agent verifier.
    """
    agents = [node.id for node in graph.nodes if node.is_agent]
    listed = ", ".join(repr(name) for name in agents) or "none"
    if source_node is not None:
        node = graph.node(source_node)
        if node is None:
            raise PostmortemError(
                f"globalAgents.postmortem.sourceNode {source_node!r} is not a node of graph "
                f"{graph.name!r}; name one of its agent nodes: {listed}"
            )
        if not node.is_agent:
            raise PostmortemError(
                f"globalAgents.postmortem.sourceNode {source_node!r} is a {node.kind!r} node "
                f"without an agent binding; name a worker or verifier instead: {listed}"
            )
        return node
    for kind in ("worker", "verifier"):
        for node in graph.nodes:
            if node.is_agent and node.kind == kind:
                return node
    raise PostmortemError(
        f"graph {graph.name!r} has no agent node (a worker or verifier with a binding) whose "
        "model the postmortem could inherit; add one or set globalAgents.postmortem.enabled false"
    )


def enabled_specialists(config: RuntimeConfig) -> tuple[str, ...]:
    """The specialists a configuration runs: a scope's opt-out disables its maintenance and
    its discovery; a disabled postmortem runs none."""
    if not config.postmortem.enabled:
        return ()
    memory = config.active_memory
    on = {"graph": memory.graph, "repository": memory.repository}
    return tuple(name for name in SPECIALISTS if on[SPECS[name].scope])


def sequential_ids(start_ms: int = 1_748_772_100_000) -> Callable[[], str]:
    """A deterministic lesson id source for tests and demos: ``lesson-<ULID>`` with a fixed
    millisecond part and a counter where a real id has random bits."""
    counter = itertools.count(1)

    def next_id() -> str:
        value = (start_ms << 80) | next(counter)
        chars = []
        for _ in range(26):
            chars.append(_CROCKFORD[value & 31])
            value >>= 5
        return "lesson-" + "".join(reversed(chars))

    return next_id


def _hashes() -> tuple[dict[str, str], dict[str, str]]:
    return (
        {name: prompt_sha256(name) for name in SPECIALISTS},
        {name: contract_sha256(name) for name in SPECIALISTS},
    )


def _skipped(record: RunRecord, config: RuntimeConfig, log: RunLog | None) -> PostmortemReport:
    if not config.postmortem.enabled:
        reason, code = "the postmortem is disabled (globalAgents.postmortem.enabled)", "disabled"
    else:
        reason, code = "both memory scopes are off (activeMemory.graph and .repository)", "off"
    prompts, contracts = _hashes()
    report = PostmortemReport(
        run_id=record.run_id,
        status="skipped",
        reason=reason,
        specialists=tuple(
            SpecialistReport(specialist=name, status="skipped") for name in SPECIALISTS
        ),
        prompt_sha256=prompts,
        contract_sha256=contracts,
    )
    if log is not None:
        append_report(log, record, report, reason_code=code)
    return report


async def run_postmortem(
    record: RunRecord,
    *,
    config: RuntimeConfig,
    backend: ActiveMemoryBackend,
    private_dir: str | Path,
    provider: ModelProvider | None = None,
    provider_factory: ProviderFactory | None = None,
    binding: Binding | None = None,
    run_log: RunLog | None = None,
    cancel: CancelToken | None = None,
    new_id: Callable[[], str] = new_lesson_id,
    evidence_budget: int = DEFAULT_BUDGET,
    dry_run: bool = False,
    frozen_lessons: Sequence[Lesson] | None = None,
    settlement_ms: int = DEFAULT_SETTLEMENT_MS,
    limits: SessionLimits | None = None,
    on_progress: ProgressCallback | None = None,
) -> PostmortemReport:
    """Review ``record`` with the four specialists and publish what the host admits.

    ``provider`` (shared by every session; the caller keeps ownership) wins over
    ``provider_factory(binding)``; without either, the source node's binding is resolved through
    the provider registry. ``binding`` replaces the inherited binding (the CLI's ``--provider``
    and ``--model``). ``private_dir`` receives the private evidence files (0700).
    ``frozen_lessons`` is the run's start snapshot when the host has it; it makes the
    before/current changes exact (otherwise they come from the delivery manifest). ``new_id``
    assigns ids to new lessons. ``settlement_ms`` bounds how long complete results may still
    publish after the deadline. ``dry_run`` does everything but publish. ``on_progress`` is
    called with ``(specialist, state)`` on every state change.

    Raises :class:`PostmortemError` only before any work: no latched outcome, or a sourceNode
    that is unknown or not an agent binding.
    """
    if record.outcome is None:
        raise PostmortemError(
            f"run {record.run_id!r} has no latched outcome; latch the main graph's outcome "
            "durably before the postmortem"
        )
    names = enabled_specialists(config)
    if not names:
        return _skipped(record, config, run_log)
    node = resolve_source_node(record.graph, config.postmortem.source_node)
    assert node.binding is not None
    prompts, contracts = _hashes()
    run = PostmortemRun(
        record,
        names,
        node=node,
        binding=binding,
        config=config,
        backend=backend,
        private_dir=Path(private_dir),
        provider=provider,
        provider_factory=provider_factory,
        cancel=cancel,
        new_id=new_id,
        evidence_budget=evidence_budget,
        dry_run=dry_run,
        frozen_lessons=frozen_lessons,
        settlement_s=settlement_ms / 1000,
        limits=limits or SessionLimits(),
        on_progress=on_progress,
    )
    report = await run.run(prompts, contracts)
    if run_log is not None:
        append_report(run_log, record, report, rejections=run.rejections, binding=run.binding)
    return report
