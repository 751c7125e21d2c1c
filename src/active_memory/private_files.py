"""Private folders (0700) and private files written whole (temporary name, then rename, 0600).

Tickets, broker state, latched outcomes, evidence copies and provider recordings all hold things
other users of the machine must not read, and a reader must never see half of one. Standard
library only, and only modules the interpreter has loaded anyway (``os``, ``errno``): the hook
path uses it on every tool call, where ``pathlib`` or ``contextlib`` would cost more than the
work. ``store/files.py`` keeps its own, stricter versions on purpose (every missing parent made
0700, dangling symlinks refused, unguessable temporary names, nothing changed before SQLite is
known to be safe to open): a store others can write is a prompt-injection channel into every
agent.
"""

from __future__ import annotations

import errno
import os
from _thread import get_ident

from active_memory.type_checking import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import TypeVar

    _Folder = TypeVar("_Folder", bound="str | os.PathLike[str]")

__all__ = [
    "copy_private_file",
    "fsync_directory",
    "make_private_dir",
    "write_private_bytes",
    "write_private_lines",
    "write_private_text",
]

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def make_private_dir(folder: _Folder, *, tighten: bool = True) -> _Folder:
    """``folder`` as a directory only this user may use; returns it, OSError on failure.

    A missing folder is created 0700 exactly (``mkdir`` alone honours the umask); missing parents
    are created too, with the default mode. ``tighten`` also sets an existing folder to 0700 and
    refuses a symlink (it could point the private files anywhere). Without it an existing folder
    is used as it is, through a symlink too: a folder the user named (a working directory, where
    a run log goes) may hold other things, and may well be reached through a link.
    """
    path: str | os.PathLike[str] = folder
    if tighten and os.path.islink(path):
        raise OSError(errno.ELOOP, "it is a symlink; use a real folder", os.fspath(path))
    existed = os.path.isdir(path)
    os.makedirs(path, mode=PRIVATE_DIR_MODE, exist_ok=True)
    if tighten or not existed:
        os.chmod(path, PRIVATE_DIR_MODE)
    return folder


def fsync_directory(folder: str | os.PathLike[str]) -> None:
    """Make a rename in ``folder`` durable where the platform allows it."""
    # Directories cannot be opened for fsync on every platform (Windows); there the rename is
    # as durable as the OS makes it.
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


# A file name holds at most 255 bytes (NAME_MAX, most file systems); the temporary's adds up to
# 34 to the file's: a dot, a pid of up to 7 digits and a thread id of up to 20, separated by dots,
# and ".tmp". A name too long for that is cut for the temporary, or a file whose name fits
# (a transcript copy named by a long execution id, for one) could never be written.
_STEM_BYTES = 255 - 34


def _stem(name: str) -> str:
    """``name`` cut to :data:`_STEM_BYTES` in UTF-8, where a character ends."""
    encoded = name.encode("utf-8", "surrogateescape")
    if len(encoded) <= _STEM_BYTES:
        return name
    return encoded[:_STEM_BYTES].decode("utf-8", "ignore")


def _replace_private(
    path: str | os.PathLike[str], fill: Callable[[int], None], *, durable: bool = False
) -> None:
    """Replace ``path`` atomically with a file ``fill`` writes to the descriptor it is given: a
    temporary beside it (0600, closed here), then a rename; OSError on failure, nothing left.

    ``durable`` also fsyncs the file and its folder.
    """
    folder, name = os.path.split(os.fspath(path))
    # Named by process and thread: two threads of one process replacing the same file (two runs
    # started at once) must not fill one temporary together. _thread is built in and loaded at
    # every interpreter's start, so the hook path pays nothing for it.
    temporary = os.path.join(folder, f".{_stem(name)}.{os.getpid()}.{get_ident()}.tmp")
    # O_NONBLOCK: a FIFO planted at the temporary's name (before its folder was made private)
    # fails the open at once instead of blocking it until a reader comes; files ignore it.
    flags = (os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_NONBLOCK", 0))  # fmt: skip
    try:
        descriptor = os.open(temporary, flags, PRIVATE_FILE_MODE)
        try:
            if hasattr(os, "fchmod"):  # an old temporary may have kept another mode
                os.fchmod(descriptor, PRIVATE_FILE_MODE)
            fill(descriptor)
            if durable:
                os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.replace(temporary, path)
    except BaseException:
        try:  # noqa: SIM105  (contextlib would cost the hook path an import)
            os.unlink(temporary)
        except OSError:
            pass
        raise
    if durable:
        fsync_directory(folder or os.curdir)


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view) :]


def write_private_text(path: str | os.PathLike[str], text: str, *, durable: bool = False) -> None:
    """Replace ``path`` with ``text`` atomically, mode 0600; OSError on failure, nothing left.

    ``durable`` also fsyncs the file and its folder, for records that must survive a crash.
    """

    def fill(descriptor: int) -> None:
        # Text mode, as a file opened with open(): the platform's newlines, UTF-8 strictly.
        with os.fdopen(descriptor, "w", encoding="utf-8", closefd=False) as handle:
            handle.write(text)

    _replace_private(path, fill, durable=durable)


def write_private_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """:func:`write_private_text` for bytes (the hook fallback's cached index): replace ``path``
    with ``data`` atomically, mode 0600; OSError on failure, nothing left."""
    _replace_private(path, lambda descriptor: _write_all(descriptor, data))


def write_private_lines(path: str | os.PathLike[str], lines: Iterable[str]) -> None:
    """:func:`write_private_text` for text produced a line at a time (a complete transcript
    copy of any length): streamed, atomically, mode 0600; OSError on failure, nothing left. An
    exception ``lines`` raises leaves nothing behind either."""

    def fill(descriptor: int) -> None:
        with os.fdopen(descriptor, "w", encoding="utf-8", closefd=False) as handle:
            for line in lines:
                handle.write(line)

    _replace_private(path, fill)


def copy_private_file(source: str | os.PathLike[str], destination: str | os.PathLike[str]) -> None:
    """Replace ``destination`` with a copy of ``source``, streamed, atomically, mode 0600;
    OSError on failure, nothing left (a saved run's transcript copies: any size, private)."""

    def fill(descriptor: int) -> None:
        while chunk := reader.read(1 << 20):
            _write_all(descriptor, chunk)

    with open(source, "rb") as reader:
        _replace_private(destination, fill)
