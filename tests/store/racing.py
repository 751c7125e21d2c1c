"""Starting ``store_workers.py`` processes and releasing them at one moment.

Each racing worker prints ``ready`` once it has imported everything (and, where it races on an
open store, opened it), then blocks on a line on its stdin. :func:`release` waits for every
``ready`` and then writes ``go`` to all of them: the race starts the moment the slowest process
is ready, however loaded the machine, instead of at a wall-clock time guessed ahead.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["WORKERS", "release", "spawn"]

WORKERS = Path(__file__).with_name("store_workers.py")


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKERS), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def release(workers: Sequence[subprocess.Popen[str]]) -> None:
    """Wait until every worker is ready, then let them all go at once."""
    for worker in workers:
        assert worker.stdout is not None
        line = worker.stdout.readline()
        if line.strip() != "ready":  # it died before the start: show why
            _, stderr = worker.communicate(timeout=30)
            raise AssertionError(f"worker not ready ({line!r}): {stderr}")
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.flush()
