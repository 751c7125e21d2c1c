"""The private session folder and its lock.

The folder is 0700, owned by the user and outside every git checkout (the session holds copies
of transcripts, and a checkout's files are what maintenance cites). A folder that fails any of
this is refused, never repaired. The lock is an exclusive ``flock`` held for the whole call, so
a second call on the same session, an interrupted export's included, is refused while the first
advances; the kernel drops it when its process dies, however it dies.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

from active_memory.history_init.state import STATE_FILE, InitRefused
from active_memory.private_files import make_private_dir
from active_memory.repository import find_checkout

__all__ = ["LOCK_FILE", "RUNS_DIR", "clear_interrupted_start", "open_session_dir", "session_lock"]

LOCK_FILE = "session.lock"
RUNS_DIR = "runs"


def _refuse(directory: Path, problem: str) -> InitRefused:
    return InitRefused(
        f"--dir {str(directory)!r} {problem}; give a new private folder outside every "
        "repository checkout, e.g. ~/.local/state/active-memory/init/SESSION",
        bad_input=True,
    )


def open_session_dir(given: Path) -> tuple[Path, bool]:
    """The absolute session folder and whether it holds a session already; the folder is
    created (0700) when missing. InitRefused for a folder that is not private or lies inside
    a checkout."""
    directory = Path(os.path.abspath(os.path.expanduser(given)))
    parent_checkout = find_checkout(directory.parent if not directory.exists() else directory)
    if parent_checkout is not None:
        raise _refuse(directory, f"is inside the git checkout {str(parent_checkout)!r}")
    if os.path.islink(directory):
        raise _refuse(directory, "is a symlink")
    if not os.path.lexists(directory):
        try:
            make_private_dir(directory)
        except OSError as error:
            raise _refuse(directory, f"cannot be created ({error.strerror or error})") from None
        return directory, False
    info = os.lstat(directory)
    if not stat.S_ISDIR(info.st_mode):
        raise _refuse(directory, "is not a folder")
    if info.st_uid != os.getuid():
        raise _refuse(directory, "is owned by another user")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise _refuse(directory, f"has mode {stat.S_IMODE(info.st_mode):o}, not 700")
    existing = (directory / STATE_FILE).exists()
    if not existing and not _fresh(set(os.listdir(directory))):
        raise _refuse(directory, "is not empty and holds no memory init session")
    return directory, existing


# The temporary ``write_private_text`` writes state.json through: a first call killed before
# its rename (SIGKILL, a power cut) leaves it behind, named with that call's pid and thread
# (a temporary of an earlier version is named with the pid alone).
_STATE_TEMPORARY = re.compile(rf"\.{re.escape(STATE_FILE)}\.[0-9]+(?:\.[0-9]+)?\.tmp")


def _fresh(names: set[str]) -> bool:
    """An empty folder, or what a first call interrupted before its first checkpoint leaves
    (its lock, the runs it had converted so far, and a state.json temporary it was writing when
    killed): the next call starts it over."""
    if not names:
        return True
    leftovers = {name for name in names if _STATE_TEMPORARY.fullmatch(name)}
    return LOCK_FILE in names and names - leftovers <= {LOCK_FILE, RUNS_DIR}


def clear_interrupted_start(directory: Path) -> None:
    """Remove what a first call that died before ``state.json`` existed left: its converted
    runs and the temporary of the checkpoint it was writing."""
    if os.path.isdir(directory / RUNS_DIR) and not os.path.islink(directory / RUNS_DIR):
        shutil.rmtree(directory / RUNS_DIR)
    for name in os.listdir(directory):
        if _STATE_TEMPORARY.fullmatch(name) and not os.path.isdir(directory / name):
            os.unlink(directory / name)


@contextlib.contextmanager
def session_lock(directory: Path) -> Iterator[None]:
    """Hold the session's exclusive lock, or InitRefused when another process holds it."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    descriptor = os.open(directory / LOCK_FILE, flags, 0o600)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            raise InitRefused(
                f"another `active-memory memory init` is advancing the session "
                f"{str(directory)!r}; wait for it to finish, then call again"
            ) from None
        yield
    finally:
        os.close(descriptor)
