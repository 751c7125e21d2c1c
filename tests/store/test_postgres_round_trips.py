"""How often a PostgreSQL store waits for its server, counted on the wire.

Each wait is a client message that asks the server to answer and report it ready again: a
``Sync`` (the end of an extended-protocol exchange, or of a pipeline) or a simple ``Query``.
A proxy between the store and the cluster's socket counts them. A transaction's start (its
``BEGIN``, its settings and a write's lock) is one simple query, the writes one pipeline;
under the writers' lock every wait keeps the tenant's other writers queued, so a publication
is held to five: the start, the batch's rows, the ``meta`` row, the writes, the commit.
(Pipelining the reads too would save two more waits, but costs psycopg more CPU than the
waits cost over a local socket.)
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


def test_a_publication_waits_for_the_server_five_times(
    pg_database: str, counter: _WaitCounter
) -> None:
    tenant = f"trips{next(_tenants)}"
    with PostgresStore(counter.url(pg_database), tenant=tenant, pool_size=1) as store:
        lesson_id = new_lesson_id()
        store.publish(_upsert(store, lesson_id, 0))
        control = PublicationControl(hold_s=30.0)  # the service's bound costs no wait either
        waits = _waits_of(counter, lambda: store.publish(_upsert(store, lesson_id, 1), control))
        assert waits == 5
        batch = tuple(
            Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=make_draft())
            for _ in range(120)
        )
        waits = _waits_of(
            counter, lambda: store.publish(Publication(run_id="run", mutations=batch))
        )
        assert waits == 5  # whatever the batch's size
        assert store.get(lesson_id).revision == 2


def test_a_snapshot_waits_for_the_server_four_times(
    pg_database: str, counter: _WaitCounter
) -> None:
    tenant = f"trips{next(_tenants)}"
    with PostgresStore(counter.url(pg_database), tenant=tenant, pool_size=1) as store:
        store.publish(_upsert(store, new_lesson_id(), 0))
        request = SnapshotRequest(RunIdentity("run", REPOSITORY))
        snapshot: list[object] = []
        waits = _waits_of(counter, lambda: snapshot.append(store.snapshot(request)))
        # The start with its settings; the generation; the rows; the end.
        assert waits == 4
        assert len(snapshot[0].lessons) == 1  # type: ignore[attr-defined]


def test_the_proxy_counts_a_plain_statement_as_one_wait(
    pg_database: str, counter: _WaitCounter
) -> None:
    import psycopg

    with psycopg.connect(counter.url(pg_database), autocommit=True) as conn:
        waits = _waits_of(counter, lambda: conn.execute("SELECT 1").fetchone())
    assert waits == 1
    assert Path(counter.folder).is_dir()
