"""Fixtures for store tests: a fresh store in a private temporary directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from active_memory.store.sqlite import SqliteStore


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "active-memory" / "lessons.sqlite3"


@pytest.fixture
def store(store_path: Path) -> Iterator[SqliteStore]:
    with SqliteStore(store_path) as opened:
        yield opened
