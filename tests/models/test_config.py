from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from active_memory.errors import ConfigError
from active_memory.models.config import (
    ActiveMemoryConfig,
    PostmortemConfig,
    RuntimeConfig,
    load_runtime_config,
    parse_runtime_config,
)


def test_absent_sections_get_the_documented_defaults() -> None:
    config = parse_runtime_config({"harness": "claude", "nodes": []})
    assert config.active_memory.repository is True
    assert config.active_memory.graph is True
    assert config.active_memory.node_injection_tokens == 16_000
    assert config.active_memory.hook_injection_tokens == 8_000
    assert config.active_memory.hook_injection_bytes == 32_000
    assert config.postmortem.enabled is True
    assert config.postmortem.source_node is None
    assert config.postmortem.timeout_ms == 600_000


def test_explicit_values_are_read() -> None:
    config = parse_runtime_config(
        {
            "activeMemory": {
                "repository": False,
                "graph": True,
                "nodeInjectionTokens": 1,
                "hookInjectionTokens": 64_000,
            },
            "globalAgents": {
                "postmortem": {"enabled": False, "sourceNode": "worker", "timeoutMs": 1}
            },
        }
    )
    assert config.active_memory.repository is False
    assert config.active_memory.node_injection_tokens == 1
    assert config.active_memory.hook_injection_tokens == 64_000
    assert config.postmortem.enabled is False
    assert config.postmortem.source_node == "worker"
    assert config.postmortem.timeout_ms == 1


@pytest.mark.parametrize("field", ["nodeInjectionTokens", "hookInjectionTokens"])
@pytest.mark.parametrize("value", [0, 64_001, -5, 1.5, "100", True, None])
def test_token_fields_accept_only_integers_from_1_to_64000(field: str, value: Any) -> None:
    with pytest.raises(ConfigError) as info:
        parse_runtime_config({"activeMemory": {field: value}})
    assert info.value.path == f"activeMemory.{field}"
    assert "1 to 64000" in str(info.value)


@pytest.mark.parametrize("value", [0, 600_001, 2.0, "600000"])
def test_timeout_ms_accepts_only_integers_from_1_to_600000(value: Any) -> None:
    with pytest.raises(ConfigError, match=r"globalAgents\.postmortem\.timeoutMs"):
        parse_runtime_config({"globalAgents": {"postmortem": {"timeoutMs": value}}})


@pytest.mark.parametrize(
    ("runtime", "where", "allowed"),
    [
        ({"activeMemory": {"repo": True}}, "activeMemory", "repository, graph"),
        ({"globalAgents": {"reviewer": {}}}, "globalAgents", "postmortem"),
        (
            {"globalAgents": {"postmortem": {"timeout": 5}}},
            "globalAgents.postmortem",
            "enabled, sourceNode, timeoutMs",
        ),
    ],
)
def test_unknown_keys_are_rejected_listing_the_allowed_ones(
    runtime: dict[str, Any], where: str, allowed: str
) -> None:
    with pytest.raises(ConfigError) as info:
        parse_runtime_config(runtime)
    assert info.value.path == where
    assert allowed in str(info.value)


def test_saved_budget_bytes_is_rejected_with_upgrade_instructions() -> None:
    with pytest.raises(ConfigError) as info:
        parse_runtime_config({"activeMemory": {"repository": True, "budgetBytes": 2048}})
    message = str(info.value)
    assert info.value.path == "activeMemory.budgetBytes"
    assert "remove it" in message
    assert "nodeInjectionTokens" in message
    assert "hookInjectionTokens" in message


@pytest.mark.parametrize("value", [1, "true", None])
def test_scope_switches_must_be_booleans(value: Any) -> None:
    with pytest.raises(ConfigError, match="true or false"):
        parse_runtime_config({"activeMemory": {"graph": value}})


def test_sections_must_be_objects() -> None:
    with pytest.raises(ConfigError, match="activeMemory: must be a JSON object"):
        parse_runtime_config({"activeMemory": [1]})


def test_load_runtime_config_names_a_file_that_is_not_json(tmp_path: Path) -> None:
    bad = tmp_path / "runtime.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"runtime\.json: is not valid JSON \(line 1"):
        load_runtime_config(bad)
    good = tmp_path / "ok.json"
    good.write_text(json.dumps({"activeMemory": {"graph": False}}), encoding="utf-8")
    assert load_runtime_config(good).active_memory.graph is False


def test_null_sections_get_the_defaults() -> None:
    config = parse_runtime_config({"activeMemory": None, "globalAgents": {"postmortem": None}})
    assert config == RuntimeConfig()


def test_runtime_json_keys_are_camel_case_only() -> None:
    with pytest.raises(ConfigError) as info:
        parse_runtime_config({"activeMemory": {"node_injection_tokens": 100}})
    assert info.value.path == "activeMemory"
    assert "'node_injection_tokens'" in info.value.problem
    assert "nodeInjectionTokens" in info.value.problem


@pytest.mark.parametrize(
    ("build", "path", "rule"),
    [
        (lambda: ActiveMemoryConfig(hook_injection_tokens=0), "hook_injection_tokens",
         "is 0; it must be from 1 to 64000"),
        (lambda: ActiveMemoryConfig(graph="yes"), "graph", "must be true or false"),
        (lambda: PostmortemConfig(source_node=""), "source_node", "non-empty node id"),
        (lambda: ActiveMemoryConfig(budget=1), "ActiveMemoryConfig", "unknown key(s) 'budget'"),
    ],
)  # fmt: skip
def test_building_a_section_in_code_checks_it_the_same_way(
    build: Any, path: str, rule: str
) -> None:
    # Built in code, a section names the attribute; read from the runtime JSON, the key.
    with pytest.raises(ConfigError) as info:
        build()
    assert info.value.path == path
    assert rule in info.value.problem


def test_sections_are_frozen_and_built_by_attribute_name() -> None:
    config = ActiveMemoryConfig(graph=False, hook_injection_tokens=100)
    assert (config.graph, config.hook_injection_bytes, config.enabled) == (False, 400, True)
    with pytest.raises(ValidationError):
        config.graph = True  # type: ignore[misc]


def test_output_caps_default_and_are_read_per_run() -> None:
    defaults = parse_runtime_config({}).postmortem
    assert (defaults.answer_tokens, defaults.investigation_tokens, defaults.reasoning_tokens) == (
        16_384,
        4_096,
        8_192,
    )
    caps = {"answerTokens": 2_048, "investigationTokens": 512, "reasoningTokens": 0}
    read = parse_runtime_config({"globalAgents": {"postmortem": caps}}).postmortem
    assert (read.answer_tokens, read.investigation_tokens, read.reasoning_tokens) == (2_048, 512, 0)


@pytest.mark.parametrize(
    ("caps", "path", "rule"),
    [
        ({"answerTokens": 100}, "answerTokens", "it must be from 256 to 128000"),
        ({"investigationTokens": "4k"}, "investigationTokens", "must be an integer from 256"),
        ({"reasoningTokens": -1}, "reasoningTokens", "it must be from 0 to 128000"),
        (
            {"answerTokens": 1_024, "investigationTokens": 2_048},
            "investigationTokens",
            "is 2048; it must not exceed answerTokens (1024)",
        ),
    ],
)
def test_a_bad_output_cap_is_one_error_naming_its_key(
    caps: dict[str, Any], path: str, rule: str
) -> None:
    with pytest.raises(ConfigError) as info:
        parse_runtime_config({"globalAgents": {"postmortem": caps}})
    assert info.value.path == f"globalAgents.postmortem.{path}"
    assert rule in str(info.value)
