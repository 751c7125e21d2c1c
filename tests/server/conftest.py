"""Fixtures for the memory service: a service on a loopback port over the throwaway cluster,
fresh tenants, and tokens issued per test (never a fixed secret).

``running`` starts a service per test. A module whose tests each work in a tenant and with
tokens of their own, and change nothing else of the service, overrides it with
``shared_running`` (one service for the module): stopping uvicorn waits out its 0.1 s ticks,
and a start opens a pool of connections, which per test is most of what a short test costs."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from active_memory.server import IssuedToken, RunningService, ServiceLimits, build_service
from active_memory.store.remote import RemoteBackend
from factories import REPOSITORY

# Small enough that the abuse tests stay quick; the defaults are in ServiceLimits.
TEST_LIMITS = ServiceLimits(max_request_bytes=256 * 1024, request_timeout_s=1.5)
_names = itertools.count(1)


@contextmanager
def _serving(pg_database: str) -> Iterator[RunningService]:
    service = build_service(pg_database, pool_size=8, limits=TEST_LIMITS)
    try:
        with RunningService(service) as started:
            yield started
    finally:
        service.close()


@pytest.fixture
def running(pg_database: str) -> Iterator[RunningService]:
    with _serving(pg_database) as started:
        yield started


@pytest.fixture(scope="module")
def shared_running(pg_database: str) -> Iterator[RunningService]:
    with _serving(pg_database) as started:
        yield started


@pytest.fixture
def tenant() -> str:
    return f"svc{next(_names)}"


Issue = Callable[..., IssuedToken]


@pytest.fixture
def issue(running: RunningService, tenant: str) -> Issue:
    """Issue a token: ``issue()`` for this test's tenant and REPOSITORY, or other scopes."""

    def issued(
        tenant: str = tenant, repository: str = REPOSITORY, **options: object
    ) -> IssuedToken:
        return running.service.credentials.create(
            tenant=tenant,
            repository=repository,
            **options,  # type: ignore[arg-type]
        )

    return issued


@pytest.fixture
def remote(running: RunningService) -> Iterator[Callable[[str], RemoteBackend]]:
    opened: list[RemoteBackend] = []

    def connect(token: str) -> RemoteBackend:
        backend = RemoteBackend(running.url, token=token, timeout_s=10)
        opened.append(backend)
        return backend

    yield connect
    for backend in opened:
        backend.close()
