"""``open_backend``: one setting picks SQLite, PostgreSQL or the memory service."""

from __future__ import annotations

from pathlib import Path

import pytest

from active_memory import open_backend
from active_memory.errors import ConfigError
from active_memory.store.postgres import PostgresStore
from active_memory.store.remote import RemoteBackend
from active_memory.store.select import SERVICE_TOKEN_ENV
from active_memory.store.sqlite import SqliteStore


def test_a_path_opens_a_sqlite_store(tmp_path: Path) -> None:
    with open_backend(tmp_path / "lessons.sqlite3") as backend:
        assert isinstance(backend, SqliteStore)
        assert backend.path == tmp_path / "lessons.sqlite3"


def test_a_postgresql_url_opens_the_named_tenant(pg_database: str) -> None:
    with open_backend(pg_database, tenant="selected") as backend:
        assert isinstance(backend, PostgresStore)
        assert backend.tenant == "selected"
        assert backend.generation() == 0


def test_a_postgresql_url_without_a_tenant_is_refused(pg_database: str) -> None:
    with pytest.raises(ConfigError, match="name this host's tenant"):
        open_backend(pg_database)


def test_a_service_url_opens_a_remote_backend_with_the_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with open_backend("https://memory.invalid/", token="amt_x") as backend:
        assert isinstance(backend, RemoteBackend)
        assert backend.url == "https://memory.invalid"
    monkeypatch.setenv(SERVICE_TOKEN_ENV, "amt_y")
    with open_backend("http://127.0.0.1:8765") as backend:
        assert isinstance(backend, RemoteBackend)


def test_a_service_url_without_a_token_is_refused() -> None:
    with pytest.raises(ConfigError, match=SERVICE_TOKEN_ENV):
        open_backend("https://memory.invalid")


@pytest.mark.parametrize(
    ("setting", "problem"),
    [
        ("http://memory.invalid", "plain http"),
        ("http://10.0.0.1:8765", "plain http"),
        ("https://user:pw@memory.invalid", "no credentials"),
        ("ftp://memory.invalid", "neither a store file"),
        ("mysql://db/lessons", "neither a store file"),
    ],
)
def test_a_setting_that_names_no_backend_is_refused(setting: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        open_backend(setting, token="amt_x")
