"""What the PostgreSQL store's publications rest on since they are sent whole
(``store/postgres/at_once.py``): the guard that sends a batch whose rows or counters moved
before the lock to the locked way, and statements prepared on pooled connections that serve
every tenant."""

from __future__ import annotations

import time

import pytest
from test_postgres import _create, _upsert

from active_memory.errors import ConfigError, PublicationError, RevisionConflict
from active_memory.models.changes import Mutation, Publication
from active_memory.store.backend import RunIdentity, SnapshotRequest
from active_memory.store.postgres import PostgresStore
from active_memory.store.postgres.session import open_pool
from factories import REPOSITORY, make_draft

_tenants = iter(range(1, 10_000))


@pytest.fixture
def tenant() -> str:
    return f"once{next(_tenants)}_{int(time.time() * 1000) % 100_000}"


def test_statements_prepared_on_a_shared_connection_read_each_tenants_own_tables(
    pg_database: str, tenant: str
) -> None:
    """Two tenants take turns on one pooled connection, as in the service, past the count at
    which psycopg prepares a statement on the server: each still reads and writes only its own
    schema's tables (PostgreSQL parses a prepared statement again when ``search_path`` has
    changed), and the statements were prepared."""
    pool = open_pool(pg_database, max_size=1)
    try:
        stores = {name: PostgresStore(pg_database, tenant=f"{tenant}{name}", pool=pool)
                  for name in ("a", "b")}  # fmt: skip
        ids = {name: _create(store, make_draft(f"Lesson of {name}"))[0]
               for name, store in stores.items()}  # fmt: skip
        request = SnapshotRequest(RunIdentity("run", REPOSITORY))
        for turn in range(1, 9):
            for name, store in stores.items():
                draft = make_draft(f"Lesson of {name}, turn {turn}")
                _upsert(store, ids[name], turn, draft)
                (lesson,) = store.snapshot(request).lessons
                assert (lesson.id, lesson.revision, lesson.title) == (
                    ids[name],
                    turn + 1,
                    draft.title,
                )
        assert [store.generation() for store in stores.values()] == [9, 9]
        with pool.connection() as conn:
            prepared = conn.execute("SELECT count(*) FROM pg_prepared_statements").fetchall()
    finally:
        pool.close()
    assert prepared[0][0] > 0


def test_the_guard_runs_on_one_plan_made_once(pg_database: str, tenant: str) -> None:
    """PostgreSQL would plan the guard anew on every publication (it prefers a plan made for
    each run's arrays), a third of the server's work a publication: the guard's prepared
    statement runs on its generic plan alone."""
    pool = open_pool(pg_database, max_size=1)
    try:
        store = PostgresStore(pg_database, tenant=tenant, pool=pool)
        (lesson_id,) = _create(store, make_draft("A lesson"))
        for turn in range(1, 13):
            _upsert(store, lesson_id, turn, make_draft(f"A lesson, turn {turn}"))
        with pool.connection() as conn:
            plans = conn.execute(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements "
                "WHERE statement LIKE 'UPDATE meta SET generation = generation + 1 WHERE %'"
            ).fetchall()
    finally:
        pool.close()
    assert len(plans) == 1
    generic, custom = plans[0]
    assert (custom, generic > 0) == (0, True)


def _meanwhile(monkeypatch: pytest.MonkeyPatch, write: object) -> None:
    """Run ``write`` once between a publication's read of its rows and its locked writes."""
    from active_memory.store.postgres import at_once

    real = at_once.plan_writes
    pending = [write]

    def planned(*args: object, **kwargs: object) -> object:
        if pending:
            pending.pop()()  # type: ignore[operator]
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(at_once, "plan_writes", planned)


def test_a_batch_whose_row_moved_on_before_the_lock_is_checked_again_under_it(
    pg_database: str, tenant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        PostgresStore(pg_database, tenant=tenant) as store,
        PostgresStore(pg_database, tenant=tenant) as other,
    ):
        (lesson_id,) = _create(store, make_draft("First"))
        _meanwhile(monkeypatch, lambda: _upsert(other, lesson_id, 1, make_draft("Theirs")))
        mine = Mutation(op="upsert", id=lesson_id, expected_revision=1, draft=make_draft("Mine"))
        with pytest.raises(RevisionConflict) as raised:
            store.publish(Publication(run_id="mine", mutations=(mine,)))
        assert [(m.id, m.expected, m.found) for m in raised.value.mismatches] == [(lesson_id, 1, 2)]
        assert [entry.run_id for entry in store.history(lesson_id)] == ["seed", "edit"]
        assert store.get(lesson_id).title == "Theirs"
        assert store.generation() == 2
        assert store.check().ok


def test_a_batch_a_limit_came_within_reach_of_before_the_lock_is_counted_under_it(
    pg_database: str, tenant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from active_memory.store.results import StoreLimits

    two = StoreLimits(max_live=2)
    with (
        PostgresStore(pg_database, tenant=tenant, limits=two) as store,
        PostgresStore(pg_database, tenant=tenant, limits=two) as other,
    ):
        _create(store, make_draft("First"))
        # Read with one live lesson, one creation can leave two, the limit; another lesson is
        # created before the lock, so the guard's bound fails and the locked way counts three.
        _meanwhile(monkeypatch, lambda: _create(other, make_draft("Second")))
        with pytest.raises(PublicationError, match="capacity limit reached"):
            _create(store, make_draft("Third"))
        assert len(store.list_lessons()) == 2
        assert store.generation() == 2
        assert store.check().ok


@pytest.mark.parametrize("setting", ["off", " OFF "])
def test_prepared_statements_can_be_turned_off_for_a_pooler_that_cannot_keep_them(
    pg_database: str, tenant: str, monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    monkeypatch.setenv("ACTIVE_MEMORY_PG_PREPARED", setting)
    pool = open_pool(pg_database, max_size=1)
    try:
        store = PostgresStore(pg_database, tenant=tenant, pool=pool)
        (lesson_id,) = _create(store, make_draft("One"))
        for revision in range(1, 9):
            _upsert(store, lesson_id, revision, make_draft(f"Edit {revision}"))
        assert store.get(lesson_id).revision == 9
        with pool.connection() as conn:
            prepared = conn.execute("SELECT count(*) FROM pg_prepared_statements").fetchall()
    finally:
        pool.close()
    assert prepared == [(0,)]


def test_a_prepared_setting_that_is_neither_on_nor_off_is_refused_in_one_sentence(
    pg_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACTIVE_MEMORY_PG_PREPARED", "sometimes")
    with pytest.raises(ConfigError, match="ACTIVE_MEMORY_PG_PREPARED: must be on or off"):
        open_pool(pg_database, max_size=1)
