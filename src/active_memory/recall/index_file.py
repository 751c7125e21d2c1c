"""A run's recall index kept in one file, loaded instead of rebuilt while the lessons are the same.

A run start indexes every lesson of its snapshot; at 100,000 lessons decoding their JSON and
filling the tables takes about a second, while loading the built tables with ``marshal`` takes
a fifth of that. So the repository part of the index (:meth:`RecallIndex.state`) is kept in
``<folder>/<digest of the repository key>.index``, one file per repository, replaced whole
(temporary file, then rename, mode 0600) in a folder of this user's alone (0700).

The file is used only for the same content: it holds the :func:`content_key` of what it was
built from, a digest of the repository key and of every snapshot row's checksum in order (a
row's checksum covers the whole row, so equal keys mean equal rows, whichever store or
generation they came from), and the :data:`FORMAT` of the code that wrote it (package version,
the status of the sources that decide the state's content, ``marshal``'s version). Its body is
checked against the BLAKE2b digest it starts with before it is unmarshalled. A file that is
missing, foreign (not a regular file of this user's, 0600), truncated, damaged, of another
format or of other content is ignored: the index is built from the rows and the file written
again. Writing is best effort; a failure only means the next run builds again.

A graph lesson is not in the file: a run holds a few, decoded from the snapshot each time.
"""

from __future__ import annotations

import gc
import hashlib
import marshal
import os
import stat
import sys
from typing import TYPE_CHECKING

from active_memory import __version__, limits
from active_memory.errors import ActiveMemoryError
from active_memory.private_files import make_private_dir, write_private_bytes
from active_memory.recall.index import RecallIndex

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from active_memory.recall.card import ScopedCard
    from active_memory.recall.index import CardEntry, IndexState

__all__ = [
    "FOLDER",
    "FORMAT",
    "MAGIC",
    "content_key",
    "forget_kept",
    "index_file",
    "load_or_build",
    "read_state",
]

FOLDER = "recall-index"  # the folder's name in the state folder: <state>/active-memory/<FOLDER>

MAGIC = b"active-memory recall index\n"
_DIGEST_BYTES = 32
MAX_FILE_BYTES = 1 << 30  # a million lessons' worth; a bigger file is not read
_POSIX = hasattr(os, "geteuid")  # elsewhere the mode bits say nothing of ownership
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _source_status() -> tuple[tuple[int, int] | None, ...]:
    """Size and modification time of the index, of the limits it reads (its broad words decide
    which identifiers and keyword groups a state holds) and of the row decoder that feeds it:
    an edit there changes what a state holds, so it retires every file without a manual bump."""
    package = os.path.dirname(os.path.dirname(__file__))
    sources = (
        sys.modules[RecallIndex.__module__].__file__ or "",
        limits.__file__ or "",
        os.path.join(package, "store", "checked_rows.py"),
    )
    status: list[tuple[int, int] | None] = []
    for source in sources:
        try:
            info = os.stat(source)
        except OSError:
            status.append(None)
        else:
            status.append((info.st_size, info.st_mtime_ns))
    return tuple(status)


# Bump the number when the layout of the file changes.
FORMAT = ("active-memory/run-index", 1, __version__, _source_status(), marshal.version,
          sys.version_info[:2])  # fmt: skip


def content_key(repository: str | None, checksums: Iterable[str]) -> str:
    """What an index is built from, as a digest: the repository key and every row's checksum,
    in snapshot order."""
    text = "\0".join((repository or "", *checksums))
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=32).hexdigest()


def index_file(folder: str | os.PathLike[str], repository: str | None) -> str:
    """The file that keeps the index of ``repository`` in ``folder``."""
    name = hashlib.blake2b((repository or "").encode("utf-8", "surrogatepass"), digest_size=16)
    return os.path.join(os.fspath(folder), name.hexdigest() + ".index")


def forget_kept(folder: str | os.PathLike[str]) -> bool:
    """Remove every index file kept in ``folder``, and what a killed write left of one; whether
    none is left. A purge calls it: a file kept while a lesson was live holds its text, and no
    run start of that repository may ever come to replace it. Only this user's files, in a
    folder of this user's: another user's (one who made the folder first, where others can
    write) were not written here and are not ours to remove."""
    folder = os.fspath(folder)
    try:
        info = os.lstat(folder)
        if not (stat.S_ISDIR(info.st_mode) and _owned(info)):
            return True  # nothing kept there (a symlink is neither read nor written through)
        names = os.listdir(folder)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    whole = True
    for name in names:
        if name.endswith((".index", ".tmp")):
            path = os.path.join(folder, name)
            try:
                if _owned(os.lstat(path)):
                    os.unlink(path)
            except FileNotFoundError:
                pass  # replaced or removed meanwhile by another process
            except OSError:
                whole = False
    return whole


