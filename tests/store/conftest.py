"""Fixtures for store tests: the backend conformance fixture and a fresh SQLite store.

``store`` is parametrized over both engines: every test that takes it runs on SQLite (a fresh
file in a private temporary folder) and on PostgreSQL (a fresh tenant of a throwaway cluster,
see ``tests/pg_cluster.py``). A test about SQLite itself (its file, WAL, PRAGMAs, backups) is
marked ``sqlite_only`` and runs on SQLite alone. ``engine`` opens more stores of the same
engine (another store, the same store again, smaller limits).
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any, TypeAlias

import pytest

from active_memory.store.postgres import PostgresStore, tenant_schema
from active_memory.store.results import DEFAULT_LIMITS, StoreLimits
from active_memory.store.sqlite import SqliteStore

Store: TypeAlias = SqliteStore | PostgresStore

_tenants = itertools.count(1)


class Engine:
    """Opens stores of one engine; ``open(name)`` twice reaches the same store."""

    def __init__(self, name: str, root: Path, database_url: str | None) -> None:
        self.name = name
        self._root = root
        self._url = database_url
        self._keys: dict[str, str] = {}
        self._opened: list[Store] = []

    def open(self, name: str = "main", *, limits: StoreLimits = DEFAULT_LIMITS) -> Store:
        opened: Store
        if self._url is None:
            opened = SqliteStore(self._root / name / "lessons.sqlite3", limits=limits)
        else:
            tenant = self._keys.setdefault(name, f"t{next(_tenants)}")
            opened = PostgresStore(self._url, tenant=tenant, limits=limits, pool_size=4)
        self._opened.append(opened)
        return opened

    def location(self, name: str = "main") -> str:
        """Where ``open(name)`` reaches, as ``store_workers.open_store`` takes it."""
        if self._url is None:
            return str(self._root / name / "lessons.sqlite3")
        return f"{self._url}|{self._keys.setdefault(name, f't{next(_tenants)}')}"

    def raw(self, store: Store, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run ``query`` (``?`` placeholders) on the store's tables behind its back, committed:
        to look at stored rows, or to damage them."""
        if isinstance(store, SqliteStore):
            with closing(sqlite3.connect(store.path)) as conn:
                rows = conn.execute(query, params).fetchall()
                conn.commit()
                return rows
        import psycopg

        assert self._url is not None
        with psycopg.connect(self._url, autocommit=True) as conn:
            conn.execute(f"SET search_path = {tenant_schema(store.tenant)}".encode())
            cursor = conn.execute(query.replace("?", "%s").encode(), params)
            return cursor.fetchall() if cursor.description else []

    def close(self) -> None:
        for opened in self._opened:
            opened.close()


@pytest.fixture(params=["sqlite", "postgres"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    url = request.getfixturevalue("pg_database") if request.param == "postgres" else None
    opened = Engine(request.param, tmp_path / "stores", url)
    yield opened
    opened.close()


@pytest.fixture
def store(engine: Engine) -> Store:
    return engine.open()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "active-memory" / "lessons.sqlite3"


@pytest.fixture
def sqlite_store(store_path: Path) -> Iterator[SqliteStore]:
    with SqliteStore(store_path) as opened:
        yield opened


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A ``sqlite_only`` test keeps its SQLite run only (the PostgreSQL one is deselected)."""
    kept, dropped = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_postgres = callspec is not None and callspec.params.get("engine") == "postgres"
        if on_postgres and item.get_closest_marker("sqlite_only") is not None:
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
