"""Write a harness's hook configuration for active-memory without clobbering the user's hooks.

The hook written is the fastest that works, because a command hook is spawned on every tool
call:

* a broker is running (``active-memory serve``): Claude Code gets an ``http`` hook (no process
  at all); Codex and Copilot get a ``curl`` one-liner reading the broker ticket with ``-K``
  (the token stays off command lines), limited to 250 ms, printing ``{}`` on any failure;
* otherwise: the stdlib-only helper under ``python3 -I -S`` (imported from its directory so
  its cached bytecode is used), which also falls back to reading the store directly.

Existing files are merged (other hooks are kept; an earlier active-memory hook is replaced, so
installing twice changes nothing), backed up before a change under a name no other backup has
(the first backup, the user's original, is never overwritten), and replaced atomically. pi gets
the extension file itself. In a project that is a git checkout, a written file holding a token
or a ticket path is added to the repository's ``info/exclude`` (see
:mod:`active_memory.hooks.exclude`).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field

from active_memory.errors import RecallError
from active_memory.hooks import helper as helper_module
from active_memory.hooks.exclude import Exclusion, exclude_from_git
from active_memory.hooks.pi import EXTENSION_NAME, extension_source
from active_memory.hooks.standalone import ServeState
from active_memory.hooks.ticket import read_ticket
from active_memory.models.base import Model
from active_memory.private_files import write_private_text

__all__ = [
    "HARNESS_NAMES",
    "Installation",
    "claude_http_hook",
    "curl_command",
    "helper_command",
    "install_hooks",
    "target_path",
]

HARNESS_NAMES = ("claude", "codex", "copilot", "pi")
CLAUDE_MATCHER = "Read|Edit|MultiEdit|Write|NotebookEdit|Grep|Glob|LS|Bash"
CODEX_MATCHER = "Bash|apply_patch"
HOOK_TIMEOUT_S = 5
HTTP_TIMEOUT_S = 1
_MAX_BACKUPS_PER_SECOND = 1000
_MARKERS = ("active_memory", "active-memory", "X-Active-Memory")
_ENV_IDS = (("Node", "ACTIVE_MEMORY_NODE"), ("Conversation", "ACTIVE_MEMORY_CONVERSATION"),
            ("Execution", "ACTIVE_MEMORY_EXECUTION"))  # fmt: skip

Mode = Literal["http", "curl", "helper", "extension"]


class Installation(Model):
    """What ``hooks install`` did; the JSON form names ``exclusion`` ``git_exclude``."""

    model_config = ConfigDict(serialize_by_alias=True)

    harness: str
    path: Path
    mode: Mode
    changed: bool
    backup: Path | None = None
    exclusion: Exclusion = Field(default_factory=Exclusion, serialization_alias="git_exclude")


def _double_quoted(text: str) -> str:
    """``text`` for the inside of a POSIX double-quoted word."""
    return "".join("\\" + char if char in '\\"$`' else char for char in text)


def curl_command(harness: str, ticket: str | None = None) -> str:
    """A POSIX sh hook command posting stdin to the broker named by the ticket.

    ``$ACTIVE_MEMORY_TICKET`` (set per process by a host) wins over ``ticket``. Output is
    captured first, so a timeout mid-answer can never print half a document.
    """
    source = "$ACTIVE_MEMORY_TICKET" if ticket is None else (
        "${ACTIVE_MEMORY_TICKET:-" + _double_quoted(ticket) + "}"
    )  # fmt: skip
    return (
        f'out=$(curl -s --fail --max-time 0.25 -K "{source}" -H "Expect:" '
        f'-H "Content-Type: application/json" -H "X-Active-Memory-Harness: {harness}" '
        '--data-binary @- 2>/dev/null) && [ -n "$out" ] && printf \'%s\\n\' "$out" '
        "|| printf '{}\\n'"
    )


def helper_command(
    harness: str,
    *,
    ticket: str | None = None,
    store: str | None = None,
    workspace: str | None = None,
    python: str | None = None,
) -> str:
    """``python3 -I -S`` running the helper: no site packages, nothing but built-ins.

    The helper is imported from its directory rather than run as a script: an imported module
    is loaded from its cached bytecode, a script is compiled again on every tool call.
    """
    directory = str(Path(helper_module.__file__).resolve().parent)
    # A JSON string is a valid Python literal and keeps the shell quoting readable.
    literal = json.dumps(directory)
    launcher = f"import sys;sys.path.insert(0,{literal});from helper import main;main()"
    words = [python or sys.executable, "-I", "-S", "-c", launcher, harness]
    for option, value in (("--ticket", ticket), ("--store", store), ("--workspace", workspace)):
        if value:
            words += [option, value]
    return shlex.join(words)


def claude_http_hook(url: str, *, token: str | None = None) -> dict[str, Any]:
    """A Claude Code ``http`` hook. Without ``token`` the headers read the run's environment."""
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


def target_path(harness: str, *, project: Path | None, home: Path) -> Path:
    """Where each harness reads hooks: project-local when ``project`` is given."""
    if harness == "claude":
        return project / ".claude" / "settings.local.json" if project else (
            home / ".claude" / "settings.json")  # fmt: skip
    if harness == "codex":
        return (project or home) / ".codex" / "hooks.json"
    if harness == "copilot":
        if project is None:
            raise RecallError(
                "Copilot CLI reads hooks from the repository's .github/hooks; pass --project DIR"
            )
        return project / ".github" / "hooks" / "active-memory.json"
    if harness == "pi":
        base = project / ".pi" / "extensions" if project else home / ".pi" / "agent" / "extensions"
        return base / EXTENSION_NAME
    raise RecallError(f"unknown harness {harness!r}; choose one of {', '.join(HARNESS_NAMES)}")


