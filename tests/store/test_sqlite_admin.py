from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from engines import Store

from active_memory.errors import (
    ConfigError,
    LessonNotFound,
    LessonRetired,
    PublicationError,
    RevisionConflict,
    RevisionMismatch,
    StoreError,
)
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import LessonDraft
from active_memory.store.access import AccessScope
from active_memory.store.backend import PublicationControl
from active_memory.store.migrations import MIGRATIONS
from active_memory.store.quarantine import QuarantineEntry
from active_memory.store.sqlite import SqliteStore
from factories import GRAPH_HASH, REPOSITORY, WEAK_SIGNALS, make_draft, make_graph_draft

SECRET = "sk-FAKE-0000-not-a-real-key-purge-me"
FAKE_GITHUB = "ghp_FAKEfake0000FAKEfake1111FAKEfake2222"


def _create(
    store: Store, *drafts: LessonDraft, control: PublicationControl | None = None
) -> list[str]:
    ids = sorted(new_lesson_id() for _ in drafts)
    mutations = (
        Mutation(op="upsert", id=i, expected_revision=0, draft=d)
        for i, d in zip(ids, drafts, strict=True)
    )
    store.publish(Publication(run_id="run-1", mutations=tuple(mutations)), control)
    return ids


def test_list_filters_by_repository_graph_and_node(store: Store) -> None:
    repo, graph, other = _create(
        store,
        make_draft(),
        make_graph_draft(node_id="worker", repository=REPOSITORY),
        make_graph_draft(node_id="verifier"),
    )
    assert [x.id for x in store.list_lessons()] == [repo, graph, other]
    assert [x.id for x in store.list_lessons(repository=REPOSITORY)] == [repo, graph]
    assert [x.id for x in store.list_lessons(graph_hash=GRAPH_HASH)] == [graph, other]
    assert [x.id for x in store.list_lessons(graph_hash=GRAPH_HASH, node_id="verifier")] == [other]


def test_get_unknown_id_raises_lesson_not_found(store: Store) -> None:
    missing = new_lesson_id()
    with pytest.raises(LessonNotFound, match=missing):
        store.get(missing)
    with pytest.raises(LessonNotFound):
        store.history(missing)


def test_history_keeps_every_revision_with_run_and_generation(store: Store) -> None:
    (lesson_id,) = _create(store, make_draft("First"))
    store.publish(
        Publication(
            run_id="run-2",
            mutations=(
                Mutation(
                    op="upsert", id=lesson_id, expected_revision=1, draft=make_draft("Second")
                ),
            ),
        )
    )
    store.publish(
        Publication(
            run_id="run-3", mutations=(Mutation(op="retire", id=lesson_id, expected_revision=2),)
        )
    )
    history = store.history(lesson_id)
    assert [(h.revision, h.op, h.generation, h.run_id) for h in history] == [
        (1, "upsert", 1, "run-1"),
        (2, "upsert", 2, "run-2"),
        (3, "retire", 3, "run-3"),
    ]
    assert [h.draft.title if h.draft else None for h in history] == ["First", "Second", None]
    assert store.list_retired()[0].id == lesson_id


def test_revert_writes_a_new_revision_with_the_old_content(store: Store) -> None:
    (lesson_id,) = _create(store, make_draft("First"))
    store.publish(
        Publication(
            run_id="run-2",
            mutations=(
                Mutation(op="upsert", id=lesson_id, expected_revision=1, draft=make_draft("Bad")),
            ),
        )
    )
    receipt = store.revert(lesson_id, 1)
    assert receipt.revisions == {lesson_id: 3}
    assert receipt.generation == 3
    lesson = store.get(lesson_id)
    assert (lesson.revision, lesson.title) == (3, "First")
    last = store.history(lesson_id)[-1]
    assert (last.op, last.source_revision, last.run_id) == ("revert", 1, "admin")


