"""Service abuse: bad credentials, oversized bodies, slow clients; legitimate calls go on.

The service under test refuses requests that take more than 1.5 s to arrive and bodies over
256 KiB (``conftest.TEST_LIMITS``). Latencies of the legitimate calls made during the abuse are
printed (``-s``), never asserted: ``benchmarks/team_bench.py`` reports them.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest

from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.server import IssuedToken, RunningService
from active_memory.server.credentials import SERVICE_SCHEMA
from active_memory.store.backend import RunIdentity, SnapshotRequest
from active_memory.store.remote import RemoteBackend
from factories import REPOSITORY, make_draft

Issue = Callable[..., IssuedToken]
SNAPSHOT = b'{"run_id":"run"}'


@pytest.fixture
def running(shared_running: RunningService) -> RunningService:
    """One service for the module: every test issues its own tokens in its own tenant (rates are
    counted per token), ends or closes its slow and flooding clients before it returns, and the
    test that needs other connection limits starts a service of its own."""
    return shared_running


def _post(running: RunningService, token: str | None, body: bytes = SNAPSHOT) -> httpx.Response:
    headers = {"content-type": "application/json"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    return httpx.post(f"{running.url}/v1/snapshot", content=body, headers=headers)


def _refused(answer: httpx.Response, status: int, code: str) -> str:
    assert answer.status_code == status
    data = answer.json()
    assert data["error"] == code
    message = str(data["message"])
    assert "\n" not in message
    return message


def test_a_request_without_a_credential_is_told_how_to_send_one(running: RunningService) -> None:
    message = _refused(_post(running, None), 401, "unauthorized")
    assert "Authorization: Bearer" in message


@pytest.mark.parametrize(
    "header",
    ["Basic dXNlcjpwYXNz", "Bearer", "Bearer not-a-token", "Bearer " + "a" * 500],
    ids=["basic", "empty", "malformed", "huge"],
)
def test_a_credential_that_is_not_a_token_is_refused(running: RunningService, header: str) -> None:
    answer = httpx.post(f"{running.url}/v1/snapshot", content=SNAPSHOT,
                        headers={"authorization": header})  # fmt: skip
    _refused(answer, 401, "unauthorized")


def test_a_wrong_secret_and_an_unknown_id_are_refused_alike(
    running: RunningService, issue: Issue
) -> None:
    token = issue().token
    prefix, ident, secret = token.split("_", 2)
    wrong_secret = f"{prefix}_{ident}_{'A' * len(secret)}"
    unknown_id = f"{prefix}_{'0' * len(ident)}_{secret}"
    first = _refused(_post(running, wrong_secret), 401, "unauthorized")
    second = _refused(_post(running, unknown_id), 401, "unauthorized")
    assert first == second
    assert _post(running, token).status_code == 200


def test_a_revoked_credential_is_refused_from_the_next_request_on(
    running: RunningService, issue: Issue
) -> None:
    issued = issue()
    assert _post(running, issued.token).status_code == 200
    running.service.credentials.revoke(issued.credential.id)
    _refused(_post(running, issued.token), 401, "unauthorized")


def test_an_expired_credential_is_refused(
    running: RunningService, issue: Issue, pg_database: str
) -> None:
    issued = issue(expires_in=timedelta(hours=1))
    assert _post(running, issued.token).status_code == 200
    with psycopg.connect(pg_database) as conn:
        conn.execute(
            f"UPDATE {SERVICE_SCHEMA}.credentials SET expires_at = now() - interval '1 second' "
            "WHERE id = %s",
            (issued.credential.id,),
        )
    _refused(_post(running, issued.token), 401, "unauthorized")


def test_an_oversized_body_is_refused_and_the_refusal_reaches_the_client(
    running: RunningService, issue: Issue
) -> None:
    answer = _post(running, issue().token, b" " * (300 * 1024))
    _refused(answer, 413, "too_large")


def test_a_content_length_far_over_the_limit_is_refused_before_any_body_is_sent(
    running: RunningService, issue: Issue
) -> None:
    parts = urlsplit(running.url)
    head = (
        "POST /v1/publish HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n"
        f"Authorization: Bearer {issue().token}\r\n\r\n"
    )
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(head.encode())
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 413")


def test_a_streamed_oversized_body_is_refused(running: RunningService, issue: Issue) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(40):
            yield b" " * 8192

    answer = httpx.post(
        f"{running.url}/v1/snapshot",
        content=chunks(),
        headers={"authorization": f"Bearer {issue().token}"},
    )
    _refused(answer, 413, "too_large")


def test_a_body_that_is_not_json_is_a_bad_request(running: RunningService, issue: Issue) -> None:
    _refused(_post(running, issue().token, b"{not json"), 400, "bad_request")


def _slow_client(running: RunningService, head: bytes, drip: bytes) -> bytes:
    """Send ``head`` at once, then ``drip`` one byte a second; what the server sent back."""
    parts = urlsplit(running.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(head)
        received = b""
        for byte in drip:
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                break
            sock.settimeout(1.0)
            try:
                chunk = sock.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                break
            if not chunk:
                break
            received += chunk
        return received


def _legitimate_calls(backend: RemoteBackend, count: int) -> list[float]:
    request = SnapshotRequest(RunIdentity("run", REPOSITORY))
    latencies = []
    for _ in range(count):
        started = time.perf_counter()
        backend.snapshot(request)
        latencies.append(time.perf_counter() - started)
        time.sleep(0.05)
    return latencies


@pytest.mark.parametrize(
    ("head", "drip"),
    [
        (b"POST /v1/snapshot HTTP/1.1\r\nHost: x\r\n", b"X-Slow: " + b"a" * 40),
        (
            b"POST /v1/snapshot HTTP/1.1\r\nHost: x\r\nContent-Length: 64\r\n"
            b"Authorization: Bearer TOKEN\r\n\r\n",
            b"{" + b" " * 63,
        ),
    ],
    ids=["slow-head", "slow-body"],
)
def test_a_client_sending_a_byte_a_second_is_cut_off_while_others_are_served(
    running: RunningService, issue: Issue, head: bytes, drip: bytes
) -> None:
    token = issue().token
    with RemoteBackend(running.url, token=token) as backend:
        backend.publish(
            Publication(
                run_id="seed",
                mutations=(
                    Mutation(
                        op="upsert", id=new_lesson_id(), expected_revision=0, draft=make_draft()
                    ),
                ),
            )
        )
        outcome: dict[str, bytes] = {}
        head = head.replace(b"TOKEN", token.encode())
        slow = threading.Thread(
            target=lambda: outcome.__setitem__("answer", _slow_client(running, head, drip))
        )
        slow.start()
        latencies = _legitimate_calls(backend, 20)
        slow.join(40)
    assert not slow.is_alive()
    answer = outcome["answer"]
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert b'"error":"timeout"' in answer.replace(b" ", b"")
    assert len(latencies) == 20
    print(f"legitimate snapshot during a slow client: median {statistics.median(latencies):.4f} s,"
          f" max {max(latencies):.4f} s")  # fmt: skip


def test_a_crowd_of_abusive_clients_does_not_stop_legitimate_calls(
    running: RunningService, issue: Issue
) -> None:
    token = issue().token
    stop = threading.Event()
    refused: list[int] = []

    def bad_tokens() -> None:
        while not stop.is_set():
            refused.append(_post(running, "amt_0000000000000000_" + "B" * 43).status_code)

    def oversized() -> None:
        while not stop.is_set():
            refused.append(_post(running, token, b" " * (300 * 1024)).status_code)

    slow_head = b"POST /v1/snapshot HTTP/1.1\r\nHost: x\r\n"
    crowd = [threading.Thread(target=_slow_client, args=(running, slow_head, b"a" * 5))
             for _ in range(20)]  # fmt: skip
    crowd += [threading.Thread(target=bad_tokens), threading.Thread(target=oversized)]
    for thread in crowd:
        thread.start()
    try:
        with RemoteBackend(running.url, token=token) as backend:
            latencies = _legitimate_calls(backend, 30)
    finally:
        stop.set()
        for thread in crowd:
            thread.join(30)
    assert len(latencies) == 30
    assert refused
    # Bad tokens are 401, oversized bodies 413; the oversized loop uses the legitimate token, and
    # when it sends faster than that token's rate it is answered 429 before its body is read.
    assert set(refused) <= {401, 413, 429}
    assert {401, 413} <= set(refused)
    print(f"legitimate snapshot amid 20 slow clients, bad tokens and oversized bodies: median "
          f"{statistics.median(latencies):.4f} s, max {max(latencies):.4f} s")  # fmt: skip


@pytest.mark.slow
def test_a_client_that_stops_reading_its_answer_is_dropped_while_others_are_served(
    running: RunningService, issue: Issue, tenant: str
) -> None:
    """Slow: 1,500 lessons are published, then 80 legitimate snapshots are timed while a client
    stalls a 7 MB answer past the service's 1.5 s guard."""
    token = issue().token
    store = running.service.store(tenant)
    files = tuple(f"src/{'d' * 200}/f{n:02d}.py" for n in range(20))  # ~5 KB cards
    store.publish(
        Publication(
            run_id="seed",
            mutations=tuple(
                Mutation(op="upsert", id=new_lesson_id(), expected_revision=0,
                         draft=make_draft(f"Lesson {n}", files=files))
                for n in range(1500)
            ),
        )
    )  # fmt: skip
    parts = urlsplit(running.url)
    head = (
        f"POST /v1/snapshot HTTP/1.1\r\nHost: x\r\nContent-Length: {len(SNAPSHOT)}\r\n"
        f"Authorization: Bearer {token}\r\n\r\n"
    ).encode()
    reader = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # fills at once
    reader.connect((parts.hostname, parts.port))
    reader.sendall(head + SNAPSHOT)
    quiet = issue(f"{tenant}q").token  # another tenant: small, quick snapshots
    with RemoteBackend(running.url, token=quiet) as other:
        latencies = _legitimate_calls(other, 80)  # about 5 s: well past the 1.5 s guard
    received = 0
    reader.settimeout(10)
    try:
        while chunk := reader.recv(65536):
            received += len(chunk)
    except ConnectionResetError:
        pass  # aborted: the rest of the answer was dropped
    reader.close()
    with RemoteBackend(running.url, token=token) as whole:
        full = len(whole.snapshot(SnapshotRequest(RunIdentity("run", REPOSITORY))).lessons)
    assert full == 1500
    assert received < 6_000_000  # well short of the ~7.5 MB answer
    assert len(latencies) == 80
    print(f"legitimate snapshot while a client stalls a 7 MB answer: median "
          f"{statistics.median(latencies):.4f} s, max {max(latencies):.4f} s")  # fmt: skip


