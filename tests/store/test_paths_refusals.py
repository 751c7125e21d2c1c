"""Store arguments active-memory refuses: URLs (no backend yet) and the zeroshot store."""

from __future__ import annotations

from pathlib import Path

import pytest

from active_memory.errors import ConfigError
from active_memory.store.paths import (
    check_store_location,
    is_zeroshot_store_path,
    zeroshot_store_path,
)

URLS = [
    "postgresql://user:hunter2@db.example.com:5432/lessons",
    "postgres://db/lessons",
    "https://memory.example.com/v1",
    "sqlite:///tmp/lessons.sqlite3",
    "file:///tmp/lessons.sqlite3",
    "s3://bucket/lessons.sqlite3",
    "Redis+TLS://cache",
]


@pytest.mark.parametrize("url", URLS)
def test_a_url_is_refused_naming_its_scheme_and_the_supported_form(url: str) -> None:
    with pytest.raises(ConfigError) as caught:
        check_store_location(url)
    message = str(caught.value)
    scheme = url.split("://")[0].lower()
    assert message.startswith(f"store: '{scheme}://…' looks like a URL")
    assert "path of an SQLite file" in message
    assert "hunter2" not in message
    assert "db.example.com" not in message


@pytest.mark.parametrize(
    "path",
    ["lessons.sqlite3", "./postgresql:/x", "/tmp/a://b", r"C:\Users\me\lessons.sqlite3", "C:/x"],
)
def test_paths_pass_through(path: str) -> None:
    assert check_store_location(path) == Path(path)


def test_the_zeroshot_store_is_refused_by_location_even_before_it_exists(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "ZEROSHOT_STATE_DIR": str(tmp_path / "zs")}
    for path in (
        tmp_path / ".local/state/zeroshot/active-memory/lessons.sqlite3",
        tmp_path / "zs/active-memory/lessons.sqlite3",
        tmp_path / "zs/active-memory/../active-memory/lessons.sqlite3",
    ):
        assert is_zeroshot_store_path(path, env=env)
        with pytest.raises(ConfigError, match=r"zeroshot CLI's own.*--from-zeroshot PATH"):
            check_store_location(path, env=env)
        assert not path.exists()
    assert not is_zeroshot_store_path(tmp_path / "zs/lessons.sqlite3", env=env)


def test_the_isolated_zeroshot_store_is_refused_with_the_process_environment() -> None:
    with pytest.raises(ConfigError, match="--from-zeroshot"):
        check_store_location(zeroshot_store_path())


def test_the_library_store_refuses_a_url_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from active_memory.errors import ConfigError
    from active_memory.store.sqlite import SqliteStore

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="postgresql"):
        SqliteStore("postgresql://user:secret@db.example/lessons")
    assert list(tmp_path.iterdir()) == []
