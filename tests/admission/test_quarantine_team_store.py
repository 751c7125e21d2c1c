"""A postmortem publishing to a team store keeps its quarantined proposals there: in the
tenant's schema on PostgreSQL, and through the memory service with a token, where a person then
reviews them (``kept`` is true in the report, as with a local store)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from active_memory.postmortem.entry import run_postmortem, sequential_ids
from active_memory.postmortem.options import PostmortemOptions
from active_memory.postmortem.report import PostmortemReport
from active_memory.store.admin_backend import AdminBackend
from active_memory.store.postgres import PostgresStore
from active_memory.store.remote import RemoteBackend
from active_memory.testing import ScriptedProvider
from admission.test_quarantine_end_to_end import MARKER, _weak_lesson
from postmortem.postmortem_kit import (
    REPOSITORY,
    by_labels,
    config_of,
    discovered,
    first_run,
    worker_lesson,
)
from team_service import running_service

pytestmark = pytest.mark.timeout(90)
_tenants = itertools.count(1)


Team = tuple[AdminBackend, AdminBackend]  # the host's backend, the reviewer's


@pytest.fixture(params=["postgres", "service"])
def team(request: pytest.FixtureRequest, pg_database: str) -> Iterator[Team]:
    tenant = f"held{next(_tenants)}"
    if request.param == "postgres":
        with PostgresStore(pg_database, tenant=tenant, pool_size=2) as store:
            yield store, store
        return
    with running_service(pg_database, pool_size=4) as running:
        credentials = running.service.credentials
        host = credentials.create(tenant=tenant, repository=REPOSITORY)
        person = credentials.create(tenant=tenant, repository=REPOSITORY, review=True)
        with (
            RemoteBackend(running.url, token=host.token) as remote,
            RemoteBackend(running.url, token=person.token) as reviewer,
        ):
            yield remote, reviewer


async def _postmortem(tmp_path: Path, backend: AdminBackend) -> PostmortemReport:
    _, record = first_run(tmp_path)
    provider = ScriptedProvider(
        by_labels({("graph_discovery", 0, 1): discovered(worker_lesson(), _weak_lesson())})
    )
    return await run_postmortem(
        record,
        PostmortemOptions(
            backend=backend,
            private_dir=tmp_path / "evidence",
            provider=provider,
            config=config_of(repository=False),
            new_id=sequential_ids(),
        ),
    )


async def test_a_team_store_keeps_the_held_proposal_for_review(tmp_path: Path, team: Team) -> None:
    team, reviewer = team
    report = await _postmortem(tmp_path, team)
    (held,) = report.quarantined
    assert (held.signals, held.kept) == (("injection:remote_fetch",), True)
    (entry,) = team.held()
    assert entry.id == held.id
    assert MARKER in entry.draft.recommendation
    assert held.id not in {lesson.id for lesson in team.list_lessons()}
    assert entry.signals == held.signals  # the service found the signal the host did
    receipt = reviewer.approve_held(held.id)
    assert receipt.revisions == {held.id: 1}
    assert MARKER in team.get(held.id).recommendation
    assert team.held() == ()
