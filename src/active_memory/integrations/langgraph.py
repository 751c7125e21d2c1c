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
* The node a tool call or prompt belongs to is the top-level node of the checkpoint namespace
  (``implement:<task>|tools:<task>`` is ``implement``); ``tool_nodes`` maps a top-level tool
  node to the agent node it serves. Its conversation is ``<thread>/<node>`` (``conversation=
  "thread"``: one per thread, for nodes sharing one message history).
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


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part)
            for part in content
            if not isinstance(part, dict) or part.get("type") == "text"
        )
    return str(content)


def _with_cards(message: ToolMessage, cards: str) -> ToolMessage:
    content = message.content
    if isinstance(content, list):
        return message.model_copy(update={"content": [*content, {"type": "text", "text": cards}]})
    text = _text(content)
    return message.model_copy(update={"content": f"{text}\n\n{cards}" if text else cards})


def _handed(result: ToolResult, call_id: str, cards: str) -> ToolResult | None:
    """``result`` carrying the cards in this call's tool message; None when it has none."""
    if isinstance(result, ToolMessage):
        return _with_cards(result, cards)
    update = result.update
    if not isinstance(update, dict):
        return None
    messages = update.get("messages")
    if not isinstance(messages, list):
        return None
    for index, message in enumerate(messages):
        if isinstance(message, ToolMessage) and message.tool_call_id == call_id:
            changed = [*messages[:index], _with_cards(message, cards), *messages[index + 1 :]]
            return Command(graph=result.graph, update={**update, "messages": changed},
                           resume=result.resume, goto=result.goto)  # fmt: skip
    return None


@contextlib.contextmanager
def _released_on_error(recall: Recall | None) -> Iterator[None]:
    """The recall's cards go back unclaimed when the tool raises: it hands nothing over."""
    try:
        yield
    except BaseException:
        if recall is not None:
            recall.release()
        raise


def _messages(value: Any) -> list[BaseMessage]:
    found = value.get("messages") if isinstance(value, dict) else None
    if isinstance(found, BaseMessage):
        return [found]
    return [item for item in found if isinstance(item, BaseMessage)] if found else []


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

    # --- who is calling -----------------------------------------------------------------------

    def _where(self, config: RunnableConfig | None) -> tuple[str, ExecutionLog | None, str]:
        """Who runs under ``config``: the agent node it serves, the execution of its top-level
        task (a tool node's own, when ``tool_nodes`` maps it to the agent it serves) and the
        conversation."""
        config = config or {}
        configurable = config.get("configurable") or {}
        metadata = config.get("metadata") or {}
        namespace = str(configurable.get("checkpoint_ns") or metadata.get("checkpoint_ns") or "")
        top, _, task = namespace.split("|", 1)[0].partition(":")
        top = top or str(metadata.get("langgraph_node") or "unknown")
        node = self.tool_nodes.get(top, top)
        thread = str(configurable.get("thread_id") or self._thread)
        talk = thread if self.conversation == "thread" else f"{thread}/{node}"
        return node, self._execution(top, task or None, talk), talk

    def _execution(self, node: str, task: str | None, conversation: str) -> ExecutionLog | None:
        """The execution of ``task``: its current attempt, or a new one once the last ended."""
        if task is None or self.recorder.graph.node(node) is None:
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
        node, log, talk = self._where(config)
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

    def _recall(self, request: ToolCallRequest) -> Recall | None:
        try:
            runtime = getattr(request, "runtime", None)
            node, log, talk = self._where(getattr(runtime, "config", None))
            call = request.tool_call
            arguments = call.get("args")
            parsed = ToolCall(str(call.get("name") or "tool"),
                              arguments if isinstance(arguments, dict) else {})  # fmt: skip
            caller = Caller(node, talk, log.id if log else None)
            return self.active_run.recall_tool(parsed, caller)
        except Exception:
            _log.exception("LangGraph recall failed; the tool runs without context")
            return None

    def _settle(self, request: ToolCallRequest, recall: Recall | None, result: Any) -> Any:
        if recall is None:
            return result
        handed = None
        if recall.text and isinstance(result, ToolMessage | Command):
            handed = _handed(result, str(request.tool_call.get("id") or ""), recall.text)
        if handed is None:
            recall.release()
            return result
        recall.commit()
        return handed

    def wrap_tool_call(
        self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], ToolResult]
    ) -> ToolResult:
        """The ``ToolNode(wrap_tool_call=...)`` wrapper: cards after the tool's message."""
        recall = self._recall(request)
        with _released_on_error(recall):
            result = execute(request)
        settled: ToolResult = self._settle(request, recall, result)
        return settled

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        execute: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        """:meth:`wrap_tool_call` for ``ToolNode(awrap_tool_call=...)``."""
        recall = self._recall(request)
        with _released_on_error(recall):
            result = await execute(request)
        settled: ToolResult = self._settle(request, recall, result)
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
                self._inputs[log.id] = {m.id for m in _messages(event["input"]) if m.id}
            if self.recorder.initial_input is None:
                human = [m for m in _messages(event["input"]) if isinstance(m, HumanMessage)]
                if human:
                    self.recorder.initial_input = _text(human[0].content)
            return
        with self._lock:
            seen = self._inputs.pop(log.id, set())
        for message in _messages(event.get("result")):
            if message.id is None or message.id not in seen:
                self._say(log, message)
        status: ExecutionStatus = "completed"
        if event.get("error"):
            status = "error"
        elif event.get("interrupts"):
            status = "cancelled"
        log.finish(status)

    def _say(self, log: ExecutionLog, message: BaseMessage) -> None:
        if isinstance(message, AIMessage):
            text = _text(message.content)
            if text:
                log.say("assistant", text)
                log.completion = text
            for call in message.tool_calls:
                log.say("assistant", json.dumps(call.get("args") or {}), tool=call.get("name"))
        elif isinstance(message, ToolMessage):
            log.say("tool", _text(message.content), tool=message.name)
        elif isinstance(message, HumanMessage):
            log.say("user", _text(message.content))

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
