"""Fixtures for provider and session tests: a scripted HTTP server, a sleep that does not sleep,
a small strict contract, and an environment with no real provider settings in it."""

from __future__ import annotations

from typing import Any

import pytest

from active_memory.agents.providers.base import AnswerContract
from active_memory.agents.providers.retry import RetryPolicy
from agents.doubles import FakeSleep, MockAPI

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["keep", "retire"]},
        "reason": {"type": "string", "maxLength": 200},
    },
    "required": ["verdict", "reason"],
    "additionalProperties": False,
}

_PROVIDER_ENV_PREFIXES = ("ANTHROPIC_", "OPENAI_", "AZURE_", "AWS_", "GOOGLE_", "CLOUD_ML_")


@pytest.fixture(autouse=True)
def _clean_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDKs also read os.environ; a developer's real settings must not leak into tests."""
    import os

    for name in list(os.environ):
        if name.startswith(_PROVIDER_ENV_PREFIXES):
            monkeypatch.delenv(name)


@pytest.fixture
def contract() -> AnswerContract:
    return AnswerContract(name="verdict", schema=VERDICT_SCHEMA)


@pytest.fixture
def fake_sleep() -> FakeSleep:
    return FakeSleep()


@pytest.fixture
def retry(fake_sleep: FakeSleep) -> RetryPolicy:
    return RetryPolicy(
        max_attempts=4, initial_wait=0.5, max_wait=8.0, jitter=0.25, sleep=fake_sleep
    )


@pytest.fixture
def api() -> MockAPI:
    return MockAPI()
