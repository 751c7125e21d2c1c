"""Who may hold the broker's connections: per-peer limits, a reserve for the run's own user, and
which unproven socket makes way for a newcomer.

A peer is the local user behind a connection. On Linux the kernel names the owner of the
client's socket (one ``sock_diag`` query over netlink per connection, about 10 µs); elsewhere
the peer is the client's address, every local process is then one peer at ``127.0.0.1``, and no
slots are reserved. Where peers are named by user, the broker's own user is the *owner*: the
only user that can read the run's token (the ticket is a private file, the environment is the
harness's), so the only one whose helper calls can be legitimate. (Should netlink stop answering
mid-run, later connections are named by address and share the slots outside the reserve.)

The limits (:class:`BrokerLimits`):

* ``max_connections`` in all, lowered to a quarter of the process's descriptor limit;
* ``max_per_peer`` from one peer: a newcomer over it displaces that peer's own oldest unproven
  connection (refused only when all of them are busy with authorised calls);
* ``reserved_slots`` of those (at most half of them) that only the owner may take: other users
  together hold at most ``max_connections - reserved_slots``, a newcomer of theirs displaces a
  connection of the peer holding the most, and never one of the owner's. So a flood from other
  users, however many, cannot fill the slots the helper's calls need.

A connection is *silent* until its first byte is read, then *waiting* until it proves the token
(*busy*), and waiting again while it idles between HTTP keep-alive requests. The victim is the
oldest silent connection that has no bytes waiting to be read, then the oldest other silent one,
then the oldest waiting one: a helper sends its whole frame as it connects, so its bytes are
already there when a burst of newer sockets would otherwise displace it before the loop reads
them. Busy connections are never displaced.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from active_memory.errors import ConfigError

__all__ = [
    "MAX_CONNECTIONS",
    "MAX_PER_PEER",
    "RESERVED_SLOTS",
    "BrokerLimits",
    "ConnectionSlots",
    "Held",
    "PeerNames",
    "descriptor_cap",
    "owner_peer",
]

MAX_CONNECTIONS = 1024
MAX_PER_PEER = 256
RESERVED_SLOTS = 64

# Linux sock_diag (linux/sock_diag.h, linux/inet_diag.h).
_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST = 1
_NLMSG_ERROR = 2
_ALL_STATES = 0xFFFFFFFF
_NO_COOKIE = 0xFFFFFFFF
_HEADER = struct.Struct("=IHHII")  # nlmsghdr: length, type, flags, sequence, port id
_REQUEST = struct.Struct("=BBBBI")  # inet_diag_req_v2: family, protocol, ext, pad, states
_MESSAGE_UID = 4 + 48 + 12  # inet_diag_msg: four bytes, the socket id, three counters, then uid
_NETLINK_TIMEOUT_S = 0.05


@dataclass(frozen=True, slots=True)
class BrokerLimits:
    """How many connections the broker holds, from one peer, and for its own user alone."""

    max_connections: int = MAX_CONNECTIONS
    max_per_peer: int = MAX_PER_PEER
    reserved_slots: int = RESERVED_SLOTS

    def __post_init__(self) -> None:
        if self.max_connections < 1:
            raise ConfigError(
                "broker.max_connections", f"{self.max_connections!r} is below 1; use at least 1"
            )
        if self.max_per_peer < 1:
            raise ConfigError(
                "broker.max_per_peer", f"{self.max_per_peer!r} is below 1; use at least 1"
            )
        if self.reserved_slots < 0:
            raise ConfigError(
                "broker.reserved_slots", f"{self.reserved_slots!r} is below 0; use 0 for none"
            )


def descriptor_cap(requested: int) -> int:
    """``requested``, lowered to a quarter of the process's file-descriptor limit."""
    try:
        import resource
    except ImportError:  # Windows: no such limit to respect
        return requested
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return requested
    return max(8, min(requested, soft // 4))


def owner_peer() -> str | None:
    """The peer name of this process's own user, when peers are named by user."""
    getuid = getattr(os, "getuid", None)
    return f"uid {getuid()}" if getuid is not None else None


class PeerNames:
    """Names the local user behind a connection, else its address; used on the broker's loop."""

    def __init__(self) -> None:
        self._netlink: socket.socket | None = None
        self._usable = hasattr(socket, "AF_NETLINK")
        self._sequence = 0

    @property
    def by_user(self) -> bool:
        """Whether peers are named by user (else by address, and no peer is the owner)."""
        return self._usable

    def name(self, peer: object, local: object) -> str:
        """``uid N`` for the client socket ``peer`` → ``local``, else ``address A``."""
        if not (isinstance(peer, tuple) and peer and isinstance(local, tuple) and local):
            return "address ?"
        uid = self._uid(peer, local) if self._usable else None
        return f"uid {uid}" if uid is not None else f"address {peer[0]}"

    def _uid(self, peer: tuple[object, ...], local: tuple[object, ...]) -> int | None:
        try:
            family = socket.AF_INET6 if ":" in str(peer[0]) else socket.AF_INET
            # Addresses are zero-padded to the 16 bytes the kernel reads for either family.
            source = socket.inet_pton(family, str(peer[0])).ljust(16, b"\0")
            destination = socket.inet_pton(family, str(local[0])).ljust(16, b"\0")
            ports = struct.pack("!HH", int(str(peer[1])), int(str(local[1])))
        except (OSError, ValueError, IndexError):
            return None
        self._sequence = (self._sequence + 1) & 0xFFFFFFFF
        sockid = ports + source + destination + struct.pack("=III", 0, _NO_COOKIE, _NO_COOKIE)
        body = _REQUEST.pack(family, socket.IPPROTO_TCP, 0, 0, _ALL_STATES) + sockid
        header = _HEADER.pack(_HEADER.size + len(body), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST,
                              self._sequence, 0)  # fmt: skip
        try:
            netlink = self._socket()
            netlink.sendto(header + body, (0, 0))
            for _ in range(4):  # answers to queries that timed out before are skipped
                data = netlink.recv(8192)
                _, kind, _, sequence, _ = _HEADER.unpack_from(data)
                if sequence != self._sequence:
                    continue
                if kind != _SOCK_DIAG_BY_FAMILY or len(data) < _HEADER.size + _MESSAGE_UID + 4:
                    return None  # NLMSG_ERROR: the client's socket is already gone
                uid: int = struct.unpack_from("=I", data, _HEADER.size + _MESSAGE_UID)[0]
                return uid
        except OSError:
            # No netlink here (a sandbox, a kernel without inet_diag): name peers by address.
            self._usable = False
            self.close()
        return None

    def _socket(self) -> socket.socket:
        if self._netlink is None:
            netlink = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG)
            netlink.settimeout(_NETLINK_TIMEOUT_S)
            self._netlink = netlink
        return self._netlink

    def close(self) -> None:
        if self._netlink is not None:
            with contextlib.suppress(OSError):
                self._netlink.close()
            self._netlink = None


@dataclass(eq=False, slots=True)
class Held:
    """One accepted connection: its peer, how to drop it, and whether bytes are waiting."""

    peer: str
    abort: Callable[[], None]
    pending: Callable[[], bool] = field(default=lambda: False)


class _Peer:
    __slots__ = ("held", "silent", "waiting")

    def __init__(self) -> None:
        self.held = 0
        self.silent: OrderedDict[Held, None] = OrderedDict()
        self.waiting: OrderedDict[Held, None] = OrderedDict()


class ConnectionSlots:
    """Connection accounting on the broker's loop (see the module docstring for the policy)."""

    def __init__(
        self, limits: BrokerLimits, *, owner: str | None, total: int | None = None
    ) -> None:
        self.total = total if total is not None else limits.max_connections
        self.per_peer = min(limits.max_per_peer, self.total)
        # Without an owner (peers named by address) nobody could take a reserve: no slots held back.
        self.reserved = min(limits.reserved_slots, self.total // 2) if owner is not None else 0
        self.owner = owner
        self.held: dict[Held, None] = {}
        self.others = 0  # held by peers other than the owner
        self.peers: dict[str, _Peer] = {}
        self.evicted = self.refused = 0

    def stats(self) -> dict[str, int]:
        return {"open": len(self.held), "evicted": self.evicted, "refused": self.refused,
                "peers": len(self.peers)}  # fmt: skip

    def admit(self, connection: Held) -> bool:
        peer = connection.peer
        own = self._own(peer)
        group = self.peers.get(peer)
        if group is not None and group.held >= self.per_peer and not self._displace(group):
            return self._refuse()
        if self._full(own) and not self._make_room(own, peer):
            return self._refuse()
        group = self.peers.setdefault(peer, _Peer())
        group.held += 1
        group.silent[connection] = None
        self.held[connection] = None
        self.others += not own
        return True

    def _own(self, peer: str) -> bool:
        return self.owner is not None and peer == self.owner

    def _refuse(self) -> bool:
        self.refused += 1
        return False

    def _full(self, own: bool) -> bool:
        return len(self.held) >= self.total or (
            not own and self.others >= self.total - self.reserved
        )

    def _make_room(self, own: bool, peer: str) -> bool:
        """One slot freed: other users' connections first, the biggest holder's; the owner's
        own only for the owner."""
        holders = sorted(
            (group for name, group in self.peers.items() if name != self.owner),
            key=lambda group: group.held,
            reverse=True,
        )
        if any(self._displace(group) for group in holders):
            return True
        mine = self.peers.get(peer)
        return own and mine is not None and self._displace(mine)

    def _displace(self, group: _Peer) -> bool:
        victim = None
        heard: list[Held] = []
        for connection in group.silent:
            if not connection.pending():
                victim = connection
                break
            heard.append(connection)  # its request is arriving: the loop has not read it yet
        for connection in heard:
            del group.silent[connection]
            group.waiting[connection] = None
        if victim is None:
            victim = next(iter(group.silent), None) or next(iter(group.waiting), None)
        if victim is None:
            return False  # every connection of this peer is busy with an authorised call
        self.release(victim)
        victim.abort()
        self.evicted += 1
        return True

    def heard(self, connection: Held) -> None:
        """The connection sent its first bytes: displaced only after every silent one."""
        group = self.peers.get(connection.peer)
        if group is not None and connection in group.silent:
            del group.silent[connection]
            group.waiting[connection] = None

    def busy(self, connection: Held) -> None:
        group = self.peers.get(connection.peer)
        if group is not None:
            group.silent.pop(connection, None)
            group.waiting.pop(connection, None)

    def idle(self, connection: Held) -> None:
        group = self.peers.get(connection.peer)
        if group is not None and connection in self.held:
            group.waiting[connection] = None
            group.waiting.move_to_end(connection)

    def release(self, connection: Held) -> None:
        if connection not in self.held:
            return  # displaced before its handler finished: released then
        del self.held[connection]
        group = self.peers[connection.peer]
        group.silent.pop(connection, None)
        group.waiting.pop(connection, None)
        group.held -= 1
        if not group.held:
            del self.peers[connection.peer]
        self.others -= not self._own(connection.peer)
