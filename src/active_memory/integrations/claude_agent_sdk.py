"""The Claude Agent SDK: recall in a PreToolUse hook callback, the record from the message stream.

::

    graph = claude_graph("review-flow", {"implement": "worker", "review": "verifier"},
                         model="claude-sonnet-4-5")
    with open_run(RunIdentity(run_id, graph_hash=graph.hash), config, store, checkout) as run:
        memory = ClaudeAgentMemory(run, graph)
        async for message in memory.query("implement", prompt, ClaudeAgentOptions(cwd=checkout)):
            ...
        report = await memory.settle("succeeded")

:meth:`ClaudeAgentMemory.query` runs one node: it gives the session an id of its own (the
conversation cards are delivered to once), adds a ``PreToolUse`` :class:`HookMatcher` whose
callback answers with the recalled cards as ``additionalContext`` (in-process: the SDK calls it
over its control channel, no hook process, no broker), appends the node's graph guidance to the
system prompt, and records the execution from the messages it yields: assistant text, tool uses
and results, and subagent (Task) conversations as executions of their own. The postmortem
inherits the model the session reported. A host driving ``ClaudeSDKClient`` itself uses
:meth:`~ClaudeAgentMemory.options` and :meth:`~ClaudeAgentMemory.observe`.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

from active_memory.hooks import claude as claude_hook
from active_memory.integrations._runs import (
    ExecutionLog,
    FrameworkMemory,
    authored_graph,
    inherited_override,
    missing_extra,
)
from active_memory.models.runs import AuthoredGraph, Binding, ExecutionStatus, canonical_json
from active_memory.recall.recall_session import Caller

try:
    import claude_agent_sdk as sdk
    from claude_agent_sdk import (
        AssistantMessage,
        ClaudeAgentOptions,
        HookContext,
        HookInput,
        HookJSONOutput,
        HookMatcher,
        Message,
        ResultMessage,
        SystemMessage,
        TaskNotificationMessage,
        TextBlock,
        ToolResultBlock,
        ToolUseBlock,
        UserMessage,
    )
except ImportError as error:  # the module is the adapter: without its SDK it cannot load
    raise ImportError(missing_extra("claude_agent_sdk", "claude-agent-sdk")) from error

if TYPE_CHECKING:
    from claude_agent_sdk.types import HookCallback

    from active_memory.host import ActiveRun
    from active_memory.postmortem.binding import BindingOverride

__all__ = ["ClaudeAgentMemory", "RecordedQuery", "claude_graph"]

_log = logging.getLogger("active_memory.integrations.claude_agent_sdk")


def claude_graph(
    name: str,
    roles: Mapping[str, str],
    *,
    model: str,
    edges: tuple[tuple[str, str], ...] = (),
) -> AuthoredGraph:
    """The authored graph of Claude Agent SDK nodes (node id to kind), all on ``model``."""
    return authored_graph(name, roles, Binding(provider="anthropic", model=model), edges=edges)


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [str(block.get("text", "")) for block in content
                 if isinstance(block, dict) and block.get("type") == "text"]  # fmt: skip
        return "\n".join(parts)
    return "" if content is None else canonical_json(content)


def _with_guidance(options: ClaudeAgentOptions, guidance: str) -> ClaudeAgentOptions:
    """``options`` with ``guidance`` after the authored system prompt, whatever its form."""
    if not guidance:
        return options
    prompt = options.system_prompt
    if prompt is None:
        return replace(options, system_prompt=guidance)
    if isinstance(prompt, str):
        return replace(options, system_prompt=f"{prompt}\n\n{guidance}")
    if prompt.get("type") == "custom":
        custom = dict(prompt)
        custom["prompt"] = f"{custom['prompt']}\n\n{guidance}"
        return replace(options, system_prompt=custom)  # type: ignore[arg-type]
    if prompt.get("type") == "preset":
        preset = dict(prompt)
        appended = preset.get("append")
        preset["append"] = f"{appended}\n\n{guidance}" if appended else guidance
        return replace(options, system_prompt=preset)  # type: ignore[arg-type]
    # A prompt file cannot be appended to; the CLI's own flag appends after it.
    extra = {**options.extra_args, "append-system-prompt": guidance}
    return replace(options, extra_args=extra)


class _Lanes:
    """One query's conversations: the main one and each subagent task, by its tool use id."""

    def __init__(self, memory: ClaudeAgentMemory, main: ExecutionLog) -> None:
        self.memory = memory
        self.main = main
        self.tasks: dict[str, ExecutionLog] = {}
        self.tools: dict[str, str] = {}

    def lane(self, parent_tool_use_id: str | None) -> ExecutionLog:
        if parent_tool_use_id is None:
            return self.main
        task = self.tasks.get(parent_tool_use_id)
        if task is None:
            task = self.memory.recorder.start(
                self.main.node_id,
                conversation_id=f"{self.main.conversation_id}/task-{parent_tool_use_id}",
                execution_id=f"{self.main.id}.task-{len(self.tasks) + 1}",
            )
            self.tasks[parent_tool_use_id] = task
        return task


