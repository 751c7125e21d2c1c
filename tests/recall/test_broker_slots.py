"""Which connections the broker holds: per-peer limits, the owner's reserve, and which
unproven socket makes way (the policy alone, with stand-in connections)."""

from __future__ import annotations

import os
import socket
import sys

import pytest

from active_memory.recall.broker_limits import BrokerLimits, ConnectionSlots, Held, PeerNames

OWNER = "uid 1000"


class Socket:
    """A stand-in connection: records whether the broker dropped it."""

    def __init__(self, peer: str, *, pending: bool = False) -> None:
        self.aborted = False
        self.has_bytes = pending
        self.held = Held(peer, self.abort, lambda: self.has_bytes)

    def abort(self) -> None:
        self.aborted = True


def slots(total: int, per_peer: int, reserved: int) -> ConnectionSlots:
    return ConnectionSlots(BrokerLimits(total, per_peer, reserved), owner=OWNER)


def admit(table: ConnectionSlots, peer: str, count: int = 1, **kind: bool) -> list[Socket]:
    made = [Socket(peer, **kind) for _ in range(count)]
    for connection in made:
        assert table.admit(connection.held)
    return made


def test_other_users_cannot_take_the_owners_reserved_slots() -> None:
    table = slots(total=8, per_peer=8, reserved=2)
    hostile = admit(table, "uid 65534", 6)
    extra = Socket("uid 65534")
    assert table.admit(extra.held)  # at its share: it displaces its own oldest
    assert hostile[0].aborted
    assert table.stats()["open"] == 6
    helper = admit(table, OWNER, 2)  # the reserve: nobody is displaced
    assert table.stats() == {"open": 8, "evicted": 1, "refused": 0, "peers": 2}
    assert not any(sock.aborted for sock in [*hostile[1:], extra])
    assert not any(sock.aborted for sock in helper)


def test_a_flood_from_other_users_never_displaces_the_owners_connections() -> None:
    table = slots(total=8, per_peer=4, reserved=2)
    helper = admit(table, OWNER, 2)  # silent: just connected, its frame not read yet
    flood = [Socket(f"uid {6000 + number % 5}") for number in range(200)]
    for sock in flood:
        table.admit(sock.held)
    assert not any(sock.aborted for sock in helper)
    assert table.others <= 6
    assert table.stats()["open"] == 8


def test_the_owner_displaces_other_users_before_its_own_when_everything_is_full() -> None:
    table = slots(total=6, per_peer=6, reserved=2)
    mine = admit(table, OWNER, 2)
    theirs = admit(table, "uid 65534", 4)
    newcomer = Socket(OWNER)
    assert table.admit(newcomer.held)
    assert theirs[0].aborted
    assert not any(sock.aborted for sock in mine)


def test_a_newcomer_displaces_from_the_peer_holding_the_most() -> None:
    table = slots(total=8, per_peer=8, reserved=0)
    big = admit(table, "uid 1", 6)
    small = admit(table, "uid 2", 2)
    assert table.admit(Socket("uid 2").held)
    assert big[0].aborted
    assert not any(sock.aborted for sock in small)


def test_a_peer_over_its_limit_displaces_its_own_oldest_or_is_refused_when_all_are_busy() -> None:
    table = slots(total=10, per_peer=2, reserved=0)
    first, second = admit(table, "uid 7", 2)
    other = admit(table, "uid 8", 1)
    assert table.admit(Socket("uid 7").held)
    assert first.aborted
    assert not second.aborted
    assert not other[0].aborted
    busy = [Socket("uid 9"), Socket("uid 9")]
    for sock in busy:
        assert table.admit(sock.held)
        table.busy(sock.held)  # proved the token: never displaced
    assert not table.admit(Socket("uid 9").held)
    assert table.refused == 1
    assert not any(sock.aborted for sock in busy)


def test_a_silent_socket_whose_bytes_are_waiting_outlives_a_burst_of_newer_ones() -> None:
    """The helper sends its frame as it connects; a burst of sockets accepted before the loop
    reads it must not displace it while sockets that sent nothing remain."""
    table = slots(total=4, per_peer=4, reserved=0)
    idle = admit(table, OWNER, 3)
    helper = Socket(OWNER, pending=True)
    assert table.admit(helper.held)
    burst = [Socket(OWNER) for _ in range(20)]
    for sock in burst:
        assert table.admit(sock.held)
    assert not helper.aborted
    assert all(sock.aborted for sock in idle)
    assert sum(sock.aborted for sock in burst) == 17


def test_a_socket_that_sent_bytes_goes_after_silent_ones_and_busy_ones_never() -> None:
    table = slots(total=3, per_peer=3, reserved=0)
    sending, silent, busy = admit(table, OWNER, 3)
    table.heard(sending.held)
    table.busy(busy.held)
    assert table.admit(Socket(OWNER).held)
    assert silent.aborted
    assert not sending.aborted
    assert table.admit(Socket(OWNER).held)  # only unproven left: the oldest silent newcomer
    assert not sending.aborted
    assert not busy.aborted


def test_released_connections_free_their_slots_once() -> None:
    table = slots(total=4, per_peer=4, reserved=1)
    sock = admit(table, "uid 5", 1)[0]
    table.release(sock.held)
    table.release(sock.held)  # the handler's finally after a displacement
    assert table.stats() == {"open": 0, "evicted": 0, "refused": 0, "peers": 0}
    assert table.others == 0


def test_the_reserve_is_at_most_half_of_the_slots() -> None:
    table = ConnectionSlots(BrokerLimits(1024, 256, 64), owner=OWNER, total=16)
    assert (table.total, table.per_peer, table.reserved) == (16, 16, 8)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sock_diag is Linux's")
def test_a_local_connection_is_named_by_its_users_id() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, _peer = server.accept()
        names = PeerNames()
        try:
            name = names.name(accepted.getpeername(), accepted.getsockname())
        finally:
            names.close()
            accepted.close()
            client.close()
    assert name == f"uid {os.getuid()}"


def test_without_the_kernels_answer_a_peer_is_named_by_its_address() -> None:
    names = PeerNames()
    names._usable = False  # a platform or sandbox without sock_diag
    assert names.name(("127.0.0.2", 40000), ("127.0.0.1", 8000)) == "address 127.0.0.2"
    assert names.name(None, None) == "address ?"


def test_without_peers_named_by_user_no_slot_is_held_back() -> None:
    table = ConnectionSlots(BrokerLimits(8, 8, 4), owner=None)
    everyone = admit(table, "address 127.0.0.1", 8)
    assert table.reserved == 0
    assert not any(sock.aborted for sock in everyone)
