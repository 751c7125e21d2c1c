"""store/rows.py: the hook fallback's raw read of live repository rows, without the models."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from active_memory.errors import StoreUnavailable
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import Evidence, LessonDraft, RepositoryScope
from active_memory.store.backend import RunIdentity, SnapshotRequest
from active_memory.store.migrations import MIGRATIONS
from active_memory.store.rows import KNOWN_MIGRATIONS, StoreRows
from active_memory.store.sqlite import SqliteStore

REPOSITORY = "forge:github.com/acme/app"
OTHER = "forge:github.com/acme/other"


def draft(number: int, repository: str = REPOSITORY) -> LessonDraft:
    return LessonDraft(
        scope=RepositoryScope(
            repository=repository,
            files=(f"src/app_{number}.py",),
            folders=("src/app",),
            identifiers=(f"handler_{number}",),
            keyword_groups=(("retry", "deadline"),),
        ),
        title=f"Lesson {number} — the retry handler",
        recommendation=f"Call the retry wrapper with an explicit deadline ({number}).",
        evidence=Evidence(run_id="run-1", references=("exec:e1",), reason="seen"),
    )


def publish(store: SqliteStore, *drafts: LessonDraft) -> list[str]:
    ids = [new_lesson_id() for _ in drafts]
    mutations = tuple(Mutation(op="upsert", id=lesson_id, expected_revision=0, draft=body)
                      for lesson_id, body in zip(ids, drafts, strict=True))  # fmt: skip
    store.publish(Publication(run_id="run-1", mutations=mutations))
    return ids


def test_cards_are_the_live_rows_of_one_repository_with_the_lessons_attributes(
    store: SqliteStore,
) -> None:
    publish(store, draft(1), draft(2), draft(3, OTHER))
    retired = publish(store, draft(4))[0]
    store.publish(Publication(run_id="run-2", mutations=(
        Mutation(op="retire", id=retired, expected_revision=1),)))  # fmt: skip
    snapshot = store.snapshot(SnapshotRequest(RunIdentity("r", repository=REPOSITORY)))
    with StoreRows(store.path) as rows:
        stamp, cards = rows.repository_cards(REPOSITORY)
    assert stamp[3] == store.generation()
    assert len(cards) == len(snapshot.lessons) == 2
    for card, stored in zip(cards, snapshot.lessons, strict=True):
        assert (card.id, card.revision, card.title, card.recommendation) == (
            stored.id, stored.revision, stored.title, stored.recommendation)  # fmt: skip
        scope = stored.scope
        assert (card.scope.kind, card.scope.repository, card.scope.files, card.scope.folders,
                card.scope.identifiers, card.scope.keyword_groups) == (
            scope.kind, scope.repository, scope.files, scope.folders, scope.identifiers,
            scope.keyword_groups)  # fmt: skip


def test_the_stamp_changes_with_every_publication(store: SqliteStore) -> None:
    with StoreRows(store.path) as rows:
        before = rows.stamp()
    publish(store, draft(1))
    with StoreRows(store.path) as rows:
        after = rows.stamp()
    assert before != after
    assert after[3] == before[3] + 1


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        "[]",
        '{"title": 1, "recommendation": "r", "scope": {}}',
        '{"title": "t", "recommendation": "r", "scope": {"kind": "graph"}}',
        '{"title": "t", "recommendation": "r", "scope": {"kind": "repository", '
        '"repository": "forge:github.com/acme/other", "files": [], "folders": [], '
        '"identifiers": ["abc"], "keyword_groups": []}}',
        '{"title": "t", "recommendation": "r", "scope": {"kind": "repository", '
        '"repository": "forge:github.com/acme/app", "files": [7], "folders": [], '
        '"identifiers": [], "keyword_groups": []}}',
        '{"title": "t", "recommendation": "r", "scope": {"kind": "repository", '
        '"repository": "forge:github.com/acme/app", "files": [], "folders": [], '
        '"identifiers": [], "keyword_groups": [["a", 2]]}}',
    ],
    ids=["not json", "not an object", "title", "graph body", "other repository", "file",
         "keyword group"],
)  # fmt: skip
def test_a_damaged_row_is_skipped_and_the_others_are_read(store: SqliteStore, body: str) -> None:
    damaged, kept = publish(store, draft(1), draft(2))
    with sqlite3.connect(store.path) as raw:
        raw.execute("UPDATE records SET body = ? WHERE id = ?", (body, damaged))
    raw.close()
    with StoreRows(store.path) as rows:
        _, cards = rows.repository_cards(REPOSITORY)
    assert [card.id for card in cards] == [kept]


def test_a_store_path_that_needs_quoting_in_a_uri_is_read(tmp_path: Path) -> None:
    path = tmp_path / "a dir?#%" / "lessons.sqlite3"
    with SqliteStore(path) as store:
        publish(store, draft(1))
    with StoreRows(path) as rows:
        assert len(rows.repository_cards(REPOSITORY)[1]) == 1


def test_a_store_others_can_use_is_refused(store: SqliteStore) -> None:
    store.path.chmod(0o644)
    with pytest.raises(StoreUnavailable, match="private"):
        StoreRows(store.path)


def test_a_symlink_a_missing_file_and_a_non_database_are_refused(
    store: SqliteStore, tmp_path: Path
) -> None:
    link = tmp_path / "link.sqlite3"
    link.symlink_to(store.path)
    text = tmp_path / "notes.sqlite3"
    text.write_bytes(b"x" * 200)
    text.chmod(0o600)
    for path, problem in ((link, "regular file"), (tmp_path / "none", "inspected"),
                          (text, "not an SQLite database")):  # fmt: skip
        with pytest.raises(StoreUnavailable, match=problem):
            StoreRows(path)


def test_a_schema_it_was_not_written_for_is_refused(store: SqliteStore) -> None:
    with sqlite3.connect(store.path) as raw:
        raw.execute("INSERT INTO schema_migrations (name, checksum, applied_at) "
                    "VALUES ('m002_future', 'x', 'now')")  # fmt: skip
    raw.close()
    with pytest.raises(StoreUnavailable, match="m002_future"):
        StoreRows(store.path)


def test_the_schema_it_reads_is_the_stores_own() -> None:
    assert tuple(migration.name for migration in MIGRATIONS) == KNOWN_MIGRATIONS


def test_it_never_writes_to_the_store(store: SqliteStore) -> None:
    publish(store, draft(1))
    before = (os.stat(store.path).st_mtime_ns, store.path.read_bytes())
    with StoreRows(store.path) as rows:
        rows.repository_cards(REPOSITORY)
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            rows._conn.execute("DELETE FROM records")
    assert (os.stat(store.path).st_mtime_ns, store.path.read_bytes()) == before
