"""Peers told apart by the kernel: another local user's sockets against the broker's reserve.

Needs Linux (the peer's user comes from ``sock_diag``) and root (to run the hostile client as
``nobody``); skipped otherwise. The client is a system Python, which ``nobody`` can execute.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from test_broker import Recorder, eventually
from test_broker_limits import TOKEN, call

from active_memory.recall.broker import BrokerLimits, RecallBroker

NOBODY = 65534
SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin")
HOLDER = """
import socket, sys
held = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(int(sys.argv[2]))]
print("ready", flush=True)
sys.stdin.read()
"""

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0 or SYSTEM_PYTHON is None,
    reason="needs Linux, root and a system python3 to connect as another user",
)


@contextmanager
def other_user_sockets(broker: RecallBroker, count: int) -> Iterator[None]:
    """``count`` idle connections from the user ``nobody``, held until the block ends."""
    assert SYSTEM_PYTHON is not None
    holder = subprocess.Popen(
        [SYSTEM_PYTHON, "-I", "-c", HOLDER, str(broker.address[1]), str(count)],
        user=NOBODY, cwd="/", stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdin is not None
    assert holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "ready"
        yield
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)


def test_another_user_at_the_cap_leaves_the_reserve_to_the_helper() -> None:
    recorder = Recorder()
    limits = BrokerLimits(max_connections=8, max_per_peer=8, reserved_slots=2)
    with RecallBroker(recorder, token=TOKEN, limits=limits) as broker:
        with other_user_sockets(broker, 20):
            # The other user holds its share, six, and displaced its own to connect the rest.
            assert eventually(lambda: broker.connection_stats["evicted"] == 14)
            assert broker.connection_stats["open"] == 6
            for _ in range(5):
                assert call(broker) == b'{"ok":1}'
            # The helper's calls took reserved slots: none of the other user's was displaced.
            assert broker.connection_stats["evicted"] == 14
            assert eventually(lambda: broker.connection_stats["peers"] == 1)
        assert len(recorder.requests) == 5


def test_the_per_peer_limit_caps_another_user_below_the_global_cap() -> None:
    limits = BrokerLimits(max_connections=16, max_per_peer=4, reserved_slots=2)
    with (
        RecallBroker(Recorder(), token=TOKEN, limits=limits) as broker,
        other_user_sockets(broker, 10),
    ):
        assert eventually(lambda: broker.connection_stats["evicted"] == 6)
        assert broker.connection_stats["open"] == 4
        assert call(broker) == b'{"ok":1}'
        assert broker.connection_stats["evicted"] == 6
