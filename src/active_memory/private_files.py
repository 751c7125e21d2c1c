"""Private folders (0700) and private files written whole (temporary name, then rename, 0600).

Tickets, broker state, latched outcomes, evidence copies and provider recordings all hold things
other users of the machine must not read, and a reader must never see half of one. Standard
library only: the hook path uses it. ``store/files.py`` keeps its own, stricter versions on
purpose (every missing parent made 0700, dangling symlinks refused, unguessable temporary names,
nothing changed before SQLite is known to be safe to open): a store others can write is a
prompt-injection channel into every agent.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

__all__ = ["fsync_directory", "make_private_dir", "write_private_text"]

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def make_private_dir(folder: Path, *, tighten: bool = True) -> Path:
    """``folder`` as a directory only this user may use; returns it, OSError on failure.

    A missing folder is created 0700 exactly (``mkdir`` alone honours the umask); missing parents
    are created too, with the default mode. ``tighten`` also sets an existing folder to 0700;
    without it an existing folder stays as it is (a folder the user named may hold other
    things). A symlink is refused: it could point the private files anywhere.
    """
    if folder.is_symlink():
        raise OSError(errno.ELOOP, "it is a symlink; use a real folder", str(folder))
    existed = folder.is_dir()
    folder.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    if tighten or not existed:
        os.chmod(folder, PRIVATE_DIR_MODE)
    return folder


def fsync_directory(folder: Path) -> None:
    """Make a rename in ``folder`` durable where the platform allows it."""
    # Directories cannot be opened for fsync on every platform (Windows); there the rename is
    # as durable as the OS makes it.
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def write_private_text(path: Path, text: str, *, durable: bool = False) -> None:
    """Replace ``path`` with ``text`` atomically, mode 0600; OSError on failure, nothing left.

    ``durable`` also fsyncs the file and its folder, for records that must survive a crash.
    """
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(temporary, flags, PRIVATE_FILE_MODE)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            # An old temporary may have kept another mode.
            os.fchmod(handle.fileno(), PRIVATE_FILE_MODE)
            handle.write(text)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    if durable:
        fsync_directory(path.parent)
