"""Maintenance scopes: each repository's cards stay with it, a graph card shared by several
repositories is reconciled once, and the decisions publish with the new findings."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import Evidence, GraphScope, LessonDraft, RepositoryScope
from active_memory.store.sqlite import SqliteStore
from history_init.conftest import Machine
from history_init.kit import claude_session, read_task
from history_init.test_end_to_end import answer_open

_EVIDENCE = Evidence(run_id="run-old", references=("exec:e1",), reason="seen before")


def _seed(machine: Machine, graph_hash: str) -> dict[str, str]:
    drafts = {
        "shared": LessonDraft(scope=GraphScope(graph_hash=graph_hash, node_id="claude-code"),
                              title="Read the failing test first",
                              recommendation="Run the single failing test before editing code.",
                              evidence=_EVIDENCE),
        "beta-graph": LessonDraft(
            scope=GraphScope(graph_hash=graph_hash, node_id="claude-code",
                             repository="forge:github.com/acme/beta"),
            title="Beta runs its tests in a container",
            recommendation="Use the beta test container before judging a failure.",
            evidence=_EVIDENCE),
        "alpha-repo": LessonDraft(
            scope=RepositoryScope(repository="forge:github.com/acme/alpha",
                                  files=("app/settings.py",)),
            title="Alpha settings are seconds",
            recommendation="APP_TIMEOUT in app/settings.py is in seconds.", evidence=_EVIDENCE),
    }  # fmt: skip
    ids = {name: new_lesson_id() for name in drafts}
    with SqliteStore(machine.store) as store:
        store.publish(Publication(run_id="run-old", mutations=tuple(
            Mutation(op="upsert", id=ids[name], expected_revision=0, draft=draft)
            for name, draft in drafts.items())))  # fmt: skip
    return ids


def _supplied(task_file: str) -> set[str]:
    raw = json.loads((Path(task_file).parent / "supplied.json").read_text("utf-8"))
    return {lesson["id"] for lesson in raw}


def test_each_scope_is_maintained_once_and_never_sees_another_repositorys_cards(
    machine: Machine,
) -> None:
    claude_session(machine.home, machine.repo("alpha"), 1)
    claude_session(machine.home, machine.repo("beta"), 2)
    first = machine.answer()
    graph_hash = first["runs"][0]["graph_hash"]
    assert {run["graph_hash"] for run in first["runs"]} == {graph_hash}
    ids = _seed(machine, graph_hash)
    answer_open(first)
    data = machine.answer()
    tasks = {(read_task(t["task_file"])["specialist"], read_task(t["task_file"])["repository"]):
             _supplied(t["task_file"]) for t in data["tasks"]["items"]}  # fmt: skip
    alpha, beta = "forge:github.com/acme/alpha", "forge:github.com/acme/beta"
    assert tasks == {
        ("graph_maintenance", alpha): {ids["shared"]},
        ("graph_maintenance", beta): {ids["beta-graph"]},
        ("repository_maintenance", alpha): {ids["alpha-repo"]},
        ("repository_maintenance", beta): set(),
    }
    answer_open(data)
    done = machine.answer()
    assert done["phase"] == "complete"
    assert len(done["receipt"]["created"]) == 2
    with SqliteStore(machine.store, read_only=True) as store:
        assert {lesson.id for lesson in store.list_lessons()} >= set(ids.values())
        assert store.generation() == 2


def test_a_retirement_publishes_in_the_same_transaction_as_the_new_lessons(
    machine: Machine,
) -> None:
    claude_session(machine.home, machine.repo("alpha"), 1)
    first = machine.answer()
    ids = _seed(machine, first["runs"][0]["graph_hash"])
    answer_open(first)
    data = machine.answer()
    answer_open(data)
    for item in data["tasks"]["items"]:
        response = json.loads(Path(item["response_file"]).read_text("utf-8"))
        for decision in response["answer"]["decisions"]:
            if decision["id"] == ids["shared"]:
                decision.update(action="retire", reason="the run showed it is obsolete")
        Path(item["response_file"]).write_text(json.dumps(response), "utf-8")
    done = machine.answer()
    assert done["phase"] == "complete"
    assert done["receipt"]["retired"] == [ids["shared"]]
    assert len(done["receipt"]["created"]) == 1
    with SqliteStore(machine.store, read_only=True) as store:
        assert store.generation() == 2  # the seed, then one publication with both changes
        assert ids["shared"] in {tombstone.id for tombstone in store.list_retired()}


def test_a_finding_no_maintenance_task_can_decide_is_deferred_and_said(machine: Machine) -> None:
    """The older run proposes a repository lesson; the newest run of the repository disables
    repository memory, so no repository maintenance exists: the finding is deferred, not kept."""
    from history_init.kit import saved_record

    alpha = machine.repo("alpha")
    claude_session(machine.home, alpha, 1)
    run_file = saved_record(machine.state, "newest", alpha, "forge:github.com/acme/alpha",
                            machine.root / "scratch", age=60.0 * 10)  # fmt: skip
    data = json.loads(run_file.read_text("utf-8"))
    data["runtime"] = {"activeMemory": {"repository": False}}
    run_file.write_text(json.dumps(data), "utf-8")
    os.utime(run_file, (time.time() - 600, time.time() - 600))

    answer_open(machine.answer())
    done = machine.answer()
    assert done["phase"] == "complete", done
    assert done["receipt"]["created"] == []
    assert len(done["receipt"]["deferred"]) == 1
    assert any("had no maintenance task" in note for note in done["notes"])
