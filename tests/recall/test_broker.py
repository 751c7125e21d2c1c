from __future__ import annotations

import json
import logging
import secrets
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from urllib.parse import quote

import pytest

from active_memory.errors import RecallError
from active_memory.recall.broker import (
    MAX_REQUEST_BYTES,
    BrokerAnswer,
    BrokerRequest,
    RecallBroker,
)
from active_memory.recall.wire import ANSWER_CONTEXT, MAX_FRAME_BYTES, REQUEST_CONTEXT, mac


@dataclass(eq=False)
class Tracked:
    body: bytes
    events: list[str] = field(default_factory=list)

    def commit(self) -> None:
        self.events.append("commit")

    def release(self) -> None:
        self.events.append("release")


class Recorder:
    def __init__(self, body: bytes = b'{"ok":1}') -> None:
        self.body = body
        self.requests: list[BrokerRequest] = []
        self.answers: list[Tracked] = []

    def __call__(self, request: BrokerRequest) -> BrokerAnswer:
        self.requests.append(request)
        answer = Tracked(self.body)
        self.answers.append(answer)
        return answer


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def broker(recorder: Recorder) -> Iterator[RecallBroker]:
    with RecallBroker(recorder, token="secret-token-for-tests") as running:
        yield running


def eventually(check: Callable[[], bool]) -> bool:
    """The broker settles an answer just after writing it; give its thread a moment."""
    deadline = time.monotonic() + 5
    while not check() and time.monotonic() < deadline:
        time.sleep(0.005)
    return check()


def connect(broker: RecallBroker) -> socket.socket:
    sock = socket.create_connection(broker.address, timeout=5)
    return sock


def frame(message: object) -> bytes:
    body = json.dumps(message).encode()
    return len(body).to_bytes(4, "big") + body


def signed(token: str, message: object) -> bytes:
    """A helper request frame: the tag under ``token``, then the JSON it signs."""
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    data = mac(token.encode(), REQUEST_CONTEXT, body) + body
    return len(data).to_bytes(4, "big") + data


def read_frame(sock: socket.socket) -> bytes | None:
    head = sock.recv(4, socket.MSG_WAITALL)
    if len(head) < 4:
        return None
    return sock.recv(int.from_bytes(head, "big"), socket.MSG_WAITALL)


def read_answer(sock: socket.socket, token: str, nonce: str) -> bytes | None:
    """The answer of a signed frame, once its tag is checked against the call's nonce."""
    data = read_frame(sock)
    if data is None:
        return None
    tag, answer = data[:32], data[32:]
    assert tag == mac(token.encode(), ANSWER_CONTEXT, nonce.encode(), answer)
    return answer


def helper_request(**extra: object) -> dict[str, object]:
    return {"nonce": secrets.token_hex(16), "harness": "claude",
            "payload": {"tool_name": "Read"}, **extra}  # fmt: skip


def test_helper_frame_is_answered_and_committed_after_the_ack(
    broker: RecallBroker, recorder: Recorder
) -> None:
    message = helper_request(node_id="n1", conversation_id="c1")
    with connect(broker) as sock:
        sock.sendall(signed(broker.token, message))
        assert read_answer(sock, broker.token, str(message["nonce"])) == b'{"ok":1}'
        sock.sendall(frame({"ack": True}))
        assert sock.recv(1) == b""  # the broker closes after the acknowledgement
    # The nonce names the call, so a late broker and the store fallback share one receipt.
    nonce = str(message["nonce"])
    expected = BrokerRequest("claude", {"tool_name": "Read"}, "n1", "c1", None, call_id=nonce)
    assert recorder.requests == [expected]
    assert recorder.answers[0].events == ["commit"]


def test_helper_frame_without_ack_is_released(broker: RecallBroker, recorder: Recorder) -> None:
    message = helper_request()
    with connect(broker) as sock:
        sock.sendall(signed(broker.token, message))
        assert read_answer(sock, broker.token, str(message["nonce"])) == b'{"ok":1}'
    assert eventually(lambda: recorder.answers[0].events == ["release"])


@pytest.mark.parametrize("key", ["wrong", "secret-token-for-tests-but-longer", "x"])
def test_a_frame_signed_with_another_token_is_refused_before_recall(
    broker: RecallBroker, recorder: Recorder, key: str
) -> None:
    with connect(broker) as sock:
        sock.sendall(signed(key, helper_request()))
        assert read_frame(sock) is None
    assert recorder.requests == []


def test_the_old_frame_carrying_the_token_in_clear_is_refused(
    broker: RecallBroker, recorder: Recorder
) -> None:
    with connect(broker) as sock:
        sock.sendall(frame({"token": broker.token, **helper_request()}))
        assert read_frame(sock) is None
    assert recorder.requests == []


def test_a_replayed_frame_is_refused(broker: RecallBroker, recorder: Recorder) -> None:
    raw = signed(broker.token, helper_request())
    for expected in (b'{"ok":1}', None):
        with connect(broker) as sock:
            sock.sendall(raw)
            answer = read_frame(sock)
            assert (answer[32:] if answer else None) == expected
    assert len(recorder.requests) == 1


