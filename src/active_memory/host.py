"""The in-process host API: open a run over a frozen snapshot, serve recall, keep the manifest.

::

    backend = open_backend(setting, tenant=..., token=...)  # a path, postgresql:// or https://
    with open_run(identity, runtime_config, backend, workspace) as run:
        env = run.hook_env(node_id, conversation_id)        # for the harness process
        wiring = run.harness_wiring("claude", node_id, conversation_id)  # + its hook file
        text = run.graph_guidance(node_id, conversation_id)  # append after the node's prompt
        ...                                                  # tool calls reach the broker
        run.latch_outcome(outcome)                           # durable, before the postmortem
        report = await run.postmortem(record)                # manifest + receipts from the run
    run.deliveries, run.receipts                             # the manifest for the postmortem

The snapshot is taken once, when the run opens, honouring the ``activeMemory`` scope opt-outs;
lessons published while the run executes are for later runs. The broker starts on the first
``hook_env`` (or ``harness_wiring``) call and stops on ``close``. It runs on an event loop in a
thread of its own, and is started from a thread of its own too, so every call here is safe from
synchronous code and inside a running event loop (``asyncio.run``) alike. ``ahook_env``,
``aharness_wiring`` and ``aclose`` (and ``async with``) are the same calls off the caller's loop.

With the broker, the run keeps one exposure ledger in a private folder beside its tickets, named
to the harness (``ACTIVE_MEMORY_LEDGER``): a helper installed with ``--store`` that answers from
the store when the broker is slow reads and writes it too, and the run reads that call back as
its receipt and deliveries (:mod:`active_memory.hooks.run_ledger`).
"""

from __future__ import annotations

import asyncio
import functools
import shutil
import tempfile
import threading
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from active_memory.errors import PostmortemError, RecallError
from active_memory.hooks.dispatch import broker_handler
from active_memory.hooks.run_ledger import ENV_LEDGER, RunLedger
from active_memory.hooks.ticket import write_ticket
from active_memory.host_wiring import HarnessWiring, harness_wiring, no_wiring
from active_memory.latch import latch_outcome, read_latched_outcome, run_state_dir
from active_memory.models.config import ActiveMemoryConfig, RuntimeConfig
from active_memory.models.lessons import Lesson
from active_memory.models.runs import Checkout, Delivery, Outcome, RunRecord, ToolReceipt
from active_memory.recall.broker import BrokerAnswer, BrokerRequest, Handler, RecallBroker
from active_memory.recall.index import RecallIndex
from active_memory.recall.index_file import FOLDER as INDEX_FOLDER, load_or_build
from active_memory.recall.recall_session import Caller, Recall, RecallSession
from active_memory.recall.signals import ToolCall, WorkspaceRoot
from active_memory.repository import repository_key
from active_memory.store.backend import ActiveMemoryBackend, RunIdentity, SnapshotRequest
from active_memory.store.checked_rows import StoredLessons
from active_memory.store.paths import default_store_path
from active_memory.store.select import open_backend

if TYPE_CHECKING:
    from active_memory.agents.providers.base import ModelProvider
    from active_memory.cancel import CancelToken
    from active_memory.postmortem.binding import BindingOverride
    from active_memory.postmortem.options import ProviderFactory
    from active_memory.postmortem.report import PostmortemReport
    from active_memory.runlog import RunLog

__all__ = ["ENV_BROKER", "ENV_TOKEN", "ActiveRun", "HarnessWiring", "open_backend", "open_run"]

_P = ParamSpec("_P")
_R = TypeVar("_R")

ENV_BROKER = "ACTIVE_MEMORY_BROKER"
ENV_TOKEN = "ACTIVE_MEMORY_TOKEN"
ENV_NODE = "ACTIVE_MEMORY_NODE"
ENV_CONVERSATION = "ACTIVE_MEMORY_CONVERSATION"
ENV_EXECUTION = "ACTIVE_MEMORY_EXECUTION"
ENV_TICKET = "ACTIVE_MEMORY_TICKET"
BROKER_START_TIMEOUT_S = 10.0


def _start_broker(handler: Handler) -> RecallBroker:
    """A started broker, started on a thread of its own.

    ``RecallBroker.start`` sets its loop up on the calling thread, and asyncio refuses that on
    a thread already running a loop (a host inside ``asyncio.run``): "Cannot run the event loop
    while another loop is running". A fresh thread runs none, in sync and async hosts alike.
    """
    broker = RecallBroker(handler)
    lock = threading.Lock()
    state: dict[str, object] = {}

    def start() -> None:
        try:
            broker.start()
        except BaseException as error:  # handed to the caller below
            state["error"] = error
            return
        with lock:
            if state.get("abandoned"):
                broker.close()  # the caller gave up waiting: nothing may keep listening
            else:
                state["started"] = True

    thread = threading.Thread(target=start, name="active-memory-broker-start", daemon=True)
    thread.start()
    thread.join(BROKER_START_TIMEOUT_S)
    with lock:
        error = state.get("error")
        if isinstance(error, BaseException):
            raise error
        if not state.get("started"):
            state["abandoned"] = True
            raise RecallError(
                f"the run's broker did not start within {BROKER_START_TIMEOUT_S:g} s; "
                "check that 127.0.0.1 accepts local connections, then call hook_env again"
            )
    return broker


