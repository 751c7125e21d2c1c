"""The in-process host API: open a run over a frozen snapshot, serve recall, keep the manifest.

::

    with open_run(identity, runtime_config, backend, workspace) as run:
        env = run.hook_env(node_id, conversation_id)        # for the harness process
        text = run.graph_guidance(node_id, conversation_id)  # append after the node's prompt
        ...                                                  # tool calls reach the broker
    run.deliveries, run.receipts                             # the manifest for the postmortem

The snapshot is taken once, when the run opens, honouring the ``activeMemory`` scope opt-outs;
lessons published while the run executes are for later runs. The broker starts on the first
``hook_env`` call and stops on ``close``.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from dataclasses import replace
from pathlib import Path

from active_memory.config import ActiveMemoryConfig, RuntimeConfig
from active_memory.errors import RecallError
from active_memory.hooks.dispatch import broker_handler
from active_memory.hooks.ticket import write_ticket
from active_memory.lessons import Lesson
from active_memory.recall.broker import RecallBroker
from active_memory.recall.index import RecallIndex
from active_memory.recall.session import Caller, RecallSession
from active_memory.recall.signals import WorkspaceRoot
from active_memory.recall.workspace import repository_key
from active_memory.runs import Delivery, ToolReceipt
from active_memory.store.backend import ActiveMemoryBackend, RunIdentity, SnapshotRequest

__all__ = ["ENV_BROKER", "ENV_TOKEN", "ActiveRun", "open_run"]

ENV_BROKER = "ACTIVE_MEMORY_BROKER"
ENV_TOKEN = "ACTIVE_MEMORY_TOKEN"
ENV_NODE = "ACTIVE_MEMORY_NODE"
ENV_CONVERSATION = "ACTIVE_MEMORY_CONVERSATION"
ENV_EXECUTION = "ACTIVE_MEMORY_EXECUTION"
ENV_TICKET = "ACTIVE_MEMORY_TICKET"


class ActiveRun:
    """One run's recall: frozen index, exposure ledger, tool receipts and (lazily) its broker."""

    def __init__(
        self,
        identity: RunIdentity,
        config: ActiveMemoryConfig,
        session: RecallSession,
        *,
        generation: int,
    ) -> None:
        self.identity = identity
        self.config = config
        self.session = session
        self.generation = generation
        self._broker: RecallBroker | None = None
        self._tickets: Path | None = None
        self._ticket_count = 0
        self._lock = threading.Lock()
        self._closed = False

    def broker(self) -> RecallBroker:
        """The run's broker, started on first use."""
        with self._lock:
            if self._closed:
                raise RecallError("this run is closed; open a new run to serve recall")
            if self._broker is None:
                handler = broker_handler(self.session, default_node="unknown")
                self._broker = RecallBroker(handler).start()
            return self._broker

    def hook_env(
        self, node_id: str, conversation_id: str, execution_id: str | None = None
    ) -> dict[str, str]:
        """Environment for a harness process: broker address, run token, ids and a ticket.

        Empty when active memory is disabled for this run (the harness needs no hooks then).
        """
        if not self.config.enabled:
            return {}
        broker = self.broker()
        host, port = broker.address
        with self._lock:
            if self._tickets is None:
                self._tickets = Path(tempfile.mkdtemp(prefix="active-memory-"))
            self._ticket_count += 1
            ticket = self._tickets / f"ticket-{self._ticket_count}.curlrc"
        ids = {"node": node_id, "conversation": conversation_id, "execution": execution_id}
        write_ticket(ticket, broker.url, broker.token, ids)
        env = {
            ENV_BROKER: f"{host}:{port}",
            ENV_TOKEN: broker.token,
            ENV_NODE: node_id,
            ENV_CONVERSATION: conversation_id,
            ENV_TICKET: str(ticket),
        }
        if execution_id:
            env[ENV_EXECUTION] = execution_id
        return env

    def graph_guidance(
        self,
        node_id: str,
        conversation_id: str,
        graph_hash: str | None = None,
        execution_id: str | None = None,
    ) -> str:
        """Framed graph lessons for one node invocation, to append after its authored prompt.

        Cards already given to this conversation are skipped; the rest count as delivered
        (channel ``prompt``) when this returns. Appending never changes the authored graph or
        its hash. Empty when graph memory is off or no lesson applies.
        """
        graph = graph_hash or self.identity.graph_hash
        if graph is None:
            return ""
        caller = Caller(node_id, conversation_id, execution_id)
        recall = self.session.guidance(graph, node_id, caller)
        if not recall.text:
            recall.release()
            return ""
        recall.commit()
        return recall.text

    @property
    def deliveries(self) -> tuple[Delivery, ...]:
        """The delivery manifest: every lesson revision handed to a conversation, in order."""
        return self.session.ledger.deliveries

    @property
    def receipts(self) -> tuple[ToolReceipt, ...]:
        """Tool receipts: the first and the latest of at most 512."""
        return self.session.receipts.snapshot()

    @property
    def receipts_dropped(self) -> int:
        return self.session.receipts.dropped

    def close(self) -> None:
        """Stop the broker and remove the tickets; the manifest stays readable."""
        with self._lock:
            self._closed = True
            broker, self._broker = self._broker, None
            tickets, self._tickets = self._tickets, None
        if broker is not None:
            broker.close()
        if tickets is not None:
            shutil.rmtree(tickets, ignore_errors=True)

    def __enter__(self) -> ActiveRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_run(
    identity: RunIdentity,
    runtime_config: RuntimeConfig,
    backend: ActiveMemoryBackend,
    workspace: str | Path,
) -> ActiveRun:
    """Freeze the run's snapshot and build its recall index.

    The repository key defaults to the workspace's (origin remote, else a local key). A failed
    snapshot raises :class:`~active_memory.errors.SnapshotError`; it never reads as no lessons.
    """
    config = runtime_config.active_memory
    if identity.repository is None:
        identity = replace(identity, repository=repository_key(workspace))
    lessons: tuple[Lesson, ...] = ()
    generation = 0
    if config.enabled:
        request = SnapshotRequest(identity, repository=config.repository, graph=config.graph)
        snapshot = backend.snapshot(request)
        lessons, generation = snapshot.lessons, snapshot.generation
    index = RecallIndex(lessons, repository=identity.repository)
    session = RecallSession(index, WorkspaceRoot.at(workspace), config)
    return ActiveRun(identity, config, session, generation=generation)
