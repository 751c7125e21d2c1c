"""A long-lived broker for one workspace, for a plain Claude Code / Codex / Copilot / pi user.

``active-memory serve`` keeps a recall index of the workspace's repository lessons, reloads it
when the store's generation changes, and answers hooks from every conversation on that machine.
It leaves two private files (mode 0600, in a 0700 directory beside the store):

* ``<id>.json``: the state (pid, url, workspace, repository, store, ticket path);
* ``<id>.ticket``: a curl configuration with the url and token, read by ``curl -K`` hooks, the
  Python helper and the pi extension.

``<id>`` is derived from the workspace's real path. Every start draws a new token, and ``close``
removes both files, so a hook that outlives ``serve`` finds no ticket (it answers empty, or reads
the store itself) instead of handing a token to whatever binds the port next. Command hooks
written by ``active-memory hooks install`` read the ticket on every call, so they follow a
restart; a restart reuses the previous port when a ticket from a crashed run still names it.

Exposures are kept on disk, in the private file per conversation beside the store that the
helper's store fallback reads and appends too (:mod:`active_memory.hooks.exposure_files`): a
restarted ``serve`` does not deliver a card again to a conversation it already reached, nor a
card the fallback delivered while no broker answered (or the other way round).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from pathlib import Path

from active_memory.errors import RecallError
from active_memory.hooks.dispatch import broker_handler
from active_memory.hooks.exposure_files import ExposureFiles
from active_memory.hooks.private_dir import private_dir
from active_memory.hooks.serve_state import ServeState, find_live, serve_paths
from active_memory.hooks.ticket import read_ticket, remove_ticket, write_ticket
from active_memory.models.config import ActiveMemoryConfig
from active_memory.private_files import write_private_text
from active_memory.recall.broker import BrokerLimits, Handler, RecallBroker
from active_memory.recall.exposure import ExposureLedger
from active_memory.recall.index import RecallIndex
from active_memory.recall.recall_session import RecallSession
from active_memory.recall.signals import WorkspaceRoot
from active_memory.repository import repository_key
from active_memory.store.backend import ActiveMemoryBackend, RunIdentity, SnapshotRequest

__all__ = ["ServeState", "Server", "find_live", "serve_paths"]

_log = logging.getLogger("active_memory.hooks.standalone")


def _listen(handler: Handler, ports: list[int], limits: BrokerLimits | None) -> RecallBroker:
    """Start on the first port that binds (the previous one first), with a new token."""
    failure = RecallError("no port to listen on")
    for port in dict.fromkeys(ports):
        try:
            return RecallBroker(handler, port=port, limits=limits).start()
        except RecallError as exc:
            failure = exc
    raise failure


class Server:
    """Serves one workspace's lessons from ``backend`` until closed; reloads on new generations."""

    def __init__(
        self,
        backend: ActiveMemoryBackend,
        workspace: str | os.PathLike[str],
        *,
        state_dir: Path,
        store: str,
        repository: str | None = None,
        config: ActiveMemoryConfig | None = None,
        port: int | None = None,
        poll_s: float = 1.0,
        limits: BrokerLimits | None = None,
    ) -> None:
        self.backend = backend
        self.workspace = os.path.abspath(os.fspath(workspace))
        self.repository = repository or repository_key(self.workspace)
        self.config = config or ActiveMemoryConfig(graph=False)
        self.state_path, self.ticket_path = serve_paths(state_dir, self.workspace)
        self._state_dir = state_dir
        self._store = store
        self._port = port
        self._limits = limits
        self._poll_s = poll_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._broker: RecallBroker | None = None
        self.generation = -1
        self.session: RecallSession | None = None

    def _index(self) -> RecallIndex:
        identity = RunIdentity("serve", repository=self.repository)
        snapshot = self.backend.snapshot(SnapshotRequest(identity, repository=True, graph=False))
        self.generation = snapshot.generation
        return RecallIndex(snapshot.lessons, repository=self.repository)

    def _previous_port(self) -> int:
        """The port a ticket left behind by a run that did not close names, else 0 (any)."""
        try:
            url, _ = read_ticket(self.ticket_path)
            return int(url.split("//", 1)[-1].split("/", 1)[0].rpartition(":")[2])
        except (OSError, ValueError):
            return 0

    def start(self) -> ServeState:
        private_dir(self._state_dir)
        live = find_live(self._state_dir, self.workspace)
        if live is not None and live.pid != os.getpid():
            raise RecallError(
                f"a broker (pid {live.pid}) already serves {self.workspace!r} at {live.url}; "
                "stop it first"
            )
        # One ledger file per conversation beside the store, shared with the store fallback.
        ledger = ExposureLedger(store=ExposureFiles(self._store, self.workspace))
        self.session = RecallSession(
            self._index(), WorkspaceRoot.at(self.workspace), self.config, ledger=ledger
        )
        handler = broker_handler(self.session, default_node="standalone", workspace_only=True)
        ports = [self._port] if self._port is not None else [self._previous_port(), 0]
        self._broker = _listen(handler, ports, self._limits)
        write_ticket(self.ticket_path, self._broker.url, self._broker.token)
        state = self.state()
        write_private_text(
            self.state_path, json.dumps(state.model_dump(mode="json"), indent=2) + "\n"
        )
        self._thread = threading.Thread(target=self._watch, name="active-memory-reload",
                                        daemon=True)  # fmt: skip
        self._thread.start()
        return state

    def state(self) -> ServeState:
        if self._broker is None:
            raise RecallError("the server is not running; call start() first")
        return ServeState(
            pid=os.getpid(),
            url=self._broker.url,
            ticket=str(self.ticket_path),
            workspace=self.workspace,
            repository=self.repository,
            store=self._store,
            generation=self.generation,
        )

    def reload_if_changed(self) -> bool:
        """Swap in a fresh index when the store's generation moved; True when it did."""
        if self.session is None or self.backend.generation() == self.generation:
            return False
        self.session.replace_index(self._index())
        _log.info("reloaded lessons at store generation %d", self.generation)
        return True

    def _watch(self) -> None:
        while not self._stop.wait(self._poll_s):
            try:
                self.reload_if_changed()
            except Exception:
                # Keep serving the last complete snapshot; a later poll may succeed.
                _log.exception("could not reload lessons; still serving generation %d",
                               self.generation)  # fmt: skip

    def wait(self, timeout: float | None = None) -> bool:
        """Block until ``close`` (from another thread or a signal handler); True once closed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._stop.is_set():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            self._stop.wait(0.5 if left is None else min(left, 0.5))
        return True

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._broker is not None:
            # The ticket goes first: no hook reads this token once the port is free.
            remove_ticket(self.ticket_path, self._broker.token)
            self._broker.close()
            self._broker = None
        with contextlib.suppress(OSError):
            self.state_path.unlink()

    def __enter__(self) -> Server:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
