"""Copies of shipped folders: an author's copy of a data folder, made the way the docs tell a
user to (cp -r), and active-memory's package elsewhere, as a virtual environment holds it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import active_memory
from active_memory.data_folders import Folder, shipped_folder

__all__ = ["package_copy", "shipped_copy"]


def shipped_copy(folder: Folder, parent: Path) -> Path:
    """``parent/<folder>``: a copy of the installed ``prompts/`` or ``contracts/``, to edit."""
    destination = parent / folder
    shutil.copytree(Path(str(shipped_folder(folder))), destination)
    return destination


def package_copy(site: Path) -> Path:
    """``site/active_memory``: this package's sources (no bytecode) in a folder of their own,
    for a test that runs or deletes them; ``site`` is returned.

    The files are hard links where ``site`` is on the sources' filesystem (a copy otherwise):
    deleting the copy removes its own entries only, as deleting a virtual environment does,
    and ~350 files are not read and written again (~0.1 CPU-s a copy). Never edit a file in it.
    """
    shutil.copytree(
        Path(active_memory.__file__).parent,
        site / "active_memory",
        ignore=shutil.ignore_patterns("__pycache__"),
        copy_function=_link_or_copy,
    )
    return site


def _link_or_copy(source: str, destination: str) -> None:
    try:
        os.link(source, destination)
    except OSError:  # another filesystem, or links not allowed there
        shutil.copy2(source, destination)
