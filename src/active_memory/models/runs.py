"""The run record: what a host hands over after its graph settles.

It holds the authored graph (with bindings) and its hash, the nonsecret runtime, every execution
with its identity (node, occurrence, attempt), tool receipts, the delivery manifest (which lesson
``id@revision`` reached which node and conversation, and how), the repository checkout and the
latched outcome. Transcripts stay in JSONL files and are read lazily by ``evidence/``.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias

__all__ = [
    "AGENT_KINDS",
    "RECORD_FORMAT",
    "RUN_FILE",
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
    "dump_run_record",
    "graph_hash",
    "load_run_record",
    "parse_run_record",
]

RECORD_FORMAT = "active-memory/run-record@1"
RUN_FILE = "run.json"

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

    def to_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "model": self.model,
            "effort": self.effort,
            "lane": self.lane,
            "connections": list(self.connections),
        }


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "binding": None if self.binding is None else self.binding.to_dict(),
            "instructions": self.instructions,
            "output_contract": self.output_contract,
        }


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

    def to_raw(self) -> Any:
        """The authored JSON: ``raw`` when loaded, else one built from the nodes."""
        if self.raw is not None:
            return self.raw
        return {"name": self.name, "nodes": [node.to_dict() for node in self.nodes]}


@dataclass(frozen=True, slots=True)
class Checkout:
    """The repository checkout the run worked in; ``commit`` is the recorded HEAD if known."""

    path: Path
    repository: str
    commit: str | None = None

    def to_dict(self, relative_to: Path | None = None) -> dict[str, Any]:
        return {
            "path": _path_text(self.path, relative_to),
            "repository": self.repository,
            "commit": self.commit,
        }


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

    @property
    def ref(self) -> str:
        """The evidence reference specialists cite: ``exec:<id>``."""
        return f"exec:{self.id}"

    def to_dict(self, relative_to: Path | None = None) -> dict[str, Any]:
        return {
            "id": self.id,
            "node": self.node_id,
            "occurrence": self.occurrence,
            "attempt": self.attempt,
            "status": self.status,
            "started_ms": self.started_ms,
            "ended_ms": self.ended_ms,
            "conversation_id": self.conversation_id,
            "completion": self.completion,
            "transcript": (
                None if self.transcript is None else _path_text(self.transcript, relative_to)
            ),
        }


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

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "latched_ms": self.latched_ms, "summary": self.summary}


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

    def to_dict(self, relative_to: Path | None = None) -> dict[str, Any]:
        """The run.json form; paths relative to ``relative_to`` (default: ``base_dir``)."""
        base = self.base_dir if relative_to is None else relative_to
        return {
            "format": RECORD_FORMAT,
            "run_id": self.run_id,
            "outcome": None if self.outcome is None else self.outcome.to_dict(),
            "checkout": None if self.checkout is None else self.checkout.to_dict(base),
            "initial_input": self.initial_input,
            "graph_hash": self.graph_hash,
            "graph": self.graph.to_raw(),
            "runtime": self.runtime,
            "executions": [execution.to_dict(base) for execution in self.executions],
            "receipts": [receipt.to_dict() for receipt in self.receipts],
            "deliveries": [delivery.to_dict() for delivery in self.deliveries],
        }


def _path_text(path: Path, relative_to: Path | None) -> str:
    """Relative (POSIX) when ``path`` lies under ``relative_to``, absolute otherwise."""
    if relative_to is not None:
        try:
            return Path(os.path.abspath(path)).relative_to(os.path.abspath(relative_to)).as_posix()
        except ValueError:
            pass
    return os.path.abspath(path) if path.is_absolute() or relative_to is not None else str(path)


# The native format's reader and writer live with the other sources in evidence/sources/native.py;
# importing them lazily keeps this module the small type module every layer imports.
def load_run_record(path: str | os.PathLike[str]) -> RunRecord:
    """Load a record folder (or its ``run.json``); transcripts stay on disk, read lazily.

    Raises :class:`~active_memory.errors.RunRecordError` naming the bad field
    (``executions[3].node``): the schema is checked first, then the links between sections.
    """
    from active_memory.evidence.sources import native

    return native.load_run_record(path)


def parse_run_record(data: Any, base_dir: Path, *, source: str | None = None) -> RunRecord:
    """Check ``data`` (a run.json object whose paths are relative to ``base_dir``) and build it."""
    from active_memory.evidence.sources import native

    return native.parse_run_record(data, base_dir, source=source)


def dump_run_record(record: RunRecord, folder: str | os.PathLike[str]) -> Path:
    """Write ``record`` as ``folder/run.json`` plus its transcripts; returns the run.json path."""
    from active_memory.evidence.sources import native

    return native.dump_run_record(record, folder)