def test_revert_is_checked_like_a_publication(store: Store) -> None:
    (lesson_id,) = _create(store, make_draft("First"))
    store.publish(
        Publication(
            run_id="run-2",
            mutations=(
                Mutation(op="upsert", id=lesson_id, expected_revision=1, draft=make_draft("Two")),
            ),
        )
    )
    with pytest.raises(RevisionConflict) as caught:
        store.revert(lesson_id, 1, expected_revision=1)
    assert caught.value.mismatches == (RevisionMismatch(lesson_id, 1, 2),)
    with pytest.raises(PublicationError, match="has no revision 9"):
        store.revert(lesson_id, 9)
    with pytest.raises(PublicationError, match="already at revision 2"):
        store.revert(lesson_id, 2)
    assert store.generation() == 2


def test_a_revision_admission_would_refuse_cannot_be_reverted_to(store: Store) -> None:
    # Written past the screen, as a card stored before today's detectors would be.
    lesson_id = new_lesson_id()
    leaky = make_draft(recommendation=f"Clone with {FAKE_GITHUB} when CI is down.")
    store.publish(
        Publication(
            run_id="run-1",
            mutations=(Mutation(op="upsert", id=lesson_id, expected_revision=0, draft=leaky),),
        ),
        PublicationControl(screened_by="admission"),
    )
    store.publish(
        Publication(
            run_id="run-2",
            mutations=(
                Mutation(op="upsert", id=lesson_id, expected_revision=1, draft=make_draft()),
            ),
        )
    )
    with pytest.raises(PublicationError) as caught:
        store.revert(lesson_id, 1)
    assert str(caught.value) == (
        f"revision 1 of {lesson_id!r} is refused by the admission screen (secret:github_token); "
        "pick another revision or publish a corrected lesson"
    )
    assert (store.get(lesson_id).revision, store.generation()) == (2, 2)


def test_revert_cannot_bring_back_a_retired_lesson(store: Store) -> None:
    (lesson_id,) = _create(store, make_draft())
    store.publish(
        Publication(
            run_id="run-2", mutations=(Mutation(op="retire", id=lesson_id, expected_revision=1),)
        )
    )
    with pytest.raises(PublicationError, match="retired"):
        store.revert(lesson_id, 1)
    with pytest.raises(LessonRetired):
        store.get(lesson_id)


def test_purge_refuses_a_live_lesson(store: Store) -> None:
    (lesson_id,) = _create(store, make_draft())
    with pytest.raises(PublicationError, match="retire it first"):
        store.purge(lesson_id)
    with pytest.raises(LessonNotFound):
        store.purge(new_lesson_id())


def _bytes_under(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file())


@pytest.mark.sqlite_only
def test_purge_erases_past_contents_from_the_file_bytes(store: SqliteStore) -> None:
    leaked = make_draft(recommendation=f"Use the token {SECRET} to reach the staging API.")
    # Past the screen, as a leak of a format no detector knew when it was written would be.
    (lesson_id,) = _create(store, leaked, control=PublicationControl(screened_by="admission"))
    store.publish(
        Publication(
            run_id="run-2",
            mutations=(
                Mutation(op="upsert", id=lesson_id, expected_revision=1, draft=make_draft("Fixed")),
            ),
        )
    )
    store.publish(
        Publication(
            run_id="run-3", mutations=(Mutation(op="retire", id=lesson_id, expected_revision=2),)
        )
    )
    assert SECRET.encode() in _bytes_under(store.path.parent)

    receipt = store.purge(lesson_id)

    assert (receipt.revision, receipt.erased_revisions, receipt.scrubbed) == (4, 2, True)
    assert SECRET.encode() not in _bytes_under(store.path.parent)
    history = store.history(lesson_id)
    assert [(h.revision, h.op, h.draft) for h in history] == [
        (1, "upsert", None),
        (2, "upsert", None),
        (3, "retire", None),
        (4, "purge", None),
    ]
    assert history[0].erased
    with pytest.raises(RevisionConflict):
        store.publish(
            Publication(
                run_id="run-4",
                mutations=(
                    Mutation(op="upsert", id=lesson_id, expected_revision=0, draft=make_draft()),
                ),
            )
        )
    assert store.check().ok
    store.close()
    assert SECRET.encode() not in _bytes_under(store.path.parent)


