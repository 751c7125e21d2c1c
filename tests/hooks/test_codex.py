"""Codex's cap on ``additionalContext`` counts UTF-8 bytes: longer context spills to a file."""

from __future__ import annotations

import json

from active_memory.hooks.claude import MAX_CONTEXT_CHARS
from active_memory.hooks.codex import HARNESS, MAX_CONTEXT_BYTES
from active_memory.hooks.dispatch import answer_hook
from active_memory.recall.index import RecallIndex
from active_memory.recall.recall_session import RecallSession
from recall.kit import REPOSITORY, ROOT, WORKSPACE, lesson, lesson_id

CARDS = 20
# 'é' is 2 bytes: each card is about 400 characters and 780 bytes, so twenty cards are well
# under Claude Code's 10,000 characters and well over Codex's 10,000 bytes.
RECOMMENDATION = "é" * 318 + "."


def session() -> RecallSession:
    lessons = [
        lesson(n, files=["src/a.py"], title=f"Card {n} " + "ü" * 40, recommendation=RECOMMENDATION)
        for n in range(1, CARDS + 1)
    ]
    return RecallSession(RecallIndex(lessons, repository=REPOSITORY), ROOT)


def context(harness: str) -> str:
    payload = {"cwd": WORKSPACE, "hook_event_name": "PreToolUse", "tool_name": "Bash",
               "session_id": "s-1", "tool_input": {"command": "cat src/a.py"}}  # fmt: skip
    answer = answer_hook(session(), harness, payload)
    text: str = json.loads(answer.body)["hookSpecificOutput"]["additionalContext"]
    return text


def test_the_codex_cap_counts_bytes_of_multi_byte_cards() -> None:
    assert (HARNESS.max_bytes, HARNESS.max_chars) == (10_000, None)
    text = context("codex")
    size = len(text.encode("utf-8"))
    assert size <= MAX_CONTEXT_BYTES
    delivered = sum(lesson_id(n) in text for n in range(1, CARDS + 1))
    assert 0 < delivered < CARDS
    assert size > MAX_CONTEXT_BYTES - 800  # as many whole cards as fit: the next did not
    assert text.endswith("</active_memory>")  # whole cards only, the frame closed


def test_claude_keeps_counting_characters() -> None:
    text = context("claude")
    assert len(text) <= MAX_CONTEXT_CHARS < len(text.encode("utf-8"))
    assert all(lesson_id(n) in text for n in range(1, CARDS + 1))
