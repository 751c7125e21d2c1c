"""The host's own check that a harness session read only inside its folders.

A specialist reads the checkout and the evidence folder, nothing else (issue 30): a reviewed
transcript could ask it to read ``~/.ssh``. Claude Code confines its reads itself (path-scoped
permission rules); Codex, Copilot CLI and pi cannot be trusted to, so each lane's events are
checked here: a tool call that named a path outside the session's folders fails the session
(:meth:`~.harness_cli.HarnessCli.read_outside`) before its answer is admitted.

:func:`outside` checks a path a file tool was given; :func:`command_outside` the words of a
shell command line (Codex reads with commands): any word that names an existing path outside
the folders, and any word the shell would expand (``$VAR``, ``$(…)``, a backquote), which the
host cannot check, counts. :class:`ToolReads` keeps both checks' findings for one session,
with the files its reads showed.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from pathlib import Path

from active_memory.agents.harness_lanes.harness_cli import root_path

__all__ = ["ToolReads", "command_outside", "outside", "shell_script"]

_GLOB = frozenset("*?[{")
_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
_UNCHECKABLE = ("$(", "${", "`")


def _roots(folders: Iterable[tuple[str, str]]) -> tuple[Path, ...]:
    return tuple(Path(folder).resolve() for _, folder in folders)


def _inside(path: str, roots: tuple[Path, ...], cwd: Path) -> bool:
    # A glob is checked by its fixed part: `/etc/*` reads /etc.
    fixed = Path(path).parts
    for at, part in enumerate(fixed):
        if _GLOB & set(part):
            fixed = fixed[:at]
            break
    try:
        resolved = (cwd / Path(os.path.expanduser(Path(*fixed) if fixed else "."))).resolve()
    except (OSError, ValueError, RuntimeError):
        return False
    return any(resolved.is_relative_to(root) for root in roots)


def outside(paths: Iterable[str], folders: Iterable[tuple[str, str]], cwd: Path) -> list[str]:
    """The ``paths`` (absolute, ``~/…`` or relative to ``cwd``) that are in none of ``folders``."""
    roots = _roots(folders)
    return [path for path in paths if not _inside(path, roots, cwd)]


def shell_script(command: str) -> str:
    """The script a ``bash -lc '…'`` command line runs (Codex wraps each command so)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    if len(words) >= 3 and Path(words[0]).name in _SHELLS and words[1].startswith("-"):
        return words[-1]
    return command


def command_outside(command: str, folders: Iterable[tuple[str, str]], cwd: Path) -> list[str]:
    """The words of ``command`` that name an existing path outside ``folders`` or that the
    shell would expand; a command line that does not parse is returned whole."""
    script = shell_script(command)
    try:
        words = shlex.split(script)
    except ValueError:
        return [script]
    roots = _roots(folders)
    found: list[str] = []
    for word in words:
        if word.startswith("$") or any(sign in word for sign in _UNCHECKABLE):
            found.append(word)
            continue
        # An option's value (`--file=/etc/x`) names a path as much as a bare word does.
        value = word.split("=", 1)[1] if word.startswith("-") and "=" in word else word
        if not value.startswith(("/", "~", ".")) and ".." not in value:
            continue
        candidate = cwd / os.path.expanduser(value)
        if not (candidate.exists() or _GLOB & set(value)):
            continue
        if not _inside(value, roots, cwd):
            found.append(word)
    return found


class ToolReads:
    """What one session's tools read, as its events tell it: the files shown, named
    ``root:relative/path`` against ``folders``, and the paths named outside them. Relative
    paths are from ``cwd``, the session's working directory."""

    def __init__(self, folders: Iterable[tuple[str, str]], cwd: Path) -> None:
        self.folders = tuple(folders)
        self.cwd = cwd
        self._shown: set[str] = set()
        self._outside: list[str] = []

    def named(self, paths: Iterable[str]) -> None:
        """Paths a file tool was given and ran on (see :func:`outside`)."""
        self._outside += outside(paths, self.folders, self.cwd)

    def commanded(self, command: str) -> None:
        """A command line the session ran (see :func:`command_outside`)."""
        self._outside += command_outside(command, self.folders, self.cwd)

    def showed(self, path: str) -> None:
        """A file a tool showed; one in none of the folders is not named."""
        shown = root_path(str(self.cwd / path), self.folders)
        if shown is not None:
            self._shown.add(shown)

    @property
    def read_paths(self) -> frozenset[str]:
        return frozenset(self._shown)

    @property
    def outside_reads(self) -> tuple[str, ...]:
        return tuple(self._outside)
