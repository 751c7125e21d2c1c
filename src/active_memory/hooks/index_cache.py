"""The hook fallback's recall index, built once per store content and cached beside the store.

Without a broker every tool call is a new process; rebuilding the index from the store on each
one costs more than the interpreter's own start. So the built index
(:meth:`~active_memory.recall.index.RecallIndex.state`) is kept in a private file, in the
``exposure`` folder beside the store (0700, the fallback's own): ``<digest>.index``, mode 0600,
one per store and workspace, written atomically.

The file is used only when everything it was built from still holds, else it is rebuilt:

* its format (:data:`FORMAT`): this entry layout's number, the package version, the status of
  the source files whose code decides what the index state holds (:data:`LAYOUT_SOURCES`: the
  index itself, the limits it reads, the row decoder and this module; Python recompiles them by
  the same status, so an edit there rebuilds every cache without a manual bump), this
  interpreter's ``marshal`` version and the machine's byte order;
* the store (path, file identity, creation time, generation and content counters, read from
  the store when the file's status below does not vouch for them);
* the workspace's real path and its repository key. Deriving that key reads git metadata and
  costs as much as the rest of the call, so the file also keeps the status (``stat``) of every
  file and folder the key was derived from: the checkout's ``.git``, its config (the origin
  remote), and the folders between the workspace and the checkout, where a new ``.git`` would
  make another checkout. When any of them changed, the key is derived again.

The state's tables are kept as they are; its three text columns (the cards' ids, titles and
recommendations), which a call reads only for the few cards it matches, are each kept as one
string and the positions where its strings end (:class:`_TextColumn`), so loading the file
builds a few objects per card fewer. A file that cannot be read, does not unmarshal, is not
private to this user or has the wrong shape counts as missing; in a folder that is not this
user's alone (0700, not a symlink) the file is neither read nor written.

Opening the store costs a warm call about as much as the rest of its own work (``_sqlite3`` and the
``functools`` it imports, the checks on the file, the connection, the stamp query), so the file
also keeps the status (inode, size, modification and change times, in nanoseconds) of the store
file and of its write-ahead log, taken just before the stamp was read, and when. Every write to
the store writes one of those two files, which moves the store file's change time (``ctime``:
``utime`` cannot set it back) or the log's modification time (its change time also moves when
SQLite merely opens it as root). While both statuses are still the recorded ones, the store is
not opened. A write can leave those times where they were only within the file system's
timestamp granularity of the previous change, so statuses recorded less than
:data:`SETTLED_NS` after the last change vouch for nothing (the racy-git rule): that call reads
the stamp, and records the statuses again once they have settled. Per call, the cost is then a
few ``stat`` calls and loading this file with one read.
"""

from __future__ import annotations

import marshal
import os
import sys
import time

from active_memory import __version__
from active_memory.hooks.private_dir import digest_name, is_private_dir, private_dir, read_private
from active_memory.private_files import write_private_bytes
from active_memory.recall.index import RecallIndex
from active_memory.type_checking import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any, TypeAlias

    from active_memory.recall.index import CardColumns, IndexState
    from active_memory.store.rows import StoreRows, StoreStamp

    Status: TypeAlias = tuple[int, int, int, int] | None  # inode, size, mtime_ns, ctime_ns
    Fingerprint: TypeAlias = tuple[tuple[str, Status], ...]
    # the store file's and its write-ahead log's status, and when they were taken (ns)
    StoreFiles: TypeAlias = tuple[tuple[Status, Status], int]

__all__ = [
    "FORMAT",
    "LAYOUT_SOURCES",
    "MAX_CACHE_BYTES",
    "SETTLED_NS",
    "CachedIndex",
    "cache_folder",
    "cache_path",
    "layout_stamp",
    "load_index",
]


def layout_stamp(paths: tuple[str | None, ...]) -> tuple[tuple[int, int] | None, ...]:
    """The size and modification time of each source file (None when it cannot be read): what
    CPython checks before reusing a module's compiled code, so what changes when the code does.
    """
    stamps: list[tuple[int, int] | None] = []
    for path in paths:
        try:
            info = os.stat(path) if path else None
        except OSError:
            info = None
        stamps.append(None if info is None else (info.st_size, info.st_mtime_ns))
    return tuple(stamps)


