"""Harness config files as ``hooks install`` edits them: read, merged in place, written safely.

Merging keeps every hook that is not active-memory's where it was, and puts active-memory's
hook where the earlier one was (Codex keys a hook's trust by its position and its hash, so a
hook that moved counts as modified and stops running); only a first install appends. A
document that did not change is not written at all. A changed file is backed up under a name
no other backup has (the first backup, the user's original, is never overwritten) and
replaced atomically, keeping its mode.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from active_memory.bounded_input import parse_json, read_text
from active_memory.errors import InputRefused, RecallError
from active_memory.private_files import write_private_text

__all__ = [
    "MAX_CONFIG_BYTES",
    "load_json",
    "merge_hook_list",
    "merge_matcher_groups",
    "merge_mcp_server",
    "ours",
    "write_config",
]

_MAX_BACKUPS_PER_SECOND = 1000
# A harness's settings file; far above any real one.
MAX_CONFIG_BYTES = 16 * 1024 * 1024
_MARKERS = ("active_memory", "active-memory", "X-Active-Memory")


def ours(hook: Any) -> bool:
    """Whether a hook entry is one active-memory wrote (it names the package or its header)."""
    if not isinstance(hook, dict):
        return False
    text = json.dumps(hook)
    return any(marker in text for marker in _MARKERS)


def merge_hook_list(items: list[Any], hook: dict[str, Any]) -> tuple[list[Any], bool]:
    """``items`` with the first active-memory hook replaced by ``hook`` in place and any later
    one dropped; and whether ``hook`` was placed (False: there was none)."""
    merged: list[Any] = []
    placed = False
    for item in items:
        if not ours(item):
            merged.append(item)
        elif not placed:
            merged.append(hook)
            placed = True
    return merged, placed


def merge_matcher_groups(groups: Any, matcher: str, hook: dict[str, Any]) -> list[Any]:
    """PreToolUse matcher groups with active-memory's hook updated in place.

    A group that held only active-memory's hook keeps its position and gets ``matcher``; one
    shared with the user's hooks keeps its own matcher. Without an earlier hook, a new group
    is appended.
    """
    merged: list[Any] = []
    placed = False
    for group in groups if isinstance(groups, list) else []:
        items = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(items, list) and any(ours(item) for item in items):
            only_ours = all(ours(item) for item in items)
            if placed:
                kept = [item for item in items if not ours(item)]
            else:
                kept, placed = merge_hook_list(items, hook)
            if not kept:
                continue  # a later copy of our group
            group = {**group, "hooks": kept}
            if only_ours:
                group["matcher"] = matcher
        merged.append(group)
    if not placed:
        merged.append({"matcher": matcher, "hooks": [hook]})
    return merged


def merge_mcp_server(
    document: dict[str, Any], name: str, entry: dict[str, Any], *, path: Path
) -> dict[str, Any]:
    """``document`` with ``mcpServers[name]`` set to ``entry``: the user's other servers, and the
    keys of their own they added to ours (``env``, ``disabled``), stay as and where they were.
    RecallError when ``mcpServers`` (or our entry) is there but not an object."""
    servers = document.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise RecallError(f"{str(path)!r}: mcpServers must be a JSON object; fix or move it")
    current = servers.get(name, {})
    if not isinstance(current, dict):
        raise RecallError(f"{str(path)!r}: mcpServers.{name} must be a JSON object; fix or move it")
    return {**document, "mcpServers": {**servers, name: {**current, **entry}}}


def load_json(path: Path) -> dict[str, Any]:
    """The JSON object in ``path`` (``{}`` when it is missing); RecallError for anything else."""
    if not path.exists():
        return {}
    try:
        text = read_text(path, what=repr(str(path)), max_bytes=MAX_CONFIG_BYTES)
        document = parse_json(text or "{}", what=repr(str(path)))
    except InputRefused as refused:
        raise RecallError(f"{refused}; fix or move it, then install again") from None
    if not isinstance(document, dict):
        raise RecallError(f"{str(path)!r} must hold a JSON object; fix or move it")
    return document


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


def _read_old(path: Path) -> str | None:
    """What ``path`` holds now (None when missing); RecallError when it is not a regular file,
    too large or not UTF-8 (a FIFO there is refused by its type, never opened)."""
    if not path.exists():
        return None
    try:
        return read_text(path, what=repr(str(path)), max_bytes=MAX_CONFIG_BYTES)
    except InputRefused as refused:
        raise RecallError(f"{refused}; fix or move it, then install again") from None


def write_config(path: Path, text: str, *, private: bool) -> tuple[bool, Path | None]:
    """Atomically replace ``path`` with ``text`` when it differs; back up what was there."""
    old = _read_old(path)
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
