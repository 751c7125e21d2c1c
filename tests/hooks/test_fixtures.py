"""Real-format hook payloads (tests/fixtures/hooks) produce the expected signals and answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from active_memory.hooks.dispatch import answer_hook, harness_adapter
from active_memory.recall.index import RecallIndex
from active_memory.recall.recall_session import RecallSession
from active_memory.recall.signals import extract_signals
from recall.kit import REPOSITORY, ROOT, lesson_id, widgets_lessons

FIXTURES = Path(__file__).parents[1] / "fixtures" / "hooks"

CASES = [
    # fixture, expected paths, expected delivered lesson numbers (rank order)
    ("claude/read.json", ["src/widgets/config.py"], [1]),
    ("claude/edit.json", ["src/widgets/storage/blob.py"], [2, 3]),
    ("claude/write.json", ["notes/setup.md"], [4]),
    ("claude/grep.json", ["src"], [3]),
    ("claude/glob.json", ["src/widgets/storage"], [2]),
    ("claude/bash.json", ["src/widgets", "tests/test config.py"], [5]),
    ("codex/bash.json", ["src/widgets/storage", "docs/index.md"], [6, 2, 4]),
    ("codex/apply_patch.json", ["src/widgets/config.py", "src/widgets/storage/cache.py"], [1, 2]),
    ("copilot/view.json", ["src/widgets/config.py"], [1]),
    ("copilot/edit.json", ["tests/test_clock.py"], [5]),
    ("copilot/bash.json", ["src"], [3]),
    ("pi/read.json", ["src/widgets/storage/blob.py"], [2]),
    ("pi/bash.json", ["docs", "docs/index.md"], [6]),
]


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def fresh_session() -> RecallSession:
    return RecallSession(RecallIndex(widgets_lessons(), repository=REPOSITORY), ROOT)


def test_every_fixture_is_covered() -> None:
    on_disk = sorted(str(path.relative_to(FIXTURES)) for path in FIXTURES.rglob("*.json"))
    assert on_disk == sorted(name for name, _, _ in CASES)


@pytest.mark.parametrize(("name", "paths", "numbers"), CASES, ids=[c[0] for c in CASES])
def test_fixture_gives_expected_signals(name: str, paths: list[str], numbers: list[int]) -> None:
    harness = harness_adapter(name.split("/")[0])
    assert harness is not None
    parsed = harness.parse(load(name))
    assert parsed is not None
    found = extract_signals(parsed.call, ROOT).paths
    for path in paths:
        assert path in found
    assert all(not path.startswith("/") and ".." not in path.split("/") for path in found)


@pytest.mark.parametrize(("name", "paths", "numbers"), CASES, ids=[c[0] for c in CASES])
def test_fixture_gives_expected_answer(name: str, paths: list[str], numbers: list[int]) -> None:
    harness_name = name.split("/")[0]
    answer = answer_hook(fresh_session(), harness_name, load(name), node_id="build")
    document = json.loads(answer.body)
    if harness_name in ("claude", "codex"):
        assert set(document) == {"hookSpecificOutput"}
        output = document["hookSpecificOutput"]
        assert output["hookEventName"] == "PreToolUse"
        assert "permissionDecision" not in output
        context = output["additionalContext"]
    else:
        assert set(document) == {"additionalContext"}
        context = document["additionalContext"]
    assert context.startswith("<active_memory>\n")
    assert context.endswith("</active_memory>")
    assert answer.recall is not None
    delivered = [key.split("@")[0] for key in answer.recall.report.delivered]
    assert delivered == [lesson_id(number) for number in numbers]
    headers = [line for line in context.splitlines() if line.startswith("[lesson-")]
    assert [header.split("@")[0][1:] for header in headers] == delivered


def test_copilot_tool_args_may_be_an_object_too() -> None:
    payload = load("copilot/view.json")
    payload["toolArgs"] = json.loads(payload["toolArgs"])
    answer = answer_hook(fresh_session(), "copilot", payload)
    assert answer.recall is not None
    assert answer.recall.report.delivered == (f"{lesson_id(1)}@1",)


def test_the_harness_session_is_the_conversation_unless_the_run_names_one() -> None:
    served = fresh_session()
    first = answer_hook(served, "claude", load("claude/read.json"))
    first.commit()
    assert served.ledger.deliveries[0].conversation_id == "3f2b9c1e-7a44-4a51-9d0e-1c2b3d4e5f60"
    assert json.loads(answer_hook(served, "claude", load("claude/read.json")).body) == {}
    named = answer_hook(served, "claude", load("claude/read.json"), conversation_id="run-conv")
    assert named.recall is not None
    assert named.recall.report.delivered


@pytest.mark.parametrize(
    ("harness", "payload"),
    [
        ("claude", {"hook_event_name": "PostToolUse", "tool_name": "Read", "tool_input": {}}),
        ("claude", ["not", "an", "object"]),
        ("claude", {"tool_input": {}}),
        ("copilot", {"toolName": "view", "toolArgs": "{broken"}),
        ("nobody", {"tool_name": "Read"}),
    ],
)
def test_unusable_payloads_answer_empty(harness: str, payload: Any) -> None:
    assert json.loads(answer_hook(fresh_session(), harness, payload).body) == {}


def test_workspace_only_ignores_calls_from_other_projects() -> None:
    payload = load("claude/read.json")
    payload["cwd"] = "/home/dev/other-project"
    served = fresh_session()
    assert answer_hook(served, "claude", payload, workspace_only=True).body == b"{}"
    assert served.receipts.snapshot() == ()


def test_claude_context_respects_its_character_cap() -> None:
    from active_memory.models.config import ActiveMemoryConfig
    from recall.kit import lesson

    cards = [lesson(n, folders=["src"], recommendation="r" * 600) for n in range(1, 40)]
    served = RecallSession(
        RecallIndex(cards), ROOT, ActiveMemoryConfig(hook_injection_tokens=64_000)
    )
    payload = load("claude/read.json")
    context = json.loads(answer_hook(served, "claude", payload).body)["hookSpecificOutput"]
    assert len(context["additionalContext"]) <= 10_000


def test_answers_fit_the_broker_response_limit_even_with_escaping() -> None:
    from active_memory.models.config import ActiveMemoryConfig
    from recall.kit import lesson

    cards = [lesson(n, folders=["src"], recommendation='"\\' * 300) for n in range(1, 60)]
    served = RecallSession(
        RecallIndex(cards), ROOT, ActiveMemoryConfig(hook_injection_tokens=64_000)
    )
    answer = answer_hook(served, "pi", load("pi/read.json") | {"input": {"path": "src/a.py"}})
    assert 0 < len(answer.body) <= 32 * 1024
    assert answer.recall is not None
    assert answer.recall.report.delivered
    assert len(served.receipts.snapshot()) == 1
