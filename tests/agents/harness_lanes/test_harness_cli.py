"""What the harness lanes share: the session a turn starts or resumes, named by the lane."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from active_memory.agents.harness_lanes.harness_cli import named_turn, session_key
from active_memory.agents.providers.base import AssistantMessage, UserMessage
from active_memory.errors import ProviderError
from active_memory.lanes import SPECIALIST_SESSION_MARKER
from active_memory.models.runs import Binding
from agents.harness_lanes.lane_kit import make_folders, request_for

BINDING = Binding(provider="anthropic", model="claude-sonnet-4-5", lane="claude-code")


def test_a_first_turn_names_a_new_session_that_its_repair_resumes(tmp_path: Path) -> None:
    first = request_for(BINDING, make_folders(tmp_path))
    sessions: dict[str, str] = {}
    session_id, resume, prompt = named_turn(
        first, sessions, "claude-code", instructions="Be brief."
    )
    assert not resume
    assert sessions == {session_key(first): session_id}
    assert prompt.startswith(f"{SPECIALIST_SESSION_MARKER}\n\nBe brief.\n\n---\n\n")

    repair = replace(
        first,
        messages=(
            *first.messages,
            AssistantMessage(text="not JSON"),
            UserMessage("The answer is not JSON: answer again."),
        ),
    )
    assert named_turn(repair, sessions, "claude-code") == (
        session_id,
        True,
        "The answer is not JSON: answer again.",
    )


def test_each_first_turn_gets_its_own_session(tmp_path: Path) -> None:
    request = request_for(BINDING, make_folders(tmp_path))
    one, _, _ = named_turn(request, {}, "claude-code")
    other, _, _ = named_turn(request, {}, "claude-code")
    assert one != other


def test_a_repair_with_no_session_to_resume_is_a_provider_error(tmp_path: Path) -> None:
    first = request_for(BINDING, make_folders(tmp_path))
    repair = replace(
        first, messages=(*first.messages, AssistantMessage(text="?"), UserMessage("again"))
    )
    with pytest.raises(ProviderError, match="the copilot lane has no harness session to resume"):
        named_turn(repair, {}, "copilot")
