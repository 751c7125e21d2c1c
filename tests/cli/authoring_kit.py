"""The demo's two runs unpacked for CLI tests, a CLI runner, and the isolation a fixture
shared by a module builds under."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import Result

from active_memory.demo import load_bundle
from checkouts import built_once, materialized
from cli_runner import run_cli
from isolation import NetworkGuard, isolate_environment

DATES = {"first": "1748772000 +0000", "second": "1749376800 +0000"}


def cli(*args: str | Path, env: dict[str, str] | None = None) -> Result:
    return run_cli([str(arg) for arg in args], env=env)


def demo_runs(root: Path) -> tuple[Path, Path]:
    """Both demo runs as record folders; the second checkout's commit follows the first's."""
    first, _ = materialized(load_bundle("first"), root / "first", date=DATES["first"])
    second, _ = materialized(
        load_bundle("second"), root / "second", parent=first / "checkout", date=DATES["second"]
    )
    return first, second


def replay(run: Path, store: Path, *extra: str | Path) -> Result:
    return cli("postmortem", run, "--provider", "replay", "--store", store, *extra)


def first_published(store: Path) -> None:
    """Write at ``store`` what a strict replay of the first demo run with sequential ids
    publishes (its three lessons): replayed once per test process and copied, since the replay
    is most of a test's CPU where it is only the set-up. The store holds no path of the run
    folder it was replayed from (test_replay_cli replays into a fresh store itself)."""
    template, _ = built_once("demo first published", _publish_first)
    shutil.copy(template / "s.sqlite3", store)  # with its mode: a store refuses group access


def _publish_first(folder: Path) -> None:
    first, _ = demo_runs(folder)
    result = replay(first, folder / "s.sqlite3", "--ids", "sequential")
    assert result.exit_code == 0, result.stdout + result.stderr


@contextmanager
def isolated_build(root: Path) -> Iterator[None]:
    """What the autouse fixtures give each test, for a module- or session-scoped fixture that
    builds before any of them runs: state directories under ``root`` and no network."""
    with pytest.MonkeyPatch.context() as patch:
        isolate_environment(patch, root)
        guard = NetworkGuard()
        guard.install(patch)
        yield
    assert not guard.attempts, guard.attempts
