"""How often a PostgreSQL store waits for its server, counted on the wire.

Each wait is a client message that asks the server to answer and report it ready again: a
``Sync`` (the end of an extended-protocol exchange, or of a pipeline) or a simple ``Query``.
A proxy between the store and the cluster's socket counts them. A publication reads the rows
it names and the counters (one simple query, no lock), then sends its start, the writers' lock,
a guard, the writes and the ``COMMIT`` in one pipeline: two waits, neither under the lock
(``store/postgres/at_once.py``). A batch that a limit is within reach of, or of more than 500
lessons, is written the locked way: its start with the lock (and the rows, up to 500) as one
simple query, the writes, and the commit unless no limit is in reach. A snapshot's start reads
the generation: three.
"""

from __future__ import annotations

import glob
import itertools
import os
import socket
import struct
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from active_memory.errors import LessonNotFound, PublicationError, StoreError
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.store.backend import PublicationControl, RunIdentity, SnapshotRequest
from active_memory.store.postgres import PostgresStore
from factories import REPOSITORY, make_draft

_tenants = itertools.count(1)
_WAITS = {ord("S"), ord("Q")}  # Sync, Query


class _WaitCounter:
    """A Unix-socket proxy in front of the cluster's socket counting the client's waits."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.folder = tempfile.mkdtemp(prefix="pg-proxy-")
        self.waits = 0
        self._lock = threading.Lock()
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(os.path.join(self.folder, os.path.basename(target)))
        self._server.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(self.target)
            threading.Thread(target=self._client_side, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            sink.close()

    def _client_side(self, client: socket.socket, upstream: socket.socket) -> None:
        """Forward the client's bytes, reading its message boundaries: the start-up message has
        no type byte, every later one a type byte and a length that counts itself. Counted
        before they are forwarded: counted after, the server's answer could reach the client,
        and the test read the count, before this thread added the last wait."""
        pending = b""
        started = False
        try:
            while data := client.recv(65536):
                pending += data
                while True:
                    head = 4 if not started else 5
                    if len(pending) < head:
                        break
                    length = struct.unpack("!I", pending[head - 4 : head])[0]
                    size = length if not started else 1 + length
                    if len(pending) < size:
                        break
                    if started and pending[0] in _WAITS:
                        with self._lock:
                            self.waits += 1
                    started = True
                    pending = pending[size:]
                upstream.sendall(data)
        except OSError:
            pass
        finally:
            upstream.close()

    def url(self, url: str) -> str:
        return url.replace(f"host={self.host_of(url)}", f"host={self.folder}")

    @staticmethod
    def host_of(url: str) -> str:
        return parse_qs(urlsplit(url).query)["host"][0]

    def counted(self) -> int:
        with self._lock:
            return self.waits

    def close(self) -> None:
        self._server.close()


@pytest.fixture
def counter(pg_database: str) -> Iterator[_WaitCounter]:
    folder = _WaitCounter.host_of(pg_database)
    sockets = glob.glob(os.path.join(folder, ".s.PGSQL.*"))
    (target,) = [path for path in sockets if not path.endswith(".lock")]
    proxy = _WaitCounter(target)
    yield proxy
    proxy.close()


def _waits_of(proxy: _WaitCounter, action: object) -> int:
    before = proxy.counted()
    action()  # type: ignore[operator]
    return proxy.counted() - before


def _upsert(store: PostgresStore, lesson_id: str, expected: int) -> Publication:
    mutation = Mutation(op="upsert", id=lesson_id, expected_revision=expected, draft=make_draft())
    return Publication(run_id="run", mutations=(mutation,))


def test_a_publication_waits_for_the_server_twice(pg_database: str, counter: _WaitCounter) -> None:
    tenant = f"trips{next(_tenants)}"
    with PostgresStore(counter.url(pg_database), tenant=tenant, pool_size=1) as store:
        lesson_id = new_lesson_id()
        store.publish(_upsert(store, lesson_id, 0))
        control = PublicationControl(hold_s=30.0)  # the service's bound costs no wait either
        waits = _waits_of(counter, lambda: store.publish(_upsert(store, lesson_id, 1), control))
        assert waits == 2
        batch = tuple(
            Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=make_draft())
            for _ in range(120)
        )
        waits = _waits_of(
            counter, lambda: store.publish(Publication(run_id="run", mutations=batch))
        )
        assert waits == 2  # whatever the batch's size
        assert store.get(lesson_id).revision == 2
        assert store.get(batch[-1].id).revision == 1


def test_a_publication_confined_to_a_credential_waits_as_often(
    pg_database: str, counter: _WaitCounter
) -> None:
    from active_memory.store.access import AccessScope

    tenant = f"trips{next(_tenants)}"
    within = AccessScope(tenant, REPOSITORY)
    with PostgresStore(counter.url(pg_database), tenant=tenant, pool_size=1) as store:
        lesson_id = new_lesson_id()
        store.publish(_upsert(store, lesson_id, 0))
        # The stored scopes are read with the revisions: no wait more than an unconfined one.
        waits = _waits_of(counter, lambda: store.publish(_upsert(store, lesson_id, 1), None,
                                                         within=within))  # fmt: skip
        assert waits == 2
        assert store.get(lesson_id).revision == 2


def test_a_batch_a_limit_is_within_reach_of_is_checked_before_it_commits(
    pg_database: str, counter: _WaitCounter
) -> None:
    from active_memory.store.results import StoreLimits

    tenant = f"trips{next(_tenants)}"
    url = counter.url(pg_database)
    with PostgresStore(url, tenant=tenant, pool_size=1, limits=StoreLimits(max_live=1)) as store:
        lesson_id = new_lesson_id()
        store.publish(_upsert(store, lesson_id, 0))
        # One write might add a live lesson to the one there, the limit: the counters are read
        # before it commits (it adds none: a new revision).
        waits = _waits_of(counter, lambda: store.publish(_upsert(store, lesson_id, 1)))
        assert waits == 4  # the read; then locked: the start, the writes, the commit
        assert store.get(lesson_id).revision == 2
        one_more = _upsert(store, new_lesson_id(), 0)
        with pytest.raises(PublicationError, match="capacity limit reached"):
            store.publish(one_more)
        assert store.generation() == 2  # the refused batch left nothing
        with pytest.raises(LessonNotFound):
            store.get(one_more.mutations[0].id)


def test_a_batch_of_more_than_500_lessons_reads_its_rows_after_its_start(
    pg_database: str, counter: _WaitCounter
) -> None:
    tenant = f"trips{next(_tenants)}"
    with PostgresStore(counter.url(pg_database), tenant=tenant, pool_size=1) as store:
        batch = tuple(
            Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=make_draft())
            for _ in range(501)
        )
        waits = _waits_of(
            counter, lambda: store.publish(Publication(run_id="run", mutations=batch))
        )
        assert waits == 4  # the start, the rows in two reads of at most 500, the writes
        assert store.get(batch[500].id).revision == 1


def test_a_token_is_checked_in_one_wait(pg_database: str, counter: _WaitCounter) -> None:
    from active_memory.server.credentials import CredentialStore
    from active_memory.store.postgres.session import open_pool

    pool = open_pool(counter.url(pg_database), max_size=1)
    try:
        credentials = CredentialStore(pool)
        token = credentials.create(tenant="trips", repository=REPOSITORY).token
        found: list[object] = []
        waits = _waits_of(counter, lambda: found.append(credentials.authenticate(token)))
        assert waits == 1  # one prepared statement, no transaction around it
        assert found == [credentials.list_credentials("trips")[0]]
        assert credentials.authenticate(token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    finally:
        pool.close()


@pytest.mark.parametrize(
    "ident",
    ["0123456789abcde'", "0123456789ABCDEF", "０１２３４５６７８９abcdef", "٠١٢٣٤٥٦٧٨٩abcdef",
     "0123456789abcd\x00f", "0123456789abcdef\n", "0123456789abcde\\"],
    ids=["quote", "upper", "fullwidth", "arabic", "nul", "newline", "backslash"],
)  # fmt: skip
def test_a_token_whose_id_is_not_16_hex_digits_never_reaches_the_database(
    pg_database: str, counter: _WaitCounter, ident: str
) -> None:
    """Anything but the 16 ASCII hex digits of ``_TOKEN`` as a token's id is refused before
    the database is asked."""
    from active_memory.server.credentials import CredentialStore
    from active_memory.store.postgres.session import open_pool

    pool = open_pool(counter.url(pg_database), max_size=1)
    try:
        credentials = CredentialStore(pool)
        found: list[object] = []
        token = f"amt_{ident}_{'A' * 43}"
        waits = _waits_of(counter, lambda: found.append(credentials.authenticate(token)))
        assert (waits, found) == (0, [None])
    finally:
        pool.close()


def test_a_snapshot_waits_for_the_server_three_times(
    pg_database: str, counter: _WaitCounter
) -> None:
    tenant = f"trips{next(_tenants)}"
    with PostgresStore(counter.url(pg_database), tenant=tenant, pool_size=1) as store:
        store.publish(_upsert(store, new_lesson_id(), 0))
        request = SnapshotRequest(RunIdentity("run", REPOSITORY))
        snapshot: list[object] = []
        waits = _waits_of(counter, lambda: snapshot.append(store.snapshot(request)))
        # The start with its settings and the generation; the rows; the end.
        assert waits == 3
        assert len(snapshot[0].lessons) == 1  # type: ignore[attr-defined]


def test_the_proxy_counts_a_plain_statement_as_one_wait(
    pg_database: str, counter: _WaitCounter
) -> None:
    import psycopg

    with psycopg.connect(counter.url(pg_database), autocommit=True) as conn:
        waits = _waits_of(counter, lambda: conn.execute("SELECT 1").fetchone())
    assert waits == 1
    assert Path(counter.folder).is_dir()


class _Recorder:
    """A stand-in for a psycopg connection: records what is sent, answers one row."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def execute(self, query: bytes, parameters: object = None, prepare: object = None) -> object:
        self.sent.append(query)
        return _Row()


