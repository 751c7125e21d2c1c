"""Running the memory service: uvicorn with the guarded protocol, in the foreground or a thread.

``serve`` is what ``active-memory server serve`` runs. :class:`RunningService` starts the same
server on an already bound socket in a thread of its own, for tests, benchmarks and hosts that
embed the service; ``url`` is where it listens.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from active_memory.daemon_threads import start_serving
from active_memory.errors import ConfigError
from active_memory.server.app import DEFAULT_SERVICE_LIMITS, MemoryService, ServiceLimits
from active_memory.server.protocol import guarded_protocol
from active_memory.store.postgres.session import open_pool
from active_memory.store.results import DEFAULT_LIMITS, StoreLimits

__all__ = ["RunningService", "ServeOptions", "build_service", "serve"]

_MAX_HEAD_BYTES = 16 * 1024


@dataclass(frozen=True, slots=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 8765
    tls_cert: Path | None = None
    tls_key: Path | None = None
    limits: ServiceLimits = DEFAULT_SERVICE_LIMITS
    pool_size: int = 16
    max_connections: int = 256
    max_connections_per_client: int = 32
    keep_alive_s: float = 5.0


def build_service(
    url: str,
    *,
    pool_size: int = 16,
    limits: ServiceLimits = DEFAULT_SERVICE_LIMITS,
    store_limits: StoreLimits = DEFAULT_LIMITS,
) -> MemoryService:
    return MemoryService(
        url, open_pool(url, max_size=pool_size), limits=limits, store_limits=store_limits
    )


def _check(options: ServeOptions) -> None:
    if (options.tls_cert is None) != (options.tls_key is None):
        raise ConfigError("--tls-cert/--tls-key", "give both the certificate and its key, or none")


def _config(service: MemoryService, options: ServeOptions) -> uvicorn.Config:
    _check(options)
    return uvicorn.Config(
        service.app(),
        host=options.host,
        port=options.port,
        http=guarded_protocol(
            service.limits.request_timeout_s,
            max_connections=options.max_connections,
            max_per_client=options.max_connections_per_client,
            max_head_bytes=_MAX_HEAD_BYTES,
        ),
        # uvloop when it is installed (the ``server`` extra installs it), else asyncio's loop:
        # the service's event loop spends about a fifth less CPU on it.
        loop="auto",
        ws="none",
        lifespan="off",
        timeout_keep_alive=int(options.keep_alive_s),
        # The protocol caps connections itself (answering in JSON); uvicorn's cap stays off.
        limit_concurrency=None,
        ssl_certfile=None if options.tls_cert is None else str(options.tls_cert),
        ssl_keyfile=None if options.tls_key is None else str(options.tls_key),
        log_level="warning",
        access_log=False,
        server_header=False,
    )


def serve(url: str, options: ServeOptions, announce: Callable[[str], None] | None = None) -> None:
    """Serve until interrupted (uvicorn handles SIGINT and SIGTERM); ``announce`` is told the
    URL once the database answered, before listening starts."""
    _check(options)
    service = build_service(url, pool_size=options.pool_size, limits=options.limits)
    try:
        config = _config(service, options)
        if announce is not None:
            scheme = "https" if options.tls_cert is not None else "http"
            announce(f"{scheme}://{options.host}:{options.port}")
        uvicorn.Server(config).run()
    finally:
        service.close()


class RunningService:
    """The service on a loopback port of its own, served from a thread until ``stop``.

    The service's own limits apply (``build_service(limits=…)``); ``options`` give the
    address, TLS and connection settings."""

    def __init__(self, service: MemoryService, options: ServeOptions | None = None) -> None:
        options = options or ServeOptions(port=0)
        self.service = service
        # IPPROTO_TCP named explicitly: asyncio sets TCP_NODELAY on accepted connections only
        # for such sockets, and without it every answer waits out a delayed ACK (~40 ms).
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((options.host, options.port))
        host, port = self._socket.getsockname()[:2]
        scheme = "https" if options.tls_cert is not None else "http"
        self.url = f"{scheme}://{host}:{port}"
        self._server = uvicorn.Server(_config(service, options))
        self._thread = start_serving(self._server, self._socket, what="the memory service")

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        self._socket.close()

    def __enter__(self) -> RunningService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
