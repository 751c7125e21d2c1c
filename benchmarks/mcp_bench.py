"""MCP server start-up benchmark: a client's first answer, against importing the SDK alone.

Run: ``python benchmarks/mcp_bench.py`` (``--runs N``, default 7).

In a throwaway git checkout with a store of 40 lessons, each run spawns ``python -m
active_memory.cli.main mcp`` and times, from the spawn, a full ``initialize`` (request, answer,
``notifications/initialized``) and one ``recall`` round trip over the raw stdio wire; then it
closes standard input and times the exit. The baseline, in the same runs (interleaved, so a
busy machine slows both alike), is starting ``python -c 'import mcp'``: what any server built
on the SDK pays before it can answer. A third row, ``python -c 'import active_memory.cli.main'``,
shows what the project's own command line adds before the ``mcp`` command runs.

Prints the median (and the fastest) of each, and the ratio of the server's first recall to the
baseline. Nothing here reaches the network.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from active_memory.models.changes import Mutation, Publication
from active_memory.models.lessons import Evidence, Lesson, RepositoryScope
from active_memory.store.sqlite import SqliteStore

SRC = Path(__file__).resolve().parents[1] / "src"
REPOSITORY = "forge:github.com/acme/widgets"
LESSONS = 40
_ENV = {**os.environ, "PYTHONPATH": str(SRC)}


def _lesson(number: int) -> Lesson:
    return Lesson(
        id=f"lesson-{number:026d}",
        revision=1,
        scope=RepositoryScope(repository=REPOSITORY, files=(f"src/widgets/module_{number}.py",)),
        title=f"Module {number} loads lazily",
        recommendation=f"Read module {number} through its accessor; tests patch it late.",
        evidence=Evidence(run_id="bench", references=("exec:e1",), reason="benchmark"),
    )


def _fixture(folder: Path) -> tuple[Path, Path]:
    checkout = folder / "widgets"
    checkout.mkdir()
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    subprocess.run(["git", "-C", str(checkout), "remote", "add", "origin",
                    "https://github.com/acme/widgets.git"], check=True)  # fmt: skip
    store = folder / "state" / "lessons.sqlite3"
    with SqliteStore(store) as opened:
        mutations = tuple(
            Mutation(op="upsert", id=item.id, expected_revision=0, draft=item.draft)
            for item in map(_lesson, range(1, LESSONS + 1))
        )
        opened.publish(Publication(run_id="bench", mutations=mutations))
    return checkout, store


def _message(number: int | None, method: str, params: object) -> bytes:
    message: dict[str, object] = {"jsonrpc": "2.0", "method": method, "params": params}
    if number is not None:
        message["id"] = number
    return json.dumps(message).encode() + b"\n"


def _answer(process: subprocess.Popen[bytes], number: int) -> dict[str, object]:
    assert process.stdout is not None
    while line := process.stdout.readline():
        message = json.loads(line)
        if message.get("id") == number:
            return message  # type: ignore[no-any-return]
    raise SystemExit(f"the server closed its output before answering request {number}")


def _server_round_trip(checkout: Path, store: Path) -> tuple[float, float]:
    """Seconds from the spawn to the recall's answer, and from closing stdin to the exit."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "active_memory.cli.main", "mcp", "--store", str(store)],
        cwd=checkout, env=_ENV, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdin is not None
    process.stdin.write(_message(1, "initialize", {"protocolVersion": "2025-11-25",
                                                    "capabilities": {},
                                                    "clientInfo": {"name": "bench",
                                                                   "version": "0"}}))  # fmt: skip
    process.stdin.flush()
    _answer(process, 1)
    process.stdin.write(_message(None, "notifications/initialized", {}))
    recall = {"kind": "file", "value": "src/widgets/module_7.py"}
    process.stdin.write(_message(2, "tools/call", {"name": "recall", "arguments": recall}))
    process.stdin.flush()
    result = _answer(process, 2)["result"]
    answered = time.perf_counter() - started
    assert isinstance(result, dict)
    if result.get("isError") or "Module 7 loads lazily" not in result["content"][0]["text"]:
        raise SystemExit(f"recall did not deliver the lesson: {result}")
    closing = time.perf_counter()
    process.stdin.close()
    process.wait(timeout=30)
    return answered, time.perf_counter() - closing


def _python(code: str) -> Callable[[], float]:
    def run() -> float:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], env=_ENV, check=True)
        return time.perf_counter() - started

    return run


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args(argv).runs
    baseline, cli, first_recall, exits = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="mcp-bench-") as folder:
        checkout, store = _fixture(Path(folder))
        _server_round_trip(checkout, store)  # warm the bytecode caches and the page cache
        for _ in range(runs):
            baseline.append(_python("import mcp")())
            cli.append(_python("import active_memory.cli.main")())
            answered, exited = _server_round_trip(checkout, store)
            first_recall.append(answered)
            exits.append(exited)

    def row(label: str, values: list[float]) -> str:
        return (f"{label:<54} median {statistics.median(values) * 1000:7.0f} ms"
                f"   fastest {min(values) * 1000:7.0f} ms")  # fmt: skip

    print(f"{runs} runs, {LESSONS} lessons in the store")
    print(row("baseline: python -c 'import mcp'", baseline))
    print(row("python -c 'import active_memory.cli.main'", cli))
    print(row("active-memory mcp: spawn to the first recall's answer", first_recall))
    print(row("active-memory mcp: stdin closed to exit", exits))
    ratio = statistics.median(first_recall) / statistics.median(baseline)
    print(f"ratio, first recall / baseline (medians): {ratio:.2f}")


if __name__ == "__main__":
    main()
