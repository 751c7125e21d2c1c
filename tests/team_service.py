"""The memory service started over the test cluster's database, as the team tests use it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from active_memory.server import RunningService, build_service


@contextmanager
def running_service(url: str, *, pool_size: int) -> Iterator[RunningService]:
    """A service over ``url`` (a ``pg_database``) listening on loopback; stopped, then its pool
    closed, when the block ends (``.service`` issues its tokens, ``.url`` is where it listens)."""
    built = build_service(url, pool_size=pool_size)
    try:
        with RunningService(built) as started:
            yield started
    finally:
        built.close()
