"""The hook commands and entries ``hooks install`` (and a host's wiring) write.

Every command fails soft at the shell level. Its program's output is captured first and
printed only when the program exited 0 and printed something; otherwise the command prints
``{}``, the empty answer every harness accepts, and exits 0. So whatever has gone away (the
interpreter, the package or the helper file, ``curl``, the ticket, the broker, the store) the
tool runs as it would have, and the answer is printed exactly once: a program that printed an
answer and then failed is not relayed (its cards were never acknowledged, so they stay
eligible), and nothing is appended to a half-written document. Commands are POSIX ``sh``, as
Claude Code, Codex and Copilot CLI (its ``bash`` field) run them.

A Claude Code command hook is also run by Copilot CLI, which reads a project's
``.claude/settings.json`` and ``.claude/settings.local.json``; when Copilot has active-memory's
own hook (``.github/hooks/active-memory.json`` in its project, or under ``$COPILOT_HOME/hooks``)
the Claude hook answers ``{}`` there, so the tool call gets its card once, from Copilot's hook.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from active_memory.hooks import helper as helper_module

__all__ = [
    "COPILOT_FILE",
    "EMPTY_ANSWER_SH",
    "HOOK_TIMEOUT_S",
    "HTTP_TIMEOUT_S",
    "claude_command",
    "claude_http_hook",
    "curl_command",
    "fail_soft",
    "helper_command",
]

HOOK_TIMEOUT_S = 5
HTTP_TIMEOUT_S = 1
COPILOT_FILE = "active-memory.json"  # under .github/hooks/ (project) or $COPILOT_HOME/hooks/
EMPTY_ANSWER_SH = "printf '{}\\n'"
_ENV_IDS = (("Node", "ACTIVE_MEMORY_NODE"), ("Conversation", "ACTIVE_MEMORY_CONVERSATION"),
            ("Execution", "ACTIVE_MEMORY_EXECUTION"))  # fmt: skip
# Copilot CLI runs this Claude hook (it sets COPILOT_CLI and COPILOT_PROJECT_DIR for hooks) and
# has active-memory's own hook: answer empty, and read the payload so the writer sees no EPIPE.
_UNDER_COPILOT = (
    '[ -n "$COPILOT_CLI" ] && [ -n "$COPILOT_PROJECT_DIR" ] && '
    f'{{ [ -f "$COPILOT_PROJECT_DIR/.github/hooks/{COPILOT_FILE}" ] || '
    f'[ -f "${{COPILOT_HOME:-$HOME/.copilot}}/hooks/{COPILOT_FILE}" ]; }}'
)


def _answer_once(command: str) -> str:
    """The branches after ``if``/``elif`` that print ``command``'s answer once, else ``{}``."""
    return (
        f'out=$({command} 2>/dev/null) && [ -n "$out" ]; then printf \'%s\\n\' "$out"; '
        f"else {EMPTY_ANSWER_SH}; fi"
    )


def fail_soft(command: str) -> str:
    """``command`` (a simple command) whose answer is printed once if it succeeds, else ``{}``."""
    return f"if {_answer_once(command)}"


def claude_command(command: str) -> str:
    """A fail-soft Claude Code hook command that stays silent where Copilot has its own hook."""
    silent = f"cat >/dev/null; {EMPTY_ANSWER_SH}"
    return f"if {_UNDER_COPILOT}; then {silent}; elif {_answer_once(command)}"


def _hook_command(harness: str, command: str) -> str:
    return claude_command(command) if harness == "claude" else fail_soft(command)


def _double_quoted(text: str) -> str:
    """``text`` for the inside of a POSIX double-quoted word."""
    return "".join("\\" + char if char in '\\"$`' else char for char in text)


def curl_command(harness: str, ticket: str | None = None) -> str:
    """A fail-soft POSIX sh hook command posting stdin to the broker named by the ticket.

    ``$ACTIVE_MEMORY_TICKET`` (set per process by a host) wins over ``ticket``; the ticket is
    a curl config file, so the token never appears on a command line. curl gives up after
    250 ms; with no curl, no ticket or no broker the command prints ``{}``. A Claude Code
    command also stays silent under Copilot CLI where Copilot has its own hook
    (:func:`claude_command`).
    """
    source = "$ACTIVE_MEMORY_TICKET" if ticket is None else (
        "${ACTIVE_MEMORY_TICKET:-" + _double_quoted(ticket) + "}"
    )  # fmt: skip
    return _hook_command(
        harness,
        f'curl -s --fail --max-time 0.25 -K "{source}" -H "Expect:" '
        f'-H "Content-Type: application/json" -H "X-Active-Memory-Harness: {harness}" '
        "--data-binary @-",
    )


def helper_command(
    harness: str,
    *,
    ticket: str | None = None,
    store: str | None = None,
    workspace: str | None = None,
    python: str | None = None,
) -> str:
    """A fail-soft command running the helper under ``python3 -I -S`` (built-ins only).

    The helper is imported from its directory rather than run as a script: an imported module
    is loaded from its cached bytecode, a script is compiled again on every tool call. Its
    :func:`~active_memory.hooks.helper.run` ends the process once the answer is flushed,
    without the interpreter's teardown. When the interpreter or the helper's directory is
    gone, the command prints ``{}``. A Claude Code command also stays silent under Copilot CLI
    where Copilot has its own hook.
    """
    directory = str(Path(helper_module.__file__).resolve().parent)
    # A JSON string is a valid Python literal and keeps the shell quoting readable.
    literal = json.dumps(directory)
    launcher = f"import sys;sys.path.insert(0,{literal});from helper import run;run()"
    words = [python or sys.executable, "-I", "-S", "-c", launcher, harness]
    for option, value in (("--ticket", ticket), ("--store", store), ("--workspace", workspace)):
        if value:
            words += [option, value]
    return _hook_command(harness, shlex.join(words))


def claude_http_hook(url: str, *, token: str | None = None) -> dict[str, Any]:
    """A Claude Code ``http`` hook. Without ``token`` the headers read the run's environment.

    For a host's per-run settings only: ``hooks install`` writes command hooks, because
    Copilot CLI refuses a whole project settings file that holds an ``http`` pre-tool hook
    (it requires https) and a literal token goes stale when ``serve`` restarts.
    """
    hook_url = url.rstrip("/") + ("/claude" if url.rstrip("/").endswith("/hook") else "")
    headers = {"X-Active-Memory-Harness": "claude"}
    hook: dict[str, Any] = {"type": "http", "url": hook_url, "timeout": HTTP_TIMEOUT_S}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    else:
        headers["Authorization"] = "Bearer $ACTIVE_MEMORY_TOKEN"
        for name, variable in _ENV_IDS:
            headers[f"X-Active-Memory-{name}"] = f"${variable}"
        hook["allowedEnvVars"] = ["ACTIVE_MEMORY_TOKEN", *(var for _, var in _ENV_IDS)]
    hook["headers"] = headers
    return hook
