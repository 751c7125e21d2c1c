from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from active_memory.errors import SnapshotError, StoreUnavailable
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.store.backend import RunIdentity, SnapshotRequest
from active_memory.store.migrations import MIGRATIONS, Migration, apply_pending
from active_memory.store.search_text import NOT_UPGRADED_NOTE
from active_memory.store.sqlite import SqliteStore
from factories import REPOSITORY, make_draft, tree_digest

pytestmark = pytest.mark.sqlite_only  # about SQLite's own file and schema

# Checksums of released migrations. Append a line when adding a migration; a released line
# never changes, so a test failure here means a released migration was edited.
RELEASED = {
    "m001_initial": "41959624207867afcfcc0b3ce38e82cbe6a00f6a3c1b3d1daf584cad127191d4",
    "m002_row_checksums": "6e4e761ba262eeb3de5beb20d99ac6b640eecd9883223ee83c217b97a6be5329",
    "m003_quarantine": "31f8cd2ee480fffbf0c2b9449351712967b9cf1e77f4b0b691010f3e4cea7d47",
    "m004_init_receipts": "c3525419de728b5d15b43fe9cba865b4170f8fbd0ca19c80959a0b318ebb2d6a",
    # Changed in place on the day it was added (no release has it): folded text, stale mark.
    "m005_lesson_search": "20320e3e694a77d1a8d9d43a8004bab0b08ea529ae3a6f5ce43871084642215b",
}


def test_migrations_are_named_in_order_without_gaps() -> None:
    for position, migration in enumerate(MIGRATIONS, 1):
        assert re.fullmatch(rf"m{position:03d}_[a-z0-9_]+", migration.name), migration.name
    assert len({m.name for m in MIGRATIONS}) == len(MIGRATIONS)


def test_released_migrations_are_never_edited() -> None:
    current = {m.name: m.checksum for m in MIGRATIONS}
    assert list(current)[: len(RELEASED)] == list(RELEASED)
    for name, checksum in RELEASED.items():
        assert current[name] == checksum, f"{name} was edited after release; add a new migration"


def test_store_records_each_applied_migration_with_its_checksum(store: SqliteStore) -> None:
    with sqlite3.connect(store.path) as raw:
        rows = raw.execute("SELECT seq, name, checksum FROM schema_migrations ORDER BY seq")
        recorded = [(seq, name, checksum) for seq, name, checksum in rows]
    expected = [(i, m.name, m.checksum) for i, m in enumerate(MIGRATIONS, 1)]
    assert recorded == expected


def test_only_pending_migrations_run_and_in_order(tmp_path: Path) -> None:
    extra = Migration("m999_extra", ("CREATE TABLE extra (x INTEGER)",))
    conn = sqlite3.connect(tmp_path / "db.sqlite3", isolation_level=None)
    assert apply_pending(conn) == len(MIGRATIONS)
    assert apply_pending(conn, (*MIGRATIONS, extra)) == 1
    assert apply_pending(conn, (*MIGRATIONS, extra)) == 0
    names = [row[0] for row in conn.execute("SELECT name FROM schema_migrations ORDER BY seq")]
    assert names == [*(m.name for m in MIGRATIONS), "m999_extra"]
    conn.close()


def test_a_store_with_an_edited_migration_is_refused_untouched(store_path: Path) -> None:
    SqliteStore(store_path).close()
    with sqlite3.connect(store_path) as raw:
        raw.execute("UPDATE schema_migrations SET checksum = 'edited' WHERE name = 'm001_initial'")
    raw.close()
    before = tree_digest(store_path.parent)
    with pytest.raises(StoreUnavailable, match="never be edited"):
        SqliteStore(store_path)
    assert tree_digest(store_path.parent) == before


def test_a_store_from_a_newer_version_is_refused(store_path: Path) -> None:
    SqliteStore(store_path).close()
    with sqlite3.connect(store_path) as raw:
        raw.execute(
            "INSERT INTO schema_migrations (name, checksum, applied_at) "
            "VALUES ('m999_future', 'abc', 'later')"
        )
    raw.close()
    with pytest.raises(StoreUnavailable, match="newer active-memory"):
        SqliteStore(store_path)


def test_read_only_open_refuses_a_store_that_needs_migration(tmp_path: Path) -> None:
    path = tmp_path / "lessons.sqlite3"
    path.touch(mode=0o600)
    with pytest.raises(StoreUnavailable, match="open it once for writing"):
        SqliteStore(path, read_only=True)


def _as_released_before_checksums(path: Path) -> None:
    """Turn a current store back into one written by the m001-only release."""
    with sqlite3.connect(path) as raw:
        _drop_lesson_search(raw)
        raw.execute("ALTER TABLE records DROP COLUMN checksum")
        raw.execute("DROP TABLE quarantine")
        raw.execute("DROP TABLE init_receipts")
        raw.execute("DELETE FROM schema_migrations WHERE name <> 'm001_initial'")
    raw.close()


