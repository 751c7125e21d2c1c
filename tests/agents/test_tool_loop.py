"""The specialist session's tool loop, driven by scripted providers."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from active_memory.agents.providers.base import (
    AnswerContract,
    ModelRequest,
    ModelResponse,
    TokenUsage,
    ToolResult,
    UserMessage,
)
from active_memory.agents.tool_loop import (
    CancelToken,
    Session,
    SessionLimits,
    check_answer,
    run_session,
)
from active_memory.agents.tools import Toolbox
from active_memory.errors import (
    ContractViolation,
    ProviderDeadlineExceeded,
    ProviderTransientError,
    SessionCancelled,
)
from active_memory.models.runs import Binding
from active_memory.testing import (
    ScriptedProvider,
    answer_response,
    text_response,
    tool_call,
    tool_calls_response,
)

BINDING = Binding(provider="scripted", model="model-x", effort="high")
GOOD = {"verdict": "keep", "reason": "verified"}
USAGE = TokenUsage(input_tokens=100, output_tokens=10, cache_read_tokens=60)
READ = {"root": "checkout", "path": "a.txt", "offset": None, "limit": None}


def _session(provider: ScriptedProvider, contract: AnswerContract, **kwargs: object) -> Session:
    fields: dict[str, object] = {
        "system": "sys",
        "prompt": "Decide.",
        "contract": contract,
        "deadline": time.monotonic() + 30,
        "specialist": "graph_discovery",
        "batch": 2,
    }
    fields.update(kwargs)
    return Session(provider, BINDING, **fields)  # type: ignore[arg-type]


@pytest.fixture
def checkout(tmp_path: Path) -> Toolbox:
    (tmp_path / "a.txt").write_text("alpha\n")
    return Toolbox({"checkout": tmp_path})


async def test_a_valid_first_answer_ends_the_session(contract: AnswerContract) -> None:
    provider = ScriptedProvider([answer_response(GOOD, usage=USAGE, retries=2)])

    result = await _session(provider, contract).run()

    assert result.answer == GOOD
    assert (result.turns, result.tool_calls, result.retries) == (1, 0, 2)
    assert result.usage == USAGE
    assert result.repaired is False
    request = provider.requests[0]
    assert (request.model, request.effort, request.system) == ("model-x", "high", "sys")
    assert (request.labels.specialist, request.labels.batch, request.labels.turn) == (
        "graph_discovery",
        2,
        1,
    )
    provider.assert_consumed()


async def test_tool_calls_run_and_their_results_go_back_with_usage_summed(
    contract: AnswerContract, checkout: Toolbox
) -> None:
    provider = ScriptedProvider(
        [
            tool_calls_response(tool_call("read_file", READ, id="c1"), usage=USAGE),
            tool_calls_response(
                tool_call("list_folder", {"root": "checkout", "path": ""}, id="c2"), usage=USAGE
            ),
            answer_response(GOOD, usage=USAGE),
        ]
    )

    result = await _session(provider, contract, toolbox=checkout).run()

    assert (result.turns, result.tool_calls) == (3, 2)
    assert result.usage == USAGE + USAGE + USAGE
    second = provider.requests[1].messages
    assert isinstance(second[-1], ToolResult)
    assert second[-1].call_id == "c1"
    assert "alpha" in second[-1].content
    assert [r.labels.turn for r in provider.requests] == [1, 2, 3]


async def test_schema_violation_gets_one_repair_turn_listing_the_errors(
    contract: AnswerContract,
) -> None:
    provider = ScriptedProvider([answer_response({"verdict": "keep"}), answer_response(GOOD)])

    result = await _session(provider, contract).run()

    assert result.repaired is True
    assert result.turns == 2
    repair = provider.requests[1].messages[-1]
    assert isinstance(repair, UserMessage)
    assert "(root): 'reason' is a required property" in repair.text
    assert provider.requests[1].final is True


async def test_a_second_invalid_answer_fails_with_the_errors(contract: AnswerContract) -> None:
    provider = ScriptedProvider(
        [answer_response({"verdict": "keep"}), answer_response({"verdict": 3, "reason": "x"})]
    )
    with pytest.raises(ContractViolation) as caught:
        await _session(provider, contract).run()
    assert caught.value.errors == (
        "verdict: 3 is not of type 'string'",
        "verdict: 3 is not one of ['keep', 'retire']",
    )


async def test_text_without_an_answer_is_repaired_like_a_malformed_answer(
    contract: AnswerContract,
) -> None:
    provider = ScriptedProvider(
        [text_response("I think we should keep it."), answer_response(GOOD)]
    )
    result = await _session(provider, contract).run()
    assert result.repaired is True
    repair = provider.requests[1].messages[-1]
    assert isinstance(repair, UserMessage)
    assert "the reply is text, not a JSON object" in repair.text


async def test_prose_instead_of_an_answer_twice_is_kept_as_the_raw_answer(
    contract: AnswerContract,
) -> None:
    from active_memory.errors import MalformedAnswer

    provider = ScriptedProvider(
        [text_response("sure! here you go {not json"), text_response("here it is {still not")]
    )
    session = _session(provider, contract)
    with pytest.raises(MalformedAnswer) as caught:
        await session.run()
    assert caught.value.errors == (
        "the reply is text, not a JSON object: give the answer by calling the verdict tool",
    )
    assert (session.raw_answer, session.repaired) == ("here it is {still not", True)


async def test_prose_beside_investigation_is_not_taken_for_the_raw_answer(
    contract: AnswerContract, checkout: Toolbox
) -> None:
    provider = ScriptedProvider(
        [
            ModelResponse(
                text="let me look",
                tool_calls=(tool_call("read_file", READ),),
                stop_reason="tool_use",
            ),
            answer_response({"verdict": "keep"}),
            answer_response({"verdict": "keep"}),
        ]
    )
    session = _session(provider, contract, toolbox=checkout)
    with pytest.raises(ContractViolation):
        await session.run()
    assert session.raw_answer == '{"verdict": "keep"}'


async def test_the_last_two_turns_are_final_and_refuse_further_investigation(
    contract: AnswerContract, checkout: Toolbox
) -> None:
    read = tool_calls_response(tool_call("read_file", READ, id="c"))
    provider = ScriptedProvider([read, read, read, read])
    session = _session(provider, contract, toolbox=checkout, limits=SessionLimits(max_turns=4))

    with pytest.raises(ContractViolation, match="no answer was given"):
        await session.run()

    assert [r.final for r in provider.requests] == [False, False, True, True]
    assert session.tool_calls == 2
    final_note = provider.requests[2].messages[-1]
    assert isinstance(final_note, UserMessage)
    assert "Investigation is over" in final_note.text
    refused = provider.requests[3].messages[-2]
    assert isinstance(refused, ToolResult)
    assert refused.is_error


async def test_the_tool_budget_caps_calls_and_ends_investigation(
    contract: AnswerContract, checkout: Toolbox
) -> None:
    three = tool_calls_response(*(tool_call("read_file", READ, id=f"c{i}") for i in range(3)))
    provider = ScriptedProvider([three, answer_response(GOOD)])
    session = _session(provider, contract, toolbox=checkout, limits=SessionLimits(max_tool_calls=2))

    result = await session.run()

    assert result.tool_calls == 2
    results = [m for m in provider.requests[1].messages if isinstance(m, ToolResult)]
    assert [r.is_error for r in results] == [False, False, True]
    assert "budget is spent" in results[2].content
    assert provider.requests[1].final is True


async def test_a_cancel_token_stops_a_session_waiting_on_the_provider(
    contract: AnswerContract,
) -> None:
    started = asyncio.Event()

    async def hang(request: ModelRequest) -> ModelResponse:
        started.set()
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    token = CancelToken()
    session = _session(ScriptedProvider(hang), contract, cancel=token)
    task = asyncio.create_task(session.run())
    await started.wait()
    token.cancel()

    with pytest.raises(SessionCancelled, match="cancelled during turn 1"):
        await task


async def test_a_cancelled_token_stops_before_the_first_call(contract: AnswerContract) -> None:
    token = CancelToken()
    token.cancel()
    provider = ScriptedProvider([answer_response(GOOD)])
    with pytest.raises(SessionCancelled, match="after 0 turn"):
        await _session(provider, contract, cancel=token).run()
    assert provider.requests == []


async def test_cancelling_the_task_cancels_the_provider_call(contract: AnswerContract) -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def hang(request: ModelRequest) -> ModelResponse:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        raise AssertionError("unreachable")

    task = asyncio.create_task(_session(ScriptedProvider(hang), contract).run())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled.is_set()


async def test_the_deadline_cuts_a_hanging_provider_and_keeps_earlier_usage(
    contract: AnswerContract, checkout: Toolbox
) -> None:
    calls = 0

    async def then_hang(request: ModelRequest) -> ModelResponse:
        nonlocal calls
        calls += 1
        if calls == 1:
            return tool_calls_response(tool_call("read_file", READ, id="c1"), usage=USAGE)
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    session = _session(
        ScriptedProvider(then_hang), contract, toolbox=checkout, deadline=time.monotonic() + 0.3
    )
    with pytest.raises(ProviderDeadlineExceeded, match="turn 2"):
        await session.run()
    assert session.turns == 1
    assert session.usage == USAGE


async def test_provider_errors_propagate_with_the_counters_kept(contract: AnswerContract) -> None:
    provider = ScriptedProvider(
        [
            answer_response({"verdict": "keep"}, usage=USAGE, retries=1),
            ProviderTransientError("scripted", "overloaded", status=529),
        ]
    )
    session = _session(provider, contract)
    with pytest.raises(ProviderTransientError):
        await session.run()
    assert (session.turns, session.retries, session.usage) == (1, 1, USAGE)


async def test_run_session_accepts_a_bare_schema_dict() -> None:
    schema = {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"],
        "additionalProperties": False,
    }
    result = await run_session(
        ScriptedProvider([answer_response({"ok": True})]),
        BINDING,
        system="",
        prompt="Go.",
        contract=schema,
        contract_name="probe",
        deadline=time.monotonic() + 5,
    )
    assert result.answer == {"ok": True}
    assert result.answer_json == '{"ok": true}'


def test_check_answer_reports_json_and_schema_problems_without_raising(
    contract: AnswerContract,
) -> None:
    assert check_answer(contract, '{"verdict": "keep", "reason": "x"}').value is not None
    assert check_answer(contract, "[1]").errors == ("the answer must be a JSON object",)
    errors = check_answer(contract, '{"verdict": "no", "reason": "x", "extra": 1}').errors
    assert errors == (
        "(root): Additional properties are not allowed ('extra' was unexpected)",
        "verdict: 'no' is not one of ['keep', 'retire']",
    )


async def test_the_deadline_also_cuts_a_tool_that_does_not_return(
    contract: AnswerContract, checkout: Toolbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def stuck(call: object, *, deadline: float | None = None) -> object:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    monkeypatch.setattr(checkout, "run", stuck)
    provider = ScriptedProvider([tool_calls_response(tool_call("search_text", {}, id="c1"))])
    session = _session(provider, contract, toolbox=checkout, deadline=time.monotonic() + 0.2)
    with pytest.raises(ProviderDeadlineExceeded, match="during tool call 'search_text'"):
        await session.run()


async def test_an_answer_beside_investigation_calls_replies_to_every_call_on_repair(
    contract: AnswerContract, checkout: Toolbox
) -> None:
    mixed = ModelResponse(
        tool_calls=(tool_call("read_file", READ, id="c1"),),
        answer='{"verdict": "keep"}',
        answer_call_id="a1",
        stop_reason="tool_use",
    )
    provider = ScriptedProvider([mixed, answer_response(GOOD, call_id="a2")])

    result = await _session(provider, contract, toolbox=checkout).run()

    assert result.tool_calls == 0
    replies = [m for m in provider.requests[1].messages if isinstance(m, ToolResult)]
    assert [(r.call_id, r.is_error) for r in replies] == [("c1", True), ("a1", True)]
    assert "not run" in replies[0].content
    assert "'reason' is a required property" in replies[1].content


async def test_a_refusal_ends_the_session_without_a_repair_and_keeps_its_text(
    contract: AnswerContract,
) -> None:
    from active_memory.errors import ModelRefused

    refusal = ModelResponse(text="I can't help with that.", stop_reason="refusal")
    provider = ScriptedProvider([refusal])
    session = _session(provider, contract)
    with pytest.raises(ModelRefused, match=r"refused to give a 'verdict' answer .* turn 1"):
        await session.run()
    assert (session.turns, session.repaired) == (1, False)
    assert session.raw_answer == "I can't help with that."
    provider.assert_consumed()


async def test_an_answer_that_is_not_json_twice_is_a_malformed_answer(
    contract: AnswerContract,
) -> None:
    from active_memory.errors import MalformedAnswer

    provider = ScriptedProvider([answer_response("{no"), answer_response("still {no")])
    session = _session(provider, contract)
    with pytest.raises(MalformedAnswer) as caught:
        await session.run()
    assert isinstance(caught.value, ContractViolation)
    assert (session.raw_answer, session.repaired) == ("still {no", True)


async def test_an_invalid_answer_after_a_malformed_one_is_a_contract_violation(
    contract: AnswerContract,
) -> None:
    from active_memory.errors import MalformedAnswer

    provider = ScriptedProvider([answer_response("{no"), answer_response({"verdict": "keep"})])
    with pytest.raises(ContractViolation) as caught:
        await _session(provider, contract).run()
    assert not isinstance(caught.value, MalformedAnswer)


async def test_the_retries_of_a_call_that_failed_are_counted(contract: AnswerContract) -> None:
    failed = ProviderTransientError("p", "busy", status=503, cause="server_error", attempts=4)
    provider = ScriptedProvider([answer_response(GOOD, retries=2)])
    session = _session(provider, contract)
    await session.run()
    provider = ScriptedProvider([failed])
    failing = _session(provider, contract)
    with pytest.raises(ProviderTransientError):
        await failing.run()
    assert (session.retries, failing.retries, failing.turns) == (2, 3, 0)
