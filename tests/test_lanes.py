"""The lane table: every API lane has its provider's adapter and client, every harness lane its
harness, and the registry and ``--lane`` offer exactly the table's."""

from __future__ import annotations

import importlib

import click
import pytest

from active_memory.agents.providers import registry
from active_memory.cli.postmortem import postmortem
from active_memory.errors import ConfigError
from active_memory.harnesses import HARNESSES
from active_memory.lanes import (
    API_LANE_NAMES,
    LANES,
    LaneRow,
    api_lanes,
    is_harness_lane,
    lane_row,
    provider_names,
    runner_lanes,
)


def missing_adapters(rows: tuple[LaneRow, ...]) -> list[str]:
    """What the rows need and do not find: for an API lane, ``PROVIDER`` in its provider's
    module with a client for the lane; for a harness lane, its harness's row, and ``RUNNER`` in
    its runner's module under agents/harness_lanes/ when it names one."""
    harnesses = {row.name for row in HARNESSES}
    missing = []
    for row in rows:
        if row.provider is None:
            if row.harness not in harnesses:
                missing.append(f"harness {row.harness!r} of lane {row.name!r}")
            if row.runner is not None:
                try:
                    module = importlib.import_module(
                        f"active_memory.agents.harness_lanes.{row.runner}"
                    )
                    module.RUNNER  # noqa: B018
                except (ModuleNotFoundError, AttributeError):
                    missing.append(f"RUNNER in agents/harness_lanes/{row.runner}.py")
            continue
        try:
            module = importlib.import_module(f"active_memory.agents.providers.{row.provider}")
            module.PROVIDER.client_builder(row.name)
        except (ModuleNotFoundError, AttributeError, ConfigError):
            missing.append(f"a client for lane {row.name!r} in agents/providers/{row.provider}.py")
    return missing


def test_every_lane_has_its_adapter() -> None:
    assert missing_adapters(LANES) == []


def test_a_lane_without_an_adapter_is_reported() -> None:
    rows = (
        LaneRow("foundry", provider="anthropic"),
        LaneRow("le-chat", provider="mistral"),
        LaneRow("gemini-cli", harness="gemini"),
        LaneRow("codex", harness="codex", runner="codex_exec"),
    )
    assert missing_adapters(rows) == [
        "a client for lane 'foundry' in agents/providers/anthropic.py",
        "a client for lane 'le-chat' in agents/providers/mistral.py",
        "harness 'gemini' of lane 'gemini-cli'",
        "RUNNER in agents/harness_lanes/codex_exec.py",
    ]


def test_each_providers_adapter_serves_its_rows_and_its_default_lane_first() -> None:
    for provider in provider_names():
        adapter = registry.provider_adapter(provider)
        assert adapter.family == provider
        assert adapter.lanes == api_lanes(provider)
        assert adapter.lanes[0] == provider
        assert adapter.default_lane(None) == provider
    assert set(provider_names()) <= set(registry.provider_names())


def test_harness_lanes_come_from_the_harness_rows() -> None:
    assert [row.name for row in LANES if row.harness] == [row.lane for row in HARNESSES]
    assert all(is_harness_lane(row.lane) for row in HARNESSES)
    assert not is_harness_lane("bedrock")
    assert not is_harness_lane(None)
    assert lane_row("nowhere") is None
    assert len({row.name for row in LANES}) == len(LANES)


def test_install_extras_follow_the_rows() -> None:
    anthropic = registry.provider_adapter("anthropic")
    assert [anthropic.extra(lane) for lane in api_lanes("anthropic")] == [
        "anthropic", "bedrock", "vertex"]  # fmt: skip
    assert {registry.provider_adapter("openai").extra(lane) for lane in api_lanes("openai")} == {
        "openai"
    }


def test_the_lane_option_offers_the_api_lanes_then_the_harness_lanes_with_a_runner() -> None:
    lane = next(param for param in postmortem.params if param.name == "lane")
    assert isinstance(lane.type, click.Choice)
    assert tuple(lane.type.choices) == (*API_LANE_NAMES, *(row.name for row in runner_lanes()))
    assert [row.name for row in runner_lanes()] == ["claude-code", "codex", "copilot", "pi"]
    assert all(row.harness is not None for row in runner_lanes())


def test_a_row_is_frozen() -> None:
    row = LANES[0]
    with pytest.raises(AttributeError, match="frozen"):
        row.provider = "openai"  # type: ignore[misc]


def test_an_adapter_asked_for_a_lane_outside_its_clients_table_names_itself() -> None:
    adapter = registry.provider_adapter("openai")
    with pytest.raises(ConfigError, match="the OpenAI adapter has no client for lane 'vertex'"):
        adapter.client_builder("vertex")