class _Row:
    def fetchone(self) -> tuple[int, ...]:
        return (99, 0, 0, 0)


def test_a_row_read_with_the_start_answers_once_and_only_until_a_write() -> None:
    from active_memory.store.postgres.session import PgSession
    from active_memory.store.writes import GENERATION_ROW, META_ROW

    conn = _Recorder()
    session = PgSession(conn)  # type: ignore[arg-type]
    session.known[META_ROW] = (7, 1, 2, 3)
    assert session.execute("SELECT id FROM records WHERE id IN (?)", ("x",)) is not None
    assert session.execute(META_ROW).fetchone() == (7, 1, 2, 3)  # a SELECT between: kept
    assert session.execute(META_ROW).fetchone() == (99, 0, 0, 0)  # answered once, then sent
    session.known[GENERATION_ROW] = (7,)
    session.execute("UPDATE history SET body = NULL WHERE id = ?", ("x",))
    # Any other statement may have changed the row: the answer is dropped, the read is sent.
    assert session.execute(GENERATION_ROW).fetchone() == (99, 0, 0, 0)
    assert len(conn.sent) == 4


class _Cursor:
    def __init__(self, sent: list[bytes]) -> None:
        self.sent = sent

    def __enter__(self) -> _Cursor:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def executemany(self, query: bytes, rows: object) -> None:
        self.sent.append(query)


