"""A subagent is a conversation of its own: Claude Code sends a subagent's hook calls with the
parent's ``session_id`` plus an ``agent_id``, and each agent receives a card once, whichever read
the file first, whether the broker or the store fallback answers. A placeholder session id
(``served:unknown``) is never one conversation shared by every caller that sends it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from active_memory.hooks import claude, copilot
from active_memory.hooks.base import is_placeholder_session
from active_memory.hooks.dispatch import conversation_key
from active_memory.hooks.install import helper_command
from active_memory.hooks.standalone import Server
from active_memory.store.sqlite import SqliteStore
from hooks.test_shared_exposure import CARD, CLEAN_ENV, Setup


def _as_agent(payload: bytes, agent: str | None, session: str | None = None) -> bytes:
    document = json.loads(payload)
    if agent is not None:
        document["agent_id"] = agent
        document["agent_type"] = "general-purpose"
    if session is not None:
        document["session_id"] = session
    # Fields Claude Code 2.1.332 adds: accepted and ignored.
    document["scratchpad_dir"] = "/tmp/claude-scratch"
    document["mcp_server"] = None
    return json.dumps(document).encode()


def _ask(setup: Setup, payload: bytes) -> str:
    command = helper_command("claude", ticket=str(setup.ticket), store=str(setup.store),
                             workspace=str(setup.workspace))  # fmt: skip
    done = subprocess.run(["sh", "-c", command], input=payload, capture_output=True, timeout=60,
                          env=CLEAN_ENV)  # fmt: skip
    assert (done.returncode, done.stderr) == (0, b"")
    answer = json.loads(done.stdout)
    return answer["hookSpecificOutput"]["additionalContext"] if answer else ""  # type: ignore[no-any-return]


@pytest.mark.parametrize("broker", ["serve", "store fallback"])
def test_the_main_agent_and_each_subagent_get_the_card_once(tmp_path: Path, broker: str) -> None:
    setup = Setup(tmp_path)
    with SqliteStore(setup.store, read_only=True) as backend:
        server = Server(backend, setup.workspace, state_dir=setup.state_dir,
                        store=str(setup.store), poll_s=0.05)  # fmt: skip
        if broker == "serve":
            server.start()
        try:
            if broker == "serve":
                assert setup.ticket.exists()
            else:
                assert not setup.ticket.exists()
            first, second = _as_agent(setup.payload, "a1f3"), _as_agent(setup.payload, "b2c4")
            main = _as_agent(setup.payload, None)
            # A subagent reads first, then the main agent, then another subagent.
            assert CARD in _ask(setup, first)
            assert CARD in _ask(setup, main)
            assert CARD in _ask(setup, second)
            # Each of them, asking again, has it already.
            assert _ask(setup, first) == ""
            assert _ask(setup, main) == ""
            assert _ask(setup, second) == ""
        finally:
            server.close()


def test_callers_with_a_placeholder_session_are_not_one_conversation(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    document = json.loads(_as_agent(setup.payload, None, session="served:unknown"))
    del document["transcript_path"]
    payload = json.dumps(document).encode()
    # Untracked: each caller is offered the card, and nothing is remembered for "unknown".
    assert CARD in _ask(setup, payload)
    assert CARD in _ask(setup, payload)
    assert not list((setup.store.parent / "exposure").glob("*.keys"))


def test_a_placeholder_session_falls_back_to_the_transcript() -> None:
    parsed = claude.parse({
        "session_id": "served:unknown", "transcript_path": "/t/a.jsonl",
        "hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {},
    })  # fmt: skip
    assert parsed is not None
    assert parsed.session_id is not None
    assert parsed.session_id.startswith("transcript-")


@pytest.mark.parametrize(
    ("value", "placeholder"),
    [("served:unknown", True), ("unknown", True), ("", True), ("  ", True), ("null", True),
     ("3f2b9c1e-7a44", False), ("served:3f2b", False), ("unknownish", False)],
)  # fmt: skip
def test_placeholder_sessions(value: str, placeholder: bool) -> None:
    assert is_placeholder_session(value) is placeholder


def test_the_conversation_key_names_the_agent() -> None:
    assert conversation_key("s-1", None) == "s-1"
    assert conversation_key("s-1", "a1") == "s-1/agent:a1"
    assert conversation_key(None, "a1") is None  # no conversation: untracked, agent or not
    assert conversation_key("s-1", "\x00bad") == "s-1"  # an unrecordable agent id is dropped


def test_copilot_reads_an_agent_id_too() -> None:
    parsed = copilot.parse({"sessionId": "s", "toolName": "view", "toolArgs": {},
                            "agentId": "sub-1"})  # fmt: skip
    assert parsed is not None
    assert (parsed.session_id, parsed.agent_id) == ("s", "sub-1")