class ClaudeAgentMemory(FrameworkMemory):
    """Active memory for Claude Agent SDK sessions run as the nodes of one authored graph."""

    def __init__(self, run: ActiveRun, graph: AuthoredGraph) -> None:
        super().__init__(run, graph, source="claude-agent-sdk")
        self.models: dict[str, str] = {}  # node id -> the model its session reported
        self._lanes: dict[str, _Lanes] = {}

    def hook(
        self, node_id: str, conversation_id: str | None = None, execution_id: str | None = None
    ) -> HookCallback:
        """A PreToolUse callback recalling for ``node_id``: the cards as ``additionalContext``.

        The conversation is ``conversation_id``, else the session id of the hook input; a
        subagent's tool calls (``agent_id`` in the input) are its own conversation. The cards
        count as delivered when the callback returns them to the SDK. An erroring callback
        would block the tool, so failures are logged and answered with ``{}``.
        """
        run = self.active_run

        async def pre_tool_use(
            input_data: HookInput, tool_use_id: str | None, context: HookContext
        ) -> HookJSONOutput:
            try:
                parsed = claude_hook.parse(input_data)
                if parsed is None:
                    return {}
                conversation = conversation_id or parsed.session_id or ""
                agent = parsed.agent_id  # a subagent's calls: a non-empty agent_id, else None
                if conversation and agent:
                    conversation = f"{conversation}/agent-{agent}"
                caller = Caller(node_id, conversation or "unknown", execution_id,
                                tracked=bool(conversation))  # fmt: skip
                recall = run.recall_tool(
                    parsed.call, caller, max_chars=claude_hook.MAX_CONTEXT_CHARS
                )
            except Exception:
                _log.exception("Claude Agent SDK recall failed; the tool runs without context")
                return {}
            if recall is None:
                return {}
            if not recall.text:
                recall.release()
                return {}
            recall.commit()
            answer: HookJSONOutput = claude_hook.answer(recall.text)  # type: ignore[assignment]
            return answer

        return pre_tool_use

    def options(
        self, node_id: str, options: ClaudeAgentOptions | None = None, *, attempt: int = 1
    ) -> tuple[ClaudeAgentOptions, ExecutionLog]:
        """``options`` for one execution of ``node_id`` and the execution being recorded: a
        session id of its own (kept when given), the recall hook first among the PreToolUse
        matchers, and the node's graph guidance appended to the system prompt."""
        options = options or ClaudeAgentOptions()
        known = options.session_id or options.resume
        # continue_conversation picks the session itself (a session id may not be set with it):
        # its tool calls are then the conversation the hook input names.
        session = known or (None if options.continue_conversation else str(uuid.uuid4()))
        talk = session or f"continued-{uuid.uuid4()}"
        log = self.recorder.start(node_id, conversation_id=talk, attempt=attempt)
        hooks = dict(options.hooks or {})
        matcher = HookMatcher(matcher=None, hooks=[self.hook(node_id, session, log.id)])
        hooks["PreToolUse"] = [matcher, *hooks.get("PreToolUse", [])]
        updated = replace(options, hooks=hooks)
        if known is None and session is not None:
            updated = replace(updated, session_id=session)
        guidance = self.active_run.graph_guidance(node_id, talk, execution_id=log.id)
        self._lanes[log.id] = _Lanes(self, log)
        return _with_guidance(updated, guidance), log

    def observe(self, log: ExecutionLog, message: Message) -> None:
        """Record one message of ``log``'s session in its transcript (or its task's)."""
        lanes = self._lanes.setdefault(log.id, _Lanes(self, log))
        if isinstance(message, AssistantMessage):
            lane = lanes.lane(message.parent_tool_use_id)
            if message.model and not message.model.startswith("<"):
                self.models.setdefault(log.node_id, message.model)
            texts = []
            for block in message.content:
                if isinstance(block, TextBlock):
                    texts.append(block.text)
                    lane.say("assistant", block.text)
                elif isinstance(block, ToolUseBlock):
                    lanes.tools[block.id] = block.name
                    lane.say("assistant", canonical_json(block.input), tool=block.name)
            if texts:
                lane.completion = "\n".join(texts)
        elif isinstance(message, UserMessage):
            lane = lanes.lane(message.parent_tool_use_id)
            if isinstance(message.content, str):
                lane.say("user", message.content)
                return
            for item in message.content:
                if isinstance(item, ToolResultBlock):
                    text = ("[error] " if item.is_error else "") + _result_text(item.content)
                    lane.say("tool", text, tool=lanes.tools.get(item.tool_use_id))
                elif isinstance(item, TextBlock):
                    lane.say("user", item.text)
        elif isinstance(message, TaskNotificationMessage):
            task = lanes.tasks.get(message.tool_use_id or "")
            if task is not None:
                ended: ExecutionStatus = "error"
                if message.status == "completed":
                    ended = "completed"
                elif message.status == "stopped":
                    ended = "cancelled"
                task.finish(ended, message.summary or None)
        elif isinstance(message, SystemMessage) and message.subtype == "init":
            model = message.data.get("model")
            if isinstance(model, str) and model:
                self.models.setdefault(log.node_id, model)
        elif isinstance(message, ResultMessage):
            log.finish("error" if message.is_error else "completed", message.result)

    def query(
        self,
        node_id: str,
        prompt: str,
        options: ClaudeAgentOptions | None = None,
        *,
        attempt: int = 1,
    ) -> RecordedQuery:
        """Run one execution of ``node_id`` with ``claude_agent_sdk.query``: iterate the result
        for the SDK's messages (each recorded), or use it as ``async with`` first, so that an
        error the host raises while reading ends the execution in ``error``."""
        options, log = self.options(node_id, options, attempt=attempt)
        return RecordedQuery(self, log, self._stream(log, prompt, options))

    async def _stream(
        self, log: ExecutionLog, prompt: str, options: ClaudeAgentOptions
    ) -> AsyncIterator[Message]:
        if self.recorder.initial_input is None:
            self.recorder.initial_input = prompt
        log.say("user", prompt)
        try:
            # Closed with this stream, in the task closing it: the SDK's own cleanup (its task
            # group, the CLI process) must not be left to the garbage collector.
            query = sdk.query(prompt=prompt, options=options)  # an async generator
            stream = cast("AsyncGenerator[Message, None]", query)
            async with contextlib.aclosing(stream) as messages:
                async for message in messages:
                    self.observe(log, message)
                    yield message
        except GeneratorExit:
            # The host stopped reading: after a break or an error of its own, which a generator
            # cannot tell apart. RecordedQuery's exit, else the run's outcome, ends it.
            raise
        except BaseException as error:
            self._end(log, "error" if isinstance(error, Exception) else "cancelled")
            raise
        self._end(log, "completed")

    def _end(self, log: ExecutionLog, status: ExecutionStatus) -> None:
        """End ``log`` (unless its result message did) and its subagent tasks with it."""
        if log.status is None:
            log.finish(status)
        ended = log.status or status
        for task in self._lanes[log.id].tasks.values():
            if task.status is None:
                task.finish(ended)

    def _postmortem_override(self, override: BindingOverride | None) -> BindingOverride | None:
        """The postmortem runs on the model the source node's session reported, unless
        ``override`` names one."""
        return inherited_override(self.recorder, self.models, override)


class RecordedQuery:
    """One node's query (:meth:`ClaudeAgentMemory.query`): an async iterator of the SDK's
    messages, and an async context manager whose exit ends the execution: ``error`` when the
    host's own code raised inside it, ``cancelled`` when the host stopped reading early.

    Iterated bare, an execution the host stopped reading stays open until
    :meth:`~ClaudeAgentMemory.settle` ends it with the run (``error`` when the run failed)."""

    def __init__(
        self, memory: ClaudeAgentMemory, log: ExecutionLog, stream: AsyncIterator[Message]
    ) -> None:
        self.memory = memory
        self.execution = log
        self._stream = stream

    def __aiter__(self) -> RecordedQuery:
        return self

    async def __anext__(self) -> Message:
        return await anext(self._stream)

    async def __aenter__(self) -> RecordedQuery:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if error is not None:
            self.memory._end(
                self.execution, "error" if isinstance(error, Exception) else "cancelled"
            )
        else:
            self.memory._end(self.execution, "cancelled")  # unless the session already ended
        closing = getattr(self._stream, "aclose", None)
        if closing is not None:
            await closing()
