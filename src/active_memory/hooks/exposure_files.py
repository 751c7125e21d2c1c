"""Exposure ledgers on disk: one small private file per conversation, beside the lesson store.

Both answerers of a plain harness user read and append the same file: the resident broker of
``active-memory serve`` (:mod:`active_memory.hooks.standalone`) and, when no broker answers, the
store fallback of the hook helper (:mod:`active_memory.hooks.fallback`). So a card one of them
handed over is not handed over again by the other, and a restarted ``serve`` does not deliver
again what it delivered before. :class:`ExposureFiles` is the store an
:class:`~active_memory.recall.exposure.ExposureLedger` is given.

The file of one conversation in one workspace is ``exposure/<digest>.keys`` in the store's folder
(:func:`exposure_file`), one ``lesson-<ULID>@<revision>`` line per delivery. Several processes
append at once, so each record is one ``write`` on a descriptor opened ``O_APPEND`` (the system
puts it whole at the end), and a reader takes only complete lines that are well-formed keys: a
line torn by a crash, or anything else in the file, is ignored. A record that follows a torn
line starts on a new line, so the tear cannot glue two keys together.

Bounded: a file is appended to only while it is under :data:`MAX_LEDGER_BYTES`; one larger than
:data:`MAX_READ_BYTES` (the cap and the records a few concurrent writers may add past it) is not
this code's and is not read, and a read keeps at most :data:`MAX_LEDGER_KEYS` keys. Pruned: at
most once a day, when a delivery is recorded, exposure and cache files not written for
:data:`EXPOSURE_MAX_AGE_S` (7 days) are removed, looking at no more than :data:`PRUNE_LIMIT`.

Trusted only when private: the store may sit in a folder others can write, where another user
could make ``exposure`` first and plant ledgers that suppress cards. Nothing in the folder is
read, written or pruned unless it is a real directory (not a symlink) of this user's alone, mode
0700, and a ledger counts only when it is this user's regular file, mode 0600, opened without
following a symlink (:mod:`active_memory.hooks.private_dir`). Only the ``exposure`` folder itself
is created here, never the store's folder: with no store there is nothing to remember.

Standard library and the hook package's own stdlib-only modules: the fallback imports this on
every tool call, so it loads neither pydantic nor ``re``, ``pathlib``, asyncio or threading.
"""

from __future__ import annotations

import os
import time

from active_memory.hooks.private_dir import (
    append_private,
    digest_name,
    is_private_dir,
    read_private,
)
from active_memory.type_checking import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "EXPOSURE_MAX_AGE_S",
    "MAX_LEDGER_BYTES",
    "MAX_LEDGER_KEYS",
    "MAX_READ_BYTES",
    "PRUNE_EVERY_S",
    "PRUNE_LIMIT",
    "ExposureFiles",
    "append_keys",
    "exposure_file",
    "is_exposure_key",
    "prune_exposures",
    "read_keys",
]

EXPOSURE_MAX_AGE_S = 7 * 24 * 3600
PRUNE_EVERY_S = 24 * 3600
PRUNE_LIMIT = 4096
# A key is at most 46 bytes with its newline: 4,096 of them fit well under the byte cap.
MAX_LEDGER_KEYS = 4096
MAX_LEDGER_BYTES = 256 * 1024
MAX_READ_BYTES = MAX_LEDGER_BYTES + 64 * 1024
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_PRUNED_MARKER = ".pruned"
# Exposure ledgers, cached indexes (rebuilt when missing) and what a crash left of their writes.
_PRUNED_SUFFIXES = (".keys", ".index", ".tmp")
# ``lesson-<ULID>`` (active_memory.models.ids, which needs ``re``; a test keeps them in step).
_ID_PREFIX = "lesson-"
_ID_CHARS = frozenset("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
_ID_LENGTH = len(_ID_PREFIX) + 26
_MAX_REVISION_DIGITS = 12


def exposure_file(store: str | os.PathLike[str], workspace: str, conversation: str) -> str:
    """Where exposures of one conversation in one workspace are kept."""
    folder = os.path.join(os.path.dirname(os.path.abspath(store)), "exposure")
    return os.path.join(
        folder, digest_name(f"{os.path.realpath(workspace)}\0{conversation}") + ".keys"
    )


def is_exposure_key(key: str) -> bool:
    """Whether ``key`` is ``lesson-<ULID>@<revision>``, as a ledger line must be."""
    lesson, at, revision = key.partition("@")
    return (
        bool(at)
        and len(lesson) == _ID_LENGTH
        and lesson.startswith(_ID_PREFIX)
        and _ID_CHARS.issuperset(lesson[len(_ID_PREFIX) :])
        and 0 < len(revision) <= _MAX_REVISION_DIGITS
        and revision.isascii()
        and revision.isdigit()
        and revision[0] != "0"
    )


def prune_exposures(
    directory: str | os.PathLike[str],
    *,
    keep: str | os.PathLike[str] | None = None,
    now: float | None = None,
    max_age_s: float = EXPOSURE_MAX_AGE_S,
    every_s: float = PRUNE_EVERY_S,
    limit: int = PRUNE_LIMIT,
) -> int:
    """Remove exposure and cache files older than ``max_age_s`` if no prune ran in ``every_s``.

    Bounded: looks at no more than ``limit`` entries. Returns how many files were removed.
    Nothing is done in a folder that is not a real directory of this user's alone (0700).
    """
    if not is_private_dir(directory):
        return 0
    now = time.time() if now is None else now
    marker = os.path.join(directory, _PRUNED_MARKER)
    kept = None if keep is None else os.fspath(keep)
    try:
        if now - os.stat(marker).st_mtime < every_s:
            return 0
    except FileNotFoundError:
        pass
    except OSError:
        return 0
    removed = 0
    try:
        with os.scandir(directory) as entries:
            for count, entry in enumerate(entries):
                if count >= limit:
                    break
                if not entry.name.endswith(_PRUNED_SUFFIXES) or entry.path == kept:
                    continue
                try:
                    if now - entry.stat(follow_symlinks=False).st_mtime > max_age_s:
                        os.unlink(entry.path)
                        removed += 1
                except OSError:
                    continue  # another process pruned it first, or it is not ours
        os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | _NOFOLLOW, 0o600))
        os.utime(marker, (now, now))
    except OSError:
        pass
    return removed


