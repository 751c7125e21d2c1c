"""The shared deadline, cancellation, concurrent writers and a changing checkout."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from active_memory.agents import specialists
from active_memory.agents.providers.base import ModelRequest, ModelResponse
from active_memory.cancel import CancelToken
from active_memory.errors import LessonRetired, RevisionConflict, RevisionMismatch
from active_memory.models.changes import Mutation, Publication
from active_memory.models.runs import RunRecord
from active_memory.postmortem.entry import run_postmortem, sequential_ids
from active_memory.postmortem.options import PostmortemOptions
from active_memory.postmortem.publication import MAX_CONFLICT_ROUNDS
from active_memory.postmortem.report import PostmortemReport
from active_memory.store.backend import PublicationControl, PublicationReceipt
from active_memory.store.sqlite import SqliteStore
from active_memory.testing import ScriptedProvider, answer_response
from postmortem.postmortem_kit import (
    by_labels,
    config_of,
    decisions,
    discovered,
    first_run,
    graph_draft,
    seed,
    store_at,
    worker_lesson,
)

pytestmark = pytest.mark.timeout(20)
GRAPH_ONLY = {"repository": False}
NEW = sequential_ids(1_748_772_100_000)()  # the first id the postmortem assigns


def _seeded(tmp_path: Path, record: RunRecord, count: int, padded: bool = False) -> list[str]:
    make = sequential_ids(1_700_000_000_000)
    ids = [make() for _ in range(count)]
    with store_at(tmp_path) as store:
        seed(store, *[(i, graph_draft(record, f"Lesson {i}", padded=padded)) for i in ids])
    return ids


async def _forever(request: ModelRequest) -> ModelResponse:
    await asyncio.sleep(30)
    raise AssertionError("unreachable: the deadline or cancellation stops this call")


async def _run(
    record: RunRecord, tmp_path: Path, provider: ScriptedProvider, backend: Any = None, **kw: Any
) -> tuple[PostmortemReport, SqliteStore]:
    store = store_at(tmp_path)
    options: dict[str, Any] = {"config": config_of(**GRAPH_ONLY), "new_id": sequential_ids()}
    options.update(kw)
    report = await run_postmortem(record, PostmortemOptions(
        backend=backend or store, private_dir=tmp_path / "evidence", provider=provider, **options,
    ))  # fmt: skip
    return report, store


async def test_deadline_mid_batch_stops_that_specialist_and_others_settle(tmp_path: Path) -> None:
    _, record = first_run(tmp_path)
    ids = _seeded(tmp_path, record, 6, padded=True)
    provider = ScriptedProvider(
        by_labels(
            {
                ("graph_maintenance", 0, 1): decisions(*[(i, "retire") for i in ids[:3]]),
                ("graph_maintenance", 1, 1): _forever,
                ("graph_discovery", 0, 1): discovered(worker_lesson()),
            }
        )
    )
    started = time.monotonic()
    # The deadline leaves the discovery's scripted session time to settle on a loaded machine
    # (at 600 ms it timed out too with seven test runs sharing two cores).
    report, store = await _run(
        record, tmp_path, provider, evidence_budget=7 * 1024,
        config=config_of(timeout_ms=1500, **GRAPH_ONLY),
    )  # fmt: skip
    assert time.monotonic() - started < 4
    maintenance = report.specialist("graph_maintenance")
    assert (maintenance.status, maintenance.batches) == ("timed_out", 2)
    assert report.specialist("graph_discovery").status == "published"
    assert report.status == "timed_out"
    with store:
        live = {lesson.id for lesson in store.list_lessons()}
    # Batch 0's retirements never publish alone; the validated discovery settled.
    assert live == {*ids, NEW}
    assert [c.id for c in report.changes] == [NEW]


async def test_cancellation_before_publication_publishes_nothing(tmp_path: Path) -> None:
    _, record = first_run(tmp_path)
    ids = _seeded(tmp_path, record, 1)
    cancel = CancelToken()

    async def cancel_then_hang(request: ModelRequest) -> ModelResponse:
        cancel.cancel()
        return await _forever(request)

    provider = ScriptedProvider(
        by_labels(
            {
                ("graph_discovery", 0, 1): discovered(worker_lesson()),
                ("graph_maintenance", 0, 1): cancel_then_hang,
            }
        )
    )
    report, store = await _run(record, tmp_path, provider, cancel=cancel)
    assert report.status == "cancelled"
    assert report.specialist("graph_maintenance").status == "cancelled"
    assert report.specialist("graph_discovery").status == "cancelled"  # validated, fenced
    assert report.changes == ()
    with store:
        assert [lesson.id for lesson in store.list_lessons()] == ids
        assert store.generation() == 1  # only the seed


class SlowCommit:
    """Commits at once, then takes a while to return: a write already dispatched."""

    def __init__(self, store: SqliteStore) -> None:
        self.store = store
        self.dispatched = threading.Event()
        self.returned = threading.Event()

    def snapshot(self, request: Any) -> Any:
        return self.store.snapshot(request)

    def generation(self) -> int:
        return self.store.generation()

    def publish(
        self, publication: Publication, control: PublicationControl | None = None
    ) -> PublicationReceipt:
        receipt = self.store.publish(publication, control)
        self.dispatched.set()
        time.sleep(0.3)
        self.returned.set()
        return receipt


async def test_cancellation_during_a_started_write_drains_it(tmp_path: Path) -> None:
    _, record = first_run(tmp_path)
    backend = SlowCommit(store_at(tmp_path))
    cancel = CancelToken()
    provider = ScriptedProvider(by_labels({("graph_discovery", 0, 1): discovered(worker_lesson())}))
    task = asyncio.create_task(_run(record, tmp_path, provider, backend, cancel=cancel))
    await asyncio.to_thread(backend.dispatched.wait, 5)
    cancel.cancel()
    report, _ = await task
    assert backend.returned.is_set()
    assert report.specialist("graph_discovery").status == "published"
    assert [c.revision for c in report.changes] == [1]


async def test_cancelling_the_task_during_a_started_write_waits_for_it(tmp_path: Path) -> None:
    _, record = first_run(tmp_path)
    backend = SlowCommit(store_at(tmp_path))
    provider = ScriptedProvider(by_labels({("graph_discovery", 0, 1): discovered(worker_lesson())}))
    task = asyncio.create_task(_run(record, tmp_path, provider, backend))
    await asyncio.to_thread(backend.dispatched.wait, 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert backend.returned.is_set()  # the write ended before cancellation surfaced
    with backend.store as store:
        assert [lesson.id for lesson in store.list_lessons()] == [NEW]


class ConcurrentWriter:
    """Before the postmortem's first publication, another writer revises a lesson."""

    def __init__(self, store: SqliteStore, path: Path, lesson_id: str, draft: Any) -> None:
        self.store = store
        self.path = path
        self.lesson_id = lesson_id
        self.draft = draft
        self.calls = 0

    def snapshot(self, request: Any) -> Any:
        return self.store.snapshot(request)

    def generation(self) -> int:
        return self.store.generation()

    def publish(
        self, publication: Publication, control: PublicationControl | None = None
    ) -> PublicationReceipt:
        self.calls += 1
        if self.calls == 1:
            with SqliteStore(self.path) as other:
                other.publish(
                    Publication(
                        run_id="other-run",
                        mutations=(
                            Mutation(
                                op="upsert",
                                id=self.lesson_id,
                                expected_revision=1,
                                draft=self.draft,
                            ),
                        ),
                    )
                )
        return self.store.publish(publication, control)


