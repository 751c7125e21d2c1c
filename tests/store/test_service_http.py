"""RemoteBackend's exchange with the service at the socket: kept-alive connections the service
closed are not reused, a lost answer leaves a publication's outcome unknown while a refused
connection does not, answers are bounded, no cookie goes back, a request is one write, and a
proxy from the environment is still honoured (through httpx)."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from active_memory.errors import SnapshotError, StoreError
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.store.backend import RunIdentity, SnapshotRequest
from active_memory.store.remote import RemoteBackend
from active_memory.store.service_http import _Plain
from factories import REPOSITORY, make_draft

RECEIPT = b'{"generation":2,"revisions":{},"retired":[]}'
# One answer to a request: the raw bytes to send back (None: close without answering), and
# whether the connection is closed after them.
Answer = Callable[[bytes], tuple[bytes | None, bool]]


def _ok(body: bytes, *headers: str) -> bytes:
    head = "".join(f"{header}\r\n" for header in headers)
    return (
        f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
        f"{head}\r\n"
    ).encode() + body


def _request(conn: socket.socket) -> bytes | None:
    """One request's head and body off ``conn`` (None when the client closed it)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        body += conn.recv(65536)
    return head + b"\r\n\r\n" + body


@contextmanager
def _serving(answer: Answer) -> Iterator[tuple[str, list[bytes], list[int]]]:
    """A loopback HTTP/1.1 server answering each request as ``answer`` says; its URL, the
    requests it read, and the connections it accepted and closed (a two-item list)."""
    listener = socket.create_server(("127.0.0.1", 0))
    seen: list[bytes] = []
    accepted = [0, 0]

    def serve(conn: socket.socket) -> None:
        with conn:
            while (request := _request(conn)) is not None:
                seen.append(request)
                raw, close = answer(request)
                if raw is not None:
                    conn.sendall(raw)
                if raw is None or close:
                    break
        accepted[1] += 1

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted[0] += 1
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", seen, accepted
    finally:
        listener.close()


def _publication() -> Publication:
    mutation = Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=make_draft())
    return Publication(run_id="run-1", mutations=(mutation,))


def test_a_kept_alive_connection_the_service_closed_is_not_reused_for_a_publication() -> None:
    # The service's keep-alive ran out: it closed the connection after answering, without
    # saying so. Sent on it, the next publication would be lost with an unknown outcome.
    with (
        _serving(lambda _: (_ok(RECEIPT), True)) as (url, seen, accepted),
        RemoteBackend(url, token="t0ken", timeout_s=5) as backend,
    ):
        backend.publish(_publication())
        deadline = time.monotonic() + 5
        while accepted[1] == 0 and time.monotonic() < deadline:  # the service closed it
            time.sleep(0.01)
        backend.publish(_publication())
        assert len(seen) == 2
        assert accepted[0] == 2


def _three_publications_over_one_connection() -> None:
    with (
        _serving(lambda _: (_ok(RECEIPT), False)) as (url, seen, accepted),
        RemoteBackend(url, token="t0ken", timeout_s=5) as backend,
    ):
        for _ in range(3):
            backend.publish(_publication())
        assert (len(seen), accepted[0]) == (3, 1)


def test_a_connection_is_kept_alive_between_requests() -> None:
    _three_publications_over_one_connection()


def test_a_publication_whose_answer_is_lost_has_an_unknown_outcome() -> None:
    with (
        _serving(lambda _: (None, True)) as (url, seen, _),
        RemoteBackend(url, token="t0ken", timeout_s=5) as backend,
    ):
        with pytest.raises(StoreError, match="its outcome is unknown"):
            backend.publish(_publication())
        with pytest.raises(SnapshotError, match="cannot be reached"):
            backend.snapshot(SnapshotRequest(RunIdentity("run-1", REPOSITORY)))
        assert len(seen) == 2


