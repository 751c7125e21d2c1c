"""What is particular to the PostgreSQL store: tenants, its migration ledger, its writer lock,
and the confinement of every operation to a credential's scope."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import psycopg
import pytest
from racing import release, spawn

from active_memory.errors import (
    ConfigError,
    LessonNotFound,
    ScopeRefused,
    StoreError,
    StoreUnavailable,
)
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import LessonDraft
from active_memory.store.access import AccessScope
from active_memory.store.backend import RunIdentity, SnapshotRequest
from active_memory.store.postgres import PG_MIGRATIONS, PostgresStore, tenant_schema
from active_memory.store.quarantine import QuarantineEntry
from factories import GRAPH_HASH, REPOSITORY, make_draft, make_graph_draft

OTHER = "forge:example.com/acme/other"
_tenants = iter(range(1, 10_000))


@pytest.fixture
def tenant() -> str:
    return f"pg{next(_tenants)}_{int(time.time() * 1000) % 100_000}"


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


def _retire(store: PostgresStore, lesson_id: str, revision: int = 1) -> None:
    store.publish(
        Publication(
            run_id="retire",
            mutations=(Mutation(op="retire", id=lesson_id, expected_revision=revision),),
        )
    )


def test_tenants_share_a_database_but_never_a_lesson_or_a_generation(
    pg_database: str, tenant: str
) -> None:
    with (
        PostgresStore(pg_database, tenant=f"{tenant}a") as first,
        PostgresStore(pg_database, tenant=f"{tenant}b") as second,
    ):
        _create(first, make_draft(), make_draft("Two"))
        request = SnapshotRequest(RunIdentity("run", REPOSITORY, GRAPH_HASH))
        assert len(first.snapshot(request).lessons) == 2
        assert second.snapshot(request).lessons == ()
        assert (first.generation(), second.generation()) == (1, 0)
        assert list(second.export()) == []


@pytest.mark.parametrize("name", ["", "Acme", "1acme", "a-b", "a" * 41, "a;drop"])
def test_a_tenant_name_that_is_not_one_is_refused(pg_database: str, name: str) -> None:
    with pytest.raises(ConfigError, match="tenant"):
        PostgresStore(pg_database, tenant=name)


def test_an_unreachable_database_is_one_sentence(tmp_path: Path) -> None:
    url = f"postgresql://nobody@/none?host={tmp_path}&connect_timeout=1"
    with pytest.raises(StoreUnavailable, match="cannot be reached") as caught:
        PostgresStore(url, tenant="acme")
    assert "\n" not in str(caught.value)


def test_the_ledger_records_each_migration_with_its_checksum(pg_database: str, tenant: str) -> None:
    PostgresStore(pg_database, tenant=tenant).close()
    with psycopg.connect(pg_database) as conn:
        rows = conn.execute(
            f"SELECT name, checksum FROM {tenant_schema(tenant)}.schema_migrations ORDER BY seq"
        ).fetchall()
    assert rows == [(m.name, m.checksum) for m in PG_MIGRATIONS]


def test_an_edited_migration_refuses_to_open(pg_database: str, tenant: str) -> None:
    PostgresStore(pg_database, tenant=tenant).close()
    with psycopg.connect(pg_database) as conn:
        conn.execute(f"UPDATE {tenant_schema(tenant)}.schema_migrations SET checksum = 'edited'")
    with pytest.raises(StoreUnavailable, match="different definition"):
        PostgresStore(pg_database, tenant=tenant)


def test_a_store_migrated_by_a_newer_version_refuses_to_open(pg_database: str, tenant: str) -> None:
    PostgresStore(pg_database, tenant=tenant).close()
    with psycopg.connect(pg_database) as conn:
        conn.execute(
            f"INSERT INTO {tenant_schema(tenant)}.schema_migrations (name, checksum, applied_at) "
            "VALUES ('m999_future', 'x', 'now')"
        )
    with pytest.raises(StoreUnavailable, match="newer active-memory"):
        PostgresStore(pg_database, tenant=tenant)


def test_processes_opening_a_new_tenant_at_once_migrate_it_once(
    pg_database: str, tenant: str
) -> None:
    openers = [spawn("open", f"{pg_database}|{tenant}") for _ in range(4)]
    release(openers)
    for opener in openers:
        stdout, stderr = opener.communicate(timeout=60)
        assert opener.returncode == 0, stderr
        assert stdout.strip() == "0"
    with psycopg.connect(pg_database) as conn:
        (count,) = conn.execute(
            f"SELECT count(*) FROM {tenant_schema(tenant)}.schema_migrations"
        ).fetchone() or (0,)
    assert count == len(PG_MIGRATIONS)


def test_a_writer_held_past_the_lock_timeout_fails_without_writing(
    pg_database: str, tenant: str
) -> None:
    with PostgresStore(pg_database, tenant=tenant, lock_timeout_ms=100) as store:
        with psycopg.connect(pg_database) as blocker:
            blocker.execute(f"SELECT * FROM {tenant_schema(tenant)}.meta FOR UPDATE")
            mutation = Mutation(
                op="upsert", id=new_lesson_id(), expected_revision=0, draft=make_draft()
            )
            with pytest.raises(StoreError, match="locked by another writer"):
                store.publish(Publication(run_id="run-1", mutations=(mutation,)))
        assert store.generation() == 0


def test_writers_of_different_tenants_do_not_wait_for_each_other(
    pg_database: str, tenant: str
) -> None:
    PostgresStore(pg_database, tenant=f"{tenant}a").close()
    with (
        PostgresStore(pg_database, tenant=f"{tenant}b", lock_timeout_ms=100) as other,
        psycopg.connect(pg_database) as blocker,
    ):
        blocker.execute(f"SELECT * FROM {tenant_schema(f'{tenant}a')}.meta FOR UPDATE")
        assert len(_create(other, make_draft())) == 1


# -- confinement to a credential's scope ------------------------------------------------------


@pytest.fixture
def scoped(pg_database: str, tenant: str) -> tuple[PostgresStore, AccessScope, dict[str, str]]:
    store = PostgresStore(pg_database, tenant=tenant)
    mine, theirs, shared_graph, their_graph = _create(
        store,
        make_draft(),
        make_draft(repository=OTHER),
        make_graph_draft(),
        make_graph_draft(repository=OTHER),
    )
    ids = {"mine": mine, "theirs": theirs, "graph": shared_graph, "their_graph": their_graph}
    return store, AccessScope(tenant, REPOSITORY), ids


def test_a_confined_snapshot_is_taken_for_the_credentials_repository(
    scoped: tuple[PostgresStore, AccessScope, dict[str, str]],
) -> None:
    store, access, ids = scoped
    request = SnapshotRequest(RunIdentity("run", None, GRAPH_HASH))
    seen = {lesson.id for lesson in store.snapshot(request, within=access).lessons}
    assert seen == {ids["mine"], ids["graph"]}
    with pytest.raises(ScopeRefused, match=re.escape(repr(OTHER))):
        store.snapshot(SnapshotRequest(RunIdentity("run", OTHER)), within=access)


def test_a_credential_with_a_graph_reaches_no_other_graph(
    scoped: tuple[PostgresStore, AccessScope, dict[str, str]],
) -> None:
    store, access, _ = scoped
    narrow = AccessScope(access.tenant, REPOSITORY, GRAPH_HASH)
    with pytest.raises(ScopeRefused, match="graph"):
        store.snapshot(SnapshotRequest(RunIdentity("run", None, "1" * 64)), within=narrow)


def test_a_draft_for_another_repository_is_refused_and_nothing_is_written(
    scoped: tuple[PostgresStore, AccessScope, dict[str, str]],
) -> None:
    store, access, _ = scoped
    before = store.generation()
    batch = Publication(
        run_id="run",
        mutations=(
            Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=make_draft()),
            Mutation(
                op="upsert",
                id=new_lesson_id(),
                expected_revision=0,
                draft=make_draft(repository=OTHER),
            ),
        ),
    )
    with pytest.raises(ScopeRefused, match="outside this credential's scope"):
        store.publish(batch, within=access)
    assert store.generation() == before


@pytest.mark.parametrize("target", ["theirs", "their_graph"])
def test_another_repositorys_lesson_cannot_be_changed_or_retired(
    scoped: tuple[PostgresStore, AccessScope, dict[str, str]], target: str
) -> None:
    store, access, ids = scoped
    lesson_id = ids[target]
    for mutation in (
        Mutation(op="retire", id=lesson_id, expected_revision=1),
        Mutation(op="upsert", id=lesson_id, expected_revision=1, draft=make_draft()),
    ):
        with pytest.raises(ScopeRefused, match=lesson_id):
            store.publish(Publication(run_id="run", mutations=(mutation,)), within=access)
    assert store.get(lesson_id).revision == 1


def test_history_revert_and_purge_of_another_repository_are_refused(
    scoped: tuple[PostgresStore, AccessScope, dict[str, str]],
) -> None:
    store, access, ids = scoped
    theirs = ids["theirs"]
    with pytest.raises(ScopeRefused):
        store.history(theirs, within=access)
    with pytest.raises(ScopeRefused):
        store.revert(theirs, 1, within=access)
    _retire(store, theirs)
    with pytest.raises(ScopeRefused):
        store.purge(theirs, within=access)
    with pytest.raises(ScopeRefused):
        store.history(theirs, within=access)
    assert store.purge(theirs).erased_revisions == 1  # unconfined, it is allowed
    with pytest.raises(ScopeRefused):
        store.history(theirs, within=access)  # a purged tombstone keeps its owner


_ONCE_THEIRS = {
    "repository-lesson": lambda: make_draft("S internal", repository=OTHER),
    "qualified-graph-lesson": lambda: make_graph_draft("S internal", repository=OTHER),
}


def _made_tenant_wide(store: PostgresStore, first: LessonDraft) -> str:
    """Repository S (OTHER) publishes ``first`` (revision 1), then makes the lesson an
    unqualified graph lesson (revision 2), which a credential for REPOSITORY reaches."""
    (lesson_id,) = _create(store, first)
    wide = make_graph_draft("Now tenant-wide")
    store.publish(
        Publication(
            run_id="s",
            mutations=(Mutation(op="upsert", id=lesson_id, expected_revision=1, draft=wide),),
        ),
        within=AccessScope("any", OTHER),
    )
    return lesson_id


@pytest.mark.parametrize("first", sorted(_ONCE_THEIRS))
def test_a_lesson_made_tenant_wide_keeps_its_past_from_other_repositories(
    pg_database: str, tenant: str, first: str
) -> None:
    store = PostgresStore(pg_database, tenant=tenant)
    access = AccessScope(tenant, REPOSITORY)
    lesson_id = _made_tenant_wide(store, _ONCE_THEIRS[first]())
    with pytest.raises(ScopeRefused, match="revision 1"):
        store.history(lesson_id, within=access)
    with pytest.raises(ScopeRefused, match="revision 1"):
        store.revert(lesson_id, 1, within=access)
    assert store.get(lesson_id).title == "Now tenant-wide"
    assert store.get(lesson_id).revision == 2
    _retire(store, lesson_id, 2)
    with pytest.raises(ScopeRefused, match="revision 1"):
        store.purge(lesson_id, within=access)
    assert [entry.draft is not None for entry in store.history(lesson_id)] == [True, True, False]
    # Repository S itself still reaches all of it.
    assert len(store.history(lesson_id, within=AccessScope(tenant, OTHER))) == 3


def test_a_revision_within_scope_can_still_be_reverted_to(pg_database: str, tenant: str) -> None:
    store = PostgresStore(pg_database, tenant=tenant)
    access = AccessScope(tenant, REPOSITORY)
    (lesson_id,) = _create(store, make_graph_draft("One"))
    store.publish(
        Publication(
            run_id="r",
            mutations=(
                Mutation(
                    op="upsert", id=lesson_id, expected_revision=1, draft=make_graph_draft("Two")
                ),
            ),
        ),
        within=access,
    )
    assert store.revert(lesson_id, 1, within=access).revisions == {lesson_id: 3}


def test_confined_operations_on_the_credentials_own_lessons_work(
    scoped: tuple[PostgresStore, AccessScope, dict[str, str]],
) -> None:
    store, access, ids = scoped
    mine = ids["mine"]
    store.publish(
        Publication(
            run_id="run",
            mutations=(
                Mutation(op="upsert", id=mine, expected_revision=1, draft=make_draft("Two")),
            ),
        ),
        within=access,
    )
    assert [entry.revision for entry in store.history(mine, within=access)] == [1, 2]
    assert store.revert(mine, 1, within=access).revisions == {mine: 3}
    _retire(store, mine, 3)
    assert store.purge(mine, within=access).erased_revisions == 3
    # The purged tombstone still belongs to the repository it was live in.
    assert [entry.op for entry in store.history(mine, within=access)][-1] == "purge"


def test_a_confined_import_cannot_replace_another_repositorys_lesson_with_its_own_draft(
    scoped: tuple[PostgresStore, AccessScope, dict[str, str]],
) -> None:
    """Every line's draft is within the scope, but one line's id is another repository's stored
    lesson: the import is refused whole, in its transaction, and nothing is written."""
    store, access, ids = scoped
    theirs = ids["theirs"]
    before = (store.generation(), store.get(theirs))
    lines = [
        {**make_draft("Mine").model_dump(mode="json"), "id": new_lesson_id(), "revision": 1},
        {**make_draft("Mine now").model_dump(mode="json"), "id": theirs, "revision": 2},
    ]
    with pytest.raises(ScopeRefused, match=theirs):
        store.import_lines([json.dumps(line) for line in lines], replace=True, within=access)
    assert (store.generation(), store.get(theirs)) == before


def test_a_confined_approval_cannot_publish_over_another_repositorys_lesson(
    scoped: tuple[PostgresStore, AccessScope, dict[str, str]],
) -> None:
    """A held draft within the scope whose id another repository's lesson took meanwhile: the
    approval is refused for that lesson's scope, not answered with its revision, and the entry
    stays held."""
    store, access, ids = scoped
    theirs = ids["theirs"]
    before = (store.generation(), store.get(theirs))
    held = QuarantineEntry(theirs, "run-q", "r", ("weak:signal",), make_draft("Held"), "")
    store.hold([held])
    with pytest.raises(ScopeRefused, match=theirs):
        store.approve_held(theirs, within=access)
    assert (store.generation(), store.get(theirs)) == before
    assert [entry.id for entry in store.held()] == [theirs]


def test_an_unknown_id_is_not_found_within_a_scope(
    scoped: tuple[PostgresStore, AccessScope, dict[str, str]],
) -> None:
    store, access, _ = scoped
    with pytest.raises(LessonNotFound):
        store.history(new_lesson_id(), within=access)


def test_revisions_up_to_the_models_bound_are_stored(pg_database: str, tenant: str) -> None:
    from active_memory.limits import LIMITS

    draft = make_draft()
    line = {**draft.model_dump(mode="json"), "id": new_lesson_id(), "revision": LIMITS.revision_max}
    with PostgresStore(pg_database, tenant=tenant) as store:
        store.import_lines([json.dumps(line)])
        assert store.get(line["id"]).revision == LIMITS.revision_max


def _upsert(store: PostgresStore, lesson_id: str, revision: int, draft: LessonDraft) -> None:
    mutation = Mutation(op="upsert", id=lesson_id, expected_revision=revision, draft=draft)
    store.publish(Publication(run_id="edit", mutations=(mutation,)))


def test_the_counters_stay_exact_when_their_triggers_skip_an_edit_that_changes_nothing_counted(
    pg_database: str, tenant: str
) -> None:
    with PostgresStore(pg_database, tenant=tenant) as store:
        first, second = _create(store, make_draft("One"), make_draft("Two"))
        _upsert(store, first, 1, make_draft("Uno"))  # same scope, same size: no counter moves
        _upsert(store, first, 2, make_draft("Uno, longer"))  # the size moves
        _upsert(store, second, 1, make_draft("Two", repository="repo:other"))  # the scope moves
        _upsert(store, first, 3, make_graph_draft())  # the kind moves
        _retire(store, second, 2)
        check = store.check()
        assert check.ok, check.problems
        assert (check.live, check.tombstones) == (1, 1)
    with psycopg.connect(pg_database) as conn:
        conn.execute(f"SET search_path = {tenant_schema(tenant)}")
        before = conn.execute("SELECT content_bytes FROM meta").fetchone()
        conn.execute("UPDATE records SET revision = revision + 1 WHERE id = %s", (first,))
        # Within this transaction: the edit wrote no counter row (the statistics of a
        # transaction count its own writes at once).
        writes = conn.execute(
            "SELECT relname, n_tup_upd + n_tup_ins FROM pg_stat_xact_user_tables "
            "WHERE schemaname = current_schema() AND relname IN ('meta', 'scope_counts') "
            "ORDER BY relname"
        ).fetchall()
        assert writes == [("meta", 0), ("scope_counts", 0)]
        conn.execute("UPDATE records SET size = size + 1 WHERE id = %s", (first,))
        after = conn.execute("SELECT content_bytes FROM meta").fetchone()
        assert (before[0] + 1,) == after  # a counted column still moves its counter


@pytest.mark.parametrize("kind", ["graph", "repository"])
def test_a_confined_publication_over_an_imported_tombstone_is_refused_for_its_unknown_scope(
    scoped: tuple[PostgresStore, AccessScope, dict[str, str]], kind: str
) -> None:
    """A tombstone imported as one was never live here: its scope is unknown (a graph one
    would pass a repository-less check), so a confined publication naming it is refused for
    its scope, not answered with its revision, whichever op and revision it expects."""
    store, access, _ = scoped
    tombstone = {"id": new_lesson_id(), "revision": 3, "kind": kind, "retired": True}
    store.import_lines([json.dumps(tombstone)])
    generation = store.generation()
    for mutation in (
        Mutation(op="retire", id=tombstone["id"], expected_revision=3),
        Mutation(op="upsert", id=tombstone["id"], expected_revision=3, draft=make_draft()),
        Mutation(op="upsert", id=tombstone["id"], expected_revision=0, draft=make_draft()),
    ):
        with pytest.raises(ScopeRefused, match=str(tombstone["id"])):
            store.publish(Publication(run_id="run", mutations=(mutation,)), within=access)
    assert store.generation() == generation


def test_the_counters_stay_exact_through_revert_purge_and_an_import_that_replaces(
    pg_database: str, tenant: str
) -> None:
    """m004's triggers skip an UPDATE that keeps the counted columns: every other path that
    updates a row in place (revert, purge, an import over a live lesson, in and out of its
    scope and size) must still move the counters and the counts by scope exactly."""
    with PostgresStore(pg_database, tenant=tenant) as store:
        first, second, third = _create(
            store, make_draft("One"), make_draft("Two"), make_graph_draft()
        )
        _upsert(store, first, 1, make_draft("One, and a longer title"))
        assert store.revert(first, 1).revisions == {first: 3}  # back to the shorter card
        _upsert(store, second, 1, make_draft("Two", repository=OTHER))
        assert store.revert(second, 1).revisions == {second: 3}  # back to its first scope
        lines = [
            {**make_draft("Three, now longer").model_dump(mode="json"), "id": third,
             "revision": 2},
            {**make_draft("Two", repository=OTHER).model_dump(mode="json"), "id": second,
             "revision": 4},
        ]  # fmt: skip
        report = store.import_lines([json.dumps(line) for line in lines], replace=True)
        assert set(report.replaced) == {second, third}
        _retire(store, first, 3)
        store.purge(first)
        check = store.check()
        assert check.ok, check.problems
        assert (check.live, check.tombstones) == (2, 1)


def test_a_tenant_with_lessons_written_before_m004_is_upgraded_with_exact_counters(
    pg_database: str, tenant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """m004 replaces the counters' triggers of a tenant that already holds lessons (a service
    restarted on the new version): it applies once, in the ledger after m003, and the counts
    kept before and after it stay equal to a recount."""
    from functools import partial

    from active_memory.store.postgres import store as pg_store
    from active_memory.store.postgres.schema import apply_pending, check_current

    def ledger() -> list[str]:
        with psycopg.connect(pg_database) as conn:
            rows = conn.execute(
                f"SELECT name FROM {tenant_schema(tenant)}.schema_migrations ORDER BY seq"
            ).fetchall()
        return [str(name) for (name,) in rows]

    before_m004 = PG_MIGRATIONS[:3]
    monkeypatch.setattr(pg_store, "apply_pending", partial(apply_pending, known=before_m004))
    monkeypatch.setattr(pg_store, "check_current", partial(check_current, known=before_m004))
    with PostgresStore(pg_database, tenant=tenant) as store:
        first, second = _create(store, make_draft("One"), make_draft("Two"))
        _upsert(store, first, 1, make_draft("Uno"))
        _retire(store, second, 1)
    assert ledger() == [m.name for m in before_m004]
    monkeypatch.undo()
    with PostgresStore(pg_database, tenant=tenant) as store:
        _upsert(store, first, 2, make_draft("Uno"))  # same scope and size: the new trigger
        _upsert(store, first, 3, make_draft("Uno", repository=OTHER))
        _create(store, make_graph_draft())
        check = store.check()
        assert check.ok, check.problems
        assert (check.live, check.tombstones, check.schema_version) == (
            2,
            1,
            "m004_quiet_counters",
        )
    assert ledger() == [m.name for m in PG_MIGRATIONS]
