"""The memory service: snapshot and publication over HTTP for hosts on other machines.

Needs the ``server`` extra (``pip install 'active-memory[server]'``). Credentials, the wire
format and the limits are described in ``credentials.py``, ``store/wire.py`` and ``app.py``;
``docs/team.md`` shows how to run it.
"""

from __future__ import annotations

from active_memory.server.app import MemoryService, ServiceLimits
from active_memory.server.credentials import Credential, CredentialStore, IssuedToken
from active_memory.server.run import RunningService, ServeOptions, build_service, serve

__all__ = [
    "Credential",
    "CredentialStore",
    "IssuedToken",
    "MemoryService",
    "RunningService",
    "ServeOptions",
    "ServiceLimits",
    "build_service",
    "serve",
]