async def test_a_concurrent_writer_causes_one_re_maintenance_then_publication(
    tmp_path: Path,
) -> None:
    _, record = first_run(tmp_path)
    [lesson_id] = _seeded(tmp_path, record, 1)
    store = store_at(tmp_path)
    writer = ConcurrentWriter(
        store, store.path, lesson_id, graph_draft(record, "Revised by another run")
    )
    provider = ScriptedProvider(
        by_labels(
            {
                ("graph_discovery", 0, 1): discovered(worker_lesson()),
                ("graph_maintenance", 0, 1): decisions((lesson_id, "retire")),
                # Re-invoked in a new session (batch labels continue) on the refreshed lesson.
                ("graph_maintenance", 1, 1): decisions((lesson_id, "retire")),
            }
        )
    )
    report, _ = await _run(record, tmp_path, provider, writer)
    maintenance = report.specialist("graph_maintenance")
    assert (maintenance.status, maintenance.conflict_retries) == ("published", 1)
    assert maintenance.batches == 2
    assert writer.calls == 2
    second = [r for r in provider.requests if r.labels.specialist == "graph_maintenance"][1]
    assert f'"id":"{lesson_id}"' in str(second.messages[0])
    assert '"revision":2' in str(second.messages[0])
    assert [(c.op, c.id, c.expected_revision, c.revision) for c in report.changes] == [
        ("retire", lesson_id, 2, 3), ("create", NEW, 0, 1)
    ]  # fmt: skip
    assert sum(1 for r in provider.requests if r.labels.specialist == "graph_discovery") == 1
    with store, pytest.raises(LessonRetired):
        store.get(lesson_id)


