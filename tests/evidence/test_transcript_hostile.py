"""Transcript lines are evidence: any line is kept as a record or as text, never a traceback;
a transcript that is not a regular file is unavailable, never opened."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from active_memory.errors import InputRefused
from active_memory.evidence.history import project_line
from active_memory.evidence.pager import TranscriptLine, iter_pages
from hostile import HOSTILE_VALUES, planted

pytestmark = pytest.mark.timeout(300)


@settings(max_examples=1000, deadline=None)
@given(text=st.one_of(HOSTILE_VALUES, planted({"role": "user", "text": "hi"}).map(
    lambda data: data.decode("utf-8", "replace")), st.text()))  # fmt: skip
def test_fuzz_a_transcript_line_projects_to_role_tool_and_text(text: str) -> None:
    role, tool, shown = project_line(TranscriptLine(1, text, len(text.encode("utf-8", "replace"))))
    assert role is None or isinstance(role, str)
    assert tool is None or isinstance(tool, str)
    assert isinstance(shown, str)


def test_a_deeply_nested_line_is_kept_as_its_text() -> None:
    text = "[" * 100_000 + "]" * 100_000
    assert project_line(TranscriptLine(1, text, len(text))) == (None, None, text)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_transcript_is_refused_by_the_pager_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(InputRefused, match="is a FIFO"):
        next(iter_pages(fifo))


@pytest.mark.parametrize("harness", [None, "claude", "codex", "pi", "copilot"])
def test_a_session_that_is_a_fifo_is_refused_by_its_type_without_blocking(
    tmp_path: Path, harness: str | None
) -> None:
    from active_memory.errors import RunRecordError
    from active_memory.evidence.sources import open_run_source

    session = tmp_path / "rollout-2026-01-01.jsonl"
    os.mkfifo(session)  # nobody writes: opening it to read would wait for good
    with pytest.raises(RunRecordError, match="FIFO"):
        open_run_source(session, tmp_path / "work", harness)
    assert not (tmp_path / "work").exists()
