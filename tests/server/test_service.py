"""The memory service end to end: RemoteBackend against a real service over PostgreSQL."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import psycopg
import pytest

from active_memory.errors import (
    LessonNotFound,
    PublicationError,
    PublicationFenced,
    RevisionConflict,
    RevisionMismatch,
    SnapshotError,
    StoreError,
)
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import LessonDraft
from active_memory.server import IssuedToken, RunningService
from active_memory.server.app import LEDGER_CHECK_S
from active_memory.store.backend import (
    ActiveMemoryBackend,
    PublicationControl,
    RunIdentity,
    SnapshotRequest,
)
from active_memory.store.postgres import tenant_schema
from active_memory.store.remote import RemoteBackend
from factories import GRAPH_HASH, REPOSITORY, make_draft, make_graph_draft

Remote = Callable[[str], RemoteBackend]
Issue = Callable[..., IssuedToken]


@pytest.fixture
def running(shared_running: RunningService) -> RunningService:
    """One service for the module: what the service keeps between requests (opened stores and
    the time each tenant's migration ledger was checked, rates) is kept per tenant and per
    token, and every test works in a tenant and with tokens of its own."""
    return shared_running


def _create(backend: RemoteBackend, *drafts: LessonDraft) -> list[str]:
    ids = sorted(new_lesson_id() for _ in drafts)
    backend.publish(
        Publication(
            run_id="run-1",
            mutations=tuple(
                Mutation(op="upsert", id=i, expected_revision=0, draft=d)
                for i, d in zip(ids, drafts, strict=True)
            ),
        )
    )
    return ids


def test_a_remote_backend_implements_the_backend_protocol(issue: Issue, remote: Remote) -> None:
    assert isinstance(remote(issue().token), ActiveMemoryBackend)


def test_published_lessons_come_back_in_the_snapshot_sorted_and_whole(
    issue: Issue, remote: Remote
) -> None:
    backend = remote(issue().token)
    ids = _create(backend, make_draft(), make_graph_draft(), make_draft("Two"))
    snapshot = backend.snapshot(SnapshotRequest(RunIdentity("run-2", REPOSITORY, GRAPH_HASH)))
    assert [lesson.id for lesson in snapshot.lessons] == ids
    assert snapshot.generation == backend.generation() == 1
    assert snapshot.by_id()[ids[0]].evidence.references == ("exec:e1",)
    only_graph = SnapshotRequest(RunIdentity("run-2", None, GRAPH_HASH), repository=False)
    assert len(backend.snapshot(only_graph).lessons) == 1


def test_a_stale_expected_revision_is_a_conflict_naming_the_id(
    issue: Issue, remote: Remote
) -> None:
    backend = remote(issue().token)
    (lesson_id,) = _create(backend, make_draft())
    change = Mutation(op="upsert", id=lesson_id, expected_revision=1, draft=make_draft("B"))
    backend.publish(Publication(run_id="run-2", mutations=(change,)))
    with pytest.raises(RevisionConflict) as caught:
        backend.publish(Publication(run_id="run-3", mutations=(change,)))
    assert list(caught.value.mismatches) == [RevisionMismatch(lesson_id, 1, 2)]
    retire = Mutation(op="retire", id=lesson_id, expected_revision=2)
    assert backend.publish(Publication(run_id="run-4", mutations=(retire,))).retired == (lesson_id,)
    with pytest.raises(RevisionConflict) as caught:
        backend.publish(Publication(run_id="run-5", mutations=(change,)))
    assert caught.value.mismatches[0].tombstoned


def test_a_deadline_already_passed_is_fenced_before_sending(issue: Issue, remote: Remote) -> None:
    backend = remote(issue().token)
    mutation = Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=make_draft())
    with pytest.raises(PublicationFenced, match="deadline passed"):
        backend.publish(Publication(run_id="r", mutations=(mutation,)), PublicationControl(0.0))
    assert backend.generation() == 0


def test_the_service_checks_the_deadline_itself_before_dispatch(
    running: RunningService, issue: Issue, remote: Remote
) -> None:
    token = issue().token
    mutation = Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=make_draft())
    body = {"publication": Publication(run_id="r", mutations=(mutation,)).model_dump(mode="json")}
    answer = httpx.post(
        f"{running.url}/v1/publish",
        json={**body, "deadline_s": 0},
        headers={"authorization": f"Bearer {token}"},
    )
    assert answer.status_code == 412
    assert answer.json()["error"] == "fenced"
    assert remote(token).generation() == 0


def test_history_revert_and_purge_work_through_the_service(issue: Issue, remote: Remote) -> None:
    backend = remote(issue().token)
    (lesson_id,) = _create(backend, make_draft("First"))
    backend.publish(
        Publication(
            run_id="run-2",
            mutations=(
                Mutation(op="upsert", id=lesson_id, expected_revision=1, draft=make_draft("Next")),
            ),
        )
    )
    assert backend.revert(lesson_id, 1, expected_revision=2).revisions == {lesson_id: 3}
    history = backend.history(lesson_id)
    assert [(h.revision, h.op, h.source_revision) for h in history] == [
        (1, "upsert", None),
        (2, "upsert", None),
        (3, "revert", 1),
    ]
    assert history[2].draft is not None
    assert history[2].draft.title == "First"
    with pytest.raises(PublicationError, match="live at revision 3"):
        backend.purge(lesson_id)
    backend.publish(
        Publication(
            run_id="run-3", mutations=(Mutation(op="retire", id=lesson_id, expected_revision=3),)
        )
    )
    receipt = backend.purge(lesson_id)
    assert (receipt.revision, receipt.erased_revisions) == (5, 3)
    assert all(entry.draft is None for entry in backend.history(lesson_id))


def test_an_unknown_id_is_not_found_and_a_retired_one_cannot_come_back(
    issue: Issue, remote: Remote
) -> None:
    backend = remote(issue().token)
    with pytest.raises(LessonNotFound):
        backend.history(new_lesson_id())
    (lesson_id,) = _create(backend, make_draft())
    backend.publish(
        Publication(
            run_id="run-2", mutations=(Mutation(op="retire", id=lesson_id, expected_revision=1),)
        )
    )
    with pytest.raises(PublicationError, match="retired id cannot come back"):
        backend.revert(lesson_id, 1)


def test_an_unreachable_service_fails_the_snapshot_never_answers_empty(tenant: str) -> None:
    backend = RemoteBackend("http://127.0.0.1:9", token="amt_x", timeout_s=2)
    with pytest.raises(SnapshotError, match="cannot be reached"):
        backend.snapshot(SnapshotRequest(RunIdentity("run", REPOSITORY)))
    backend.close()


def test_an_answer_over_the_response_limit_is_refused_whole(
    running: RunningService, issue: Issue
) -> None:
    token = issue().token
    with RemoteBackend(running.url, token=token) as writer:
        _create(writer, *(make_draft(f"Lesson {n}") for n in range(20)))
    with (
        RemoteBackend(running.url, token=token, max_response_bytes=4096) as reader,
        pytest.raises(SnapshotError, match="more than 4096 bytes"),
    ):
        reader.snapshot(SnapshotRequest(RunIdentity("run", REPOSITORY)))


def test_an_unknown_id_through_the_service_is_explained_for_a_service_user(
    issue: Issue, remote: Remote
) -> None:
    with pytest.raises(LessonNotFound) as caught:
        remote(issue().token).history(new_lesson_id())
    message = str(caught.value)
    assert "lessons list" not in message
    assert "memory service" in message


def test_a_migration_ledger_changed_after_start_is_refused_with_the_reason(
    running: RunningService, issue: Issue, remote: Remote, tenant: str, pg_database: str
) -> None:
    backend = remote(issue().token)
    backend.generation()
    schema = tenant_schema(tenant)
    with psycopg.connect(pg_database) as conn:
        conn.execute(f"UPDATE {schema}.schema_migrations SET checksum = 'edited' WHERE seq = 1")
    time.sleep(LEDGER_CHECK_S + 0.2)
    answer = httpx.get(
        f"{running.url}/v1/generation", headers={"authorization": f"Bearer {issue().token}"}
    )
    assert answer.status_code == 503
    assert answer.json()["error"] == "unavailable"
    assert "different definition" in answer.json()["message"]
    with pytest.raises(StoreError, match="different definition"):
        backend.generation()


def test_the_service_serves_on_uvloop_where_it_is_installed(running: RunningService) -> None:
    """The ``server`` extra installs uvloop (not on Windows); uvicorn then serves on it."""
    pytest.importorskip("uvloop")
    listening = running._server.servers  # uvicorn's listening servers, one per socket
    assert listening
    assert all(type(server).__module__.startswith("uvloop") for server in listening)
