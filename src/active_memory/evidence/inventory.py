"""The sessions each harness left on this machine: where, for which checkout, and whether a
postmortem can review them (memory init starts from this inventory).

Each harness keeps its sessions in one folder (:func:`default_roots`), overridable by an
environment variable of this package or the harness's own home variable, as its row in
:mod:`active_memory.harnesses` says:

==========  ===========================  ===========================  ===========================
harness     package variable             harness variable             default
==========  ===========================  ===========================  ===========================
claude      ACTIVE_MEMORY_CLAUDE_DIR     CLAUDE_CONFIG_DIR/projects   ~/.claude/projects
codex       ACTIVE_MEMORY_CODEX_DIR      CODEX_HOME/sessions          ~/.codex/sessions
copilot     ACTIVE_MEMORY_COPILOT_DIR    COPILOT_HOME/session-state   ~/.copilot/session-state
pi          ACTIVE_MEMORY_PI_DIR         PI_CODING_AGENT_DIR/sessions ~/.pi/agent/sessions
==========  ===========================  ===========================  ===========================

A session is described from its first and last 256 KiB only, so the inventory of a home with
thousands of sessions, some of a gigabyte, stays quick; the format is told by content, as for a
postmortem. A session written to in the last five minutes is listed as in progress, not
reviewable; so is a session path that is no regular file (a FIFO, a device, a symlink: told by
its type, never opened) and a Claude Code ``<session>/subagents/`` folder whose main session
file is gone.
"""

from __future__ import annotations

import os
import stat as stat_mode
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from active_memory.bounded_input import file_kind
from active_memory.errors import RunRecordError
from active_memory.evidence.inventory_scan import Scan, scan_session
from active_memory.evidence.sources.detect import detect_harness
from active_memory.harnesses import HARNESS_NAMES, HARNESSES, harness_row
from active_memory.models.base import Model
from active_memory.repository import local_repository_key

__all__ = [
    "ACTIVE_SECONDS",
    "SessionEntry",
    "default_roots",
    "find_sessions",
    "session_files",
    "session_root",
]

ACTIVE_SECONDS = 300


class SessionEntry(Model):
    """One session file and what a postmortem would make of it."""

    harness: str
    path: str
    session_id: str | None
    cwd: str | None
    repository: str | None
    started_ms: int | None
    ended_ms: int | None
    size_bytes: int
    models: tuple[str, ...]
    reviewable: bool
    reason: str | None


def default_roots(env: Mapping[str, str] | None = None) -> dict[str, Path]:
    """Each harness's session folder, from the environment (see the module's table)."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    roots: dict[str, Path] = {}
    for row in HARNESSES:
        own, native = env.get(row.override_variable), env.get(row.home_variable)
        if own:
            roots[row.name] = session_root(row.name, Path(own).expanduser())
        elif native:
            roots[row.name] = Path(native).expanduser() / row.sessions
        else:
            roots[row.name] = home / row.home / row.sessions
    return roots


def session_root(harness: str, folder: Path) -> Path:
    """The sessions folder ``folder`` names: itself, or its ``projects``/``sessions``/
    ``session-state`` folder when it is the harness's home (``~/.claude``, ``~/.codex``…)."""
    inside = folder / harness_row(harness).sessions
    return inside if inside.is_dir() and not inside.is_symlink() else folder


def session_files(harness: str, root: Path) -> Iterator[Path]:
    """The session files of ``harness`` under ``root``, sorted, never following it elsewhere:
    anything but a folder is yielded (a FIFO or a symlink too, for :func:`find_sessions` to
    list as not reviewable), and for Claude Code each ``<session>/subagents`` folder whose
    ``<session>.jsonl`` is missing."""
    if not root.is_dir():
        return
    found = [path for pattern in harness_row(harness).session_files for path in root.glob(pattern)]
    if harness == "claude":
        # Subagent files (``agent-*.jsonl``, ``<session>/subagents/``) belong to their session.
        found = [path for path in found if not path.name.startswith("agent-")]
        found += [folder for folder in root.glob("*/*/subagents")
                  if not os.path.lexists(folder.parent.with_name(folder.parent.name + ".jsonl"))
                  and folder.is_dir() and not folder.is_symlink()]  # fmt: skip
    yield from sorted(path for path in found if path.name == "subagents" or not path.is_dir())