def _ours(hook: Any) -> bool:
    if not isinstance(hook, dict):
        return False
    text = json.dumps(hook)
    return any(marker in text for marker in _MARKERS)


def _merge_groups(groups: Any, matcher: str, hook: dict[str, Any]) -> list[Any]:
    """PreToolUse matcher groups with every earlier active-memory hook replaced by ``hook``."""
    merged: list[Any] = []
    for group in groups if isinstance(groups, list) else []:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            kept = [item for item in group["hooks"] if not _ours(item)]
            if not kept and group["hooks"]:
                continue  # a group that held only our hook
            group = {**group, "hooks": kept}
        merged.append(group)
    merged.append({"matcher": matcher, "hooks": [hook]})
    return merged


def _load_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        document = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError) as exc:
        raise RecallError(
            f"{str(path)!r} is not valid JSON ({exc}); fix or move it, then install again"
        ) from exc
    if not isinstance(document, dict):
        raise RecallError(f"{str(path)!r} must hold a JSON object; fix or move it")
    return document


def _with_pre_tool_hook(document: dict[str, Any], matcher: str, hook: dict[str, Any]) -> str:
    hooks = document.get("hooks")
    hooks = dict(hooks) if isinstance(hooks, dict) else {}
    hooks["PreToolUse"] = _merge_groups(hooks.get("PreToolUse"), matcher, hook)
    return json.dumps({**document, "hooks": hooks}, indent=2) + "\n"


def _with_copilot_hook(document: dict[str, Any], hook: dict[str, Any]) -> str:
    hooks = document.get("hooks")
    hooks = dict(hooks) if isinstance(hooks, dict) else {}
    current = hooks.get("preToolUse")
    kept = [item for item in current if not _ours(item)] if isinstance(current, list) else []
    hooks["preToolUse"] = [*kept, hook]
    return json.dumps({"version": 1, **document, "hooks": hooks}, indent=2) + "\n"


def _back_up(path: Path, old: str) -> Path:
    """Write ``old`` beside ``path`` under a new name: an existing backup is never replaced."""
    stamp = time.strftime("%Y%m%d%H%M%S")
    for attempt in range(_MAX_BACKUPS_PER_SECOND):
        suffix = stamp if attempt == 0 else f"{stamp}-{attempt}"
        backup = path.with_name(f"{path.name}.{suffix}.bak")
        try:
            descriptor = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(old)
        return backup
    raise RecallError(
        f"{str(path)!r} already has {_MAX_BACKUPS_PER_SECOND} backups from this second; "
        "remove old .bak files beside it and install again"
    )


def _write(path: Path, text: str, *, private: bool) -> tuple[bool, Path | None]:
    """Atomically replace ``path`` with ``text`` when it differs; back up what was there."""
    old = path.read_text(encoding="utf-8") if path.exists() else None
    if old == text:
        return False, None
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = _back_up(path, old) if old is not None else None
    if private:  # it holds a token: 0600 whatever the old mode, fsynced with its folder
        write_private_text(path, text, durable=True)
        return True, backup
    mode = 0o600 if old is None else (path.stat().st_mode & 0o777)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return True, backup


def install_hooks(
    harness: str,
    *,
    workspace: Path,
    store: Path,
    serve: ServeState | None = None,
    project: Path | None = None,
    home: Path | None = None,
    ticket: Path | None = None,
) -> Installation:
    """Install active-memory's hook for ``harness``; ``serve`` is the live broker, if any.

    ``ticket`` is where ``active-memory serve`` keeps (or will keep) this workspace's ticket; the
    helper command names it so it finds a broker started later.
    """
    path = target_path(harness, project=project, home=home or Path.home())
    ticket_path = serve.ticket if serve is not None else (str(ticket) if ticket else None)
    if harness == "pi":
        source = extension_source().read_text(encoding="utf-8")
        text = source.replace('"__ACTIVE_MEMORY_TICKET__"', json.dumps(ticket_path or ""))
        exclusion = _keep_out_of_git(path, project, holds_secret=ticket_path is not None)
        changed, backup = _write(path, text, private=False)
        return Installation(
            harness=harness,
            path=path,
            mode="extension",
            changed=changed,
            backup=backup,
            exclusion=exclusion,
        )
    mode: Mode
    if serve is not None and harness == "claude":
        url, token = read_ticket(serve.ticket)
        hook: dict[str, Any] = claude_http_hook(url, token=token)
        mode = "http"
    else:
        if serve is not None:
            command, mode = curl_command(harness, serve.ticket), "curl"
        else:
            command = helper_command(harness, ticket=ticket_path, store=str(store),
                                     workspace=str(workspace))  # fmt: skip
            mode = "helper"
        if harness == "copilot":
            hook = {"type": "command", "bash": command, "timeoutSec": HOOK_TIMEOUT_S}
        else:
            hook = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}
    document = _load_json(path)
    if harness == "copilot":
        text = _with_copilot_hook(document, hook)
    else:
        matcher = CLAUDE_MATCHER if harness == "claude" else CODEX_MATCHER
        text = _with_pre_tool_hook(document, matcher, hook)
    # A literal token lives in the file: keep it private to the user, and out of commits.
    holds_secret = mode == "http" or ticket_path is not None
    exclusion = _keep_out_of_git(path, project, holds_secret=holds_secret)
    changed, backup = _write(path, text, private=mode == "http")
    return Installation(
        harness=harness, path=path, mode=mode, changed=changed, backup=backup, exclusion=exclusion
    )


def _keep_out_of_git(path: Path, project: Path | None, *, holds_secret: bool) -> Exclusion:
    """Exclude a project file holding a token or ticket path, before it is written."""
    if project is None or not holds_secret:
        return Exclusion()
    return exclude_from_git(path)
