"""The model of a specialist on an OpenAI wire (Codex's Responses, Copilot CLI's and pi's Chat
Completions) for the harness lanes' conformance tests, and how a test runs a lane against it."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from active_memory.harnesses import harness_row
from cli_runner import run_cli
from conformance.harnesses import Harness
from conformance.stand_in import StandIn, ToolCall, _chat, _responses, tool_names

__all__ = [
    "ANSWER",
    "READ_TOOLS",
    "REPAIR_SAYS",
    "ScriptedOpenAISpecialist",
    "openai_results",
    "run_on",
]

ANSWER = {"lessons": []}

# Each harness's read tool, as its model sees it, and the wire its CLI speaks to the stand-in.
READ_TOOLS = {"codex": "exec_command", "copilot": "view", "pi": "read"}
# The start of the host's repair message (agents/tool_loop.py).
REPAIR_SAYS = "Your answer does not satisfy the"
_WIRES = {"codex": "responses", "copilot": "chat", "pi": "chat"}


def openai_results(body: Mapping[str, Any]) -> dict[str, str]:
    """The tool results a Responses or Chat Completions request carries, by call id."""
    found = {}
    for item in [*(body.get("input") or []), *(body.get("messages") or [])]:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call_output":
            found[str(item.get("call_id"))] = json.dumps(item.get("output"))
        elif item.get("role") == "tool":
            found[str(item.get("tool_call_id"))] = json.dumps(item.get("content"))
    return found


class ScriptedOpenAISpecialist(StandIn):
    """The model of a specialist on an OpenAI wire: one step per tool result already in the
    conversation, then the answer as the last message."""

    def __init__(self, harness: str, steps: list[ToolCall], *, invalid_first: bool = False) -> None:
        super().__init__(choose=lambda _names: None, final_text=json.dumps(ANSWER))
        self.read_tool = READ_TOOLS[harness]
        self.build = _responses if _WIRES[harness] == "responses" else _chat
        self.steps = steps
        self.invalid_first = invalid_first

    def answer(self, repairing: bool) -> Mapping[str, Any]:
        """The contract's answer; with ``invalid_first``, an invalid one until the repair."""
        return {"lessons": [3]} if self.invalid_first and not repairing else ANSWER

    def _answer(self, path: str, body: Any) -> tuple[int, str, bytes]:
        if not isinstance(body, dict) or self.read_tool not in tool_names(body):
            return super()._answer(path, body)
        done = len(openai_results(body))
        step = self.steps[done] if done < len(self.steps) else None
        repairing = REPAIR_SAYS in json.dumps(body)
        self._record("POST", path, body, "repair" if repairing else f"step-{done}")
        document, stream = self.build(body, step, json.dumps(self.answer(repairing)))
        own = f"call_step_{done}"  # the harness pairs results with calls by id
        if document is not None:
            payload = json.dumps(document).replace("call_am_conformance_1", own).encode()
            return 200, "application/json", payload
        return 200, "text/event-stream", stream.replace(b"call_am_conformance_1", own.encode())


def run_on(harness: Harness, binary: Path, folder: Path, home: Path, url: str,
            monkeypatch: pytest.MonkeyPatch, *extra: str,
            model: str = "stand-in") -> Result:  # fmt: skip
    invocation = harness.invocation(binary, (folder / "checkout").resolve(), home, url)
    for name, value in invocation.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", f"{binary.parent}{os.pathsep}{os.environ['PATH']}")
    return run_cli(["specialist", "run", "graph_discovery", str(folder), "--lane",
                    harness_row(harness.name).lane, "--model", model, "--json", *extra,
                    "--store", str(home.parent / "s.sqlite3")])  # fmt: skip