def _open_partial_heads(running: RunningService, count: int, source: str) -> list[socket.socket]:
    """``count`` connections from ``source``, each holding a request head it never finishes."""
    parts = urlsplit(running.url)
    opened = []
    for _ in range(count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind((source, 0))
        sock.connect((parts.hostname, parts.port))
        with contextlib.suppress(OSError):  # already refused and closed
            sock.sendall(b"POST /v1/snapshot HTTP/1.1\r\nHost: x\r\n")
        opened.append(sock)
    return opened


def _answers(sockets: list[socket.socket]) -> list[bytes | None]:
    """What each connection was answered: None while it is still held open, b"" when it was
    closed or reset before its answer could be read."""
    answers: list[bytes | None] = []
    for sock in sockets:
        sock.settimeout(0.2)
        try:
            answers.append(sock.recv(4096))
        except TimeoutError:
            answers.append(None)
        except OSError:
            answers.append(b"")
        sock.close()
    return answers


def test_a_flood_of_half_sent_requests_from_one_address_does_not_lock_out_others(
    running: RunningService, issue: Issue
) -> None:
    """300 connections from 127.0.0.2 (over the default 256 overall): past its 32 the flooder
    is answered 503 at once, and a client on 127.0.0.1 is served throughout."""
    token = issue().token
    flood = _open_partial_heads(running, 300, "127.0.0.2")
    try:
        with RemoteBackend(running.url, token=token) as backend:
            latencies = _legitimate_calls(backend, 20)
            again = _open_partial_heads(running, 50, "127.0.0.2")  # reopening changes nothing
            latencies += _legitimate_calls(backend, 10)
    finally:
        refused = _answers(flood) + _answers(again)
    assert len(latencies) == 30
    assert refused.count(None) <= 32  # only its share is held open
    busy = [answer for answer in refused if answer and answer.startswith(b"HTTP/1.1 503")]
    assert busy  # the rest were answered, or reset when they sent on after the answer
    assert b'"error": "unavailable"' in busy[0]
    print(f"legitimate snapshot during a 300-socket flood from one address: median "
          f"{statistics.median(latencies):.4f} s, max {max(latencies):.4f} s")  # fmt: skip


def test_past_the_overall_connection_limit_the_answer_is_json(
    pg_database: str, issue: Issue
) -> None:
    from active_memory.server import ServeOptions, build_service

    service = build_service(pg_database, pool_size=2)
    options = ServeOptions(port=0, max_connections=4, max_connections_per_client=100)
    try:
        with RunningService(service, options) as small:
            held = _open_partial_heads(small, 4, "127.0.0.2")
            answer = httpx.get(f"{small.url}/healthz")
            assert answer.status_code == 503
            assert answer.json()["error"] == "unavailable"
            _answers(held)
    finally:
        service.close()


@pytest.mark.parametrize("size", [17_000, 100_000, 1_000_000])
def test_a_request_head_over_16_kib_sent_whole_is_refused(
    running: RunningService, issue: Issue, size: int
) -> None:
    parts = urlsplit(running.url)
    head = (
        f"POST /v1/snapshot HTTP/1.1\r\nHost: x\r\nContent-Length: {len(SNAPSHOT)}\r\n"
        f"Authorization: Bearer {issue().token}\r\nX-Pad: {'a' * size}\r\n\r\n"
    ).encode()
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        with contextlib.suppress(OSError):
            sock.sendall(head + SNAPSHOT)
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 431"), answer[:200]
    assert b'"error": "too_large"' in answer
    assert _post(running, issue().token).status_code == 200  # a head under the bound passes


def test_a_head_of_15_kib_is_served(running: RunningService, issue: Issue) -> None:
    answer = httpx.post(
        f"{running.url}/v1/snapshot",
        content=SNAPSHOT,
        headers={"authorization": f"Bearer {issue().token}", "x-pad": "a" * 15_000},
    )
    assert answer.status_code == 200


def test_a_refused_credential_is_answered_with_a_bearer_challenge(running: RunningService) -> None:
    for token in (None, "amt_0000000000000000_" + "B" * 43):
        answer = _post(running, token)
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize("declared", ["abc", "-1", "-5", "1e3"])
def test_a_content_length_that_is_not_a_number_is_a_bad_request(
    running: RunningService, issue: Issue, declared: str
) -> None:
    parts = urlsplit(running.url)
    head = (
        f"POST /v1/snapshot HTTP/1.1\r\nHost: x\r\nContent-Length: {declared}\r\n"
        f"Authorization: Bearer {issue().token}\r\n\r\n"
    ).encode()
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(head + SNAPSHOT)
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert b'"error": "bad_request"' in answer
    assert f"its Content-Length '{declared}' is not a byte count".encode() in answer


@pytest.mark.parametrize(
    ("declared", "authorised", "status"),
    [(2_000_000, True, b"413"), (2_000_000, False, b"401"), (-5, True, b"400")],
    ids=["over-the-cap", "no-credential", "negative"],
)
def test_a_refused_request_still_sending_its_body_reads_the_json_answer_whole(
    running: RunningService, issue: Issue, declared: int, authorised: bool, status: bytes
) -> None:
    # The answer goes out before the body has arrived; closing with the body unread would
    # reset the connection, and the client, still sending, would lose the answer.
    parts = urlsplit(running.url)
    credential = f"Authorization: Bearer {issue().token}\r\n" if authorised else ""
    head = (f"POST /v1/publish HTTP/1.1\r\nHost: x\r\nContent-Length: {declared}\r\n"
            f"{credential}\r\n").encode()  # fmt: skip
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(head + b" " * 2_000_000)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 " + status), answer[:200]
    head_end = answer.index(b"\r\n\r\n")
    assert json.loads(answer[head_end + 4 :])["message"]


def test_pipelined_requests_are_each_answered_in_order(
    running: RunningService, issue: Issue
) -> None:
    # The service parses every request of a read at once; each is answered in turn, the last
    # (its credential refused) closes the connection.
    parts = urlsplit(running.url)
    token = issue().token
    requests = b"".join(
        f"POST /v1/snapshot HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
        f"Authorization: Bearer {credential}\r\n\r\n".encode() + body
        for credential, body in [(token, SNAPSHOT), (token, b"{not json"), (token, SNAPSHOT),
                                 ("none", SNAPSHOT)]
    )  # fmt: skip
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(requests)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert re.findall(rb"HTTP/1.1 (\d{3})", answer) == [b"200", b"400", b"200", b"401"]