class _CountedLock:
    """The store's lock, counting each time it is let go entirely (another call could come in)."""

    def __init__(self, lock: threading.RLock) -> None:
        self._lock = lock
        self._depth = 0
        self.freed = 0

    def __enter__(self) -> None:
        self._lock.acquire()
        self._depth += 1

    def __exit__(self, *exc_info: object) -> None:
        self._depth -= 1
        self.freed += self._depth == 0
        self._lock.release()


@pytest.mark.sqlite_only
@pytest.mark.parametrize("decision", ["purge", "reject"])
def test_no_other_call_comes_between_a_purge_or_a_rejection_and_its_scrub(
    sqlite_store: SqliteStore, decision: str
) -> None:
    """The scrub (a checkpoint and VACUUM on the store's one connection) runs under the store's
    lock together with the write before it: the lock is let go once, after both."""
    store = sqlite_store
    (lesson_id,) = _create(store, make_draft())
    store.publish(
        Publication(
            run_id="run-2", mutations=(Mutation(op="retire", id=lesson_id, expected_revision=1),)
        )
    )
    held = QuarantineEntry(new_lesson_id(), "run-q", "r", WEAK_SIGNALS, make_draft("Held"), "")
    store.hold([held])
    counted = _CountedLock(store._lock)
    store._lock = counted  # type: ignore[assignment]
    if decision == "purge":
        assert store.purge(lesson_id).scrubbed
    else:
        assert store.reject_held(held.id)
    assert counted.freed == 1


def test_purging_twice_changes_nothing_more(store: Store) -> None:
    (lesson_id,) = _create(store, make_draft())
    store.publish(
        Publication(
            run_id="run-2", mutations=(Mutation(op="retire", id=lesson_id, expected_revision=1),)
        )
    )
    first = store.purge(lesson_id)
    second = store.purge(lesson_id)
    assert (second.revision, second.generation, second.erased_revisions) == (
        first.revision,
        first.generation,
        0,
    )


@pytest.mark.sqlite_only
def test_check_reports_counts_and_integrity(store: SqliteStore) -> None:
    first, _ = _create(store, make_draft(), make_graph_draft())
    store.publish(
        Publication(
            run_id="run-2", mutations=(Mutation(op="retire", id=first, expected_revision=1),)
        )
    )
    report = store.check()
    assert report.ok
    assert (report.generation, report.live, report.tombstones, report.history_rows) == (2, 1, 1, 3)
    assert report.schema_version == MIGRATIONS[-1].name
    assert report.content_bytes > 0
    assert report.file_bytes > 0


@pytest.mark.sqlite_only
def test_check_reports_a_broken_foreign_key(store: SqliteStore) -> None:
    with sqlite3.connect(store.path) as raw:
        raw.execute(
            "INSERT INTO history (id, revision, op, generation, run_id, time) "
            "VALUES ('lesson-orphan', 1, 'retire', 1, 'r', 't')"
        )
    raw.close()
    report = store.check()
    assert not report.ok
    assert "foreign key violation in history" in report.problems[0]


@pytest.mark.sqlite_only
def test_backup_is_a_private_atomic_copy(store: SqliteStore, tmp_path: Path) -> None:
    _create(store, make_draft(), make_graph_draft())
    destination = tmp_path / "backups" / "copy.sqlite3"
    destination.parent.mkdir()
    destination.write_text("an older backup, replaced atomically")
    with pytest.raises(StoreError, match="exists"):
        store.backup(destination)
    assert destination.read_text() == "an older backup, replaced atomically"
    assert store.backup(destination, force=True) == destination
    assert destination.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in destination.parent.iterdir()] == ["copy.sqlite3"]
    with SqliteStore(destination, read_only=True) as copy:
        assert list(copy.export()) == list(store.export())


@pytest.mark.sqlite_only
def test_backup_refuses_the_store_itself_and_directories(
    store: SqliteStore, tmp_path: Path
) -> None:
    with pytest.raises(StoreError, match="store itself"):
        store.backup(store.path, force=True)
    with pytest.raises(StoreError, match="directory"):
        store.backup(tmp_path, force=True)
    with pytest.raises(StoreError, match="cannot write a backup"):
        store.backup(tmp_path / "missing-folder" / "copy.sqlite3")


