"""Acceptance: three checkouts, six Claude and Codex sessions and two saved runs, ignore lists,
a scripted driver, SIGKILL between the commit and the checkpoint, exactly one publication."""

from __future__ import annotations

import json
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from active_memory.history_init.publication import INTENT_FILE, KILL_VARIABLE
from active_memory.store.sqlite import SqliteStore
from history_init.conftest import Machine
from history_init.kit import claude_session, codex_session, keep_everything, read_task, saved_record


def answer_open(data: dict[str, Any]) -> None:
    for item in data["tasks"]["items"]:
        task = read_task(item["task_file"]) | {"task_file": item["task_file"]}
        Path(item["response_file"]).write_text(json.dumps(keep_everything(task)), "utf-8")


def three_repositories(machine: Machine) -> None:
    for number, name in enumerate(("alpha", "beta", "gamma")):
        path = machine.repo(name)
        claude_session(machine.home, path, number + 1)
        codex_session(machine.home, path, number + 4, f"git@github.com:acme/{name}.git")
    saved_record(machine.state, "one", machine.repos["alpha"], "forge:github.com/acme/alpha",
                 machine.root / "scratch")  # fmt: skip
    saved_record(machine.state, "two", machine.repos["beta"], "forge:github.com/acme/beta",
                 machine.root / "scratch", graph="autoresearch")  # fmt: skip


def receipt_rows(store: Path) -> int:
    with sqlite3.connect(store) as raw:
        (count,) = raw.execute("SELECT count(*) FROM init_receipts").fetchone()
    raw.close()
    return int(count)


@pytest.mark.slow
def test_killed_between_commit_and_checkpoint_resumes_to_exactly_one_publication(
    machine: Machine,
) -> None:
    """Slow: each call is a new `active-memory` process, one of them killed mid-publication."""
    three_repositories(machine)
    first = machine.answer("--ignore-repos", "acme/gamma", "--ignore-graphs", "autoresearch")
    assert first["phase"] == "discovery"
    assert first["next_action"] == "answer_tasks"
    assert first["inventory"] == {"candidates": 8, "selected": 5, "excluded": 3}
    assert sorted((e["code"], e["reason"]) for e in first["exclusions"]) == [
        ("ignored", "ignored by --ignore-graphs 'autoresearch'"),
        ("ignored", "ignored by --ignore-repos 'acme/gamma'"),
        ("ignored", "ignored by --ignore-repos 'acme/gamma'"),
    ]
    assert {run["repository"] for run in first["runs"]} == {
        "forge:github.com/acme/alpha", "forge:github.com/acme/beta"}  # fmt: skip
    assert {run["harness"] for run in first["runs"]} == {"claude", "codex", "record"}
    assert first["tasks"]["open"] == 10  # two discoveries for each of the five runs

    answer_open(first)
    maintenance = machine.answer()  # saved lists apply without repeating the flags
    assert maintenance["phase"] == "maintenance"
    assert maintenance["staged"]["staged"] == 5
    assert {item["specialist"] for item in maintenance["tasks"]["items"]} == {
        "repository_maintenance"}  # fmt: skip

    answer_open(maintenance)
    killed = machine.process(env={KILL_VARIABLE: "after_commit"})
    assert killed.returncode == -signal.SIGKILL
    with SqliteStore(machine.store, read_only=True) as store:
        assert store.generation() == 1  # committed...
        assert len(store.list_lessons()) == 5
    assert receipt_rows(machine.store) == 1  # ...with its receipt, before any checkpoint
    assert json.loads((machine.session / "state.json").read_text())["phase"] == "publication"
    assert (machine.session / INTENT_FILE).exists()

    resumed = machine.process()
    assert resumed.returncode == 0, resumed.stderr
    done = json.loads(resumed.stdout)
    assert (done["phase"], done["next_action"]) == ("complete", "none")
    receipt = done["receipt"]
    assert receipt["generation"] == 1
    assert len(receipt["created"]) == 5
    assert set(receipt["revisions"]) == set(receipt["created"])
    with SqliteStore(machine.store, read_only=True) as store:
        assert store.generation() == 1  # exactly one publication
        lessons = store.list_lessons()
        assert sorted(lesson.id for lesson in lessons) == sorted(receipt["created"])
        assert {lesson.scope.repository for lesson in lessons} == {  # type: ignore[union-attr]
            "forge:github.com/acme/alpha", "forge:github.com/acme/beta"}  # fmt: skip
    assert receipt_rows(machine.store) == 0
    assert not (machine.session / INTENT_FILE).exists()

    again = machine.answer()
    assert again["phase"] == "complete"
    assert again["receipt"] == receipt
    with SqliteStore(machine.store, read_only=True) as store:
        assert store.generation() == 1


def test_killed_before_the_commit_publishes_once_on_resume(machine: Machine) -> None:
    path = machine.repo("alpha")
    claude_session(machine.home, path, 1)
    answer_open(machine.answer())
    answer_open(machine.answer())
    killed = machine.process(env={KILL_VARIABLE: "before_commit"})
    assert killed.returncode == -signal.SIGKILL
    with SqliteStore(machine.store, read_only=True) as store:
        assert store.generation() == 0
    done = machine.answer()
    assert done["phase"] == "complete"
    assert len(done["receipt"]["created"]) == 1
    with SqliteStore(machine.store, read_only=True) as store:
        assert store.generation() == 1


def test_killed_after_the_checkpoint_cleans_up_and_keeps_the_receipt(machine: Machine) -> None:
    path = machine.repo("alpha")
    claude_session(machine.home, path, 1)
    answer_open(machine.answer())
    answer_open(machine.answer())
    killed = machine.process(env={KILL_VARIABLE: "after_checkpoint"})
    assert killed.returncode == -signal.SIGKILL
    assert receipt_rows(machine.store) == 1
    done = machine.answer()
    assert done["phase"] == "complete"
    assert receipt_rows(machine.store) == 0
    assert not (machine.session / INTENT_FILE).exists()
    with SqliteStore(machine.store, read_only=True) as store:
        assert store.generation() == 1
