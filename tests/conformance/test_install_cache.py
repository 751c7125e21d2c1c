"""The conformance kit's install cache on its own: no npm, no real CLI, always run.

A cached binary answers ``--version`` before it is used: once a test run, whose workers share
what the first one checked, so a run does not start each binary once per worker."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.harnesses import HARNESSES, Harness, install

HARNESS: Harness = HARNESSES["pi"]


def _cached(root: Path, harness: Harness) -> Path:
    """A cached install whose binary notes each start and answers ``--version``."""
    folder = root / harness.spec.replace("/", "+") / "node_modules" / ".bin"
    folder.mkdir(parents=True)
    binary = folder / harness.bin
    started = root / "started"
    binary.write_text(f'#!/bin/sh\necho x >> "{started}"\necho "{harness.version} (fake)"\n')
    binary.chmod(0o755)
    return started


def _starts(started: Path) -> int:
    return len(started.read_text().splitlines()) if started.exists() else 0


def test_the_workers_of_one_run_start_a_cached_binary_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = _cached(tmp_path, HARNESS)
    monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", "run-1")
    for _worker in range(3):
        done = install(HARNESS, tmp_path)
        assert done.version == f"{HARNESS.version} (fake)"
        assert done.binary is not None
        assert done.binary.name == HARNESS.bin
    assert _starts(started) == 1
    monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", "run-2")  # the next run checks it again
    assert install(HARNESS, tmp_path).version == f"{HARNESS.version} (fake)"
    assert _starts(started) == 2


def test_without_a_run_id_each_install_checks_the_binary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = _cached(tmp_path, HARNESS)
    monkeypatch.delenv("PYTEST_XDIST_TESTRUNUID", raising=False)
    install(HARNESS, tmp_path)
    install(HARNESS, tmp_path)
    assert _starts(started) == 2


def test_a_cached_binary_that_no_longer_runs_is_not_taken_from_the_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cached(tmp_path, HARNESS)
    monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", "run-1")
    monkeypatch.setenv("PATH", str(tmp_path / "no-npm-here"))  # a reinstall fails at once
    assert install(HARNESS, tmp_path).binary is not None
    monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", "run-2")
    binary = tmp_path / HARNESS.spec.replace("/", "+") / "node_modules" / ".bin" / HARNESS.bin
    binary.write_text("#!/bin/sh\nexit 3\n")  # broken since the last run
    done = install(HARNESS, tmp_path)
    assert done.binary is None
    assert "npm is not installed" in done.reason
