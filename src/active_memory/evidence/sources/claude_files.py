"""Claude Code helpers: where a session's subagents live, what its real request was, and what a
line too long or too broken to parse still says about itself."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from active_memory.bounded_input import regular_file_problem
from active_memory.evidence.sources.claude_noise import command_line
from active_memory.evidence.sources.lines import first_lines

__all__ = ["agent_files", "initial_request", "launched_agent", "salvage"]

# Slash commands that manage the harness rather than ask for work: never the request.
_HOUSEKEEPING = frozenset(
    {"clear", "compact", "model", "mcp", "config", "cost", "status", "help", "login", "logout",
     "resume", "memory", "permissions", "doctor", "exit", "context", "usage", "agents", "hooks",
     "ide", "theme", "vim", "terminal-setup", "upgrade", "bug", "privacy-settings", "export"}
)  # fmt: skip
_COMMAND = re.compile(r"<command-name>\s*/?([^<\s]{1,128})\s*</command-name>")
_AGENT_ID = re.compile(r"agentId:\s*([A-Za-z0-9_-]{1,64})")
_KIND = re.compile(r'"type"\s*:\s*"(user|assistant)"')
_HINTS = {
    "sessionId": re.compile(r'"sessionId"\s*:\s*"([^"\\]{1,128})"'),
    "agentId": re.compile(r'"agentId"\s*:\s*"([A-Za-z0-9_-]{1,64})"'),
    "parentUuid": re.compile(r'"parentUuid"\s*:\s*"([^"\\]{1,128})"'),
}
_SIDECHAIN = re.compile(r'"isSidechain"\s*:\s*true')


def agent_files(
    session_file: Path, session_id: str | None
) -> Iterator[tuple[Path, str, str | None]]:
    """``(file, agent id, problem)`` for each subagent file of the session, found lazily and in
    order; ``problem`` says why a file cannot be read (a FIFO, a device: told by its type, never
    opened), None when it can.

    Compaction agents (``agent-acompact-*``) summarise the conversation for the harness; they
    did no work of their own and are skipped.
    """
    folder = session_file.with_suffix("") / "subagents"
    if folder.is_dir():
        for path in sorted(folder.glob("agent-*.jsonl")):
            if not path.stem.startswith("agent-acompact"):
                yield path, path.stem[len("agent-") :], _problem(path)
    for path in sorted(session_file.parent.glob("agent-*.jsonl")):
        problem = _problem(path)
        if problem is not None:
            # Whose it is cannot be told without opening it: reported, as it may be this one's.
            yield path, path.stem[len("agent-") :], problem
            continue
        if _session_of(path) == session_id:
            yield path, path.stem[len("agent-") :], None


def _session_of(path: Path) -> str | None:
    """The session a project-level agent file belongs to, from its first line. A first line over
    64 KiB (a long first prompt) is not parsed: its ``sessionId`` comes before the message, so
    the kept prefix still names it."""
    lines = first_lines(path, count=1, limit=1 << 16)
    if not lines:
        return None
    first = lines[0]
    if first.value is not None:
        found = first.value.get("sessionId")
        return found if isinstance(found, str) else None
    hint = _HINTS["sessionId"].search(first.head[:8192]) if first.cut else None
    return hint.group(1) if hint else None


def _problem(path: Path) -> str | None:
    problem = regular_file_problem(path)
    return None if problem is None else problem.split(";")[0]


def initial_request(request: list[str], text: str, meta: bool) -> bool:
    """Fold one main-conversation user text into ``request``; False once it is complete.

    The request is the user's first real ask: not a meta line, not an interruption marker, not
    harness output in tags. A slash command counts as ``/name args``, followed by the prompt it
    expanded to when the harness wrote one.
    """
    stripped = text.strip()
    if stripped.startswith("[Request interrupted") or not stripped:
        return True
    command = _COMMAND.search(stripped)
    if command is not None:
        name = command.group(1)
        if name in _HOUSEKEEPING or request:
            return True
        request.append(command_line(f"/{name}", stripped))
        return True
    if stripped.startswith("<"):
        return True
    if meta:
        if request:  # the expanded prompt of the command just run
            request.append(text)
            return False
        return True
    request.append(text)
    return False


def launched_agent(result: Any, text: str) -> str | None:
    """The agent id a Task/Agent tool result names: ``toolUseResult.agentId`` or its text."""
    if isinstance(result, dict) and isinstance(result.get("agentId"), str):
        agent = result["agentId"]
        return agent if re.fullmatch(r"[A-Za-z0-9_-]{1,64}", agent) else None
    found = _AGENT_ID.search(text[-4096:]) or _AGENT_ID.search(text[:4096])
    return found.group(1) if found else None


def salvage(head: str) -> tuple[str, dict[str, Any]] | None:
    """What a line that could not be parsed still says: its kind (user, assistant or tool) and
    the routing fields before its message; None when it is no conversation record."""
    start = head[:8192]
    kind = _KIND.search(start)
    if kind is None:
        return None
    hints: dict[str, Any] = {"isSidechain": _SIDECHAIN.search(start) is not None}
    for key, pattern in _HINTS.items():
        found = pattern.search(start)
        if found:
            hints[key] = found.group(1)
    role = kind.group(1)
    if role == "user" and '"tool_result"' in head[:65536]:
        role = "tool"
    return role, hints
