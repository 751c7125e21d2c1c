"""Tenant and repository isolation through the service, with RemoteBackend and forged bodies.

Two tenants hold lessons for the same repository key; tenant A also holds lessons of a second
repository. A token for (A, REPOSITORY) must neither read nor change anything of (A, OTHER) or
of tenant B, whatever the request body says.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from active_memory.errors import LessonNotFound, ScopeRefused
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import LessonDraft
from active_memory.server import IssuedToken, RunningService
from active_memory.store.backend import RunIdentity, SnapshotRequest
from active_memory.store.postgres import PostgresStore
from active_memory.store.remote import RemoteBackend
from factories import GRAPH_HASH, REPOSITORY, make_draft, make_graph_draft

OTHER = "forge:example.com/acme/other"
Issue = Callable[..., IssuedToken]
Remote = Callable[[str], RemoteBackend]


@pytest.fixture
def running(shared_running: RunningService) -> RunningService:
    """One service for the module: every test works in tenants and with tokens of its own, so
    what one test stores or is refused cannot reach another."""
    return shared_running


def _create(store: PostgresStore, *drafts: LessonDraft) -> list[str]:
    ids = [new_lesson_id() for _ in drafts]
    store.publish(
        Publication(
            run_id="seed",
            mutations=tuple(
                Mutation(op="upsert", id=i, expected_revision=0, draft=d)
                for i, d in zip(ids, drafts, strict=True)
            ),
        )
    )
    return ids


class World:
    def __init__(self, running: RunningService, issue: Issue, tenant: str) -> None:
        self.running = running
        self.a = running.service.store(tenant)
        self.b = running.service.store(f"{tenant}b")
        self.token = issue(tenant, REPOSITORY).token
        self.mine, self.theirs, self.their_graph, self.retired_theirs = _create(
            self.a,
            make_draft("Mine"),
            make_draft("Theirs", repository=OTHER),
            make_graph_draft(repository=OTHER),
            make_draft("Retired", repository=OTHER),
        )
        self.a.publish(
            Publication(
                run_id="seed",
                mutations=(Mutation(op="retire", id=self.retired_theirs, expected_revision=1),),
            )
        )
        (self.other_tenant,) = _create(self.b, make_draft("Tenant B"))

    def fingerprint(self) -> tuple[object, ...]:
        return (
            self.a.generation(),
            self.b.generation(),
            tuple(self.a.export()),
            tuple(self.b.export()),
        )

    def post(self, path: str, body: dict[str, Any], token: str | None = None) -> httpx.Response:
        return httpx.post(
            f"{self.running.url}/v1/{path}",
            json=body,
            headers={"authorization": f"Bearer {token or self.token}"},
        )


@pytest.fixture
def world(running: RunningService, issue: Issue, tenant: str) -> World:
    return World(running, issue, tenant)


def test_a_snapshot_holds_only_the_tokens_tenant_and_repository(
    world: World, remote: Remote
) -> None:
    backend = remote(world.token)
    seen = backend.snapshot(SnapshotRequest(RunIdentity("run", None, GRAPH_HASH)))
    assert [lesson.id for lesson in seen.lessons] == [world.mine]
    assert seen.generation == world.a.generation()


def test_a_snapshot_for_another_repository_is_refused(world: World, remote: Remote) -> None:
    with pytest.raises(ScopeRefused, match="repository"):
        remote(world.token).snapshot(SnapshotRequest(RunIdentity("run", OTHER)))
    answer = world.post("snapshot", {"run_id": "run", "repository": OTHER})
    assert answer.status_code == 403
    assert answer.json()["error"] == "out_of_scope"


@pytest.mark.parametrize(
    "forged",
    [{"tenant": "other"}, {"scope": {"repository": OTHER}}, {"repository": OTHER, "x": 1}],
    ids=["tenant-field", "scope-field", "unknown-field"],
)
def test_a_forged_snapshot_body_cannot_widen_the_scope(
    world: World, forged: dict[str, Any]
) -> None:
    answer = world.post("snapshot", {"run_id": "run", **forged})
    assert answer.status_code == 400
    assert answer.json()["error"] == "bad_request"


def test_publishing_into_another_repository_is_refused_and_changes_nothing(
    world: World, remote: Remote
) -> None:
    before = world.fingerprint()
    draft = make_draft("Planted", repository=OTHER)
    batch = Publication(
        run_id="run",
        mutations=(Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=draft),),
    )
    with pytest.raises(ScopeRefused):
        remote(world.token).publish(batch)
    answer = world.post("publish", {"publication": batch.model_dump(mode="json")})
    assert answer.status_code == 403
    assert world.fingerprint() == before


@pytest.mark.parametrize("target", ["theirs", "their_graph", "retired_theirs"])
def test_another_repositorys_lessons_cannot_be_changed_or_retired(
    world: World, remote: Remote, target: str
) -> None:
    lesson_id = getattr(world, target)
    before = world.fingerprint()
    for mutation in (
        Mutation(op="retire", id=lesson_id, expected_revision=1),
        Mutation(op="upsert", id=lesson_id, expected_revision=1, draft=make_draft("Mine now")),
    ):
        batch = Publication(run_id="run", mutations=(mutation,))
        with pytest.raises(ScopeRefused, match=lesson_id):
            remote(world.token).publish(batch)
        forged = world.post("publish", {"publication": batch.model_dump(mode="json")})
        assert forged.status_code == 403
    assert world.fingerprint() == before


@pytest.mark.parametrize("operation", ["history", "revert", "purge"])
def test_history_revert_and_purge_of_another_repository_are_refused(
    world: World, remote: Remote, operation: str
) -> None:
    before = world.fingerprint()
    backend = remote(world.token)
    lesson_id = world.retired_theirs if operation == "purge" else world.theirs
    call: dict[str, Callable[[], object]] = {
        "history": lambda: backend.history(lesson_id),
        "revert": lambda: backend.revert(lesson_id, 1),
        "purge": lambda: backend.purge(lesson_id),
    }
    with pytest.raises(ScopeRefused, match=lesson_id):
        call[operation]()
    body: dict[str, Any] = {"id": lesson_id}
    if operation == "revert":
        body["to_revision"] = 1
    assert world.post(operation, body).status_code == 403
    assert world.fingerprint() == before


def test_another_tenants_lessons_are_not_there_at_all(world: World, remote: Remote) -> None:
    """Tenant B's rows live in another schema: by id they are unknown, and writing the same id
    creates nothing in tenant B."""
    before_b = (world.b.generation(), tuple(world.b.export()))
    backend = remote(world.token)
    lesson_id = world.other_tenant
    with pytest.raises(LessonNotFound):
        backend.history(lesson_id)
    with pytest.raises(LessonNotFound):
        backend.revert(lesson_id, 1)
    with pytest.raises(LessonNotFound):
        backend.purge(lesson_id)
    backend.publish(
        Publication(
            run_id="run",
            mutations=(
                Mutation(op="upsert", id=lesson_id, expected_revision=0, draft=make_draft()),
            ),
        )
    )
    assert (world.b.generation(), tuple(world.b.export())) == before_b
    assert world.b.get(lesson_id).title == "Tenant B"


def test_a_token_of_tenant_b_sees_nothing_of_tenant_a(
    world: World, issue: Issue, tenant: str, remote: Remote
) -> None:
    token_b = issue(f"{tenant}b", REPOSITORY).token
    seen = remote(token_b).snapshot(SnapshotRequest(RunIdentity("run", REPOSITORY, GRAPH_HASH)))
    assert [lesson.id for lesson in seen.lessons] == [world.other_tenant]
    answer = world.post("history", {"id": world.mine}, token=token_b)
    assert answer.status_code == 404


def test_a_token_confined_to_one_graph_reaches_no_other(
    world: World, issue: Issue, tenant: str, remote: Remote
) -> None:
    narrow = issue(tenant, REPOSITORY, graph_hash=GRAPH_HASH).token
    with pytest.raises(ScopeRefused, match="graph"):
        remote(narrow).snapshot(SnapshotRequest(RunIdentity("run", REPOSITORY, "1" * 64)))
    draft = make_graph_draft(graph_hash="2" * 64)
    batch = Publication(
        run_id="run",
        mutations=(Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=draft),),
    )
    with pytest.raises(ScopeRefused):
        remote(narrow).publish(batch)


@pytest.mark.parametrize("operation", ["publish", "history", "revert", "purge"])
def test_a_body_naming_a_tenant_or_a_scope_is_refused_for_every_operation(
    world: World, operation: str, tenant: str
) -> None:
    before = world.fingerprint()
    bodies: dict[str, dict[str, Any]] = {
        "publish": {
            "publication": Publication(
                run_id="run",
                mutations=(Mutation(op="retire", id=world.other_tenant, expected_revision=1),),
            ).model_dump(mode="json")
        },
        "history": {"id": world.other_tenant},
        "revert": {"id": world.other_tenant, "to_revision": 1},
        "purge": {"id": world.other_tenant},
    }
    for forged in ({"tenant": f"{tenant}b"}, {"repository": OTHER}, {"scope": "admin"}):
        answer = world.post(operation, {**bodies[operation], **forged})
        assert answer.status_code == 400, forged
        assert answer.json()["error"] == "bad_request"
    assert world.fingerprint() == before


@pytest.mark.parametrize("qualified", [False, True], ids=["repository-lesson", "graph-lesson"])
def test_a_lesson_made_tenant_wide_does_not_leak_its_past_through_the_service(
    world: World, remote: Remote, qualified: bool
) -> None:
    """Repository S publishes its lesson, then makes it tenant-wide: R reaches the lesson now
    but neither S's earlier text (history) nor republishing it (revert), nor erasing it."""
    first = (
        make_graph_draft("S internal", repository=OTHER)
        if qualified
        else make_draft("S internal", repository=OTHER)
    )
    (lesson_id,) = _create(world.a, first)
    world.a.publish(
        Publication(
            run_id="s",
            mutations=(
                Mutation(
                    op="upsert",
                    id=lesson_id,
                    expected_revision=1,
                    draft=make_graph_draft("Now tenant-wide"),
                ),
            ),
        )
    )
    backend = remote(world.token)
    before = world.fingerprint()
    with pytest.raises(ScopeRefused, match="revision 1"):
        backend.history(lesson_id)
    with pytest.raises(ScopeRefused, match="revision 1"):
        backend.revert(lesson_id, 1)
    answer = world.post("history", {"id": lesson_id})
    assert answer.status_code == 403
    assert "S internal" not in answer.text
    assert world.post("revert", {"id": lesson_id, "to_revision": 1}).status_code == 403
    assert world.fingerprint() == before
    world.a.publish(
        Publication(
            run_id="s", mutations=(Mutation(op="retire", id=lesson_id, expected_revision=2),)
        )
    )
    before = world.fingerprint()
    with pytest.raises(ScopeRefused, match="revision 1"):
        backend.purge(lesson_id)
    assert world.post("purge", {"id": lesson_id}).status_code == 403
    assert world.fingerprint() == before