def test_upgrading_gives_valid_rows_checksums_and_leaves_damaged_ones_refused(
    store_path: Path,
) -> None:
    ids = [new_lesson_id(), new_lesson_id()]
    with SqliteStore(store_path) as store:
        store.publish(
            Publication(
                run_id="run-1",
                mutations=tuple(
                    Mutation(op="upsert", id=i, expected_revision=0, draft=make_draft())
                    for i in ids
                ),
            )
        )
    _as_released_before_checksums(store_path)
    with sqlite3.connect(store_path) as raw:  # damage that the old release would also refuse
        raw.execute("UPDATE records SET body = replace(body, '\"title\":\"', '\"title\":\"\t')"
                    " WHERE id = ?", (ids[1],))  # fmt: skip
    raw.close()
    request = SnapshotRequest(RunIdentity("run-2", repository=REPOSITORY))
    with SqliteStore(store_path) as upgraded:
        with sqlite3.connect(store_path) as raw:
            sums = dict(raw.execute("SELECT id, checksum FROM records").fetchall())
        raw.close()
        assert sums[ids[0]] is not None
        assert sums[ids[1]] is None
        with pytest.raises(SnapshotError, match=f"{ids[1]}.*no checksum"):
            upgraded.snapshot(request)
        assert [p for p in upgraded.check().problems if ids[1] in p]
        upgraded.publish(
            Publication(
                run_id="run-3",
                mutations=(Mutation(op="retire", id=ids[1], expected_revision=1),),
            )
        )
        assert [lesson.id for lesson in upgraded.snapshot(request).lessons] == [ids[0]]


def _as_released_before_init_receipts(path: Path) -> None:
    """Turn a current store back into one written by the release before m004 (m001-m003)."""
    with sqlite3.connect(path) as raw:
        _drop_lesson_search(raw)
        raw.execute("DROP TABLE init_receipts")
        raw.execute("DELETE FROM schema_migrations WHERE name = 'm004_init_receipts'")
    raw.close()


def _drop_lesson_search(raw: sqlite3.Connection) -> None:
    """What m005_lesson_search added, dropped (the store as the release before it wrote it)."""
    for name in ("records_live_repository", "records_live_revision", "records_retired"):
        raw.execute(f"DROP INDEX {name}")
    raw.execute("DROP TABLE IF EXISTS lesson_text")
    raw.execute("DROP TABLE lesson_text_rows")
    raw.execute("DROP TABLE lesson_text_stale")
    for trigger in ("scope_counts_insert", "scope_counts_update", "scope_counts_delete"):
        raw.execute(f"DROP TRIGGER {trigger}")
    raw.execute("DROP TABLE scope_counts")
    raw.execute("DELETE FROM schema_migrations WHERE name = 'm005_lesson_search'")


def test_a_store_before_a_read_optional_migration_still_serves_readers(store_path: Path) -> None:
    from active_memory.store.rows import StoreRows

    lesson_id = new_lesson_id()
    with SqliteStore(store_path) as store:
        store.publish(
            Publication(
                run_id="run-1",
                mutations=(
                    Mutation(op="upsert", id=lesson_id, expected_revision=0, draft=make_draft()),
                ),
            )
        )
    _as_released_before_init_receipts(store_path)
    # The hooks' stdlib reader and every read-only open read it as it is: the upgrade only
    # adds memory init's receipt table, which no reader uses.
    with StoreRows(store_path) as rows:
        assert [card.id for card in rows.repository_cards(REPOSITORY)[1]] == [lesson_id]
    request = SnapshotRequest(RunIdentity("run-2", repository=REPOSITORY))
    with SqliteStore(store_path, read_only=True) as reader:
        assert [lesson.id for lesson in reader.snapshot(request).lessons] == [lesson_id]
        # The browser's page: counted and searched without the tables m005 adds, and says so.
        sliced = reader.lesson_page(query="SCHEMA check")
        assert [x.id for x in sliced.lessons] == [lesson_id]
        assert (sliced.repositories, sliced.note) == ({REPOSITORY: 1}, NOT_UPGRADED_NOTE)
        # Folded as the index folds, each word the start of a word ("chema" is inside one).
        assert reader.lesson_page(query="schéma").matching == 1
        assert reader.lesson_page(query="chema").matching == 0
    with sqlite3.connect(store_path) as raw:
        assert raw.execute("SELECT count(*) FROM schema_migrations").fetchone() == (3,)
    raw.close()
    with SqliteStore(store_path):  # a writer upgrades it
        pass
    with sqlite3.connect(store_path) as raw:
        names = [row[0] for row in raw.execute("SELECT name FROM schema_migrations ORDER BY seq")]
    raw.close()
    assert names[-2:] == ["m004_init_receipts", "m005_lesson_search"]


def test_a_store_missing_a_migration_readers_need_is_still_refused_read_only(
    store_path: Path,
) -> None:
    with SqliteStore(store_path):
        pass
    _as_released_before_checksums(store_path)
    with pytest.raises(StoreUnavailable, match="needs a schema upgrade"):
        SqliteStore(store_path, read_only=True).__enter__()
