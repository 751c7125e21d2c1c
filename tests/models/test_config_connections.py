"""The runtime JSON's connection entries: explicit endpoints a binding's names select."""

from __future__ import annotations

import pytest

from active_memory.errors import ConfigError
from active_memory.models.config import parse_runtime_config
from active_memory.postmortem.binding import declared_connections


def _with(connections: object) -> dict[str, object]:
    return {"globalAgents": {"postmortem": {"connections": connections}}}


def test_a_connection_entry_becomes_a_declared_connection() -> None:
    entry = {"provider": "openai", "lane": "compatible", "baseUrl": "http://127.0.0.1:8080/v1",
             "apiKeyEnv": "LLAMA_KEY", "output": "tool"}  # fmt: skip
    config = parse_runtime_config(_with({"local-llama": entry}))
    declared = declared_connections(config.postmortem)
    local = declared["local-llama"]
    assert (local.provider, local.lane, local.base_url, local.api_key_env, local.output) == (
        "openai",
        "compatible",
        "http://127.0.0.1:8080/v1",
        "LLAMA_KEY",
        "tool",
    )
    assert declared_connections(parse_runtime_config({}).postmortem) == {}


@pytest.mark.parametrize(
    ("connections", "where", "rule"),
    [
        ({"l": {"baseUrl": "ftp://x"}}, "connections.l.baseUrl", "http(s) URL with a host"),
        ({"l": {"baseUrl": "http://u:p@h/v1"}}, "connections.l.baseUrl", "must not carry"),
        ({"l": {"apiKey": "sk-x"}}, "connections.l", "unknown key(s) 'apiKey'"),
        ({"l": {"apiKeyEnv": "not a name"}}, "connections.l.apiKeyEnv", "variable name"),
        ({"l": {"output": "json"}}, "connections.l.output", "tool, native, prompted"),
        ({"two words": {}}, "connections", "connection name 'two words'"),
    ],
)
def test_a_bad_connection_entry_is_refused_where_it_is(
    connections: object, where: str, rule: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_runtime_config(_with(connections))
    assert caught.value.path == f"globalAgents.postmortem.{where}"
    assert rule in caught.value.problem