def test_a_kept_row_is_dropped_by_a_batch_write_and_answers_no_stopped_write() -> None:
    from active_memory.errors import WriteInterrupted
    from active_memory.store.postgres.session import PgSession
    from active_memory.store.writes import META_ROW

    conn = _Recorder()
    conn.cursor = lambda: _Cursor(conn.sent)  # type: ignore[attr-defined]
    session = PgSession(conn)  # type: ignore[arg-type]
    session.known[META_ROW] = (7, 1, 2, 3)
    # A batch of row writes fires the counters' triggers: the kept row may be stale after it.
    session.executemany("UPDATE records SET size = ? WHERE id = ?", [(1, "x")])
    assert session.execute(META_ROW).fetchone() == (99, 0, 0, 0)
    session.known[META_ROW] = (7, 1, 2, 3)
    session.stopped = WriteInterrupted("writing", "the client went away")
    with pytest.raises(WriteInterrupted):  # stopped: no answer, kept or sent
        session.execute(META_ROW)
    assert len(conn.sent) == 2


def test_a_write_ended_with_its_commit_in_the_pipeline_commits_once_or_not_at_all(
    pg_database: str,
) -> None:
    """``pipeline(last=True)`` sends the ``COMMIT`` with the writes. A failed write leaves the
    transaction to roll back; an error the server reports after the ``COMMIT`` succeeded (a
    cancel arriving late) is no failure: the rows are there. Nothing may follow the commit."""
    from contextlib import contextmanager

    import psycopg

    from active_memory.errors import StoreError
    from active_memory.store.postgres.session import PgSession

    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS ended_in_pipeline (n int)")
        conn.execute("TRUNCATE ended_in_pipeline")
        failing = PgSession(conn)
        conn.execute("BEGIN")

        def fail() -> None:
            with failing.pipeline(last=True):
                failing.execute("INSERT INTO ended_in_pipeline VALUES (?)", (1,))
                failing.execute("INSERT INTO no_such_table VALUES (?)", (1,))

        with pytest.raises(psycopg.Error):
            fail()
        assert not failing.committed
        conn.execute("ROLLBACK")

        real = conn.pipeline

        @contextmanager
        def cancelled_late() -> Iterator[object]:
            with real() as pipeline:
                yield pipeline
            raise psycopg.errors.QueryCanceled("canceling statement due to user request")

        late = PgSession(conn)
        conn.execute("BEGIN")
        conn.pipeline = cancelled_late  # type: ignore[method-assign]
        with late.pipeline(last=True):
            late.execute("INSERT INTO ended_in_pipeline VALUES (?)", (2,))
        conn.pipeline = real  # type: ignore[method-assign]
        assert late.committed
        with pytest.raises(StoreError, match="after its transaction's COMMIT"):
            late.execute("INSERT INTO ended_in_pipeline VALUES (?)", (3,))
        assert conn.execute("SELECT n FROM ended_in_pipeline").fetchall() == [(2,)]
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


