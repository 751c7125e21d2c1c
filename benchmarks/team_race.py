"""The race machinery of ``team_bench.py``: worker processes started at once, timed, counted.

Each worker is ``team_bench.py`` run again with ``--worker`` or ``--publisher``; it says when it
is ready (imports done, connected) and waits for the start, so a race's time counts no process
start-up. A race also counts the CPU its workers spent and the cluster's (``POSTMASTER``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["POSTMASTER", "mark_started", "owned", "race", "ready_then_wait", "server_cpu"]

_SCRIPT = Path(__file__).with_name("team_bench.py")


def ready_then_wait(out: str) -> None:
    """Say this worker is ready (imports done, connected), then wait for the race to start:
    the time of a race counts no process start-up."""
    Path(out + ".ready").touch()
    go = Path(out).with_name("go")
    while not go.exists():
        time.sleep(0.005)


def mark_started(out: str, started: list[float]) -> None:
    ready_then_wait(out)
    started.append(time.process_time())


def owned(ids: list[str], n: int, processes: int) -> list[str]:
    """The lessons (or rows) process ``n`` alone writes in the publication race."""
    return ids[n::processes]


def race(
    kind: str, location: str, secret: str, processes: int, batches: int, *, owned: bool = False
) -> list[Any]:
    """Start the workers (``owned``: each on its own lessons or rows, ``publisher``), wait
    until every one is ready, start them at once; the seconds from the start to the last
    one's end, every outcome, and the CPU seconds the workers spent."""
    folder = Path(tempfile.mkdtemp(prefix="team-bench-"))
    outputs = [folder / f"{kind}-{n}.json" for n in range(processes)]
    role = "--publisher" if owned else "--worker"
    spawned = [
        subprocess.Popen([sys.executable, str(_SCRIPT), role, kind, location, secret, *args])
        for args in (
            [str(n), str(batches), str(out), str(processes)] for n, out in enumerate(outputs)
        )
    ]
    while not all(Path(f"{out}.ready").exists() for out in outputs):
        if any(process.poll() not in (None, 0) for process in spawned):
            raise SystemExit(f"a {kind} worker failed before the race")
        time.sleep(0.01)
    started = time.time()
    server = server_cpu()
    (folder / "go").touch()
    for process in spawned:
        if process.wait() != 0:
            raise SystemExit(f"a {kind} worker failed")
    time.sleep(0.3)  # each worker's backend has exited, and its CPU counted to the server
    server = server_cpu() - server
    written = [json.loads(out.read_text()) for out in outputs]
    elapsed = max(w["ended"] for w in written) - started
    cpu_s = sum(w.get("cpu_s", 0.0) for w in written)
    return [elapsed, [r for w in written for r in w["results"]], cpu_s, server]


POSTMASTER: list[int] = []  # the benchmark's cluster, once started


def server_cpu() -> float:
    """CPU seconds the cluster has spent: its postmaster with every exited backend (the
    children it reaped), and every backend still running; 0 before the cluster starts."""
    if not POSTMASTER:
        return 0.0
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        pid = int(stat.parent.name)
        if pid == POSTMASTER[0]:
            ticks += sum(int(value) for value in fields[11:15])  # its own and reaped children
        elif int(fields[1]) == POSTMASTER[0]:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")