def test_a_service_that_is_not_listening_is_unreached_and_nothing_is_unknown() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
    with RemoteBackend(f"http://127.0.0.1:{port}", token="t0ken", timeout_s=5) as backend:
        with pytest.raises(StoreError, match="cannot be reached") as refused:
            backend.publish(_publication())
        assert "unknown" not in str(refused.value)


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_an_answer_over_the_bound_is_refused_and_the_next_call_works(chunked: bool) -> None:
    big = b'{"generation":2,"revisions":{},"retired":[]' + b" " * 200 + b"}"

    def answer(request: bytes) -> tuple[bytes | None, bool]:
        if b"/generation" in request:
            return _ok(b'{"generation":3}'), False
        if not chunked:
            return _ok(big), False
        head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
        return head + b"transfer-encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (
            len(big),
            big,
        ), False

    with (
        _serving(answer) as (url, _, _),
        RemoteBackend(url, token="t0ken", timeout_s=5, max_response_bytes=100) as backend,
    ):
        with pytest.raises(StoreError, match="sent more than 100 bytes"):
            backend.publish(_publication())
        assert backend.generation() == 3


def test_no_cookie_goes_back_and_the_path_under_the_url_is_kept() -> None:
    answer = _ok(b'{"generation":3}', "set-cookie: session=abc; Path=/")
    with (
        _serving(lambda _: (answer, False)) as (url, seen, _),
        RemoteBackend(url + "/memory/", token="t0ken", timeout_s=5) as backend,
    ):
        backend.generation()
        backend.generation()
    assert all(request.startswith(b"GET /memory/v1/generation HTTP/1.1\r\n") for request in seen)
    assert all(b"cookie" not in request.lower().replace(b"set-cookie", b"") for request in seen)
    assert all(b"authorization: Bearer t0ken\r\n" in request for request in seen)


class _Recorded:
    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def sendall(self, data: bytes) -> None:
        self.writes.append(bytes(data))


def test_a_request_with_a_body_is_one_write_with_its_head() -> None:
    connection = _Plain("127.0.0.1", 1)
    recorded = _Recorded()
    connection.sock = recorded
    connection.body_follows = True
    connection.request("POST", "/v1/publish", body=b'{"a":1}', headers={"x": "y"})
    ((write,),) = [recorded.writes]
    assert write.startswith(b"POST /v1/publish HTTP/1.1\r\n")
    assert write.endswith(b'\r\n\r\n{"a":1}')
    connection.sock = None


def test_a_proxy_the_environment_names_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    with _serving(lambda _: (_ok(b'{"generation":4}'), False)) as (proxy, seen, _):
        monkeypatch.setenv("HTTP_PROXY", proxy)
        monkeypatch.delenv("http_proxy", raising=False)
        with RemoteBackend("http://127.0.0.1:9", token="t0ken", timeout_s=5) as backend:
            assert backend.generation() == 4
    assert seen[0].startswith(b"GET http://127.0.0.1:9/v1/generation HTTP/1.1\r\n")


def test_a_closed_backend_opens_no_new_connection() -> None:
    with _serving(lambda _: (_ok(b'{"generation":3}'), False)) as (url, seen, accepted):
        backend = RemoteBackend(url, token="t0ken", timeout_s=5)
        backend.generation()
        backend.close()
        with pytest.raises(RuntimeError, match="closed"):
            backend.generation()
    assert (len(seen), accepted[0]) == (1, 1)


def test_a_connection_is_kept_alive_in_a_process_holding_over_a_thousand_files() -> None:
    # select() takes no descriptor past 1023: a host with many files open (an editor, a build)
    # would open a new connection, and a TLS handshake, for every request.
    resource = pytest.importorskip("resource")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip("this process may not open 1200 files")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200) if soft != -1 else soft, hard))
    held = []
    try:
        with open("/dev/null") as null:
            while (fd := os.dup(null.fileno())) < 1100:
                held.append(fd)
            held.append(fd)
        _three_publications_over_one_connection()
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_backend_closed_while_a_request_runs_keeps_no_connection_after_it() -> None:
    closed = threading.Event()

    def answer(_: bytes) -> tuple[bytes | None, bool]:
        closed.wait(5)  # the backend is closed while this request waits for its answer
        return _ok(RECEIPT), False

    with _serving(answer) as (url, seen, accepted):
        backend = RemoteBackend(url, token="t0ken", timeout_s=5)
        publishing = threading.Thread(target=backend.publish, args=(_publication(),))
        publishing.start()
        deadline = time.monotonic() + 5
        while not seen and time.monotonic() < deadline:
            time.sleep(0.01)
        backend.close()
        closed.set()
        publishing.join(5)
        while accepted[1] == 0 and time.monotonic() < deadline + 5:  # the client let it go
            time.sleep(0.01)
        assert (len(seen), accepted) == (1, [1, 1])
