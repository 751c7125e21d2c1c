"""Whether Codex will run the hook ``hooks install`` wrote, and how to make it, headless too.

Codex runs a hook from ``hooks.json`` only once the user trusted it, and remembers that in its
``config.toml``, one table per hook:
``[hooks.state."<hooks.json path>:pre_tool_use:<group>:<handler>"]`` holding
``trusted_hash = "sha256:…"``, the hash of the hook as it was trusted. A hook with no such
entry, or one whose command changed since (a reinstall from another interpreter path), is
skipped: in ``codex exec`` silently. The interactive way to trust it is ``/hooks``; a headless
user has no ``/hooks``, so the note also names the headless way: ``codex app-server`` lists the
hooks with their ``currentHash`` (the ``hooks/list`` request), and that hash goes into the entry.

The hash itself is Codex's to compute (its canonical form of the hook is not a documented
format), so the installer never writes trust: it reports that the hook needs it.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from active_memory.bounded_input import read_bytes
from active_memory.errors import InputRefused, RecallError
from active_memory.hooks.config_files import MAX_CONFIG_BYTES, ours

__all__ = ["CODEX_EVENT_KEY", "codex_config", "hook_key", "trust_note", "trusted_hash"]

CODEX_EVENT_KEY = "pre_tool_use"  # Codex's name of the PreToolUse event in a hook's state key


def hook_key(path: Path, text: str, event: str) -> str | None:
    """Codex's state key of active-memory's hook in the ``hooks.json`` ``text`` at ``path``."""
    try:
        document = json.loads(text)
    except ValueError:
        return None
    hooks = document.get("hooks") if isinstance(document, dict) else None
    groups = hooks.get(event) if isinstance(hooks, dict) else None
    for group_index, group in enumerate(groups if isinstance(groups, list) else []):
        handlers = group.get("hooks") if isinstance(group, dict) else None
        for handler_index, handler in enumerate(handlers if isinstance(handlers, list) else []):
            if ours(handler):
                return f"{path}:{CODEX_EVENT_KEY}:{group_index}:{handler_index}"
    return None


def codex_config(config: Path) -> dict[str, Any] | None:
    """Codex's ``config.toml`` as a table; None when it is missing or not TOML. A file that is
    no regular file is refused (RecallError)."""
    if not config.exists():
        return None
    try:  # a FIFO or a device here is refused by its type, never opened
        data = read_bytes(config, what=repr(str(config)), max_bytes=MAX_CONFIG_BYTES)
    except InputRefused as refused:
        raise RecallError(f"{refused}; fix or move it, then install again") from None
    try:
        return tomllib.loads(data.decode("utf-8"))
    except ValueError:
        return None


def trusted_hash(config: Path, key: str) -> str | None:
    """The ``trusted_hash`` Codex's ``config.toml`` keeps for ``key``; None when it has none
    (or the file is missing or not TOML). A file that is no regular file is refused."""
    document = codex_config(config)
    if document is None:
        return None
    hooks = document.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    entry = state.get(key) if isinstance(state, dict) else None
    value = entry.get("trusted_hash") if isinstance(entry, dict) else None
    return value if isinstance(value, str) and value else None


def trust_note(path: Path, text: str, event: str, config: Path, *, changed: bool) -> str | None:
    """What to do so Codex runs the hook just written, or None when Codex already trusts it."""
    key = hook_key(path, text, event)
    if key is None:
        return None
    trusted = trusted_hash(config, key)
    if trusted is not None and not changed:
        return None
    why = "it changed since you trusted it" if trusted is not None else "it is not trusted yet"
    return (
        f"Codex skips this hook until you trust it ({why}; codex exec skips it silently): "
        "open /hooks in Codex, or headless, ask `codex app-server` for hooks/list and add the "
        f"hook's currentHash to {config}:\n"
        f"  [hooks.state.{json.dumps(key)}]\n"
        '  trusted_hash = "<currentHash>"'
    )
