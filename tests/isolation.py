"""What keeps a test away from the developer's machine: its state, its settings, the network.

:func:`isolate_environment` points every state directory the package reads (its own
``ACTIVE_MEMORY_STATE_DIR``, ``XDG_STATE_HOME``, ``HOME``, and the zeroshot CLI's
``ZEROSHOT_STATE_DIR``, read only to recognise that store and refuse it) at temporary folders
and removes the settings a developer's shell may carry (provider credentials, a running
broker's ``ACTIVE_MEMORY_*``), so no test reads or writes a user's lesson store. A ``claude``
that refuses comes first on PATH: the fixture runs inherit the claude-code lane, which a real
``claude`` would serve on the developer's own login (tests give it ``tests/fake_claude.py``).

:class:`NetworkGuard` refuses any connection outside loopback (127.0.0.0/8 and ::1; Unix
sockets pass) before the real call, and any name resolution other than ``localhost`` and IP
literals, so nothing leaves the machine: not a SYN, not a DNS query. Code under test may swallow
the refusal, so every attempt is also recorded and fails the test at teardown.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from active_memory.harnesses import HARNESSES
from active_memory.store.paths import state_dir_variable

__all__ = ["PROVIDER_ENV_PREFIXES", "NetworkBlocked", "NetworkGuard", "isolate_environment"]

PROVIDER_ENV_PREFIXES = ("ANTHROPIC_", "OPENAI_", "AZURE_", "AWS_", "GOOGLE_", "CLOUD_ML_")
# A developer running the tests inside a recorded run has the hook's variables set; one running
# them from inside a harness has its home (each row of the harness table) and markers set.
PACKAGE_ENV_PREFIXES = ("ACTIVE_MEMORY_",)
HARNESS_ENV = (*(row.home_variable for row in HARNESSES), "COPILOT_CLI", "COPILOT_PROJECT_DIR")
_INET = (socket.AF_INET, socket.AF_INET6)


def isolate_environment(monkeypatch: pytest.MonkeyPatch, root: Path) -> dict[str, Path]:
    """Scrub the developer's settings and point the state directories under ``root``."""
    import os

    for name in list(os.environ):
        if name.startswith(PROVIDER_ENV_PREFIXES + PACKAGE_ENV_PREFIXES) or name in HARNESS_ENV:
            monkeypatch.delenv(name)
    folders = {
        "HOME": root / "home",
        "XDG_STATE_HOME": root / "xdg-state",
        state_dir_variable(): root / "state",
        "ZEROSHOT_STATE_DIR": root / "zeroshot-state",
    }
    for variable, folder in folders.items():
        folder.mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv(variable, str(folder))
    refusing = root / "bin"
    refusing.mkdir(parents=True, exist_ok=True)
    (refusing / "claude").write_text(_REFUSING_CLAUDE)
    (refusing / "claude").chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join((str(refusing), os.environ.get("PATH", ""))))
    return folders


# Its --version is older than any the claude-code lane accepts, so no session ever starts.
_REFUSING_CLAUDE = """#!/bin/sh
echo "0.0.0 (a test reached for the real claude: give it tests/fake_claude.py)"
exit 1
"""


class NetworkBlocked(RuntimeError):
    """A test tried to reach beyond loopback. A RuntimeError, not an OSError, so a retry loop
    that waits out connection errors does not mistake it for a flaky network."""


def _loopback_host(host: object) -> bool:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def _literal(host: object) -> bool:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    try:
        ipaddress.ip_address(str(host).split("%", 1)[0])
    except ValueError:
        return False
    return True


class NetworkGuard:
    """Patches the socket module for one test; ``attempts`` lists what it refused."""

    def __init__(self) -> None:
        self.attempts: list[str] = []

    def take(self) -> list[str]:
        """The refused attempts, forgotten: for a test that provokes one on purpose."""
        taken, self.attempts = self.attempts, []
        return taken

    def _refuse(self, what: str) -> NetworkBlocked:
        self.attempts.append(what)
        return NetworkBlocked(f"tests must not use the network; refused {what}")

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        guard = self
        connect: Callable[..., Any] = socket.socket.connect
        connect_ex: Callable[..., Any] = socket.socket.connect_ex
        create_connection: Callable[..., Any] = socket.create_connection
        getaddrinfo: Callable[..., Any] = socket.getaddrinfo

        def check(sock: socket.socket, address: Any) -> None:
            if sock.family in _INET and not _loopback_host(address[0]):
                raise guard._refuse(f"a connection to {address!r}")

        def guarded_connect(sock: socket.socket, address: Any) -> None:
            check(sock, address)
            connect(sock, address)

        def guarded_connect_ex(sock: socket.socket, address: Any) -> int:
            check(sock, address)
            return int(connect_ex(sock, address))

        def guarded_create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
            if not _loopback_host(address[0]):
                raise guard._refuse(f"a connection to {address!r}")
            return create_connection(address, *args, **kwargs)  # type: ignore[no-any-return]

        def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            if host is not None and not _loopback_host(host) and not _literal(host):
                raise guard._refuse(f"resolving {host!r}")
            return getaddrinfo(host, *args, **kwargs)

        monkeypatch.setattr(socket.socket, "connect", guarded_connect)
        monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)
        monkeypatch.setattr(socket, "create_connection", guarded_create_connection)
        monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
