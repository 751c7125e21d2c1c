"""The private folders hooks keep state in: the broker's state directory, and the one beside the
store where the hook fallback keeps exposures and its cached index.

Standard library only (the exception tree where it refuses): the fallback checks its folder on
every call.
The folder is made by :func:`active_memory.private_files.make_private_dir` (exactly 0700 when
new); an existing one is not tightened here but refused unless it is a real directory (not a
symlink) of this user's alone. The store may sit in a folder others can write, where another
user could have made the folder first: :func:`is_private_dir` and :func:`read_private` let the
fallback ignore such a folder, or a file in it that is not this user's, before reading anything.
Their private files (an exposure file, a run's fallback journal) grow by whole lines through
:func:`append_private`.
"""

from __future__ import annotations

import os
import stat
import sys

from active_memory.private_files import make_private_dir
from active_memory.type_checking import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "append_private",
    "digest_name",
    "is_private",
    "is_private_dir",
    "private_dir",
    "read_private",
]

_POSIX = hasattr(os, "geteuid")  # elsewhere (Windows) the mode bits say nothing of ownership
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _sha256() -> Any:
    """CPython's own SHA-256 (``_sha256`` up to 3.11, ``_sha2`` after): hashlib would load
    OpenSSL first, which costs a hook call about 3 ms. Other interpreters get hashlib's."""
    try:
        return __import__("_sha2" if sys.version_info >= (3, 12) else "_sha256").sha256
    except (ImportError, AttributeError):
        import hashlib

        return hashlib.sha256


_SHA256 = _sha256()


def digest_name(text: str) -> str:
    """A file name for ``text`` (a path, a conversation id…): 32 hex digits of its sha256."""
    digest: str = _SHA256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return digest[:32]


def is_private(info: os.stat_result) -> bool:
    """Whether ``info`` (an ``lstat`` or ``fstat``) is owned by the effective user, with no
    permission for group or others."""
    return not _POSIX or (info.st_uid == os.geteuid() and not info.st_mode & 0o077)


def is_private_dir(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a real directory (a symlink is not) of this user's alone (0700).

    False when it is missing too: then there is nothing in it to read.
    """
    try:
        info = os.lstat(path)
    except (OSError, ValueError):
        return False
    return stat.S_ISDIR(info.st_mode) and is_private(info)


def read_private(path: str | os.PathLike[str], max_bytes: int) -> bytes | None:
    """The content of ``path`` when it is a regular file of this user's alone (0600) of at most
    ``max_bytes``, opened without following a symlink; None otherwise (missing included)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or not is_private(info) or info.st_size > max_bytes:
            return None
        data = b""
        while len(data) < info.st_size:  # one read of the known size, not a big buffer per chunk
            chunk = os.read(descriptor, info.st_size - len(data))
            if not chunk:
                break
            data += chunk
        return data
    except OSError:
        return None
    finally:
        os.close(descriptor)


def append_private(path: str, data: bytes, max_bytes: int) -> bool:
    """Append ``data`` (whole lines) to ``path`` in one write, on a line of its own; False when
    nothing was written: ``path`` is a symlink or not a regular file of this user's alone, it
    reached ``max_bytes``, or the write failed. A missing file is made 0600."""
    try:  # read and write: the last byte says whether a torn line ends the file
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | _NOFOLLOW, 0o600)
    except OSError:
        return False  # a symlink, or not ours to write
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or not is_private(info) or info.st_size >= max_bytes:
            return False
        if info.st_size and _last_byte(descriptor, info.st_size) != b"\n":
            data = b"\n" + data  # after a torn line: start a line of our own
        return os.write(descriptor, data) == len(data)
    except OSError:
        return False
    finally:
        os.close(descriptor)


def _last_byte(descriptor: int, size: int) -> bytes:
    """The last byte of an open file of ``size`` bytes (a newline where it cannot be read)."""
    pread = getattr(os, "pread", None)
    if pread is None:
        return b"\n"  # no positioned read (Windows): trust the file's end
    data: bytes = pread(descriptor, 1, size - 1)
    return data


def private_dir(path: str | os.PathLike[str]) -> None:
    """Create ``path`` (mode 0700) if needed and refuse one that others can read or write.

    OSError when it cannot be created; RecallError when it exists but is a symlink (even to a
    private folder: what is written or pruned there must stay there) or is not this user's
    alone.
    """
    make_private_dir(path, tighten=False)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        problem = f"{os.fspath(path)!r} must be a real folder, not a symbolic link"
    elif not is_private(info):
        problem = (
            f"{os.fspath(path)!r} must be a directory only you can use (mode 0700); "
            f"run `chmod 700 {os.fspath(path)}`"
        )
    else:
        return
    # Imported where raised: the hook path loads no exception tree (about 1 ms a call).
    from active_memory.errors import RecallError

    raise RecallError(problem)