class HiddenTombstone:
    """Refuses every batch touching ``lesson_id`` although the visible lessons never change."""

    def __init__(self, store: SqliteStore, lesson_id: str) -> None:
        self.store = store
        self.lesson_id = lesson_id
        self.calls = 0

    def snapshot(self, request: Any) -> Any:
        return self.store.snapshot(request)

    def generation(self) -> int:
        return self.store.generation()

    def publish(
        self, publication: Publication, control: PublicationControl | None = None
    ) -> PublicationReceipt:
        self.calls += 1
        if any(m.id == self.lesson_id for m in publication.mutations):
            raise RevisionConflict([RevisionMismatch(self.lesson_id, 1, 1, tombstoned=True)])
        return self.store.publish(publication, control)


async def test_a_conflict_that_changes_no_visible_lesson_stops_without_a_loop(
    tmp_path: Path,
) -> None:
    _, record = first_run(tmp_path)
    [lesson_id] = _seeded(tmp_path, record, 1)
    backend = HiddenTombstone(store_at(tmp_path), lesson_id)
    provider = ScriptedProvider(
        by_labels(
            {
                ("graph_discovery", 0, 1): discovered(worker_lesson()),
                ("graph_maintenance", 0, 1): decisions((lesson_id, "retire")),
            }
        )
    )
    report, store = await _run(record, tmp_path, provider, backend)
    maintenance = report.specialist("graph_maintenance")
    assert (maintenance.status, maintenance.error_code) == ("conflict", "conflict")
    assert "did not change" in (maintenance.error or "")
    assert report.status == "conflict"
    assert backend.calls == 2  # the conflict, then the discoveries alone
    assert report.specialist("graph_discovery").status == "published"
    with store:
        assert {lesson.id for lesson in store.list_lessons()} == {lesson_id, NEW}


async def test_a_checkout_changed_during_review_refuses_publication(tmp_path: Path) -> None:
    folder, record = first_run(tmp_path)

    async def edit_then_answer(request: ModelRequest) -> ModelResponse:
        (folder / "checkout" / "notes.txt").write_text("edited during review\n", "utf-8")
        return answer_response({"lessons": [worker_lesson()]})

    provider = ScriptedProvider(by_labels({("graph_discovery", 0, 1): edit_then_answer}))
    report, store = await _run(record, tmp_path, provider)
    assert report.status == "checkout_changed"
    discovery = report.specialist("graph_discovery")
    assert (discovery.status, discovery.error_code) == ("failed", "checkout_changed")
    assert "changed during review" in (report.reason or "")
    with store:
        assert store.list_lessons() == ()


class Stranger:
    """Refuses every batch over an id no planned mutation holds: a conflict nobody owns."""

    def __init__(self, store: SqliteStore) -> None:
        self.store = store
        self.calls = 0

    def snapshot(self, request: Any) -> Any:
        return self.store.snapshot(request)

    def generation(self) -> int:
        return self.store.generation()

    def publish(
        self, publication: Publication, control: PublicationControl | None = None
    ) -> PublicationReceipt:
        self.calls += 1
        raise RevisionConflict([RevisionMismatch("lesson-NOT-IN-THE-PLAN", 1, 2)])


