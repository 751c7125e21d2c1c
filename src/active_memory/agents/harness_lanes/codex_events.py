"""What ``codex exec --json`` printed, in the toolkit's terms.

Each line is one JSON event: ``thread.started`` (the ``thread_id`` a repair resumes),
``turn.started``, ``item.started``/``item.completed`` (an ``item`` of type
``command_execution``, ``agent_message``, ``reasoning``, ``file_change``, ``mcp_tool_call``,
``web_search`` or ``error``, a warning), ``turn.completed`` with ``usage``
(``input_tokens``, of which ``cached_input_tokens`` were cache reads and
``cache_write_input_tokens`` cache writes, ``output_tokens``), ``turn.failed`` with an
``error`` and a top-level ``error`` event. A line that is not JSON is skipped.

Codex has no file-reading tool of its own: it reads with shell commands that its read-only
sandbox runs. A file counts as read when a command that prints files (``cat``, ``head``,
``tail``, ``sed``, ``nl``…) named it and exited 0; a file only matched by ``grep``/``rg`` does
not count, as with Claude Code's Grep. A command that names a path outside those folders, or
a word the shell would expand (:func:`~.read_roots.command_outside`), is kept in
``outside_reads``, whatever its exit code: the lane fails the session.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from active_memory.agents.harness_lanes.harness_cli import UsageKeys, json_events
from active_memory.agents.harness_lanes.read_roots import ToolReads, shell_script
from active_memory.agents.providers.base import TokenUsage

__all__ = ["CodexTranscript", "files_printed", "read_codex_events"]

# Commands whose arguments are files they print whole or in part.
_PRINTERS = frozenset({"cat", "head", "tail", "sed", "nl", "less", "more", "bat", "batcat"})
# Items that mean the session went beyond reading: a change made, a server or the web asked.
FORBIDDEN_ITEMS = frozenset({"file_change", "mcp_tool_call", "web_search"})
_USAGE = UsageKeys(
    input=("input_tokens",),
    output="output_tokens",
    cache_read="cached_input_tokens",
    cache_write="cache_write_input_tokens",
)


@dataclass(frozen=True, slots=True)
class CodexTranscript:
    """One ``codex exec`` run: its thread, last message, usage, calls, files read, failure and
    the commands' words that reach outside the folders."""

    thread_id: str | None
    answer: str | None
    completed: bool
    failure: str | None
    usage: TokenUsage
    tool_calls: int
    forbidden: tuple[str, ...]
    read_paths: frozenset[str]
    outside_reads: tuple[str, ...] = ()


def files_printed(command: str, cwd: Path) -> tuple[Path, ...]:
    """The existing files that the printing commands of ``command`` name, relative to ``cwd``."""
    lexer = shlex.shlex(shell_script(command), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return ()
    simple: list[list[str]] = [[]]
    for token in tokens:
        if token and all(char in "();<>|&" for char in token):
            simple.append([])
        else:
            simple[-1].append(token)
    found: list[Path] = []
    for words in simple:
        if not words or Path(words[0]).name not in _PRINTERS:
            continue
        for word in words[1:]:
            if word.startswith("-"):
                continue
            path = cwd / word
            if path.is_file():
                found.append(path)
    return tuple(found)


def read_codex_events(
    stdout: bytes, folders: Iterable[tuple[str, str]], cwd: Path
) -> CodexTranscript:
    """The transcript of one run from its ``--json`` output; commands ran in ``cwd``."""
    tool_reads = ToolReads(folders, cwd)
    thread_id: str | None = None
    answer: str | None = None
    completed = False
    failure: str | None = None
    calls = 0
    total = TokenUsage()
    forbidden: list[str] = []
    for event in json_events(stdout):
        kind = event.get("type")
        if kind == "thread.started" and isinstance(event.get("thread_id"), str):
            thread_id = event["thread_id"]
        elif kind == "item.completed" and isinstance(event.get("item"), Mapping):
            item = event["item"]
            item_type = item.get("type")
            if item_type == "agent_message" and isinstance(item.get("text"), str):
                answer = item["text"]
            elif item_type == "command_execution":
                calls += 1
                command = item.get("command")
                if isinstance(command, str):
                    # A failed command may still have printed what it read.
                    tool_reads.commanded(command)
                if item.get("exit_code") == 0 and isinstance(command, str):
                    for path in files_printed(command, cwd):
                        tool_reads.showed(str(path))
            elif item_type in FORBIDDEN_ITEMS:
                calls += 1
                forbidden.append(str(item_type))
        elif kind == "turn.completed":
            completed = True
            usage = event.get("usage")
            if isinstance(usage, Mapping):
                total += _USAGE.tokens(usage)
        elif kind in ("turn.failed", "error"):
            failure = _message(event) or failure
    return CodexTranscript(
        thread_id=thread_id,
        answer=answer if answer is not None and answer.strip() else None,
        completed=completed,
        failure=failure,
        usage=total,
        tool_calls=calls,
        forbidden=tuple(forbidden),
        read_paths=tool_reads.read_paths,
        outside_reads=tool_reads.outside_reads,
    )


def _message(event: Mapping[str, Any]) -> str | None:
    error = event.get("error")
    said = error.get("message") if isinstance(error, Mapping) else event.get("message")
    return said if isinstance(said, str) else None
