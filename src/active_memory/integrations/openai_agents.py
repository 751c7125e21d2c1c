"""The OpenAI Agents SDK: cards beside each function tool's result, the record from the run's items.

::

    graph = agents_graph(implement, roles={"implement": "worker", "review": "verifier"})
    with open_run(RunIdentity(run_id, graph_hash=graph.hash), config, store, checkout) as run:
        memory = OpenAIAgentsMemory(run, graph)
        result = await memory.run(implement, "Fix the flaky test", run_config=RunConfig(...))
        report = await memory.settle("succeeded")

Each agent reachable from the starting one through its handoffs is a node (its name the node
id; its role, worker or verifier, from ``roles``; its binding ``openai`` and its own model), and
each handoff an edge. :meth:`OpenAIAgentsMemory.run` runs clones of those agents in which:

* every function tool is wrapped: the tool call is recalled before the tool runs (its receipt
  recorded), and the matching cards are appended to the tool's output, so the model reads them
  next to the result; they count as delivered when the wrapped tool returns that output. A tool
  that raises hands nothing over and its cards stay eligible. (A tool *output guardrail* can
  only allow or replace an output, never add to it: the wrapper is the extension point that
  keeps the result and puts the cards beside it.)
* the instructions end with the agent's graph guidance, claimed once per conversation and
  repeated on later turns (the system prompt is sent on every turn);
* run hooks record the run as it goes: an execution opens whenever the current agent changes
  (``on_agent_start``; its occurrence counts that agent's stretches), and each model response
  (``on_llm_end``: text, tool calls, handoff calls), tool result (``on_tool_end``, labelled with
  the call's receipt) and handoff goes to the current execution's transcript at once. When
  ``Runner.run`` raises (a model error, ``MaxTurnsExceeded``, a guardrail), everything up to the
  error is in the record, and the execution that was running ends in ``error``.

One ``Runner`` run is one conversation: a handoff passes the whole history on, cards included,
so a card reaches the run once, whichever agent called the tool. The postmortem runs after the
run settles, on the source agent's own model, through this project's provider sessions.
"""

from __future__ import annotations

import contextvars
import copy
import dataclasses
import inspect
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from active_memory.integrations._runs import ExecutionLog, FrameworkMemory, missing_extra
from active_memory.models.runs import AGENT_KINDS, AuthoredGraph, Binding, GraphNode
from active_memory.recall.recall_session import Caller
from active_memory.recall.signals import ToolCall

try:
    from agents.models import get_default_model
    from agents.tool import ToolOutputFileContent, ToolOutputImage, ToolOutputText
    from agents.tool_context import ToolContext

    from agents import (
        Agent,
        FunctionTool,
        Handoff,
        RunContextWrapper,
        RunHooks,
        Runner,
        RunResult,
    )
except ImportError as error:  # the module is the adapter: without its SDK it cannot load
    raise ImportError(missing_extra("agents", "openai-agents")) from error

if TYPE_CHECKING:
    from active_memory.host import ActiveRun
    from agents import RunConfig, TResponseInputItem

__all__ = ["OpenAIAgentsMemory", "agents_graph", "reachable_agents"]

_log = logging.getLogger("active_memory.integrations.openai_agents")
_current: contextvars.ContextVar[_RunState | None] = contextvars.ContextVar(
    "active_memory_openai_agents_run", default=None
)


def _handoff_agent(entry: Agent[Any] | Handoff[Any, Any]) -> Agent[Any] | None:
    if isinstance(entry, Agent):
        return entry
    # handoff(agent) keeps its agent only behind a weak reference; nothing public names it.
    reference = getattr(entry, "_agent_ref", None)
    target = reference() if callable(reference) else None
    return target if isinstance(target, Agent) else None


def reachable_agents(start: Agent[Any]) -> tuple[Agent[Any], ...]:
    """``start`` and every agent its handoffs reach, in breadth-first order, once each."""
    found: dict[str, Agent[Any]] = {}
    queue = [start]
    while queue:
        agent = queue.pop(0)
        if agent.name in found:
            continue
        found[agent.name] = agent
        queue.extend(t for t in map(_handoff_agent, agent.handoffs) if t is not None)
    return tuple(found.values())


def _model_name(agent: Agent[Any]) -> str:
    model = agent.model
    if isinstance(model, str) and model:
        return model
    named = getattr(model, "model", None)  # the SDK's OpenAI models keep their name here
    return named if isinstance(named, str) and named else get_default_model()


