"""GitHub Copilot's Python SDK: an ``on_pre_tool_use`` callback serving recall in-process.

For a host that drives Copilot through its SDK rather than the CLI's command hooks. The SDK
package is not a dependency: its input is read duck-typed, as a mapping or as an object with
attributes. An erroring callback denies the tool, so failures are logged and answered with
nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from active_memory.hooks.copilot import tool_arguments
from active_memory.recall.recall_session import UNKNOWN_CONVERSATION, Caller, RecallSession
from active_memory.recall.signals import ToolCall

__all__ = ["pre_tool_use_hook"]

_log = logging.getLogger("active_memory.hooks.copilot_sdk")


def _field(source: Any, *names: str) -> Any:
    for name in names:
        if isinstance(source, Mapping):
            if name in source:
                return source[name]
        elif hasattr(source, name):
            return getattr(source, name)
    return None


def pre_tool_use_hook(
    session: RecallSession,
    *,
    node_id: str,
    conversation_id: str | None = None,
    execution_id: str | None = None,
) -> Callable[[Any, Any], Awaitable[dict[str, Any] | None]]:
    """An ``on_pre_tool_use(input, invocation)`` callback for the Copilot Python SDK.

    The SDK's input names the tool (``toolName``, ``toolArgs``) and the session's
    ``workingDirectory``, against which relative paths in the arguments resolve (the CLI's
    command hooks call it ``cwd``, also read). The conversation is ``conversation_id`` when
    given, else the invocation's session id, else the input's (with none, calls are answered
    untracked). The cards count as delivered when the callback returns its answer to the SDK.
    """

    async def on_pre_tool_use(input_data: Any, invocation: Any = None) -> dict[str, Any] | None:
        try:
            tool = _field(input_data, "toolName", "tool_name")
            if not isinstance(tool, str) or not tool:
                return None
            arguments = tool_arguments(_field(input_data, "toolArgs", "tool_args"))
            cwd = _field(input_data, "workingDirectory", "working_directory", "cwd")
            session_id = _field(invocation, "session_id", "sessionId")
            if not isinstance(session_id, str) or not session_id:
                session_id = _field(input_data, "sessionId", "session_id")
            conversation = conversation_id or (session_id if isinstance(session_id, str) else "")
            caller = Caller(node_id, conversation or UNKNOWN_CONVERSATION, execution_id,
                            tracked=bool(conversation))  # fmt: skip
            call = ToolCall(tool, arguments, cwd if isinstance(cwd, str) else None)
            recall = session.recall(call, caller)
        except Exception:
            _log.exception("Copilot pre-tool recall failed; the tool runs without context")
            return None
        if not recall.text:
            recall.release()
            return None
        recall.commit()
        return {"additionalContext": recall.text}

    return on_pre_tool_use