async def test_a_conflict_no_planned_mutation_owns_fails_the_pending_without_retrying(
    tmp_path: Path,
) -> None:
    _, record = first_run(tmp_path)
    backend = Stranger(store_at(tmp_path))
    provider = ScriptedProvider(by_labels({("graph_discovery", 0, 1): discovered(worker_lesson())}))
    report, _ = await _run(record, tmp_path, provider, backend)
    assert backend.calls == 1
    discovery = report.specialist("graph_discovery")
    assert (discovery.status, discovery.error_code) == ("conflict", "conflict")
    assert "does not hold" in (discovery.error or "")
    assert report.status == "conflict"
    assert report.changes == ()


class Contended(ConcurrentWriter):
    """Another writer revises ``lesson_id`` just before every one of the postmortem's writes."""

    def publish(
        self, publication: Publication, control: PublicationControl | None = None
    ) -> PublicationReceipt:
        self.calls += 1
        with SqliteStore(self.path) as other:
            other.publish(
                Publication(
                    run_id="other-run",
                    mutations=(
                        Mutation(
                            op="upsert",
                            id=self.lesson_id,
                            expected_revision=self.calls,
                            draft=self.draft,
                        ),
                    ),
                )
            )
        return self.store.publish(publication, control)


async def test_conflicts_beyond_max_conflict_rounds_fail_every_pending_specialist(
    tmp_path: Path,
) -> None:
    _, record = first_run(tmp_path)
    [lesson_id] = _seeded(tmp_path, record, 1)
    store = store_at(tmp_path)
    writer = Contended(store, store.path, lesson_id, graph_draft(record, "Revised again"))
    script: dict[tuple[str, int, int], Any] = {
        ("graph_discovery", 0, 1): discovered(worker_lesson())
    }
    for batch in range(MAX_CONFLICT_ROUNDS + 1):
        script[("graph_maintenance", batch, 1)] = decisions((lesson_id, "retire"))
    provider = ScriptedProvider(by_labels(script))
    report, _ = await _run(record, tmp_path, provider, writer)
    maintenance = report.specialist("graph_maintenance")
    assert (maintenance.status, maintenance.conflict_retries) == ("conflict", MAX_CONFLICT_ROUNDS)
    assert f"after {MAX_CONFLICT_ROUNDS} retries" in (maintenance.error or "")
    assert report.specialist("graph_discovery").status == "conflict"
    assert writer.calls == MAX_CONFLICT_ROUNDS + 1
    assert report.status == "conflict"
    assert report.changes == ()
    with store:
        assert [lesson.id for lesson in store.list_lessons()] == [lesson_id]


class SlowSnapshot(SlowCommit):
    """Takes longer to read the snapshot than the whole postmortem may last."""

    def snapshot(self, request: Any) -> Any:
        time.sleep(0.6)
        return self.store.snapshot(request)


async def test_a_deadline_during_preparation_times_out_without_publishing_or_raising(
    tmp_path: Path,
) -> None:
    _, record = first_run(tmp_path)
    backend = SlowSnapshot(store_at(tmp_path))
    provider = ScriptedProvider(by_labels({}))
    report, store = await _run(
        record, tmp_path, provider, backend, config=config_of(timeout_ms=200, **GRAPH_ONLY)
    )
    assert report.status == "timed_out"
    assert {s.error for s in report.specialists if s.status != "skipped"} == {
        "the deadline passed while preparing"
    }
    assert provider.requests == []
    assert not backend.dispatched.is_set()
    with store:
        assert store.generation() == 0


async def test_a_deadline_while_building_evidence_times_out_without_publishing_or_raising(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, record = first_run(tmp_path)
    ids = _seeded(tmp_path, record, 1)
    real = specialists.build_evidence

    def slow_build(*args: Any, **kw: Any) -> Any:
        time.sleep(0.4)  # outlasts the deadline; the real builder then sees its stop signal
        return real(*args, **kw)

    monkeypatch.setattr(specialists, "build_evidence", slow_build)
    provider = ScriptedProvider(by_labels({}))
    report, store = await _run(
        record, tmp_path, provider, config=config_of(timeout_ms=200, **GRAPH_ONLY)
    )
    assert report.status == "timed_out"
    assert {s.status for s in report.specialists if s.status != "skipped"} == {"timed_out"}
    assert provider.requests == []
    assert report.changes == ()
    with store:
        assert [lesson.id for lesson in store.list_lessons()] == ids
        assert store.generation() == 1  # only the seed
