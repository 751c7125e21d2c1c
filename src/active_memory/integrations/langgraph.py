"""LangGraph: cards appended to tool messages, the authored graph and executions from the graph.

::

    tools = ToolNode([...], wrap_tool_call=wrap_tool_call, awrap_tool_call=awrap_tool_call)
    SystemMessage(node_prompt("You implement the change.", config))  # in a node function
    app = builder.compile(checkpointer=...)
    graph = langgraph_graph(app, roles={"implement": "worker", "review": "verifier"},
                            bindings=Binding(provider="openai", model="gpt-5.1"))
    with open_run(RunIdentity(run_id, graph_hash=graph.hash), config, store, checkout) as run:
        memory = LangGraphMemory(run, graph)
        for chunk in memory.stream(app, inputs, {"configurable": {"thread_id": "t1"}}): ...
        report = await memory.settle("succeeded")

* :func:`langgraph_graph` reads the compiled graph (``get_graph()``): its nodes (agent nodes
  take their kind from ``roles`` and their binding from ``bindings``; a ``ToolNode`` is a
  ``tool`` node, any other a ``step``) and its edges, conditional ones marked; the hash is over
  that document.
* :func:`wrap_tool_call` (and :func:`awrap_tool_call`) is the ``ToolNode`` tool-call wrapper
  (it finds the memory whose :meth:`~LangGraphMemory.stream` is running, so the graph is built
  and hashed before the run opens; with none running the tool just runs): the call is
  recalled before the tool runs (its receipt recorded) and the matching cards are appended to
  the ``ToolMessage`` the tool returns; they count as delivered when the wrapper returns it. A
  tool that raises hands nothing over.
* :func:`node_prompt` appends the node's graph guidance to the prompt a node builds.
* The node a prompt belongs to is the top-level node of the checkpoint namespace
  (``implement:<task>|tools:<task>`` is ``implement``), and so is a tool call's inside an agent
  subgraph. A top-level ``ToolNode`` (the ``tools_condition`` pattern) is no agent: its call
  belongs to the agent execution whose ``AIMessage`` asked for it (known from that task's
  result, which the stream reports before the tool node runs), so the receipt, the cards and
  the tool's result (labelled with its receipt) are in that execution's record; ``tool_nodes``
  names the agent a top-level tool node serves when the asker is unknown. The conversation is
  ``<thread>/<node>`` (``conversation="thread"``: one per thread). Over one shared message
  history, a card an earlier tool message of the thread carries is already in every node's
  model input: it is marked delivered to the calling conversation, never handed over again.
* :meth:`LangGraphMemory.stream` runs the graph with the ``tasks`` stream mode added: each
  top-level task is an execution (its id the task's), its occurrence counting that node's
  tasks, its attempt counting runs of the same task (a thread resumed after a failure runs the
  failed task again under its id); its transcript is the messages the task added.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from active_memory.integrations._runs import ExecutionLog, FrameworkMemory, missing_extra
from active_memory.models.runs import AGENT_KINDS, AuthoredGraph, Binding, GraphNode
from active_memory.recall.recall_session import Caller
from active_memory.recall.signals import ToolCall

try:
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
    from langgraph.prebuilt import ToolNode
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.types import Command

    from active_memory.integrations._langgraph_messages import (
        Carried,
        handed,
        message_text,
        messages_of,
    )
except ImportError as error:  # the module is the adapter: without its packages it cannot load
    raise ImportError(missing_extra("langgraph", "langgraph")) from error

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.pregel import Pregel

    from active_memory.host import ActiveRun
    from active_memory.models.runs import ExecutionStatus
    from active_memory.recall.recall_session import Recall

__all__ = [
    "LangGraphMemory",
    "awrap_tool_call",
    "langgraph_graph",
    "node_prompt",
    "wrap_tool_call",
]

_log = logging.getLogger("active_memory.integrations.langgraph")
_ENDS = ("__start__", "__end__")
ToolResult = ToolMessage | Command[Any]
# The memory whose stream is running: a graph is compiled (and hashed) before the run opens, so
# its ToolNodes and node prompts find the memory here, not through a reference of their own.
_active: contextvars.ContextVar[LangGraphMemory | None] = contextvars.ContextVar(
    "active_memory_langgraph", default=None
)


def wrap_tool_call(
    request: ToolCallRequest, execute: Callable[[ToolCallRequest], ToolResult]
) -> ToolResult:
    """``ToolNode(wrap_tool_call=wrap_tool_call)``: the running memory's wrapper; the tool
    alone when no :meth:`LangGraphMemory.stream` is running."""
    memory = _active.get()
    return execute(request) if memory is None else memory.wrap_tool_call(request, execute)


async def awrap_tool_call(
    request: ToolCallRequest, execute: Callable[[ToolCallRequest], Awaitable[ToolResult]]
) -> ToolResult:
    """``ToolNode(awrap_tool_call=awrap_tool_call)``: :func:`wrap_tool_call` for async runs."""
    memory = _active.get()
    if memory is None:
        return await execute(request)
    return await memory.awrap_tool_call(request, execute)


def node_prompt(prompt: str, config: RunnableConfig | None, node_id: str | None = None) -> str:
    """``prompt`` with the running memory's graph guidance for the calling node after it."""
    memory = _active.get()
    return prompt if memory is None else memory.prompt(prompt, config, node_id)


