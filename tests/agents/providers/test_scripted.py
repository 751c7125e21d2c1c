"""The public scripted provider fails loudly on unexpected and leftover calls."""

from __future__ import annotations

import pytest

from active_memory.agents.providers.base import (
    AnswerContract,
    ModelRequest,
    ModelResponse,
    RequestLabels,
)
from active_memory.errors import ProviderTransientError, ReplayMismatch
from active_memory.testing import ScriptedProvider, answer_response, text_response


def _request(turn: int) -> ModelRequest:
    return ModelRequest(
        model="m",
        system="",
        messages=(),
        contract=AnswerContract("a", {"type": "object"}),
        labels=RequestLabels("graph_maintenance", 1, turn),
    )


async def test_responses_come_in_order_and_requests_are_kept() -> None:
    provider = ScriptedProvider([text_response("one"), answer_response({"x": 1})])
    assert (await provider.complete(_request(1))).text == "one"
    assert (await provider.complete(_request(2))).answer == '{"x": 1}'
    assert [r.labels.turn for r in provider.requests] == [1, 2]
    provider.assert_consumed()


async def test_a_call_beyond_the_script_names_the_call() -> None:
    provider = ScriptedProvider([text_response("only")])
    await provider.complete(_request(1))
    with pytest.raises(
        ReplayMismatch,
        match=r"unexpected call #2 \(specialist 'graph_maintenance' batch 1 turn 2\)",
    ):
        await provider.complete(_request(2))


async def test_leftover_responses_fail_at_close() -> None:
    provider = ScriptedProvider([text_response("a"), text_response("b")])
    await provider.complete(_request(1))
    with pytest.raises(ReplayMismatch, match="1 scripted response"):
        await provider.aclose()


async def test_an_exception_step_is_raised() -> None:
    provider = ScriptedProvider([ProviderTransientError("p", "busy", status=429)])
    with pytest.raises(ProviderTransientError, match="busy"):
        await provider.complete(_request(1))


async def test_a_function_script_sees_each_request() -> None:
    async def echo(request: ModelRequest) -> ModelResponse:
        return text_response(f"turn {request.labels.turn}")

    provider = ScriptedProvider(echo)
    assert (await provider.complete(_request(7))).text == "turn 7"
    provider.assert_consumed()
