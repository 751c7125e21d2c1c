"""The second driver: the project's specialists answer the same tasks through a provider, one
session per task under one shared deadline, and their answers go through the same import."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from active_memory.agents.providers.base import ModelRequest, ModelResponse
from active_memory.agents.providers.scripted import ScriptedProvider, answer_response
from active_memory.history_init.advance import InitOptions
from active_memory.history_init.provider_driver import drive
from active_memory.store.sqlite import SqliteStore
from history_init.conftest import Machine
from history_init.kit import claude_session


def _options(machine: Machine) -> InitOptions:
    return InitOptions(directory=machine.session, store=machine.store,
                       saved_runs=machine.state / "runs")  # fmt: skip


TITLE = "Settings defaults live in app/settings.py"


def _specialists(
    machine: Machine, staged_action: str | None, asked: list[str], shown: list[str]
) -> ScriptedProvider:
    """Discovery proposes one repository lesson; maintenance decides the cards it is shown:
    the staged finding with ``staged_action`` (None: left undecided)."""

    async def specialist(request: ModelRequest) -> ModelResponse:
        name = request.labels.specialist
        asked.append(name)
        if name.endswith("discovery"):
            execution = json.loads(
                next(machine.session.glob(f"tasks/d-*-{name}/task.json")).read_text()
            )["executions"][0]
            lessons = [] if name == "graph_discovery" else [{
                "title": TITLE,
                "recommendation": "Change APP_TIMEOUT in app/settings.py with its test.",
                "associations": {"files": ["app/settings.py"], "folders": [], "identifiers": [],
                                 "keyword_groups": []},
                "node_id": "claude-code",
                "references": [f"exec:{execution}", "repository:app/settings.py"],
                "reason": "The run changed the default and its test together.",
                "repository_specific": True,
            }]  # fmt: skip
            return answer_response({"lessons": lessons})
        text = "\n".join(str(message) for message in request.messages)
        state = json.loads((machine.session / "state.json").read_text())
        staged = [f["id"] for f in state["staged"] if f["id"] in text]
        shown.extend(staged)
        decisions = [] if staged_action is None else [
            {"id": finding, "action": staged_action, "reason": "judged", "references": [],
             "replacement": None} for finding in staged]  # fmt: skip
        return answer_response({"decisions": decisions})

    return ScriptedProvider(specialist)


def test_provider_sessions_answer_every_task_to_completion(machine: Machine) -> None:
    claude_session(machine.home, machine.repo("alpha"), 1)
    asked: list[str] = []
    shown: list[str] = []
    provider = _specialists(machine, "keep", asked, shown)
    answer = drive(_options(machine), None, None, 600, provider=provider)
    assert answer.state.phase == "complete"
    assert sorted(asked) == ["graph_discovery", "repository_discovery", "repository_maintenance"]
    receipt = answer.state.receipt
    assert receipt is not None
    assert list(receipt.created) == shown  # the maintenance specialist saw and kept the finding
    with SqliteStore(machine.store, read_only=True) as store:
        assert [lesson.id for lesson in store.list_lessons()] == list(receipt.created)


def test_a_staged_finding_the_specialist_retires_is_deferred_not_published(
    machine: Machine,
) -> None:
    claude_session(machine.home, machine.repo("alpha"), 1)
    shown: list[str] = []
    answer = drive(_options(machine), None, None, 600,
                   provider=_specialists(machine, "retire", [], shown))  # fmt: skip
    assert answer.state.phase == "complete"
    receipt = answer.state.receipt
    assert receipt is not None
    assert (receipt.created, list(receipt.deferred)) == ((), shown)
    assert len(shown) == 1
    with SqliteStore(machine.store, read_only=True) as store:
        assert store.list_lessons() == ()


def test_a_staged_finding_left_undecided_stays_staged_and_nothing_is_kept(
    machine: Machine,
) -> None:
    claude_session(machine.home, machine.repo("alpha"), 1)
    answer = drive(_options(machine), None, None, 600,
                   provider=_specialists(machine, None, [], []))  # fmt: skip
    assert answer.state.phase == "maintenance"
    assert answer.next_action == "answer_tasks"
    assert [f.status for f in answer.state.staged] == ["staged"]
    assert any("staged finding(s) have no decision" in reason for reason in answer.refused)
    with SqliteStore(machine.store, read_only=True) as store:
        assert store.generation() == 0


def test_a_failing_provider_leaves_the_tasks_open_with_the_reason(machine: Machine) -> None:
    claude_session(machine.home, machine.repo("alpha"), 1)

    async def broken(request: ModelRequest) -> ModelResponse:
        return answer_response("not json")

    answer = drive(_options(machine), None, None, 600, provider=ScriptedProvider(broken))
    assert answer.state.phase == "discovery"
    assert answer.next_action == "answer_tasks"
    assert len(answer.refused) == 2
    with SqliteStore(machine.store, read_only=True) as store:
        assert store.generation() == 0


def test_the_cli_provider_without_claude_fails_with_the_command_to_install(
    machine: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Claude Code sessions record the claude-code lane: their specialists run on `claude`.
    git = shutil.which("git")
    assert git is not None
    monkeypatch.setenv("PATH", str(Path(git).parent))
    assert shutil.which("claude") is None, "a claude beside git: this test cannot hide it"
    claude_session(machine.home, machine.repo("alpha"), 1)
    result = machine.init("--provider", "anthropic")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["phase"] == "discovery"
    assert data["tasks"]["open"] == 2
    assert data["refused"]
    assert all("`npm install -g @anthropic-ai/claude-code`" in r for r in data["refused"])
