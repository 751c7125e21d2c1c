"""Session-end hook benchmark: what queueing a finished session costs the harness.

Run: ``python benchmarks/learn_event_bench.py`` (``--runs N``).

The command is exactly what ``active-memory hooks install --harness claude --learn`` writes for
Claude Code's ``SessionEnd`` (``sh -c`` on it, as the harness spawns it), fed the event's payload
on stdin naming a real session file of 2 MB. Each run queues the session (one entry written
atomically) and starts the worker detached; the worker's interpreter is ``/bin/true`` here, so
the spawn is counted and the worker's own work is not (the harness never waits for it). Two
series run interleaved, so machine noise hits them alike, each the median of ``--runs``:

* the baseline, ``python3 -I -S -c pass`` (a bare interpreter start);
* the session-end hook.

Target: the hook ≤ 2× the baseline.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from active_memory.hooks.learn_hooks import session_end_command

TARGET = 2.0


def timed(run: Callable[[], None]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="learn-event-bench-") as scratch:
        root = Path(scratch)
        session = root / "projects" / "-work-app" / "6f1d.jsonl"
        session.parent.mkdir(parents=True)
        line = json.dumps({"type": "user", "message": {"role": "user", "content": "x" * 1000}})
        session.write_text((line + "\n") * 2000)
        command = session_end_command("claude", folder=root / "learn", store=root / "s.sqlite3")
        command = command.replace(f"--python {sys.executable}", "--python /bin/true")
        payload = json.dumps({"session_id": "6f1d", "transcript_path": str(session),
                              "cwd": str(root), "reason": "other"}).encode()  # fmt: skip

        def hook() -> None:
            subprocess.run(["sh", "-c", command], input=payload, check=True)

        def bare() -> None:
            subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], input=b"", check=True)

        hook()  # the first run writes the helper's cached bytecode
        assert list((root / "learn" / "queue").iterdir()), "the hook queued nothing"
        names = ("bare interpreter (python3 -I -S -c pass)",
                 "session-end hook (queue + detached start)")  # fmt: skip
        series: dict[str, list[float]] = {name: [] for name in names}
        for _ in range(options.runs):
            for name, run in zip(series, (bare, hook), strict=True):
                series[name].append(timed(run))
    medians = {name: statistics.median(values) for name, values in series.items()}
    base = next(iter(medians.values()))
    print(f"session-end hook, a 2 MB session; median of {options.runs} runs each")
    for name, value in medians.items():
        print(f"  {name:<44} {value * 1e3:8.1f} ms   {value / base:5.2f}x")
    ratio = list(medians.values())[1] / base
    verdict = "within" if ratio <= TARGET else "OVER"
    print(f"ratio {ratio:.2f}x the bare interpreter: {verdict} the {TARGET:.0f}x target")


if __name__ == "__main__":
    main()
