"""Output caps per turn, a looping reply cut and repaired, and a session's share of the deadline."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from active_memory.agents.providers.base import (
    AnswerContract,
    ModelRequest,
    ModelResponse,
    ToolResult,
    UserMessage,
)
from active_memory.agents.tool_loop import Session, SessionLimits
from active_memory.errors import ConfigError, ProviderDeadlineExceeded, RepetitiveOutput
from active_memory.models.runs import Binding
from active_memory.testing import (
    ScriptedProvider,
    answer_response,
    tool_call,
    tool_calls_response,
)

GOOD = {"verdict": "keep", "reason": "verified"}
PLAIN = Binding(provider="scripted", model="model-x")
REASONING = Binding(provider="scripted", model="model-x", effort="high")
LIMITS = SessionLimits(answer_tokens=8_000, investigation_tokens=1_000, reasoning_tokens=500)
LOOP_LINE = "Let me check the configuration file again."


def _session(
    provider: ScriptedProvider, contract: AnswerContract, binding: Binding = PLAIN, **kwargs: object
) -> Session:
    fields: dict[str, object] = {
        "system": "sys",
        "prompt": "Decide.",
        "contract": contract,
        "deadline": time.monotonic() + 30,
        "limits": LIMITS,
    }
    fields.update(kwargs)
    return Session(provider, binding, **fields)  # type: ignore[arg-type]


def _looping(request: ModelRequest) -> ModelResponse:
    """A model that writes one line until the turn's cap stops it (4 characters a token)."""
    lines = request.max_tokens * 4 // (len(LOOP_LINE) + 1)
    return ModelResponse(text=(LOOP_LINE + "\n") * lines, stop_reason="max_tokens")


def _script(*steps: ModelResponse | Callable[[ModelRequest], ModelResponse]) -> ScriptedProvider:
    """A scripted provider whose steps may be functions of the request; no step is left over."""
    provider: ScriptedProvider

    def respond(request: ModelRequest) -> ModelResponse:
        step = steps[len(provider.requests) - 1]
        return step(request) if callable(step) else step

    provider = ScriptedProvider(respond)
    return provider


def _last_user_text(request: ModelRequest) -> str:
    last = request.messages[-1]
    assert isinstance(last, (UserMessage, ToolResult))
    return last.text if isinstance(last, UserMessage) else last.content


async def test_investigation_turns_ask_for_less_than_the_answer_turn(
    contract: AnswerContract,
) -> None:
    provider = ScriptedProvider(
        [tool_calls_response(tool_call("missing", {})), answer_response("{}"),
         answer_response(GOOD)]
    )  # fmt: skip
    session = _session(provider, contract, answer_bytes=1_000)

    await session.run()

    # 1000 bytes at 2 a token, and the slack for the answer's wrapper.
    assert session.answer_cap == 500 + 256
    assert [r.max_tokens for r in provider.requests] == [756, 756, 756]
    assert session.investigation_cap == 756  # never above the answer's cap


async def test_an_unbounded_answer_gets_the_ceiling_and_reasoning_adds_to_both_caps(
    contract: AnswerContract,
) -> None:
    provider = ScriptedProvider(
        [tool_calls_response(tool_call("missing", {})), answer_response("{}"),
         answer_response(GOOD)]
    )  # fmt: skip
    session = _session(provider, contract, REASONING)

    await session.run()

    assert [r.max_tokens for r in provider.requests] == [1_500, 1_500, 8_000]
    assert [r.final for r in provider.requests] == [False, False, True]


def test_an_investigation_cap_above_the_answer_ceiling_is_one_config_error() -> None:
    with pytest.raises(ConfigError) as caught:
        SessionLimits(answer_tokens=1_000, investigation_tokens=2_000)
    assert "limits.answer_tokens" in str(caught.value)


async def test_a_reply_repeating_one_line_to_the_cap_is_cut_and_repaired(
    contract: AnswerContract,
) -> None:
    provider = _script(_looping, answer_response(GOOD))
    session = _session(provider, contract)

    result = await session.run()

    assert result.answer == GOOD
    assert result.repaired is True
    first, repair = provider.requests
    assert first.max_tokens == 1_000
    assert (repair.final, repair.max_tokens) == (True, 8_000)
    told = _last_user_text(repair)
    assert "cut at its 1000-token output cap" in told
    assert repr(LOOP_LINE) in told
    assert session.repair_errors[0].startswith(f"repeated {LOOP_LINE!r}")


async def test_a_reply_that_loops_again_after_the_repair_ends_the_session(
    contract: AnswerContract,
) -> None:
    provider = _script(_looping, _looping)
    session = _session(provider, contract)

    with pytest.raises(RepetitiveOutput) as caught:
        await session.run()

    assert caught.value.cap == 8_000
    assert caught.value.count > 100
    assert "repeated one span" in str(caught.value)
    assert LOOP_LINE not in str(caught.value)  # the report's line never carries model text
    assert session.raw_answer is not None
    assert session.raw_answer.startswith(LOOP_LINE)


async def test_an_investigation_turn_cut_short_is_asked_for_the_answer_without_a_repair(
    contract: AnswerContract,
) -> None:
    truncated = ModelResponse(
        answer='{"verdict": "keep", "reason": "veri', answer_call_id="toolu_1",
        stop_reason="max_tokens",
    )  # fmt: skip
    provider = ScriptedProvider([truncated, answer_response(GOOD)])
    session = _session(provider, contract)

    result = await session.run()

    assert (result.answer, result.repaired) == (GOOD, False)
    follow_up = provider.requests[1]
    assert follow_up.final is True
    assert "cap of 1000 output tokens" in _last_user_text(follow_up)
    assert isinstance(follow_up.messages[-1], ToolResult)  # the answer call gets its reply


async def test_a_session_stops_at_its_share_before_the_deadline(contract: AnswerContract) -> None:
    async def hang(request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(60)
        raise AssertionError("never answered")

    share_ends = time.monotonic() + 0.2
    session = _session(ScriptedProvider(hang), contract, share=lambda: share_ends)
    started = time.monotonic()

    with pytest.raises(ProviderDeadlineExceeded):
        await session.run()

    assert time.monotonic() - started < 5


async def test_a_share_that_grows_during_a_call_lets_the_reply_arrive(
    contract: AnswerContract,
) -> None:
    share = [time.monotonic() + 0.1]

    async def slow(request: ModelRequest) -> ModelResponse:
        share[0] += 1.0  # another specialist finished and left its time
        await asyncio.sleep(0.3)
        return answer_response(GOOD)

    session = _session(ScriptedProvider(slow), contract, share=lambda: share[0])

    result = await session.run()

    assert result.answer == GOOD


async def test_prose_cut_at_the_investigation_cap_is_kept_as_the_raw_answer(
    contract: AnswerContract,
) -> None:
    varied = "".join(f"Thought {index}: the file may matter.\n" for index in range(50))
    seen: list[str | None] = []

    def answer_noting_the_raw_answer(request: ModelRequest) -> ModelResponse:
        seen.append(session.raw_answer)
        return answer_response(GOOD)

    provider = _script(
        ModelResponse(text=varied, stop_reason="max_tokens"), answer_noting_the_raw_answer
    )
    session = _session(provider, contract)

    result = await session.run()

    assert (result.answer, result.repaired) == (GOOD, False)
    assert seen == [varied]  # not a loop: asked again, its text kept meanwhile
