"""Write a harness's hook configuration for active-memory without clobbering the user's hooks.

Every hook written is a command (:mod:`active_memory.hooks.commands`) that fails soft at the
shell level: whatever has gone away, it prints ``{}`` and exits 0, because an erroring hook can
deny the tool it was meant to inform. A command hook is spawned on every tool call, so it is the
fastest that is safe:
the stdlib-only helper under ``python3 -I -S`` (imported from its directory so its cached
bytecode is used). It names the ticket ``active-memory serve`` keeps for the workspace, so it
reaches a broker started before or after the install (a restarted ``serve`` with a new token
needs no reinstall), and it reads the store directly when no broker answers. It is written
while ``serve`` runs too, rather than a ``curl`` one-liner: the helper signs its request
without sending the token and relays only an answer signed for that request, so a process that
binds the port after ``serve`` died learns nothing and injects nothing, where curl would send
the bearer token and relay whatever answers. Claude Code gets a command too, not an ``http``
hook: Copilot CLI also reads a project's Claude settings and refuses the whole file when it
holds a plain-http pre-tool hook.

Existing files are merged in place (:mod:`active_memory.hooks.config_files`): other hooks keep
their positions, active-memory's hook keeps its own, and installing twice leaves the file
byte-identical. pi gets the extension file itself. In a project that is a git checkout, a
written file naming a ticket is added to the repository's ``info/exclude`` (see
:mod:`active_memory.hooks.exclude`).

MCP clients get no hook but a server entry (:func:`install_mcp_server`): ``mcpServers`` in
Cursor's ``.cursor/mcp.json`` (the project's, or ``~/.cursor/mcp.json`` for the user), or in a
project's ``.mcp.json``, the file other MCP clients read (``--harness mcp``; without a project
the entry is only printed, for the client's own settings). The entry runs ``active-memory mcp``
with the store and the repository as absolute paths; a user-level Cursor entry names
``${workspaceFolder}``, which Cursor fills in with the open folder. Other servers in the file
are kept, and so are keys the user added to ours. The entry holds no token, so nothing is
excluded from git.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field

from active_memory.errors import RecallError
from active_memory.harnesses import HARNESS_NAMES, HarnessRow, harness_row
from active_memory.hooks.codex import MAX_CONTEXT_BYTES as CODEX_CONTEXT_BYTES
from active_memory.hooks.codex_trust import codex_config, trust_note
from active_memory.hooks.commands import (
    COPILOT_FILE,
    HOOK_TIMEOUT_S,
    claude_http_hook,
    helper_command,
)
from active_memory.hooks.config_files import (
    load_json,
    merge_hook_list,
    merge_matcher_groups,
    merge_mcp_server,
    write_config,
)
from active_memory.hooks.exclude import Exclusion, exclude_from_git
from active_memory.hooks.learn_hooks import (
    NO_SESSION_END,
    PI_LEARN_PLACEHOLDER,
    SESSION_END_EVENTS,
    codex_session_end_note,
    pi_learn_literal,
    session_end_argv,
    session_end_command,
    with_session_end,
)
from active_memory.hooks.pi import EXTENSION_NAME, extension_source
from active_memory.hooks.serve_state import ServeState
from active_memory.models.base import Model

__all__ = [
    "CLAUDE_MATCHER",
    "CODEX_MATCHER",
    "CURSOR_WORKSPACE",
    "HOOK_TIMEOUT_S",
    "MCP_HARNESSES",
    "MCP_SERVER_NAME",
    "Installation",
    "claude_http_hook",
    "helper_command",
    "install_hooks",
    "install_mcp_server",
    "mcp_server_entry",
    "target_path",
]

CLAUDE_MATCHER = "Read|Edit|MultiEdit|Write|NotebookEdit|Grep|Glob|LS|Bash"
CODEX_MATCHER = "Bash|apply_patch"
# Clients that reach active-memory through its MCP server rather than a hook.
MCP_HARNESSES = ("cursor", "mcp")
MCP_SERVER_NAME = "active-memory"
# Cursor's own variable for the folder it has open, filled in when it starts the server.
CURSOR_WORKSPACE = "${workspaceFolder}"

Mode = Literal["http", "curl", "helper", "extension", "mcp"]


class Installation(Model):
    """What ``hooks install`` did; the JSON form names ``exclusion`` ``git_exclude``.

    ``notes`` are what the user still has to do for the hook to run (Codex's project and hook
    trust, or queueing sessions by hand where a harness has no session-end event), one sentence
    each. ``session_end`` is the session-end event whose hook ``--learn`` wrote (None: none).
    """

    model_config = ConfigDict(serialize_by_alias=True)

    harness: str
    path: Path
    mode: Mode
    changed: bool
    backup: Path | None = None
    exclusion: Exclusion = Field(default_factory=Exclusion, serialization_alias="git_exclude")
    notes: tuple[str, ...] = ()
    session_end: str | None = None


def _home_of(variable: str, default: Path, environ: Mapping[str, str]) -> Path:
    value = environ.get(variable)
    return Path(value) if value else default


def target_path(
    harness: str, *, project: Path | None, home: Path, environ: Mapping[str, str] | None = None
) -> Path:
    """Where each harness reads hooks: project-local when ``project`` is given.

    User-level Codex and Copilot files follow ``$CODEX_HOME`` and ``$COPILOT_HOME`` in
    ``environ`` (none when it is not given).
    """
    environ = environ or {}
    if harness in HARNESS_NAMES:
        return _hook_file(harness_row(harness), project, home, environ)
    if harness == "cursor":
        return (project or home) / ".cursor" / "mcp.json"
    if harness == "mcp" and project is not None:
        return project / ".mcp.json"
    names = ", ".join((*HARNESS_NAMES, *MCP_HARNESSES))
    if harness == "mcp":
        raise RecallError("the mcp entry is written into a project only; give --project")
    raise RecallError(f"unknown harness {harness!r}; choose one of {names}")


def _hook_file(
    row: HarnessRow, project: Path | None, home: Path, environ: Mapping[str, str]
) -> Path:
    # Claude Code's and pi's user-level files are written below ~ even when their variables
    # move their homes; Codex's and Copilot's follow CODEX_HOME and COPILOT_HOME.
    if row.name == "claude":
        return project / ".claude" / "settings.local.json" if project else (
            home / row.home / "settings.json")  # fmt: skip
    if row.name == "pi":
        base = project / ".pi" / "extensions" if project else home / row.home / "extensions"
        return base / EXTENSION_NAME
    harness_home = _home_of(row.home_variable, home / row.home, environ)
    if row.name == "codex":
        return project / ".codex" / "hooks.json" if project else harness_home / "hooks.json"
    if row.name == "copilot":
        folder = project / ".github" / "hooks" if project else harness_home / "hooks"
        return folder / COPILOT_FILE
    raise RecallError(f"hooks install does not know where {row.display} reads hooks yet")


def _with_pre_tool_hook(
    document: dict[str, Any], event: str, matcher: str, hook: dict[str, Any]
) -> str:
    hooks = document.get("hooks")
    hooks = dict(hooks) if isinstance(hooks, dict) else {}
    hooks[event] = merge_matcher_groups(hooks.get(event), matcher, hook)
    return json.dumps({**document, "hooks": hooks}, indent=2) + "\n"


def _with_copilot_hook(document: dict[str, Any], event: str, hook: dict[str, Any]) -> str:
    hooks = document.get("hooks")
    hooks = dict(hooks) if isinstance(hooks, dict) else {}
    current = hooks.get(event)
    merged, placed = merge_hook_list(current if isinstance(current, list) else [], hook)
    hooks[event] = merged if placed else [*merged, hook]
    return json.dumps({"version": 1, **document, "hooks": hooks}, indent=2) + "\n"


def install_hooks(
    harness: str,
    *,
    workspace: Path,
    store: Path,
    serve: ServeState | None = None,
    project: Path | None = None,
    home: Path | None = None,
    ticket: Path | None = None,
    environ: Mapping[str, str] | None = None,
    learn: bool | None = None,
    learn_dir: Path | None = None,
) -> Installation:
    """Install active-memory's hook for ``harness``; ``serve`` is the live broker, if any.

    ``learn`` True also installs the session-end hook queueing each finished session into
    ``learn_dir`` (:mod:`active_memory.hooks.learn_hooks`), False removes it, None leaves it as
    it is.

    ``ticket`` is where ``active-memory serve`` keeps (or will keep) this workspace's ticket; the
    helper command names it so it finds a broker started later. ``environ`` (default: the
    process environment, unless ``home`` stands in for the user's home) supplies
    ``$CODEX_HOME`` and ``$COPILOT_HOME``.
    """
    if environ is None:
        environ = os.environ if home is None else {}
    path = target_path(harness, project=project, home=home or Path.home(), environ=environ)
    ticket_path = serve.ticket if serve is not None else (str(ticket) if ticket else None)
    exclusion = _keep_out_of_git(path, project, holds_secret=ticket_path is not None)
    folder = learn_dir or store.parent / "learn"
    notes: tuple[str, ...] = ()
    if learn and SESSION_END_EVENTS[harness] is None:
        notes, learn = _no_session_end(harness), None
    if harness == "pi":
        source = extension_source().read_text(encoding="utf-8")
        text = source.replace('"__ACTIVE_MEMORY_TICKET__"', json.dumps(ticket_path or ""))
        argv = session_end_argv(harness, folder=folder, store=store)
        text = text.replace(PI_LEARN_PLACEHOLDER, pi_learn_literal(path, learn, argv))
        changed, backup = write_config(path, text, private=False)
        ended = SESSION_END_EVENTS[harness] if PI_LEARN_PLACEHOLDER not in text else None
        return Installation(harness=harness, path=path, mode="extension", changed=changed,
                            backup=backup, exclusion=exclusion, notes=notes,
                            session_end=ended)  # fmt: skip
    mode: Mode = "helper"
    command = helper_command(harness, ticket=ticket_path, store=str(store),
                             workspace=str(workspace))  # fmt: skip
    document = load_json(path)
    event = harness_row(harness).tool_event
    if harness == "copilot":
        hook = {"type": "command", "bash": command, "timeoutSec": HOOK_TIMEOUT_S}
        text = _with_copilot_hook(document, event, hook)
    else:
        hook = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}
        if harness == "codex":  # the cap Codex applies is then the one the frame is built for
            hook["additionalContextLimit"] = CODEX_CONTEXT_BYTES
        matcher = CLAUDE_MATCHER if harness == "claude" else CODEX_MATCHER
        text = _with_pre_tool_hook(document, event, matcher, hook)
    if learn is not None:  # after the recall hook: a first install lists PreToolUse first
        queued = session_end_command(harness, folder=folder, store=store) if learn else None
        text = json.dumps(with_session_end(json.loads(text), harness, queued), indent=2) + "\n"
    changed, backup = write_config(path, text, private=False)
    if harness == "codex":
        notes += _codex_notes(path, text, event, project, home, environ, changed)
        if learn:
            row = harness_row(harness)
            codex_home = _home_of(row.home_variable, (home or Path.home()) / row.home, environ)
            config = codex_home / "config.toml"
            note = codex_session_end_note(path, text, config, changed=changed)
            notes += (note,) if note is not None else ()
    return Installation(harness=harness, path=path, mode=mode, changed=changed, backup=backup,
                        exclusion=exclusion, notes=notes,
                        session_end=SESSION_END_EVENTS[harness] if learn else None)  # fmt: skip


def _no_session_end(harness: str) -> tuple[str, ...]:
    row = harness_row(harness)
    sessions = f"{row.shown_home}/{row.sessions}"
    return (NO_SESSION_END.format(display=row.display, sessions=sessions),)


def _keep_out_of_git(path: Path, project: Path | None, *, holds_secret: bool) -> Exclusion:
    """Exclude a project file holding a token or ticket path, before it is written."""
    if project is None or not holds_secret:
        return Exclusion()
    return exclude_from_git(path)


def _trusted(config: Path, project: Path) -> bool:
    """Whether Codex's ``config.toml`` marks ``project`` trusted (False when unreadable)."""
    document = codex_config(config)
    if document is None:
        return False
    projects = document.get("projects")
    entry = projects.get(str(project)) if isinstance(projects, dict) else None
    return isinstance(entry, dict) and entry.get("trust_level") == "trusted"


def _codex_notes(
    path: Path,
    text: str,
    event: str,
    project: Path | None,
    home: Path | None,
    environ: Mapping[str, str],
    changed: bool,
) -> tuple[str, ...]:
    """What Codex needs before it runs the hook: a trusted project, then a trusted hook
    (:mod:`active_memory.hooks.codex_trust`)."""
    notes: list[str] = []
    row = harness_row("codex")
    config = _home_of(row.home_variable, (home or Path.home()) / row.home, environ)
    config /= "config.toml"
    if project is not None and not _trusted(config, project):
        notes.append(
            f"Codex ignores {path} unless the project is trusted: add to {config}\n"
            f"  [projects.{json.dumps(str(project))}]\n"
            '  trust_level = "trusted"\n'
            "(or answer yes when Codex asks whether to trust the folder)."
        )
    note = trust_note(path, text, event, config, changed=changed)
    if note is not None:
        notes.append(note)
    return tuple(notes)


def _active_memory_program() -> str:
    """The ``active-memory`` script beside this interpreter (a client's PATH may not hold the
    environment it was installed in), else the one on PATH, else the bare name."""
    beside = Path(sys.executable).with_name("active-memory")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("active-memory") or "active-memory"


def mcp_server_entry(workspace: str, store: Path) -> dict[str, Any]:
    """An ``mcpServers`` entry running ``active-memory mcp`` for ``workspace`` over ``store``."""
    args = ["mcp", "--repository", workspace, "--store", str(store)]
    return {"command": _active_memory_program(), "args": args}


def install_mcp_server(
    harness: str,
    *,
    workspace: Path | None,
    store: Path,
    project: Path | None = None,
    home: Path | None = None,
) -> Installation:
    """Merge active-memory's server into the MCP configuration of ``harness`` (``cursor``, or
    ``mcp`` for a project's ``.mcp.json``). ``workspace`` None: Cursor's open folder."""
    # A config linked from a dotfiles folder is written through: replacing the link with a
    # file would leave the user's copy behind.
    path = target_path(harness, project=project, home=home or Path.home()).resolve()
    served = str(workspace) if workspace is not None else CURSOR_WORKSPACE
    document = merge_mcp_server(load_json(path), MCP_SERVER_NAME,
                                mcp_server_entry(served, store), path=path)  # fmt: skip
    text = json.dumps(document, indent=2) + "\n"
    if _read_only(path) and path.read_text(encoding="utf-8") != text:
        raise RecallError(f"{str(path)!r} is read-only; make it writable (chmod u+w) and install "
                          f"again, or {_ADD_IT_YOURSELF}")  # fmt: skip
    try:
        changed, backup = write_config(path, text, private=False)
    except OSError as error:
        raise RecallError(
            f"{str(path)!r} cannot be written ({error.strerror or error}); fix its folder's "
            f"permissions and install again, or {_ADD_IT_YOURSELF}"
        ) from None
    return Installation(harness=harness, path=path, mode="mcp", changed=changed, backup=backup)


_ADD_IT_YOURSELF = (
    "add the entry `active-memory hooks install --harness mcp --repository DIR` prints yourself"
)


def _read_only(path: Path) -> bool:
    """Whether the user marked ``path`` read-only (its owner may not write it): checked by its
    mode, which holds for root too, where a permission check always passes."""
    try:
        return not os.stat(path).st_mode & 0o200
    except FileNotFoundError:
        return False
