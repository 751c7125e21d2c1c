"""A run log that is a FIFO: ``postmortem --run-log`` refuses it before any work, and the log
writer never waits on one swapped in later (opening a FIFO to append waits for a reader).

Each case runs in its own process with a time limit: what failed was that it never exited.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from postmortem.postmortem_kit import first_run

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
SRC = Path(__file__).resolve().parents[2] / "src"
ENV = {**os.environ, "PYTHONPATH": str(SRC)}


def test_postmortem_refuses_a_fifo_run_log_before_any_work(tmp_path: Path) -> None:
    folder, _ = first_run(tmp_path)
    fifo = tmp_path / "run-log.jsonl"
    os.mkfifo(fifo)
    store = tmp_path / "state" / "lessons.sqlite3"

    done = subprocess.run(
        [sys.executable, "-m", "active_memory.cli.main", "postmortem", str(folder),
         "--provider", "replay", "--store", str(store), "--run-log", str(fifo)],
        capture_output=True, text=True, timeout=60, env=ENV,
    )  # fmt: skip

    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"error: --run-log {str(fifo)!r} is a FIFO (named pipe), not a regular file; pass a "
        "regular file or a new path\n"
    )
    assert not store.parent.exists()


SWAPPED = """
import os, sys
from active_memory.errors import RunLogError
from active_memory.runlog import RunLog

path = sys.argv[1]
os.mkfifo(path)
messages = []
try:  # no reader: opened read-write and non-blocking, it never waits; the fstat refuses it
    RunLog(path).append_event("probe")
except RunLogError as error:
    messages.append(str(error))
reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
try:  # a reader: the open succeeds and the fstat refuses it
    RunLog(path).append_event("probe")
except RunLogError as error:
    messages.append(str(error))
os.close(reader)
print("\\n".join(messages))
"""


def test_the_run_log_writer_never_waits_on_a_fifo(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", SWAPPED, str(path)],
        capture_output=True, text=True, timeout=30, env=ENV,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"run log {str(path)!r} is not a regular file",
        f"run log {str(path)!r} is not a regular file",
    ]
