"""The latched outcome: the main graph's result, made durable before any postmortem work.

The postmortem is optional work after the run; whatever happens to it (a crash, a provider
outage, a restart) must not change how the run ended. So the outcome is written first, to a
private file in the run's state folder: a temporary file, flushed and fsynced, renamed over the
final name, then the folder fsynced. A reader sees the previous state or the complete new one.
Latching is final: latching the same outcome again is a no-op, a different one is refused.

Standard library only: :mod:`active_memory.host` imports this at package import time.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from active_memory.bounded_input import read_json
from active_memory.errors import InputRefused, PostmortemError, RunRecordError
from active_memory.models.runs import Outcome
from active_memory.private_files import make_private_dir, write_private_text

__all__ = ["LATCH_FILE", "latch_outcome", "read_latched_outcome", "run_state_dir"]

LATCH_FILE = "outcome.json"
_MAX_LATCH_BYTES = 64 * 1024  # an outcome and its one-line summary
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def run_state_dir(base: str | os.PathLike[str], run_id: str) -> Path:
    """``base/runs/<readable id>-<hash>``: one private folder per run id, whatever it contains."""
    readable = _UNSAFE.sub("_", run_id)[:64].strip("_") or "run"
    digest = hashlib.sha256(run_id.encode("utf-8")).hexdigest()[:12]
    return Path(base) / "runs" / f"{readable}-{digest}"


def _outcome_from(data: Any, path: Path) -> Outcome:
    try:
        outcome = data["outcome"]
        status = outcome["status"]
        if status not in ("succeeded", "failed", "cancelled"):
            raise ValueError(status)
        return Outcome(
            status=status, latched_ms=int(outcome["latched_ms"]), summary=outcome.get("summary")
        )
    except (KeyError, TypeError, ValueError, RunRecordError) as error:
        raise PostmortemError(
            f"latched outcome file {str(path)!r} is malformed ({error!r}); it was not written by "
            "active-memory, move it aside"
        ) from None


def read_latched_outcome(state_dir: str | os.PathLike[str]) -> Outcome | None:
    """The outcome latched in ``state_dir``, or None when none was latched."""
    path = Path(state_dir) / LATCH_FILE
    if not os.path.lexists(path):
        return None
    try:
        data = read_json(path, what=f"latched outcome {str(path)!r}", max_bytes=_MAX_LATCH_BYTES)
    except InputRefused as refused:
        raise PostmortemError(f"{refused}; move it aside") from None
    return _outcome_from(data, path)


def latch_outcome(state_dir: str | os.PathLike[str], run_id: str, outcome: Outcome) -> Path:
    """Write ``outcome`` durably to ``state_dir/outcome.json`` (0600 in a 0700 folder).

    Returns the file's path. Raises PostmortemError when a different outcome is already latched
    or the folder cannot be written.
    """
    folder = Path(state_dir)
    path = folder / LATCH_FILE
    existing = read_latched_outcome(folder)
    if existing is not None:
        if existing == outcome:
            return path
        raise PostmortemError(
            f"run {run_id!r} already latched outcome {existing.status!r} at "
            f"{existing.latched_ms}; a latched outcome is final"
        )
    body = json.dumps({"run_id": run_id, "outcome": outcome.model_dump()}, sort_keys=True) + "\n"
    try:
        make_private_dir(folder)
        write_private_text(path, body, durable=True)
    except OSError as error:
        raise PostmortemError(
            f"cannot latch the outcome of run {run_id!r} in {str(folder)!r}: "
            f"{error.strerror or error}; the postmortem must not start before it is durable"
        ) from None
    return path
