"""Fixtures for store tests: the backend conformance fixture and a fresh SQLite store.

``store`` is parametrized over both engines: every test that takes it runs on SQLite (a fresh
file in a private temporary folder) and on PostgreSQL (a fresh tenant of a throwaway cluster,
see ``tests/pg_cluster.py``). A test about SQLite itself (its file, WAL, PRAGMAs, backups) is
marked ``sqlite_only`` and runs on SQLite alone. ``engine`` opens more stores of the same
engine (another store, the same store again, smaller limits).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from engines import Engine, Store

from active_memory.store.sqlite import SqliteStore


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
