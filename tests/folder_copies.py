"""An author's copy of a shipped data folder, made the way the docs tell a user to (cp -r)."""

from __future__ import annotations

import shutil
from pathlib import Path

from active_memory.data_folders import Folder, shipped_folder

__all__ = ["shipped_copy"]


def shipped_copy(folder: Folder, parent: Path) -> Path:
    """``parent/<folder>``: a copy of the installed ``prompts/`` or ``contracts/``, to edit."""
    destination = parent / folder
    shutil.copytree(Path(str(shipped_folder(folder))), destination)
    return destination
