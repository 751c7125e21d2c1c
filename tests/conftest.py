"""Shared test set-up: no test touches the developer's store or settings, or the network.

The anthropic and openai SDKs are built on httpx2; aliasing it before anything imports httpx
lets respx see their traffic. Every test then runs with its state directories in a temporary
folder and the provider settings scrubbed (:func:`isolation.isolate_environment`), and with a
guard that refuses and fails any connection beyond loopback (:class:`isolation.NetworkGuard`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

import pg_cluster
import slow_first
from isolation import NetworkGuard, isolate_environment
from slow_reasons import pytest_collection_modifyitems  # noqa: F401 (a hook: slow tests say why)

httpx2.alias_httpx()


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, which `-p no:xdist` leaves out
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """One worker more than the cores ``-n auto`` would use.

    About a fifth of the suite's time is spent waiting (on harness CLIs, servers, a PostgreSQL
    cluster, sockets), so with one worker a core a core sits idle; a measured third worker on two
    cores took the suite from 246 s to 219 s.
    """
    return len(os.sched_getaffinity(0)) + 1


def pytest_configure(config: pytest.Config) -> None:
    # A plugin of its own: its collection hook runs last, after every deselection, while the
    # check of slow reasons above runs first, before any.
    config.pluginmanager.register(slow_first, "slow_first")


@pytest.fixture(autouse=True)
def isolated_state(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    """The state directories, home and settings a test sees: temporary, never the user's.

    Not under ``tmp_path``, so a test that lists its own folder finds only what it made."""
    return isolate_environment(monkeypatch, tmp_path_factory.mktemp("isolated"))


@pytest.fixture(autouse=True)
def network_guard(monkeypatch: pytest.MonkeyPatch) -> Iterator[NetworkGuard]:
    guard = NetworkGuard()
    guard.install(monkeypatch)
    yield guard
    if guard.attempts:
        pytest.fail("the test tried to use the network: " + "; ".join(guard.attempts))


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """The URL of a database in a throwaway cluster started once per session."""
    reason = pg_cluster.unavailable()
    if reason is not None:
        pytest.skip(f"no PostgreSQL for the postgres backend: {reason}")
    cluster = pg_cluster.Cluster()
    try:
        yield cluster.create_database("active_memory_tests")
    finally:
        cluster.stop()