# The code that decides the shape and the content of the cached state: the index (state and
# from_state), the row decoder (which rows it holds) and the entry layout below. The decoder is
# named by its path: importing it would load _sqlite3, which a call served from this file skips.
_ROWS_SOURCE = os.path.join(
    os.path.dirname(os.path.dirname(__file__)), "store", "rows" + os.path.splitext(__file__)[1]
)
# The limits the index reads (its broad words decide which identifiers and keyword groups a
# state keeps) count as its code: the index module has loaded them already.
LAYOUT_SOURCES = (
    sys.modules[RecallIndex.__module__].__file__,
    sys.modules["active_memory.limits"].__file__,
    _ROWS_SOURCE,
    __file__,
)
# Bump the number when the entry layout changes; the version and the sources' status follow
# the code by themselves.
FORMAT = (
    "active-memory/hook-index",
    5,
    __version__,
    layout_stamp(LAYOUT_SOURCES),
    marshal.version,
    sys.version_info[:2],
    sys.byteorder,  # of the text columns' ends
)
MAX_CACHE_BYTES = 64 * 1024 * 1024
# Where each string of a text column ends: a C unsigned int ("I": ``memoryview`` casts to it
# without an import), enough for any file under MAX_CACHE_BYTES.
_END_BYTES = memoryview(bytes(8)).cast("I").itemsize
# How long after a file's last change its status vouches for its content: more than any file
# system's timestamp granularity (a clock tick on most, 2 s on FAT).
SETTLED_NS = 3_000_000_000


class CachedIndex:
    """The index for one call: where its file is, and whether it came from that file."""

    __slots__ = ("from_cache", "index", "path", "repository")

    def __init__(self, index: RecallIndex, repository: str, path: str, from_cache: bool) -> None:
        self.index = index
        self.repository = repository
        self.path = path
        self.from_cache = from_cache

    def discard(self) -> None:
        """Remove the file (the index it held failed): the next call rebuilds it."""
        try:  # noqa: SIM105  (contextlib would cost the hook path an import)
            os.unlink(self.path)
        except OSError:
            pass  # already gone, or never written


def cache_folder(store: str) -> str:
    """The folder beside the store at ``store`` where the indexes of its workspaces are cached
    (with the exposure files)."""
    return os.path.join(os.path.dirname(store), "exposure")


def cache_path(store: str, real_workspace: str) -> str:
    """Where the index of ``real_workspace`` over the store at ``store`` is cached."""
    name = digest_name(f"{store}\0{real_workspace}")
    return os.path.join(cache_folder(store), name + ".index")


def _status(path: str) -> Status:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _holds(fingerprint: Fingerprint) -> bool:
    return all(_status(path) == status for path, status in fingerprint)


def _derive_repository(real_workspace: str) -> tuple[str, Fingerprint]:
    """The workspace's repository key, and the status of everything it was derived from."""
    # Imported only when the cached key no longer holds: repository identity (pathlib, urllib,
    # hashlib behind it) costs a warm call more than everything else it does.
    from active_memory.repository import find_checkout, git_dir, repository_key

    checkout = find_checkout(real_workspace)
    top = None if checkout is None else str(checkout)
    sources = []
    folder = real_workspace
    while folder != top:  # a `.git` created in any of these would move the checkout
        sources.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    if checkout is not None:
        sources.append(os.path.join(str(checkout), ".git"))
        directory = git_dir(checkout)
        if directory is not None:
            sources.append(os.path.join(str(directory), "config"))
    # Status first, key second: a change in between makes the next call derive it again.
    fingerprint = tuple((path, _status(path)) for path in sources)
    return repository_key(real_workspace), fingerprint


