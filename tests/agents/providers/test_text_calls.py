"""Text-form tool calls at the HTTP layer: a reply that is only a call written as JSON text is
taken as that call on the compatible lane (and where a connection turns it on), and nothing
else is."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from active_memory.agents.providers.base import (
    AnswerContract,
    ModelRequest,
    ModelResponse,
    RequestLabels,
    ToolSpec,
    UserMessage,
)
from active_memory.agents.providers.codec import response_from_dict, response_to_dict
from active_memory.agents.providers.connections import Connection
from active_memory.agents.providers.openai import OpenAIProvider
from active_memory.agents.providers.registry import create_provider
from active_memory.agents.providers.retry import RetryPolicy
from active_memory.agents.providers.text_calls import TEXT_CALL_PREFIX
from active_memory.agents.tool_loop import Session
from active_memory.agents.tools import Toolbox
from active_memory.models.config import parse_runtime_config
from active_memory.models.runs import Binding
from active_memory.postmortem.binding import BindingOverride, declared_connections
from agents.doubles import MockAPI, anthropic_message, chat_completion

LOCAL = {"base_url": "http://127.0.0.1:8080/v1"}
VERDICT = {"verdict": "keep", "reason": "still there"}


def _compatible(api: MockAPI, retry: RetryPolicy, **kwargs: Any) -> OpenAIProvider:
    return OpenAIProvider(
        lane="compatible", env={"OPENAI_BASE_URL": LOCAL["base_url"]},
        http_client=api.client(), retry=retry, **kwargs,
    )  # fmt: skip


def _request(contract: AnswerContract, root: Path, **kwargs: Any) -> ModelRequest:
    fields: dict[str, Any] = {
        "model": "qwen2.5-coder-1.5b",
        "system": "You review lessons.",
        "messages": (UserMessage("Decide."),),
        "contract": contract,
        "tools": Toolbox({"checkout": root}).specs(),
        "deadline": time.monotonic() + 30,
        "labels": RequestLabels("graph_discovery", 0, 1),
    }
    fields.update(kwargs)
    return ModelRequest(**fields)


def _said(text: str) -> dict[str, Any]:
    return chat_completion(content=text, model="qwen2.5-coder-1.5b")


def _call_text(name: str, arguments: Any, key: str = "arguments") -> str:
    return json.dumps({"name": name, key: arguments})


ROOT = {"root": "checkout", "path": ""}
LISTING = _call_text("list_folder", ROOT)


@pytest.mark.parametrize(
    "written",
    [
        pytest.param(LISTING, id="bare"),
        pytest.param(f"```json\n{LISTING}\n```", id="fenced"),
        pytest.param(f"  ```\n{LISTING}\n```\n", id="fenced-no-language"),
        pytest.param(
            _call_text("list_folder", json.dumps({"root": "checkout", "path": ""})),
            id="arguments-as-json-text",
        ),
        pytest.param(
            _call_text("list_folder", {"root": "checkout", "path": ""}, "parameters"),
            id="llama-parameters",
        ),
    ],
)
async def test_a_reply_that_is_only_a_call_is_taken_as_that_call_on_the_compatible_lane(
    written: str, api: MockAPI, retry: RetryPolicy, contract: AnswerContract, tmp_path: Path
) -> None:
    api.reply(_said(written))
    response = await _compatible(api, retry).complete(_request(contract, tmp_path))
    [call] = response.tool_calls
    assert (call.name, json.loads(call.arguments)) == ("list_folder", ROOT)
    assert call.id.startswith(TEXT_CALL_PREFIX)
    assert response.text_form
    assert response.answer is None
    assert response.text == ""
    assert response.stop_reason == "tool_use"


async def test_omitted_optional_arguments_count_as_null(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract, tmp_path: Path
) -> None:
    api.reply(_said(_call_text("read_file", {"root": "checkout", "path": "a.py"})))
    response = await _compatible(api, retry).complete(_request(contract, tmp_path))
    [call] = response.tool_calls
    assert json.loads(call.arguments) == {
        "root": "checkout", "path": "a.py", "offset": None, "limit": None
    }  # fmt: skip


NOT_CALLS = [
    pytest.param(_call_text("delete_folder", {"root": "checkout", "path": ""}), id="unknown-tool"),
    pytest.param(_call_text("list_folder", {"root": "elsewhere", "path": ""}), id="bad-enum"),
    pytest.param(_call_text("list_folder", {"root": "checkout"}), id="required-missing"),
    pytest.param(
        _call_text("list_folder", {"root": "checkout", "path": "", "x": 1}), id="extra-argument"
    ),
    pytest.param(_call_text("list_folder", ["checkout", ""]), id="arguments-not-an-object"),
    pytest.param(f"Let me look first.\n{LISTING}", id="prose-before"),
    pytest.param(f"```json\n{LISTING}\n```\nThen I will answer.", id="prose-after"),
    pytest.param(f"{LISTING}\n{LISTING}", id="two-objects"),
    pytest.param(f"[{LISTING}]", id="a-list"),
    pytest.param(
        json.dumps(
            {"name": "list_folder", "arguments": {"root": "checkout", "path": ""}, "id": "x"}
        ),
        id="extra-key",
    ),
    pytest.param(json.dumps({"name": "list_folder"}), id="no-arguments"),
    pytest.param(json.dumps(VERDICT), id="a-plain-answer"),
]


@pytest.mark.parametrize("written", NOT_CALLS)
@pytest.mark.parametrize("output", ["tool", "native", "prompted"])
async def test_anything_else_stays_what_it_was_without_text_calls(
    written: str,
    output: str,
    api: MockAPI,
    retry: RetryPolicy,
    contract: AnswerContract,
    tmp_path: Path,
) -> None:
    api.reply(_said(written)).reply(_said(written))
    request = _request(contract, tmp_path)
    taking = await _compatible(api, retry, output=output).complete(request)
    plain = await _compatible(api, retry, output=output, text_calls=False).complete(request)
    assert taking == plain
    assert not taking.tool_calls
    assert not taking.text_form


async def test_on_the_final_turn_an_investigation_call_stays_text(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract, tmp_path: Path
) -> None:
    api.reply(_said(LISTING))
    response = await _compatible(api, retry).complete(_request(contract, tmp_path, final=True))
    assert not response.tool_calls
    assert not response.text_form


async def test_a_text_form_call_of_the_answer_tool_is_the_answer_and_replays_as_that_call(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract, tmp_path: Path
) -> None:
    api.reply(_said(f"```json\n{_call_text('verdict', VERDICT)}\n```"))
    provider = _compatible(api, retry)
    request = _request(contract, tmp_path, final=True)
    response = await provider.complete(request)
    assert json.loads(response.answer or "") == VERDICT
    assert (response.answer_call_id or "").startswith(TEXT_CALL_PREFIX)
    assert response.text_form

    # Where the answer tool is not offered (the native mode), the same text stays the answer
    # text as written: the session's contract check and repair turn deal with it.
    api.reply(_said(_call_text("verdict", VERDICT)))
    native = await _compatible(api, retry, output="native").complete(request)
    assert native.answer == _call_text("verdict", VERDICT)
    assert native.answer_call_id is None
    assert not native.text_form


async def test_the_synthetic_call_id_is_stable_for_the_same_turn_and_call(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract, tmp_path: Path
) -> None:
    for _ in range(3):
        api.reply(_said(LISTING))
    provider = _compatible(api, retry)
    first = await provider.complete(_request(contract, tmp_path))
    again = await provider.complete(_request(contract, tmp_path))
    later = await provider.complete(
        _request(contract, tmp_path, labels=RequestLabels("graph_discovery", 0, 2))
    )
    assert first.tool_calls[0].id == again.tool_calls[0].id
    assert later.tool_calls[0].id != first.tool_calls[0].id


def test_a_recording_keeps_the_text_form_mark_and_omits_it_when_unset() -> None:
    marked = ModelResponse(text_form=True, stop_reason="tool_use")
    assert response_from_dict(response_to_dict(marked)) == marked
    assert "text_form" not in response_to_dict(ModelResponse())


# -- defaults and configuration -----------------------------------------------------------------


async def test_hosted_lanes_do_not_take_text_calls_unless_told(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract, tmp_path: Path
) -> None:
    env = {"OPENAI_API_KEY": "sk-test-not-a-real-key-000"}
    binding = Binding(provider="openai", model="gpt-test", lane="openai")
    api.reply(_said(LISTING)).reply(_said(LISTING))
    hosted = create_provider(binding, env=env, http_client=api.client(), retry=retry)
    told = create_provider(
        binding, env=env, http_client=api.client(), retry=retry,
        connection=Connection("told", text_calls=True),
    )  # fmt: skip
    assert not (await hosted.complete(_request(contract, tmp_path))).tool_calls
    assert (await told.complete(_request(contract, tmp_path))).text_form


def test_the_compatible_lane_takes_text_calls_unless_a_connection_says_not() -> None:
    binding = Binding(provider="openai", model="qwen", lane="compatible")
    on = create_provider(binding, env={}, connection=Connection("local", **LOCAL))
    off = create_provider(
        binding, env={}, connection=Connection("local", text_calls=False, **LOCAL)
    )
    assert isinstance(on, OpenAIProvider)
    assert isinstance(off, OpenAIProvider)
    assert (on.text_calls, off.text_calls) == (True, False)


def test_runtime_json_and_the_command_line_carry_the_switch() -> None:
    runtime = parse_runtime_config(
        {"globalAgents": {"postmortem": {"connections": {
            "local": {"lane": "compatible", "baseUrl": LOCAL["base_url"], "textCalls": False}
        }}}}
    )  # fmt: skip
    assert declared_connections(runtime.postmortem)["local"].text_calls is False
    connection = BindingOverride(text_calls=True).connection()
    assert connection is not None
    assert connection.text_calls is True
    assert BindingOverride().connection() is None


# -- a session ----------------------------------------------------------------------------------


async def test_a_session_investigates_through_a_text_form_call_and_then_answers(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract, tmp_path: Path
) -> None:
    (tmp_path / "retry.py").write_text("def with_backoff(): ...\n", encoding="utf-8")
    api.reply(_said(f"```json\n{LISTING}\n```"))
    api.reply(
        chat_completion(
            tool_calls=[("call_2", "verdict", json.dumps(VERDICT))],
            finish_reason="tool_calls",
            model="qwen2.5-coder-1.5b",
        )
    )
    session = Session(
        _compatible(api, retry),
        Binding(provider="openai", model="qwen2.5-coder-1.5b", lane="compatible"),
        system="You review lessons.",
        prompt="Decide about lesson-1.",
        contract=contract,
        deadline=time.monotonic() + 30,
        toolbox=Toolbox({"checkout": tmp_path}),
    )
    result = await session.run()

    assert result.answer == VERDICT
    assert (result.turns, result.tool_calls, session.text_calls) == (2, 1, 1)
    assert not result.repaired
    # The call goes back as a call, its listing as its result.
    messages = api.body(1)["messages"]
    call = messages[2]["tool_calls"][0]
    assert call["id"].startswith(TEXT_CALL_PREFIX)
    assert call["function"]["name"] == "list_folder"
    assert messages[3]["role"] == "tool"
    assert messages[3]["tool_call_id"] == call["id"]
    assert "retry.py" in messages[3]["content"]
    assert session.answered_model == "qwen2.5-coder-1.5b"


async def test_the_anthropic_lane_takes_text_calls_only_when_told(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract, tmp_path: Path
) -> None:
    env = {"ANTHROPIC_API_KEY": "sk-ant-test-not-a-real-key"}
    binding = Binding(provider="anthropic", model="claude-test")
    written = anthropic_message({"type": "text", "text": f"```json\n{LISTING}\n```"})
    api.reply(written).reply(written)
    plain = create_provider(binding, env=env, http_client=api.client(), retry=retry)
    told = create_provider(
        binding, env=env, http_client=api.client(), retry=retry,
        connection=Connection("told", text_calls=True),
    )  # fmt: skip
    assert not (await plain.complete(_request(contract, tmp_path))).tool_calls
    [call] = (await told.complete(_request(contract, tmp_path))).tool_calls
    assert (call.name, json.loads(call.arguments)) == ("list_folder", ROOT)


async def test_a_host_tool_with_references_and_any_of_nulls_is_checked_against_its_schema(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract, tmp_path: Path
) -> None:
    lookup = ToolSpec("lookup", "Look a term up.", {
        "type": "object",
        "properties": {"term": {"$ref": "#/$defs/term"},
                       "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
        "required": ["term", "limit"],
        "additionalProperties": False,
        "$defs": {"term": {"type": "string", "minLength": 2}},
    })  # fmt: skip
    api.reply(_said(_call_text("lookup", {"term": "retry"})))
    api.reply(_said(_call_text("lookup", {"term": "r"})))
    provider = _compatible(api, retry)
    taken = await provider.complete(_request(contract, tmp_path, tools=(lookup,)))
    refused = await provider.complete(_request(contract, tmp_path, tools=(lookup,)))
    assert json.loads(taken.tool_calls[0].arguments) == {"term": "retry", "limit": None}
    assert not refused.tool_calls  # too short for the referenced rule: stays text
