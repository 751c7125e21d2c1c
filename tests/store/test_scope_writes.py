"""A write over a live lesson leaves its scope columns alone when the scope stays (the narrow
UPDATE, which touches neither the scope indexes nor the per-scope counts) and rewrites them when
the scope moves: publish, revert and import alike, on both engines, with every count right."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from engines import Engine, Store

from active_memory.errors import SnapshotError
from active_memory.models.changes import Mutation, Publication
from active_memory.models.lessons import LessonDraft
from active_memory.store.backend import RunIdentity, SnapshotRequest
from active_memory.store.sqlite import SqliteStore
from active_memory.store.writes import RowState
from factories import GRAPH_HASH, REPOSITORY, make_draft, make_graph_draft, publish_new

OTHER = "forge:example.com/acme/other"


def _update(store: Store, lesson_id: str, revision: int, draft: LessonDraft) -> None:
    mutation = Mutation(op="upsert", id=lesson_id, expected_revision=revision, draft=draft)
    store.publish(Publication(run_id="run-2", mutations=(mutation,)))


def _live_in(store: Store, repository: str) -> set[str]:
    snapshot = store.snapshot(SnapshotRequest(RunIdentity("run-3", repository=repository)))
    return {lesson.id for lesson in snapshot.lessons}


def _assert_counts_agree(store: Store) -> None:
    report = store.check()
    assert report.ok, report.problems


@contextmanager
def _statements(store: Store) -> Iterator[list[str]]:
    """The SQL an SQLite store runs meanwhile (nothing on PostgreSQL)."""
    seen: list[str] = []
    conn = getattr(store, "_conn", None)
    if isinstance(store, SqliteStore) and isinstance(conn, sqlite3.Connection):
        conn.set_trace_callback(seen.append)
        try:
            yield seen
        finally:
            conn.set_trace_callback(None)
    else:
        yield seen


def _records_updates(seen: list[str]) -> set[str]:
    # The callback sees a statement once per row it runs for, and again per trigger step.
    return {" ".join(s.split()) for s in seen if s.lstrip().startswith("UPDATE records")}


def test_an_update_in_the_same_scope_writes_only_the_content(store: Store) -> None:
    kept, moved = publish_new(store, make_draft("Kept"), make_draft("Moved"))
    with _statements(store) as seen:
        _update(store, kept, 1, make_draft("Kept, reworded", files=("src/other.py",)))
    if isinstance(store, SqliteStore):
        (update,) = _records_updates(seen)
        assert "repository = " not in update, update
        assert "deleted = " not in update, update
    with _statements(store) as seen:
        _update(store, moved, 1, make_draft("Moved away", repository=OTHER))
    if isinstance(store, SqliteStore):
        (update,) = _records_updates(seen)
        assert "repository = " in update, update
    assert store.get(kept).title == "Kept, reworded"
    assert store.get(kept).scope.files == ("src/other.py",)
    assert _live_in(store, REPOSITORY) == {kept}
    assert _live_in(store, OTHER) == {moved}
    _assert_counts_agree(store)


def test_a_lesson_moving_between_repository_and_graph_scope_keeps_every_count(
    store: Store,
) -> None:
    (lesson_id,) = publish_new(store, make_draft("Starts in the repository"))
    _update(store, lesson_id, 1, make_graph_draft("Now the graph's", repository=REPOSITORY))
    _assert_counts_agree(store)
    _update(store, lesson_id, 2, make_graph_draft("Same graph, same repository",
                                                   repository=REPOSITORY))  # fmt: skip
    _assert_counts_agree(store)
    _update(store, lesson_id, 3, make_graph_draft("Same graph, no repository"))
    _assert_counts_agree(store)
    _update(store, lesson_id, 4, make_graph_draft("Another graph", graph_hash="b" * 64))
    _assert_counts_agree(store)
    lesson = store.get(lesson_id)
    assert (lesson.revision, lesson.scope.kind, lesson.scope.graph_hash) == (5, "graph", "b" * 64)
    assert GRAPH_HASH != "b" * 64
    assert _live_in(store, REPOSITORY) == set()


@pytest.mark.parametrize("repository", [REPOSITORY, OTHER])
def test_a_revert_to_a_revision_in_either_scope_keeps_every_count(
    store: Store, repository: str
) -> None:
    (lesson_id,) = publish_new(store, make_draft("First", repository=repository))
    _update(store, lesson_id, 1, make_draft("Second"))
    store.revert(lesson_id, 1, expected_revision=2)
    assert store.get(lesson_id).title == "First"
    assert _live_in(store, repository) == {lesson_id}
    _assert_counts_agree(store)


def test_an_import_replacing_a_lesson_in_another_scope_keeps_every_count(
    engine: Engine, store: Store
) -> None:
    kept, moved = publish_new(store, make_draft("Kept"), make_draft("Moved"))
    source = engine.open("source")
    try:
        source.import_lines(store.export())
        _update(source, kept, 1, make_draft("Kept, reworded"))
        _update(source, moved, 1, make_draft("Moved away", repository=OTHER))
        store.import_lines(source.export(), replace=True)
    finally:
        source.close()
    assert store.get(kept).title == "Kept, reworded"
    assert _live_in(store, REPOSITORY) == {kept}
    assert _live_in(store, OTHER) == {moved}
    _assert_counts_agree(store)


def test_a_scope_edited_behind_the_store_is_written_again_by_the_next_publication(
    engine: Engine, store: Store
) -> None:
    """Whether the scope stays is read from the row's own columns: a repository edited by hand
    (the snapshot refuses the row) is rewritten in full by the next publication, which leaves
    the row whole and every count right, as the full UPDATE always did."""
    (lesson_id,) = publish_new(store, make_draft("Kept"))
    engine.raw(store, "UPDATE records SET repository = ? WHERE id = ?", (OTHER, lesson_id))
    with pytest.raises(SnapshotError, match="changed outside active-memory"):
        _live_in(store, OTHER)
    _update(store, lesson_id, 1, make_draft("Kept, reworded"))
    assert _live_in(store, REPOSITORY) == {lesson_id}
    assert _live_in(store, OTHER) == set()
    _assert_counts_agree(store)


OTHER_HASH = "0" * 64


@pytest.mark.parametrize(
    ("row", "draft", "holds"),
    [
        (RowState(1, False, "repository", REPOSITORY), make_draft(), True),
        (RowState(1, True, "repository", REPOSITORY), make_draft(), False),
        (RowState(1, False, "repository", OTHER), make_draft(), False),
        (RowState(1, False, "repository", None), make_draft(), False),
        (RowState(1, False, "repository", REPOSITORY, GRAPH_HASH), make_draft(), False),
        (RowState(1, False, "graph", REPOSITORY, GRAPH_HASH), make_draft(), False),
        (RowState(1, False, "graph", None, GRAPH_HASH), make_graph_draft(), True),
        (RowState(1, False, "graph", REPOSITORY, GRAPH_HASH),
         make_graph_draft(repository=REPOSITORY), True),
        (RowState(1, False, "graph", REPOSITORY, GRAPH_HASH), make_graph_draft(), False),
        (RowState(1, False, "graph", "", GRAPH_HASH), make_graph_draft(), False),
        (RowState(1, False, "graph", None, GRAPH_HASH),
         make_graph_draft(repository=REPOSITORY), False),
        (RowState(1, False, "graph", None, OTHER_HASH), make_graph_draft(), False),
        (RowState(1, False, "graph", None, None), make_graph_draft(), False),
        (RowState(1, False, "repository", None, GRAPH_HASH), make_graph_draft(), False),
    ],
)  # fmt: skip
def test_a_row_holds_a_drafts_scope_only_when_every_scope_column_would_stay(
    row: RowState, draft: LessonDraft, holds: bool
) -> None:
    # The narrow UPDATE leaves kind, repository and graph_hash as they are: a True here for a
    # row whose columns differ would leave a lesson in the old scope (a graph lesson served to a
    # repository's runs, or one repository's lesson to another's).
    assert row.holds_scope_of(draft) is holds
