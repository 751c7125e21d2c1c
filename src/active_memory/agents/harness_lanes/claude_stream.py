"""What ``claude -p --output-format stream-json --verbose`` printed, in the toolkit's terms.

Each line of that output is one JSON event: ``system`` (``init`` names the tools the session
offers), ``assistant`` (a model turn: text and ``tool_use`` blocks), ``user`` (the tools'
``tool_result`` blocks) and, last, ``result``: ``is_error``, ``subtype`` (``success``,
``error_max_turns``…), the ``result`` text, the ``structured_output`` that ``--json-schema``
asked for, ``usage`` (Messages API counts, cache reads and writes apart) and ``modelUsage``
(per model). A line that is not JSON (a warning some versions print) is skipped.

A file counts as read when a ``Read`` call of it came back without an error; it is named
``root:relative/path`` against the request's folders, exactly as the host's own tools name it.
A ``Read``, ``Grep`` or ``Glob`` call that came back without an error and named a path outside
those folders is kept in ``outside_reads`` (:mod:`.read_roots`): the lane fails the session.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from active_memory.agents.harness_lanes.harness_cli import UsageKeys, json_events
from active_memory.agents.harness_lanes.read_roots import ToolReads
from active_memory.agents.providers.base import TokenUsage

__all__ = ["ANSWER_TOOL", "READ_TOOL", "Transcript", "read_transcript"]

READ_TOOL = "Read"
# The tool --json-schema adds for the answer: it is not an investigation call.
ANSWER_TOOL = "StructuredOutput"
_USAGE = UsageKeys(
    input=("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"),
    output="output_tokens",
    cache_read="cache_read_input_tokens",
    cache_write="cache_creation_input_tokens",
)


@dataclass(frozen=True, slots=True)
class Transcript:
    """One ``claude -p`` run: its result event (None when it printed none), the tools its
    init event offered, the investigation calls made, the files read and the paths read
    outside the folders."""

    result: Mapping[str, Any] | None
    offered_tools: tuple[str, ...] | None
    tool_calls: int
    refused_calls: tuple[str, ...]
    read_paths: frozenset[str]
    model: str
    outside_reads: tuple[str, ...] = ()

    @property
    def usage(self) -> TokenUsage:
        usage = (self.result or {}).get("usage")
        return _USAGE.tokens(usage) if isinstance(usage, Mapping) else TokenUsage()

    @property
    def answer(self) -> str | None:
        """The answer as JSON text: the structured output, else the result text."""
        result = self.result or {}
        structured = result.get("structured_output")
        if structured is not None:
            return json.dumps(structured, ensure_ascii=False)
        text = result.get("result")
        return text if isinstance(text, str) and text.strip() else None


def _blocks(event: Mapping[str, Any], kind: str) -> Iterator[Mapping[str, Any]]:
    message = event.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    for block in content if isinstance(content, list) else []:
        if isinstance(block, Mapping) and block.get("type") == kind:
            yield block


def _paths_named(name: str, given: Mapping[str, Any]) -> list[str]:
    """The paths a file tool's call reads: Read's file, Grep's and Glob's folder, and an
    absolute Glob pattern."""
    keys = {READ_TOOL: ("file_path",), "Grep": ("path",), "Glob": ("path", "pattern")}
    found = [given.get(key) for key in keys.get(name, ())]
    return [
        path
        for key, path in zip(keys.get(name, ()), found, strict=True)
        if isinstance(path, str) and path and (key != "pattern" or path.startswith(("/", "~")))
    ]


def read_transcript(stdout: bytes, folders: Iterable[tuple[str, str]], cwd: Path) -> Transcript:
    """The transcript of one run from its stream-json output; relative paths are from ``cwd``."""
    tool_reads = ToolReads(folders, cwd)
    named: dict[str, list[str]] = {}  # tool_use id -> the paths it reads
    result: Mapping[str, Any] | None = None
    offered: tuple[str, ...] | None = None
    reads: dict[str, str] = {}  # tool_use id -> file path
    calls = 0
    refused: list[str] = []
    names: dict[str, str] = {}
    model = ""
    for event in json_events(stdout):
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            tools = event.get("tools")
            if isinstance(tools, list):
                offered = tuple(str(tool) for tool in tools)
        elif kind == "assistant":
            message = event.get("message")
            if isinstance(message, Mapping) and isinstance(message.get("model"), str):
                model = model or message["model"]
            for block in _blocks(event, "tool_use"):
                name, call_id = str(block.get("name")), str(block.get("id"))
                if name == ANSWER_TOOL:
                    continue
                calls += 1
                names[call_id] = name
                given = block.get("input")
                if isinstance(given, Mapping):
                    named[call_id] = _paths_named(name, given)
                if name == READ_TOOL and isinstance(given, Mapping):
                    file_path = given.get("file_path")
                    if isinstance(file_path, str):
                        reads[call_id] = file_path
        elif kind == "user":
            for block in _blocks(event, "tool_result"):
                call_id = str(block.get("tool_use_id"))
                if block.get("is_error"):
                    if call_id in names:
                        refused.append(names[call_id])
                    continue
                tool_reads.named(named.get(call_id, ()))
                if call_id in reads:
                    tool_reads.showed(reads[call_id])
        elif kind == "result":
            result = event
    return Transcript(
        result=result,
        offered_tools=offered,
        tool_calls=calls,
        refused_calls=tuple(refused),
        read_paths=tool_reads.read_paths,
        model=model,
        outside_reads=tool_reads.outside_reads,
    )
