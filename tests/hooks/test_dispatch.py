"""Which conversation a hook payload is answered under, and what is remembered for it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from active_memory.harnesses import HARNESS_NAMES
from active_memory.hooks import helper
from active_memory.hooks.dispatch import answer_hook, encode, harness_adapter
from active_memory.recall.exchange import EMPTY_ANSWER, MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES
from active_memory.recall.index import RecallIndex
from active_memory.recall.recall_session import RecallSession
from recall.kit import REPOSITORY, ROOT, WORKSPACE, lesson, lesson_id


def session() -> RecallSession:
    return RecallSession(RecallIndex([lesson(1, files=["a.py"])], repository=REPOSITORY), ROOT)


def read_payload(**ids: str) -> dict[str, Any]:
    return {"cwd": WORKSPACE, "hook_event_name": "PreToolUse", "tool_name": "Read",
            "tool_input": {"file_path": f"{WORKSPACE}/a.py"}, **ids}  # fmt: skip


def ask(served: RecallSession, payload: dict[str, Any], harness: str = "claude") -> bool:
    """Whether the card was delivered (the answer is committed as a harness would take it)."""
    answer = answer_hook(served, harness, payload)
    answer.commit()
    return lesson_id(1) in answer.body.decode()


def test_payloads_without_any_conversation_are_not_deduplicated_against_each_other() -> None:
    served = session()
    assert ask(served, read_payload())
    assert ask(served, read_payload())  # another agent that could not name its conversation
    assert ask(served, read_payload(session_id="s-1"))
    assert not ask(served, read_payload(session_id="s-1"))
    keys = [delivery.conversation_id for delivery in served.ledger.deliveries]
    assert keys == ["unknown", "unknown", "s-1"]


def test_a_missing_session_id_falls_back_to_the_transcript() -> None:
    served = session()
    transcript = "/home/dev/.claude/projects/widgets/one.jsonl"
    assert ask(served, read_payload(transcript_path=transcript))
    assert not ask(served, read_payload(transcript_path=transcript))
    assert ask(served, read_payload(transcript_path=transcript.replace("one", "two")))
    conversation = served.ledger.deliveries[0].conversation_id
    assert conversation.startswith("transcript-")
    assert "jsonl" not in conversation  # a key of the path, not the path


def test_copilot_payloads_without_a_session_id_are_untracked_too() -> None:
    served = session()
    payload = {"cwd": WORKSPACE, "toolName": "view", "toolArgs": {"path": f"{WORKSPACE}/a.py"}}
    assert ask(served, payload, "copilot")
    assert ask(served, payload, "copilot")
    assert not served.ledger.was_delivered("unknown", f"{lesson_id(1)}@1")


def test_an_empty_conversation_id_counts_as_none() -> None:
    served = session()
    for _ in range(2):
        answer = answer_hook(served, "claude", read_payload(session_id=""), conversation_id="")
        answer.commit()
        assert lesson_id(1) in answer.body.decode()


@pytest.mark.parametrize(
    "text",
    ["", "plain", 'quotes " and \\ back', "line\nbreak\ttab\x00\x1f", "é ü 日本 😀 \u2028\u2029",
     "<active_memory>\n[lesson@1] x\n</active_memory>"],
)  # fmt: skip
def test_answers_are_encoded_byte_for_byte_as_json_dumps_writes_them(text: str) -> None:
    for name in HARNESS_NAMES:
        harness = harness_adapter(name)
        assert harness is not None, name
        answer = harness.answer(text)
        expected = json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        assert encode(answer) == expected, name


def test_the_helper_keeps_the_exchange_sizes() -> None:
    assert (helper.MAX_REQUEST_BYTES, helper.MAX_RESPONSE_BYTES, helper.EMPTY) == (
        MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES, EMPTY_ANSWER)  # fmt: skip


def test_a_harness_adapter_is_found_by_its_table_name_only() -> None:
    """The adapter is imported on first use by its harness-table name; any other name, even
    one naming a module of the hooks package, has none (a payload cannot pick a module)."""
    for name in HARNESS_NAMES:
        adapter = harness_adapter(name)
        assert adapter is not None, name
        assert adapter.name == name
    for name in ("", "base", "dispatch", "fallback", "helper", "../hooks", "claude.x", "CLAUDE"):
        assert harness_adapter(name) is None, name
