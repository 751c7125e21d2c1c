"""The state file a running ``active-memory serve`` leaves, and finding the live broker by it.

Apart from :mod:`active_memory.hooks.standalone` (the broker itself) so that ``hooks install``,
which only asks whether a broker already serves the workspace, does not load the broker's
asyncio server, the recall index and the runtime configuration to ask it.
"""

from __future__ import annotations

import hashlib
import os
import socket
from pathlib import Path

from active_memory.bounded_input import read_bytes
from active_memory.errors import InputRefused, LessonValidationError
from active_memory.hooks.ticket import read_ticket
from active_memory.models.base import Model

__all__ = ["ServeState", "find_live", "serve_paths"]

_MAX_STATE_BYTES = 64 * 1024  # a pid, a port, two paths


class ServeState(Model):
    """The broker's state file (``model_dump(mode="json")``). Only this module reads it back
    (:func:`find_live`, for ``serve`` and ``hooks install``); the stdlib hook helper reads the
    ticket, never this file, so the state may be a model."""

    pid: int
    url: str
    ticket: str
    workspace: str
    repository: str
    store: str
    generation: int


def serve_paths(state_dir: Path, workspace: str | os.PathLike[str]) -> tuple[Path, Path]:
    """The state and ticket files of the broker serving ``workspace``."""
    real = os.path.realpath(os.fspath(workspace))
    name = hashlib.sha256(real.encode("utf-8")).hexdigest()[:16]
    return state_dir / f"{name}.json", state_dir / f"{name}.ticket"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _answers(url: str, token: str) -> bool:
    host, _, port = url.split("//", 1)[-1].split("/", 1)[0].rpartition(":")
    request = (
        f"GET /health HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
        "Connection: close\r\n\r\n"
    ).encode("ascii")
    try:
        with socket.create_connection((host, int(port)), timeout=0.5) as sock:
            sock.sendall(request)
            return sock.recv(64).startswith(b"HTTP/1.1 200")
    except (OSError, ValueError):
        return False


def find_live(state_dir: Path, workspace: str | os.PathLike[str]) -> ServeState | None:
    """The running broker for ``workspace``, if its process is alive and it answers."""
    state_path, _ = serve_paths(state_dir, workspace)
    try:
        data = read_bytes(state_path, what=repr(str(state_path)), max_bytes=_MAX_STATE_BYTES)
        state = ServeState.parse_json(data)
        url, token = read_ticket(state.ticket)
    except (OSError, ValueError, LessonValidationError, InputRefused):
        return None
    if not _alive(state.pid) or not _answers(url, token):
        return None
    return state
