"""Bindings resolved through the registry; connections resolved through the environment."""

from __future__ import annotations

import sys
import time

import pytest

from active_memory.agents.providers import registry
from active_memory.agents.providers.anthropic import AnthropicProvider
from active_memory.agents.providers.base import AnswerContract, ModelProvider, ModelRequest
from active_memory.agents.providers.connections import Connection, resolve_endpoint
from active_memory.agents.providers.openai import OpenAIProvider
from active_memory.agents.providers.registry import (
    ProviderContext,
    create_provider,
    lane_provider,
    provider_names,
    register_provider,
)
from active_memory.errors import ConfigError, ProviderUnavailable
from active_memory.models.runs import Binding
from active_memory.testing import ScriptedProvider, answer_response
from agents.doubles import MockAPI, anthropic_message, chat_completion


def test_known_providers_are_listed_and_an_unknown_one_is_named() -> None:
    assert {"anthropic", "openai"} <= set(provider_names())
    with pytest.raises(ConfigError, match="unknown provider 'gemini'; known: anthropic"):
        create_provider(Binding(provider="gemini", model="m"), env={})


def test_unknown_lane_and_effort_fail_before_any_call() -> None:
    env = {"ANTHROPIC_API_KEY": "fake", "OPENAI_API_KEY": "fake"}
    with pytest.raises(ConfigError, match="'azure' is not an Anthropic lane"):
        create_provider(Binding(provider="anthropic", model="m", lane="azure"), env=env)
    with pytest.raises(ConfigError, match="'extreme' is not an OpenAI reasoning effort"):
        create_provider(Binding(provider="openai", model="m", effort="extreme"), env=env)
    with pytest.raises(ConfigError, match="'minimal' is not an Anthropic effort"):
        create_provider(Binding(provider="anthropic", model="m", effort="minimal"), env=env)


def test_each_binding_gets_its_lane_client() -> None:
    env = {
        "ANTHROPIC_API_KEY": "fake",
        "AWS_REGION": "us-east-1",
        "AWS_BEARER_TOKEN_BEDROCK": "fake",
        "OPENAI_API_KEY": "fake",
    }
    direct = create_provider(Binding(provider="anthropic", model="m"), env=env)
    bedrock = create_provider(Binding(provider="anthropic", model="m", lane="bedrock"), env=env)
    openai = create_provider(Binding(provider="openai", model="m"), env=env)
    assert isinstance(direct, AnthropicProvider)
    assert (direct.name, bedrock.name) == ("anthropic", "anthropic/bedrock")  # type: ignore[attr-defined]
    assert isinstance(openai, OpenAIProvider)
    assert openai.lane == "openai"


def test_a_declared_connection_with_a_base_url_makes_an_openai_binding_compatible() -> None:
    declared = {"vllm": Connection("vllm", base_url="http://127.0.0.1:8000/v1")}
    provider = create_provider(
        Binding(provider="openai", model="m", connections=("vllm",)), env={}, connections=declared
    )
    assert isinstance(provider, OpenAIProvider)
    assert (provider.lane, provider.host, provider.output) == (
        "compatible",
        "127.0.0.1:8000",
        "tool",
    )


async def test_connection_credentials_replace_the_standard_variable(api: MockAPI) -> None:
    env = {"ANTHROPIC_API_KEY": "fake-default", "TEAM_PROXY_API_KEY": "fake-team-key"}
    declared = {"team-proxy": Connection("team-proxy", api_key_env="TEAM_PROXY_API_KEY")}
    binding = Binding(provider="anthropic", model="m", connections=("team-proxy",))
    api.reply(anthropic_message({"type": "text", "text": "x"}))
    provider = create_provider(binding, env=env, connections=declared, http_client=api.client())
    contract = AnswerContract("a", {"type": "object"})
    await provider.complete(
        ModelRequest(model="m", system="", messages=(), contract=contract, deadline=None)
    )
    assert api.requests[0].headers["authorization"] == "Bearer fake-team-key"


def test_a_missing_connection_key_names_the_connection_variable() -> None:
    declared = {"corp": Connection("corp", api_key_env="CORP_ANTHROPIC_KEY", base_url="http://x")}
    binding = Binding(provider="anthropic", model="m", connections=("corp",))
    with pytest.raises(ProviderUnavailable, match="set CORP_ANTHROPIC_KEY"):
        create_provider(binding, env={}, connections=declared)


async def test_a_name_in_the_record_never_redirects_traffic_through_its_variables(
    api: MockAPI,
) -> None:
    env = {
        "OPENAI_API_KEY": "fake-openai-key",
        "GITHUB_BASE_URL": "http://127.0.0.1:9/v1",
        "GITHUB_API_KEY": "fake-github-key",
    }
    binding = Binding(provider="openai", model="m", connections=("github",))
    api.reply(chat_completion(content="{}"))
    provider = create_provider(binding, env=env, http_client=api.client())
    contract = AnswerContract("a", {"type": "object"})
    await provider.complete(
        ModelRequest(model="m", system="", messages=(), contract=contract, deadline=None)
    )
    request = api.requests[0]
    assert request.url.host == "api.openai.com"
    assert request.headers["authorization"] == "Bearer fake-openai-key"