def read_keys(path: str) -> list[str]:
    """The keys the ledger at ``path`` records, in order, each once, at most
    :data:`MAX_LEDGER_KEYS`; none when it, or its folder, is not this user's alone (another user
    could otherwise suppress cards), a symlink, or too large. Torn and foreign lines are skipped.
    """
    if not is_private_dir(os.path.dirname(path)):
        return []
    data = read_private(path, MAX_READ_BYTES)
    if not data:
        return []
    keys: dict[str, None] = {}
    for line in data.split(b"\n")[:-1]:  # what follows the last newline is a torn write
        try:
            key = line.decode("ascii")
        except ValueError:
            continue
        if is_exposure_key(key):
            keys[key] = None
            if len(keys) >= MAX_LEDGER_KEYS:
                break
    return list(keys)


def _own_folder(folder: str) -> bool:
    """Make ``folder`` (0700) if it is missing, in a parent that exists; True when it is a real
    directory of this user's alone."""
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return False  # no store folder (no store: nothing to remember), or not writable
    else:
        try:
            os.chmod(folder, 0o700)  # mkdir honours the umask
        except OSError:
            return False
    return is_private_dir(folder)


def append_keys(path: str, keys: Iterable[str]) -> bool:
    """Append ``keys`` (the well-formed ones) to the ledger at ``path`` in one write; False when
    nothing was written: the folder or the file is not this user's alone, the file reached
    :data:`MAX_LEDGER_BYTES`, or the write failed."""
    lines = "".join(f"{key}\n" for key in keys if is_exposure_key(key)).encode("ascii")
    folder = os.path.dirname(path)
    if not lines or not _own_folder(folder):
        return False
    prune_exposures(folder, keep=path)
    return append_private(path, lines, MAX_LEDGER_BYTES)


class ExposureFiles:
    """The on-disk exposures of one store and workspace: ``load(conversation)`` and
    ``record(conversation, keys)``, the store an ``ExposureLedger`` is given. Never raises.

    ``folder`` keeps them in that folder instead, one file per conversation alone: a run's own
    ledger folder (:mod:`active_memory.hooks.run_ledger`), already scoped to one workspace."""

    __slots__ = ("folder", "store", "workspace")

    def __init__(
        self,
        store: str | os.PathLike[str],
        workspace: str | os.PathLike[str],
        *,
        folder: str | os.PathLike[str] | None = None,
    ) -> None:
        self.store = os.fspath(store)
        self.workspace = os.fspath(workspace)
        self.folder = None if folder is None else os.fspath(folder)

    @classmethod
    def in_folder(cls, folder: str | os.PathLike[str]) -> ExposureFiles:
        return cls("", "", folder=folder)

    def __repr__(self) -> str:
        if self.folder is not None:
            return f"ExposureFiles(folder={self.folder!r})"
        return f"ExposureFiles({self.store!r}, {self.workspace!r})"

    def path(self, conversation: str) -> str:
        if self.folder is not None:
            return os.path.join(self.folder, digest_name(conversation) + ".keys")
        return exposure_file(self.store, self.workspace, conversation)

    def load(self, conversation: str) -> list[str]:
        try:
            return read_keys(self.path(conversation))
        except (OSError, ValueError):
            return []

    def record(self, conversation: str, keys: Iterable[str]) -> None:
        try:
            append_keys(self.path(conversation), keys)
        except (OSError, ValueError):
            return  # not kept on disk; the ledger in memory still has them
