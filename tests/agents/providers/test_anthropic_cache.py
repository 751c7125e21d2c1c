"""Prompt caching on the Anthropic wire: breakpoints where intended, a prefix that only grows.

The API caches the request's prefix (tools, system, messages) up to each ``cache_control``
mark. A session marks its system prompt (the same on every turn, with the tools before it) and
the conversation's last block; each later turn resends the earlier ones byte for byte, so all of
them can be read from the cache.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from active_memory.agents.providers.anthropic import AnthropicProvider
from active_memory.agents.providers.anthropic_wire import build_params
from active_memory.agents.providers.base import (
    AnswerContract,
    AssistantMessage,
    ModelRequest,
    ReasoningBlock,
    UserMessage,
)
from active_memory.agents.providers.retry import RetryPolicy
from active_memory.agents.tool_loop import Session
from active_memory.agents.tools import Toolbox
from active_memory.models.runs import Binding
from agents.doubles import MockAPI, anthropic_message, tool_use

KEY_ENV = {"ANTHROPIC_API_KEY": "sk-ant-test-not-a-real-key"}
VERDICT = {"verdict": "keep", "reason": "still true"}
EPHEMERAL = {"type": "ephemeral"}
SYSTEM = "You review lessons. " * 200


def _read(path: str, id: str) -> dict[str, Any]:
    arguments = {"root": "checkout", "path": path, "offset": None, "limit": None}
    return tool_use("read_file", arguments, id)


def _marks(body: dict[str, Any]) -> list[str]:
    """Where the request carries cache breakpoints: ``system`` or ``messages[i][j]``."""
    found = [f"system[{i}]" for i, b in enumerate(body.get("system", [])) if "cache_control" in b]
    for i, message in enumerate(body["messages"]):
        for j, block in enumerate(message["content"]):
            if "cache_control" in block:
                assert block["cache_control"] == EPHEMERAL
                found.append(f"messages[{i}][{j}]")
    return found


def _unmarked(value: Any) -> Any:
    """``value`` without its cache marks: the API matches cached prefixes on content alone."""
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


def _wire(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False).encode("utf-8")


async def _three_turn_session(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract, tmp_path: Path
) -> Session:
    (tmp_path / "a.md").write_text("first file\n")
    (tmp_path / "b.md").write_text("second file\n")
    api.reply(anthropic_message(_read("a.md", "toolu_1"), stop_reason="tool_use"))
    api.reply(
        anthropic_message(
            {"type": "text", "text": "One more."},
            _read("b.md", "toolu_2"),
            stop_reason="tool_use",
            usage={"input_tokens": 40, "output_tokens": 5, "cache_read_input_tokens": 4000},
        )
    )
    api.reply(
        anthropic_message(
            tool_use("verdict", VERDICT, "toolu_3"),
            stop_reason="tool_use",
            usage={
                "input_tokens": 30,
                "output_tokens": 9,
                "cache_read_input_tokens": 4100,
                "cache_creation_input_tokens": 60,
            },
        )
    )
    provider = AnthropicProvider(env=KEY_ENV, http_client=api.client(), retry=retry)
    session = Session(
        provider,
        Binding(provider="anthropic", model="claude-test"),
        system=SYSTEM,
        prompt="Review run run-7. Decide about lesson-1.",
        contract=contract,
        deadline=time.monotonic() + 30,
        toolbox=Toolbox({"checkout": tmp_path}),
        specialist="repository_maintenance",
    )
    result = await session.run()
    assert result.answer == VERDICT
    return session


async def test_every_turn_marks_the_system_prompt_and_the_conversation_end(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract, tmp_path: Path
) -> None:
    await _three_turn_session(api, retry, contract, tmp_path)

    bodies = [api.body(i) for i in range(3)]
    for body in bodies:
        assert body["system"] == [{"type": "text", "text": SYSTEM, "cache_control": EPHEMERAL}]
        last = len(body["messages"]) - 1
        last_block = len(body["messages"][last]["content"]) - 1
        # Two breakpoints (the API allows four): the stable prefix and the conversation's end.
        assert _marks(body) == ["system[0]", f"messages[{last}][{last_block}]"]
    assert [len(body["messages"]) for body in bodies] == [1, 3, 5]


async def test_the_next_turn_resends_the_previous_request_byte_for_byte(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract, tmp_path: Path
) -> None:
    await _three_turn_session(api, retry, contract, tmp_path)

    for earlier, later in ((api.body(0), api.body(1)), (api.body(1), api.body(2))):
        # Tools, then system: the same bytes, marks included.
        assert _wire(later["tools"]) == _wire(earlier["tools"])
        assert _wire(later["system"]) == _wire(earlier["system"])
        # The conversation only grows: the earlier messages lead the later request unchanged
        # (the moving end-of-conversation mark aside).
        shared = len(earlier["messages"])
        assert _wire(_unmarked(later["messages"][:shared])) == _wire(_unmarked(earlier["messages"]))
        assert len(later["messages"]) > shared


async def test_cached_input_tokens_are_read_and_summed_over_the_session(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract, tmp_path: Path
) -> None:
    session = await _three_turn_session(api, retry, contract, tmp_path)

    usage = session.usage
    assert usage.cache_read_tokens == 4000 + 4100
    assert usage.cache_write_tokens == 60
    # input_tokens counts every prompt token: uncached, read from and written to the cache.
    assert usage.input_tokens == 10 + (40 + 4000) + (30 + 4100 + 60)
    assert usage.uncached_input_tokens == 10 + 40 + 30 + 60


def test_a_thinking_block_at_the_end_is_never_marked(contract: AnswerContract) -> None:
    request = ModelRequest(
        model="claude-test",
        system="sys",
        messages=(
            UserMessage("Decide."),
            AssistantMessage(reasoning=(ReasoningBlock("thinking", "hmm", "sig"),)),
        ),
        contract=contract,
    )

    body = build_params(request)

    assert _marks(body) == ["system[0]", "messages[0][0]"]