def langgraph_graph(
    compiled: Pregel[Any, Any, Any, Any],
    roles: Mapping[str, str],
    bindings: Mapping[str, Binding] | Binding | None = None,
    *,
    name: str | None = None,
) -> AuthoredGraph:
    """The authored graph of ``compiled``: its nodes and edges, agent nodes bound."""
    drawn = compiled.get_graph()
    nodes = []
    for node_id, node in drawn.nodes.items():
        if node_id in _ENDS:
            continue
        kind = roles.get(node_id) or ("tool" if isinstance(node.data, ToolNode) else "step")
        binding = bindings.get(node_id) if isinstance(bindings, Mapping) else bindings
        agent = kind in AGENT_KINDS and binding is not None
        nodes.append(GraphNode(id=node_id, kind=kind, binding=binding if agent else None))
    edges = [{"source": edge.source, "target": edge.target, "conditional": edge.conditional}
             for edge in drawn.edges]  # fmt: skip
    title = name or compiled.name or "LangGraph"
    raw = {"name": title, "nodes": [node.model_dump(mode="json") for node in nodes],
           "edges": edges}  # fmt: skip
    return AuthoredGraph(name=title, nodes=tuple(nodes), raw=raw)


@dataclass(frozen=True, slots=True)
class _Pending:
    """A tool call's recall in flight: its thread and call id, and the agent execution that
    asked for it when a top-level tool node runs it."""

    recall: Recall
    thread: str
    call_id: str
    asker: ExecutionLog | None


def _release(pending: _Pending | None) -> None:
    """The recall's cards go back unclaimed when the tool raises: it hands nothing over."""
    if pending is not None:
        pending.recall.release()


