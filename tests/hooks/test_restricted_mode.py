"""Claude Code's restricted mode (``CLAUDE_CODE_RESTRICT_PERSONAL_CONFIG``) trims a user hook's
context to 8,000 characters: the frame follows that cap, through the broker and the fallback."""

from __future__ import annotations

import json
import secrets
import socket

import pytest

from active_memory.hooks import claude, helper
from active_memory.hooks.dispatch import answer_hook, broker_handler
from active_memory.recall.broker import RecallBroker
from active_memory.recall.index import RecallIndex
from active_memory.recall.recall_session import RecallSession
from active_memory.recall.signals import WorkspaceRoot
from recall.kit import REPOSITORY, WORKSPACE, lesson
from recall.test_broker import read_answer, signed

LONG = "Keep the cache keys stable across releases; " * 14  # ~620 characters a card


def _session() -> RecallSession:
    cards = [lesson(n, files=["src/a.py"], recommendation=LONG[:600]) for n in range(1, 31)]
    index = RecallIndex(cards, repository=REPOSITORY)
    return RecallSession(index, WorkspaceRoot.at(WORKSPACE))


def _payload(session_id: str) -> dict[str, object]:
    return {"session_id": session_id, "cwd": WORKSPACE, "hook_event_name": "PreToolUse",
            "tool_name": "Read", "tool_input": {"file_path": f"{WORKSPACE}/src/a.py"}}  # fmt: skip


def _context(body: bytes) -> str:
    document = json.loads(body)
    return document["hookSpecificOutput"]["additionalContext"]  # type: ignore[no-any-return]


def test_the_restricted_cap_frames_fewer_cards() -> None:
    usual = _context(answer_hook(_session(), "claude", _payload("s1")).body)
    restricted = answer_hook(_session(), "claude", _payload("s1"), max_chars=8_000)
    assert 8_000 < len(usual) <= 10_000
    assert 0 < len(_context(restricted.body)) <= 8_000


@pytest.mark.parametrize(
    ("value", "cap"), [("1", 8_000), ("true", 8_000), ("0", None), ("", None), (None, None)]
)
def test_the_setting_is_read_from_the_environment(value: str | None, cap: int | None) -> None:
    environ = {} if value is None else {claude.RESTRICTED_SETTING: value}
    assert claude.context_cap(environ) == cap


def test_the_helper_asks_for_the_cap_and_the_broker_honours_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(claude.RESTRICTED_SETTING, "1")
    assert helper._cap_field("claude") == b',"max_chars":8000'
    assert helper._cap_field("codex") == b""
    monkeypatch.setenv(claude.RESTRICTED_SETTING, "0")
    assert helper._cap_field("claude") == b""
    with RecallBroker(broker_handler(_session())) as broker:
        # 8,000 is honoured; a string or an out-of-range number is not a cap: the usual frame.
        for cap, honoured in ((8_000, True), ("8000", False), (10**9, False)):
            nonce = secrets.token_hex(16)
            message = {"nonce": nonce, "harness": "claude", "payload": _payload(nonce),
                       "max_chars": cap}  # fmt: skip
            with socket.create_connection(broker.address, timeout=5) as sock:
                sock.sendall(signed(broker.token, message))
                answer = read_answer(sock, broker.token, nonce)
            assert answer is not None
            size = len(_context(answer))
            assert 0 < size <= 8_000 if honoured else 8_000 < size <= 10_000


def test_the_helper_keeps_the_package_constants() -> None:
    assert helper.RESTRICTED_SETTING == claude.RESTRICTED_SETTING
    assert helper.RESTRICTED_CONTEXT_CHARS == claude.RESTRICTED_CONTEXT_CHARS
