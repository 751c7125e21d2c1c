"""``store backup``: an online copy written beside its destination, then renamed over it.

A backup killed half-way (SIGKILL, power loss) cannot clean up after itself, and its temporary
can be as large as the store. So every temporary is named for the process that writes it,
``.<destination>.backup-<pid>-<random>.tmp``, and a marker beside the store,
``.<store>.backup-<pid>-<random>``, records where it went. The next backup (in the store's
folder and the destination's) and ``store check`` remove the temporaries and markers whose
process is gone, with the temporary's ``-journal``, ``-wal`` and ``-shm`` (a copy killed
mid-write leaves a hot rollback journal beside it); a temporary of a process still running is
never touched.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import sqlite3
from pathlib import Path

from active_memory.bounded_input import decode_utf8, read_bytes
from active_memory.errors import InputRefused, StoreError
from active_memory.store.files import create_private_file, fsync_directory

__all__ = ["backup_to", "sweep_stale_backups"]

_TEMPORARY = re.compile(
    r"^\..+\.backup-(?P<pid>\d{1,10})-(?P<tag>[0-9a-f]{16})\.tmp(?:-journal|-wal|-shm)?$"
)
_COMPANIONS = ("-journal", "-wal", "-shm")
_MARKER_BYTES = 8192


def _marker_pattern(store: Path) -> re.Pattern[str]:
    return re.compile(rf"^\.{re.escape(store.name)}\.backup-(?P<pid>\d{{1,10}})-[0-9a-f]{{16}}$")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # another user's process, or one we cannot ask about: leave its files
    return True


def _remove_regular(path: Path) -> bool:
    """Unlink ``path`` when it is a regular file (never a directory or through a symlink)."""
    try:
        if not path.is_symlink() and path.is_file():
            path.unlink()
            return True
    except OSError:
        pass
    return False


def _remove_with_companions(temporary: Path) -> list[Path]:
    """Unlink a temporary and the journal files SQLite keeps beside it; those removed."""
    paths = [temporary, *(temporary.with_name(temporary.name + c) for c in _COMPANIONS)]
    return [path for path in paths if _remove_regular(path)]


def _stale_temporaries(folder: Path) -> list[Path]:
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    stale = []
    for name in names:
        match = _TEMPORARY.match(name)
        if match and not _alive(int(match["pid"])):
            stale.append(folder / name)
    return stale


def sweep_stale_backups(store: Path, *folders: Path) -> list[Path]:
    """Remove what killed backups of ``store`` left behind; returns the temporaries removed.

    Markers beside the store lead to temporaries anywhere; ``folders`` (a destination's
    folder) are also searched for temporaries of dead processes directly.
    """
    removed: list[Path] = []
    pattern = _marker_pattern(store)
    try:
        names = os.listdir(store.parent)
    except OSError:
        names = []
    for name in names:
        match = pattern.match(name)
        if match is None or _alive(int(match["pid"])):
            continue
        marker = store.parent / name
        try:
            text = decode_utf8(read_bytes(marker, what="", max_bytes=_MARKER_BYTES), what="")
            target = Path(text.rstrip("\n"))  # a temporary's name always ends in ".tmp"
        except InputRefused:
            target = None
        if target is not None and _TEMPORARY.match(target.name):
            removed += _remove_with_companions(target)
        _remove_regular(marker)
    for folder in {store.parent, *folders}:
        removed += [path for path in _stale_temporaries(folder) if _remove_regular(path)]
    return removed


def _new_temporary(store: Path, target: Path) -> tuple[Path, Path]:
    """A fresh, empty 0600 temporary beside ``target`` and its marker beside ``store``."""
    while True:
        tag = f"{os.getpid()}-{secrets.token_hex(8)}"
        marker = store.with_name(f".{store.name}.backup-{tag}")
        temporary = target.with_name(f".{target.name}.backup-{tag}.tmp")
        if not create_private_file(marker):
            continue
        try:
            with open(marker, "w", encoding="utf-8") as handle:
                handle.write(str(temporary))
            if create_private_file(temporary):
                return temporary, marker
        except BaseException:
            _remove_regular(marker)
            raise
        _remove_regular(marker)


def _copy(conn: sqlite3.Connection, temporary: Path) -> None:
    copy = sqlite3.connect(temporary, isolation_level=None)
    try:
        conn.backup(copy)
    finally:
        copy.close()
    with open(temporary, "rb+") as handle:
        os.fsync(handle.fileno())


def backup_to(conn: sqlite3.Connection, store: Path, target: Path) -> Path:
    """Copy the store behind ``conn`` to ``target`` (checked by the caller) atomically."""
    sweep_stale_backups(store, target.parent)
    try:
        temporary, marker = _new_temporary(store, target)
    except OSError as error:
        raise StoreError(
            f"cannot write a backup in {str(target.parent)!r} ({error.strerror})"
        ) from None
    try:
        _copy(conn, temporary)
        os.replace(temporary, target)
    except BaseException as error:
        _remove_with_companions(temporary)
        if isinstance(error, (sqlite3.Error, OSError)):
            raise StoreError(f"backup to {str(target)!r} failed ({error})") from error
        raise
    finally:
        with contextlib.suppress(OSError):
            marker.unlink()
    fsync_directory(target.parent)
    return target