def test_connection_resolution_order_and_skipping() -> None:
    env = {"GITHUB_TOKEN": "not-for-models", "LOCAL_BASE_URL": "http://127.0.0.1:9/v1"}
    declared = {
        "openai-only": Connection("openai-only", provider="openai", api_key_env="X_KEY"),
        "explicit": Connection("explicit", api_key_env="EXPLICIT_KEY"),
        "local": Connection("local", base_url_env="LOCAL_BASE_URL"),
    }
    # A name nobody declared is skipped, whatever variables its name would suggest.
    assert resolve_endpoint("anthropic", ("github",), env, declared) is None
    local = resolve_endpoint("openai", ("github", "local"), env, declared)
    assert local is not None
    assert (local.connection, local.base_url, local.api_key) == (
        "local",
        "http://127.0.0.1:9/v1",
        None,
    )
    # A declared connection for another provider is skipped; one for any provider applies.
    chosen = resolve_endpoint("anthropic", ("openai-only", "explicit"), env, declared)
    assert chosen is not None
    assert chosen.connection == "explicit"
    assert chosen.api_key_env == "EXPLICIT_KEY"
    # The caller's explicit connection wins over every declared one.
    cli = Connection("cli", base_url="http://127.0.0.1:8080/v1", lane="compatible")
    first = resolve_endpoint("openai", ("local",), env, declared, explicit=cli)
    assert first is not None
    assert (first.connection, first.lane) == ("cli", "compatible")


def test_the_callers_connection_chooses_lane_output_and_credential() -> None:
    env = {"OPENAI_API_KEY": "fake-hosted-key", "LOCAL_KEY": "fake-local-key"}
    binding = Binding(provider="openai", model="m", lane="codex")
    plain = Connection("cli", base_url="http://127.0.0.1:8080/v1", output="prompted")
    provider = create_provider(binding, env=env, connection=plain)
    assert isinstance(provider, OpenAIProvider)
    # A harness lane is no API lane; an own server then means a compatible one.
    assert (provider.lane, provider.output) == ("compatible", "prompted")
    # An own server without a named key variable gets no key (never the hosted API's).
    assert provider._client.api_key == "unused"
    keyed = Connection("cli", base_url="http://127.0.0.1:8080/v1", api_key_env="LOCAL_KEY",
                       lane="compatible")  # fmt: skip
    provider = create_provider(binding, env=env, connection=keyed)
    assert isinstance(provider, OpenAIProvider)
    assert (provider.lane, provider.output) == ("compatible", "tool")
    assert provider._client.api_key == "fake-local-key"


def test_a_lane_names_its_provider() -> None:
    assert lane_provider("compatible") == "openai"
    assert lane_provider("bedrock") == "anthropic"
    with pytest.raises(ConfigError, match=r"unknown lane 'ollama'; known: anthropic, bedrock"):
        lane_provider("ollama")


def test_an_endpoint_never_shows_its_key() -> None:
    declared = {"x": Connection("x", api_key_env="X_API_KEY")}
    endpoint = resolve_endpoint("openai", ("x",), {"X_API_KEY": "fake-secret-value"}, declared)
    assert endpoint is not None
    assert "fake-secret-value" not in repr(endpoint)


def test_a_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(ProviderUnavailable, match=r"pip install 'active-memory\[openai\]'"):
        create_provider(Binding(provider="openai", model="m"), env={"OPENAI_API_KEY": "fake"})
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(ProviderUnavailable, match=r"pip install 'active-memory\[bedrock\]'"):
        create_provider(Binding(provider="anthropic", model="m", lane="bedrock"), env={})


def test_bedrock_without_a_token_needs_boto3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)
    with pytest.raises(ProviderUnavailable, match="set AWS_BEARER_TOKEN_BEDROCK"):
        create_provider(
            Binding(provider="anthropic", model="m", lane="bedrock"), env={"AWS_REGION": "x"}
        )


async def test_a_registered_factory_serves_its_provider_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    scripted = ScriptedProvider([answer_response({})])

    def factory(binding: Binding, context: ProviderContext) -> ModelProvider:
        assert binding.model == "house-model"
        return scripted

    register_provider("house", factory)
    provider = create_provider(Binding(provider="house", model="house-model"), env={})
    contract = AnswerContract("a", {"type": "object"})
    response = await provider.complete(
        ModelRequest(
            model="house-model",
            system="",
            messages=(),
            contract=contract,
            deadline=time.monotonic() + 1,
        )
    )
    assert response.answer == "{}"
    assert "house" in provider_names()


def test_a_connection_beside_a_harness_lane_with_a_runner_means_the_providers_own_api() -> None:
    env = {"ANTHROPIC_API_KEY": "fake", "PATH": ""}
    own = Connection("override", lane="anthropic")
    claude = create_provider(
        Binding(provider="anthropic", model="m", lane="claude-code"), env=env, connection=own
    )
    assert claude.name == "anthropic"  # type: ignore[attr-defined]
