"""The helper without a broker reads the real store directly (slow path, still once per
conversation)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from active_memory.hooks.install import helper_command
from recall.kit import lesson_id, payload_in, seed_store, widgets_checkout, widgets_lessons

CLEAN_ENV = {key: value for key, value in os.environ.items()
             if not key.startswith("ACTIVE_MEMORY_")}  # fmt: skip


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path]:
    workspace = widgets_checkout(tmp_path / "widgets")
    store = tmp_path / "state" / "active-memory" / "lessons.sqlite3"
    seed_store(store, widgets_lessons())
    return workspace, store


def ask(workspace: Path, store: Path, payload: bytes, **env: str) -> object:
    """Run the helper exactly as `hooks install` writes it (no broker anywhere)."""
    command = helper_command("claude", store=str(store), workspace=str(workspace))
    done = subprocess.run(["sh", "-c", command], input=payload, capture_output=True,
                          timeout=60, env={**CLEAN_ENV, **env})  # fmt: skip
    assert (done.returncode, done.stderr) == (0, b"")
    return json.loads(done.stdout)


def test_helper_reads_the_store_when_no_broker_answers(setup: tuple[Path, Path]) -> None:
    workspace, store = setup
    payload = payload_in("claude/read.json", workspace)
    first = ask(workspace, store, payload)
    assert f"[{lesson_id(1)}@1]" in first["hookSpecificOutput"]["additionalContext"]  # type: ignore[index]
    assert ask(workspace, store, payload) == {}
    other = payload.replace(b"3f2b9c1e-7a44", b"99999999-7a44")
    assert ask(workspace, store, other) != {}
    ledgers = list((store.parent / "exposure").iterdir())
    assert len(ledgers) == 2
    assert all(oct(path.stat().st_mode & 0o777) == "0o600" for path in ledgers)


def test_helper_fallback_ignores_calls_from_other_projects(
    setup: tuple[Path, Path], tmp_path: Path
) -> None:
    workspace, store = setup
    payload = payload_in("claude/read.json", tmp_path / "elsewhere")
    assert ask(workspace, store, payload) == {}


def test_helper_fallback_with_a_missing_store_prints_empty(tmp_path: Path) -> None:
    workspace = widgets_checkout(tmp_path / "widgets")
    payload = payload_in("claude/read.json", workspace)
    assert ask(workspace, tmp_path / "none.sqlite3", payload) == {}
