"""The memory service: snapshot and publication over HTTP for hosts on other machines.

Needs the ``server`` extra (``pip install 'active-memory[server]'``). Credentials, the wire
format and the limits are described in ``credentials.py``, ``store/wire.py`` and ``app.py``;
``docs/team.md`` shows how to run it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from active_memory import _lazy_attribute

if TYPE_CHECKING:
    from active_memory.server.app import (
        MemoryService as MemoryService,
        ServiceLimits as ServiceLimits,
    )
    from active_memory.server.credentials import (
        Credential as Credential,
        CredentialStore as CredentialStore,
        IssuedToken as IssuedToken,
    )
    from active_memory.server.run import (
        RunningService as RunningService,
        ServeOptions as ServeOptions,
        build_service as build_service,
        serve as serve,
    )

# public name -> its module, imported on first use (PEP 562): ``server token list`` imports
# credentials.py alone, and this package's import must not drag in the HTTP service (starlette,
# uvicorn, the screening of held cards) that only ``server serve`` runs.
_EXPORTS: dict[str, str] = {
    "MemoryService": "active_memory.server.app",
    "ServiceLimits": "active_memory.server.app",
    "Credential": "active_memory.server.credentials",
    "CredentialStore": "active_memory.server.credentials",
    "IssuedToken": "active_memory.server.credentials",
    "RunningService": "active_memory.server.run",
    "ServeOptions": "active_memory.server.run",
    "build_service": "active_memory.server.run",
    "serve": "active_memory.server.run",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    return _lazy_attribute(globals(), _EXPORTS, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