class LangGraphMemory(FrameworkMemory):
    """Active memory for one authored LangGraph graph run in one open run."""

    def __init__(
        self,
        run: ActiveRun,
        graph: AuthoredGraph,
        *,
        tool_nodes: Mapping[str, str] | None = None,
        conversation: Literal["node", "thread"] = "node",
    ) -> None:
        super().__init__(run, graph, source="langgraph")
        self.tool_nodes = dict(tool_nodes or {})
        self.conversation = conversation
        self._thread = f"langgraph-{uuid.uuid4().hex}"  # for graphs without a checkpointer
        self._by_task: dict[str, ExecutionLog] = {}
        self._guidance: dict[tuple[str, str], str] = {}
        self._inputs: dict[str, set[str]] = {}
        self._config: RunnableConfig | None = None
        self._lock = threading.Lock()
        self._nodes = frozenset(node.id for node in graph.nodes)
        self._agents = frozenset(node.id for node in graph.nodes if node.is_agent)
        # (thread, tool call id) -> the agent execution whose model asked for the call, the
        # receipt seq of a call whose request is not yet in a transcript, the calls whose
        # results went to the asking agent's transcript (not the tool node's)
        self._askers: dict[tuple[str, str], ExecutionLog] = {}
        self._receipts: dict[tuple[str, str], int] = {}
        self._told: set[tuple[str, str]] = set()
        self._carried = Carried()

    # --- who is calling -----------------------------------------------------------------------

    def _where(self, config: RunnableConfig | None) -> tuple[str, ExecutionLog | None, str, str]:
        """Who runs under ``config``: the agent node it serves, the execution of its top-level
        task (a tool node's own, when ``tool_nodes`` maps it to the agent it serves), the
        conversation and the thread."""
        config = config or {}
        configurable = config.get("configurable") or {}
        metadata = config.get("metadata") or {}
        namespace = str(configurable.get("checkpoint_ns") or metadata.get("checkpoint_ns") or "")
        top, _, task = namespace.split("|", 1)[0].partition(":")
        top = top or str(metadata.get("langgraph_node") or "unknown")
        node = self.tool_nodes.get(top, top)
        thread = str(configurable.get("thread_id") or self._thread)
        talk = thread if self.conversation == "thread" else f"{thread}/{node}"
        return node, self._execution(top, task or None, talk), talk, thread

    def _execution(self, node: str, task: str | None, conversation: str) -> ExecutionLog | None:
        """The execution of ``task``: its current attempt, or a new one once the last ended."""
        if task is None or node not in self._nodes:
            return None
        with self._lock:
            latest = self._by_task.get(task)
            if latest is not None and latest.status is None:
                return latest
            log = self.recorder.start(
                node,
                conversation_id=conversation,
                occurrence=latest.occurrence if latest else None,
                attempt=latest.attempt + 1 if latest else 1,
                execution_id=f"{node}-{task}" + (f"-{latest.attempt + 1}" if latest else ""),
            )
            self._by_task[task] = log
            return log

    # --- guidance and cards -------------------------------------------------------------------

    def guidance(self, config: RunnableConfig | None, node_id: str | None = None) -> str:
        """The node's graph guidance, for its prompt: claimed once per conversation, the same
        text on every later model call (the prompt is rebuilt each time)."""
        node, log, talk, _ = self._where(config)
        node = node_id or node
        key = (talk, node)
        with self._lock:
            cached = self._guidance.get(key)
        if cached is not None:
            return cached
        text = self.active_run.graph_guidance(node, talk, execution_id=log.id if log else None)
        with self._lock:
            return self._guidance.setdefault(key, text)

    def prompt(self, prompt: str, config: RunnableConfig | None, node_id: str | None = None) -> str:
        """``prompt`` with the node's graph guidance after it (unchanged when there is none)."""
        guidance = self.guidance(config, node_id)
        return f"{prompt}\n\n{guidance}" if prompt and guidance else prompt or guidance

    def _asker(self, thread: str, call_id: str, log: ExecutionLog | None) -> ExecutionLog | None:
        """The agent execution whose model asked for this call, when a node that is no agent (a
        top-level ``ToolNode``) runs it: receipts and cards are that agent's, not the tool
        node's. None inside an agent node's own task (a tool node of its subgraph)."""
        if log is not None and log.node_id in self._agents:
            return None
        with self._lock:
            return self._askers.get((thread, call_id))

    def _recall(self, request: ToolCallRequest) -> _Pending | None:
        try:
            runtime = getattr(request, "runtime", None)
            node, log, talk, thread = self._where(getattr(runtime, "config", None))
            call = request.tool_call
            call_id = str(call.get("id") or "")
            asker = self._asker(thread, call_id, log)
            if asker is not None:
                node, log, talk = asker.node_id, asker, asker.conversation_id or talk
            # Nodes sharing one message history: a card an earlier tool message of the thread
            # carries is in this model's input already, whichever conversation it went to.
            # Read only in a thread whose tool messages carry cards: a history grows long.
            held = self._carried.carries(thread) and self._carried.held(
                thread, messages_of(request.state)
            )
            if held:
                self.active_run.session.ledger.mark_delivered(talk, tuple(held))
            arguments = call.get("args")
            parsed = ToolCall(str(call.get("name") or "tool"),
                              arguments if isinstance(arguments, dict) else {})  # fmt: skip
            caller = Caller(node, talk, log.id if log else None)
            recall = self.active_run.recall_tool(parsed, caller)
        except Exception:
            _log.exception("LangGraph recall failed; the tool runs without context")
            return None
        return None if recall is None else _Pending(recall, thread, call_id, asker)

    def _settle(self, pending: _Pending | None, result: Any) -> Any:
        if pending is None:
            return result
        recall, key = pending.recall, (pending.thread, pending.call_id)
        carrying = None
        if recall.text and isinstance(result, ToolMessage | Command):
            carrying = handed(result, pending.call_id, recall.text)
        if carrying is None:
            recall.release()
            message = result if isinstance(result, ToolMessage) else None
        else:
            recall.commit()
            result, message = carrying
            self._carried.add(*key, recall.text, recall.delivered)
        seq = recall.receipt.seq if recall.receipt is not None else None
        if pending.asker is None:
            if seq is not None:
                with self._lock:
                    self._receipts[key] = seq  # labels the request once its task reports it
        elif message is not None:
            # The asking agent's request is in its transcript already: the result, labelled
            # with the receipt, goes there too.
            pending.asker.say("tool", message_text(message.content),
                              tool=message.name or None, receipt=seq)  # fmt: skip
            with self._lock:
                self._told.add(key)
        return result

    def wrap_tool_call(
        self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], ToolResult]
    ) -> ToolResult:
        """The ``ToolNode(wrap_tool_call=...)`` wrapper: cards after the tool's message."""
        pending = self._recall(request)
        # Written out rather than a context manager: entering one costs a microsecond a call.
        try:
            result = execute(request)
        except BaseException:
            _release(pending)  # the tool raised: it hands nothing over
            raise
        settled: ToolResult = self._settle(pending, result)
        return settled

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        execute: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        """:meth:`wrap_tool_call` for ``ToolNode(awrap_tool_call=...)``."""
        pending = self._recall(request)
        try:
            result = await execute(request)
        except BaseException:
            _release(pending)
            raise
        settled: ToolResult = self._settle(pending, result)
        return settled

    # --- executions from the task events ------------------------------------------------------

    def observe_task(self, event: Mapping[str, Any], config: RunnableConfig | None) -> None:
        """Record one ``tasks`` stream event of the top-level graph."""
        node, task = str(event.get("name") or ""), str(event.get("id") or "")
        if self.recorder.graph.node(node) is None or not task:
            return
        thread = str(((config or {}).get("configurable") or {}).get("thread_id") or self._thread)
        served = self.tool_nodes.get(node, node)
        talk = thread if self.conversation == "thread" else f"{thread}/{served}"
        log = self._execution(node, task, talk)
        if log is None:
            return
        if "input" in event:  # the task starts: remember what it was given
            with self._lock:
                self._inputs[log.id] = {m.id for m in messages_of(event["input"]) if m.id}
            if self.recorder.initial_input is None:
                human = [m for m in messages_of(event["input"]) if isinstance(m, HumanMessage)]
                if human:
                    self.recorder.initial_input = message_text(human[0].content)
            return
        with self._lock:
            seen = self._inputs.pop(log.id, set())
        for message in messages_of(event.get("result")):
            if message.id is None or message.id not in seen:
                self._say(log, message, thread)
        status: ExecutionStatus = "completed"
        if event.get("error"):
            status = "error"
        elif event.get("interrupts"):
            status = "cancelled"
        log.finish(status)

    def _say(self, log: ExecutionLog, message: BaseMessage, thread: str) -> None:
        if isinstance(message, AIMessage):
            text = message_text(message.content)
            if text:
                log.say("assistant", text)
                log.completion = text
            for call in message.tool_calls:
                key = (thread, str(call.get("id") or ""))
                with self._lock:
                    if log.node_id in self._agents:  # a tool node may run it next
                        self._askers[key] = log
                    seq = self._receipts.pop(key, None)
                log.say("assistant", json.dumps(call.get("args") or {}), tool=call.get("name"),
                        receipt=seq)  # fmt: skip
        elif isinstance(message, ToolMessage):
            key = (thread, message.tool_call_id)
            with self._lock:
                told = key in self._told
                self._told.discard(key)
            if not told:  # else it is in the asking agent's transcript
                log.say("tool", message_text(message.content), tool=message.name)
        elif isinstance(message, HumanMessage):
            log.say("user", message_text(message.content))

    @contextlib.contextmanager
    def _running(self, config: RunnableConfig | None) -> Iterator[None]:
        """While a stream runs: this memory is the one the tool wrappers and prompts find."""
        self._config = config
        token = _active.set(self)
        try:
            yield
        finally:
            _active.reset(token)

    def _modes(self, stream_mode: Any, graph: Pregel[Any, Any, Any, Any]) -> tuple[list[Any], bool]:
        if stream_mode is None:
            return [graph.stream_mode], True  # what graph.stream would have used
        if isinstance(stream_mode, str):
            return [stream_mode], True
        return list(stream_mode), False

    def _split(self, item: Any, modes: Sequence[str], single: bool, subgraphs: bool) -> Any:
        """The chunk the host asked for, or None for a task event it did not ask for."""
        namespace, (mode, chunk) = (item[0], item[1:]) if subgraphs else ((), item)
        if mode == "tasks" and not namespace:
            self.observe_task(chunk, self._config)
        if mode not in modes:
            return None
        if single:
            return (namespace, chunk) if subgraphs else chunk
        return (namespace, mode, chunk) if subgraphs else (mode, chunk)

    def stream(
        self,
        graph: Pregel[Any, Any, Any, Any],
        input: Any,
        config: RunnableConfig | None = None,
        *,
        stream_mode: Any = None,
        subgraphs: bool = False,
        **kwargs: Any,
    ) -> Iterator[Any]:
        """``graph.stream(...)``, yielding what it would, recording the executions."""
        modes, single = self._modes(stream_mode, graph)
        with self._running(config):
            for item in graph.stream(input, config, stream_mode=[*modes, "tasks"],
                                     subgraphs=subgraphs, **kwargs):  # fmt: skip
                chunk = self._split(item, modes, single, subgraphs)
                if chunk is not None:
                    yield chunk

    async def astream(
        self,
        graph: Pregel[Any, Any, Any, Any],
        input: Any,
        config: RunnableConfig | None = None,
        *,
        stream_mode: Any = None,
        subgraphs: bool = False,
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        """``graph.astream(...)``, yielding what it would, recording the executions."""
        modes, single = self._modes(stream_mode, graph)
        with self._running(config):
            async for item in graph.astream(input, config, stream_mode=[*modes, "tasks"],
                                            subgraphs=subgraphs, **kwargs):  # fmt: skip
                chunk = self._split(item, modes, single, subgraphs)
                if chunk is not None:
                    yield chunk
