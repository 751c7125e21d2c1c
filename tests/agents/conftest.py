"""Fixtures for provider and session tests: a scripted HTTP server, a sleep that does not sleep
and a small strict contract. (The provider settings are scrubbed for every test, in the
top-level conftest.)"""

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
