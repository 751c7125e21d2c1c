"""The run record: what a host hands over after its graph settles.

It holds the authored graph (with bindings) and its hash, the nonsecret runtime, every execution
with its identity (node, occurrence, attempt), tool receipts, the delivery manifest (which lesson
``id@revision`` reached which node and conversation, and how), the repository checkout and the
latched outcome. Transcripts stay in JSONL files and are read lazily by ``evidence/``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias

__all__ = [
    "AGENT_KINDS",
    "AuthoredGraph",
    "Binding",
    "Checkout",
    "Delivery",
    "Execution",
    "ExecutionStatus",
    "GraphNode",
    "Outcome",
    "RunRecord",
    "ToolReceipt",
    "canonical_json",
    "graph_hash",
]

ExecutionStatus: TypeAlias = Literal["completed", "error", "timeout", "crashed", "cancelled"]
EXECUTION_STATUSES: tuple[str, ...] = ("completed", "error", "timeout", "crashed", "cancelled")
# Node kinds whose nodes run a model; other kinds (map, join, choice, tool…) are structure.
AGENT_KINDS = frozenset({"worker", "verifier"})


def canonical_json(value: Any) -> str:
    """Sorted keys, no insignificant whitespace, UTF-8 kept: the encoding hashes are taken over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def graph_hash(authored: Any) -> str:
    """sha256 hex over the canonical encoding of the authored graph exactly as written."""
    return hashlib.sha256(canonical_json(authored).encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Binding:
    """How an agent node runs: plain data, resolved through the provider registry."""

    provider: str
    model: str
    effort: str | None = None
    lane: str | None = None
    connections: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GraphNode:
    id: str
    kind: str
    binding: Binding | None = None
    instructions: str = ""
    output_contract: Any = None

    @property
    def is_agent(self) -> bool:
        return self.binding is not None and self.kind in AGENT_KINDS


@dataclass(frozen=True, slots=True)
class AuthoredGraph:
    """The graph as authored. ``raw`` is the exact authored JSON the hash is taken over."""

    name: str
    nodes: tuple[GraphNode, ...]
    raw: Any = None

    @property
    def hash(self) -> str:
        return graph_hash(self.raw)

    def node(self, node_id: str) -> GraphNode | None:
        for node in self.nodes:
            if node.id == node_id:
                return node
        return None


@dataclass(frozen=True, slots=True)
class Checkout:
    """The repository checkout the run worked in; ``commit`` is the recorded HEAD if known."""

    path: Path
    repository: str
    commit: str | None = None


@dataclass(frozen=True, slots=True)
class Execution:
    """One execution of a node. Occurrence (which visit, e.g. map item) and attempt (retry)
    are part of its identity: shared node names alone never merge executions."""

    id: str
    node_id: str
    occurrence: int
    attempt: int
    status: ExecutionStatus
    started_ms: int
    ended_ms: int | None
    conversation_id: str | None = None
    completion: str | None = None
    transcript: Path | None = None
    # Copied from an earlier run's history (resume, backfill): visible to the evidence builder,
    # but never current-run evidence for admission.
    imported: bool = False


@dataclass(frozen=True, slots=True)
class ToolReceipt:
    """A bounded record of one tool call: never arguments or results, never success claims."""

    seq: int
    execution: str | None
    time_ms: int
    tool: str
    paths: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "execution": self.execution,
            "time_ms": self.time_ms,
            "tool": self.tool,
            "paths": list(self.paths),
        }


@dataclass(frozen=True, slots=True)
class Delivery:
    """One lesson revision handed to one conversation: through a hook or the node prompt."""

    lesson_id: str
    revision: int
    node_id: str
    conversation_id: str
    channel: Literal["hook", "prompt"]
    execution: str | None = None
    time_ms: int | None = None

    @property
    def key(self) -> str:
        return f"{self.lesson_id}@{self.revision}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "lesson_id": self.lesson_id,
            "revision": self.revision,
            "node_id": self.node_id,
            "conversation_id": self.conversation_id,
            "channel": self.channel,
            "execution": self.execution,
            "time_ms": self.time_ms,
        }


@dataclass(frozen=True, slots=True)
class Outcome:
    """The main graph's result, latched durably before any postmortem work."""

    status: Literal["succeeded", "failed", "cancelled"]
    latched_ms: int
    summary: str | None = None


@dataclass(frozen=True, slots=True)
class RunRecord:
    run_id: str
    graph: AuthoredGraph
    runtime: dict[str, Any]
    executions: tuple[Execution, ...]
    outcome: Outcome | None = None
    checkout: Checkout | None = None
    initial_input: str | None = None
    receipts: tuple[ToolReceipt, ...] = ()
    deliveries: tuple[Delivery, ...] = ()
    base_dir: Path | None = field(default=None, compare=False)

    @property
    def graph_hash(self) -> str:
        return self.graph.hash

    def execution(self, execution_id: str) -> Execution | None:
        for execution in self.executions:
            if execution.id == execution_id:
                return execution
        return None
