from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from engines import Engine, Store

from active_memory.errors import (
    LessonRetired,
    PublicationError,
    PublicationFenced,
    RevisionConflict,
    RevisionMismatch,
    StoreError,
)
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import LessonDraft, RepositoryScope
from active_memory.screening.cards import screen_card
from active_memory.store.backend import PublicationControl
from active_memory.store.results import StoreLimits
from active_memory.store.sqlite import SqliteStore
from factories import REPOSITORY, make_draft, make_graph_draft


def _create(store: Store, count: int = 1, run_id: str = "run-1") -> list[str]:
    ids = sorted(new_lesson_id() for _ in range(count))
    mutations = tuple(
        Mutation(op="upsert", id=i, expected_revision=0, draft=make_draft(files=(f"src/f{n}.py",)))
        for n, i in enumerate(ids)
    )
    store.publish(Publication(run_id=run_id, mutations=mutations))
    return ids


def test_created_lessons_start_at_revision_one_and_each_batch_bumps_the_generation(
    store: Store,
) -> None:
    assert store.generation() == 0
    a, b = new_lesson_id(), new_lesson_id()
    receipt = store.publish(
        Publication(
            run_id="run-1",
            mutations=(
                Mutation(op="upsert", id=a, expected_revision=0, draft=make_draft()),
                Mutation(op="upsert", id=b, expected_revision=0, draft=make_draft()),
            ),
        )
    )
    assert receipt.generation == 1
    assert receipt.revisions == {a: 1, b: 1}
    receipt = store.publish(
        Publication(
            run_id="run-2",
            mutations=(Mutation(op="upsert", id=a, expected_revision=1, draft=make_draft("New")),),
        )
    )
    assert (receipt.generation, receipt.revisions) == (2, {a: 2})
    assert store.get(a).title == "New"
    assert store.get(a).revision == 2
    assert store.generation() == 2


def test_evidence_is_stored_apart_from_the_card(engine: Engine, store: Store) -> None:
    (lesson_id,) = _create(store)
    [(body, evidence)] = engine.raw(
        store, "SELECT body, evidence FROM records WHERE id = ?", (lesson_id,)
    )
    assert set(json.loads(body)) == {"title", "recommendation", "scope"}
    assert json.loads(evidence)["references"] == ["exec:e1"]


def test_retire_writes_a_tombstone_without_content(engine: Engine, store: Store) -> None:
    (lesson_id,) = _create(store)
    receipt = store.publish(
        Publication(
            run_id="run-2", mutations=(Mutation(op="retire", id=lesson_id, expected_revision=1),)
        )
    )
    assert receipt.retired == (lesson_id,)
    assert receipt.revisions == {lesson_id: 2}
    with pytest.raises(LessonRetired, match="retired at revision 2"):
        store.get(lesson_id)
    [row] = engine.raw(
        store,
        "SELECT revision, deleted, body, evidence, repository FROM records WHERE id = ?",
        (lesson_id,),
    )
    assert row == (2, 1, None, None, None)


def test_conflict_names_every_conflicting_id_and_writes_nothing(store: Store) -> None:
    stale, retired, fine = _create(store, 3)
    store.publish(
        Publication(
            run_id="run-2",
            mutations=(
                Mutation(op="upsert", id=stale, expected_revision=1, draft=make_draft("Newer")),
            ),
        )
    )
    store.publish(
        Publication(
            run_id="run-3", mutations=(Mutation(op="retire", id=retired, expected_revision=1),)
        )
    )
    missing = new_lesson_id()
    batch = Publication(
        run_id="run-4",
        mutations=(
            Mutation(op="upsert", id=stale, expected_revision=1, draft=make_draft("Stale")),
            Mutation(op="upsert", id=fine, expected_revision=1, draft=make_draft("Would be fine")),
            Mutation(op="retire", id=missing, expected_revision=3),
            Mutation(op="upsert", id=retired, expected_revision=2, draft=make_draft("Resurrect")),
        ),
    )
    with pytest.raises(RevisionConflict) as caught:
        store.publish(batch)
    assert set(caught.value.mismatches) == {
        RevisionMismatch(stale, 1, 2),
        RevisionMismatch(missing, 3, 0),
        RevisionMismatch(retired, 2, 2, tombstoned=True),
    }
    message = str(caught.value)
    for lesson_id in (stale, missing, retired):
        assert lesson_id in message
    assert f"{stale} expected revision 1, found 2" in message
    assert store.generation() == 3
    assert store.get(fine).revision == 1


def test_tombstoned_id_cannot_be_recreated_through_publish(store: Store) -> None:
    (lesson_id,) = _create(store)
    store.publish(
        Publication(
            run_id="run-2", mutations=(Mutation(op="retire", id=lesson_id, expected_revision=1),)
        )
    )
    for expected in (0, 1, 2):
        with pytest.raises(RevisionConflict) as caught:
            store.publish(
                Publication(
                    run_id="run-3",
                    mutations=(
                        Mutation(
                            op="upsert",
                            id=lesson_id,
                            expected_revision=expected,
                            draft=make_draft(),
                        ),
                    ),
                )
            )
        assert caught.value.mismatches == (RevisionMismatch(lesson_id, expected, 2, True),)
    assert store.generation() == 2


def test_cancelled_control_fences_the_publication(store: Store) -> None:
    control = PublicationControl()
    control.cancel()
    draft = Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=make_draft())
    with pytest.raises(PublicationFenced, match="cancelled"):
        store.publish(Publication(run_id="run-1", mutations=(draft,)), control)
    expired = PublicationControl(deadline=time.monotonic() - 1)
    with pytest.raises(PublicationFenced, match="deadline"):
        store.publish(Publication(run_id="run-1", mutations=(draft,)), expired)
    assert store.generation() == 0
    assert store.list_lessons() == ()


