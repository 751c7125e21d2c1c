"""The store file on disk: refuse anything unsafe before SQLite ever touches it.

SQLite happily opens a symlink, a world-readable file or a stranger's file, and creates ``-wal``
and ``-shm`` files next to whatever it opens. Lessons are injected into agents' contexts, so a
store another user can write is a prompt-injection channel, and a store others can read leaks
evidence. Every check here runs before the first ``sqlite3.connect`` and only reads.
"""

from __future__ import annotations

import contextlib
import os
import stat
import struct
from pathlib import Path

from active_memory.errors import StoreUnavailable

__all__ = [
    "SQLITE_HEADER",
    "backup_destination_problem",
    "create_private_file",
    "ensure_private_directory",
    "fsync_directory",
    "inspect_store_file",
]

SQLITE_HEADER = b"SQLite format 3\x00"
_HEADER_BYTES = 100
# Unix-only checks: Windows has neither uids nor meaningful mode bits.
_POSIX = hasattr(os, "geteuid")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _unavailable(path: Path, problem: str) -> StoreUnavailable:
    return StoreUnavailable(str(path), problem)


def inspect_store_file(path: Path) -> os.stat_result | None:
    """The file's stat when it is a usable store file, None when nothing is there.

    Raises StoreUnavailable for a symlink, directory, special file, a file owned by someone
    else or readable by others, or a non-empty file without a valid SQLite header.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise _unavailable(
            path, "a component of its parent path is a regular file, not a directory"
        ) from None
    except OSError as error:
        raise _unavailable(path, f"cannot be inspected ({error.strerror})") from None
    if stat.S_ISLNK(info.st_mode):
        raise _unavailable(
            path, "is a symbolic link; pass the real file's path so writes cannot be redirected"
        )
    if stat.S_ISDIR(info.st_mode):
        raise _unavailable(
            path, "is a directory; pass the path of the store file, e.g. <dir>/lessons.sqlite3"
        )
    if not stat.S_ISREG(info.st_mode):
        raise _unavailable(path, "is not a regular file")
    if _POSIX:
        if info.st_uid != os.geteuid():
            raise _unavailable(
                path,
                f"is owned by uid {info.st_uid}, not by you (uid {os.geteuid()}); "
                "only its owner may use a lesson store",
            )
        if info.st_mode & 0o077:
            raise _unavailable(
                path,
                f"is accessible by group or others (mode {stat.S_IMODE(info.st_mode):04o}); "
                f"run `chmod 600 {path}`",
            )
    if info.st_size:
        _check_header(path, info.st_size)
    return info


def _check_header(path: Path, size: int) -> None:
    advice = "move it aside or choose another store path"
    if size < _HEADER_BYTES:
        raise _unavailable(path, f"is not an SQLite database (only {size} bytes); {advice}")
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
    except OSError as error:
        raise _unavailable(path, f"cannot be read ({error.strerror})") from None
    try:
        header = os.read(fd, _HEADER_BYTES)
    finally:
        os.close(fd)
    if not header.startswith(SQLITE_HEADER):
        raise _unavailable(path, f"is not an SQLite database (no SQLite header); {advice}")
    (raw_page_size,) = struct.unpack(">H", header[16:18])
    page_size = 65536 if raw_page_size == 1 else raw_page_size
    fractions = header[21:24]
    if (
        page_size < 512
        or page_size & (page_size - 1)
        or fractions != b"\x40\x20\x20"
        or size % page_size
    ):
        raise _unavailable(
            path, "has an SQLite header but a corrupt layout; restore it from a backup"
        )


def ensure_private_directory(directory: Path) -> None:
    """Create ``directory`` and its missing parents as 0700; an existing one is left alone."""
    missing: list[Path] = []
    current = directory
    try:
        while not current.exists():
            if current.is_symlink():
                raise _unavailable(directory, f"its parent {str(current)!r} is a dangling symlink")
            missing.append(current)
            if current.parent == current:
                break
            current = current.parent
    except OSError as error:
        raise _unavailable(
            directory, f"cannot inspect {str(current)!r} ({error.strerror})"
        ) from None
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            continue
        except NotADirectoryError:
            raise _unavailable(
                directory, f"cannot create {str(folder)!r}: a parent is a regular file"
            ) from None
        except OSError as error:
            raise _unavailable(
                directory, f"cannot create directory {str(folder)!r} ({error.strerror})"
            ) from None
        # mkdir honours the umask; a private directory must be exactly 0700.
        os.chmod(folder, 0o700)
    if not directory.is_dir():
        raise _unavailable(directory, "the store's directory is not a directory")


def create_private_file(path: Path) -> bool:
    """Create an empty 0600 file; False when something already exists there.

    Other OSErrors propagate: the caller knows whether the file is a store or a backup.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        return False
    try:
        if _POSIX:
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    return True


def fsync_directory(directory: Path) -> None:
    """Make a rename durable; a no-op where directories cannot be opened (Windows)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | _CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def backup_destination_problem(store: Path, destination: Path, *, force: bool) -> str | None:
    """Why ``destination`` must not receive a backup of ``store`` (None: it may).

    A directory, the store itself (by any path, hard links included) or one of its SQLite
    companions (``-wal``, ``-shm``, ``-journal``) is never replaced; any other existing path only
    with ``force``, and only when it is a regular file.
    """
    store = Path(os.path.abspath(store))
    target = Path(os.path.abspath(destination))
    companions = {store.with_name(store.name + suffix) for suffix in ("-wal", "-shm", "-journal")}
    if target == store or _same_file(target, store):
        return "is the store itself; choose another path"
    if target in companions or any(_same_file(target, c) for c in companions):
        return "is one of the store's own SQLite files; choose another path"
    if target.is_dir():
        return "is a directory; pass a file path such as <dir>/lessons-backup.sqlite3"
    if not os.path.lexists(target):
        return None
    if not force:
        return "already exists; choose a new path, or pass --force to replace it"
    if target.is_symlink() or not target.is_file():
        return "exists and is not a regular file; --force only replaces a regular file"
    return None
