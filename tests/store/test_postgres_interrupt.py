"""A PostgreSQL write under a PublicationControl: stopped once it has held the writers' lock for
``hold_s``, or by ``abort()`` from another thread, and rolled back either way; without either,
it runs to the end as before."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator

import psycopg
import pytest

from active_memory.errors import PublicationFenced, WriteInterrupted
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.store.backend import PublicationControl
from active_memory.store.postgres import PostgresStore
from active_memory.store.postgres.schema import tenant_schema
from factories import make_draft

_tenants = itertools.count(1)


@pytest.fixture
def slow_store(pg_database: str) -> Iterator[PostgresStore]:
    """A tenant whose every new row sleeps a second before it is written."""
    tenant = f"slow{next(_tenants)}"
    with PostgresStore(pg_database, tenant=tenant, pool_size=2) as store:
        schema = tenant_schema(tenant)
        with psycopg.connect(pg_database, autocommit=True) as conn:
            conn.execute(
                f'CREATE FUNCTION "{schema}".slow() RETURNS trigger LANGUAGE plpgsql AS '
                "$$ BEGIN PERFORM pg_sleep(1); RETURN NEW; END $$"
            )
            conn.execute(
                f'CREATE TRIGGER slow BEFORE INSERT ON "{schema}".records '
                f'FOR EACH ROW EXECUTE FUNCTION "{schema}".slow()'
            )
        yield store


def _creation(count: int = 1) -> Publication:
    mutations = tuple(
        Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=make_draft())
        for _ in range(count)
    )
    return Publication(run_id="run", mutations=mutations)


def test_a_write_past_its_hold_bound_is_stopped_and_rolled_back(
    slow_store: PostgresStore,
) -> None:
    started = time.monotonic()
    with pytest.raises(WriteInterrupted, match=r"held the writers' lock for 0\.3 s") as stopped:
        slow_store.publish(_creation(5), PublicationControl(screened_by="admission", hold_s=0.3))
    assert time.monotonic() - started < 1.5  # five rows would take five seconds
    assert "nothing was committed" in str(stopped.value)
    assert slow_store.generation() == 0
    assert slow_store.list_lessons() == ()


def test_an_abort_from_another_thread_stops_the_write(slow_store: PostgresStore) -> None:
    control = PublicationControl(screened_by="admission")
    threading.Timer(0.3, control.abort, ("the client went away",)).start()
    with pytest.raises(WriteInterrupted, match="the client went away"):
        slow_store.publish(_creation(5), control)
    assert slow_store.generation() == 0


def test_a_write_within_its_bound_commits(slow_store: PostgresStore) -> None:
    control = PublicationControl(screened_by="admission", hold_s=10.0)
    receipt = slow_store.publish(_creation(1), control)
    assert receipt.generation == 1


def test_an_abort_before_the_write_refuses_it_without_starting(
    slow_store: PostgresStore,
) -> None:
    control = PublicationControl(screened_by="admission")
    control.abort("the client went away")
    with pytest.raises(PublicationFenced, match="publication not started: cancelled"):
        slow_store.publish(_creation(1), control)
    assert slow_store.generation() == 0


def test_a_write_stopped_while_it_waits_for_the_lock_says_so(
    slow_store: PostgresStore, pg_database: str
) -> None:
    """A publication sent whole asks for the lock with its writes, so its bound counts from
    the send: stopped while another writer holds the lock, it says it waited, not that it held
    the lock (it never did)."""
    schema = tenant_schema(slow_store.tenant)
    with psycopg.connect(pg_database, autocommit=True) as other:
        other.execute("BEGIN")
        other.execute(f'SELECT generation FROM "{schema}".meta FOR UPDATE')
        control = PublicationControl(screened_by="admission", hold_s=0.3)
        with pytest.raises(WriteInterrupted) as stopped:
            slow_store.publish(_creation(1), control)
        other.execute("ROLLBACK")
    assert "waited for and held the writers' lock for 0.3 s" in str(stopped.value)
    assert "nothing was committed" in str(stopped.value)
    assert slow_store.generation() == 0


def test_a_deadline_that_passes_while_the_write_waits_for_the_lock_fences_it(
    pg_database: str,
) -> None:
    """The deadline is checked again once the writers' lock is held, immediately before the
    first write, even when the publication was sent whole with its lock (``at_once.py``)."""
    tenant = f"late{next(_tenants)}"
    with PostgresStore(pg_database, tenant=tenant) as store:
        schema = tenant_schema(tenant)
        with psycopg.connect(pg_database, autocommit=True) as other:
            other.execute("BEGIN")
            other.execute(f'SELECT generation FROM "{schema}".meta FOR UPDATE')
            release = threading.Timer(0.6, other.execute, ("ROLLBACK",))
            release.start()
            control = PublicationControl(screened_by="admission", deadline=time.monotonic() + 0.3)
            try:
                with pytest.raises(PublicationFenced, match="deadline passed"):
                    store.publish(_creation(1), control)
            finally:
                release.join()
        assert store.generation() == 0
        assert store.list_lessons() == ()


def test_a_publication_past_its_deadline_is_fenced_before_its_revisions_are_compared(
    pg_database: str,
) -> None:
    """As on SQLite and as the locked way does: a fenced publication is reported fenced, not
    as the conflict it would also have been."""
    with PostgresStore(pg_database, tenant=f"late{next(_tenants)}") as store:
        stale = Mutation(op="upsert", id=new_lesson_id(), expected_revision=3, draft=make_draft())
        control = PublicationControl(screened_by="admission", deadline=time.monotonic() - 1)
        with pytest.raises(PublicationFenced, match="deadline passed"):
            store.publish(Publication(run_id="run", mutations=(stale,)), control)
        assert store.generation() == 0


def test_an_abort_that_comes_as_the_write_ends_cancels_nothing_on_its_connection() -> None:
    # abort() reads the write's interrupt, then calls it: between the two the write may end and
    # its connection go back to the pool, where the cancel would stop another request's
    # statement (another tenant's). Once the write's block has ended, its interrupt is spent.
    from active_memory.store.postgres.interrupting import interruptible

    class Connection:
        cancels = 0

        def cancel_safe(self, timeout: float) -> None:
            self.cancels += 1

    class Session:
        def __init__(self) -> None:
            self.conn = Connection()
            self.stopped: WriteInterrupted | None = None

    session, control = Session(), PublicationControl()
    with interruptible(session, control, "a write") as held:  # type: ignore[arg-type]
        read_by_abort = control._interrupt
        held("held")
    assert read_by_abort is not None
    read_by_abort("the client went away")  # as abort() would, having read it in time
    assert (session.conn.cancels, session.stopped) == (0, None)