def _unreviewable(harness: str, path: Path, reason: str, size: int, mtime: float) -> SessionEntry:
    return SessionEntry(harness=harness, path=str(path), session_id=None, cwd=None,
                        repository=None, started_ms=None, ended_ms=int(mtime * 1000),
                        size_bytes=size, models=(), reviewable=False, reason=reason)  # fmt: skip


def _entry(harness: str, path: Path, now: float) -> SessionEntry:
    stat = path.lstat()
    if path.name == "subagents" and stat_mode.S_ISDIR(stat.st_mode):
        sizes = sum(item.lstat().st_size for item in path.glob("agent-*.jsonl"))
        return _unreviewable(harness, path, "subagent files without their main session",
                             sizes, stat.st_mtime)  # fmt: skip
    if not stat_mode.S_ISREG(stat.st_mode):
        left = "not followed" if stat_mode.S_ISLNK(stat.st_mode) else "not opened"
        kind = f"it is {file_kind(stat.st_mode)}, not a regular file ({left})"
        return _unreviewable(harness, path, kind, 0, stat.st_mtime)
    reason: str | None = None
    scan = Scan()
    if stat.st_size == 0:
        reason = "the file is empty"
    else:
        try:
            told = detect_harness(path)
        except RunRecordError as error:
            told, reason = None, error.problem.split(";")[0]
        if told is not None and told != harness:
            reason = f"its content is a {told} session, not {harness}"
        if reason is None:
            scan = scan_session(harness, path)
            reason = scan.problem
    if reason is None and now - stat.st_mtime < ACTIVE_SECONDS:
        reason = f"in progress: written {int(now - stat.st_mtime)} s ago"
    return SessionEntry(
        harness=harness,
        path=str(path),
        session_id=scan.session_id,
        cwd=scan.cwd,
        repository=local_repository_key(scan.cwd) if scan.cwd else None,
        started_ms=scan.started,
        ended_ms=scan.ended if scan.ended is not None else int(stat.st_mtime * 1000),
        size_bytes=stat.st_size,
        models=tuple(sorted(scan.models)),
        reviewable=reason is None,
        reason=reason,
    )


def _inside(cwd: str | None, repository: Path) -> bool:
    if not cwd:
        return False
    here = Path(os.path.realpath(cwd))
    return here == repository or repository in here.parents


def find_sessions(
    roots: Mapping[str, Path] | None = None,
    *,
    harness: str | None = None,
    repository: str | os.PathLike[str] | None = None,
    since_ms: int | None = None,
    now: float | None = None,
) -> tuple[SessionEntry, ...]:
    """Every session in ``roots`` (default: :func:`default_roots`), oldest first, optionally only
    one harness's, only those run in ``repository`` (or below it), only those ending at or
    after ``since_ms``."""
    chosen = dict(default_roots() if roots is None else roots)
    moment = time.time() if now is None else now
    wanted = Path(os.path.realpath(repository)) if repository is not None else None
    entries: list[SessionEntry] = []
    for name in HARNESS_NAMES:
        if (harness is not None and name != harness) or name not in chosen:
            continue
        for path in session_files(name, Path(chosen[name])):
            try:
                entry = _entry(name, path, moment)
            except OSError:
                continue  # removed or unreadable while listing: not a session we can offer
            if wanted is not None and not _inside(entry.cwd, wanted):
                continue
            if since_ms is not None and (entry.ended_ms or 0) < since_ms:
                continue
            entries.append(entry)
    key: Any = lambda entry: (entry.started_ms or entry.ended_ms or 0, entry.path)  # noqa: E731
    return tuple(sorted(entries, key=key))
