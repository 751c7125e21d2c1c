"""Every lesson's history read in pages by a scoped credential: on PostgreSQL and through the
memory service, no page and no cursor names a lesson of another repository, paging still
returns every lesson the scope reaches, and a page is bounded by bytes as well as lessons."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from active_memory.models.changes import Mutation, Publication
from active_memory.server import RunningService
from active_memory.store.access import AccessScope
from active_memory.store.admin_wire import HistoriesAnswer
from active_memory.store.postgres import PostgresStore
from active_memory.store.remote import RemoteBackend
from active_memory.store.results import HistoryEntry
from factories import REPOSITORY, make_draft, make_graph_draft, publish_new
from team_service import running_service

OTHER = "forge:example.com/acme/other"


def _seed(store: PostgresStore) -> tuple[set[str], set[str]]:
    """Lessons of both repositories, interleaved by id: (ours, theirs)."""
    drafts = [
        make_draft("Ours 1"),
        make_draft("Theirs 1", repository=OTHER),
        make_draft("Theirs 2", repository=OTHER),
        make_graph_draft("Tenant-wide graph lesson"),
        make_draft("Ours 2"),
        make_graph_draft("Their graph lesson", repository=OTHER),
        make_draft("Theirs 3", repository=OTHER),
        make_draft("Ours, retired"),
    ]
    ids = publish_new(store, *drafts)
    retired = ids[7]
    store.publish(
        Publication(
            run_id="retire",
            mutations=(Mutation(op="retire", id=retired, expected_revision=1),),
        )
    )
    theirs_retired = ids[6]
    store.publish(
        Publication(
            run_id="retire",
            mutations=(Mutation(op="retire", id=theirs_retired, expected_revision=1),),
        )
    )
    ours = {ids[0], ids[3], ids[4], ids[7]}
    return ours, set(ids) - ours


def test_pages_and_cursors_of_a_scoped_read_name_only_reachable_lessons(
    pg_database: str,
) -> None:
    tenant = f"hist{int(time.time() * 1000) % 100_000}"
    store = PostgresStore(pg_database, tenant=tenant, pool_size=2)
    try:
        ours, theirs = _seed(store)
        scope = AccessScope(tenant, REPOSITORY)
        for size in (1, 2, 3, 200):
            seen: list[str] = []
            cursors: list[str] = []
            after: str | None = None
            while True:
                entries, after = store.history_page(within=scope, after=after, lessons=size)
                seen += [entry.id for entry in entries]
                if after is None:
                    break
                cursors.append(after)
                assert entries, f"an empty page of {size} before the end"
            assert set(seen) == ours
            assert not set(cursors) & theirs
            # Pages are cut among reachable lessons only: their count gives away nothing else.
            assert len(cursors) == len(ours) // size
    finally:
        store.close()


@pytest.fixture
def service(pg_database: str) -> Iterator[RunningService]:
    with running_service(pg_database, pool_size=2) as started:
        yield started


def _pages(url: str, token: str) -> list[tuple[list[str], str | None]]:
    pages: list[tuple[list[str], str | None]] = []
    after: str | None = None
    with httpx.Client(base_url=url, headers={"authorization": f"Bearer {token}"}) as client:
        while True:
            answer = client.post("/v1/histories", json={"after": after})
            assert answer.status_code == 200, answer.text
            page = answer.json()
            pages.append(([entry["id"] for entry in page["entries"]], page["next"]))
            after = page["next"]
            if after is None:
                return pages


def test_a_scoped_token_never_sees_another_repositorys_id_in_a_page_or_cursor(
    service: RunningService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("active_memory.server.admin_routes.HISTORY_PAGE_LESSONS", 1)
    credentials = service.service.credentials
    mine = credentials.create(tenant="scopedhist", repository=REPOSITORY)
    tenant_store = service.service.store("scopedhist")
    assert isinstance(tenant_store, PostgresStore)
    ours, theirs = _seed(tenant_store)
    pages = _pages(service.url, mine.token)
    named = {lesson_id for ids, following in pages for lesson_id in [*ids, following] if lesson_id}
    assert not named & theirs
    assert list(dict.fromkeys(i for ids, _ in pages for i in ids)) == sorted(ours)
    assert [len(set(ids)) for ids, _ in pages] == [1, 1, 1, 1, 0]  # a full page, then the end


def test_a_page_stops_adding_lessons_at_its_byte_budget(
    service: RunningService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("active_memory.server.admin_routes.HISTORY_PAGE_BYTES", 1)
    issued = service.service.credentials.create(tenant="bytehist", repository=REPOSITORY)
    with RemoteBackend(service.url, token=issued.token, timeout_s=10) as remote:
        ids = publish_new(remote, *(make_draft(f"Card {n}") for n in range(3)))
        pages = _pages(service.url, issued.token)
        # Each page holds one whole lesson, however small the budget.
        assert [page for page, _ in pages] == [[lesson_id] for lesson_id in sorted(ids)]
        assert [entry.id for entry in remote.histories()] == sorted(ids)


def _entry(lesson_id: str, revision: int, title: str) -> HistoryEntry:
    return HistoryEntry(id=lesson_id, revision=revision, op="upsert", generation=revision,
                        run_id="run-1", time="2025-06-01T00:00:00.000Z",
                        draft=make_draft(title))  # fmt: skip


def test_whole_lessons_are_kept_while_they_fit_the_budget() -> None:
    a, b, c = (
        "lesson-01JWNF15X00000000000000001",
        "lesson-01JWNF15X00000000000000002",
        ("lesson-01JWNF15X00000000000000003"),
    )
    entries = [_entry(a, 1, "A"), _entry(a, 2, "A again"), _entry(b, 1, "B"), _entry(c, 1, "C")]
    whole = HistoriesAnswer.page(entries, c, budget=10**6)
    assert ([e.id for e in whole.entries], whole.next) == ([a, a, b, c], c)
    one = len(HistoriesAnswer.page(entries[:2], None, budget=10**6).model_dump_json())
    cut = HistoriesAnswer.page(entries, None, budget=one + 10)
    assert ([e.id for e in cut.entries], cut.next) == ([a, a], a)
    first_only = HistoriesAnswer.page(entries, None, budget=0)
    assert ([e.id for e in first_only.entries], first_only.next) == ([a, a], a)
