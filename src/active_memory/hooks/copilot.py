"""GitHub Copilot CLI ``preToolUse`` command hooks.

Payload: ``{sessionId, timestamp, cwd, toolName, toolArgs}`` where ``toolArgs`` is a JSON
string or an object; tools are view, edit, create, grep, glob and bash. Answer: the flat
``{"additionalContext": "…"}``. An erroring hook denies the tool, so nothing here raises. The
Python SDK's in-process callback is :mod:`active_memory.hooks.copilot_sdk`.
"""

from __future__ import annotations

from _collections_abc import Mapping  # collections.abc's, without collections (1.5 ms a call)

from active_memory.hooks.base import Harness, ParsedCall, flat_answer, flat_call
from active_memory.type_checking import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

__all__ = ["HARNESS", "parse", "tool_arguments"]


def tool_arguments(value: Any) -> Mapping[str, Any]:
    """Copilot's ``toolArgs``: an object, or a JSON string holding one; anything else is empty."""
    if isinstance(value, Mapping):
        return value
    if isinstance(value, str) and value:
        import json  # only for a string: the hook fallback loads this adapter on every call

        try:
            decoded = json.loads(value)
        except ValueError:
            return {}
        if isinstance(decoded, Mapping):
            return decoded
    return {}


def parse(payload: Any) -> ParsedCall | None:
    return flat_call(payload, ("toolName", "tool_name"), _arguments, ("sessionId", "session_id"))


def _arguments(payload: Mapping[str, Any]) -> Mapping[str, Any]:
    return tool_arguments(payload.get("toolArgs", payload.get("tool_args")))


HARNESS = Harness("copilot", parse, flat_answer, None)
