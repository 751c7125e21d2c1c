"""A GitHub Copilot CLI session as a run record.

Input: ``~/.copilot/session-state/<id>/events.jsonl`` (or the older ``<id>.jsonl``): one event
per line, ``{type, id, timestamp, parentId, data}``. Read: ``session.start`` (sessionId,
copilotVersion, context {cwd, gitRoot, branch, repository}, selectedModel),
``session.model_change`` (newModel), ``user.message`` (content), ``assistant.message``
(content, toolRequests, model), ``tool.execution_start`` (toolCallId, toolName, arguments,
parentToolCallId), ``tool.execution_complete`` (success, result.content, error, model),
``subagent.started``/``completed``/``failed`` (toolCallId, agentName), ``abort``,
``session.error``. Reasoning events are not read.

One execution for the main conversation and one per subagent: events whose
``parentToolCallId`` is a subagent's tool call belong to it. Receipts come from
``tool.execution_start`` (the tool name and the paths in its arguments).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from active_memory.evidence.sources.assemble import provider_for_model
from active_memory.evidence.sources.converter import SessionConverter
from active_memory.evidence.sources.lanes import BoundedMap, Lane
from active_memory.evidence.sources.peek import Look, Scan, dig, text_of
from active_memory.evidence.sources.timestamps import iso_ms
from active_memory.evidence.sources.tool_paths import argument_paths
from active_memory.harnesses import harness_row
from active_memory.models.runs import RunRecord, canonical_json

__all__ = ["LOADER", "NODE_ID", "PEEK", "load_copilot_session"]

_ROW = harness_row("copilot")
NODE_ID = _ROW.lane


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("content", "detailedContent", "message", "text"):
            if isinstance(value.get(key), str):
                return str(value[key])
    if isinstance(value, list):
        return "\n".join(_text(item) for item in value)
    return "" if value is None else canonical_json(value)


class _Converter(SessionConverter):
    def __init__(self, workdir: Path) -> None:
        super().__init__(_ROW, workdir)
        self.model: str | None = None
        self.tool_names = BoundedMap(1024)
        self.subagents: dict[str, str] = {}  # the launching tool call id -> lane id

    def lane_of(self, data: dict[str, Any]) -> Lane:
        parent = data.get("parentToolCallId")
        lane_id = self.subagents.get(parent) if isinstance(parent, str) else None
        if lane_id is None:
            return self.main
        return self.writer.lane(lane_id, f"{self.facts.session_id or 'copilot'}/{lane_id}")

    def entry(self, value: dict[str, Any], *, first: bool) -> None:
        data = value.get("data")
        self.event(str(value.get("type")), data if isinstance(data, dict) else {},
                   iso_ms(value.get("timestamp")))  # fmt: skip

    def event(self, kind: str, data: dict[str, Any], when: int | None) -> None:
        if kind == "session.start":
            self.start(data, when)
            return
        if kind == "session.model_change":
            self.switch(data.get("newModel"))
            return
        lane = self.lane_of(data)
        lane.saw(when)
        if kind == "user.message":
            text = _text(data.get("content"))
            self.writer.write(lane, "user", text, when)
            lane.interrupted = False
            if lane.id == "main" and self.facts.initial_input is None and text.strip():
                self.facts.initial_input = text
        elif kind == "assistant.message":
            text = _text(data.get("content"))
            # A session that never reports a model change still names it on each answer.
            self.switch(data.get("model"))
            lane.used(self.model)
            if text.strip():
                self.writer.write(lane, "assistant", text, when)
                lane.finish(text)
        elif kind == "tool.execution_start":
            self.tool_start(lane, data, when)
        elif kind == "tool.execution_complete":
            self.switch(data.get("model"))
            tool = self.tool_names.get(str(data.get("toolCallId")))
            failed = data.get("success") is False
            body = data.get("error") if failed and data.get("error") else data.get("result")
            self.writer.write(lane, "tool", ("[error] " if failed else "") + _text(body), when,
                              tool)  # fmt: skip
        elif kind == "subagent.started":
            self.subagent(data, when)
        elif kind in ("subagent.completed", "subagent.failed"):
            agent = self.subagents.get(str(data.get("toolCallId")))
            if agent is not None:
                self.writer.lanes[agent].failed = kind == "subagent.failed"
        elif kind == "abort":
            lane.interrupted = True
        elif kind == "session.error":
            lane.failed = True
        elif kind in ("session.compaction_complete", "session.truncation"):
            self.writer.write(lane, "system", f"[{kind}]", when)

    def start(self, data: dict[str, Any], when: int | None) -> None:
        facts = self.facts
        facts.session_id = facts.session_id or text_of(data.get("sessionId"))
        facts.version = text_of(data.get("copilotVersion")) or facts.version
        context = data.get("context")
        if isinstance(context, dict):
            facts.cwd = facts.cwd or text_of(context.get("cwd"))
            facts.extra["git_branch"] = text_of(context.get("branch"))
            facts.extra["repository"] = text_of(context.get("repository"))
        self.switch(data.get("selectedModel"))
        self.main.saw(when if when is not None else iso_ms(data.get("startTime")))

    def switch(self, model: Any) -> None:
        if isinstance(model, str) and model:
            self.model = model[:128]
            self.facts.provider = provider_for_model(self.model, self.facts.provider)
            self.facts.model_providers[self.model] = self.facts.provider

    def tool_start(self, lane: Lane, data: dict[str, Any], when: int | None) -> None:
        name = str(data.get("toolName") or data.get("mcpToolName") or "tool")[:128]
        self.tool_names.remember(str(data.get("toolCallId")), name)
        given = data.get("arguments")
        arguments: dict[str, Any] = given if isinstance(given, dict) else {}
        seq = self.receipts.add(lane.id, when, name, argument_paths(arguments, self.facts.cwd))
        self.writer.write(lane, "assistant", canonical_json(arguments), when, tool=name,
                          receipt=seq)  # fmt: skip
        lane.used(self.model)

    def subagent(self, data: dict[str, Any], when: int | None) -> None:
        call = data.get("toolCallId")
        if not isinstance(call, str) or call in self.subagents:
            return
        given = str(data.get("agentName") or "agent")[:48]
        name = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_") else "_" for ch in given)
        lane_id = f"agent-{name}-{len(self.subagents) + 1}"
        self.subagents[call] = lane_id
        lane = self.writer.lane(lane_id, f"{self.facts.session_id or 'copilot'}/{lane_id}")
        lane.saw(when)
        task = data.get("agentDescription") or data.get("prompt")
        if isinstance(task, str) and task:
            self.writer.write(lane, "user", task, when)


def load_copilot_session(
    path: str | os.PathLike[str], workdir: str | os.PathLike[str]
) -> RunRecord:
    """Convert the Copilot CLI events at ``path`` into a record folder ``workdir``, loaded."""
    events = Path(path)
    converter = _Converter(Path(workdir))
    converter.read_session(events)
    # The current layout names the session by its folder, the older one by the file.
    fallback = events.parent.name if events.name == "events.jsonl" else events.stem
    return converter.record(
        events, session_id=fallback, empty="has no messages or tool calls of a Copilot CLI session"
    )


# What the harness table finds here (evidence/sources/__init__.py).
LOADER = load_copilot_session


def _peek(value: dict[str, Any], scan: Scan) -> Look:
    """The inventory's look at one event: ``session.start`` names the id and cwd."""
    data = value.get("data")
    if value.get("type") == "session.start":
        scan.session_id = scan.session_id or text_of(dig(data, "sessionId"))
        scan.cwd = scan.cwd or text_of(dig(data, "context", "cwd"))
    return Look(dig(data, "newModel") or dig(data, "model") or dig(data, "selectedModel"))


PEEK = _peek
