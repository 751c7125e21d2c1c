"""One run record from a converted session, the same shape whichever harness wrote it.

A one-node graph named for the harness (kind worker; binding: the session's provider and the
main conversation's most used model, lane: the harness), one execution per lane (main first,
then by start time), the receipt ring and a runtime that says what the source saw: every model
used, the true tool-call count, unreadable lines and each cut. The folder is written with
:func:`dump_run_record` and loaded back, so a session reads exactly like a host's record.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from active_memory.errors import RunRecordError
from active_memory.evidence.sources.lanes import Lane, ReceiptRing, SessionWriter, SourceCuts
from active_memory.models.runs import (
    AuthoredGraph,
    Binding,
    Checkout,
    Execution,
    GraphNode,
    RunRecord,
    dump_run_record,
    load_run_record,
)
from active_memory.repository import local_repository_key

if TYPE_CHECKING:
    from active_memory.harnesses import HarnessRow

__all__ = ["SessionFacts", "assemble_record", "provider_for_model"]


@dataclass(slots=True)
class SessionFacts:
    """What a source learnt about the session beyond its lanes."""

    harness: str
    provider: str
    run_prefix: str
    session_id: str | None = None
    cwd: str | None = None
    version: str | None = None
    initial_input: str | None = None
    lines_unreadable: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    # The provider each model was served by, for harnesses that switch between providers.
    model_providers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, row: HarnessRow) -> SessionFacts:
        """A session's facts before reading it: the harness's lane names the node and the
        binding's lane, its name prefixes the run id."""
        return cls(harness=row.lane, provider=row.provider or "unknown", run_prefix=row.name)


def provider_for_model(model: str | None, fallback: str) -> str:
    """The API family a model name belongs to, for harnesses that serve several."""
    name = (model or "").lower()
    if "claude" in name:
        return "anthropic"
    if name.startswith(("gpt", "o1", "o3", "o4", "codex")):
        return "openai"
    return fallback


def _model(main: Lane, lanes: list[Lane]) -> str | None:
    if main.models:
        return main.models.most_common(1)[0][0]
    everyone: Counter[str] = Counter()
    for lane in lanes:
        everyone.update(lane.models)
    return everyone.most_common(1)[0][0] if everyone else None


def assemble_record(
    facts: SessionFacts,
    writer: SessionWriter,
    receipts: ReceiptRing,
    cuts: SourceCuts,
    target: Path,
    source_file: Path,
) -> RunRecord:
    """Write the record folder ``target`` and load it back; errors name ``source_file``."""
    try:
        return _assemble(facts, writer, receipts, cuts, target)
    except RunRecordError as error:
        # A session value the record refuses (an agent id with a space, say): name the session.
        if error.source is not None:
            raise
        raise RunRecordError(error.path, error.problem, source=str(source_file)) from None


def _assemble(
    facts: SessionFacts,
    writer: SessionWriter,
    receipts: ReceiptRing,
    cuts: SourceCuts,
    target: Path,
) -> RunRecord:
    main = writer.lanes["main"]
    others = [lane for lane in writer.lanes.values() if lane is not main and not lane.warmup]
    lanes = [main, *sorted(others, key=lambda lane: (lane.started or 0, lane.order))]
    model = _model(main, lanes)
    provider = facts.model_providers.get(model or "", facts.provider)
    node = facts.harness
    # A session that names no model leaves the node unbound: the postmortem then asks for
    # --provider and --model rather than send a made-up model name to the provider.
    binding = None if model is None else Binding(provider=provider, model=model, lane=facts.harness)
    raw_node: dict[str, Any] = {"id": node, "kind": "worker"}
    if binding is not None:
        raw_node["binding"] = {"provider": provider, "model": model, "lane": facts.harness}
    raw = {"name": node, "nodes": [raw_node]}
    executions = tuple(
        Execution(
            id=lane.id,
            node_id=node,
            occurrence=index + 1,
            attempt=1,
            status=lane.status,
            started_ms=lane.started or 0,
            ended_ms=lane.ended,
            conversation_id=lane.conversation,
            completion=lane.completion,
            transcript=writer.path(lane),
            unavailable=lane.unavailable,
        )
        for index, lane in enumerate(lanes)
    )
    models: Counter[str] = Counter()
    for lane in lanes:
        models.update(lane.models)
    session = facts.session_id or "session"
    runtime: dict[str, Any] = {
        "source": facts.harness,
        "session_id": session,
        "version": facts.version,
        "cwd": facts.cwd,
        **facts.extra,
        "models": sorted(models),
        "subagents": len(lanes) - 1,
        "subagents_unavailable": sorted(lane.id for lane in lanes if lane.unavailable),
        "warmup_agents": sum(lane.warmup for lane in writer.lanes.values()),
        "lines_unreadable": facts.lines_unreadable,
        "receipts_total": receipts.made,
        "source_cuts": cuts.as_runtime(),
    }
    if binding is None:
        runtime["model_note"] = facts.extra.get("model_note") or "the session names no model"
    record = RunRecord(
        run_id=f"{facts.run_prefix}-{session}"[:128],
        graph=AuthoredGraph(
            name=node,
            nodes=(GraphNode(id=node, kind="worker", binding=binding),),
            raw=raw,
        ),
        runtime=runtime,
        executions=executions,
        checkout=_checkout(facts.cwd),
        initial_input=facts.initial_input,
        receipts=receipts.kept(),
    )
    dump_run_record(record, target)
    return load_run_record(target)


def _checkout(cwd: str | None) -> Checkout | None:
    """The checkout a session's working directory names; None without one, or when it holds a
    NUL character, which no folder's path can (a damaged or hostile log: the session is still
    read, with its working directory kept in the runtime facts as the log gave it)."""
    if not cwd or "\0" in cwd:
        return None
    return Checkout(path=Path(cwd), repository=local_repository_key(cwd))
