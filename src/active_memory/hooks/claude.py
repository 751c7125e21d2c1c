"""Claude Code ``PreToolUse`` hooks (command or ``http``).

Payload: ``{session_id, transcript_path, cwd, hook_event_name, tool_name, tool_input,
tool_use_id}``, plus ``agent_id`` (and ``agent_type``) on a subagent's calls, which carry the
parent's ``session_id``; fields this adapter does not read (``permission_mode``,
``scratchpad_dir``, ``mcp_server``, and whatever a later version adds) are ignored. A
placeholder session id (``served:unknown`` in the remote mode) counts as none: the transcript
names the conversation, else the call is answered untracked. Read/Edit/Write carry an absolute
``file_path``, Grep/Glob ``pattern`` and ``path``, Bash ``command``.

Answer: ``{"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "…"}}``
with no permission decision, so the tool runs as it would have; Claude Code keeps at most
10,000 characters of ``additionalContext``, and 8,000 of a user hook's when
``CLAUDE_CODE_RESTRICT_PERSONAL_CONFIG`` is set (:func:`context_cap`: the helper, which inherits
Claude Code's environment, asks for the smaller frame whenever the setting is on).
"""

from __future__ import annotations

from _collections_abc import Mapping  # collections.abc's, without collections (1.5 ms a call)

from active_memory.harnesses import harness_row
from active_memory.hooks.base import EMPTY, Harness, ParsedCall, session_field, text_field
from active_memory.recall.signals import ToolCall
from active_memory.type_checking import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "HARNESS",
    "MAX_CONTEXT_CHARS",
    "RESTRICTED_CONTEXT_CHARS",
    "RESTRICTED_SETTING",
    "answer",
    "context_cap",
    "parse",
]

MAX_CONTEXT_CHARS = 10_000
RESTRICTED_CONTEXT_CHARS = 8_000
RESTRICTED_SETTING = "CLAUDE_CODE_RESTRICT_PERSONAL_CONFIG"
_OFF = frozenset({"", "0", "false", "no", "off"})


def context_cap(environ: Mapping[str, str]) -> int | None:
    """The smaller character cap Claude Code applies in ``environ``, else None (the usual)."""
    value = environ.get(RESTRICTED_SETTING)
    if value is None or value.strip().lower() in _OFF:
        return None
    return RESTRICTED_CONTEXT_CHARS


EVENT = harness_row("claude").tool_event  # Codex's too: it reuses this envelope


def parse(payload: Any) -> ParsedCall | None:
    if not isinstance(payload, Mapping):
        return None
    event = payload.get("hook_event_name")
    tool = text_field(payload, "tool_name")
    if tool is None or (event is not None and event != EVENT):
        return None
    arguments = payload.get("tool_input")
    call = ToolCall(
        tool,
        arguments if isinstance(arguments, Mapping) else {},
        text_field(payload, "cwd"),
    )
    session = session_field(payload, "session_id") or _transcript_key(payload)
    return ParsedCall(call, session, text_field(payload, "agent_id"))


def _transcript_key(payload: Mapping[str, Any]) -> str | None:
    """A conversation key from the transcript file when the session id is missing."""
    path = text_field(payload, "transcript_path")
    if path is None:
        return None
    import hashlib  # only here: loading it costs the usual call, which has a session id, ~3 ms

    return "transcript-" + hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def answer(context: str) -> dict[str, Any]:
    if not context:
        return dict(EMPTY)
    return {"hookSpecificOutput": {"hookEventName": EVENT, "additionalContext": context}}


HARNESS = Harness("claude", parse, answer, MAX_CONTEXT_CHARS)
