"""The repository key of a checkout, read from its git configuration without running git.

``forge:host/owner/repo`` from the ``origin`` remote when there is one (credentials dropped),
else ``local:<hash>`` of the checkout's top-level directory, whichever folder inside it is
given. ``.git`` may be a directory, or a file pointing at a linked worktree's or a submodule's
git directory (a worktree's ``commondir`` holds the shared config).

This is the only derivation of the key: recall (the stdlib-only hook helper included) and
checkout inspection (:mod:`active_memory.provenance`) both call :func:`repository_key`, so a
lesson published from one folder of a checkout is recalled from any other.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from active_memory.errors import LessonValidationError
from active_memory.lessons import local_repository_key, repository_key_from_remote

__all__ = ["find_checkout", "git_dir", "origin_url", "repository_key"]

_SECTION = re.compile(r'\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')
_URL = re.compile(r"\s*url\s*=\s*(.*?)\s*$", re.IGNORECASE)


def find_checkout(path: str | os.PathLike[str]) -> Path | None:
    """The top-level directory of the git checkout containing ``path``, if any.

    Like ``git rev-parse --show-toplevel``: symlinks are resolved first, then the nearest folder
    holding ``.git`` (a directory, or the file of a linked worktree or submodule) wins.
    """
    current = Path(os.path.realpath(os.fspath(path)))
    for candidate in (current, *current.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def git_dir(checkout: Path) -> Path | None:
    """The git directory holding the shared config (a linked worktree's ``commondir``)."""
    dot_git = checkout / ".git"
    if dot_git.is_dir():
        return dot_git
    try:
        text = dot_git.read_text(encoding="utf-8")
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    linked = Path(text[len("gitdir:") :].strip())
    linked = linked if linked.is_absolute() else checkout / linked
    try:
        common = (linked / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return linked
    return Path(os.path.normpath(linked / common))


def _unquote(value: str) -> str:
    value = re.split(r"\s[;#]", value, maxsplit=1)[0].strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return value


def origin_url(checkout: Path) -> str | None:
    """The ``url`` of ``[remote "origin"]`` in the checkout's git config, if set."""
    directory = git_dir(checkout)
    if directory is None:
        return None
    try:
        lines = (directory / "config").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    in_origin = False
    for line in lines:
        section = _SECTION.match(line)
        if section:
            in_origin = section.group(1).lower() == "remote" and section.group(2) == "origin"
            line = section.group(3)
        if in_origin:
            url = _URL.match(line)
            if url:
                return _unquote(url.group(1)) or None
    return None


def repository_key(workspace: str | os.PathLike[str]) -> str:
    """``forge:host/owner/repo`` from the origin remote, else ``local:<hash>`` of the checkout."""
    checkout = find_checkout(workspace)
    if checkout is None:
        return local_repository_key(workspace)
    url = origin_url(checkout)
    if url:
        try:
            return repository_key_from_remote(url)
        except LessonValidationError:
            pass  # a remote we cannot name (a local path, say) identifies nothing portable
    return local_repository_key(checkout)
