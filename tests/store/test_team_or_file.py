"""``team_or_file``: a reader's team store as given, or its store file opened for one block."""

from __future__ import annotations

from pathlib import Path

from active_memory.store.sqlite import SqliteStore
from active_memory.store.team_or_file import team_or_file


def test_a_team_store_is_yielded_as_it_is_and_left_open(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "team.sqlite3") as team:
        with team_or_file(team, tmp_path / "unused.sqlite3") as store:
            assert store is team
        assert team.generation() == 0  # still open: its caller closes it
    assert not (tmp_path / "unused.sqlite3").exists()


def test_without_a_team_store_the_file_is_opened_read_only_for_the_block(tmp_path: Path) -> None:
    path = tmp_path / "lessons.sqlite3"
    SqliteStore(path).close()
    with team_or_file(None, path) as store:
        assert isinstance(store, SqliteStore)
        assert store.path == path
        assert store.read_only
        assert store.generation() == 0


def test_read_only_false_opens_the_file_writable(tmp_path: Path) -> None:
    path = tmp_path / "lessons.sqlite3"
    SqliteStore(path).close()
    with team_or_file(None, path, read_only=False) as store:
        assert isinstance(store, SqliteStore)
        assert not store.read_only