@pytest.mark.parametrize(
    "ids",
    [[], ["lesson-01JD6Z4Q8N3V5W7X9Y1Z2A3B4'"], ["lesson-01jd6z4q8n3v5w7x9y1z2a3b4c"],
     ["lesson-01JD6Z4Q8N3V5W7X9Y1Z2A3B4C\\"], ["lesson-01JD6Z4Q8N3V5W7X9Y1Z2A3B4\u0421"]],
    ids=["none", "quote", "lower", "backslash", "cyrillic"],
)  # fmt: skip
def test_a_rows_read_with_the_lock_writes_only_plain_lesson_ids_into_its_text(
    ids: list[str],
) -> None:
    from active_memory.store.postgres.statement_text import rows_query

    assert rows_query("id", ids) is None  # read the usual way, with bound parameters
    many = [new_lesson_id() for _ in range(501)]
    assert rows_query("id", many) is None
    plain = many[:3] + many[:1]
    assert rows_query("id, revision", plain) == (
        f"SELECT id, revision FROM records WHERE id IN ('{many[0]}', '{many[1]}', '{many[2]}')"
    )


@pytest.mark.parametrize("left_by", ["its failure", "a stop"])
def test_a_statement_due_to_be_prepared_in_a_failed_pipeline_runs_again_afterwards(
    pg_database: str, left_by: str
) -> None:
    """psycopg counts a statement prepared as soon as it queues its preparation; when an
    earlier statement of the same pipeline fails, the server skips it. The write's rollback
    must leave the pooled connection able to run that statement again: without it, every
    later run answered "prepared statement … does not exist". So too when the block is left by
    another exception (a write stopped by its control) after the failed statement was queued:
    psycopg then runs what was queued and only logs the failure."""
    from active_memory.errors import WriteInterrupted
    from active_memory.store.postgres.session import open_pool, writing

    pool = open_pool(pg_database, max_size=1)
    tenant = f"trips{next(_tenants)}"
    try:
        store = PostgresStore(pg_database, tenant=tenant, pool=pool)
        store.publish(_upsert(store, new_lesson_id(), 0))
        schema = store._schema
        for _ in range(2):  # rollbacks before, as a conflict's under the lock
            with pytest.raises(KeyError), writing(pool, schema, "refusing"):
                raise KeyError(schema)
        count = "SELECT count(*) FROM records WHERE revision > ?"
        for _ in range(5):  # psycopg's threshold: the next run prepares it
            with writing(pool, schema, "counting") as session:
                session.execute(count, (0,)).fetchone()

        def fail() -> None:
            with writing(pool, schema, "failing") as session, session.pipeline():
                # It fails once the block has queued all it sends (a stop comes first).
                session.execute("SELECT 1 / (SELECT 0 FROM pg_sleep(0.2)) FROM meta")
                session.execute(count, (0,))
                if left_by == "a stop":  # as another thread stops it (``interrupting.py``)
                    session.stopped = WriteInterrupted("failing", "its client went away")
                    session.execute(count, (0,))

        with pytest.raises(StoreError, match=r"division by zero|client went away"):
            fail()
        for _ in range(2):
            with writing(pool, schema, "counting again") as session:
                assert session.execute(count, (0,)).fetchone() == (1,)
    finally:
        pool.close()
