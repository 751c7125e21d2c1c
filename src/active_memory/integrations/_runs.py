"""What the integrations share: executions and their transcripts, the record, the settled run.

A :class:`RunRecorder` belongs to one open run and one authored graph. Each node invocation is
an :class:`ExecutionLog` (its node, occurrence, attempt and conversation); what the framework
reports of it goes to a native transcript (one JSON object ``{"role", "tool"?, "receipt"?,
"time_ms", "text"}`` a line, what the evidence builder reads) in the run's private state
folder. Once the graph settles, :meth:`RunRecorder.settle` latches the outcome, builds the
record and runs the postmortem; the delivery manifest and the receipts come from the run itself.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from active_memory.errors import ConfigError
from active_memory.evidence.budget import cut_text
from active_memory.models.runs import (
    AGENT_KINDS,
    AuthoredGraph,
    Binding,
    Execution,
    ExecutionStatus,
    GraphNode,
    Outcome,
    OutcomeStatus,
    RunRecord,
)
from active_memory.private_files import make_private_dir

if TYPE_CHECKING:
    from active_memory.agents.providers.base import ModelProvider
    from active_memory.host import ActiveRun
    from active_memory.postmortem.binding import BindingOverride
    from active_memory.postmortem.options import ProviderFactory
    from active_memory.postmortem.report import PostmortemReport

__all__ = [
    "ExecutionLog",
    "FrameworkMemory",
    "RunRecorder",
    "authored_graph",
    "inherited_override",
    "missing_extra",
    "now_ms",
]

# One transcript line keeps at most this much text; the evidence builder cuts further.
LINE_TEXT_BYTES = 64 * 1024


def now_ms() -> int:
    return int(time.time() * 1000)


def missing_extra(module: str, extra: str) -> str:
    """What to say when a framework package is missing: the install extra that brings it."""
    return f"the {module} package is not installed; pip install 'active-memory[{extra}]'"


def _file_name(execution_id: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in execution_id)
    return f"{safe[:96]}.jsonl"


@dataclass(eq=False)  # one log per execution: compared by identity
class ExecutionLog:
    """One execution of one node being recorded; ``say`` appends to its transcript."""

    id: str
    node_id: str
    occurrence: int
    attempt: int
    conversation_id: str | None
    transcript: Path
    started_ms: int = field(default_factory=now_ms, init=False)
    ended_ms: int | None = field(default=None, init=False)
    status: ExecutionStatus | None = field(default=None, init=False)
    completion: str | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def say(
        self, role: str, text: str, tool: str | None = None, *, receipt: int | None = None
    ) -> None:
        """Append one transcript line: ``assistant`` text or tool use, ``tool`` result, ``user``;
        ``receipt`` is the seq of the run's tool receipt for this call (the label a specialist
        cites it by)."""
        # Role, tool, receipt and time before the text: a line cut short still says whose it was.
        line: dict[str, Any] = {"role": role}
        if tool:
            line["tool"] = tool
        if receipt is not None:
            line["receipt"] = receipt
        line["time_ms"] = now_ms()
        line["text"] = cut_text(text, LINE_TEXT_BYTES)[0]
        encoded = json.dumps(line, ensure_ascii=False) + "\n"
        with self._lock:
            # 0600: a transcript holds whatever the tools returned.
            descriptor = os.open(self.transcript, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            with os.fdopen(descriptor, "a", encoding="utf-8") as writer:
                writer.write(encoded)

    def finish(self, status: ExecutionStatus = "completed", completion: str | None = None) -> None:
        """The execution ended; ``completion`` is its final answer (the last text if omitted)."""
        self.status = status
        self.ended_ms = now_ms()
        if completion is not None:
            self.completion = cut_text(completion, LINE_TEXT_BYTES)[0]

    def execution(self) -> Execution:
        ended = self.ended_ms
        return Execution(
            id=self.id,
            node_id=self.node_id,
            occurrence=self.occurrence,
            attempt=self.attempt,
            # Still running when the record was built: the graph did not settle it.
            status=self.status or "cancelled",
            started_ms=self.started_ms,
            ended_ms=ended if ended is None else max(ended, self.started_ms),
            conversation_id=self.conversation_id,
            completion=self.completion,
            transcript=self.transcript if self.transcript.exists() else None,
        )


class _Settling:
    """:meth:`settle`, written once for :class:`RunRecorder` and every framework memory."""

    def _settled(self) -> RunRecorder:
        """The recorder whose run is latched and whose record the postmortem reads."""
        raise NotImplementedError

    def _postmortem_override(self, override: BindingOverride | None) -> BindingOverride | None:
        """The binding override the postmortem runs under: the caller's, unless a framework
        knows better (the model a node's session reported)."""
        return override

    async def settle(
        self,
        status: OutcomeStatus | Outcome,
        *,
        summary: str | None = None,
        provider: ModelProvider | None = None,
        provider_factory: ProviderFactory | None = None,
        override: BindingOverride | None = None,
        new_id: Callable[[], str] | None = None,
        dry_run: bool = False,
    ) -> PostmortemReport:
        """The graph settled: latch ``status`` durably, then run the postmortem of the record.

        The specialists inherit the source node's binding (``globalAgents.postmortem``), as
        ``override`` changes it; the provider sessions come from the registry unless
        ``provider`` or ``provider_factory`` is given.
        """
        recorder = self._settled()
        # Before the latch: an override that cannot be resolved (a bad sourceNode) fails the
        # call before anything is durable.
        override = self._postmortem_override(override)
        outcome = (
            status
            if isinstance(status, Outcome)
            else Outcome(status=status, latched_ms=now_ms(), summary=summary)
        )
        recorder.end_open(outcome.status)
        recorder.run.latch_outcome(outcome)
        return await recorder.run.postmortem(
            recorder.record(),
            provider=provider,
            provider_factory=provider_factory,
            override=override,
            new_id=new_id,
            dry_run=dry_run,
        )


class RunRecorder(_Settling):
    """The executions of one run over one authored graph, and the record they make."""

    def __init__(
        self,
        run: ActiveRun,
        graph: AuthoredGraph,
        *,
        runtime: Mapping[str, JsonValue] | None = None,
    ) -> None:
        expected = run.identity.graph_hash
        if expected is not None and expected != graph.hash:
            raise ConfigError(
                "graph",
                f"the authored graph hashes to {graph.hash!r}, but the run was opened with "
                f"graph_hash {expected!r}; open it with RunIdentity(..., graph_hash=graph.hash)",
            )
        self.run = run
        self.graph = graph
        self.runtime: dict[str, JsonValue] = dict(runtime or {})
        self.initial_input: str | None = None
        self._executions: list[ExecutionLog] = []
        self._by_id: dict[str, ExecutionLog] = {}
        self._occurrences: dict[str, int] = {}
        self._lock = threading.Lock()
        self._folder: Path | None = None

    @property
    def executions(self) -> tuple[ExecutionLog, ...]:
        with self._lock:
            return tuple(self._executions)

    def get(self, execution_id: str) -> ExecutionLog | None:
        with self._lock:
            return self._by_id.get(execution_id)

    def start(
        self,
        node_id: str,
        *,
        conversation_id: str | None = None,
        execution_id: str | None = None,
        occurrence: int | None = None,
        attempt: int = 1,
    ) -> ExecutionLog:
        """A new execution of ``node_id``: its next occurrence unless one is given. The id is
        ``<node>-<occurrence>-<attempt>`` unless given."""
        if self.graph.node(node_id) is None:
            known = ", ".join(node.id for node in self.graph.nodes)
            raise ConfigError("node", f"{node_id!r} is not a node of the graph; known: {known}")
        with self._lock:
            if occurrence is None:
                occurrence = self._occurrences.get(node_id, 0) + 1
            self._occurrences[node_id] = max(self._occurrences.get(node_id, 0), occurrence)
            ident = execution_id or f"{node_id}-{occurrence}-{attempt}"
            if ident in self._by_id:
                raise ConfigError("execution", f"execution {ident!r} was already started")
            if self._folder is None:
                self._folder = make_private_dir(self.run.state_dir / "transcripts")
            log = ExecutionLog(
                ident, node_id, occurrence, attempt, conversation_id,
                self._folder / _file_name(ident),
            )  # fmt: skip
            self._executions.append(log)
            self._by_id[ident] = log
        return log

    def end_open(self, outcome: OutcomeStatus) -> None:
        """End the executions nobody ended (a host that stopped reading a stream) with the run:
        ``error`` when it failed, ``cancelled`` otherwise."""
        status: ExecutionStatus = "error" if outcome == "failed" else "cancelled"
        for log in self.executions:
            if log.status is None:
                log.finish(status)

    def record(self) -> RunRecord:
        """The run record so far: the graph, every execution, the run's id and runtime."""
        return RunRecord(
            run_id=self.run.identity.run_id,
            graph=self.graph,
            runtime=self.runtime,
            initial_input=self.initial_input,
            executions=tuple(log.execution() for log in self.executions),
        )

    def _settled(self) -> RunRecorder:
        return self


class FrameworkMemory(_Settling):
    """What each framework's memory is built on: the open run, the :class:`RunRecorder` of its
    executions (``source`` names the framework in the record's runtime) and :meth:`settle`."""

    def __init__(self, run: ActiveRun, graph: AuthoredGraph, *, source: str) -> None:
        self.active_run = run
        self.recorder = RunRecorder(run, graph, runtime={"source": source})

    def _settled(self) -> RunRecorder:
        return self.recorder


def authored_graph(
    name: str,
    roles: Mapping[str, str],
    bindings: Mapping[str, Binding] | Binding | None = None,
    *,
    edges: Sequence[tuple[str, str]] = (),
    extra: Mapping[str, JsonValue] | None = None,
) -> AuthoredGraph:
    """An authored graph of ``roles`` (node id to kind: ``worker``, ``verifier`` or structure)
    in order, agent nodes bound to ``bindings`` (one for all, or per node), with ``edges`` and
    any ``extra`` keys kept in the hashed document."""
    nodes = []
    for node_id, kind in roles.items():
        binding = bindings.get(node_id) if isinstance(bindings, Mapping) else bindings
        agent = kind in AGENT_KINDS
        nodes.append(GraphNode(id=node_id, kind=kind, binding=binding if agent else None))
    raw: dict[str, JsonValue] = {
        "name": name,
        "nodes": [node.model_dump(mode="json") for node in nodes],
    }
    if edges:
        raw["edges"] = [{"source": source, "target": target} for source, target in edges]
    for key, value in (extra or {}).items():
        raw.setdefault(key, value)
    return AuthoredGraph(name=name, nodes=tuple(nodes), raw=raw)


def inherited_override(
    recorder: RunRecorder, models: Mapping[str, str], override: BindingOverride | None
) -> BindingOverride | None:
    """The override that makes the postmortem inherit the model the source node's session
    actually ran (``models``: node id to model reported), unless the caller chose one."""
    from active_memory.postmortem.binding import BindingOverride, resolve_source_node

    if override is not None and override.model is not None:
        return override
    source = resolve_source_node(recorder.graph, recorder.run.runtime.postmortem.source_node)
    ran = models.get(source.id)
    if ran is None or source.binding is None or ran == source.binding.model:
        return override
    return BindingOverride(provider=override.provider if override else None, model=ran)
