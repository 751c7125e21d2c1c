"""The engines the store conformance tests run on (see ``conftest.py``)."""

from __future__ import annotations

import itertools
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any, TypeAlias

from active_memory.store.postgres import PostgresStore, tenant_schema
from active_memory.store.results import DEFAULT_LIMITS, StoreLimits
from active_memory.store.sqlite import SqliteStore

__all__ = ["Engine", "Store"]

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
