"""Specialist sessions over the Anthropic wire: tool loops, repairs and refused tool calls."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from active_memory.agents.providers.anthropic import AnthropicProvider
from active_memory.agents.providers.base import AnswerContract
from active_memory.agents.providers.retry import RetryPolicy
from active_memory.agents.tool_loop import Session
from active_memory.agents.tools import Toolbox
from active_memory.errors import ContractViolation
from active_memory.models.runs import Binding
from agents.doubles import MockAPI, anthropic_message, tool_use

KEY_ENV = {"ANTHROPIC_API_KEY": "sk-ant-test-not-a-real-key"}
VERDICT = {"verdict": "keep", "reason": "still true"}
FAKE_TOKEN = "ghp_FAKEfakeFAKEfakeFAKEfakeFAKEfake0000"


def _session(api: MockAPI, retry: RetryPolicy, contract: AnswerContract, **kwargs: Any) -> Session:
    fields: dict[str, Any] = {
        "system": "You review lessons.",
        "prompt": "Decide about lesson-1.",
        "contract": contract,
        "deadline": time.monotonic() + 30,
        "specialist": "repository_maintenance",
    }
    fields.update(kwargs)
    provider = AnthropicProvider(env=KEY_ENV, http_client=api.client(), retry=retry)
    return Session(provider, Binding(provider="anthropic", model="claude-test"), **fields)


def _read(path: str, id: str) -> dict[str, Any]:
    arguments = {"root": "checkout", "path": path, "offset": None, "limit": None}
    return tool_use("read_file", arguments, id)


def _answer(value: dict[str, Any], id: str) -> dict[str, Any]:
    return anthropic_message(tool_use("verdict", value, id), stop_reason="tool_use")


async def test_session_runs_a_multi_turn_tool_loop_over_http(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract, tmp_path: Path
) -> None:
    (tmp_path / "notes.md").write_text("the lesson still holds\n")
    api.reply(
        anthropic_message(
            {"type": "text", "text": "Let me check."},
            _read("notes.md", "toolu_1"),
            stop_reason="tool_use",
        )
    )
    api.reply(_answer(VERDICT, "toolu_2"))

    result = await _session(api, retry, contract, toolbox=Toolbox({"checkout": tmp_path})).run()

    assert result.answer == VERDICT
    assert (result.turns, result.tool_calls) == (2, 1)
    assert result.usage.input_tokens == 20
    assert result.usage.output_tokens == 10
    tool_result = api.body(1)["messages"][-1]["content"][0]
    assert tool_result["tool_use_id"] == "toolu_1"
    assert "the lesson still holds" in tool_result["content"]


async def test_an_invalid_answer_is_repaired_by_replying_to_the_answer_call(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract
) -> None:
    api.reply(_answer({"verdict": "maybe", "reason": "unsure"}, "toolu_1"))
    api.reply(_answer(VERDICT, "toolu_2"))

    result = await _session(api, retry, contract).run()

    assert result.answer == VERDICT
    assert json.loads(result.answer_json) == VERDICT
    assert result.repaired is True
    assert result.turns == 2
    repair = api.body(1)["messages"][-1]["content"][0]
    assert repair["type"] == "tool_result"
    assert repair["tool_use_id"] == "toolu_1"
    assert repair["is_error"] is True
    assert "verdict: 'maybe' is not one of" in repair["content"]
    assert api.body(1)["tool_choice"] == {"type": "tool", "name": "verdict"}
    assert api.unused == 0


async def test_a_missing_answer_is_repaired_with_a_user_message(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract
) -> None:
    api.reply(anthropic_message({"type": "text", "text": "I would keep it."}))
    api.reply(_answer(VERDICT, "toolu_1"))

    result = await _session(api, retry, contract).run()

    assert (result.answer, result.repaired) == (VERDICT, True)
    last = api.body(1)["messages"][-1]
    assert last["role"] == "user"
    assert last["content"][0]["type"] == "text"
    assert "give the answer by calling the verdict tool" in last["content"][0]["text"]


async def test_a_second_invalid_answer_after_the_repair_fails_the_session(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract
) -> None:
    bad = {"verdict": "maybe", "reason": "unsure"}
    api.reply(_answer(bad, "toolu_1"))
    api.reply(_answer(bad, "toolu_2"))
    session = _session(api, retry, contract)

    with pytest.raises(ContractViolation, match="'maybe' is not one of"):
        await session.run()

    assert (session.turns, session.repaired) == (2, True)
    assert api.body(1)["messages"][-1]["content"][0]["tool_use_id"] == "toolu_1"


async def test_a_tool_call_for_etc_passwd_is_refused_over_the_wire(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract, tmp_path: Path
) -> None:
    api.reply(anthropic_message(_read("../../etc/passwd", "toolu_1"), stop_reason="tool_use"))
    api.reply(_answer(VERDICT, "toolu_2"))

    result = await _session(api, retry, contract, toolbox=Toolbox({"checkout": tmp_path})).run()

    refused = api.body()["messages"][-1]["content"][0]
    refused.pop("cache_control")  # the conversation's end carries the cache breakpoint
    assert refused == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "'../../etc/passwd' is refused: '..' may not appear in a path",
        "is_error": True,
    }
    assert "root:" not in json.dumps(api.body())
    assert result.tool_calls == 1


async def test_git_internals_and_credentials_never_reach_the_wire(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract, tmp_path: Path
) -> None:
    (tmp_path / ".git").mkdir()
    remote = f"url = https://user:{FAKE_TOKEN}@github.com/org/repo.git\n"
    (tmp_path / ".git" / "config").write_text(remote)
    (tmp_path / "deploy.cfg").write_text(remote)
    api.reply(
        anthropic_message(
            _read(".git/config", "toolu_1"), _read("deploy.cfg", "toolu_2"), stop_reason="tool_use"
        )
    )
    api.reply(_answer(VERDICT, "toolu_3"))

    await _session(api, retry, contract, toolbox=Toolbox({"checkout": tmp_path})).run()

    git, deploy = api.body()["messages"][-1]["content"]
    assert git["is_error"] is True
    assert git["content"] == "'.git/config' is refused: git internals (.git) are not evidence"
    assert "https://[redacted:url-credentials]@github.com" in deploy["content"]
    assert "FAKEfake" not in api.requests[-1].content.decode()
