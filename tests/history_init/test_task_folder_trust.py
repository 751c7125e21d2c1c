"""The task folder is the agent's to write: a maintenance import trusts only the session's own
record of the supplied cards, and a missing or corrupt task file is one refusal that asks for
fresh maintenance, never a traceback or a session stuck on it."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from active_memory.store.sqlite import SqliteStore
from history_init.conftest import Machine
from history_init.kit import claude_session
from history_init.test_end_to_end import answer_open
from history_init.test_maintenance_scope import _seed


def _maintenance(machine: Machine) -> tuple[dict[str, Any], dict[str, str]]:
    claude_session(machine.home, machine.repo("alpha"), 1)
    first = machine.answer()
    ids = _seed(machine, first["runs"][0]["graph_hash"])
    answer_open(first)
    data = machine.answer()
    assert data["phase"] == "maintenance"
    return data, ids


def _graph_task(data: dict[str, Any]) -> dict[str, Any]:
    (item,) = [t for t in data["tasks"]["items"] if t["specialist"] == "graph_maintenance"]
    return item


def test_a_foreign_card_planted_in_supplied_json_is_refused_and_never_retired(
    machine: Machine,
) -> None:
    data, ids = _maintenance(machine)
    answer_open(data)  # every task answered: keep everything
    item = _graph_task(data)
    supplied_file = Path(item["task_file"]).parent / "supplied.json"
    with SqliteStore(machine.store, read_only=True) as store:
        foreign = store.get(ids["beta-graph"]).model_dump(mode="json")  # beta's, not alpha's
    planted = [*json.loads(supplied_file.read_text("utf-8")), foreign]
    supplied_file.write_text(json.dumps(planted), "utf-8")
    response = json.loads(Path(item["response_file"]).read_text("utf-8"))
    response["answer"]["decisions"].append({"id": ids["beta-graph"], "action": "retire",
        "reason": "obsolete", "references": [], "replacement": None})  # fmt: skip
    Path(item["response_file"]).write_text(json.dumps(response), "utf-8")

    refused = machine.answer()
    assert refused["phase"] == "maintenance"
    assert any("supplied.json differs" in reason for reason in refused["refused"])
    assert any("fresh maintenance" in note for note in refused["notes"])
    assert refused["tasks"]["open"] == 2  # every maintenance task exported again
    rewritten = json.loads(supplied_file.read_text("utf-8"))  # the folder exported afresh
    assert ids["beta-graph"] not in {lesson["id"] for lesson in rewritten}
    assert not Path(item["response_file"]).exists()
    with SqliteStore(machine.store, read_only=True) as store:
        assert store.list_retired() == ()
        assert store.generation() == 1  # only the seed

    answer_open(refused)
    done = machine.answer()
    assert done["phase"] == "complete"
    assert done["receipt"]["retired"] == []
    with SqliteStore(machine.store, read_only=True) as store:
        assert store.get(ids["beta-graph"]).revision == 1


def test_a_deleted_supplied_json_with_a_response_present_is_one_refusal(
    machine: Machine,
) -> None:
    data, _ = _maintenance(machine)
    answer_open(data)
    item = _graph_task(data)
    (Path(item["task_file"]).parent / "supplied.json").unlink()

    result = machine.init()
    assert result.exit_code == 0, result.stderr
    assert "Traceback" not in result.stderr
    refused = json.loads(result.stdout)
    assert refused["next_action"] == "answer_tasks"
    assert any("supplied.json is missing" in reason for reason in refused["refused"])
    assert refused["tasks"]["open"] == 2  # fresh maintenance: the session is not stuck
    answer_open(refused)
    assert machine.answer()["phase"] == "complete"


def test_a_refused_response_is_not_read_again_when_it_cannot_be_moved_aside(
    machine: Machine,
) -> None:
    data, _ = _maintenance(machine)
    item = _graph_task(data)
    folder = Path(item["task_file"]).parent
    (folder / "response.refused.json").mkdir()
    Path(item["response_file"]).write_text("{not json", "utf-8")

    result = machine.init()
    assert result.exit_code == 0, result.stderr
    assert "Traceback" not in result.stderr
    refused = json.loads(result.stdout)
    assert refused["next_action"] == "answer_tasks"
    (reason,) = refused["refused"]
    assert "it was removed" in reason
    assert not Path(item["response_file"]).exists()
    again = machine.answer()  # the same bad response is not refused a second time
    assert again["refused"] == []
    answer_open(again)
    assert machine.answer()["phase"] == "complete"


@pytest.mark.parametrize(
    "error",
    [
        FileNotFoundError(2, "No such file or directory", "tasks/t1/supplied.json"),
        IsADirectoryError(21, "Is a directory", "tasks/t1/response.refused.json"),
        json.JSONDecodeError("Expecting value", "{", 1),
        ValueError("1 validation error for Lesson"),
    ],
    ids=["missing", "directory", "json", "validation"],
)
def test_a_session_file_error_escaping_an_import_is_one_refusal_not_a_traceback(
    machine: Machine, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    claude_session(machine.home, machine.repo("alpha"), 1)
    answer_open(machine.answer())

    def broken(*_: object) -> None:
        raise error

    module = importlib.import_module("active_memory.history_init.advance")
    monkeypatch.setattr(module, "import_response", broken)
    result = machine.init()
    assert result.exit_code == 1
    assert "Traceback" not in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    refused = json.loads(result.stdout)
    assert refused["next_action"] == "restore_or_wait"
    assert refused["phase"] == "discovery"
    assert refused["error"].startswith("the session could not advance")
    assert "start a new session" in refused["error"]
    monkeypatch.undo()
    assert machine.answer()["phase"] == "maintenance"  # nothing was half-written
