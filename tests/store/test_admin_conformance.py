"""Every admin operation behaves alike on SQLite, PostgreSQL and through the memory service.

``admin`` is parametrized over the three (``admin_backends.py``): list, show, history, every
lesson's history at once, the browser's pages of lessons (filtered, searched, counted) and of
retired ids, retire, revert, purge, export, import and the quarantine's review (hold, list,
show, approve, reject), through the one admin protocol (``store/admin_backend.py``).
The CLI half runs the same commands with ``--store`` naming each store.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from admin_backends import ADMIN_KINDS, AdminBackends, Opened

from active_memory.errors import (
    LessonNotFound,
    LessonRetired,
    PublicationError,
    QuarantineNotFound,
    RevisionConflict,
    ScreenRefused,
)
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import GraphScope, LessonDraft
from active_memory.server import RunningService
from active_memory.store.admin_backend import AdminBackend
from active_memory.store.quarantine import QuarantineEntry, QuarantineKeeper, quarantine_for
from active_memory.store.remote import RemoteBackend
from cli_runner import run_cli
from factories import (
    GRAPH_HASH,
    REPOSITORY,
    WEAK_RECOMMENDATION,
    WEAK_SIGNALS,
    make_draft,
    make_graph_draft,
    publish_new,
)
from team_service import running_service

OTHER_REPOSITORY = "forge:example.com/acme/other"
FAKE_GITHUB = "ghp_FAKEfake0000FAKEfake1111FAKEfake2222"


@pytest.fixture(scope="module")
def service(pg_database: str) -> Iterator[RunningService]:
    with running_service(pg_database, pool_size=4) as started:
        yield started


@pytest.fixture(params=ADMIN_KINDS)
def backends(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AdminBackends]:
    url = service = None
    if request.param != "sqlite":
        url = request.getfixturevalue("pg_database")
    if request.param == "service":
        service = request.getfixturevalue("service")
    opened = AdminBackends(request.param, tmp_path, url, service)
    yield opened
    opened.close()


@pytest.fixture
def admin(backends: AdminBackends) -> Opened:
    return backends.open()


def _update(backend: AdminBackend, lesson_id: str, expected: int, draft: LessonDraft) -> None:
    mutation = Mutation(op="upsert", id=lesson_id, expected_revision=expected, draft=draft)
    backend.publish(Publication(run_id="run-2", mutations=(mutation,)))


def _retire(backend: AdminBackend, lesson_id: str, expected: int) -> None:
    mutation = Mutation(op="retire", id=lesson_id, expected_revision=expected)
    backend.publish(Publication(run_id="run-3", mutations=(mutation,)))


def _held(
    lesson_id: str, title: str = "Held for review", recommendation: str = WEAK_RECOMMENDATION
) -> QuarantineEntry:
    draft = make_draft(title, recommendation=recommendation)
    return QuarantineEntry(lesson_id, "run-q", "repository-discovery", WEAK_SIGNALS, draft, "")


def test_every_backend_speaks_the_admin_protocol(admin: Opened) -> None:
    assert isinstance(admin.backend, AdminBackend)
    assert isinstance(admin.backend, QuarantineKeeper)
    assert quarantine_for(admin.backend) is admin.backend


def test_list_show_and_filters(admin: Opened) -> None:
    store = admin.backend
    repo_id, graph_id = publish_new(store, make_draft("Repository card"), make_graph_draft())
    listed = store.list_lessons()
    assert sorted(lesson.id for lesson in listed) == sorted([repo_id, graph_id])
    graph = next(lesson.scope for lesson in listed if lesson.id == graph_id)
    assert isinstance(graph, GraphScope)
    assert [x.id for x in store.list_lessons(graph_hash=graph.graph_hash)] == [graph_id]
    assert store.list_lessons(node_id="no-such-node") == ()
    assert store.get(repo_id).title == "Repository card"
    with pytest.raises(LessonNotFound):
        store.get(new_lesson_id())


def test_retire_history_revert_and_purge(admin: Opened) -> None:
    store = admin.backend
    (lesson_id,) = publish_new(store, make_draft("First wording"))
    _update(store, lesson_id, 1, make_draft("Second wording"))
    receipt = store.revert(lesson_id, 1, expected_revision=2)
    assert receipt.revisions == {lesson_id: 3}
    assert store.get(lesson_id).title == "First wording"
    with pytest.raises(RevisionConflict):
        store.revert(lesson_id, 2, expected_revision=2)
    _retire(store, lesson_id, 3)
    with pytest.raises(LessonRetired):
        store.get(lesson_id)
    assert [t.id for t in store.list_retired()] == [lesson_id]
    history = store.history(lesson_id)
    assert [(e.revision, e.op) for e in history] == [
        (1, "upsert"),
        (2, "upsert"),
        (3, "revert"),
        (4, "retire"),
    ]
    assert history[2].source_revision == 1
    purged = store.purge(lesson_id)
    assert (purged.revision, purged.erased_revisions) == (5, 3)
    assert all(entry.draft is None for entry in store.history(lesson_id))


def test_export_then_import_into_another_store_round_trips(backends: AdminBackends) -> None:
    source, target = backends.open().backend, backends.open().backend
    ids = publish_new(source, make_draft("Exported card"), make_graph_draft())
    lines = list(source.export())
    assert [json.loads(line)["id"] for line in lines] == sorted(ids)
    report = target.import_lines(lines)
    assert sorted(report.created) == sorted(ids)
    assert list(target.export()) == lines
    # The same export again changes nothing.
    assert sorted(target.import_lines(lines).unchanged) == sorted(ids)


def test_import_conflict_writes_nothing(backends: AdminBackends) -> None:
    source, target = backends.open().backend, backends.open().backend
    (lesson_id,) = publish_new(source, make_draft("The source's wording"))
    lines = list(source.export())
    changed = [line.replace("The source's wording", "Another wording") for line in lines]
    target.import_lines(changed)
    generation = target.generation()
    with pytest.raises(PublicationError, match="import refused"):
        target.import_lines(lines)
    assert target.generation() == generation
    assert target.get(lesson_id).title == "Another wording"
    assert target.import_lines(lines, replace=True).replaced == (lesson_id,)


def test_quarantine_hold_list_show_approve(admin: Opened) -> None:
    store = admin.backend
    first, second = sorted(new_lesson_id() for _ in range(2))
    store.hold([_held(first, "First held"), _held(second, "Second held")])
    # Holding an id again replaces its entry.
    store.hold([_held(first, "First held, again")])
    assert {entry.id: entry.draft.title for entry in store.held()} == {
        first: "First held, again",
        second: "Second held",
    }
    assert store.held_entry(second).signals == WEAK_SIGNALS
    receipt = store.approve_held(first)
    assert receipt.revisions == {first: 1}
    assert store.get(first).title == "First held, again"
    assert [entry.id for entry in store.held()] == [second]
    assert store.history(first)[0].run_id == "review"
    with pytest.raises(QuarantineNotFound):
        store.approve_held(first)


def test_quarantine_reject_erases_the_entry(admin: Opened) -> None:
    store = admin.backend
    lesson_id = new_lesson_id()
    store.hold([_held(lesson_id)])
    generation = store.generation()
    store.reject_held(lesson_id)
    assert store.held() == ()
    assert store.generation() == generation
    with pytest.raises(QuarantineNotFound):
        store.held_entry(lesson_id)
    with pytest.raises(QuarantineNotFound):
        store.reject_held(lesson_id)


def test_approval_screens_again_and_refuses_a_strong_signal(admin: Opened) -> None:
    store = admin.backend
    lesson_id = new_lesson_id()
    strong = _held(lesson_id, recommendation=f"Use the token {FAKE_GITHUB} in CI.")
    if isinstance(store, RemoteBackend):
        # The service screens what it holds: a strong signal is refused before it is kept.
        with pytest.raises(ScreenRefused, match="secret:github_token"):
            store.hold([strong])
        assert store.held() == ()
        return
    store.hold([strong])
    with pytest.raises(PublicationError, match="secret:github_token"):
        store.approve_held(lesson_id)
    assert [entry.id for entry in store.held()] == [lesson_id]
    with pytest.raises(LessonNotFound):
        store.get(lesson_id)


def test_approval_cannot_overwrite_a_live_lesson(admin: Opened) -> None:
    store = admin.backend
    (lesson_id,) = publish_new(store, make_draft("Already live"))
    store.hold([_held(lesson_id)])
    with pytest.raises(RevisionConflict):
        store.approve_held(lesson_id)
    assert store.get(lesson_id).title == "Already live"


# -- the CLI names every store with --store --------------------------------------------------


def _cli(opened: Opened, *args: str, input: str | None = None) -> tuple[int, str, str]:
    result = run_cli([*args, "--store", opened.location], env=opened.env, input=input)
    return result.exit_code, result.stdout, result.stderr


def test_cli_admin_commands_on_every_store(backends: AdminBackends, tmp_path: Path) -> None:
    """The acceptance run: import a file, then list, show, retire, history, review, export."""
    source = backends.open().backend
    ids = publish_new(source, make_draft("Imported by the CLI"), make_graph_draft())
    export = tmp_path / "lessons.jsonl"
    export.write_text("\n".join(source.export()) + "\n", encoding="utf-8")
    team = backends.open()
    code, out, err = _cli(team, "lessons", "import", str(export), "--json")
    assert code == 0, err
    assert sorted(json.loads(out)["created"]) == sorted(ids)
    code, out, err = _cli(team, "lessons", "list", "--json")
    assert code == 0, err
    assert [lesson["id"] for lesson in json.loads(out)] == sorted(ids)
    repo_id = next(i for i in ids if team.backend.get(i).scope.kind == "repository")
    code, out, err = _cli(team, "lessons", "show", repo_id)
    assert code == 0, err
    assert "title           Imported by the CLI" in out
    code, out, err = _cli(team, "lessons", "retire", repo_id, "--json")
    assert code == 0, err
    assert json.loads(out)["revision"] == 2
    code, out, err = _cli(team, "lessons", "history", repo_id, "--json")
    assert [entry["op"] for entry in json.loads(out)] == ["upsert", "retire"]
    code, out, err = _cli(team, "lessons", "list", "--retired")
    assert f"{repo_id}     2  repository" in out
    code, out, err = _cli(team, "lessons", "purge", repo_id, "--force", "--json")
    assert code == 0, err
    assert json.loads(out)["erased_revisions"] == 1
    held = new_lesson_id()
    team.backend.hold([_held(held, "Waiting in the team store")])
    code, out, err = _cli(team, "lessons", "review", "list")
    assert code == 0, err
    assert "Waiting in the team store" in out
    assert out.endswith("1 quarantined proposal\n")
    code, out, err = _cli(team, "lessons", "review", "approve", held, "--json")
    assert code == 0, err
    assert json.loads(out)["revision"] == 1
    code, out, err = _cli(team, "lessons", "export")
    assert code == 0, err
    exported = [json.loads(line) for line in out.splitlines()]
    assert held in [line["id"] for line in exported]
    assert {"id": repo_id, "revision": 3, "kind": "repository", "retired": True} in exported


def test_cli_review_reject_and_not_found_on_every_store(admin: Opened) -> None:
    held = new_lesson_id()
    admin.backend.hold([_held(held)])
    code, out, err = _cli(admin, "lessons", "review", "show", held, "--json")
    assert code == 0, err
    assert json.loads(out)["draft"]["title"] == "Held for review"
    code, out, err = _cli(admin, "lessons", "review", "reject", held, "--json")
    assert code == 0, err
    assert json.loads(out)["rejected"] is True
    code, out, err = _cli(admin, "lessons", "review", "reject", held)
    assert code == 1
    assert err == (
        f"error: no quarantined proposal {held!r}; `active-memory lessons review list` lists them\n"
    )


def test_cli_stats_counts_the_held_proposal_on_every_store(admin: Opened, tmp_path: Path) -> None:
    """The ledger of a held id says so, whichever store keeps the quarantine."""
    (live,) = publish_new(admin.backend, make_draft("Live and counted"))
    held = new_lesson_id()
    admin.backend.hold([_held(held)])
    runs = tmp_path / "no-runs"
    runs.mkdir()
    result = run_cli(
        ["lessons", "stats", held, "--json", "--runs", str(runs), "--store", admin.location],
        env=admin.env,
    )
    assert result.exit_code == 0, result.stderr
    ledger = json.loads(result.stdout)
    assert (ledger["id"], ledger["quarantined"], ledger["live"]) == (held, True, False)
    listed = run_cli(
        ["lessons", "stats", "--runs", str(runs), "--store", admin.location], env=admin.env
    )
    assert listed.exit_code == 0, listed.stderr
    assert f"{live:<33} r1" in listed.stdout


def test_histories_read_every_lesson_in_order_as_history_does(admin: Opened) -> None:
    store = admin.backend
    ids = publish_new(store, make_draft("First"), make_draft("Second"), make_graph_draft())
    _update(store, ids[0], 1, make_draft("First, reworded"))
    _retire(store, ids[1], 1)
    store.purge(ids[1])
    read = list(store.histories())
    assert read == [entry for lesson_id in ids for entry in store.history(lesson_id)]
    assert [(e.id, e.revision, e.op) for e in read][:3] == [
        (ids[0], 1, "upsert"),
        (ids[0], 2, "upsert"),
        (ids[1], 1, "upsert"),
    ]
    assert read[1].draft is not None
    assert read[1].draft.title == "First, reworded"
    assert all(entry.draft is None for entry in read if entry.id == ids[1])


def test_histories_of_an_empty_store_is_empty(admin: Opened) -> None:
    assert list(admin.backend.histories()) == []


def test_histories_through_the_service_come_in_pages_of_whole_lessons(
    backends: AdminBackends, monkeypatch: pytest.MonkeyPatch
) -> None:
    if backends.kind != "service":
        pytest.skip("pages are the memory service's")
    monkeypatch.setattr("active_memory.server.admin_routes.HISTORY_PAGE_LESSONS", 2)
    store = backends.open().backend
    ids = publish_new(store, *(make_draft(f"Card {n}") for n in range(5)))
    _update(store, ids[1], 1, make_draft("Card 1, reworded"))
    read = list(store.histories())
    assert [(e.id, e.revision) for e in read] == [
        (lesson_id, revision)
        for lesson_id in ids
        for revision in ((1, 2) if lesson_id == ids[1] else (1,))
    ]


@contextmanager
def _one_remote_a_repository(
    service: RunningService, tenant: str
) -> Iterator[tuple[RemoteBackend, RemoteBackend]]:
    """Two clients of one tenant: one with a token for REPOSITORY, one for OTHER_REPOSITORY."""
    credentials = service.service.credentials
    mine = credentials.create(tenant=tenant, repository=REPOSITORY)
    other = credentials.create(tenant=tenant, repository=OTHER_REPOSITORY)
    with (
        RemoteBackend(service.url, token=mine.token, timeout_s=10) as ours,
        RemoteBackend(service.url, token=other.token, timeout_s=10) as theirs,
    ):
        yield ours, theirs


def test_histories_through_the_service_leave_out_other_repositories(
    service: RunningService,
) -> None:
    with _one_remote_a_repository(service, "svchist") as (mine, other):
        (kept,) = publish_new(mine, make_draft("Ours"))
        publish_new(other, make_draft("Theirs", repository=OTHER_REPOSITORY))
        assert [entry.id for entry in mine.histories()] == [kept]
        assert [entry.draft.title for entry in other.histories() if entry.draft] == ["Theirs"]


def test_lesson_and_retired_pages_are_cut_searched_and_counted_on_every_backend(
    admin: Opened,
) -> None:
    store = admin.backend
    ids = publish_new(
        store,
        make_draft("Retry the export step"),
        make_draft("Pin the schema version"),
        make_draft("Retry the import step"),
        make_graph_draft(),
    )
    _retire(store, ids[1], 1)
    first = store.lesson_page(page=1, per_page=2)
    assert [row.id for row in first.lessons] == [ids[0], ids[2]]
    assert (first.page, first.pages, first.matching) == (1, 2, 3)
    assert first.repositories == {REPOSITORY: 2}
    assert list(first.graphs.values()) == [1]
    newest = store.lesson_page(page=9, per_page=2, sort="newest")
    assert (newest.page, [row.id for row in newest.lessons]) == (2, [ids[0]])
    searched = store.lesson_page(query="retry step", repository=REPOSITORY)
    assert [(row.id, row.title) for row in searched.lessons] == [
        (ids[0], "Retry the export step"),
        (ids[2], "Retry the import step"),
    ]
    newest = store.lesson_page(query="retry", sort="newest", per_page=1, page=2)
    assert ([row.id for row in newest.lessons], newest.pages) == ([ids[0]], 2)
    assert store.lesson_page(query="nowhere").matching == 0
    retired = store.retired_page()
    assert [(r.id, r.revision, r.title) for r in retired.rows] == [
        (ids[1], 2, "Pin the schema version")
    ]
    assert (retired.page, retired.pages, retired.matching) == (1, 1, 1)


def test_a_search_past_the_few_matches_bound_pages_alike(
    admin: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PostgreSQL reads many matches in id order instead of through its index: the same pages.
    monkeypatch.setattr("active_memory.store.listing._FEW_MATCHES", 1)
    store = admin.backend
    ids = publish_new(store, *(make_draft(f"Retry step {n}") for n in range(4)),
                      make_draft("Pin the schema"))  # fmt: skip
    assert store.lesson_page(query="retry step").matching == 4
    second = store.lesson_page(query="retry", page=2, per_page=3)
    assert ([row.id for row in second.lessons], second.pages) == ([ids[3]], 2)
    newest = store.lesson_page(query="retry", per_page=2, sort="newest")
    assert [row.id for row in newest.lessons] == [ids[3], ids[2]]
    revised = store.lesson_page(query="pin", sort="revised")
    assert [row.id for row in revised.lessons] == [ids[4]]


def test_pages_through_the_service_list_and_count_only_what_the_token_reaches(
    service: RunningService,
) -> None:
    with _one_remote_a_repository(service, "svcpage") as (mine, other):
        (kept, tenant_wide) = publish_new(mine, make_draft("Retry ours"), make_graph_draft())
        theirs = publish_new(
            other,
            make_draft("Retry theirs", repository=OTHER_REPOSITORY),
            make_draft("Retired theirs", repository=OTHER_REPOSITORY),
            make_graph_draft("Retry their graph card", repository=OTHER_REPOSITORY),
        )
        _retire(other, theirs[1], 1)
        page = mine.lesson_page()
        assert sorted(row.id for row in page.lessons) == sorted([kept, tenant_wide])
        assert (page.matching, page.repositories) == (2, {REPOSITORY: 1})
        assert list(page.graphs.values()) == [1]
        assert [row.id for row in mine.lesson_page(query="retry").lessons] == [kept]
        assert mine.lesson_page(repository=REPOSITORY).matching == 1
        assert mine.lesson_page(repository=OTHER_REPOSITORY).matching == 0
        assert mine.retired_page().matching == 0
        assert [r.id for r in other.retired_page().rows] == [theirs[1]]
        assert other.lesson_page(query="retry").matching == 2


def test_a_token_confined_to_a_graph_pages_and_counts_that_graph_alone(
    service: RunningService,
) -> None:
    tenant, other_graph = "svcgraph", "b" * 64
    wide = service.service.credentials.create(tenant=tenant, repository=REPOSITORY)
    confined = service.service.credentials.create(
        tenant=tenant, repository=REPOSITORY, graph_hash=GRAPH_HASH
    )
    with RemoteBackend(service.url, token=wide.token, timeout_s=10) as writer:
        ids = publish_new(
            writer,
            make_draft("Repository card"),
            make_graph_draft("In the graph"),
            make_graph_draft("In another graph", graph_hash=other_graph),
        )
    with RemoteBackend(service.url, token=confined.token, timeout_s=10) as reader:
        page = reader.lesson_page()
        assert [row.id for row in page.lessons] == [ids[0], ids[1]]
        assert (page.matching, page.repositories, page.graphs) == (2, {REPOSITORY: 1},
                                                                    {GRAPH_HASH: 1})  # fmt: skip
        assert reader.lesson_page(graph=other_graph).matching == 0