def agents_graph(
    start: Agent[Any],
    roles: Mapping[str, str],
    *,
    name: str | None = None,
    provider: str = "openai",
) -> AuthoredGraph:
    """The authored graph of the agents ``start`` reaches: each agent a node of the kind
    ``roles`` gives it (``worker`` when unnamed), bound to ``provider`` and its own model;
    each handoff an edge."""
    agents = reachable_agents(start)
    nodes, edges = [], []
    for agent in agents:
        kind = roles.get(agent.name, "worker")
        binding = (
            Binding(provider=provider, model=_model_name(agent)) if kind in AGENT_KINDS else None
        )
        nodes.append(GraphNode(id=agent.name, kind=kind, binding=binding))
        for entry in agent.handoffs:
            target = entry.agent_name if isinstance(entry, Handoff) else entry.name
            edges.append({"source": agent.name, "target": target})
    raw = {"name": name or start.name, "nodes": [node.model_dump(mode="json") for node in nodes],
           "edges": edges}  # fmt: skip
    return AuthoredGraph(name=name or start.name, nodes=tuple(nodes), raw=raw)


def _with_cards(output: Any, cards: str) -> Any:
    """The tool's output with the cards after it, in the output's own form."""
    if isinstance(output, str):
        return f"{output}\n\n{cards}" if output else cards
    if isinstance(output, list):
        return [*output, ToolOutputText(text=cards)]
    structured = isinstance(output, ToolOutputText | ToolOutputImage | ToolOutputFileContent) or (
        isinstance(output, Mapping) and output.get("type") in ("text", "image", "file")
    )
    if structured:
        return [output, ToolOutputText(text=cards)]
    return f"{output}\n\n{cards}"  # the SDK would str() it for the model anyway


class _RunState:
    """One ``Runner`` run: its conversation, its executions in order, the current one."""

    def __init__(self, memory: OpenAIAgentsMemory, conversation_id: str) -> None:
        self.memory = memory
        self.conversation_id = conversation_id
        self.logs: list[ExecutionLog] = []
        self.current: ExecutionLog | None = None
        self.guidance: dict[str, str] = {}
        self.receipts: dict[str, int] = {}  # tool call id -> its receipt seq

    def enter(self, node_id: str) -> ExecutionLog:
        if self.current is None or self.current.node_id != node_id:
            if self.current is not None and self.current.status is None:
                self.current.finish("completed")
            log = self.memory.recorder.start(node_id, conversation_id=self.conversation_id)
            self.logs.append(log)
            self.current = log
        return self.current

    def guidance_for(self, node_id: str) -> str:
        if node_id not in self.guidance:
            execution = self.current.id if self.current is not None else None
            self.guidance[node_id] = self.memory.active_run.graph_guidance(
                node_id, self.conversation_id, execution_id=execution
            )
        return self.guidance[node_id]


def _say_response(log: ExecutionLog, output: Sequence[Any]) -> None:
    """One model response's messages and tool calls (handoffs are tool calls) in ``log``."""
    for item in output:
        kind = getattr(item, "type", None)
        if kind == "message":
            parts = [str(getattr(part, "text", None) or getattr(part, "refusal", None) or "")
                     for part in getattr(item, "content", None) or ()]  # fmt: skip
            text = "".join(parts)
            if text:
                log.say("assistant", text)
                log.completion = text
        elif kind == "function_call":
            name = str(getattr(item, "name", "") or "tool")
            log.say("assistant", str(getattr(item, "arguments", "") or ""), tool=name)


class _Hooks(RunHooks[Any]):
    """Records the run as it goes (see the module); the host's hooks still run."""

    def __init__(self, state: _RunState, inner: RunHooks[Any] | None) -> None:
        self.state = state
        self.inner = inner or RunHooks()

    async def on_agent_start(self, context: Any, agent: Any) -> None:
        self.state.enter(agent.name)
        await self.inner.on_agent_start(context, agent)

    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        await self.inner.on_agent_end(context, agent, output)

    async def on_llm_start(self, context: Any, agent: Any, system: Any, items: Any) -> None:
        await self.inner.on_llm_start(context, agent, system, items)

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        _say_response(self.state.enter(agent.name), getattr(response, "output", None) or ())
        await self.inner.on_llm_end(context, agent, response)

    async def on_handoff(self, context: Any, from_agent: Any, to_agent: Any) -> None:
        self.state.enter(from_agent.name).say("tool", f"handoff to {to_agent.name}", tool="handoff")
        await self.inner.on_handoff(context, from_agent, to_agent)

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        await self.inner.on_tool_start(context, agent, tool)

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        call = getattr(context, "tool_call_id", None)
        receipt = self.state.receipts.pop(call, None) if isinstance(call, str) else None
        self.state.enter(agent.name).say(
            "tool", str(result), tool=getattr(tool, "name", None), receipt=receipt
        )
        await self.inner.on_tool_end(context, agent, tool, result)


