"""A converted session is the user's text: its folder and transcript copies are private."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from active_memory.evidence.sources import open_run_source

FIXTURE = Path(__file__).parents[2] / "fixtures" / "claude" / "subagent-files.jsonl"


def test_converted_transcripts_are_private_even_under_a_permissive_umask(tmp_path: Path) -> None:
    previous = os.umask(0o000)
    try:
        open_run_source(FIXTURE, tmp_path / "converted")
    finally:
        os.umask(previous)
    written = [path for path in (tmp_path / "converted").rglob("*") if path.is_file()]
    transcripts = [path for path in written if path.suffix == ".jsonl"]
    assert transcripts, written
    for path in transcripts:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    for folder in {path.parent for path in transcripts}:
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
