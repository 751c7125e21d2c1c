"""``hooks uninstall``: take active-memory's hooks out of a harness's hook file again.

Every hook active-memory wrote (the recall hook, the session-end hook of ``--learn``) is
removed from every event; the user's own hooks stay as and where they were, an event left
empty is dropped, and the file is backed up and replaced as ``hooks install`` does. pi's
extension file is active-memory's own, so it is deleted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from active_memory.hooks.config_files import load_json, write_config
from active_memory.hooks.install import target_path
from active_memory.hooks.learn_hooks import without_ours
from active_memory.hooks.pi import EXTENSION_NAME

__all__ = ["uninstall_hooks"]


def uninstall_hooks(
    harness: str,
    *,
    project: Path | None = None,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[Path, bool]:
    """Remove active-memory's hooks for ``harness``; the file and whether it changed."""
    if environ is None:
        environ = os.environ if home is None else {}
    path = target_path(harness, project=project, home=home or Path.home(), environ=environ)
    if harness == "pi":
        if path.name == EXTENSION_NAME and path.is_file():
            path.unlink()
            return path, True
        return path, False
    if not path.exists():
        return path, False
    document = load_json(path)
    kept = without_ours(document)
    if kept == document:
        return path, False
    changed, _backup = write_config(path, json.dumps(kept, indent=2) + "\n", private=False)
    return path, changed