class _TextColumn:
    """A text column of a cached state (the cards' ids, titles or recommendations) as the file
    keeps it: its strings joined into one, and where each ends. Loading it makes two objects
    rather than one per card (at 1,000 cards, about 0.25 ms of a call's 1 ms ``marshal`` load),
    and a call slices out only the strings its few matches name.

    Loading checks the ends' count and the last one, not their order (a sort of each column's
    ends costs about as much as the layout saves). A string is sliced only when its two ends
    and their neighbours are in order within the text, else ValueError: a damaged end never
    puts other cards' text, or none, into a card; the call fails and the fallback drops the
    file (:meth:`CachedIndex.discard`)."""

    __slots__ = ("_ends", "_text")

    def __init__(self, text: str, ends: memoryview) -> None:
        self._text = text
        self._ends = ends  # string i is text[ends[i - 1]:ends[i]] (the first from 0)

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, position: int, /) -> str:
        ends = self._ends
        count, size = len(ends), len(self._text)
        if position < 0:
            position += count
            if position < 0:
                raise IndexError("text column index out of range")
        end = ends[position]
        start = ends[position - 1] if position > 0 else 0
        # Each end this string uses is checked against the ends on both sides of it: an end that
        # damage moved breaks that order, whichever way it moved.
        earlier = ends[position - 2] if position > 1 else 0
        later = ends[position + 1] if position + 1 < count else size
        if not earlier <= start <= end <= later <= size:
            raise ValueError("a damaged text column: its ends go back or past its text")
        return self._text[start:end]

    def holds(self) -> bool:
        """Whether every end is in order within the text (what slicing checks one by one)."""
        ends = self._ends.tolist()
        return ends == sorted(ends) and (not ends or ends[-1] <= len(self._text))

    def packed(self) -> tuple[str, bytes]:
        """The text and ends as the file keeps them (see :func:`_packed_columns`)."""
        return self._text, self._ends.tobytes()

    def __iter__(self) -> Iterator[str]:
        return (self[position] for position in range(len(self)))


def _packed_columns(columns: CardColumns) -> tuple[Any, ...]:
    """The card columns as the file keeps them: the revisions as they are, each text column as
    its joined text and the native unsigned ints (:data:`FORMAT` names the byte order) where
    each of its strings ends."""
    ids, revisions, titles, recommendations = columns

    def packed(column: Iterable[str]) -> tuple[str, bytes]:
        if isinstance(column, _TextColumn):  # as loaded: no string sliced out, nor checked
            return column.packed()
        strings = tuple(column)
        ends, end = [], 0
        for string in strings:
            end += len(string)
            ends.append(_end(end))
        return "".join(strings), b"".join(ends)

    return (packed(ids), tuple(revisions), packed(titles), packed(recommendations))


def _unpacked_columns(packed: object) -> tuple[Any, ...] | None:
    """The card columns :func:`_packed_columns` wrote, each text column a :class:`_TextColumn`;
    None when ``packed`` is not such columns, of one length."""
    if not (isinstance(packed, tuple) and len(packed) == 4 and isinstance(packed[1], tuple)):
        return None
    count = len(packed[1])
    texts: list[_TextColumn] = []
    for column in (packed[0], packed[2], packed[3]):
        if not (isinstance(column, tuple) and len(column) == 2):
            return None
        text, ends = column
        if not (isinstance(text, str) and isinstance(ends, bytes)):
            return None
        if len(ends) != count * _END_BYTES or (count and ends[-_END_BYTES:] != _end(len(text))):
            return None
        texts.append(_TextColumn(text, memoryview(ends).cast("I")))
    return (texts[0], packed[1], texts[1], texts[2])


def _end(position: int) -> bytes:
    return position.to_bytes(_END_BYTES, sys.byteorder)


def _columns_hold(state: IndexState) -> bool:
    """Whether the text columns of a state read from the file are whole: checked before the
    state is written again under a new key (a call served from the file checks each string it
    slices instead)."""
    return all(column.holds() for column in state[1] if isinstance(column, _TextColumn))


def _read(path: str) -> tuple[Any, ...] | None:
    """The cache entry at ``path``; None when it is missing, foreign or damaged, or its folder
    is not this user's alone (another user may have made it: nothing in it is trusted)."""
    if not is_private_dir(os.path.dirname(path)):
        return None
    data = read_private(path, MAX_CACHE_BYTES)
    if data is None:
        return None
    try:
        entry = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    if not isinstance(entry, tuple) or len(entry) != 7 or entry[0] != FORMAT:
        return None
    state = entry[5]
    if not (isinstance(state, tuple) and len(state) == 6):
        return None
    columns = _unpacked_columns(state[1])
    if columns is None or not all(isinstance(table, dict) for table in state[2:]):
        return None
    return (*entry[:5], (state[0], columns, *state[2:]), entry[6])