@pytest.mark.sqlite_only
def test_check_reports_capacity_counters_that_drifted(store: SqliteStore) -> None:
    _create(store, make_draft())
    with sqlite3.connect(store.path) as raw:
        raw.execute("UPDATE meta SET live_count = 99")
    raw.close()
    report = store.check()
    assert not report.ok
    assert "capacity counters" in report.problems[0]
    assert report.live == 1


@pytest.mark.sqlite_only
def test_check_validates_every_stored_lesson_and_past_revision(store: SqliteStore) -> None:
    first, second = _create(store, make_draft("First"), make_draft("Second"))
    store.publish(
        Publication(
            run_id="run-2",
            mutations=(
                Mutation(op="upsert", id=second, expected_revision=1, draft=make_draft("Later")),
            ),
        )
    )
    assert store.check().ok
    with sqlite3.connect(store.path) as raw:
        raw.execute("UPDATE records SET body = replace(body, 'First', 'Fi\\trst') WHERE id = ?",
                    (first,))  # fmt: skip
        raw.execute("UPDATE history SET evidence = '{}' WHERE id = ? AND revision = 1", (second,))
    raw.close()
    report = store.check()
    assert not report.ok
    assert len(report.problems) == 2
    live, past = report.problems
    assert live.startswith(f"stored lesson {first!r} fails lesson validation (title: ")
    assert past.startswith(f"revision 1 of {second!r} fails lesson validation (evidence.")


def test_an_access_scope_is_refused_whole_where_the_schema_keeps_none(
    sqlite_store: SqliteStore,
) -> None:
    """Only PostgreSQL's schema keeps the scope a row last had: a SQLite store given ``within``
    refuses every operation with one clear error before reading or writing, instead of
    filtering some, failing others mid-read on a missing column, and writing nothing half."""
    lesson_id, retired = _create(sqlite_store, make_draft("Kept"), make_draft("Retired"))
    sqlite_store.publish(
        Publication(
            run_id="run-2", mutations=(Mutation(op="retire", id=retired, expected_revision=1),)
        )
    )
    held = QuarantineEntry(new_lesson_id(), "run-q", "r", WEAK_SIGNALS, make_draft("Held"), "")
    sqlite_store.hold([held])
    before = (list(sqlite_store.export()), sqlite_store.held(), sqlite_store.generation())
    line = next(iter(sqlite_store.export()))
    within = AccessScope("tenant", REPOSITORY)
    calls: dict[str, Callable[[], object]] = {
        "list_lessons": lambda: sqlite_store.list_lessons(within=within),
        "lesson_page": lambda: sqlite_store.lesson_page(within=within),
        "retired_page": lambda: sqlite_store.retired_page(within=within),
        "list_retired": lambda: sqlite_store.list_retired(within=within),
        "get": lambda: sqlite_store.get(lesson_id, within=within),
        "export": lambda: sqlite_store.export(within=within),
        "import_lines": lambda: sqlite_store.import_lines([line], replace=True, within=within),
        "history": lambda: sqlite_store.history(lesson_id, within=within),
        "histories": lambda: sqlite_store.histories(within=within),
        "history_page": lambda: sqlite_store.history_page(within=within, lessons=5),
        "revert": lambda: sqlite_store.revert(lesson_id, 1, within=within),
        "purge": lambda: sqlite_store.purge(lesson_id, within=within),
        "held": lambda: sqlite_store.held(within=within),
        "held_entry": lambda: sqlite_store.held_entry(held.id, within=within),
        "hold": lambda: sqlite_store.hold([held], within=within),
        "approve_held": lambda: sqlite_store.approve_held(held.id, within=within),
        "reject_held": lambda: sqlite_store.reject_held(held.id, within=within),
    }
    for name, call in calls.items():
        with pytest.raises(ConfigError, match="this store keeps no scopes") as refused:
            call()
        assert refused.value.path == "within", name
    assert (list(sqlite_store.export()), sqlite_store.held(), sqlite_store.generation()) == before
    assert sqlite_store.get(lesson_id).id == lesson_id  # and without a scope, all still serve
