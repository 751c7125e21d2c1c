"""Which harness wrote a session file, told by its content, never by its name.

The first few lines decide. Each format has a shape no other has: Copilot events are
``{type: "x.y", data}``; current Codex lines are ``{timestamp, type, payload}``; a pi session
opens with ``{type: "session", version, id}``; a legacy Codex rollout opens with a bare
``{id, timestamp, instructions|git}`` and goes on with ``record_type`` lines and bare response
items; Claude Code entries carry ``sessionId``, ``uuid`` or ``leafUuid``. A file matching none
is refused with the formats tried and the shape of its first record: key names and a short
``type``, never values, so the message leaks nothing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from active_memory.errors import RunRecordError
from active_memory.evidence.sources.lines import SourceLine, first_lines
from active_memory.harnesses import harness_row

__all__ = ["detect_harness", "first_record_shape", "forced_mismatch"]

_TRIED = "Claude Code, Codex CLI (current and legacy rollouts), pi (session v1-v3), Copilot CLI"
_CODEX_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg",
                          "compacted"})  # fmt: skip
_CODEX_ITEMS = frozenset({"message", "function_call", "function_call_output", "reasoning",
                          "custom_tool_call", "local_shell_call"})  # fmt: skip
_CLAUDE_TYPES = frozenset({"user", "assistant", "summary", "system", "file-history-snapshot",
                           "queue-operation", "progress"})  # fmt: skip
_CLAUDE_KEYS = ("sessionId", "uuid", "leafUuid", "messageId")
_PI_TYPES = frozenset(
    {
        "session",
        "model_change",
        "thinking_level_change",
        "message",
        "session_info",
        "compaction",
        "branch_summary",
        "custom",
        "label",
    }
)
_COPILOT_TYPE = re.compile(r"^(session|user|assistant|tool|subagent|hook|skill|system)\.[a-z_]+$")
_WORD = re.compile(r"^[A-Za-z0-9_.:-]{1,40}$")


def _kind(value: dict[str, Any], index: int) -> str | None:
    given = value.get("type")
    kind = given if isinstance(given, str) else None
    if kind is not None and _COPILOT_TYPE.match(kind) and isinstance(value.get("data"), dict):
        return "copilot"
    if kind in _CODEX_TYPES and isinstance(value.get("payload"), dict):
        return "codex"
    if kind == "session" and "version" in value and "id" in value and index == 0:
        return "pi"
    if kind in _PI_TYPES and "parentId" in value and "id" in value and "uuid" not in value:
        return "pi"
    if (
        index == 0
        and "type" not in value
        and "id" in value
        and "timestamp" in value
        and ("instructions" in value or "git" in value)
    ):
        return "codex"  # the legacy form's bare first line
    if value.get("record_type") == "state" or (
        kind in _CODEX_ITEMS and "sessionId" not in value and "uuid" not in value
    ):
        return "codex"
    if kind in _CLAUDE_TYPES and any(key in value for key in _CLAUDE_KEYS):
        return "claude"
    if "sessionId" in value and isinstance(value.get("message"), dict):
        return "claude"
    return None


def first_record_shape(line: SourceLine | None) -> str:
    """What the first record looked like, in words that carry no value of it."""
    if line is None:
        return "the file is empty"
    if line.value is None:
        return f"its first line is not a JSON object ({line.problem}, {line.size} bytes)"
    keys = sorted(key if _WORD.match(key) else "…" for key in list(line.value)[:64])
    shown = ", ".join(keys[:12]) + (f" and {len(keys) - 12} more" if len(keys) > 12 else "")
    kind = line.value.get("type")
    typed = f", type {kind!r}" if isinstance(kind, str) and _WORD.match(kind) else ""
    return f"its first record has keys [{shown}]{typed}"


def detect_harness(path: str | os.PathLike[str]) -> str:
    """``claude``, ``codex``, ``pi`` or ``copilot``; RunRecordError when none matches."""
    source = Path(path)
    try:
        lines = first_lines(source, count=4)
    except OSError as error:
        raise RunRecordError("$", f"cannot be read ({error.strerror or error})",
                             source=str(source)) from None  # fmt: skip
    for index, line in enumerate(lines):
        if line.value is not None:
            kind = _kind(line.value, index)
            if kind is not None:
                return kind
    shape = first_record_shape(next(iter(lines), None))
    raise RunRecordError(
        "$",
        f"is neither a run record (a folder or run.json) nor a session of a known format (tried "
        f"{_TRIED}); {shape}; pass --harness to read it as one of them",
        source=str(source),
    )


def forced_mismatch(path: str | os.PathLike[str], harness: str) -> str | None:
    """Why ``path`` cannot be read as ``harness``: its content is another harness's session
    (named, with the option that reads it); None when it matches or no format does (then the
    forced reader decides, and says what it found)."""
    try:
        told = detect_harness(path)
    except RunRecordError:
        return None
    if told == harness:
        return None
    shown, forced = harness_row(told).display, harness_row(harness).display
    return (f"is a {shown} session, not a {forced} one; pass --harness {told} or leave "
            "--harness out")  # fmt: skip
