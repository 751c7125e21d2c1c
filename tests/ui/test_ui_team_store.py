"""``active-memory ui --store postgresql://…`` serves the team store: its lessons and its
quarantine, whose proposals are approved and rejected from the page as on a local store; and
``--store https://…`` reads its pages of lessons from the memory service, cut in its SQL."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

import httpx
import pytest

from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.server import RunningService
from active_memory.store.postgres import PostgresStore
from active_memory.store.quarantine import QuarantineEntry
from active_memory.store.remote import RemoteBackend
from active_memory.store.select import TENANT_ENV
from active_memory.ui import UiData, UiServer
from cli_runner import run_cli
from factories import REPOSITORY, make_draft, publish_new
from team_service import running_service

pytestmark = pytest.mark.timeout(60)
_tenants = itertools.count(1)


@pytest.fixture
def team(pg_database: str) -> Iterator[PostgresStore]:
    with PostgresStore(pg_database, tenant=f"ui{next(_tenants)}", pool_size=2) as store:
        yield store


def _held(title: str) -> QuarantineEntry:
    return QuarantineEntry(new_lesson_id(), "run-q", "repository_discovery", ("s:c",),
                           make_draft(title), "")  # fmt: skip


def test_the_page_shows_and_decides_the_team_quarantine(team: PostgresStore) -> None:
    (lesson_id,) = publish_new(team, make_draft("Live in the team store"))
    approved, rejected = _held("Approve me"), _held("Reject me")
    team.hold([approved, rejected])
    with UiServer(UiData(None, [], remote=team)) as server:
        client = httpx.Client(base_url=server.url, follow_redirects=False)
        try:
            assert client.get(server.login_url.removeprefix(server.url)).status_code == 303
            assert "Live in the team store" in client.get("/").text
            assert client.get(f"/lesson/{lesson_id}").status_code == 200
            page = client.get("/quarantine").text
            assert f'id="held-{approved.id}"' in page
            assert f'id="held-{rejected.id}"' in page
            csrf = re.search(r'name="csrf" value="([^"]+)"', page)
            assert csrf is not None
            token = {"csrf": csrf.group(1)}
            assert client.post(f"/quarantine/{approved.id}/approve", data=token).status_code == 303
            assert client.post(f"/quarantine/{rejected.id}/reject", data=token).status_code == 303
        finally:
            client.close()
    assert team.held() == ()
    assert team.get(approved.id).title == "Approve me"
    assert [entry.run_id for entry in team.history(approved.id)] == ["review"]


def test_the_command_opens_a_postgresql_store(
    team: PostgresStore, pg_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    publish_new(team, make_draft("Served by the command"))
    pages: list[str] = []

    def serve(server: UiServer, announce: object) -> None:  # one page, then stop (no Ctrl-C)
        with server, httpx.Client(base_url=server.url, follow_redirects=True) as client:
            pages.append(client.get(server.login_url.removeprefix(server.url)).text)

    monkeypatch.setattr(UiServer, "serve", serve)
    result = run_cli(["ui", "--store", pg_database, "--port", "0"], env={TENANT_ENV: team.tenant})
    assert result.exit_code == 0, result.output
    (index,) = pages
    assert "Served by the command" in index


@pytest.fixture(scope="module")
def service(pg_database: str) -> Iterator[RunningService]:
    with running_service(pg_database, pool_size=2) as started:
        yield started


def test_the_page_through_the_service_reads_one_page_not_every_lesson(
    service: RunningService, monkeypatch: pytest.MonkeyPatch
) -> None:
    issued = service.service.credentials.create(tenant="uipage", repository=REPOSITORY)
    with RemoteBackend(service.url, token=issued.token, timeout_s=10) as remote:
        ids = publish_new(remote, *(make_draft(f"Retry step {n}") for n in range(5)))
        retire = Mutation(op="retire", id=ids[0], expected_revision=1)
        remote.publish(Publication(run_id="run-r", mutations=(retire,)))

        def every_lesson(*args: object, **kwargs: object) -> None:
            raise AssertionError("the list page read every lesson")

        monkeypatch.setattr(RemoteBackend, "list_lessons", every_lesson)
        monkeypatch.setattr(RemoteBackend, "list_retired", every_lesson)
        data = UiData(None, [], remote=remote)
        page, repositories, _ = data.lessons(
            repository=None, graph=None, query="retry", page=2, per_page=3, sort="newest"
        )
        assert [row.lesson.id for row in page.rows] == [ids[1]]
        assert (page.page, page.pages, page.total) == (2, 2, 4)
        assert repositories == {REPOSITORY: 4}
        retired = data.retired()
        assert [(row.id, row.title) for row in retired.rows] == [(ids[0], "Retry step 0")]


def test_the_lesson_page_through_the_service_reads_that_lesson_alone(
    service: RunningService, monkeypatch: pytest.MonkeyPatch
) -> None:
    issued = service.service.credentials.create(tenant="uilesson", repository=REPOSITORY)
    with RemoteBackend(service.url, token=issued.token, timeout_s=10) as remote:
        ids = publish_new(remote, make_draft("Retry step 0"), make_draft("Retry step 1"))
        retire = Mutation(op="retire", id=ids[0], expected_revision=1)
        remote.publish(Publication(run_id="run-r", mutations=(retire,)))

        def every_lesson(*args: object, **kwargs: object) -> None:
            raise AssertionError("the lesson page read every lesson")

        monkeypatch.setattr(RemoteBackend, "list_lessons", every_lesson)
        data = UiData(None, [], remote=remote)
        live, revisions, _ = data.lesson(ids[1])
        assert live is not None
        assert live.title == "Retry step 1"
        assert len(revisions) == 1
        retired, retired_revisions, _ = data.lesson(ids[0])
        assert retired is None
        assert len(retired_revisions) == 2
