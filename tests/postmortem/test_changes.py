"""Before/current lesson changes, kept apart from the delivery manifest."""

from __future__ import annotations

from active_memory.models.lessons import Evidence, GraphScope, Lesson, RepositoryScope
from active_memory.models.runs import Delivery
from active_memory.postmortem.changes import lesson_changes, visible_set

REPOSITORY = "forge:github.com/example/order-service"
GRAPH = "a" * 64
A, B, C, D = (f"lesson-01JWNF15X0000000000000000{n}" for n in "1234")


def _lesson(lesson_id: str, revision: int, graph: bool = False) -> Lesson:
    scope = (
        GraphScope(graph_hash=GRAPH, node_id="implement")
        if graph
        else RepositoryScope(repository=REPOSITORY, files=("a.py",))
    )
    return Lesson(
        id=lesson_id,
        revision=revision,
        scope=scope,
        title="title",
        recommendation="advice",
        evidence=Evidence(run_id="r", references=("exec:e",), reason="x"),
    )


def _delivered(lesson_id: str, revision: int, channel: str) -> Delivery:
    return Delivery(
        lesson_id=lesson_id,
        revision=revision,
        node_id="implement",
        conversation_id="conv-1",
        channel=channel,  # type: ignore[arg-type]
    )


def test_changes_from_the_manifest_name_revised_and_retired_lessons_by_scope() -> None:
    current = [_lesson(A, 3), _lesson(B, 1)]
    manifest = [
        _delivered(A, 1, "hook"), _delivered(A, 2, "hook"),  # the newest delivery counts
        _delivered(B, 1, "hook"),                            # unchanged: no entry
        _delivered(C, 4, "prompt"),                          # gone: a graph lesson retired
    ]  # fmt: skip
    changes = lesson_changes(current, manifest)
    assert changes["repository"] == [
        {"id": A, "before_revision": 2, "current_revision": 3, "change": "revised"}
    ]
    assert changes["graph"] == [
        {"id": C, "before_revision": 4, "current_revision": None, "change": "retired"}
    ]


def test_the_frozen_snapshot_also_reveals_lessons_published_after_it() -> None:
    before = [_lesson(A, 1), _lesson(C, 1, graph=True)]
    current = [_lesson(A, 1), _lesson(C, 2, graph=True), _lesson(D, 1)]
    changes = lesson_changes(current, (), before)
    assert changes["repository"] == [
        {"id": D, "before_revision": None, "current_revision": 1, "change": "new"}
    ]
    assert [entry["change"] for entry in changes["graph"]] == ["revised"]


def test_visible_set_is_ids_and_revisions_of_one_scope() -> None:
    lessons = [_lesson(A, 2), _lesson(C, 1, graph=True)]
    assert visible_set(lessons, "repository") == {(A, 2)}
    assert visible_set(lessons, "graph") == {(C, 1)}
