"""The second driver: the project's specialists answer the same tasks through a provider, one
session per task under one shared deadline, and their answers go through the same import."""

from __future__ import annotations

import json

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


def test_provider_sessions_answer_every_task_to_completion(machine: Machine) -> None:
    claude_session(machine.home, machine.repo("alpha"), 1)
    asked: list[str] = []

    async def specialist(request: ModelRequest) -> ModelResponse:
        name = request.labels.specialist
        asked.append(name)
        if name.endswith("discovery"):
            execution = json.loads(
                next(machine.session.glob(f"tasks/d-*-{name}/task.json")).read_text()
            )["executions"][0]
            lessons = [] if name == "graph_discovery" else [{
                "title": "Settings defaults live in app/settings.py",
                "recommendation": "Change APP_TIMEOUT in app/settings.py with its test.",
                "associations": {"files": ["app/settings.py"], "folders": [], "identifiers": [],
                                 "keyword_groups": []},
                "node_id": "claude-code",
                "references": [f"exec:{execution}", "repository:app/settings.py"],
                "reason": "The run changed the default and its test together.",
                "repository_specific": True,
            }]  # fmt: skip
            return answer_response({"lessons": lessons})
        return answer_response({"decisions": []})

    provider = ScriptedProvider(specialist)
    answer = drive(_options(machine), None, None, 600, provider=provider)
    assert answer.state.phase == "complete"
    assert sorted(asked) == ["graph_discovery", "repository_discovery", "repository_maintenance"]
    receipt = answer.state.receipt
    assert receipt is not None
    assert len(receipt.created) == 1
    with SqliteStore(machine.store, read_only=True) as store:
        assert [lesson.id for lesson in store.list_lessons()] == list(receipt.created)


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


def test_the_cli_provider_without_a_credential_fails_with_the_variable_to_set(
    machine: Machine,
) -> None:
    claude_session(machine.home, machine.repo("alpha"), 1)
    result = machine.init("--provider", "anthropic")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["phase"] == "discovery"
    assert data["tasks"]["open"] == 2
    assert all("ANTHROPIC_API_KEY" in reason for reason in data["refused"])
