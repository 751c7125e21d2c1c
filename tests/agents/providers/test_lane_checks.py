"""What a route says about itself: a lane aimed at a server it was not made for is one warning,
and the model the server answered as is recorded and, when it is not the one asked for, said
once."""

from __future__ import annotations

import logging
import time

import pytest

from active_memory.agents.providers.base import AnswerContract, ModelRequest, UserMessage
from active_memory.agents.providers.connections import Connection, lane_mismatch
from active_memory.agents.providers.registry import create_provider
from active_memory.agents.providers.retry import RetryPolicy
from active_memory.models.runs import Binding
from agents.doubles import MockAPI, chat_completion

KEY_ENV = {"OPENAI_API_KEY": "sk-test-not-a-real-key-000"}
ANSWER = '{"verdict": "keep", "reason": "fine"}'


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


@pytest.mark.parametrize(
    ("lane", "host", "fits"),
    [
        ("openai", "127.0.0.1:8080", "compatible"),
        ("openai", "localhost:11434", "compatible"),
        ("openai", "[::1]:8000", "compatible"),
        ("openai", "gateway.example.com", "compatible"),
        ("openai", "api.openai.com", None),
        ("openai", "eu.api.openai.com", None),
        ("compatible", "127.0.0.1:8080", None),
        # An Anthropic-compatible server is the anthropic lane with a base URL: nothing fits
        # better, so nothing is said.
        ("anthropic", "127.0.0.1:8080", None),
        ("azure", "my-resource.openai.azure.com", None),
    ],
)
def test_a_hosted_lane_aimed_elsewhere_names_the_lane_that_fits(
    lane: str, host: str, fits: str | None
) -> None:
    warning = lane_mismatch(lane, host)
    if fits is None:
        assert warning is None
    else:
        assert warning == (
            f"warning: the {lane} lane is for api.openai.com, but its base URL points at "
            f"{host}; for another server use the {fits} lane (--lane {fits})"
        )


def test_the_openai_lane_at_a_local_server_is_one_warning_not_silence(
    caplog: pytest.LogCaptureFixture,
) -> None:
    binding = Binding(provider="openai", model="qwen", lane="openai")
    local = Connection("override", lane="openai", base_url="http://127.0.0.1:8080/v1")
    with caplog.at_level(logging.WARNING):
        provider = create_provider(binding, env={}, connection=local)
    assert getattr(provider, "lane", None) == "openai"  # accepted: said, never refused
    [warning] = _warnings(caplog)
    assert "127.0.0.1:8080" in warning
    assert "--lane compatible" in warning

    caplog.clear()
    with caplog.at_level(logging.WARNING):
        create_provider(binding, env=KEY_ENV)
        local = Connection("local", base_url="http://127.0.0.1:8080/v1")
        create_provider(binding.model_copy(update={"lane": "compatible"}), env={}, connection=local)
    assert _warnings(caplog) == []


def _request(contract: AnswerContract, model: str) -> ModelRequest:
    return ModelRequest(
        model=model, system="s", messages=(UserMessage("Decide."),), contract=contract,
        deadline=time.monotonic() + 30,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("requested", "answered", "warned"),
    [
        ("qwen2.5-coder-7b", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", True),
        ("gpt-4o", "gpt-4o-2024-08-06", False),  # a dated snapshot of the name asked for
        ("stand-in", "stand-in", False),
        ("stand-in", "", False),  # a server that names no model
    ],
)
async def test_a_server_answering_as_another_model_is_warned_once(
    requested: str,
    answered: str,
    warned: bool,
    api: MockAPI,
    retry: RetryPolicy,
    contract: AnswerContract,
    caplog: pytest.LogCaptureFixture,
) -> None:
    for _ in range(3):
        api.reply(chat_completion(content=ANSWER, model=answered))
    provider = create_provider(
        Binding(provider="openai", model=requested, lane="compatible"), env={},
        connection=Connection("local", base_url="http://127.0.0.1:8080/v1"),
        http_client=api.client(), retry=retry,
    )  # fmt: skip
    with caplog.at_level(logging.WARNING):
        responses = [await provider.complete(_request(contract, requested)) for _ in range(3)]
    assert {response.model for response in responses} == {answered}
    warnings = _warnings(caplog)
    if warned:
        assert warnings == [
            f"warning: openai/compatible at 127.0.0.1:8080 was asked for model {requested!r} but "
            f"answered as {answered!r}; check --model (or the binding's model)"
        ]
    else:
        assert warnings == []
