"""The backends the admin conformance tests run on: SQLite, PostgreSQL and the memory service.

``AdminBackends.open()`` gives a fresh, empty store each call: a new SQLite file, a new
PostgreSQL tenant, or a new tenant of a service on a loopback port (reached through a
``RemoteBackend`` with a token for ``factories.REPOSITORY``). ``location()`` says how the CLI
names the same store (``--store``), with the environment it needs.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

from active_memory.server import RunningService
from active_memory.store.admin_backend import AdminBackend
from active_memory.store.postgres import PostgresStore
from active_memory.store.remote import RemoteBackend
from active_memory.store.select import SERVICE_TOKEN_ENV, TENANT_ENV
from active_memory.store.sqlite import SqliteStore
from factories import REPOSITORY

__all__ = ["ADMIN_KINDS", "AdminBackends", "Opened"]

ADMIN_KINDS = ("sqlite", "postgres", "service")
_tenants = itertools.count(1)


@dataclass
class Opened:
    """One fresh store: the backend, and ``--store`` with the environment naming it."""

    backend: AdminBackend
    location: str
    env: dict[str, str] = field(default_factory=dict)


class AdminBackends:
    def __init__(
        self,
        kind: str,
        root: Path,
        database_url: str | None,
        service: RunningService | None,
    ) -> None:
        self.kind = kind
        self._root = root
        self._url = database_url
        self._service = service
        self._opened: list[AdminBackend] = []

    def open(self, repository: str = REPOSITORY) -> Opened:
        number = next(_tenants)
        if self.kind == "sqlite":
            path = self._root / f"store{number}" / "lessons.sqlite3"
            opened = Opened(SqliteStore(path), str(path))
        elif self.kind == "postgres":
            assert self._url is not None
            tenant = f"adm{number}"
            store = PostgresStore(self._url, tenant=tenant, pool_size=2)
            opened = Opened(store, self._url, {TENANT_ENV: tenant})
        else:
            assert self._service is not None
            # An administrator's token: it may approve and reject held proposals.
            issued = self._service.service.credentials.create(
                tenant=f"svcadm{number}", repository=repository, review=True
            )
            remote = RemoteBackend(self._service.url, token=issued.token, timeout_s=10)
            opened = Opened(remote, self._service.url, {SERVICE_TOKEN_ENV: issued.token})
        self._opened.append(opened.backend)
        return opened

    def close(self) -> None:
        for backend in self._opened:
            backend.close()