class OpenAIAgentsMemory(FrameworkMemory):
    """Active memory for OpenAI Agents SDK runs over one authored graph of agents."""

    def __init__(self, run: ActiveRun, graph: AuthoredGraph) -> None:
        super().__init__(run, graph, source="openai-agents")
        self._clones: dict[int, Agent[Any]] = {}

    def wrap_tool(self, tool: FunctionTool) -> FunctionTool:
        """``tool`` with recall around it: the cards appended to its output (see the module)."""
        invoke = tool.on_invoke_tool
        run = self.active_run

        async def on_invoke_tool(context: ToolContext[Any], arguments: str) -> Any:
            state = _current.get()
            recall = None
            if state is not None:
                try:
                    node = getattr(context.agent, "name", None) or "unknown"
                    log = state.enter(node)
                    parsed = ToolCall(context.tool_name, _arguments(arguments), None)
                    caller = Caller(node, state.conversation_id, log.id)
                    recall = run.recall_tool(parsed, caller)
                    if recall is not None and recall.receipt is not None:
                        state.receipts[context.tool_call_id] = recall.receipt.seq
                except Exception:
                    _log.exception("OpenAI Agents recall failed; the tool runs without context")
            try:
                output = await invoke(context, arguments)
            except BaseException:
                if recall is not None:
                    recall.release()
                raise
            if recall is None:
                return output
            if not recall.text:
                recall.release()
                return output
            recall.commit()
            return _with_cards(output, recall.text)

        wrapped = copy.copy(tool)
        wrapped.on_invoke_tool = on_invoke_tool
        return wrapped

    def agent(self, start: Agent[Any]) -> Agent[Any]:
        """A clone of ``start`` (and of every agent its handoffs reach) with wrapped function
        tools and graph guidance after its instructions."""
        originals = reachable_agents(start)
        for original in originals:
            if id(original) not in self._clones:
                tools = [self.wrap_tool(t) if isinstance(t, FunctionTool) else t
                         for t in original.tools]  # fmt: skip
                instructions = _guided(original.instructions, original.name)
                self._clones[id(original)] = original.clone(tools=tools, instructions=instructions)
        for original in originals:
            clone = self._clones[id(original)]
            clone.handoffs = [self._handoff(entry) for entry in original.handoffs]
        return self._clones[id(start)]

    def _handoff(self, entry: Agent[Any] | Handoff[Any, Any]) -> Agent[Any] | Handoff[Any, Any]:
        if isinstance(entry, Agent):
            clone: Agent[Any] = self._clones.get(id(entry), entry)
            return clone
        invoke = entry.on_invoke_handoff

        async def on_invoke_handoff(context: RunContextWrapper[Any], arguments: str) -> Any:
            target = await invoke(context, arguments)
            return self._clones.get(id(target)) or self.agent(target)

        replaced: Handoff[Any, Any] = dataclasses.replace(
            entry, on_invoke_handoff=on_invoke_handoff
        )
        return replaced

    async def run(
        self,
        start: Agent[Any],
        input: str | list[TResponseInputItem],
        *,
        conversation_id: str | None = None,
        hooks: RunHooks[Any] | None = None,
        run_config: RunConfig | None = None,
        **runner: Any,
    ) -> RunResult:
        """``Runner.run`` over the wrapped agents, its executions recorded as it goes (see the
        module). ``runner`` is passed on (``context``, ``max_turns``, ``session``...)."""
        state = _RunState(self, conversation_id or f"openai-agents-{uuid.uuid4().hex}")
        if self.recorder.initial_input is None and isinstance(input, str):
            self.recorder.initial_input = input
        if isinstance(input, str):
            state.enter(start.name).say("user", input)
        token = _current.set(state)
        try:
            result = await Runner.run(self.agent(start), input, hooks=_Hooks(state, hooks),
                                      run_config=run_config, **runner)  # fmt: skip
        except BaseException as error:
            if state.current is not None and state.current.status is None:
                state.current.finish("error" if isinstance(error, Exception) else "cancelled")
            raise
        finally:
            _current.reset(token)
            for log in state.logs:
                if log.status is None:
                    log.finish("completed")
        return result


def _arguments(text: str) -> dict[str, Any]:
    import json

    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _guided(instructions: Any, node_id: str) -> Callable[[RunContextWrapper[Any], Any], Any]:
    """Instructions that end with the node's graph guidance for the current run."""

    async def guided(context: RunContextWrapper[Any], agent: Any) -> str:
        base = instructions
        if callable(base):
            base = base(context, agent)
            if inspect.isawaitable(base):
                base = await base
        text = str(base or "")
        state = _current.get()
        guidance = state.guidance_for(node_id) if state is not None else ""
        return f"{text}\n\n{guidance}" if text and guidance else text or guidance

    return guided
