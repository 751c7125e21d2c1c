"""The in-process host API: open a run over a frozen snapshot, serve recall, keep the manifest.

::

    with open_run(identity, runtime_config, backend, workspace) as run:
        env = run.hook_env(node_id, conversation_id)        # for the harness process
        text = run.graph_guidance(node_id, conversation_id)  # append after the node's prompt
        ...                                                  # tool calls reach the broker
        run.latch_outcome(outcome)                           # durable, before the postmortem
        report = await run.postmortem(record)                # manifest + receipts from the run
    run.deliveries, run.receipts                             # the manifest for the postmortem

The snapshot is taken once, when the run opens, honouring the ``activeMemory`` scope opt-outs;
lessons published while the run executes are for later runs. The broker starts on the first
``hook_env`` call and stops on ``close``.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from active_memory.errors import PostmortemError, RecallError
from active_memory.hooks.dispatch import broker_handler
from active_memory.hooks.ticket import write_ticket
from active_memory.latch import latch_outcome, read_latched_outcome, run_state_dir
from active_memory.models.config import ActiveMemoryConfig, RuntimeConfig
from active_memory.models.lessons import Lesson
from active_memory.models.runs import Delivery, Outcome, RunRecord, ToolReceipt
from active_memory.recall.broker import RecallBroker
from active_memory.recall.index import RecallIndex
from active_memory.recall.recall_session import Caller, RecallSession
from active_memory.recall.signals import WorkspaceRoot
from active_memory.repository import repository_key
from active_memory.store.backend import ActiveMemoryBackend, RunIdentity, SnapshotRequest
from active_memory.store.paths import default_store_path

if TYPE_CHECKING:
    from active_memory.agents.providers.base import ModelProvider
    from active_memory.cancel import CancelToken
    from active_memory.postmortem.binding import BindingOverride
    from active_memory.postmortem.options import ProviderFactory
    from active_memory.postmortem.report import PostmortemReport
    from active_memory.runlog import RunLog

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
        runtime: RuntimeConfig | None = None,
        backend: ActiveMemoryBackend | None = None,
        lessons: tuple[Lesson, ...] = (),
        state_dir: str | Path | None = None,
    ) -> None:
        self.identity = identity
        self.config = config
        self.session = session
        self.generation = generation
        self.runtime = runtime if runtime is not None else RuntimeConfig(active_memory=config)
        self.backend = backend
        self.lessons = lessons
        self._state_dir = Path(state_dir) if state_dir is not None else None
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

    @property
    def state_dir(self) -> Path:
        """The run's private state folder (latched outcome, evidence, run log); by default
        ``<state>/active-memory/runs/<run>`` beside the default store."""
        if self._state_dir is None:
            self._state_dir = run_state_dir(default_store_path().parent, self.identity.run_id)
        return self._state_dir

    @property
    def outcome(self) -> Outcome | None:
        """The latched outcome, read back from its durable file; None before latching."""
        return read_latched_outcome(self.state_dir)

    def latch_outcome(self, outcome: Outcome) -> Path:
        """Make the main graph's outcome durable (fsync + atomic rename) before any postmortem
        work; returns the file. Latching again with the same outcome changes nothing."""
        return latch_outcome(self.state_dir, self.identity.run_id, outcome)

    async def postmortem(
        self,
        record: RunRecord,
        *,
        provider: ModelProvider | None = None,
        provider_factory: ProviderFactory | None = None,
        override: BindingOverride | None = None,
        cancel: CancelToken | None = None,
        run_log: RunLog | None = None,
        new_id: Callable[[], str] | None = None,
        dry_run: bool = False,
    ) -> PostmortemReport:
        """Run the postmortem of this run over ``record`` (the host's run record).

        The outcome must have been latched; the record's missing outcome, delivery manifest
        and tool receipts are taken from this run, and the run's frozen snapshot makes the
        before/current lesson changes exact. Evidence files and the run log (``run-log.jsonl``
        unless ``run_log`` is given) go to :attr:`state_dir`. ``override`` changes the source
        node's binding as the CLI's ``--provider``/``--model`` do. Raises PostmortemError only
        before any work (no latched outcome, a bad sourceNode); ordinary failures are in the
        report.
        """
        from active_memory.models.ids import new_lesson_id
        from active_memory.postmortem.binding import BindingOverride
        from active_memory.postmortem.entry import run_postmortem
        from active_memory.postmortem.options import PostmortemOptions
        from active_memory.runlog import RunLog

        outcome = self.outcome
        if outcome is None:
            raise PostmortemError(
                f"run {self.identity.run_id!r} has no latched outcome; call "
                "run.latch_outcome(outcome) once the graph settles, before the postmortem"
            )
        if self.backend is None:
            raise PostmortemError("this run was opened without a backend; use open_run(...)")
        record = record.model_copy(
            update={
                "outcome": record.outcome or outcome,
                "deliveries": record.deliveries or self.deliveries,
                "receipts": record.receipts or self.receipts,
            }
        )
        options = PostmortemOptions(
            config=self.runtime,
            backend=self.backend,
            private_dir=self.state_dir / "evidence",
            provider=provider,
            provider_factory=provider_factory,
            override=override or BindingOverride(),
            run_log=run_log if run_log is not None else RunLog(self.state_dir / "run-log.jsonl"),
            cancel=cancel,
            new_id=new_id or new_lesson_id,
            dry_run=dry_run,
            frozen_lessons=self.lessons,
        )
        return await run_postmortem(record, options)

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
    *,
    state_dir: str | Path | None = None,
) -> ActiveRun:
    """Freeze the run's snapshot and build its recall index.

    The repository key defaults to the workspace's (origin remote, else a local key). A failed
    snapshot raises :class:`~active_memory.errors.SnapshotError`; it never reads as no lessons.
    ``state_dir`` is the run's private folder for its latched outcome, evidence and run log
    (default: ``<state>/active-memory/runs/<run>``).
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
    return ActiveRun(
        identity,
        config,
        session,
        generation=generation,
        runtime=runtime_config,
        backend=backend,
        lessons=lessons,
        state_dir=state_dir,
    )
