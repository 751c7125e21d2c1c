"""The session-end hook ``hooks install --learn`` writes beside the recall hook.

Each harness names the event differently (its row in :mod:`active_memory.harnesses` says which):
Claude Code and Codex run ``SessionEnd`` hooks (payload: ``session_id``, ``transcript_path``,
``cwd``, ``reason``), Copilot CLI ``sessionEnd`` (``sessionId``, ``cwd``, ``reason``; the
session file is found from the id). pi has no hook file: its extension (``hooks/pi``) listens to
``session_shutdown`` and starts the same command with ``session_file``, ``cwd`` and ``reason``.
A harness with no session-end event at all gets a note saying what to run instead.

The command runs :mod:`active_memory.learn.session_end` under ``python3 -I -S``, imported from
its folder like the recall helper, with its output discarded and its exit status forced to 0:
a harness waits for a session-end hook and may report one that fails, and learning must cost
the user neither.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

from active_memory.harnesses import HARNESSES
from active_memory.hooks.codex_trust import trusted_hash
from active_memory.hooks.config_files import merge_hook_list, ours
from active_memory.learn import session_end

__all__ = [
    "NO_SESSION_END",
    "PI_LEARN_PLACEHOLDER",
    "SESSION_END_EVENTS",
    "SESSION_END_TIMEOUT_S",
    "codex_session_end_note",
    "pi_learn_literal",
    "session_end_argv",
    "session_end_command",
    "with_session_end",
    "without_ours",
]

# The harness's session-end event, by harness name (from the harness table); None: it has none
# a hook file can name.
SESSION_END_EVENTS: dict[str, str | None] = {row.name: row.session_end_event for row in HARNESSES}
SESSION_END_TIMEOUT_S = 5
# The pi extension's line naming the command (hooks/pi/active-memory.ts), as shipped.
PI_LEARN_PLACEHOLDER = '"__ACTIVE_MEMORY_LEARN__"'
_PI_LEARN_LINE = re.compile(r'^const LEARN_COMMAND = ("(?:[^"\\\n]|\\.)*");$', re.MULTILINE)
NO_SESSION_END = (
    "{display} has no session-end hook active-memory can install, so its sessions are not "
    "queued by themselves: queue one after it ends with `active-memory learn queue FILE` "
    "(its session files are under {sessions}), then run `active-memory learn run`."
)


def session_end_argv(
    harness: str, *, folder: Path, store: Path, python: str | None = None
) -> list[str]:
    """The command line that queues the ended session into ``folder`` and starts the worker
    for ``store``: the stdlib hook, imported from its folder (so its cached bytecode is used)."""
    directory = str(Path(session_end.__file__).resolve().parent)
    interpreter = python or sys.executable
    launcher = (
        f"import sys;sys.path.insert(0,{json.dumps(directory)});from session_end import main;main()"
    )
    return [interpreter, "-I", "-S", "-c", launcher, harness, "--folder", str(folder),
            "--store", str(store), "--python", interpreter]  # fmt: skip


def session_end_command(
    harness: str, *, folder: Path, store: Path, python: str | None = None
) -> str:
    """:func:`session_end_argv` as a POSIX sh command that prints nothing and exits 0 whatever
    happens."""
    words = session_end_argv(harness, folder=folder, store=store, python=python)
    return f"{shlex.join(words)} >/dev/null 2>&1 || true"


def _groups_with(groups: Any, hook: dict[str, Any] | None) -> list[Any]:
    """Matcher groups with active-memory's hook replaced in place (``hook`` None: removed);
    a group left empty is dropped, a first install appends a group of its own."""
    merged: list[Any] = []
    placed = hook is None
    for group in groups if isinstance(groups, list) else []:
        items = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(items, list) and any(ours(item) for item in items):
            kept = [item for item in items if not ours(item)]
            if not placed and hook is not None:
                kept, placed = merge_hook_list(items, hook)
            if not kept:
                continue
            group = {**group, "hooks": kept}
        merged.append(group)
    if not placed and hook is not None:
        merged.append({"hooks": [hook]})
    return merged


def with_session_end(document: dict[str, Any], harness: str, command: str | None) -> dict[str, Any]:
    """``document`` (a harness's hook file) with active-memory's session-end hook set to
    ``command``, or removed when ``command`` is None. The user's own hooks keep their places."""
    event = SESSION_END_EVENTS[harness]
    if event is None or harness == "pi":  # pi's is in its extension, not in a hook file
        return document
    hooks = document.get("hooks")
    hooks = dict(hooks) if isinstance(hooks, dict) else {}
    current = hooks.get(event)
    if harness == "copilot":
        hook = {"type": "command", "bash": command, "timeoutSec": SESSION_END_TIMEOUT_S}
        items = current if isinstance(current, list) else []
        if command is None:
            merged = [item for item in items if not ours(item)]
        else:
            merged, placed = merge_hook_list(items, hook)
            merged = merged if placed else [*merged, hook]
    else:
        given = (
            None
            if command is None
            else {"type": "command", "command": command, "timeout": SESSION_END_TIMEOUT_S}
        )
        merged = _groups_with(current, given)
    if merged:
        hooks[event] = merged
    else:
        hooks.pop(event, None)
    return {**document, "hooks": hooks}


def without_ours(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with every active-memory hook removed from every event (``hooks
    uninstall``); events left empty are dropped."""
    hooks = document.get("hooks")
    if not isinstance(hooks, dict):
        return document
    kept: dict[str, Any] = {}
    for event, entries in hooks.items():
        if not isinstance(entries, list):
            kept[event] = entries
            continue
        flat = all(isinstance(item, dict) and "hooks" not in item for item in entries)
        merged = (
            [item for item in entries if not ours(item)] if flat else (_groups_with(entries, None))
        )
        if merged:
            kept[event] = merged
    return {**document, "hooks": kept}


def codex_session_end_note(path: Path, text: str, config: Path, *, changed: bool) -> str | None:
    """What to do so Codex runs the ``SessionEnd`` hook just written (Codex runs a hook only
    once it is trusted, :mod:`active_memory.hooks.codex_trust`); None when it is trusted."""
    document = json.loads(text)
    groups = document.get("hooks", {}).get("SessionEnd")
    key = None
    for group_index, group in enumerate(groups if isinstance(groups, list) else []):
        handlers = group.get("hooks") if isinstance(group, dict) else None
        for handler_index, handler in enumerate(handlers if isinstance(handlers, list) else []):
            if key is None and ours(handler):
                key = f"{path}:session_end:{group_index}:{handler_index}"
    if key is None or (trusted_hash(config, key) is not None and not changed):
        return None
    return (
        "Codex skips the SessionEnd hook until you trust it too: open /hooks in Codex, or "
        "headless, add its currentHash from `codex app-server` hooks/list to "
        f'{config}:\n  [hooks.state.{json.dumps(key)}]\n  trusted_hash = "<currentHash>"'
    )


def pi_learn_literal(path: Path, learn: bool | None, argv: list[str]) -> str:
    """The JavaScript string the pi extension's ``LEARN_COMMAND`` is set to: ``argv`` as JSON
    (``learn`` True), the placeholder (False: learning off), or what the installed file holds
    (None: left as it is)."""
    if learn:
        return json.dumps(json.dumps(argv))
    if learn is None and path.is_file():
        found = _PI_LEARN_LINE.search(path.read_text(encoding="utf-8"))
        if found is not None:
            return found.group(1)
    return PI_LEARN_PLACEHOLDER
