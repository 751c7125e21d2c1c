"""Recorded exchanges: recording is deterministic and scrubbed; replay is exact and loud."""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path
from typing import Any

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
from active_memory.agents.providers.replay import scrub
from active_memory.agents.providers.retry import RetryPolicy
from active_memory.agents.tool_loop import Session, SessionResult
from active_memory.agents.tools import Toolbox
from active_memory.errors import ReplayChanged, ReplayMismatch
from active_memory.models.runs import Binding
from active_memory.screening.redaction_marks import redaction_mark
from active_memory.screening.verdict import screen_texts
from active_memory.testing import (
    RecordingProvider,
    ReplayProvider,
    ScriptedProvider,
    text_response,
)
from agents.doubles import MockAPI, anthropic_message, tool_use

FIXTURE = Path(__file__).parents[2] / "fixtures" / "providers" / "tool_loop" / "exchanges.jsonl"
SPECIALIST = "repository_maintenance"
PROMPT_SHA = "a" * 64
CONTRACT_SHA = "c" * 64
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


async def _session(
    provider: ModelProvider,
    contract: AnswerContract,
    root: Path,
    *,
    system: str = "You maintain repository lessons.",
    prompt: str = "Decide about lesson-01.",
    model: str = "claude-test",
    versions: tuple[str, str] = (PROMPT_SHA, CONTRACT_SHA),
) -> SessionResult:
    (root / "notes.md").write_text("The retry wrapper still exists.\n")
    session = Session(
        provider,
        Binding(provider="anthropic", model=model, effort="medium"),
        system=system,
        prompt=prompt,
        contract=contract,
        deadline=time.monotonic() + 30,
        toolbox=Toolbox({"checkout": root}),
        specialist=SPECIALIST,
        versions=versions,
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
    recorder = RecordingProvider(
        capture, tmp_path / "recorded" / "exchanges.jsonl", lane="anthropic"
    )
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


async def test_a_recorded_answer_is_screened_as_the_live_one_was(
    tmp_path: Path, contract: AnswerContract
) -> None:
    token = "ghp_" + "a1B2c3D4" * 4 + "e5F6"
    live = f"Export GITHUB_TOKEN={token} before pushing to the mirror."
    recorder = RecordingProvider(ScriptedProvider([text_response(live)]), tmp_path / "x.jsonl")
    await recorder.complete(_request(contract, turn=1))
    text = recorder.save().read_text()
    replayed = json.loads(text)["response"]["text"]
    assert token not in text
    assert screen_texts([replayed]).codes == screen_texts([live]).codes
    assert screen_texts([replayed]).codes == ("secret:github_token",)


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


async def test_a_strict_replay_of_the_same_session_passes(
    tmp_path: Path, contract: AnswerContract
) -> None:
    replay = ReplayProvider(FIXTURE, strict=True)
    result = await _session(replay, contract, tmp_path)
    replay.assert_consumed()
    assert result.turns == 3


async def test_a_prompt_edit_is_named_with_the_first_changed_line(
    tmp_path: Path, contract: AnswerContract
) -> None:
    replay = ReplayProvider(FIXTURE, strict=True)
    with pytest.raises(ReplayChanged) as caught:
        await _session(
            replay,
            contract,
            tmp_path,
            system="You retire lessons.",
            versions=("b" * 64, CONTRACT_SHA),
        )
    assert caught.value.changed == ("prompt",)
    assert caught.value.part == "system"
    assert "prompt changed; first differing part system: line 1 at character 4: recorded " in str(
        caught.value
    )
    assert "'You retire lessons.'" in str(caught.value)


async def test_new_evidence_is_named_evidence_with_the_message_that_differs(
    tmp_path: Path, contract: AnswerContract
) -> None:
    replay = ReplayProvider(FIXTURE, strict=True)
    with pytest.raises(ReplayChanged) as caught:
        await _session(replay, contract, tmp_path, prompt="Decide about lesson-02.")
    assert caught.value.changed == ("evidence",)
    assert caught.value.part == "messages[0]"
    assert "lesson-02" in str(caught.value)


async def test_a_different_model_is_named_model(tmp_path: Path, contract: AnswerContract) -> None:
    replay = ReplayProvider(FIXTURE, strict=True)
    with pytest.raises(ReplayChanged) as caught:
        await _session(replay, contract, tmp_path, model="claude-other")
    assert caught.value.changed == ("model",)
    assert caught.value.part == "model"


async def test_a_contract_change_is_named_contract(
    tmp_path: Path, contract: AnswerContract
) -> None:
    replay = ReplayProvider(FIXTURE, strict=True)
    schema = {**contract.schema, "description": "changed"}
    edited = AnswerContract(name=contract.name, schema=schema)
    with pytest.raises(ReplayChanged) as caught:
        await _session(replay, edited, tmp_path, versions=(PROMPT_SHA, "d" * 64))
    assert caught.value.changed == ("contract",)
    assert caught.value.part == "contract"


async def test_a_lenient_replay_answers_and_keeps_what_changed(
    tmp_path: Path, contract: AnswerContract
) -> None:
    replay = ReplayProvider(FIXTURE)
    result = await _session(replay, contract, tmp_path, prompt="Decide about lesson-02.")
    assert result.turns == 3
    assert len(replay.changed) == 3
    assert "evidence changed" in replay.changed[0]


async def test_an_old_recording_compares_its_projection_whatever_the_key_order(
    tmp_path: Path, contract: AnswerContract
) -> None:
    record = json.loads(FIXTURE.read_text().splitlines()[0])
    for name in ("parts", "system", "prompt_sha256", "contract_sha256", "model", "lane"):
        record.pop(name)
    record["request"] = dict(reversed(list(record["request"].items())))
    record["request_digest"] = "0" * 64
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(record) + "\n")
    replay = ReplayProvider(path, strict=True)
    request = ModelRequest(
        model="claude-test",
        system="x",
        messages=(UserMessage("Decide about lesson-01."),),
        contract=contract,
        effort="medium",
        tools=Toolbox({"checkout": tmp_path}).specs(),
        # The cap the session asked for on its first (investigation) turn.
        max_tokens=record["request"]["max_tokens"],
        labels=RequestLabels(SPECIALIST, 0, 1),
    )
    with pytest.raises(ReplayChanged) as caught:
        await replay.complete(request)
    # Same projection in another key order: not reported as a difference of any key.
    assert caught.value.part is None
    assert "outside the recorded projection" in str(caught.value)


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
    # The answer keeps each credential's kind in its mark, so admission refuses the replayed
    # answer as it refused the live one.
    assert record["response"]["text"] == (
        "key [redacted:anthropic-key], header [redacted:bearer-token], "
        "aws [redacted:aws-access-key], custom [redacted:api-key]"
    )
    assert "hunter2-password" not in text
    assert set(record) == {
        "specialist",
        "batch",
        "turn",
        "request_digest",
        "request",
        "response",
        "prompt_sha256",
        "contract_sha256",
        "model",
        "lane",
        "parts",
        "system",
        "evidence",
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


async def test_a_line_appended_to_the_prompt_is_shown_as_added(
    tmp_path: Path, contract: AnswerContract
) -> None:
    replay = ReplayProvider(FIXTURE, strict=True)
    with pytest.raises(ReplayChanged) as caught:
        await _session(
            replay, contract, tmp_path,
            system="You maintain repository lessons.\n\nBe brief.",
            versions=("b" * 64, CONTRACT_SHA),
        )  # fmt: skip
    assert str(caught.value).endswith(
        "first differing part system: line 2 on added: '\\nBe brief.'"
    )


def test_a_text_scrubbed_again_is_scrubbed_as_the_first_time_with_each_calls_marker() -> None:
    # Each distinct text is redacted once per process (every turn repeats the earlier ones);
    # the marker is part of what is remembered, so a request's and an answer's marks differ.
    leaky = {
        "text": "key sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
        "turns": ["custom s3cr3t-value"],
    }
    first = scrub(leaky, secrets=["s3cr3t-value"])
    assert first == {"text": "key [REDACTED]", "turns": ["custom [REDACTED]"]}
    assert scrub(leaky, secrets=["s3cr3t-value"]) == first
    assert scrub(leaky, marker=redaction_mark) == {
        "text": "key [redacted:anthropic-key]",
        "turns": ["custom s3cr3t-value"],
    }


@pytest.mark.parametrize("marker", [None, redaction_mark])  # a request's, an answer's
def test_scrubbing_remembers_no_raw_text_that_held_a_credential(marker: Any) -> None:
    # Scrubbing remembers each text's redaction (every turn repeats the earlier ones), but not
    # a text with a credential in it: a library caller's long-lived process (recording or
    # replaying run after run) would otherwise keep the raw secret, as the evidence memo never
    # does. Twenty texts of 40 KB that are mostly keys: a memo holding the texts themselves
    # would hold about 800 KB after they are gone, their redactions hold under 200 KB.
    chosen = {} if marker is None else {"marker": marker}
    scrub("warm up", **chosen)  # the formats are compiled once, outside what is measured
    tracemalloc.start()
    try:
        for n in range(20):
            keys = (f"sk-ant-api03-{n:04d}{i:04d}abcdefghijklmnopqrstuvwxyz" for i in range(800))
            text = " ".join(keys)
            assert "sk-ant" not in scrub({"text": text}, **chosen)["text"]
            assert "sk-ant" not in scrub({"text": text}, **chosen)["text"]  # remembered
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 400 * 1024, held
