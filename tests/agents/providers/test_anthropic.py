"""The Anthropic adapter at the HTTP layer: a mock transport injected into the SDK's client."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from active_memory.agents.providers.anthropic import AnthropicProvider
from active_memory.agents.providers.base import (
    AnswerContract,
    AssistantMessage,
    ModelRequest,
    ToolCall,
    ToolResult,
    UserMessage,
)
from active_memory.agents.providers.connections import Endpoint
from active_memory.agents.providers.retry import RetryPolicy
from active_memory.agents.tools import Toolbox
from active_memory.errors import (
    ConfigError,
    ProviderDeadlineExceeded,
    ProviderError,
    ProviderNoAnswer,
    ProviderTransientError,
    ProviderUnavailable,
)
from agents.doubles import FakeSleep, MockAPI, anthropic_message, tool_use

KEY_ENV = {"ANTHROPIC_API_KEY": "sk-ant-test-not-a-real-key"}
VERDICT = {"verdict": "keep", "reason": "still true"}


def _provider(api: MockAPI, retry: RetryPolicy, **kwargs: object) -> AnthropicProvider:
    env = kwargs.pop("env", KEY_ENV)
    return AnthropicProvider(env=env, http_client=api.client(), retry=retry, **kwargs)  # type: ignore[arg-type]


def _request(contract: AnswerContract, **kwargs: object) -> ModelRequest:
    fields: dict[str, object] = {
        "model": "claude-test",
        "system": "You review lessons.",
        "messages": (UserMessage("Decide."),),
        "contract": contract,
        "deadline": time.monotonic() + 30,
    }
    fields.update(kwargs)
    return ModelRequest(**fields)  # type: ignore[arg-type]


async def test_request_carries_model_effort_tools_and_the_contract_as_answer_tool(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract, tmp_path: Path
) -> None:
    api.reply(anthropic_message(tool_use("verdict", VERDICT, "toolu_1"), stop_reason="tool_use"))
    tools = Toolbox({"checkout": tmp_path}).specs()
    provider = _provider(api, retry)

    response = await provider.complete(_request(contract, tools=tools, effort="high"))

    request = api.requests[0]
    assert str(request.url) == "https://api.anthropic.com/v1/messages"
    assert request.headers["authorization"] == f"Bearer {KEY_ENV['ANTHROPIC_API_KEY']}"
    body = api.body()
    assert body["model"] == "claude-test"
    assert body["system"] == [
        {"type": "text", "text": "You review lessons.", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": "high"}
    assert [tool["name"] for tool in body["tools"]] == [
        "read_file",
        "list_folder",
        "search_text",
        "verdict",
    ]
    assert body["tools"][-1]["input_schema"] == dict(contract.schema)
    assert body["tool_choice"] == {"type": "auto"}
    assert response.answer is not None
    assert response.answer_call_id == "toolu_1"
    assert response.tool_calls == ()


async def test_final_turn_forces_the_answer_tool_without_thinking(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract
) -> None:
    api.reply(anthropic_message(tool_use("verdict", VERDICT, "toolu_1"), stop_reason="tool_use"))
    api.reply(anthropic_message(tool_use("verdict", VERDICT, "toolu_2"), stop_reason="tool_use"))
    provider = _provider(api, retry)

    await provider.complete(_request(contract, final=True))
    await provider.complete(_request(contract, final=True, effort="low"))

    assert api.body(0)["tool_choice"] == {"type": "tool", "name": "verdict"}
    assert "thinking" not in api.body(0)
    # Forced tool use is refused while thinking; the answer tool stays allowed instead.
    assert api.body(1)["tool_choice"] == {"type": "auto"}


async def test_effort_none_disables_thinking_and_unknown_effort_is_refused(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract
) -> None:
    api.reply(anthropic_message({"type": "text", "text": "hi"}))
    provider = _provider(api, retry)
    await provider.complete(_request(contract, effort="none"))
    assert api.body()["thinking"] == {"type": "disabled"}
    assert "output_config" not in api.body()

    with pytest.raises(ConfigError, match="'minimal' is not an Anthropic effort"):
        await provider.complete(_request(contract, effort="minimal"))


async def test_history_replays_tool_calls_results_and_thinking_in_wire_order(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract
) -> None:
    api.reply(anthropic_message({"type": "text", "text": "ok"}))
    from active_memory.agents.providers.base import ReasoningBlock

    history = (
        UserMessage("Decide."),
        AssistantMessage(
            text="Reading.",
            tool_calls=(ToolCall("toolu_1", "read_file", '{"path": "a"}'),),
            reasoning=(ReasoningBlock("thinking", "hmm", "sig"),),
        ),
        ToolResult("toolu_1", "read_file", "contents", is_error=False),
        UserMessage("Answer now."),
    )
    await _provider(api, retry).complete(_request(contract, messages=history))

    messages = api.body()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}},
    ]
    assert messages[2]["content"][0]["type"] == "tool_result"
    assert messages[2]["content"][1] == {
        "type": "text",
        "text": "Answer now.",
        "cache_control": {"type": "ephemeral"},
    }


async def test_usage_counts_cache_tokens_inside_input(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract
) -> None:
    usage = {
        "input_tokens": 10,
        "output_tokens": 7,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 20,
    }
    api.reply(anthropic_message({"type": "text", "text": "x"}, usage=usage))
    response = await _provider(api, retry).complete(_request(contract))
    assert response.usage.input_tokens == 130
    assert response.usage.output_tokens == 7
    assert response.usage.cache_read_tokens == 100
    assert response.usage.cache_write_tokens == 20


async def test_bedrock_lane_posts_to_the_model_invoke_path_with_the_bearer_token(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract
) -> None:
    env = {"AWS_REGION": "eu-west-3", "AWS_BEARER_TOKEN_BEDROCK": "fake-bedrock-token"}
    api.reply(anthropic_message(tool_use("verdict", VERDICT, "toolu_1"), stop_reason="tool_use"))
    provider = _provider(api, retry, lane="bedrock", env=env)

    response = await provider.complete(_request(contract, model="anthropic.claude-test-v1:0"))

    request = api.requests[0]
    assert request.url.host == "bedrock-runtime.eu-west-3.amazonaws.com"
    assert request.url.path == "/model/anthropic.claude-test-v1:0/invoke"
    assert request.headers["authorization"] == "Bearer fake-bedrock-token"
    body = api.body()
    assert "model" not in body
    assert "anthropic_version" in body  # Bedrock takes the API version in the body
    assert response.answer is not None


async def test_vertex_lane_posts_to_the_publisher_model_path_with_the_connection_token(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract
) -> None:
    env = {"CLOUD_ML_REGION": "us-east5", "ANTHROPIC_VERTEX_PROJECT_ID": "demo-project"}
    endpoint = Endpoint("gcp", "fake-access-token", "GCP_API_KEY", None, None)
    api.reply(anthropic_message(tool_use("verdict", VERDICT, "toolu_1"), stop_reason="tool_use"))
    provider = _provider(api, retry, lane="vertex", env=env, endpoint=endpoint)

    await provider.complete(_request(contract, model="claude-test@20260101"))

    request = api.requests[0]
    assert request.url.host == "us-east5-aiplatform.googleapis.com"
    assert request.url.path == (
        "/v1/projects/demo-project/locations/us-east5/publishers/anthropic/models/"
        "claude-test@20260101:rawPredict"
    )
    assert request.headers["authorization"] == "Bearer fake-access-token"
    assert "model" not in api.body()


async def test_rate_limit_with_retry_after_waits_as_asked_then_succeeds(
    api: MockAPI, retry: RetryPolicy, fake_sleep: FakeSleep, contract: AnswerContract
) -> None:
    api.reply(
        {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}},
        status=429,
        headers={"retry-after": "3"},
    )
    api.reply(anthropic_message({"type": "text", "text": "ok"}))

    response = await _provider(api, retry).complete(_request(contract))

    assert response.retries == 1
    assert len(fake_sleep.waits) == 1
    assert 3.0 <= fake_sleep.waits[0] <= 3.0 + retry.jitter
    # Our retries are the only ones: the SDK made exactly one request per attempt.
    assert len(api.requests) == 2


async def test_server_error_and_overload_are_retried_with_backoff(
    api: MockAPI, retry: RetryPolicy, fake_sleep: FakeSleep, contract: AnswerContract
) -> None:
    api.reply({"type": "error", "error": {"type": "api_error", "message": "boom"}}, status=500)
    api.reply(
        {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}, status=529
    )
    api.reply(anthropic_message({"type": "text", "text": "ok"}))

    response = await _provider(api, retry).complete(_request(contract))

    assert response.retries == 2
    assert len(fake_sleep.waits) == 2
    assert fake_sleep.waits[1] > fake_sleep.waits[0] - retry.jitter


async def test_dropped_connections_exhaust_the_attempts_then_fail_transiently(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract
) -> None:
    for _ in range(retry.max_attempts):
        api.drop_connection()
    with pytest.raises(ProviderTransientError, match="gave up after 4 attempts"):
        await _provider(api, retry).complete(_request(contract))
    assert api.unused == 0


async def test_bad_request_is_not_retried(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract
) -> None:
    error = {"type": "error", "error": {"type": "invalid_request_error", "message": "bad tool"}}
    api.reply(error, status=400)
    with pytest.raises(ProviderError, match="HTTP 400: bad tool") as caught:
        await _provider(api, retry).complete(_request(contract))
    assert not isinstance(caught.value, ProviderTransientError)
    assert len(api.requests) == 1


async def test_rejected_key_names_the_variable_to_fix(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract
) -> None:
    error = {"type": "error", "error": {"type": "authentication_error", "message": "invalid x"}}
    api.reply(error, status=401)
    with pytest.raises(ProviderUnavailable, match="check the value of ANTHROPIC_API_KEY"):
        await _provider(api, retry).complete(_request(contract))


async def test_a_hanging_server_is_cut_at_the_deadline(
    api: MockAPI, retry: RetryPolicy, contract: AnswerContract
) -> None:
    api.hang()
    started = time.monotonic()
    with pytest.raises(ProviderDeadlineExceeded, match=r"did not answer within 0\.2 s") as raised:
        await _provider(api, retry).complete(_request(contract, deadline=time.monotonic() + 0.2))
    assert time.monotonic() - started < 5
    assert isinstance(raised.value, ProviderNoAnswer)
    assert raised.value.cause == "timed_out"
    assert raised.value.host is not None
    assert raised.value.host in str(raised.value)


async def test_a_retry_after_past_the_deadline_ends_the_call_as_the_rate_limit_it_was(
    api: MockAPI, retry: RetryPolicy, fake_sleep: FakeSleep, contract: AnswerContract
) -> None:
    api.reply(
        {"type": "error", "error": {"type": "rate_limit_error", "message": "later"}},
        status=429,
        headers={"retry-after": "120"},
    )
    with pytest.raises(ProviderTransientError, match=r"waiting 120\.\d+s more would pass") as e:
        await _provider(api, retry).complete(_request(contract, deadline=time.monotonic() + 10))
    assert not isinstance(e.value, ProviderDeadlineExceeded)
    assert (e.value.cause, e.value.attempts) == ("rate_limited", 1)
    assert fake_sleep.waits == []


async def test_missing_key_names_the_variable_to_set() -> None:
    with pytest.raises(ProviderUnavailable, match=r"^no Anthropic API key: set ANTHROPIC_API_KEY$"):
        AnthropicProvider(env={})
    with pytest.raises(ProviderUnavailable, match="set AWS_REGION"):
        AnthropicProvider(lane="bedrock", env={})
    with pytest.raises(ProviderUnavailable, match="set CLOUD_ML_REGION"):
        AnthropicProvider(lane="vertex", env={})
