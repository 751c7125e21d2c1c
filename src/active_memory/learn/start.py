"""Start the learn worker detached, for ``serve``: a long-lived process that found sessions
waiting (queued while no worker ran, or left queued by ``learn run --no-wait``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from active_memory.lanes import SPECIALIST_SESSION_VARIABLE
from active_memory.learn.folder import LearnFolder

__all__ = ["start_worker", "waiting"]


def waiting(folder: LearnFolder) -> int:
    """How many sessions wait for a worker: queue entries and queued states."""
    queued = {key for key, _ in folder.queued_entries()}
    queued |= {state.key for state in folder.states() if state.state == "queued"}
    return len(queued)


def start_worker(store: Path, folder: LearnFolder) -> None:
    """Start ``active-memory learn run --quiet`` for ``store`` in a session of its own, its
    output appended to the folder's log, never waited for (one already running keeps the lock
    and this one exits at once)."""
    folder.make()
    environ = {k: v for k, v in os.environ.items() if k != SPECIALIST_SESSION_VARIABLE}
    command = [sys.executable, "-m", "active_memory.cli.main", "learn", "run", "--quiet",
               "--store", str(store)]  # fmt: skip
    with open(folder.log, "ab") as log:
        subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                         env=environ, start_new_session=True)  # fmt: skip