def _write(path: str, entry: tuple[Any, ...]) -> None:
    """Replace the cache file atomically (0600); a failure only costs the next call a rebuild.

    Not in a folder that is not this user's alone, or is a symlink (:func:`private_dir`
    refuses it).
    """
    state = entry[5]
    try:
        packed = (state[0], _packed_columns(state[1]), *state[2:])
        private_dir(os.path.dirname(path))
        write_private_bytes(path, marshal.dumps((*entry[:5], packed, entry[6])))
    except Exception:
        pass  # nothing is left behind: write_private_bytes removes its temporary file


def _file_status(path: str, *, changed: bool = True) -> Status:
    """As :func:`_status`, of the link itself (the store is never read through a symlink); the
    last field is the change time, or the modification time when not ``changed``."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns,
            info.st_ctime_ns if changed else info.st_mtime_ns)  # fmt: skip


def _store_statuses(store: str) -> tuple[Status, Status]:
    # The log's change time moves without a write: SQLite gives the log the database's owner
    # (fchown) each time it opens it as root. Every write to the log moves its modification
    # time, which stands in for it.
    return _file_status(store), _file_status(store + "-wal", changed=False)


def _store_files(store: str) -> StoreFiles:
    """The status of the store file and of its write-ahead log, and the time they were taken."""
    return _store_statuses(store), time.time_ns()


def _vouches(recorded: object, store: str) -> bool:
    """Whether the recorded status of the store's files still holds and had settled when it was
    taken: no write since then can have left both files as they were."""
    if not isinstance(recorded, tuple) or len(recorded) != 2:
        return False
    statuses, taken = recorded
    if statuses != _store_statuses(store):
        return False
    if not isinstance(taken, int) or statuses[0] is None:
        return False
    return _settled(recorded)


def _settled(files: StoreFiles) -> bool:
    """Whether each file's last change was more than :data:`SETTLED_NS` before its status was
    taken."""
    statuses, taken = files
    return all(status is None or taken - status[3] > SETTLED_NS for status in statuses)


def load_index(store: str, workspace: str) -> CachedIndex:
    """The repository index of ``workspace`` over the store at ``store``: from its cache file
    when that still holds, else built from the stored rows and cached.

    The store is opened only when the cache file does not hold or its record of the store's
    files does not vouch for its stamp (:data:`SETTLED_NS`); opening it raises StoreUnavailable
    as :class:`~active_memory.store.rows.StoreRows` does.

    An entry is ``(FORMAT, (store, real workspace), store stamp, repository, fingerprint,
    index state, store files)``.
    """
    store = os.path.abspath(store)  # as StoreRows names it
    real = os.path.realpath(os.path.abspath(workspace))
    path = cache_path(store, real)
    entry = _read(path)
    if entry is not None and entry[1] != (store, real):
        entry = None
    if entry is not None and _holds(entry[4]) and _vouches(entry[6], store):
        return CachedIndex(RecallIndex.from_state(entry[5]), entry[3], path, True)
    # Imported here: the call served from the cache file above never loads _sqlite3.
    from active_memory.store.rows import StoreRows

    with StoreRows(store) as rows:
        return _load_from_store(rows, path, real, entry)


def _load_from_store(
    rows: StoreRows, path: str, real: str, entry: tuple[Any, ...] | None
) -> CachedIndex:
    files = _store_files(rows.path)  # taken before the stamp: a write in between is seen later
    stamp: StoreStamp = rows.stamp()
    if entry is not None and _holds(entry[4]):
        repository, fingerprint = entry[3], entry[4]
        if entry[2] == stamp:
            if _settled(files) and not _vouches(entry[6], rows.path):  # vouch from now on
                _write(path, (*entry[:6], files))
            return CachedIndex(RecallIndex.from_state(entry[5]), repository, path, True)
    else:
        repository, fingerprint = _derive_repository(real)
    state: IndexState
    if entry is not None and entry[2:4] == (stamp, repository) and _columns_hold(entry[5]):
        state = entry[5]  # only the key's sources moved: the index itself still holds
    else:
        stamp, cards = rows.repository_cards(repository)
        state = RecallIndex(cards, repository=repository).state()
    _write(path, (FORMAT, (rows.path, real), stamp, repository, fingerprint, state, files))
    return CachedIndex(RecallIndex.from_state(state), repository, path, False)
