"""GitHub Copilot: the CLI ``preToolUse`` command hook and the Python SDK callback.

CLI payload: ``{sessionId, timestamp, cwd, toolName, toolArgs}`` where ``toolArgs`` is a JSON
string or an object; tools are view, edit, create, grep, glob and bash. Answer: the flat
``{"additionalContext": "…"}``. An erroring hook denies the tool, so nothing here raises.

The SDK callback (:func:`pre_tool_use_hook`) serves recall in-process for a host that drives
Copilot through its Python SDK. The SDK package is not a dependency: its input is read
duck-typed, as a mapping or as an object with attributes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from active_memory.hooks.base import EMPTY, Harness, ParsedCall, text_field
from active_memory.recall.recall_session import UNKNOWN_CONVERSATION, Caller, RecallSession
from active_memory.recall.signals import ToolCall

__all__ = ["HARNESS", "answer", "parse", "pre_tool_use_hook"]

_log = logging.getLogger("active_memory.hooks.copilot")


def _arguments(value: Any) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    if isinstance(value, str) and value:
        try:
            decoded = json.loads(value)
        except ValueError:
            return {}
        if isinstance(decoded, Mapping):
            return decoded
    return {}


def parse(payload: Any) -> ParsedCall | None:
    if not isinstance(payload, Mapping):
        return None
    tool = text_field(payload, "toolName", "tool_name")
    if tool is None:
        return None
    arguments = _arguments(payload.get("toolArgs", payload.get("tool_args")))
    call = ToolCall(tool, arguments, text_field(payload, "cwd"))
    return ParsedCall(call, text_field(payload, "sessionId", "session_id"))


def answer(context: str) -> dict[str, Any]:
    return {"additionalContext": context} if context else dict(EMPTY)


HARNESS = Harness("copilot", parse, answer, None)


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

    The conversation is ``conversation_id`` when given, else the invocation's session id (with
    neither, calls are answered untracked). The cards count as delivered when the callback
    returns its answer to the SDK.
    """

    async def on_pre_tool_use(input_data: Any, invocation: Any = None) -> dict[str, Any] | None:
        try:
            tool = _field(input_data, "toolName", "tool_name")
            if not isinstance(tool, str) or not tool:
                return None
            arguments = _arguments(_field(input_data, "toolArgs", "tool_args"))
            cwd = _field(input_data, "cwd")
            session_id = _field(invocation, "session_id", "sessionId")
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
