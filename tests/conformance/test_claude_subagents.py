"""Conformance: Claude Code subagents each receive a card the main agent already received, and
the reverse (issue 31). Slow: runs the real ``claude`` CLI against the stand-in on loopback.

Claude Code sends a subagent's hook calls with the parent's ``session_id`` plus an
``agent_id``; the conversation key includes it, so each agent is a conversation of its own. The
script (:class:`SubagentScript`) makes the main agent and one subagent read the file that has a
lesson, in either order:

* ``main-first``: the main agent reads, then starts a subagent, which reads;
* ``subagent-first``: the main agent starts a subagent, which reads; then the main agent reads.

Requests are told apart by the tools they offer: the main agent's offer the subagent tool
(``Task``, ``Agent`` in newer versions), a subagent's do not. Each tool call gets an id of its
own, so the test can see which results a request already holds. The hooks are the ones
``active-memory hooks install`` writes (the helper, answering from the store: no broker runs).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from conformance.harnesses import HARNESSES, Harness
from conformance.kit import TARGET, Workspace, install_hooks, run_harness
from conformance.stand_in import (
    _APIS,
    CALL_ID,
    FINAL_TEXT,
    Recorded,
    StandIn,
    ToolCall,
    tool_names,
)

pytestmark = [pytest.mark.conformance, pytest.mark.slow, pytest.mark.timeout(300)]

SUBAGENT_TOOLS = ("Agent", "Task")
SUBAGENT_DONE = "Subagent: the file was read."
MAIN_READ, SUB_READ, SPAWN = "toolu_am_main_read", "toolu_am_sub_read", "toolu_am_spawn"


def _walk(value: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item)


def results_held(body: Mapping[str, Any]) -> set[str]:
    """The tool-use ids whose results a Messages request holds."""
    return {
        str(node.get("tool_use_id"))
        for node in _walk(body.get("messages"))
        if node.get("type") == "tool_result"
    }


class SubagentScript(StandIn):
    """The stand-in, scripted for a main agent and one subagent that both read ``TARGET``."""

    def __init__(self, project: Path, order: str) -> None:
        super().__init__(lambda names: None)
        self.absolute = str(project / TARGET)
        self.order = order

    def _next(self, body: Mapping[str, Any]) -> tuple[str, ToolCall | None, str]:
        """(reply kind, the call to make, its id) for one request."""
        names = tool_names(body)
        held = results_held(body)
        spawn = next((name for name in SUBAGENT_TOOLS if name in names), None)
        read = ToolCall("Read", {"file_path": self.absolute})
        if spawn is None:  # a subagent (or a side request offering no tools)
            if "Read" not in names:
                return "text", None, ""
            return ("sub_final", None, "") if SUB_READ in held else ("sub_read", read, SUB_READ)
        task = ToolCall(spawn, {"description": "Read the config",
                                "prompt": f"Read {self.absolute} and say done.",
                                "subagent_type": "general-purpose"})  # fmt: skip
        steps = [(MAIN_READ, read), (SPAWN, task)]
        if self.order == "subagent-first":
            steps.reverse()
        for call_id, call in steps:
            if call_id not in held:
                return ("main_read" if call_id == MAIN_READ else "spawn"), call, call_id
        return "final", None, ""

    def _answer(self, path: str, body: Any) -> tuple[int, str, bytes]:
        route = path.split("?", 1)[0].rstrip("/")
        if not route.endswith("/messages") or not isinstance(body, dict):
            return super()._answer(path, body)
        reply, call, call_id = self._next(body)
        self._record("POST", path, body, reply)
        text = {"final": self.final_text, "sub_final": SUBAGENT_DONE}.get(reply, "Stand-in.")
        build = dict(_APIS)["/messages"]
        document, stream = build(body, call, text)
        payload = json.dumps(document).encode("utf-8") if document is not None else stream
        # Every call its own id: the shared one would repeat within the main conversation.
        payload = payload.replace(f"toolu_{CALL_ID}".encode(), call_id.encode())
        if document is not None:
            return 200, "application/json", payload
        return 200, "text/event-stream", payload


@pytest.fixture
def harness(request: pytest.FixtureRequest) -> Harness:
    return HARNESSES[request.param]


def _after(model: StandIn, kind: str) -> Recorded:
    """The first request of ``kind``: the one that carries that read's result back."""
    found = model.replies(kind)
    assert found, f"no {kind} request: {[r.reply for r in model.requests]}"
    return found[0]


def _holds_card(request: Recorded, workspace: Workspace) -> bool:
    header = workspace.card_lines[0]
    body = request.body
    return any(header in text for text in _strings(body))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


@pytest.mark.parametrize("harness", ["claude"], indirect=True)
@pytest.mark.parametrize("order", ["main-first", "subagent-first"])
def test_a_subagent_and_the_main_agent_each_receive_the_card(
    harness: Harness, binary: Path, workspace: Workspace, order: str
) -> None:
    assert install_hooks(harness, workspace)["mode"] == "helper"
    with SubagentScript(workspace.project, order) as model:
        ran = run_harness(harness, binary, workspace, model, name=order)
        assert ran.process.returncode == 0, ran.output
        assert FINAL_TEXT in ran.process.stdout, ran.output
        # The subagent's request holding its read's result: its card is there.
        sub_after = _after(model, "sub_final")
        assert _holds_card(sub_after, workspace), f"the subagent got no card ({order})"
        # The main agent's request after its own read holds the card too (the first request
        # that holds MAIN_READ's result: "final" in main-first order after the spawn, or the
        # spawn in subagent-first order).
        main_after = next(
            r
            for r in model.requests
            if isinstance(r.body, dict)
            and MAIN_READ in results_held(r.body)
            and any(name in tool_names(r.body) for name in SUBAGENT_TOOLS)
        )
        assert _holds_card(main_after, workspace), f"the main agent got no card ({order})"
