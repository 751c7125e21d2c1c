"""What every harness adapter provides: read a hook payload, write a hook answer.

Adapters are pure functions over plain JSON values. They never raise on a malformed payload:
``parse`` returns None and the caller answers with the harness's empty answer, because an
erroring hook can block or deny the tool call it was meant to inform.

The adapters run in the hook fallback on every tool call, so they import no ``dataclasses`` or
``typing`` at run time (either costs that call more than its matching does).
"""

from __future__ import annotations

from _collections_abc import Mapping  # collections.abc's, without collections (1.5 ms a call)

from active_memory.recall.signals import ToolCall
from active_memory.type_checking import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "EMPTY",
    "Harness",
    "ParsedCall",
    "flat_answer",
    "flat_call",
    "is_placeholder_session",
    "session_field",
    "text_field",
]

EMPTY: dict[str, Any] = {}
# Session ids a harness sends when it has none of its own (Claude Code's remote mode sends
# ``served:unknown``): every caller that sends one would otherwise share one conversation.
_PLACEHOLDER_SESSIONS = frozenset({"unknown", "null", "none", "undefined", "nil", "0", "-"})


class ParsedCall:
    """A hook payload read as a tool call, with the harness's own session id when it has one
    and the agent identity it sends for a subagent's calls (Claude Code's ``agent_id``)."""

    __slots__ = ("agent_id", "call", "session_id")

    def __init__(
        self, call: ToolCall, session_id: str | None = None, agent_id: str | None = None
    ) -> None:
        self.call = call
        self.session_id = session_id
        self.agent_id = agent_id

    def __repr__(self) -> str:
        return f"ParsedCall({self.call!r}, {self.session_id!r}, {self.agent_id!r})"


class Harness:
    """One harness: its name, payload reader, answer writer and context size caps.

    ``max_chars`` caps the context text in characters (Claude Code), ``max_bytes`` in UTF-8
    bytes (Codex); None is no cap of that kind.
    """

    __slots__ = ("answer", "max_bytes", "max_chars", "name", "parse")

    def __init__(
        self,
        name: str,
        parse: Callable[[Any], ParsedCall | None],
        answer: Callable[[str], dict[str, Any]],
        max_chars: int | None = None,
        max_bytes: int | None = None,
    ) -> None:
        self.name = name
        self.parse = parse
        self.answer = answer
        self.max_chars = max_chars
        self.max_bytes = max_bytes

    def __repr__(self) -> str:
        return f"Harness({self.name!r})"


def text_field(payload: Mapping[str, Any], *names: str) -> str | None:
    """The first of ``names`` holding a non-empty string."""
    for name in names:
        value = payload.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def is_placeholder_session(value: str) -> bool:
    """Whether ``value`` is a stand-in for "no session" (``unknown``, ``served:unknown``, …)."""
    lowered = value.strip().lower()
    return not lowered or lowered.rpartition(":")[2] in _PLACEHOLDER_SESSIONS


def session_field(payload: Mapping[str, Any], *names: str) -> str | None:
    """The first of ``names`` holding a real session id; a placeholder counts as none."""
    value = text_field(payload, *names)
    return None if value is None or is_placeholder_session(value) else value


def flat_call(
    payload: Any,
    tool_names: tuple[str, ...],
    arguments: Callable[[Mapping[str, Any]], Any],
    session_names: tuple[str, ...],
) -> ParsedCall | None:
    """A flat payload (Copilot CLI's, pi's extension's) read as a tool call: the tool under the
    first of ``tool_names``, what ``arguments`` finds in the payload when it is an object (else
    no arguments), the ``cwd``, the session under the first of ``session_names`` (a placeholder
    counts as none) and an ``agentId``/``agent_id`` when one is sent. None when the payload is
    not an object or names no tool."""
    if not isinstance(payload, Mapping):
        return None
    tool = text_field(payload, *tool_names)
    if tool is None:
        return None
    found = arguments(payload)
    call = ToolCall(tool, found if isinstance(found, Mapping) else {}, text_field(payload, "cwd"))
    agent = text_field(payload, "agentId", "agent_id")
    return ParsedCall(call, session_field(payload, *session_names), agent)


def flat_answer(context: str) -> dict[str, Any]:
    """The flat ``{"additionalContext": …}`` answer (Copilot CLI, pi); empty without context."""
    return {"additionalContext": context} if context else dict(EMPTY)
