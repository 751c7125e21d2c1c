"""What ``copilot --output-format json`` printed, and its ``--usage-output-file``, in the
toolkit's terms.

Each line of the output is one JSON event with a ``type`` and ``data``: ``assistant.message``
(``content``, and ``toolRequests`` with each call's ``toolCallId``, ``name`` and
``arguments``), ``tool.execution_start``/``tool.execution_complete`` (``success``, ``result``
or ``error``), ``session.info``, ``session.error`` and, last, ``result`` (``sessionId``,
``exitCode``). The events carry no token counts: the usage file does, per model
(``modelMetrics.<model>.usage``: ``inputTokens``, ``outputTokens``, ``cacheReadTokens``,
``cacheWriteTokens``). Ephemeral events (deltas, model calls) are skipped.

A file counts as read when a ``view`` of it came back successfully; its path is named
``root:relative/path`` against the request's folders. A tool that ran successfully on a
``path`` outside those folders is kept in ``outside_reads``: the lane fails the session.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from active_memory.agents.harness_lanes.harness_cli import UsageKeys, json_events
from active_memory.agents.harness_lanes.read_roots import ToolReads
from active_memory.agents.providers.base import TokenUsage

__all__ = ["READ_TOOL", "CopilotTranscript", "read_copilot_events", "read_usage_file"]

READ_TOOL = "view"
_MAX_USAGE_FILE = 1024 * 1024
_USAGE = UsageKeys(
    input=("inputTokens",),
    output="outputTokens",
    cache_read="cacheReadTokens",
    cache_write="cacheWriteTokens",
)


@dataclass(frozen=True, slots=True)
class CopilotTranscript:
    """One ``copilot`` run: its session, exit code, last message, calls, files read."""

    session_id: str | None
    exit_code: int | None
    answer: str | None
    failure: str | None
    tool_calls: int
    ran_tools: frozenset[str]
    read_paths: frozenset[str]
    model: str
    outside_reads: tuple[str, ...] = ()


def _data(event: Mapping[str, Any]) -> Mapping[str, Any]:
    data = event.get("data")
    return data if isinstance(data, Mapping) else {}


def read_copilot_events(
    stdout: bytes, folders: Iterable[tuple[str, str]], cwd: Path
) -> CopilotTranscript:
    """The transcript of one run from its JSON-lines output; relative paths are from ``cwd``."""
    tool_reads = ToolReads(folders, cwd)
    session_id: str | None = None
    exit_code: int | None = None
    answer: str | None = None
    failure: str | None = None
    calls: dict[str, tuple[str, Mapping[str, Any]]] = {}
    ran: set[str] = set()
    model = ""
    for event in json_events(stdout):
        kind, data = event.get("type"), _data(event)
        if kind == "assistant.message":
            requests = data.get("toolRequests")
            for request in requests if isinstance(requests, list) else []:
                if isinstance(request, Mapping) and isinstance(request.get("toolCallId"), str):
                    given = request.get("arguments")
                    arguments = given if isinstance(given, Mapping) else {}
                    calls[request["toolCallId"]] = (str(request.get("name")), arguments)
            content = data.get("content")
            if not requests and isinstance(content, str) and content.strip():
                answer = content
            if isinstance(data.get("model"), str) and "*" not in data["model"]:
                model = model or data["model"]
        elif kind == "tool.execution_complete" and data.get("success") is True:
            name, arguments = calls.get(str(data.get("toolCallId")), ("", {}))
            ran.add(name)
            path = arguments.get("path")
            if isinstance(path, str):
                tool_reads.named([path])
            if name == READ_TOOL and isinstance(path, str):
                tool_reads.showed(path)
        elif kind == "session.error":
            said = data.get("message")
            failure = said if isinstance(said, str) else failure
        elif kind == "result":
            session_id = event.get("sessionId") if isinstance(event.get("sessionId"), str) else None
            code = event.get("exitCode")
            exit_code = code if isinstance(code, int) else None
    return CopilotTranscript(
        session_id=session_id,
        exit_code=exit_code,
        answer=answer,
        failure=failure,
        tool_calls=len(calls),
        ran_tools=frozenset(ran - {""}),
        read_paths=tool_reads.read_paths,
        model=model,
        outside_reads=tool_reads.outside_reads,
    )


def read_usage_file(path: Path) -> TokenUsage:
    """The tokens of every model in a ``--usage-output-file``; none when it is missing."""
    try:
        with path.open("rb") as handle:
            document = json.loads(handle.read(_MAX_USAGE_FILE))
    except (OSError, ValueError):
        return TokenUsage()
    metrics = document.get("modelMetrics") if isinstance(document, Mapping) else None
    total = TokenUsage()
    for entry in metrics.values() if isinstance(metrics, Mapping) else []:
        usage = entry.get("usage") if isinstance(entry, Mapping) else None
        if isinstance(usage, Mapping):
            total += _USAGE.tokens(usage)
    return total
