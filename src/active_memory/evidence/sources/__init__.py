"""Adapters that produce a RunRecord from recorded sources: the native record folder (read by the
model, :func:`active_memory.models.runs.load_run_record`) and the session files of four coding
harnesses (Claude Code, Codex CLI, pi, Copilot CLI), each converted into a native folder first.
The harness is told by the file's content (:mod:`.detect`) unless the caller names it."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path

from active_memory.bounded_input import regular_file_problem
from active_memory.errors import RunRecordError
from active_memory.evidence.sources.detect import (
    detect_harness,
    first_record_shape,
    forced_mismatch,
)
from active_memory.evidence.sources.lines import first_lines
from active_memory.evidence.sources.peek import Peek
from active_memory.harnesses import HARNESS_NAMES, harness_row
from active_memory.models.runs import RUN_FILE, RunRecord, load_run_record

__all__ = ["detect_harness", "load_session", "open_run_source", "session_loader", "session_peek"]

Loader = Callable[[str | os.PathLike[str], str | os.PathLike[str]], RunRecord]


def session_loader(harness: str) -> Loader:
    """The converter of ``harness``'s sessions: ``LOADER`` of the module its row names."""
    if harness not in HARNESS_NAMES:
        raise RunRecordError(
            "$", f"unknown harness {harness!r}; choose one of {list(HARNESS_NAMES)}"
        )
    # Imported on use: a record folder never pays for the session converters.
    module = importlib.import_module(f"{__name__}.{harness_row(harness).source_module}")
    loader: Loader = module.LOADER
    return loader


def session_peek(harness: str) -> Peek:
    """The inventory's quick look at one line of ``harness``'s sessions: ``PEEK`` of its module."""
    module = importlib.import_module(f"{__name__}.{harness_row(harness).source_module}")
    peek: Peek = module.PEEK
    return peek


def load_session(
    path: str | os.PathLike[str], workdir: str | os.PathLike[str], harness: str | None = None
) -> RunRecord:
    """Convert one session file into ``workdir``: as ``harness``, or as its content says."""
    given = Path(path)
    problem = regular_file_problem(given)
    if problem is not None:  # by its type, before any open: a FIFO would block the reader
        raise RunRecordError("$", problem, source=str(given))
    if harness is not None:
        mismatch = forced_mismatch(given, harness)
        if mismatch is not None:
            raise RunRecordError("$", mismatch, source=str(given))
    loader = session_loader(harness or detect_harness(given))
    try:
        return loader(given, workdir)
    except RunRecordError as error:
        if harness is None or not error.problem.startswith("has no "):
            raise
        # Forced onto a file of no known format: say what the file looked like instead.
        shape = first_record_shape(next(iter(first_lines(given, count=1)), None))
        raise RunRecordError("$", f"{error.problem}; {shape}", source=str(given)) from None
    except OSError as error:
        # The session vanished or became unreadable mid-read, or the scratch folder is full.
        raise RunRecordError("$", f"could not be converted ({error.strerror or error})",
                             source=str(given)) from None  # fmt: skip


def open_run_source(
    path: str | os.PathLike[str], workdir: str | os.PathLike[str], harness: str | None = None
) -> RunRecord:
    """A record folder or ``run.json`` loads as is; any other file is read as a session (of
    ``harness`` when given, else of the harness its content matches) and converted into
    ``workdir``, which should be private and may be temporary."""
    given = Path(path)
    if harness is None and (given.is_dir() or given.name == RUN_FILE):
        return load_run_record(given)
    if given.is_dir():
        raise RunRecordError("$", f"is a folder, not a {harness} session file", source=str(given))
    return load_session(given, workdir, harness)
