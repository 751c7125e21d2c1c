"""Running the browser: uvicorn on an already bound loopback socket, in a thread or in the
foreground. The URL with the one-time token is known once the socket is bound."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

import uvicorn

from active_memory.daemon_threads import start_serving
from active_memory.errors import ConfigError
from active_memory.ui.app import UiApp
from active_memory.ui.security import Sessions, check_loopback
from active_memory.ui.views import UiData

__all__ = ["UiServer"]


class UiServer:
    """The pages over ``data`` on ``host:port`` (loopback only; port 0 picks a free one).
    ``url`` is the address, ``login_url`` the one-time link that opens a session."""

    def __init__(self, data: UiData, *, host: str = "127.0.0.1", port: int = 0) -> None:
        host = check_loopback(host)  # "[::1]" comes back as "::1"
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._socket = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            self._socket.bind((host, port))
        except OSError as error:
            self._socket.close()
            raise ConfigError(
                "port", f"cannot listen on {host}:{port} ({error.strerror}); pick another --port"
            ) from None
        bound = self._socket.getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{bound}"
        self.sessions = Sessions()
        self.login_url = f"{self.url}/login?token={self.sessions.token}"
        app = UiApp(data, self.sessions, self.url).app()
        config = uvicorn.Config(
            app,
            ws="none",
            lifespan="off",
            log_level="warning",
            access_log=False,
            server_header=False,
            timeout_keep_alive=5,
            limit_concurrency=64,
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    def serve(self, announce: Callable[[str], None] | None = None) -> None:
        """Serve in the foreground until interrupted (uvicorn handles SIGINT and SIGTERM)."""
        if announce is not None:
            announce(self.login_url)
        try:
            self._server.run(sockets=[self._socket])
        finally:
            self._socket.close()

    def start(self) -> UiServer:
        """Serve from a thread of its own until :meth:`stop` (tests, embedding)."""
        self._thread = start_serving(self._server, self._socket, what="the browser's server")
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
        self._socket.close()

    def __enter__(self) -> UiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
