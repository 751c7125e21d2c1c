"""Every lane in every output mode, on the wire: the real SDKs against a mock transport.

For each lane and mode a session calls an investigation tool before it answers; the tools are
offered, and callable, on every turn before the final one; the final turn enforces the answer
the way the mode says (a forced answer tool, native structured output, or neither).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from active_memory.agents.providers.anthropic import AnthropicProvider
from active_memory.agents.providers.base import AnswerContract, OutputMode
from active_memory.agents.providers.connections import Endpoint
from active_memory.agents.providers.openai import OpenAIProvider
from active_memory.agents.providers.retry import RetryPolicy
from active_memory.agents.providers.sdk_adapter import SdkAdapter
from active_memory.agents.tool_loop import Session, SessionLimits
from active_memory.agents.tools import Toolbox
from active_memory.models.runs import Binding
from agents.doubles import MockAPI, anthropic_message, chat_completion, tool_use

VERDICT = {"verdict": "keep", "reason": "still true"}
INVESTIGATION = {"read_file", "list_folder", "search_text"}
LISTING = {"root": "checkout", "path": ""}


@dataclass(frozen=True)
class Lane:
    family: str
    lane: str
    env: dict[str, str]
    endpoint: Endpoint | None = None

    @property
    def compatible(self) -> bool:
        return self.lane == "compatible"

    def provider(
        self, api: MockAPI, retry: RetryPolicy, output: OutputMode
    ) -> SdkAdapter[Any, Any]:
        kind = OpenAIProvider if self.family == "openai" else AnthropicProvider
        return kind(
            lane=self.lane,
            env=self.env,
            endpoint=self.endpoint,
            http_client=api.client(),
            retry=retry,
            output=output,
        )

    # -- what the scripted server answers --------------------------------------------------

    def tool_call(self, id: str) -> dict[str, Any]:
        if self.family == "openai":
            calls = [(id, "list_folder", json.dumps(LISTING))]
            return chat_completion(tool_calls=calls, finish_reason="tool_calls")
        return anthropic_message(tool_use("list_folder", LISTING, id), stop_reason="tool_use")

    def answer(self, output: OutputMode, value: dict[str, Any], id: str) -> dict[str, Any]:
        text = json.dumps(value)
        if self.family == "openai":
            if output == "tool":
                return chat_completion(
                    tool_calls=[(id, "verdict", text)], finish_reason="tool_calls"
                )
            return chat_completion(content=text)
        if output == "tool":
            return anthropic_message(tool_use("verdict", value, id), stop_reason="tool_use")
        return anthropic_message({"type": "text", "text": text})

    # -- what the client sent -------------------------------------------------------------

    def offered(self, body: dict[str, Any]) -> set[str]:
        if self.family == "openai":
            return {tool["function"]["name"] for tool in body.get("tools", ())}
        return {tool["name"] for tool in body.get("tools", ())}

    def schema_on_wire(self, body: dict[str, Any]) -> bool:
        if self.family == "openai":
            return "response_format" in body
        return "format" in body.get("output_config", {})


LANES = [
    Lane("openai", "openai", {"OPENAI_API_KEY": "sk-test-not-a-real-key-000"}),
    Lane(
        "openai",
        "azure",
        {
            "AZURE_OPENAI_API_KEY": "fake-azure-key",
            "AZURE_OPENAI_ENDPOINT": "https://example-resource.openai.azure.com",
            "OPENAI_API_VERSION": "2024-10-21",
        },
    ),
    Lane(
        "openai",
        "compatible",
        {},
        Endpoint("cli", None, None, "http://127.0.0.1:8080/v1", None),
    ),
    Lane("anthropic", "anthropic", {"ANTHROPIC_API_KEY": "sk-ant-test-not-a-real-key"}),
    Lane(
        "anthropic",
        "bedrock",
        {"AWS_REGION": "eu-west-3", "AWS_BEARER_TOKEN_BEDROCK": "fake-bedrock-token"},
    ),
    Lane(
        "anthropic",
        "vertex",
        {"CLOUD_ML_REGION": "us-east5", "ANTHROPIC_VERTEX_PROJECT_ID": "demo-project"},
        Endpoint("gcp", "fake-access-token", "GCP_TOKEN", None, None),
    ),
]
MODES: tuple[OutputMode, ...] = ("tool", "native", "prompted")
CASES = [pytest.param(lane, mode, id=f"{lane.lane}-{mode}") for lane in LANES for mode in MODES]


def _session(
    provider: SdkAdapter[Any, Any], contract: AnswerContract, root: Path, **kwargs: Any
) -> Session:
    return Session(
        provider,
        Binding(provider=provider.family, model="model-test", lane=provider.lane),
        system="You review lessons.",
        prompt="Decide about lesson-1.",
        contract=contract,
        deadline=time.monotonic() + 30,
        toolbox=Toolbox({"checkout": root}),
        specialist="repository_maintenance",
        **kwargs,
    )


def _checkout(tmp_path: Path) -> Path:
    (tmp_path / "notes.md").write_text("the lesson still holds\n")
    return tmp_path


@pytest.mark.parametrize(("lane", "output"), CASES)
async def test_a_tool_call_round_trips_before_the_answer(
    lane: Lane,
    output: OutputMode,
    api: MockAPI,
    retry: RetryPolicy,
    contract: AnswerContract,
    tmp_path: Path,
) -> None:
    api.reply(lane.tool_call("call_1"))
    api.reply(lane.answer(output, VERDICT, "call_2"))
    provider = lane.provider(api, retry, output)

    result = await _session(provider, contract, _checkout(tmp_path)).run()

    assert result.answer == VERDICT
    assert (result.turns, result.tool_calls, result.repaired) == (2, 1, False)
    first, second = api.body(0), api.body(1)
    for body in (first, second):
        assert lane.offered(body) >= INVESTIGATION
        choice = body["tool_choice"]
        assert choice in ("auto", {"type": "auto"})
        # The answer format never shuts the tools out: no forced JSON next to them on a
        # compatible server, and the answer tool beside them in the tool mode.
        assert ("verdict" in lane.offered(body)) == (output == "tool")
        expect_schema = output == "native" and not lane.compatible
        assert lane.schema_on_wire(body) == expect_schema
    assert "notes.md" in json.dumps(second["messages"][-1])  # the tool result went back
    prompted = "satisfying this JSON Schema" in json.dumps(first)
    assert prompted == (output == "prompted")


def _final_turn_expectations(lane: Lane, output: OutputMode) -> Callable[[dict[str, Any]], None]:
    def check(body: dict[str, Any]) -> None:
        offered = lane.offered(body)
        choice = body.get("tool_choice")
        if output == "tool":
            assert not lane.schema_on_wire(body)
            if lane.family == "anthropic":
                assert choice == {"type": "tool", "name": "verdict"}
                assert "verdict" in offered
            elif lane.compatible:
                assert (offered, choice) == ({"verdict"}, "required")
            else:
                assert choice == {"type": "function", "function": {"name": "verdict"}}
            return
        assert "verdict" not in offered
        assert lane.schema_on_wire(body) == (output == "native")
        if lane.compatible:
            assert "tools" not in body
            assert choice is None
        else:
            assert choice in ("none", {"type": "none"})

    return check


@pytest.mark.parametrize(("lane", "output"), CASES)
async def test_the_final_turn_enforces_the_answer_the_mode_chose(
    lane: Lane,
    output: OutputMode,
    api: MockAPI,
    retry: RetryPolicy,
    contract: AnswerContract,
    tmp_path: Path,
) -> None:
    api.reply(lane.tool_call("call_1"))
    api.reply(lane.answer(output, VERDICT, "call_2"))
    provider = lane.provider(api, retry, output)
    session = _session(provider, contract, _checkout(tmp_path), limits=SessionLimits(max_turns=3))

    result = await session.run()

    assert (result.answer, result.tool_calls) == (VERDICT, 1)
    first, final = api.body(0), api.body(1)
    assert lane.offered(first) >= INVESTIGATION
    _final_turn_expectations(lane, output)(final)


@pytest.mark.parametrize(("lane", "output"), CASES)
async def test_a_broken_answer_is_repaired_on_the_channel_it_came_by(
    lane: Lane,
    output: OutputMode,
    api: MockAPI,
    retry: RetryPolicy,
    contract: AnswerContract,
    tmp_path: Path,
) -> None:
    api.reply(lane.answer(output, {"verdict": "keep"}, "call_1"))
    api.reply(lane.answer(output, VERDICT, "call_2"))
    provider = lane.provider(api, retry, output)

    result = await _session(provider, contract, _checkout(tmp_path)).run()

    assert (result.answer, result.repaired) == (VERDICT, True)
    repair = json.dumps(api.body(1)["messages"][-1])
    assert "'reason' is a required property" in repair
    if output == "tool":
        # The repair answers the answer call itself, as its error result.
        assert "call_1" in repair
    _final_turn_expectations(lane, output)(api.body(1))


def test_each_lane_has_its_default_output_mode() -> None:
    assert OpenAIProvider.default_output("openai") == "native"
    assert OpenAIProvider.default_output("azure") == "native"
    assert OpenAIProvider.default_output("compatible") == "tool"
    for lane in ("anthropic", "bedrock", "vertex"):
        assert AnthropicProvider.default_output(lane) == "tool"


def test_native_output_on_anthropic_keeps_the_effort_beside_the_format(
    contract: AnswerContract,
) -> None:
    from active_memory.agents.providers.anthropic_wire import build_params
    from active_memory.agents.providers.base import ModelRequest, UserMessage

    request = ModelRequest(
        model="claude-test",
        system="s",
        messages=(UserMessage("Decide."),),
        contract=contract,
        effort="high",
        final=True,
    )
    params = build_params(request, "native")
    assert params["output_config"] == {
        "effort": "high",
        "format": {"type": "json_schema", "schema": dict(contract.schema)},
    }
    assert params["thinking"] == {"type": "adaptive"}
    assert "tools" not in params  # no investigation tools were given, and no answer tool
