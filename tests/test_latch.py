"""The latched outcome: durable, private, final."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from active_memory.errors import PostmortemError
from active_memory.latch import LATCH_FILE, latch_outcome, read_latched_outcome, run_state_dir
from active_memory.models.runs import Outcome

OUTCOME = Outcome(
    status="succeeded", latched_ms=1748772087000, summary="approved after one review loop"
)


def test_latching_writes_a_private_file_that_reads_back(tmp_path: Path) -> None:
    folder = tmp_path / "runs" / "run-1"
    path = latch_outcome(folder, "run-1", OUTCOME)
    assert path == folder / LATCH_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert json.loads(path.read_text("utf-8"))["outcome"]["status"] == "succeeded"
    assert read_latched_outcome(folder) == OUTCOME
    assert [p.name for p in folder.iterdir()] == [LATCH_FILE]  # no temporary file left


def test_an_existing_state_folder_is_tightened_and_a_symlinked_one_refused(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    os.chmod(folder, 0o755)
    latch_outcome(folder, "run-1", OUTCOME)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(PostmortemError, match="symlink"):
        latch_outcome(link, "run-1", OUTCOME)
    assert not (tmp_path / "elsewhere" / LATCH_FILE).exists()


def test_latching_is_final_and_idempotent(tmp_path: Path) -> None:
    latch_outcome(tmp_path, "run-1", OUTCOME)
    latch_outcome(tmp_path, "run-1", OUTCOME)
    with pytest.raises(PostmortemError, match="already latched outcome 'succeeded'"):
        latch_outcome(tmp_path, "run-1", Outcome(status="failed", latched_ms=1748772090000))
    assert read_latched_outcome(tmp_path) == OUTCOME


def test_nothing_latched_reads_as_none_and_a_foreign_file_is_refused(tmp_path: Path) -> None:
    assert read_latched_outcome(tmp_path) is None
    (tmp_path / LATCH_FILE).write_text('{"outcome": {"status": "maybe"}}', "utf-8")
    with pytest.raises(PostmortemError, match="malformed"):
        read_latched_outcome(tmp_path)


def test_run_state_dir_is_one_safe_folder_per_run_id(tmp_path: Path) -> None:
    first = run_state_dir(tmp_path, "run/../../etc")
    assert first.parent == tmp_path / "runs"
    assert ".." not in first.name
    assert "/" not in first.name
    assert run_state_dir(tmp_path, "run-a") != run_state_dir(tmp_path, "run_a")
