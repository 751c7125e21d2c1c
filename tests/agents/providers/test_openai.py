"""The OpenAI adapter at the HTTP layer: a mock transport injected into the SDK's client."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest
import respx

from active_memory.agents.providers.base import AnswerContract, ModelRequest, UserMessage
from active_memory.agents.providers.connections import Connection, Endpoint
from active_memory.agents.providers.openai import OpenAIProvider
from active_memory.agents.providers.registry import create_provider
from active_memory.agents.providers.retry import RetryPolicy
from active_memory.agents.tool_loop import Session
from active_memory.agents.tools import Toolbox
from active_memory.errors import (
    ContractViolation,
    ProviderDeadlineExceeded,
    ProviderUnavailable,
)
from active_memory.models.runs import Binding
from agents.doubles import FakeSleep, MockAPI, chat_completion

KEY_ENV = {"OPENAI_API_KEY": "sk-test-not-a-real-key-000"}
VERDICT_JSON = '{"verdict": "retire", "reason": "the file is gone"}'


def _provider(api: MockAPI, retry: RetryPolicy, **kwargs: object) -> OpenAIProvider:
    env = kwargs.pop("env", KEY_ENV)
    return OpenAIProvider(env=env, http_client=api.client(), retry=retry, **kwargs)  # type: ignore[arg-type]


def _request(contract: AnswerContract, **kwargs: object) -> ModelRequest:
    fields: dict[str, object] = {
        "model": "gpt-test",
        "system": "You review lessons.",
        "messages": (UserMessage("Decide."),),
        "contract": contract,
        "deadline": time.monotonic() + 30,
    }
    fields.update(kwargs)
    return ModelRequest(**fields)  # type: ignore[arg-type]


def _session(provider: OpenAIProvider, contract: AnswerContract, **kwargs: object) -> Session:
    return Session(
        provider,
        Binding(provider="openai", model="gpt-test", effort="low"),
        system="You review lessons.",
        prompt="Decide about lesson-1.",
        contract=contract,
        deadline=time.monotonic() + 30,
        **kwargs,  # type: ignore[arg-type]
    )


async def test_request_carries_strict_structured_output_tools_and_reasoning_effort(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract, tmp_path: Path
) -> None:
    api.reply(chat_completion(content=VERDICT_JSON))
    tools = Toolbox({"checkout": tmp_path}).specs()

    response = await _provider(api, retry).complete(
        _request(contract, tools=tools, effort="medium", max_tokens=999)
    )

    request = api.requests[0]
    assert str(request.url) == "https://api.openai.com/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY_ENV['OPENAI_API_KEY']}"
    body = api.body()
    assert body["model"] == "gpt-test"
    assert body["messages"][0] == {"role": "system", "content": "You review lessons."}
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "schema": dict(contract.schema), "strict": True},
    }
    assert [tool["function"]["name"] for tool in body["tools"]] == [
        "read_file",
        "list_folder",
        "search_text",
    ]
    assert all(tool["function"]["strict"] is True for tool in body["tools"])
    assert body["tool_choice"] == "auto"
    assert body["reasoning_effort"] == "medium"
    assert body["max_completion_tokens"] == 999
    assert response.answer == VERDICT_JSON
    assert response.stop_reason == "end_turn"


async def test_final_turn_turns_tools_off_so_only_the_answer_remains(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract, tmp_path: Path
) -> None:
    api.reply(chat_completion(content=VERDICT_JSON))
    tools = Toolbox({"checkout": tmp_path}).specs()
    await _provider(api, retry).complete(_request(contract, tools=tools, final=True))
    assert api.body()["tool_choice"] == "none"


async def test_azure_lane_posts_to_the_deployment_with_api_version_and_key_header(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract
) -> None:
    env = {
        "AZURE_OPENAI_API_KEY": "fake-azure-key",
        "AZURE_OPENAI_ENDPOINT": "https://example-resource.openai.azure.com",
        "OPENAI_API_VERSION": "2024-10-21",
    }
    api.reply(chat_completion(content=VERDICT_JSON))

    await _provider(api, retry, lane="azure", env=env).complete(
        _request(contract, model="my-deployment")
    )

    request = api.requests[0]
    assert request.url.host == "example-resource.openai.azure.com"
    assert request.url.path == "/openai/deployments/my-deployment/chat/completions"
    assert request.url.params["api-version"] == "2024-10-21"
    assert request.headers["api-key"] == "fake-azure-key"


async def test_compatible_lane_uses_the_connection_base_url_and_max_tokens(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract
) -> None:
    endpoint = Endpoint("vllm", None, None, "http://127.0.0.1:8000/v1", None)
    api.reply(chat_completion(content=VERDICT_JSON))

    await _provider(api, retry, lane="compatible", env={}, endpoint=endpoint).complete(
        _request(contract, model="qwen-test", max_tokens=512)
    )

    request = api.requests[0]
    assert str(request.url) == "http://127.0.0.1:8000/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer unused"
    assert api.body()["max_tokens"] == 512
    assert "max_completion_tokens" not in api.body()


async def test_compatible_server_through_the_registry_is_intercepted_by_respx(
    retry: RetryPolicy, contract: AnswerContract
) -> None:
    declared = {"llama": Connection("llama", base_url="http://127.0.0.1:8080/v1")}
    binding = Binding(provider="openai", model="local", connections=("github", "llama"))
    provider = create_provider(binding, env={}, connections=declared, retry=retry)
    with respx.mock(assert_all_called=True) as router:
        route = router.post("http://127.0.0.1:8080/v1/chat/completions").respond(
            json=chat_completion(content=VERDICT_JSON)
        )
        response = await provider.complete(_request(contract, model="local"))
    assert route.call_count == 1
    assert response.answer == VERDICT_JSON


async def test_rate_limit_honours_retry_after_ms_and_http_dates(
    api: MockAPI, retry: RetryPolicy, fake_sleep: FakeSleep, contract: AnswerContract
) -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=5), usegmt=True)
    api.reply({"error": {"message": "slow"}}, status=429, headers={"retry-after-ms": "1500"})
    api.reply({"error": {"message": "slow"}}, status=429, headers={"retry-after": when})
    api.reply(chat_completion(content=VERDICT_JSON))

    response = await _provider(api, retry).complete(_request(contract))

    assert response.retries == 2
    assert 1.5 <= fake_sleep.waits[0] <= 1.5 + retry.jitter
    assert 3.0 <= fake_sleep.waits[1] <= 5.0 + retry.jitter


async def test_server_error_then_success_is_one_retry(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract
) -> None:
    api.reply({"error": {"message": "internal"}}, status=500)
    api.reply(chat_completion(content=VERDICT_JSON))
    response = await _provider(api, retry).complete(_request(contract))
    assert response.retries == 1
    assert api.unused == 0


async def test_a_hanging_server_is_cut_at_the_deadline(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract
) -> None:
    api.hang()
    with pytest.raises(ProviderDeadlineExceeded):
        await _provider(api, retry).complete(_request(contract, deadline=time.monotonic() + 0.2))


async def test_refusal_is_reported_as_a_refusal_without_an_answer(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract
) -> None:
    body = chat_completion(content=None)
    body["choices"][0]["message"]["refusal"] = "I can't help with that."
    api.reply(body)
    response = await _provider(api, retry).complete(_request(contract))
    assert response.answer is None
    assert response.stop_reason == "refusal"
    assert response.text == "I can't help with that."


async def test_session_tool_loop_then_structured_answer_with_summed_usage(
    api: MockAPI,
    retry: RetryPolicy,
    fake_sleep: FakeSleep,
    contract: AnswerContract,
    tmp_path: Path,
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("def configure_bedrock():\n    pass\n")
    search = json.dumps(
        {
            "root": "checkout",
            "pattern": "configure_bedrock",
            "path": None,
            "regex": False,
            "max_matches": None,
        }
    )
    api.reply(
        chat_completion(tool_calls=[("call_1", "search_text", search)], finish_reason="tool_calls")
    )
    api.reply({"error": {"message": "busy"}}, status=503)
    usage = {
        "prompt_tokens": 40,
        "completion_tokens": 9,
        "total_tokens": 49,
        "prompt_tokens_details": {"cached_tokens": 30},
    }
    api.reply(chat_completion(content=VERDICT_JSON, usage=usage))

    result = await _session(
        _provider(api, retry), contract, toolbox=Toolbox({"checkout": tmp_path})
    ).run()

    assert result.answer == {"verdict": "retire", "reason": "the file is gone"}
    assert (result.turns, result.tool_calls, result.retries) == (2, 1, 1)
    assert result.usage.input_tokens == 50
    assert result.usage.output_tokens == 14
    assert result.usage.cache_read_tokens == 30
    tool_message = api.body()["messages"][-1]
    assert tool_message["role"] == "tool"
    assert tool_message["tool_call_id"] == "call_1"
    assert "checkout:src/app.py line 1: def configure_bedrock():" in tool_message["content"]


async def test_session_repairs_malformed_json_once_and_succeeds(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract
) -> None:
    api.reply(chat_completion(content='{"verdict": "keep", "reason": '))
    api.reply(chat_completion(content=VERDICT_JSON))

    result = await _session(_provider(api, retry), contract).run()

    assert result.repaired is True
    assert result.answer["verdict"] == "retire"
    repair = api.body()["messages"][-1]
    assert repair["role"] == "user"
    assert "the answer is not valid JSON" in repair["content"]
    assert api.body(0)["messages"][-1]["role"] == "user"
    assert api.body()["messages"][-2] == {
        "role": "assistant",
        "content": '{"verdict": "keep", "reason": ',
    }


async def test_session_fails_clearly_when_json_is_malformed_twice(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract
) -> None:
    api.reply(chat_completion(content="not json at all"))
    api.reply(chat_completion(content="[still not an object"))
    session = _session(_provider(api, retry), contract)

    with pytest.raises(ContractViolation) as caught:
        await session.run()

    assert caught.value.contract == "verdict"
    assert caught.value.errors[0].startswith("the answer is not valid JSON")
    assert str(caught.value).startswith("answer does not satisfy contract 'verdict'")
    assert session.turns == 2
    assert session.usage.input_tokens == 20


async def test_missing_credentials_name_the_variable_to_set() -> None:
    with pytest.raises(ProviderUnavailable, match=r"^no OpenAI API key: set OPENAI_API_KEY$"):
        OpenAIProvider(env={})
    with pytest.raises(ProviderUnavailable, match="set AZURE_OPENAI_ENDPOINT"):
        OpenAIProvider(lane="azure", env={"AZURE_OPENAI_API_KEY": "fake"})
    with pytest.raises(ProviderUnavailable, match="set OPENAI_API_VERSION"):
        OpenAIProvider(
            lane="azure",
            env={"AZURE_OPENAI_API_KEY": "fake", "AZURE_OPENAI_ENDPOINT": "https://x.example"},
        )
    with pytest.raises(ProviderUnavailable, match="set OPENAI_BASE_URL"):
        OpenAIProvider(lane="compatible", env={})


async def test_a_tool_call_for_etc_passwd_is_refused_over_the_wire(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract, tmp_path: Path
) -> None:
    escape = json.dumps(
        {"root": "checkout", "path": "../../etc/passwd", "offset": None, "limit": None}
    )
    api.reply(
        chat_completion(tool_calls=[("call_1", "read_file", escape)], finish_reason="tool_calls")
    )
    api.reply(chat_completion(content=VERDICT_JSON))

    result = await _session(
        _provider(api, retry), contract, toolbox=Toolbox({"checkout": tmp_path})
    ).run()

    refused = api.body()["messages"][-1]
    assert refused["role"] == "tool"
    assert (
        refused["content"] == "error: '../../etc/passwd' is refused: '..' may not appear in a path"
    )
    assert "root:" not in json.dumps(api.body())
    assert result.tool_calls == 1
