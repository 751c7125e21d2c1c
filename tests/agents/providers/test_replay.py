"""Recorded exchanges: recording is deterministic and scrubbed; replay is exact and loud."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from active_memory.agents.providers.anthropic import AnthropicProvider
from active_memory.agents.providers.base import (
    AnswerContract,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    RequestLabels,
    UserMessage,
)
from active_memory.agents.providers.retry import RetryPolicy
from active_memory.agents.tool_loop import Session, SessionResult
from active_memory.agents.tools import Toolbox
from active_memory.errors import ReplayMismatch
from active_memory.models.runs import Binding
from active_memory.testing import (
    RecordingProvider,
    ReplayProvider,
    ScriptedProvider,
    text_response,
)
from agents.doubles import MockAPI, anthropic_message, tool_use

FIXTURE = Path(__file__).parents[2] / "fixtures" / "providers" / "tool_loop" / "exchanges.jsonl"
SPECIALIST = "repository_maintenance"
READ = {"root": "checkout", "path": "notes.md", "offset": None, "limit": None}


class Capture:
    """Keeps every response a provider gave, to compare live and replayed runs."""

    def __init__(self, inner: ModelProvider) -> None:
        self.inner = inner
        self.responses: list[ModelResponse] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        response = await self.inner.complete(request)
        self.responses.append(response)
        return response


def _script(api: MockAPI) -> None:
    usage = {"input_tokens": 120, "output_tokens": 30, "cache_read_input_tokens": 80}
    api.reply(
        anthropic_message(
            {"type": "thinking", "thinking": "Check the notes.", "signature": "sig-1"},
            tool_use("read_file", READ, "toolu_1"),
            stop_reason="tool_use",
            usage=usage,
        )
    )
    api.reply(
        anthropic_message(
            tool_use("verdict", {"verdict": "keep"}, "toolu_2"), stop_reason="tool_use"
        )
    )
    api.reply(
        anthropic_message(
            tool_use("verdict", {"verdict": "keep", "reason": "notes agree"}, "toolu_3"),
            stop_reason="tool_use",
        )
    )


async def _session(provider: ModelProvider, contract: AnswerContract, root: Path) -> SessionResult:
    (root / "notes.md").write_text("The retry wrapper still exists.\n")
    session = Session(
        provider,
        Binding(provider="anthropic", model="claude-test", effort="medium"),
        system="You maintain repository lessons.",
        prompt="Decide about lesson-01.",
        contract=contract,
        deadline=time.monotonic() + 30,
        toolbox=Toolbox({"checkout": root}),
        specialist=SPECIALIST,
    )
    return await session.run()


async def _record(
    tmp_path: Path, contract: AnswerContract, retry: RetryPolicy
) -> tuple[SessionResult, Path, list[ModelResponse]]:
    api = MockAPI()
    _script(api)
    live = AnthropicProvider(
        env={"ANTHROPIC_API_KEY": "sk-ant-api03-fakefakefakefakefake"},
        http_client=api.client(),
        retry=retry,
    )
    capture = Capture(live)
    recorder = RecordingProvider(capture, tmp_path / "recorded" / "exchanges.jsonl")
    (tmp_path / "live").mkdir()
    result = await _session(recorder, contract, tmp_path / "live")
    await recorder.aclose()
    return result, recorder.path, capture.responses


async def test_recording_an_http_session_gives_the_committed_fixture_bytes(
    tmp_path: Path, contract: AnswerContract, retry: RetryPolicy
) -> None:
    # Regenerate after an intended change by copying the recorded file over FIXTURE.
    result, path, _ = await _record(tmp_path, contract, retry)
    assert result.repaired is True
    assert result.turns == 3
    assert path.read_bytes() == FIXTURE.read_bytes()
    assert b"sk-ant-api03" not in path.read_bytes()


async def test_replay_gives_byte_identical_responses_and_answer(
    tmp_path: Path, contract: AnswerContract, retry: RetryPolicy
) -> None:
    live_result, _, live_responses = await _record(tmp_path, contract, retry)
    replay = ReplayProvider(FIXTURE, strict=True)
    capture = Capture(replay)
    (tmp_path / "replay").mkdir()

    replayed = await _session(capture, contract, tmp_path / "replay")
    replay.assert_consumed()

    assert capture.responses == live_responses
    assert replayed.answer_json.encode() == live_result.answer_json.encode()
    assert (replayed.usage, replayed.turns, replayed.tool_calls) == (
        live_result.usage,
        live_result.turns,
        live_result.tool_calls,
    )


async def test_recording_a_replay_reproduces_the_file(
    tmp_path: Path, contract: AnswerContract
) -> None:
    again = RecordingProvider(ReplayProvider(FIXTURE), tmp_path / "again.jsonl")
    await _session(again, contract, tmp_path)
    await again.aclose()
    assert (tmp_path / "again.jsonl").read_bytes() == FIXTURE.read_bytes()
    # A recording is run evidence: written whole and private, like the evidence files.
    assert (tmp_path / "again.jsonl").stat().st_mode & 0o777 == 0o600


def _request(contract: AnswerContract, turn: int, text: str = "Decide.") -> ModelRequest:
    return ModelRequest(
        model="claude-test",
        system="",
        messages=(UserMessage(text),),
        contract=contract,
        labels=RequestLabels(SPECIALIST, 0, turn),
    )


async def test_an_unexpected_call_names_specialist_batch_and_turn(
    contract: AnswerContract,
) -> None:
    replay = ReplayProvider(FIXTURE)
    with pytest.raises(ReplayMismatch) as caught:
        await replay.complete(_request(contract, turn=4))
    assert "unexpected call: specialist 'repository_maintenance' batch 0 turn 4" in str(
        caught.value
    )


async def test_a_call_replayed_twice_is_unexpected(contract: AnswerContract) -> None:
    replay = ReplayProvider(FIXTURE)
    await replay.complete(_request(contract, turn=1))
    with pytest.raises(ReplayMismatch, match="turn 1 was already replayed once"):
        await replay.complete(_request(contract, turn=1))


async def test_missing_calls_are_reported_as_leftovers(contract: AnswerContract) -> None:
    replay = ReplayProvider(FIXTURE)
    await replay.complete(_request(contract, turn=1))
    with pytest.raises(ReplayMismatch) as caught:
        replay.assert_consumed()
    message = str(caught.value)
    assert "2 recorded exchange(s)" in message
    assert "specialist 'repository_maintenance' batch 0 turn 2" in message
    assert "specialist 'repository_maintenance' batch 0 turn 3" in message


async def test_strict_replay_refuses_a_request_that_changed(contract: AnswerContract) -> None:
    replay = ReplayProvider(FIXTURE, strict=True)
    with pytest.raises(ReplayMismatch, match="turn 1 differs from the recording"):
        await replay.complete(_request(contract, turn=1, text="Something else."))


async def test_recordings_scrub_keys_and_given_secrets(
    tmp_path: Path, contract: AnswerContract
) -> None:
    leaky = text_response(
        "key sk-ant-api03-abcdefghijklmnopqrstuvwxyz, header Bearer abcdefghijklmnopqrstu, "
        "aws AKIAABCDEFGHIJKLMNOP, custom hunter2-password"
    )
    recorder = RecordingProvider(
        ScriptedProvider([leaky]), tmp_path / "x.jsonl", secrets=["hunter2-password"]
    )
    await recorder.complete(_request(contract, turn=1))
    text = recorder.save().read_text()
    record = json.loads(text)
    assert record["response"]["text"] == (
        "key [REDACTED], header [REDACTED], aws [REDACTED], custom [REDACTED]"
    )
    assert set(record) == {
        "specialist",
        "batch",
        "turn",
        "request_digest",
        "request",
        "response",
    }


def test_a_malformed_recording_fails_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(FIXTURE.read_text().splitlines()[0] + '\n{"specialist": "x"}\n')
    with pytest.raises(ReplayMismatch, match=r"bad\.jsonl:2: not a recorded exchange"):
        ReplayProvider(path)


def test_a_recording_with_duplicate_labels_is_refused(tmp_path: Path) -> None:
    line = FIXTURE.read_text().splitlines()[0]
    path = tmp_path / "dup.jsonl"
    path.write_text(f"{line}\n{line}\n")
    with pytest.raises(ReplayMismatch, match="turn 1 is recorded twice"):
        ReplayProvider(path)
