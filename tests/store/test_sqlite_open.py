"""Opening a store: private creation, refusals, and bad files left exactly as they were."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import stat
import tempfile
from pathlib import Path

import pytest

from active_memory.errors import SnapshotError, StoreError, StoreUnavailable
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.store.backend import RunIdentity, SnapshotRequest
from active_memory.store.sqlite import SqliteStore
from factories import REPOSITORY, make_draft, tree_digest

pytestmark = pytest.mark.sqlite_only  # about SQLite's own file and schema

REQUEST = SnapshotRequest(RunIdentity("run-1", repository=REPOSITORY))


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _seed(path: Path, count: int = 3) -> list[str]:
    ids = sorted(new_lesson_id() for _ in range(count))
    with SqliteStore(path) as store:
        mutations = [
            Mutation(
                op="upsert", id=i, expected_revision=0, draft=make_draft(files=(f"src/m{n}.py",))
            )
            for n, i in enumerate(ids)
        ]
        store.publish(Publication(run_id="run-1", mutations=tuple(mutations)))
    return ids


def test_new_store_is_a_private_file_in_private_directories(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "lessons.sqlite3"
    SqliteStore(path).close()
    assert _mode(path) == 0o600
    assert _mode(path.parent) == 0o700
    assert _mode(path.parent.parent) == 0o700


def test_store_uses_wal_and_durable_safe_pragmas(store: SqliteStore) -> None:
    conn = store._conn  # the pragmas are per connection, so inspect the store's own
    assert conn is not None
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert conn.execute("PRAGMA trusted_schema").fetchone()[0] == 0
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA secure_delete").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000


def test_an_existing_empty_file_becomes_a_store(tmp_path: Path) -> None:
    path = tmp_path / "lessons.sqlite3"
    path.touch(mode=0o600)
    with SqliteStore(path) as store:
        assert store.generation() == 0


def test_default_path_follows_the_namespace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MYHOST_STATE_DIR", str(tmp_path / "myhost"))
    with SqliteStore(namespace="myhost") as store:
        assert store.path == tmp_path / "myhost" / "active-memory" / "lessons.sqlite3"
    assert store.path.is_file()


def test_group_readable_store_is_refused_with_the_fix(store_path: Path) -> None:
    SqliteStore(store_path).close()
    store_path.chmod(0o644)
    with pytest.raises(StoreUnavailable, match="chmod 600"):
        SqliteStore(store_path)


def test_symlinked_store_is_refused(tmp_path: Path, store_path: Path) -> None:
    SqliteStore(store_path).close()
    link = tmp_path / "link.sqlite3"
    link.symlink_to(store_path)
    with pytest.raises(StoreUnavailable, match="symbolic link"):
        SqliteStore(link)


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")
def test_store_owned_by_someone_else_is_refused(store_path: Path) -> None:
    SqliteStore(store_path).close()
    os.chown(store_path, 4242, -1)
    with pytest.raises(StoreUnavailable, match="owned by uid 4242"):
        SqliteStore(store_path, read_only=True)


def test_special_file_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "lessons.sqlite3"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(StoreUnavailable, match="not a regular file"):
        SqliteStore(fifo)


def test_non_sqlite_file_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "lessons.sqlite3"
    path.write_bytes(b"not a database, just some notes\n" * 50)
    path.chmod(0o600)
    before = tree_digest(tmp_path)
    for read_only in (False, True):
        with pytest.raises(StoreUnavailable, match="not an SQLite database"):
            SqliteStore(path, read_only=read_only)
    assert tree_digest(tmp_path) == before  # no -wal or -shm appeared either


def test_sqlite_file_with_a_corrupt_schema_page_is_refused_untouched(store_path: Path) -> None:
    _seed(store_path)
    data = bytearray(store_path.read_bytes())
    data[100:4096] = b"\xa5" * (4096 - 100)  # page 1 after the header: the schema b-tree
    store_path.write_bytes(bytes(data))
    before = tree_digest(store_path.parent)
    with pytest.raises(StoreUnavailable, match="not a readable SQLite database"):
        SqliteStore(store_path)
    assert tree_digest(store_path.parent) == before


def test_truncated_sqlite_file_is_refused_untouched(store_path: Path) -> None:
    _seed(store_path)
    store_path.write_bytes(store_path.read_bytes()[:5000])
    before = tree_digest(store_path.parent)
    with pytest.raises(StoreUnavailable, match="corrupt layout"):
        SqliteStore(store_path)
    assert tree_digest(store_path.parent) == before


def test_foreign_sqlite_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite3"
    with sqlite3.connect(path) as raw:
        raw.execute("CREATE TABLE notes (body TEXT)")
    raw.close()
    path.chmod(0o600)
    before = tree_digest(tmp_path)
    with pytest.raises(StoreUnavailable, match="not an active-memory lesson store"):
        SqliteStore(path)
    assert tree_digest(tmp_path) == before


def test_store_path_that_is_a_directory_is_refused_untouched(tmp_path: Path) -> None:
    folder = tmp_path / "lessons.sqlite3"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    before = tree_digest(tmp_path)
    with pytest.raises(StoreUnavailable, match="is a directory"):
        SqliteStore(folder)
    assert tree_digest(tmp_path) == before


def test_unwritable_directory_is_refused_untouched(tmp_path: Path) -> None:
    # Tests run as root, which ignores permission bits, so a chmod 0500 directory would still
    # be writable. A parent that is a regular file cannot hold a store for anyone, root
    # included: the same "cannot create the store here" failure, honestly reproduced.
    blocker = tmp_path / "state"
    blocker.write_text("a file where the state directory should be")
    before = tree_digest(tmp_path)
    with pytest.raises(StoreUnavailable, match="regular file"):
        SqliteStore(blocker / "active-memory" / "lessons.sqlite3")
    assert tree_digest(tmp_path) == before


def _open_in_a_forked_child(path: Path, uid: int | None) -> list[str]:
    """What opening ``path`` (for writing, then read-only) says, as ``uid`` when given."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop privileges for good, report, and never return into pytest
        try:
            os.close(read)
            if uid is not None:
                os.setgid(uid)
                os.setuid(uid)
            said = []
            for read_only in (False, True):
                try:
                    SqliteStore(path, read_only=read_only).close()
                    said.append("opened")
                except StoreUnavailable as error:
                    said.append(str(error))
            os.write(write, json.dumps(said).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    said: list[str] = json.loads(data)
    return said


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs POSIX permissions and fork")
def test_a_directory_this_user_cannot_write_is_named_not_called_a_damaged_store() -> None:
    # A real permission problem: the store's directory is read-only for the user opening it.
    # Root ignores permission bits, so as root the open runs in a forked child that has become
    # an unprivileged uid (which owns the store, as the file checks require); otherwise the
    # current user simply opens its own store in its own read-only directory.
    uid = 65534 if os.geteuid() == 0 else None
    folder = Path(tempfile.mkdtemp(prefix="am-readonly-"))  # in /tmp, reachable by that uid
    try:
        path = folder / "lessons.sqlite3"
        _seed(path, count=1)
        if uid is not None:
            for item in (folder, path):
                os.chown(item, uid, uid)
        folder.chmod(0o500)
        before = hashlib.sha256(path.read_bytes()).hexdigest()
        for message in _open_in_a_forked_child(path, uid):
            assert f"its directory {str(folder)!r} is not writable by this user" in message
            assert "make the directory writable" in message
            assert "restore it from a backup" not in message
        assert hashlib.sha256(path.read_bytes()).hexdigest() == before
        assert sorted(p.name for p in folder.iterdir()) == ["lessons.sqlite3"]
    finally:
        folder.chmod(0o700)
        shutil.rmtree(folder)


def test_a_companion_sqlite_cannot_write_is_named_not_called_a_damaged_store(
    store_path: Path,
) -> None:
    # SQLite must open <store>-wal beside a WAL database; a directory there makes it fail the
    # way a damaged file would ("unable to open database file"), for root as for anyone.
    _seed(store_path, count=1)
    companion = store_path.with_name(store_path.name + "-wal")
    companion.mkdir()
    before = tree_digest(store_path.parent)
    for read_only in (False, True):
        with pytest.raises(StoreUnavailable) as caught:
            SqliteStore(store_path, read_only=read_only)
        assert caught.value.problem.startswith(
            f"its companion {str(companion)!r} is not a regular file"
        )
    assert tree_digest(store_path.parent) == before


def test_read_only_never_creates_a_store(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailable, match="does not exist yet"):
        SqliteStore(tmp_path / "missing" / "lessons.sqlite3", read_only=True)
    assert list(tmp_path.iterdir()) == []


def test_read_only_store_reads_but_refuses_writes(store_path: Path) -> None:
    ids = _seed(store_path)
    with SqliteStore(store_path, read_only=True) as reader:
        assert [lesson.id for lesson in reader.snapshot(REQUEST).lessons] == ids
        with pytest.raises(StoreError, match="read-only"):
            reader.publish(
                Publication(
                    run_id="run-2",
                    mutations=(Mutation(op="retire", id=ids[0], expected_revision=1),),
                )
            )


def test_closed_store_raises_a_store_error(store_path: Path) -> None:
    store = SqliteStore(store_path)
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.generation()


def test_corruption_found_while_reading_is_a_snapshot_error_not_an_empty_set(
    store_path: Path,
) -> None:
    _seed(store_path, count=40)
    with sqlite3.connect(store_path) as raw:
        (root,) = raw.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'records'"
        ).fetchone()
        (page_size,) = raw.execute("PRAGMA page_size").fetchone()
    raw.close()
    data = bytearray(store_path.read_bytes())
    start = (root - 1) * page_size
    data[start : start + page_size] = b"\xa5" * page_size  # the lessons table's root page
    store_path.write_bytes(bytes(data))
    with SqliteStore(store_path, read_only=True) as reader, pytest.raises(SnapshotError):
        reader.snapshot(REQUEST)
