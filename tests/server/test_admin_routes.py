"""The service's admin routes confine every operation to the token's scope: another
repository's lessons, tombstones and held proposals are neither shown nor decided, and an import
through a token takes no tombstone (it carries no scope to check)."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from active_memory.errors import QuarantineNotFound, ScopeRefused
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import LessonDraft
from active_memory.server import IssuedToken, RunningService
from active_memory.store.quarantine import QuarantineEntry
from active_memory.store.remote import RemoteBackend
from factories import (
    REPOSITORY,
    WEAK_RECOMMENDATION,
    WEAK_SIGNALS,
    make_draft,
    make_graph_draft,
    publish_new,
)

Remote = Callable[[str], RemoteBackend]
Issue = Callable[..., IssuedToken]
OTHER = "forge:example.com/acme/other"


@pytest.fixture
def running(shared_running: RunningService) -> RunningService:
    """One service for the module: what the service keeps between requests (opened stores,
    rates) is kept per tenant and per token, and every test works in a tenant and with tokens
    of its own."""
    return shared_running


def _entry(draft: LessonDraft) -> QuarantineEntry:
    return QuarantineEntry(
        new_lesson_id(), "run-q", "repository-discovery", WEAK_SIGNALS, draft, ""
    )


def _weak(title: str, repository: str) -> LessonDraft:
    return make_draft(title, recommendation=WEAK_RECOMMENDATION, repository=repository)


def test_another_repositorys_lessons_and_tombstones_stay_out_of_reach(
    issue: Issue, remote: Remote
) -> None:
    mine, theirs = remote(issue().token), remote(issue(repository=OTHER).token)
    their_id = publish_new(theirs, make_draft("Theirs", repository=OTHER))[0]
    retired_id = publish_new(theirs, make_draft("Their retired", repository=OTHER))[0]
    theirs.publish(
        Publication(
            run_id="run-2", mutations=(Mutation(op="retire", id=retired_id, expected_revision=1),)
        )
    )
    my_id = publish_new(mine, make_draft("Mine"))[0]
    with pytest.raises(ScopeRefused):
        mine.get(their_id)
    assert mine.list_retired() == ()
    assert [t.id for t in theirs.list_retired()] == [retired_id]
    exported = list(mine.export())
    assert len(exported) == 1
    assert my_id in exported[0]


def test_held_proposals_are_shown_and_decided_within_the_token_scope(
    issue: Issue, remote: Remote
) -> None:
    mine = remote(issue(review=True).token)
    theirs = remote(issue(repository=OTHER, review=True).token)
    held = _entry(_weak("Held for the other repository", OTHER))
    with pytest.raises(ScopeRefused):
        mine.hold([held])  # a draft outside the token's repository is not kept
    theirs.hold([held])
    assert mine.held() == ()
    for decide in (mine.held_entry, mine.approve_held, mine.reject_held):
        with pytest.raises(ScopeRefused):
            decide(held.id)
    assert [entry.id for entry in theirs.held()] == [held.id]
    # Nor can it replace their entry by holding one of its own under the same id.
    mine_instead = QuarantineEntry(
        held.id, "run-q", "r", WEAK_SIGNALS, _weak("Mine", REPOSITORY), ""
    )
    with pytest.raises(ScopeRefused):
        mine.hold([mine_instead])
    assert theirs.held_entry(held.id).draft.title == "Held for the other repository"
    with pytest.raises(QuarantineNotFound):
        mine.held_entry(new_lesson_id())


def test_an_import_through_a_token_refuses_tombstones_and_other_repositories(
    issue: Issue, remote: Remote
) -> None:
    mine = remote(issue().token)
    lesson_id = publish_new(mine, make_draft("Soon retired"))[0]
    mine.publish(
        Publication(
            run_id="run-2", mutations=(Mutation(op="retire", id=lesson_id, expected_revision=1),)
        )
    )
    (tombstone,) = mine.export()
    fresh = remote(issue(tenant="svcfresh").token)
    with pytest.raises(ScopeRefused, match="tombstone"):
        fresh.import_lines([tombstone])
    other = remote(issue(tenant="svcother", repository=OTHER).token)
    source = remote(issue(tenant="svcsource").token)
    publish_new(source, make_draft("Of the token's repository"))
    with pytest.raises(ScopeRefused):
        other.import_lines(list(source.export()))
    assert other.list_lessons() == ()


def test_admin_routes_need_a_credential(running: RunningService) -> None:
    for path in ("/v1/export", "/v1/retired", "/v1/review"):
        answer = httpx.get(f"{running.url}{path}")
        assert answer.status_code == 401
        assert answer.json()["error"] == "unauthorized"


def test_every_history_leaves_out_whole_a_lesson_with_a_past_in_another_repository(
    issue: Issue, remote: Remote, running: RunningService
) -> None:
    """Their lesson made tenant-wide: my token reaches it live, but not its first revision, so
    the read of every history leaves it out whole, as the one-lesson history refuses it."""
    token = issue().token
    mine, theirs = remote(token), remote(issue(repository=OTHER).token)
    (wide,) = publish_new(theirs, make_draft("Their internal text", repository=OTHER))
    widened = Mutation(
        op="upsert", id=wide, expected_revision=1, draft=make_graph_draft("Now tenant-wide")
    )
    theirs.publish(Publication(run_id="run-2", mutations=(widened,)))
    (my_id,) = publish_new(mine, make_draft("Mine"))
    assert wide in {lesson.id for lesson in mine.list_lessons()}
    with pytest.raises(ScopeRefused):
        mine.history(wide)
    assert [(e.id, e.revision) for e in mine.histories()] == [(my_id, 1)]
    assert [(e.id, e.revision) for e in theirs.histories()] == [(wide, 1), (wide, 2)]
    answer = httpx.post(
        f"{running.url}/v1/histories", json={}, headers={"authorization": f"Bearer {token}"}
    )
    assert answer.status_code == 200
    assert "Their internal text" not in answer.text
    assert answer.json()["next"] is None


def test_every_history_needs_a_credential(running: RunningService) -> None:
    answer = httpx.post(f"{running.url}/v1/histories", json={})
    assert answer.status_code == 401