def test_open_control_lets_the_publication_through(store: Store) -> None:
    control = PublicationControl(deadline=time.monotonic() + 60)
    receipt = store.publish(
        Publication(
            run_id="run-1",
            mutations=(
                Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=make_draft()),
            ),
        ),
        control,
    )
    assert receipt.generation == 1


def test_empty_publication_commits_nothing(store: Store) -> None:
    assert store.publish(Publication(run_id="run-1", mutations=())).generation == 0
    assert store.generation() == 0


def _limited(engine: Engine, **limits: int) -> Store:
    return engine.open("limited", limits=StoreLimits(**limits))


def test_live_lesson_limit_fails_the_whole_batch(engine: Engine) -> None:
    with _limited(engine, max_live=3) as store:
        _create(store, 2)
        with pytest.raises(PublicationError, match="4 live lessons; the limit is 3"):
            _create(store, 2)
        assert len(store.list_lessons()) == 2
        assert store.generation() == 1
        _create(store, 1)


def test_row_limit_counts_tombstones(engine: Engine) -> None:
    with _limited(engine, max_rows=2) as store:
        (first,) = _create(store)
        store.publish(
            Publication(
                run_id="run-2", mutations=(Mutation(op="retire", id=first, expected_revision=1),)
            )
        )
        _create(store)
        with pytest.raises(PublicationError, match="rows including tombstones"):
            _create(store)
        assert store.generation() == 3


def test_total_bytes_limit(engine: Engine) -> None:
    with _limited(engine, max_total_bytes=1500) as store:
        _create(store, 2)
        with pytest.raises(PublicationError, match="bytes of stored content; the limit is 1500"):
            _create(store, 2)
        assert len(store.list_lessons()) == 2


def test_per_body_limit_names_the_lesson(engine: Engine) -> None:
    with _limited(engine, max_body_bytes=200) as store:
        lesson_id = new_lesson_id()
        with pytest.raises(PublicationError, match=f"{lesson_id}.*per-body limit is 200"):
            store.publish(
                Publication(
                    run_id="run-1",
                    mutations=(
                        Mutation(
                            op="upsert", id=lesson_id, expected_revision=0, draft=make_draft()
                        ),
                    ),
                )
            )
        assert store.generation() == 0


def test_default_per_body_limit_is_8_kib(store: Store) -> None:
    long_name = "d" * 240
    draft = make_draft()
    draft = LessonDraft(
        scope=RepositoryScope(
            repository=REPOSITORY,
            files=tuple(f"src/{long_name}/f{n:02d}.py" for n in range(20)),
            folders=tuple(f"lib/{long_name}/d{n:02d}" for n in range(16)),
        ),
        title=draft.title,
        recommendation=draft.recommendation,
        evidence=draft.evidence,
    )
    lesson_id = new_lesson_id()
    with pytest.raises(PublicationError, match="per-body limit is 8192"):
        store.publish(
            Publication(
                run_id="run-1",
                mutations=(Mutation(op="upsert", id=lesson_id, expected_revision=0, draft=draft),),
            )
        )


def test_a_store_over_a_lowered_limit_can_still_shrink(engine: Engine) -> None:
    with engine.open("limited") as store:
        ids = _create(store, 3)
    with _limited(engine, max_live=1) as store:
        receipt = store.publish(
            Publication(
                run_id="run-2", mutations=(Mutation(op="retire", id=ids[0], expected_revision=1),)
            )
        )
        assert receipt.retired == (ids[0],)


@pytest.mark.slow
def test_ten_thousand_live_lessons_is_the_default_limit(store: Store) -> None:
    """Slow: it publishes 10,000 lessons, on SQLite and on PostgreSQL, to reach the limit.

    The seeding batches take the named screening opt-out (one draft, screened once below): the
    limit is what is tested, and screening 10,000 copies of one card was 90% of the time."""
    draft = make_graph_draft()
    assert screen_card(draft) == ()
    screened = PublicationControl(screened_by="admission")
    for start in range(0, 10_000, 2_500):
        mutations = tuple(
            Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=draft)
            for _ in range(2_500)
        )
        store.publish(Publication(run_id=f"run-{start}", mutations=mutations), screened)
    with pytest.raises(PublicationError, match="10001 live lessons; the limit is 10000"):
        store.publish(
            Publication(
                run_id="run-x",
                mutations=(
                    Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=draft),
                ),
            )
        )
    assert len(store.list_lessons()) == 10_000


@pytest.mark.sqlite_only
def test_a_writer_held_past_the_busy_timeout_fails_without_writing(store_path: Path) -> None:
    SqliteStore(store_path).close()
    blocker = sqlite3.connect(store_path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with SqliteStore(store_path, busy_timeout_ms=50) as store:
            mutation = Mutation(
                op="upsert", id=new_lesson_id(), expected_revision=0, draft=make_draft()
            )
            with pytest.raises(StoreError, match="locked by another writer"):
                store.publish(Publication(run_id="run-1", mutations=(mutation,)))
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    with SqliteStore(store_path) as store:
        assert store.generation() == 0


def test_threads_sharing_one_store_are_serialised(store: Store) -> None:
    def publish_many(worker: int) -> None:
        for n in range(25):
            draft = make_draft(f"thread {worker} lesson {n}")
            store.publish(
                Publication(
                    run_id=f"t{worker}-{n}",
                    mutations=(
                        Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=draft),
                    ),
                )
            )

    threads = [threading.Thread(target=publish_many, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.generation() == 100
    assert len(store.list_lessons()) == 100
