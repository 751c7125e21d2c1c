"""Opening a store: private creation, refusals, and bad files left exactly as they were."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from active_memory.errors import SnapshotError, StoreError, StoreUnavailable
from active_memory.lessons import Mutation, Publication, new_lesson_id
from active_memory.store.backend import RunIdentity, SnapshotRequest
from active_memory.store.sqlite import SqliteStore
from factories import REPOSITORY, make_draft, tree_digest

REQUEST = SnapshotRequest(RunIdentity("run-1", repository=REPOSITORY))


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _seed(path: Path, count: int = 3) -> list[str]:
    ids = sorted(new_lesson_id() for _ in range(count))
    with SqliteStore(path) as store:
        mutations = [
            Mutation("upsert", i, 0, make_draft(files=(f"src/m{n}.py",))) for n, i in enumerate(ids)
        ]
        store.publish(Publication("run-1", tuple(mutations)))
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


def test_read_only_never_creates_a_store(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailable, match="does not exist yet"):
        SqliteStore(tmp_path / "missing" / "lessons.sqlite3", read_only=True)
    assert list(tmp_path.iterdir()) == []


def test_read_only_store_reads_but_refuses_writes(store_path: Path) -> None:
    ids = _seed(store_path)
    with SqliteStore(store_path, read_only=True) as reader:
        assert [lesson.id for lesson in reader.snapshot(REQUEST).lessons] == ids
        with pytest.raises(StoreError, match="read-only"):
            reader.publish(Publication("run-2", (Mutation("retire", ids[0], 1),)))


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
