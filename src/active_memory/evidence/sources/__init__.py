"""Adapters that produce a RunRecord from recorded sources: the native record folder (read by the
model, :func:`active_memory.models.runs.load_run_record`), and a Claude Code session transcript
(converted into a native folder first)."""

from __future__ import annotations

import os
from pathlib import Path

from active_memory.errors import RunRecordError
from active_memory.models.runs import RUN_FILE, RunRecord, load_run_record

__all__ = ["open_run_source"]


def open_run_source(path: str | os.PathLike[str], workdir: str | os.PathLike[str]) -> RunRecord:
    """A record folder or ``run.json`` loads as is; a ``.jsonl`` file is read as a Claude Code
    session and converted into ``workdir`` (which should be private and may be temporary)."""
    given = Path(path)
    if given.is_dir() or given.name == RUN_FILE:
        return load_run_record(given)
    if given.suffix == ".jsonl":
        from active_memory.evidence.sources.claude_code import load_claude_session

        return load_claude_session(given, workdir)
    raise RunRecordError(
        "$",
        "is neither a run record (folder or run.json) nor a Claude Code session (.jsonl)",
        source=str(given),
    )
