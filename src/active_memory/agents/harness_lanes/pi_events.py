"""What ``pi -p --mode json`` printed, in the toolkit's terms.

Each line is one JSON event: ``session`` first (its ``id``, which ``--session`` resumes), then
``agent_start``, ``turn_start``/``turn_end``, ``message_start``/``message_update``/
``message_end`` (a ``message`` with a ``role``: an ``assistant`` message holds ``text`` and
``toolCall`` blocks, its ``usage`` (``input``, ``output``, ``cacheRead``, ``cacheWrite``:
input without the cache, the cache apart), ``model``, ``stopReason`` (``stop``, ``toolUse``,
``error``…) and ``errorMessage``), ``tool_execution_start``/``tool_execution_end``
(``toolCallId``, ``toolName``, ``args``, ``isError``) and ``agent_end``.

A file counts as read when a ``read`` of it came back without an error; its path (absolute or
relative to the working directory) is named ``root:relative/path`` against the request's
folders. pi's tools take any path: a tool that ran without an error on a ``path`` outside those
folders is kept in ``outside_reads``, and the lane fails the session.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from active_memory.agents.harness_lanes.harness_cli import UsageKeys, json_events
from active_memory.agents.harness_lanes.read_roots import ToolReads
from active_memory.agents.providers.base import TokenUsage

__all__ = ["READ_TOOL", "PiTranscript", "read_pi_events"]

READ_TOOL = "read"
_USAGE = UsageKeys(
    input=("input", "cacheRead", "cacheWrite"),
    output="output",
    cache_read="cacheRead",
    cache_write="cacheWrite",
)


@dataclass(frozen=True, slots=True)
class PiTranscript:
    """One ``pi -p`` run: its session, last answer, failure, usage, calls and files read."""

    session_id: str | None
    answer: str | None
    finished: bool
    failure: str | None
    usage: TokenUsage
    tool_calls: int
    ran_tools: frozenset[str]
    read_paths: frozenset[str]
    model: str
    outside_reads: tuple[str, ...] = ()


def _text(message: Mapping[str, Any]) -> str:
    """The text blocks of a message, joined."""
    content = message.get("content")
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, Mapping) and block.get("type") == "text":
            text = block.get("text")
            parts.append(text if isinstance(text, str) else "")
    return "".join(parts)


def read_pi_events(stdout: bytes, folders: Iterable[tuple[str, str]], cwd: Path) -> PiTranscript:
    """The transcript of one run from its JSON-lines output."""
    tool_reads = ToolReads(folders, cwd)
    session_id: str | None = None
    answer: str | None = None
    finished = False
    failure: str | None = None
    calls = 0
    total = TokenUsage()
    ran: set[str] = set()
    arguments: dict[str, Mapping[str, Any]] = {}  # toolCallId -> the call's args
    model = ""
    for event in json_events(stdout):
        kind = event.get("type")
        message = event.get("message")
        if kind == "session" and isinstance(event.get("id"), str):
            session_id = event["id"]
        elif kind == "message_end" and isinstance(message, Mapping):
            if message.get("role") != "assistant":
                continue
            usage = message.get("usage")
            if isinstance(usage, Mapping):
                total += _USAGE.tokens(usage)
            if isinstance(message.get("model"), str):
                model = model or message["model"]
            if message.get("stopReason") == "error":
                said = message.get("errorMessage")
                failure = said if isinstance(said, str) else "the model call failed"
            elif message.get("stopReason") == "stop":
                answer = _text(message).strip() or None
        elif kind == "tool_execution_start":
            calls += 1
            args = event.get("args")
            arguments[str(event.get("toolCallId"))] = args if isinstance(args, Mapping) else {}
        elif kind == "tool_execution_end" and event.get("isError") is False:
            name = str(event.get("toolName"))
            ran.add(name)
            path = arguments.get(str(event.get("toolCallId")), {}).get("path")
            if isinstance(path, str):
                # pi drops a leading "@" from a path before it resolves it.
                tool_reads.named([path.removeprefix("@")])
            if name == READ_TOOL and isinstance(path, str):
                tool_reads.showed(path)
        elif kind == "agent_end":
            finished = True
    return PiTranscript(
        session_id=session_id,
        answer=answer,
        finished=finished,
        failure=failure,
        usage=total,
        tool_calls=calls,
        ran_tools=frozenset(ran),
        read_paths=tool_reads.read_paths,
        model=model,
        outside_reads=tool_reads.outside_reads,
    )