def _on_worker_thread(
    method: Callable[Concatenate[ActiveRun, _P], _R], doc: str
) -> Callable[Concatenate[ActiveRun, _P], Coroutine[Any, Any, _R]]:
    """The async twin of ``method``: the same call, run on a worker thread off the caller's loop."""

    @functools.wraps(method)
    async def on_worker_thread(run: ActiveRun, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return await asyncio.to_thread(method, run, *args, **kwargs)

    on_worker_thread.__name__ = f"a{method.__name__}"
    on_worker_thread.__qualname__ = f"ActiveRun.a{method.__name__}"
    on_worker_thread.__doc__ = doc
    return on_worker_thread


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
        lessons: Sequence[Lesson] = (),
        state_dir: str | Path | None = None,
        workspace: str | Path | None = None,
    ) -> None:
        self.identity = identity
        self.workspace = Path(workspace) if workspace is not None else None
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
        self._ledger: RunLedger | None = None
        self._lock = threading.Lock()
        self._closed = False

    def broker(self) -> RecallBroker:
        """The run's broker, started on first use."""
        with self._lock:
            if self._closed:
                raise RecallError("this run is closed; open a new run to serve recall")
            if self._broker is None:
                handler = broker_handler(self.session, default_node="unknown")
                self._broker = _start_broker(self._synced(handler))
            return self._broker

    def _synced(self, handler: Handler) -> Handler:
        """``handler``, first reading what the store fallback answered in the broker's place."""

        def handle(request: BrokerRequest) -> BrokerAnswer:
            self._sync()
            return handler(request)

        return handle

    def _sync(self) -> None:
        ledger = self._ledger
        if ledger is not None:
            ledger.sync(self.session)

    def hook_env(
        self, node_id: str, conversation_id: str, execution_id: str | None = None
    ) -> dict[str, str]:
        """Environment for a harness process: broker address, run token, ids and a ticket.

        Empty when active memory is disabled for this run (the harness needs no hooks then).
        Safe inside a running event loop; ``await run.ahook_env(...)`` runs it off the loop.
        """
        if not self.config.enabled:
            return {}
        return self._ticketed(node_id, conversation_id, execution_id)[0]

    def harness_wiring(
        self,
        harness: str,
        node_id: str,
        conversation_id: str,
        execution_id: str | None = None,
        *,
        python: str | None = None,
    ) -> HarnessWiring:
        """What ``harness`` (``claude``, ``codex``, ``copilot`` or ``pi``) needs to reach this
        run's broker: ``env`` (as :meth:`hook_env`), the hook entry and hook-file document
        (for Claude Code a per-run ``http`` hook carrying the token and ids; write it with
        ``wiring.write_settings(path)`` and launch ``claude --settings PATH``), and pi's
        ``args``. ``python`` is the interpreter the command hooks run (default: this one).
        With active memory disabled, the wiring is empty: no env, no hook.
        """
        empty = no_wiring(harness)  # an unknown harness is refused before the broker starts
        if not self.config.enabled:
            return empty
        env, broker = self._ticketed(node_id, conversation_id, execution_id)
        ids = {"node": node_id, "conversation": conversation_id, "execution": execution_id}
        return harness_wiring(
            harness, env, url=broker.url, token=broker.token, ids=ids, python=python
        )

    ahook_env = _on_worker_thread(
        hook_env, ":meth:`hook_env` on a worker thread, for hosts that keep their loop free of I/O."
    )
    aharness_wiring = _on_worker_thread(
        harness_wiring, ":meth:`harness_wiring` on a worker thread."
    )

    def _ticketed(
        self, node_id: str, conversation_id: str, execution_id: str | None
    ) -> tuple[dict[str, str], RecallBroker]:
        broker = self.broker()
        host, port = broker.address
        with self._lock:
            if self._tickets is None:
                self._tickets = Path(tempfile.mkdtemp(prefix="active-memory-"))
                self._ledger = RunLedger(self._tickets / "ledger")
                self.session.ledger.attach_store(self._ledger.files)
            self._ticket_count += 1
            ledger = self._ledger.folder if self._ledger is not None else None
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
        if ledger is not None:
            env[ENV_LEDGER] = ledger
        if execution_id:
            env[ENV_EXECUTION] = execution_id
        return env, broker

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

    def recall_tool(
        self,
        call: ToolCall,
        caller: Caller,
        *,
        max_chars: int | None = None,
        budget_bytes: int | None = None,
    ) -> Recall | None:
        """In-process recall for one tool call, as the broker serves it, with no socket.

        Records the tool receipt and claims the matching cards for ``caller``'s conversation;
        ``commit()`` the recall once its text reached the model, ``release()`` it otherwise.
        None when active memory is disabled for this run (nothing is recorded, as no hook
        would have been wired).
        """
        if not self.config.enabled:
            return None
        return self.session.recall(call, caller, max_chars=max_chars, budget_bytes=budget_bytes)

    @property
    def deliveries(self) -> tuple[Delivery, ...]:
        """The delivery manifest: every lesson revision handed to a conversation, in order."""
        self._sync()
        return self.session.ledger.deliveries

    @property
    def receipts(self) -> tuple[ToolReceipt, ...]:
        """Tool receipts: the first and the latest of at most 512."""
        self._sync()
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

    def _checkout(self, record: RunRecord) -> Checkout | None:
        """The record's checkout, checked against this run's identity (or this run's own when
        the record has none); PostmortemError when the record names another run, repository
        or graph, whose lessons recall would never query."""
        identity = self.identity
        if record.run_id != identity.run_id:
            raise PostmortemError(
                f"the record's run_id {record.run_id!r} is not this run's ({identity.run_id!r}); "
                "build the record with run_id=run.identity.run_id"
            )
        if identity.graph_hash is not None and record.graph_hash != identity.graph_hash:
            raise PostmortemError(
                f"the record's graph hashes to {record.graph_hash!r}, but this run was opened "
                f"with graph_hash {identity.graph_hash!r}; pass the graph the run executed and "
                "open the run with RunIdentity(..., graph_hash=graph.hash)"
            )
        checkout = record.checkout
        if checkout is None:
            if self.workspace is None or identity.repository is None:
                return None
            return Checkout(path=self.workspace, repository=identity.repository)
        if identity.repository is not None and checkout.repository != identity.repository:
            raise PostmortemError(
                f"the record's checkout.repository {checkout.repository!r} is not the key this "
                f"run recalls under ({identity.repository!r}); lessons published under it would "
                "never be recalled. Leave checkout out (the run's own is used) or give "
                "repository=run.identity.repository"
            )
        return checkout

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
        node's binding as the CLI's ``--provider``/``--model`` do.

        One identity: the record's ``run_id`` must be this run's, its graph must hash to the
        run's ``graph_hash`` (when the run has one) and its ``checkout.repository`` must be the
        run's repository key; a record without a checkout gets the run's (its workspace and
        key). Raises PostmortemError only before any work (no latched outcome, another run's
        identity, a bad sourceNode); ordinary failures are in the report.
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
                "checkout": self._checkout(record),
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
            frozen_lessons=tuple(self.lessons),  # a store's lessons are decoded here
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
        self._sync()  # what the fallback answered until now stays in the manifest
        self._ledger = None
        if tickets is not None:
            shutil.rmtree(tickets, ignore_errors=True)

    aclose = _on_worker_thread(
        close, ":meth:`close` on a worker thread (stopping the broker waits for its thread)."
    )

    def __enter__(self) -> ActiveRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> ActiveRun:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


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
    (default: ``<state>/active-memory/runs/<run>``). A store's verified rows are indexed from
    their JSON in one pass, without a model per lesson (the postmortem decodes them), or loaded
    from ``<state>/active-memory/recall-index`` when the rows are those it was built from.
    """
    config = runtime_config.active_memory
    if identity.repository is None:
        identity = replace(identity, repository=repository_key(workspace))
    lessons: Sequence[Lesson] = ()
    generation = 0
    if config.enabled:
        request = SnapshotRequest(identity, repository=config.repository, graph=config.graph)
        snapshot = backend.snapshot(request)
        lessons, generation = snapshot.lessons, snapshot.generation
    if isinstance(lessons, StoredLessons):  # kept in a file while the rows stay the same
        index = load_or_build(lambda: default_store_path().parent / INDEX_FOLDER,
                              identity.repository, lessons.checksums(), lessons.recall_entries,
                              lessons.graph_lessons())[0]  # fmt: skip
    else:
        index = RecallIndex(lessons, repository=identity.repository)
    session = RecallSession(index, WorkspaceRoot.at(workspace), config)
    return ActiveRun(identity, config, session, generation=generation, runtime=runtime_config,
                     backend=backend, lessons=lessons, state_dir=state_dir,
                     workspace=workspace)  # fmt: skip
