"""The broker's connection limits and deadlines, with small limits and short deadlines."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_broker import Recorder, eventually, read_answer, signed

from active_memory.errors import ConfigError
from active_memory.recall import broker as broker_module, broker_limits
from active_memory.recall.broker import BrokerLimits, RecallBroker
from cli_runner import run_cli

TOKEN = "secret-token-for-tests"


@pytest.fixture
def short_deadline(monkeypatch: pytest.MonkeyPatch) -> float:
    monkeypatch.setattr(broker_module, "REQUEST_TIMEOUT_S", 0.3)
    return 0.3


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the broker closes ``sock`` within ``seconds`` (whatever it sends first)."""
    sock.settimeout(seconds)
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True
    return True


def call(broker: RecallBroker) -> bytes | None:
    message = {"nonce": f"{time.monotonic_ns():032d}", "harness": "claude", "payload": {}}
    with socket.create_connection(broker.address, timeout=5) as sock:
        sock.sendall(signed(broker.token, message))
        return read_answer(sock, broker.token, str(message["nonce"]))


@pytest.fixture
def small(recorder: Recorder) -> Iterator[RecallBroker]:
    with RecallBroker(recorder, token=TOKEN, limits=BrokerLimits(4, 4)) as running:
        yield running


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


def test_an_idle_connection_is_closed_at_the_request_deadline(short_deadline: float) -> None:
    with (
        RecallBroker(Recorder(), token=TOKEN) as broker,
        socket.create_connection(broker.address) as idle,
    ):
        started = time.monotonic()
        assert closed_within(idle, 5)
        assert time.monotonic() - started >= short_deadline * 0.9


@pytest.mark.parametrize("start", [b"POST /hook/claude HTTP/1.1\r\n", (1000).to_bytes(4, "big")])
def test_a_slow_sender_is_closed_at_the_deadline_though_bytes_keep_coming(
    short_deadline: float, start: bytes
) -> None:
    with (
        RecallBroker(Recorder(), token=TOKEN) as broker,
        socket.create_connection(broker.address) as slow,
    ):
        slow.sendall(start)
        started = time.monotonic()
        closed = False
        while not closed and time.monotonic() - started < 5:
            try:
                slow.sendall(b"x")
                slow.settimeout(0.05)
                closed = slow.recv(1) == b""
            except TimeoutError:
                continue
            except OSError:
                closed = True
        assert closed
        assert time.monotonic() - started < 2


def test_a_full_broker_displaces_the_oldest_idle_socket_for_a_caller(
    small: RecallBroker, recorder: Recorder
) -> None:
    idle = [socket.create_connection(small.address) for _ in range(4)]
    try:
        assert eventually(lambda: small.connection_stats["open"] == 4)
        assert call(small) == b'{"ok":1}'
        assert closed_within(idle[0], 5)  # the oldest went
        assert small.connection_stats["evicted"] == 1
        assert len(recorder.requests) == 1
    finally:
        for sock in idle:
            sock.close()


def test_the_per_peer_limit_displaces_that_peers_oldest_socket(recorder: Recorder) -> None:
    with RecallBroker(recorder, token=TOKEN, limits=BrokerLimits(10, 2)) as broker:
        first = socket.create_connection(broker.address)
        second = socket.create_connection(broker.address)
        try:
            assert eventually(lambda: broker.connection_stats["open"] == 2)
            assert call(broker) == b'{"ok":1}'
            assert closed_within(first, 5)
            assert eventually(lambda: broker.connection_stats["open"] == 1)
            assert broker.connection_stats["evicted"] == 1
        finally:
            first.close()
            second.close()


def test_a_caller_that_showed_the_token_is_never_displaced(recorder: Recorder) -> None:
    with RecallBroker(recorder, token=TOKEN, limits=BrokerLimits(1, 1)) as broker:
        message = {"nonce": "a" * 32, "harness": "claude", "payload": {}}
        with socket.create_connection(broker.address, timeout=5) as busy:
            busy.sendall(signed(TOKEN, message))
            assert read_answer(busy, TOKEN, "a" * 32) == b'{"ok":1}'
            # It owes its acknowledgement: the broker holds it, and a newcomer is refused.
            with socket.create_connection(broker.address, timeout=5) as newcomer:
                assert closed_within(newcomer, 5)
            assert broker.connection_stats == {"open": 1, "evicted": 0, "refused": 1, "peers": 1}
            busy.sendall(len(b'{"ack":true}').to_bytes(4, "big") + b'{"ack":true}')
        assert eventually(lambda: recorder.answers[0].events == ["commit"])


def test_connection_limits_follow_the_descriptor_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    resource = pytest.importorskip("resource")
    monkeypatch.setattr(resource, "getrlimit", lambda kind: (1024, 4096))
    assert broker_limits.descriptor_cap(1024) == 256
    monkeypatch.setattr(resource, "getrlimit", lambda kind: (resource.RLIM_INFINITY, 4096))
    assert broker_limits.descriptor_cap(1024) == 1024


@pytest.mark.parametrize(
    ("limits", "field"),
    [
        ({"max_connections": 0}, "broker.max_connections"),
        ({"max_per_peer": 0}, "broker.max_per_peer"),
        ({"reserved_slots": -1}, "broker.reserved_slots"),
    ],
)
def test_a_bad_limit_is_one_config_error_naming_it(limits: dict[str, int], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        BrokerLimits(**limits)


def test_a_full_broker_displaces_silent_sockets_before_one_that_sent_bytes(
    recorder: Recorder,
) -> None:
    """Early eviction: a socket that has sent nothing goes before an older one whose request
    is arriving (a slow sender, or a caller the loop has not read yet)."""
    with RecallBroker(recorder, token=TOKEN, limits=BrokerLimits(3, 3)) as broker:
        sending = socket.create_connection(broker.address)
        sending.sendall(b"\x00\x00")  # half of a frame's length: heard, not yet proven
        assert eventually(lambda: broker.connection_stats["open"] == 1)
        time.sleep(0.05)
        silent = [socket.create_connection(broker.address) for _ in range(2)]
        try:
            assert eventually(lambda: broker.connection_stats["open"] == 3)
            assert call(broker) == b'{"ok":1}'
            assert closed_within(silent[0], 5)  # the oldest silent socket went
            assert not closed_within(sending, 0.2)  # older, but it was sending
            assert broker.connection_stats["evicted"] == 1
        finally:
            sending.close()
            for sock in silent:
                sock.close()


def test_serve_refuses_a_negative_reserve_before_it_starts(tmp_path: Path) -> None:
    result = run_cli(["serve", "--repository", tmp_path, "--store", tmp_path / "l.sqlite3",
                      "--reserved-slots", "-1"])  # fmt: skip
    assert result.exit_code == 2
    assert "--reserved-slots" in result.output
