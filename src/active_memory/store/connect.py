"""Opening a store: file checks first, then SQLite, then schema checks, then migrations.

Order matters: nothing is created or written next to a path until it is known to be a
private regular file that is empty or carries a valid SQLite header, and nothing is written
into a database until it is known to be an active-memory store (or brand new). A file that
fails any check is left exactly as it was, and so is its folder: the empty ``-wal``/``-shm``
files SQLite made beside a store it then refused are removed again. A damaged schema (text that
is not UTF-8, which Python reports as a UnicodeDecodeError) or a meta table without its one row
is refused here, in one sentence, before any command reads from it.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from pathlib import Path

from active_memory.errors import StoreError, StoreUnavailable
from active_memory.store.files import (
    create_private_file,
    ensure_private_directory,
    inspect_store_file,
)
from active_memory.store.migrations import (
    Migration,
    MigrationMismatch,
    applied_migrations,
    apply_pending,
    pending_migrations,
)
from active_memory.store.paths import ZEROSHOT_IMPORT_HINT, check_store_location
from active_memory.store.rows import readable_schema
from active_memory.store.search_text import resync_fts_index
from active_memory.store.sql import SqliteConnection
from active_memory.store.unreadable import safe_message
from active_memory.store.zeroshot import is_zeroshot_store_file, looks_like_zeroshot_schema

__all__ = ["companions_absent", "live_connection", "open_connection", "release_companions"]

_ZEROSHOT_STORE = (
    "is a zeroshot CLI lesson store, which is incompatible and never opened as active-memory's "
    f"(it was left untouched); {ZEROSHOT_IMPORT_HINT}"
)


def open_connection(path: Path, *, read_only: bool, busy_timeout_ms: int) -> SqliteConnection:
    """A configured connection to a valid, migrated store at ``path`` (absolute)."""
    check_store_location(path)  # never the zeroshot CLI's own store, even before it exists
    info = inspect_store_file(path)
    if info is None:
        if read_only:
            raise StoreUnavailable(
                str(path), "does not exist yet; it is created by the first write to the store"
            )
        ensure_private_directory(path.parent)
        try:
            create_private_file(path)
        except OSError as error:
            raise StoreUnavailable(
                str(path), f"cannot be created ({error.strerror}); its directory must be writable"
            ) from None
        info = inspect_store_file(path)
        if info is None:
            raise StoreUnavailable(str(path), "disappeared while it was being created")
    elif info.st_size and is_zeroshot_store_file(path):
        raise StoreUnavailable(str(path), _ZEROSHOT_STORE)
    companions = _absent_companions(path)
    try:
        if info.st_size and len(companions) == 2:
            _precheck(path, read_only=read_only)
        conn = _connect(path, read_only=read_only, busy_timeout_ms=busy_timeout_ms)
        try:
            _same_file(path, info)
            _prepare(conn, path, read_only=read_only, busy_timeout_ms=busy_timeout_ms)
        except BaseException:
            conn.close()
            raise
    except StoreUnavailable:
        _remove_empty(companions)
        raise
    return conn


def live_connection(
    conn: SqliteConnection | None,
    path: Path,
    *,
    read_only: bool,
    write: bool,
    changing: str = "it",
) -> SqliteConnection:
    """``conn`` when it may serve the call; StoreError when its handle was closed, or when a
    ``write`` is asked of a handle opened read-only (the message says to open it without
    read_only to change ``changing``)."""
    if conn is None:
        raise StoreError(f"the lesson store {str(path)!r} is closed")
    if write and read_only:
        raise StoreError(
            f"the lesson store {str(path)!r} was opened read-only; "
            f"open it without read_only to change {changing}"
        )
    return conn


def _absent_companions(path: Path) -> list[Path]:
    return [
        companion
        for companion in (path.with_name(path.name + s) for s in ("-wal", "-shm"))
        if not os.path.lexists(companion)
    ]


def companions_absent(path: Path) -> bool:
    """Whether neither ``-wal`` nor ``-shm`` exists beside ``path`` (before an open)."""
    return len(_absent_companions(path)) == 2


def release_companions(path: Path) -> None:
    """Remove the ``-wal``/``-shm`` a read-only connection made, once it has closed.

    A read-only connection cannot remove them itself. A brief read-write connection closed as
    the last one does, under SQLite's own locks: with another connection still open, or a log
    that holds anything, SQLite leaves them (a log this process read is never written).
    """
    wal = path.with_name(path.name + "-wal")
    try:
        if os.lstat(wal).st_size != 0:
            return
        conn = sqlite3.connect(f"{path.as_uri()}?mode=rw", uri=True, isolation_level=None)
    except (OSError, sqlite3.Error):
        return
    try:
        conn.execute("PRAGMA trusted_schema = OFF")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except (sqlite3.Error, UnicodeDecodeError):
        pass
    finally:
        conn.close()


def _remove_empty(companions: list[Path]) -> None:
    """Remove the companions this open created, when they are still empty regular files."""
    for companion in companions:
        try:
            info = os.lstat(companion)
            if stat.S_ISREG(info.st_mode) and info.st_size == 0:
                os.unlink(companion)
        except OSError:
            continue


def _connect(path: Path, *, read_only: bool, busy_timeout_ms: int) -> SqliteConnection:
    mode = "ro" if read_only else "rw"  # never "rwc": creation happened above, privately
    try:
        conn = sqlite3.connect(
            f"{path.as_uri()}?mode={mode}",
            uri=True,
            isolation_level=None,  # transactions are explicit: BEGIN IMMEDIATE for writes
            timeout=busy_timeout_ms / 1000,
            check_same_thread=False,  # SqliteStore serialises use with its own lock
            factory=SqliteConnection,
        )
    except sqlite3.Error as error:
        access = _access_problem(path)
        raise StoreUnavailable(
            str(path), access or f"cannot be opened by SQLite ({error})"
        ) from None
    try:
        for pragma in (
            f"PRAGMA busy_timeout = {int(busy_timeout_ms)}",
            "PRAGMA trusted_schema = OFF",
            "PRAGMA foreign_keys = ON",
            "PRAGMA synchronous = FULL",
            # Freed content is zeroed, so a purged lesson's text does not linger in free pages.
            "PRAGMA secure_delete = ON",
        ):
            conn.execute(pragma)
    except (sqlite3.Error, UnicodeDecodeError) as error:
        conn.close()
        raise _unreadable(path, error) from None
    return conn


def _unreadable(path: Path, error: sqlite3.Error | UnicodeDecodeError) -> StoreUnavailable:
    # A healthy file in a directory this user cannot write fails the same way as a damaged
    # one ("unable to open database file", "attempt to write a readonly database"): say which,
    # because "restore it from a backup" is the wrong advice for a permission problem.
    access = _access_problem(path)
    if access is not None:
        return StoreUnavailable(str(path), access)
    return StoreUnavailable(
        str(path),
        f"is not a readable SQLite database ({safe_message(error)}); restore it from a backup "
        "or move it aside (it was left untouched)",
    )


def _user() -> str:
    uid = os.geteuid()
    try:
        import pwd  # Unix only; this branch runs only where geteuid exists

        return f"{pwd.getpwuid(uid).pw_name}, uid {uid}"
    except (ImportError, KeyError):
        return f"uid {uid}"


def _can(path: Path, mode: int) -> bool:
    # The effective ids, like the file checks and SQLite itself (os.access defaults to real ids).
    effective = os.access in os.supports_effective_ids
    return os.access(path, mode, effective_ids=effective)


def _access_problem(path: Path) -> str | None:
    """Why SQLite cannot use a store file that passed the file checks, when it is not the file.

    SQLite creates ``-wal`` and ``-shm`` files beside a WAL database, even to read it, so the
    directory must be writable and any existing companion must be a writable regular file.
    Only consulted after SQLite failed, so the happy path pays nothing.
    """
    if not hasattr(os, "geteuid"):
        return None
    directory = path.parent
    if not _can(directory, os.W_OK | os.X_OK):
        return (
            f"its directory {str(directory)!r} is not writable by this user ({_user()}); SQLite "
            "creates its -wal and -shm files there even to read, so make the directory "
            "writable for this user or use a store in a directory this user owns"
        )
    for suffix in ("-wal", "-shm"):
        companion = path.with_name(path.name + suffix)
        try:
            info = os.lstat(companion)
        except FileNotFoundError:
            continue
        except OSError as error:
            return f"its companion {str(companion)!r} cannot be inspected ({error.strerror})"
        if not stat.S_ISREG(info.st_mode):
            return (
                f"its companion {str(companion)!r} is not a regular file, so SQLite cannot "
                "write its journal there; move that aside (the store itself was left untouched)"
            )
        if not _can(companion, os.R_OK | os.W_OK):
            return (
                f"its companion {str(companion)!r} is not writable by this user ({_user()}); "
                "make it writable for this user (the store itself was left untouched)"
            )
    return None


def _same_file(path: Path, info: os.stat_result) -> None:
    # Narrows the window between the checks and SQLite's own open: a file swapped in between
    # (e.g. for a symlink) is refused rather than trusted.
    try:
        now = os.lstat(path)
    except OSError as error:
        raise StoreUnavailable(str(path), f"changed while opening ({error.strerror})") from None
    if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
        raise StoreUnavailable(str(path), "was replaced while opening; try again")


def _switch_to_wal(conn: sqlite3.Connection, busy_timeout_ms: int) -> str:
    """The journal mode after asking for WAL, waiting out other processes doing the same.

    Switching a fresh database to WAL upgrades a shared lock to an exclusive one; when two
    processes do it at once SQLite answers SQLITE_BUSY at once instead of calling the busy
    handler (it would deadlock), so the wait is done here, bounded by the same busy timeout.
    """
    deadline = time.monotonic() + busy_timeout_ms / 1000
    while True:
        try:
            mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()
            if mode == "wal":
                return mode
            return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower()
        except sqlite3.OperationalError as error:
            busy = getattr(error, "sqlite_errorname", "").startswith(
                ("SQLITE_BUSY", "SQLITE_LOCKED")
            )
            if not busy or time.monotonic() >= deadline:
                raise
            time.sleep(0.005)


def _inspect(conn: sqlite3.Connection, path: Path, *, read_only: bool) -> tuple[Migration, ...]:
    """Every check that only reads; returns the pending migrations (refused when read-only)."""
    try:
        names = {str(row[0]) for row in conn.execute("SELECT name FROM sqlite_master")}
        applied = applied_migrations(conn) if names else []
    except (sqlite3.DatabaseError, UnicodeDecodeError) as error:
        raise _unreadable(path, error) from None
    if looks_like_zeroshot_schema(names):
        raise StoreUnavailable(str(path), _ZEROSHOT_STORE)
    if names and "schema_migrations" not in names:
        raise StoreUnavailable(
            str(path), "is an SQLite database but not an active-memory lesson store"
        )
    try:
        pending = pending_migrations(applied)
    except MigrationMismatch as error:
        raise StoreUnavailable(str(path), str(error)) from None
    # A reader does without the read-optional migrations (rows.READ_OPTIONAL_MIGRATIONS): an
    # upgrade that only adds a writer's table never stops recall on a store not yet upgraded.
    readable = bool(applied) and readable_schema(name for name, _ in applied)
    if read_only and pending and not readable:
        raise StoreUnavailable(
            str(path),
            "is not initialised or needs a schema upgrade; open it once for writing "
            "(e.g. `active-memory store check`)",
        )
    if not pending or read_only:
        _check_meta(conn, path)
    return pending


def _precheck(path: Path, *, read_only: bool) -> None:
    """:func:`_inspect` through an ``immutable`` connection, which creates no ``-wal``/``-shm``
    beside the file: a store refused here leaves its folder as it was. Only used when no
    companion exists, so there is no write-ahead log the immutable reader would miss."""
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error:
        return  # the ordinary open below reports it
    try:
        conn.execute("PRAGMA trusted_schema = OFF")
        _inspect(conn, path, read_only=read_only)
    except (sqlite3.Error, UnicodeDecodeError):
        return
    finally:
        conn.close()


def _prepare(
    conn: sqlite3.Connection, path: Path, *, read_only: bool, busy_timeout_ms: int
) -> None:
    pending = _inspect(conn, path, read_only=read_only)
    if read_only:
        return
    try:
        mode = _switch_to_wal(conn, busy_timeout_ms)
        if mode != "wal":
            raise StoreUnavailable(
                str(path), f"cannot use write-ahead logging (journal mode stays {mode!r})"
            )
        if pending:
            apply_pending(conn)
        resync_fts_index(conn)  # after writes by an SQLite without FTS5
        _check_meta(conn, path)
    except MigrationMismatch as error:
        raise StoreUnavailable(str(path), str(error)) from None
    except (sqlite3.Error, UnicodeDecodeError) as error:
        access = _access_problem(path)
        problem = access or f"cannot be initialised ({safe_message(error)})"
        raise StoreUnavailable(str(path), problem) from None


def _check_meta(conn: sqlite3.Connection, path: Path) -> None:
    """The meta table holds exactly one row of integers: every read and write starts there."""
    try:
        rows = conn.execute(
            "SELECT typeof(generation), typeof(live_count), typeof(record_count), "
            "typeof(content_bytes) FROM meta LIMIT 2"
        ).fetchall()
    except (sqlite3.DatabaseError, UnicodeDecodeError) as error:
        raise _unreadable(path, error) from None
    if len(rows) != 1 or any(kind != "integer" for kind in rows[0]):
        what = "no row" if not rows else "more than one row" if len(rows) > 1 else "a damaged row"
        raise StoreUnavailable(
            str(path),
            f"is damaged: its meta table has {what} where it keeps one row of counters; "
            "restore it from a backup (it was left untouched)",
        )