def _owned(info: os.stat_result) -> bool:
    return not _POSIX or info.st_uid == os.geteuid()


def _owned_alone(info: os.stat_result) -> bool:
    return not _POSIX or (info.st_uid == os.geteuid() and not info.st_mode & 0o077)


def _private_bytes(path: str) -> bytes | None:
    """The content of ``path`` if it is a regular file of this user's alone in a folder of this
    user's alone, neither reached through a symlink; else None."""
    try:
        folder = os.lstat(os.path.dirname(path))
        if not (stat.S_ISDIR(folder.st_mode) and _owned_alone(folder)):
            return None  # another user could have put anything there, a FIFO included
        # Non-blocking: opening a FIFO for reading would otherwise wait for a writer.
        descriptor = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):
        return None
    with open(descriptor, "rb") as handle:  # closes the descriptor
        info = os.fstat(descriptor)
        if not (stat.S_ISREG(info.st_mode) and _owned_alone(info)):
            return None
        if info.st_size > MAX_FILE_BYTES:
            return None
        try:
            return handle.read()  # one read of the size fstat gave
        except OSError:
            return None


def read_state(path: str, key: str) -> IndexState | None:
    """The index state kept at ``path`` for content ``key``; None unless the file is private,
    whole, of this :data:`FORMAT` and of that content."""
    data = _private_bytes(path)
    if data is None or not data.startswith(MAGIC):
        return None
    body = memoryview(data)[len(MAGIC) + _DIGEST_BYTES :]
    digest = hashlib.blake2b(body, digest_size=_DIGEST_BYTES).digest()
    if digest != data[len(MAGIC) : len(MAGIC) + _DIGEST_BYTES]:
        return None
    # Unmarshalling makes about a million objects, none of them garbage: the cyclic collector
    # would walk the growing tables again and again (as during a build) for nothing.
    collecting = gc.isenabled()
    gc.disable()
    try:
        entry = marshal.loads(body)
    except (EOFError, ValueError, TypeError):
        return None
    finally:
        if collecting:
            gc.enable()
    if not (isinstance(entry, tuple) and len(entry) == 3 and entry[:2] == (FORMAT, key)):
        return None
    state: IndexState = entry[2]
    return state


def write_state(path: str, key: str, state: IndexState) -> bool:
    """Replace the file at ``path`` with ``state`` for content ``key``; whether it was written
    (a folder that is a symlink or cannot be made, a full disk, a state too big to be read
    back: the next run builds again)."""
    entry: tuple[Any, ...] = (FORMAT, key, state)
    body = marshal.dumps(entry)
    if len(MAGIC) + _DIGEST_BYTES + len(body) > MAX_FILE_BYTES:
        return False  # no start would read it back: every start would write it for nothing
    digest = hashlib.blake2b(body, digest_size=_DIGEST_BYTES).digest()
    try:
        make_private_dir(os.path.dirname(path))
        write_private_bytes(path, b"".join((MAGIC, digest, body)))
    except OSError:
        return False
    return True


def load_or_build(
    folder: str | os.PathLike[str] | Callable[[], str | os.PathLike[str]],
    repository: str | None,
    checksums: Iterable[str],
    entries: Callable[[], Iterable[CardEntry]],
    graph_lessons: Iterable[ScopedCard] = (),
) -> tuple[RecallIndex, bool]:
    """The index of ``repository`` over the rows whose checksums are ``checksums``, and whether
    it came from its file: loaded from it when it was built from the same rows, else built
    from ``entries()`` (as :meth:`RecallIndex.from_entries`) and written for the next run.

    ``folder`` may be a function that finds it: when it raises a configuration error (a state
    folder named by a relative path, no home folder), the index is built and kept nowhere, as
    a run needs no state folder until it writes there."""
    graph = tuple(graph_lessons)
    if callable(folder):
        try:
            folder = folder()
        except (ActiveMemoryError, OSError):
            index = RecallIndex.from_entries(entries(), graph, repository=repository)
            return index, False
    key = content_key(repository, checksums)
    path = index_file(folder, repository)
    state = read_state(path, key)
    if state is not None:
        try:
            return RecallIndex.from_state(state, graph), True
        except (ValueError, TypeError, IndexError):  # not a state: built again below
            pass
    index = RecallIndex.from_entries(entries(), graph, repository=repository)
    write_state(path, key, index.state())
    return index, False
