"""Keep hook files that hold a broker token or ticket path out of ``git add``.

``hooks install --project`` writes a bearer token (Claude Code's ``http`` hook) or the path of a
private broker ticket into the project. When the project is a git checkout, the written file's
path (and its backups, which may hold an older token) is added to the repository's
``info/exclude``: local to this clone, never committed, read by every ``git add``. Nothing is
added when git already ignores the file, and a line already present is not added again.

A file git already tracks is not protected by any ignore rule; that is reported so the user can
untrack it.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

from pydantic import ConfigDict, Field

from active_memory.bounded_input import read_text, regular_file_problem
from active_memory.errors import InputRefused, RecallError
from active_memory.models.base import Model
from active_memory.repository import find_checkout, git_dir

__all__ = ["Exclusion", "exclude_from_git"]

_HEADER = "# active-memory: hook files holding a broker token or ticket path (never commit)"
_SPECIAL = re.compile(r"([\\*?\[\]!#])")
_GIT_ENV = {"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "GIT_NO_LAZY_FETCH": "1"}
_GIT_TIMEOUT_S = 10
# An exclude file is a few lines; one past this is not git's own.
_MAX_EXCLUDE_BYTES = 16 * 1024 * 1024
_APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC


class Exclusion(Model):
    """What was done for one written file: the exclude file changed, or why nothing was needed.

    The JSON form names ``exclude_file`` ``file``."""

    model_config = ConfigDict(serialize_by_alias=True)

    exclude_file: Path | None = Field(default=None, serialization_alias="file")
    added: tuple[str, ...] = ()
    already_ignored: bool = False
    tracked: bool = False


def _literal(relative: str) -> str:
    """An anchored gitignore pattern matching exactly ``relative`` (no glob characters)."""
    escaped = _SPECIAL.sub(r"\\\1", relative)
    if escaped.endswith(" "):
        escaped = escaped[:-1] + "\\ "
    return "/" + escaped


def _git(top: Path, *args: str) -> int | None:
    """Exit status of a read-only git command in ``top``; None when git cannot run."""
    try:
        done = subprocess.run(
            ["git", "-c", "core.fsmonitor=false", *args],
            cwd=top,
            env={**os.environ, **_GIT_ENV},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=_GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.returncode


def _refuse_special(exclude: Path) -> None:
    """RecallError when the exclude file exists and is not a regular file: git (and an append)
    would wait on a FIFO there for ever."""
    if not os.path.lexists(exclude):
        return
    problem = regular_file_problem(exclude)
    if problem is not None:
        raise RecallError(f"{str(exclude)!r} {problem}; move it aside, then install again")


def _append(exclude: Path, lines: list[str]) -> tuple[str, ...]:
    try:
        text = read_text(exclude, what=repr(str(exclude)), max_bytes=_MAX_EXCLUDE_BYTES)
    except InputRefused as refused:
        if refused.problem == "does not exist":
            text = ""
        else:
            raise RecallError(f"{refused}; fix or move it, then install again") from None
    present = set(text.splitlines())
    missing = [line for line in lines if line not in present]
    if not missing:
        return ()
    if _HEADER not in present:
        missing.insert(0, _HEADER)
    exclude.parent.mkdir(parents=True, exist_ok=True)
    prefix = "" if not text or text.endswith("\n") else "\n"
    data = (prefix + "".join(line + "\n" for line in missing)).encode("utf-8")
    # Non-blocking, then checked: a FIFO swapped in since the read is refused, not waited on.
    descriptor = os.open(exclude, _APPEND_FLAGS, 0o666)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise RecallError(f"{str(exclude)!r} is not a regular file; move it aside")
        written = 0
        while written < len(data):
            written += os.write(descriptor, data[written:])
    finally:
        os.close(descriptor)
    return tuple(line for line in missing if line != _HEADER)


def exclude_from_git(path: Path, *, backups: bool = True) -> Exclusion:
    """Add ``path`` (and its ``.bak`` backups) to its checkout's ``info/exclude`` if needed.

    Does nothing outside a git checkout, or for what git already ignores.
    """
    top = find_checkout(path.parent)
    directory = git_dir(top) if top is not None else None
    if top is None or directory is None:
        return Exclusion()
    exclude = directory / "info" / "exclude"
    _refuse_special(exclude)  # before git runs: every git command reads it
    relative = (Path(os.path.realpath(path.parent)) / path.name).relative_to(top).as_posix()
    tracked = _git(top, "ls-files", "--error-unmatch", "--", relative) == 0
    wanted = [(relative, _literal(relative))]
    if backups:
        wanted.append((f"{relative}.20000101000000.bak", _literal(relative) + ".*.bak"))
    # check-ignore: 0 ignored already, 1 not ignored; anything else (or no git): add the line.
    lines = [line for sample, line in wanted if _git(top, "check-ignore", "-q", "--", sample) != 0]
    if not lines and not tracked:
        return Exclusion(already_ignored=True)
    added = _append(exclude, lines)
    return Exclusion(
        exclude_file=exclude if added else None,
        added=added,
        already_ignored=not lines,
        tracked=tracked,
    )
