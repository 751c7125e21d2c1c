"""One setting picks the backend: a file path, a ``postgresql://`` URL, or the service's URL.

* a path (or ``None``: the default store path) opens a :class:`SqliteStore` there;
* ``postgresql://…`` opens a :class:`PostgresStore` for ``tenant`` (default:
  ``$ACTIVE_MEMORY_TENANT``; required: nothing picks an organization-wide store for a host that
  did not name its tenant);
* ``https://…`` (``http://`` only to a loopback address) opens a :class:`RemoteBackend` with
  ``token`` (default: ``$ACTIVE_MEMORY_SERVICE_TOKEN``); the service knows the tenant and the
  repository from the token.

Nothing is opened behind the host's back: the host calls this and passes the backend to
``open_run`` itself. A missing extra is named (``postgres``, ``remote``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from active_memory.errors import ConfigError

if TYPE_CHECKING:
    from active_memory.store.postgres import PostgresStore
    from active_memory.store.remote import RemoteBackend
    from active_memory.store.sqlite import SqliteStore

__all__ = ["SERVICE_TOKEN_ENV", "TENANT_ENV", "is_team_location", "open_backend"]

SERVICE_TOKEN_ENV = "ACTIVE_MEMORY_SERVICE_TOKEN"
TENANT_ENV = "ACTIVE_MEMORY_TENANT"
_TEAM_SCHEMES = ("postgresql://", "postgres://", "https://", "http://")


def is_team_location(location: str | os.PathLike[str] | None) -> bool:
    """Whether ``location`` names a team store (PostgreSQL or the service), not a file."""
    return location is not None and os.fspath(location).startswith(_TEAM_SCHEMES)


def _extra(extra: str, module: str) -> ConfigError:
    return ConfigError(
        "backend", f"needs {module}; install it with pip install 'active-memory[{extra}]'"
    )


def open_backend(
    location: str | os.PathLike[str] | None = None,
    *,
    tenant: str | None = None,
    token: str | None = None,
    read_only: bool = False,
) -> SqliteStore | PostgresStore | RemoteBackend:
    """The backend ``location`` names, opened; ConfigError for a setting that names none.
    ``read_only`` opens a store file read-only (a team store's access is its role's)."""
    text = None if location is None else os.fspath(location)
    if text is not None and text.startswith(("postgresql://", "postgres://")):
        tenant = tenant if tenant is not None else os.environ.get(TENANT_ENV) or None
        if tenant is None:
            raise ConfigError(
                "tenant",
                "a postgresql:// backend serves many tenants; name this host's tenant "
                f"(tenant=, or set {TENANT_ENV})",
            )
        try:
            from active_memory.store.postgres import PostgresStore
        except ImportError:
            raise _extra("postgres", "psycopg and psycopg_pool") from None
        return PostgresStore(text, tenant=tenant)
    if text is not None and text.startswith(("https://", "http://")):
        chosen = token if token is not None else os.environ.get(SERVICE_TOKEN_ENV)
        if not chosen:
            raise ConfigError(
                "token", f"the memory service needs a token; pass token= or set {SERVICE_TOKEN_ENV}"
            )
        try:
            from active_memory.store.remote import RemoteBackend
        except ImportError:
            raise _extra("remote", "httpx") from None
        return RemoteBackend(text, token=chosen)
    if text is not None and "://" in text:
        raise ConfigError(
            "backend",
            f"{text!r} is neither a store file, a postgresql:// URL nor an https:// service URL",
        )
    from active_memory.store.sqlite import SqliteStore

    return SqliteStore(text, read_only=read_only)
