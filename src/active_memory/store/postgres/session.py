"""Connections and transactions of the PostgreSQL store.

A :class:`psycopg_pool.ConnectionPool` hands out autocommit connections; every operation runs
in one explicit transaction whose ``search_path`` is the tenant's schema, set with its timeouts
for that transaction only (``set_config(…, true)``, as ``SET LOCAL``), so a pooled connection
carries nothing from one tenant to the next. A statement run often is prepared on the server
(psycopg's ``prepare_threshold``): its names resolve in the schema of the transaction that runs
it, since PostgreSQL parses a prepared statement again whenever ``search_path`` has changed
since its last use, so the plan made for one tenant's tables never reads another's.

* reads are ``REPEATABLE READ READ ONLY``: every statement sees one committed state;
* writes are ``READ COMMITTED`` and start by locking the tenant's ``meta`` row (``SELECT …
  FOR UPDATE``), which every write updates anyway (the generation): writers of one tenant
  queue on that row lock, and each statement after it sees everything committed before, so
  expected revisions are compared and written with nothing in between. Writers of different
  tenants never wait for each other. The wait is bounded by ``lock_timeout``, every statement
  by ``statement_timeout`` (60 s), so a started write drains or fails within a bounded time.
  A write under a :class:`PublicationControl` is also stopped (``WriteInterrupted``) once it
  has held the lock for ``control.hold_s`` (one sent whole with its lock, :func:`writing_at_once`,
  once it has waited for and held it that long), or when ``control.abort()`` is called while it
  waits for or holds the lock: the running statement is cancelled on the server, no further
  statement is sent, and the transaction rolls back, releasing the lock.

:class:`PgSession` gives the shared store logic (``?`` placeholders, rows as tuples) a
psycopg connection.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import lru_cache
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool, PoolTimeout

from active_memory.errors import (
    ConfigError,
    PublicationFenced,
    StoreError,
    StoreUnavailable,
    WriteInterrupted,
)
from active_memory.store.backend import PublicationControl
from active_memory.store.postgres.interrupting import interruptible
from active_memory.store.postgres.statement_text import locking, opening
from active_memory.store.sql import SqlCursor
from active_memory.store.writes import GENERATION_ROW, META_ROW

__all__ = [
    "PREPARED_SETTING",
    "PgSession",
    "RowsMoved",
    "open_pool",
    "read_all_once",
    "reading",
    "redacted",
    "updating",
    "writing",
    "writing_at_once",
]


def redacted(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "the configured PostgreSQL URL"
    host = info.get("host") or "localhost"
    return f"postgresql database {info.get('dbname') or '?'!r} on {host!r}"


def open_pool(url: str, *, max_size: int = 8, timeout_s: float = 10.0) -> ConnectionPool:
    """An open pool whose first connection succeeded; StoreUnavailable otherwise.

    One plain connection is tried first, so an unreachable server or a refused user fails at
    once with PostgreSQL's own reason instead of after the pool's retries.
    """
    try:
        psycopg.connect(url, connect_timeout=max(1, int(timeout_s))).close()
    except psycopg.Error as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise StoreUnavailable(
            redacted(url),
            f"cannot be reached ({reason}); check the URL and that the server accepts this user",
        ) from None
    pool: ConnectionPool = ConnectionPool(
        url,
        min_size=1,
        max_size=max_size,
        timeout=timeout_s,
        kwargs={"autocommit": True, "prepare_threshold": _prepare_threshold()},
        open=False,
        name="active-memory",
    )
    try:
        pool.open(wait=True, timeout=timeout_s)
    except (PoolTimeout, psycopg.Error) as error:
        pool.close()
        raise StoreUnavailable(
            redacted(url),
            f"cannot be reached within {timeout_s:g} s ({error}); check the URL and that the "
            "server accepts this user",
        ) from None
    return pool


PREPARED_SETTING = "ACTIVE_MEMORY_PG_PREPARED"


def _prepare_threshold() -> int | None:
    """psycopg's default, said here: a statement is prepared on its fifth run, so the writer's
    and the snapshot's few texts skip parsing and planning (about a third of the server's time
    a publication), and a one-off text never fills the cache. ``ACTIVE_MEMORY_PG_PREPARED=off``
    prepares none, for a connection pooler that cannot keep them (a PgBouncer in transaction
    mode before 1.21, or without ``max_prepared_statements``)."""
    value = os.environ.get(PREPARED_SETTING, "on").strip().lower()
    if value not in ("on", "off"):
        raise ConfigError(PREPARED_SETTING, f"must be on or off, not {value[:20]!r}")
    return 5 if value == "on" else None


class PgSession:
    """A psycopg connection with the ``execute`` the shared store logic calls.

    ``known`` maps a query to the row the transaction's start already read for it (the
    writers' lock is ``META_ROW … FOR UPDATE``; a snapshot's start reads ``GENERATION_ROW``):
    the first such query is answered from it, not sent, as long as only SELECTs ran in between
    (any other statement might have changed the row: every answer is then dropped).
    """

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        self.stopped: WriteInterrupted | None = None  # set by another thread: send no more
        self.known: dict[str, tuple[object, ...]] = {}
        self.ahead_rows: list[tuple[Any, ...]] = []  # the rows of the opening's ``then``
        self.committed = False  # by a ``pipeline(last=True)``: the transaction has ended
        self.pipeline_failed = False  # a statement in a pipeline failed (see ``_rollback``)

    @contextmanager
    def pipeline(self, *, last: bool = False) -> Iterator[None]:
        """Statements sent inside go out without waiting for each other's results; with
        ``last``, the ``COMMIT`` goes out with them (after an error in any of them the server
        skips it, and the transaction rolls back as any failed one does)."""
        committing = None
        first: psycopg.Error | None = None  # a failure psycopg read while the block sent
        try:
            with self.conn.pipeline():
                try:
                    yield
                    if last:
                        self._may_send()
                        committing = self.conn.execute(b"COMMIT", prepare=False)
                except psycopg.Error as error:
                    # Kept, not raised through the pipeline's end, which reports it once more
                    # (as the statements after it, aborted) and would log the second report.
                    first = error
        except psycopg.Error as error:
            # The server runs the COMMIT only once every statement before it succeeded; a
            # cancel (``interrupting.py``) that reaches it just after it committed must not
            # report the batch as not written.
            if committing is None or committing.statusmessage != "COMMIT":
                self.pipeline_failed = True
                raise (first or error) from None
        except BaseException:
            # Left by another exception (a stop, ``WriteInterrupted``): psycopg still ran what
            # was queued and only logged a failure there, so the rollback is a failed one's.
            self.pipeline_failed = True
            raise
        if first is not None:
            self.pipeline_failed = True
            raise first
        self.committed = last

    def _may_send(self) -> None:
        """Raise rather than send once the write was stopped or its transaction committed."""
        if self.stopped is not None:
            raise self.stopped
        if self.committed:
            raise StoreError("a statement came after its transaction's COMMIT; nothing was sent")

    def execute(self, query: str, parameters: Sequence[Any] | None = None, /) -> SqlCursor:
        self._may_send()
        if self.known:
            row = self.known.pop(query, None)
            if row is not None:
                return _Answered(row)
            if not query.startswith("SELECT "):
                self.known.clear()
        if parameters is None:
            return self.conn.execute(query.encode("utf-8"), prepare=False)
        return self.conn.execute(_translated(query), parameters)

    def executemany(self, query: str, parameters: Iterable[Sequence[Any]], /) -> object:
        """``query`` once per parameter row, through one cursor (in a pipeline, sent without
        waiting for each row's result)."""
        self._may_send()
        self.known.clear()
        with self.conn.cursor() as cursor:
            cursor.executemany(_translated(query), parameters)
        return None


class _Answered:
    """The cursor of a read answered without the server: one row."""

    rowcount = 1

    def __init__(self, row: tuple[object, ...]) -> None:
        self._rows = [row]

    def fetchone(self) -> tuple[object, ...] | None:
        return self._rows.pop(0) if self._rows else None

    def fetchall(self) -> list[tuple[object, ...]]:
        rows, self._rows = self._rows, []
        return rows

    def __iter__(self) -> Iterator[tuple[object, ...]]:
        return iter(self.fetchall())


@lru_cache(maxsize=256)
def _translated(query: str) -> bytes:
    """``query`` with psycopg's placeholders: the writer sends the same few texts again and
    again (the history's and the search text's INSERTs vary only in their row count)."""
    return query.replace("%", "%%").replace("?", "%s").encode("utf-8")


def _fence(control: PublicationControl | None) -> None:
    refusal = None if control is None else control.refusal()
    if refusal is not None:
        raise PublicationFenced(f"publication not started: {refusal}; nothing was written")


def _rollback(conn: psycopg.Connection[Any], session: PgSession | None = None) -> None:
    if conn.closed:
        return
    # A broken connection cannot roll back; the pool discards it and the server rolled back.
    with suppress(psycopg.Error):
        if session is not None and session.pipeline_failed:
            # psycopg counts a statement prepared once it queues its preparation in a pipeline,
            # which an earlier failure makes the server skip: its rollback() forgets them all,
            # on both sides (DEALLOCATE ALL), so no later run names one never made.
            conn.rollback()
        else:
            conn.execute(b"ROLLBACK", prepare=False)


@contextmanager
def _transaction(
    pool: ConnectionPool,
    schema: str,
    begin: str,
    where: str,
    failure: type[StoreError],
    lock_timeout_ms: int | None = None,
    *,
    ahead: str | None = None,
    locks: bool = False,
    control: PublicationControl | None = None,
    then: str | None = None,
) -> Iterator[PgSession]:
    """One transaction on a pooled connection. Its ``BEGIN``, the settings (the schema and the
    timeouts, each for this transaction only), ``ahead``, a read of the ``meta`` row (a
    write's is its writers' lock: ``locks``), and ``then``, a read whose rows the caller takes
    from ``PgSession.ahead_rows`` (see :func:`.statement_text.rows_query`), go out as one
    simple query: one round trip where each was one. ``ahead``'s row is kept to answer that read
    (``PgSession.known``). ``control`` may stop the transaction from the moment the lock is
    asked for until the caller's block ends (``interrupting.interruptible``)."""
    started = opening(begin, schema, lock_timeout_ms, ahead, locks)
    if then is not None:
        started += b"; " + then.encode()
    with _failures(where, failure), pool.connection() as conn:
        session = PgSession(conn)
        try:
            with interruptible(session, control, where) as held:
                opened = conn.execute(started, prepare=False)
                if ahead is not None:
                    opened.nextset()  # past the BEGIN
                    opened.nextset()  # past the settings
                    row = opened.fetchone()
                    if row is not None:  # the meta row is always there; if not, ask again
                        session.known[ahead] = row
                if then is not None:
                    while opened.nextset():  # its rows come last
                        pass
                    session.ahead_rows = opened.fetchall()
                if locks:
                    _fence(control)
                    held("held")
                yield session
            if not session.committed:
                conn.execute(b"COMMIT", prepare=False)
        except BaseException:
            _rollback(conn, session)
            raise


@contextmanager
def _failures(where: str, failure: type[StoreError]) -> Iterator[None]:
    """psycopg's and the pool's errors as the store's, each in one sentence."""
    try:
        yield
    except PoolTimeout as error:
        raise failure(
            f"{where}: no database connection became free in time ({error}); retry"
        ) from None
    except pg_errors.LockNotAvailable as error:
        raise StoreError(
            f"{where}: the tenant stayed locked by another writer past the lock timeout "
            f"({error}); nothing was written, retry"
        ) from None
    except psycopg.Error as error:
        raise failure(f"{where} failed ({error}); nothing was committed") from None


_READ = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"


def read_all_once(
    pool: ConnectionPool, schema: str, where: str, queries: Sequence[str]
) -> list[list[Any]]:
    """The rows of each of ``queries``, reads whose texts carry their values themselves, each
    validated to a plain pattern (no quote, no backslash: :mod:`.statement_text`): sent with
    the transaction's start and its end as one simple query, in one transaction (each sees the
    same state) and one round trip, where a :func:`reading` transaction takes three."""
    statements = (opening(_READ, schema, None, None, False), *(q.encode() for q in queries))
    with _failures(where, StoreError), pool.connection() as conn:
        try:
            cursor = conn.execute(b"; ".join((*statements, b"COMMIT")), prepare=False)
            cursor.nextset()  # past the BEGIN
            found = []
            for _ in queries:
                cursor.nextset()  # past the settings, then each query before
                found.append(cursor.fetchall())
            return found
        except BaseException:
            _rollback(conn)
            raise


@contextmanager
def reading(
    pool: ConnectionPool,
    schema: str,
    where: str,
    failure: type[StoreError] = StoreError,
    *,
    generation: bool = False,
) -> Iterator[PgSession]:
    """One read transaction; with ``generation``, its start reads the generation too (the
    start's first SELECT takes the snapshot, so that read sees what every later one sees)."""
    ahead = GENERATION_ROW if generation else None
    with _transaction(pool, schema, _READ, where, failure, ahead=ahead) as session:
        yield session


@contextmanager
def updating(pool: ConnectionPool, schema: str, where: str) -> Iterator[PgSession]:
    """One read-write transaction without the tenant's writer lock (the service's own tables)."""
    with _transaction(pool, schema, "BEGIN", where, StoreError) as session:
        yield session


@contextmanager
def writing(
    pool: ConnectionPool,
    schema: str,
    where: str,
    control: PublicationControl | None = None,
    *,
    lock_timeout_ms: int = 5000,
    then: str | None = None,
) -> Iterator[PgSession]:
    """One write transaction holding the tenant's writer lock; ``control`` is consulted before
    the lock is awaited and again once it is held, the last moment before the first write.
    ``then`` is read with the lock, in the same round trip (``PgSession.ahead_rows``)."""
    _fence(control)
    with _transaction(
        pool,
        schema,
        "BEGIN",
        where,
        StoreError,
        lock_timeout_ms,
        ahead=META_ROW,
        locks=True,
        control=control,
        then=then,
    ) as session:
        yield session


class RowsMoved(Exception):
    """A write sent at once found the rows it was planned over changed (or a limit within
    reach) once it held the lock, and rolled back having written nothing."""


@contextmanager
def writing_at_once(
    pool: ConnectionPool,
    schema: str,
    where: str,
    control: PublicationControl | None = None,
    *,
    lock_timeout_ms: int = 5000,
) -> Iterator[PgSession]:
    """One write transaction sent whole, ``COMMIT`` included, in one pipeline: its start and
    the writers' lock are queued before the caller's block, whose statements go out with them.
    The lock is then held only while the server runs the batch, with no wait for this client
    in between. The block's first statement must be its guard: a statement that divides by
    zero when the rows read before the lock have changed, which rolls everything back and
    raises :class:`RowsMoved` (the caller then writes the locked way, :func:`writing`).
    ``control`` as for :func:`writing`; its hold bound counts from the send, the wait for the
    lock included (a stop says so)."""
    _fence(control)
    with _failures(where, StoreError), pool.connection() as conn:
        session = PgSession(conn)
        try:
            with interruptible(session, control, where) as held:
                held("waited for and held")  # the lock is asked for in the pipeline
                try:
                    with session.pipeline(last=True):
                        conn.execute(b"BEGIN", prepare=False)
                        conn.execute(locking(schema, lock_timeout_ms))
                        yield session
                except pg_errors.DivisionByZero:
                    raise RowsMoved(where) from None
        except BaseException:
            _rollback(conn, session)
            raise