@pytest.mark.parametrize("nonce", [None, 7, "", "short", "x" * 65, "not hex! not hex! not hex!"])
def test_a_signed_frame_needs_a_well_formed_nonce(
    broker: RecallBroker, recorder: Recorder, nonce: object
) -> None:
    with connect(broker) as sock:
        sock.sendall(signed(broker.token, {**helper_request(), "nonce": nonce}))
        assert read_frame(sock) is None
    assert recorder.requests == []


def test_a_malformed_frame_is_refused_without_parsing_or_a_traceback(
    broker: RecallBroker, recorder: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    caplog.set_level(logging.DEBUG, logger="active_memory.recall.broker")
    for raw in (len(deep).to_bytes(4, "big") + deep, signed("wrong", deep),
                signed(broker.token, deep)):  # fmt: skip
        with connect(broker) as sock:
            sock.sendall(raw)
            assert read_frame(sock) is None
    assert recorder.requests == []
    assert not [record for record in caplog.records if record.exc_info]
    messages = [record.getMessage() for record in caplog.records]
    assert messages.count("refused a helper frame not signed with the run's token") == 2
    assert "refused a signed helper frame that is not JSON" in messages


def test_oversized_frame_is_refused(broker: RecallBroker, recorder: Recorder) -> None:
    with connect(broker) as sock:
        sock.sendall((MAX_FRAME_BYTES + 1).to_bytes(4, "big"))
        assert read_frame(sock) is None
    assert recorder.requests == []


def test_a_frame_at_the_payload_limit_is_answered(broker: RecallBroker, recorder: Recorder) -> None:
    message = helper_request(payload="x" * (MAX_REQUEST_BYTES - 2))
    with connect(broker) as sock:
        sock.sendall(signed(broker.token, message))
        assert read_answer(sock, broker.token, str(message["nonce"])) == b'{"ok":1}'
    assert len(recorder.requests) == 1


def http(broker: RecallBroker, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    with connect(broker) as sock:
        sock.sendall(raw)
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        headers = dict(line.split(": ", 1) for line in lines[1:])
        length = int(headers["Content-Length"])
        while len(body) < length:
            body += sock.recv(65536)
        return int(lines[0].split()[1]), headers, body


def post(path: str, body: bytes, *headers: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}",
             "Connection: close", *headers]  # fmt: skip
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def test_http_hook_with_bearer_token_is_answered_and_committed(
    broker: RecallBroker, recorder: Recorder
) -> None:
    raw = post(
        "/hook/codex",
        b'{"tool_name":"Bash"}',
        f"Authorization: Bearer {broker.token}",
        "X-Active-Memory-Node: build%2F1",
        "X-Active-Memory-Conversation: conv%201",
    )
    status, headers, body = http(broker, raw)
    assert (status, headers["Content-Type"], body) == (200, "application/json", b'{"ok":1}')
    assert recorder.requests == [BrokerRequest("codex", {"tool_name": "Bash"}, "build/1",
                                               "conv 1", None)]  # fmt: skip
    assert eventually(lambda: recorder.answers[0].events == ["commit"])


def test_http_harness_may_come_from_a_header(broker: RecallBroker, recorder: Recorder) -> None:
    raw = post("/hook", b"{}", f"Authorization: Bearer {broker.token}",
               "X-Active-Memory-Harness: copilot")  # fmt: skip
    assert http(broker, raw)[0] == 200
    assert recorder.requests[0].harness == "copilot"


@pytest.mark.parametrize(
    ("auth", "status"),
    [("Authorization: Bearer nope", 401), ("X-Nothing: 1", 401)],
)
def test_http_wrong_token_is_refused(
    broker: RecallBroker, recorder: Recorder, auth: str, status: int
) -> None:
    assert http(broker, post("/hook/claude", b"{}", auth))[0] == status
    assert recorder.requests == []


def test_http_limits_and_errors(broker: RecallBroker, recorder: Recorder) -> None:
    auth = f"Authorization: Bearer {broker.token}"
    big = post("/hook/claude", b"", auth).replace(
        b"Content-Length: 0", f"Content-Length: {MAX_REQUEST_BYTES + 1}".encode()
    )
    assert http(broker, big)[0] == 413
    assert http(broker, post("/hook/claude", b"{not json", auth))[0] == 400
    assert http(broker, post("/other", b"{}", auth))[0] == 404
    get = f"GET /health HTTP/1.1\r\n{auth}\r\nConnection: close\r\n\r\n".encode()
    assert http(broker, get)[:3:2] == (200, b'{"ok":true}')
    assert recorder.requests == []


def test_http_expect_continue_is_honoured(broker: RecallBroker) -> None:
    body = b'{"tool_name":"Read"}'
    head = post(
        "/hook/claude", b"", f"Authorization: Bearer {broker.token}", "Expect: 100-continue"
    )
    head = head.replace(b"Content-Length: 0", f"Content-Length: {len(body)}".encode())
    with connect(broker) as sock:
        sock.sendall(head)
        assert sock.recv(64).startswith(b"HTTP/1.1 100 Continue")
        sock.sendall(body)
        assert b'{"ok":1}' in sock.recv(65536)


def test_http_keep_alive_serves_several_requests(broker: RecallBroker, recorder: Recorder) -> None:
    one = post("/hook/claude", b"{}", f"Authorization: Bearer {broker.token}").replace(
        b"Connection: close", b"Connection: keep-alive"
    )
    with connect(broker) as sock:
        for _ in range(3):
            sock.sendall(one)
            reply = b""
            while not reply.endswith(b'{"ok":1}'):
                reply += sock.recv(65536)
            assert b"keep-alive" in reply
    assert len(recorder.requests) == 3


def test_handler_failure_answers_empty(recorder: Recorder) -> None:
    def broken(request: BrokerRequest) -> BrokerAnswer:
        raise RuntimeError("boom")

    with RecallBroker(broken) as broker:
        raw = post("/hook/claude", b"{}", f"Authorization: Bearer {broker.token}")
        assert http(broker, raw)[::2] == (200, b"{}")


def test_oversized_answer_is_released_and_replaced_by_empty() -> None:
    recorder = Recorder(body=b"{" + b" " * 40_000 + b"}")
    with RecallBroker(recorder) as broker:
        raw = post("/hook/claude", b"{}", f"Authorization: Bearer {broker.token}")
        assert http(broker, raw)[::2] == (200, b"{}")
    assert eventually(lambda: recorder.answers[0].events == ["release"])


def test_close_stops_listening(recorder: Recorder) -> None:
    broker = RecallBroker(recorder).start()
    address = broker.address
    broker.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(address, timeout=1)
    with pytest.raises(RecallError, match="not running"):
        _ = broker.address


def test_only_loopback_is_allowed(recorder: Recorder) -> None:
    with pytest.raises(RecallError, match="loopback"):
        RecallBroker(recorder, host="0.0.0.0")


def test_tokens_are_run_scoped_and_unguessable(recorder: Recorder) -> None:
    first, second = RecallBroker(recorder), RecallBroker(recorder)
    assert first.token != second.token
    assert len(first.token) >= 40


def test_a_refused_http_request_closes_its_keep_alive_connection(
    broker: RecallBroker, recorder: Recorder
) -> None:
    raw = post("/hook/claude", b"{}", "Authorization: Bearer nope").replace(
        b"Connection: close", b"Connection: keep-alive"
    )
    with connect(broker) as sock:
        sock.sendall(raw)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
        assert reply.startswith(b"HTTP/1.1 401")
        assert b"Connection: close" in reply
    assert recorder.requests == []


def test_the_token_is_checked_before_the_body_is_read(
    broker: RecallBroker, recorder: Recorder
) -> None:
    head = post("/hook/claude", b"", "Authorization: Bearer nope").replace(
        b"Content-Length: 0", f"Content-Length: {MAX_REQUEST_BYTES}".encode()
    )
    with connect(broker) as sock:
        sock.sendall(head)  # no body follows: a broker waiting for it would time out
        started = time.monotonic()
        assert sock.recv(64).startswith(b"HTTP/1.1 401")
        assert time.monotonic() - started < 0.5
    assert recorder.requests == []


def test_an_authorised_deeply_nested_body_is_a_bad_request(
    broker: RecallBroker, recorder: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    raw = post("/hook/claude", deep, f"Authorization: Bearer {broker.token}")
    assert http(broker, raw)[0] == 400
    assert not [record for record in caplog.records if record.exc_info]
    assert recorder.requests == []


BAD_IDS = ["a\nb", "a\x1b[31mred", "x" * 513, "a\u2028b", "\u202eevil", "a\x7fb", "\ud800"]


@pytest.mark.parametrize("bad", BAD_IDS)
def test_ids_with_control_characters_or_too_long_are_dropped(
    broker: RecallBroker, recorder: Recorder, bad: str
) -> None:
    message = helper_request(node_id=bad, conversation_id=bad, execution_id=bad)
    with connect(broker) as sock:
        sock.sendall(signed(broker.token, message))
        assert read_answer(sock, broker.token, str(message["nonce"])) == b'{"ok":1}'
    encoded = quote(bad.encode("utf-8", "surrogatepass"), safe="")
    raw = post("/hook/claude", b"{}", f"Authorization: Bearer {broker.token}",
               f"X-Active-Memory-Node: {encoded}", f"X-Active-Memory-Conversation: {encoded}",
               f"X-Active-Memory-Execution: {encoded}")  # fmt: skip
    assert http(broker, raw)[0] == 200
    assert [(r.node_id, r.conversation_id, r.execution_id) for r in recorder.requests] == [
        (None, None, None),
        (None, None, None),
    ]


def test_ids_that_are_not_utf_8_once_decoded_are_dropped(
    broker: RecallBroker, recorder: Recorder
) -> None:
    auth = f"Authorization: Bearer {broker.token}"
    raw = post("/hook/claude", b"{}", auth, "X-Active-Memory-Node: %ff%fe",
               "X-Active-Memory-Conversation: ok%20one")  # fmt: skip
    assert http(broker, raw)[0] == 200
    assert (recorder.requests[0].node_id, recorder.requests[0].conversation_id) == (None, "ok one")
