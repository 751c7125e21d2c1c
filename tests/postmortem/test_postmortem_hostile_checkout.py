"""A FIFO planted in a real git checkout: the postmortem process ends by its deadline anyway.

Each case runs the postmortem in its own process, because what is tested is that the process
exits: a worker thread stuck in ``open()`` on a FIFO used to hold it for good after the deadline
had fired (asyncio.run and the interpreter both wait for executor threads).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from postmortem.postmortem_kit import first_run

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs"),
]

SRC = Path(__file__).resolve().parents[2] / "src"

SCRIPT = """
import asyncio, json, sys
from pathlib import Path

from active_memory.agents.tools import Toolbox
from active_memory.models.config import ActiveMemoryConfig, PostmortemConfig, RuntimeConfig
from active_memory.models.runs import load_run_record
from active_memory.postmortem.entry import run_postmortem, sequential_ids
from active_memory.postmortem.options import PostmortemOptions
from active_memory.store.sqlite import SqliteStore
from active_memory.testing import ScriptedProvider, answer_response, tool_call, tool_calls_response

folder, state, mode, timeout_ms = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
fifo = folder / "checkout" / "trap.fifo"
if mode == "blocking":
    # A tool as it was before: a plain open, which waits for a FIFO's writer for ever.
    def blocking_dispatch(self, name, arguments, deadline):
        with open(fifo, "rb") as handle:
            return handle.read().decode()

    Toolbox._dispatch = blocking_dispatch

seen = []


async def respond(request):
    labels = request.labels
    if labels.turn == 1:
        return tool_calls_response(
            tool_call("read_file", {"root": "repository", "path": "trap.fifo", "offset": None,
                                    "limit": None}, id="c1"),
            tool_call("search_text", {"root": "repository", "pattern": "import", "path": None,
                                      "regex": False, "max_matches": None}, id="c2"),
        )
    seen.append([m.content for m in request.messages if hasattr(m, "call_id")])
    return answer_response({"lessons": []})


config = RuntimeConfig(
    active_memory=ActiveMemoryConfig(repository=True, graph=True),
    postmortem=PostmortemConfig(enabled=True, timeout_ms=int(timeout_ms)),
)
with SqliteStore(state / "lessons.sqlite3") as store:
    report = asyncio.run(run_postmortem(load_run_record(folder), PostmortemOptions(
        config=config, backend=store, private_dir=state / "evidence",
        provider=ScriptedProvider(respond), new_id=sequential_ids(),
    )))
print(json.dumps({"status": report.status,
                  "specialists": {s.specialist: s.status for s in report.specialists},
                  "tool_results": seen}))
"""


def _run(tmp_path: Path, mode: str, timeout_ms: int) -> dict[str, object]:
    folder, _ = first_run(tmp_path)
    os.mkfifo(folder / "checkout" / "trap.fifo")
    state = tmp_path / "state"
    state.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(folder), str(state), mode, str(timeout_ms)],
        capture_output=True,
        text=True,
        timeout=90,  # the hang this guards against lasted for ever
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_the_checkout_tools_refuse_a_fifo_and_the_review_completes(tmp_path: Path) -> None:
    result = _run(tmp_path, "tools", 60_000)

    assert result["status"] != "timed_out"
    texts = [text for results in result["tool_results"] for text in results]  # type: ignore[attr-defined]
    assert any("'trap.fifo' is not a file in repository" in text for text in texts), texts
    # The search walked past the FIFO instead of opening it, and still found the real files.
    assert any("match(es)" in text and "repository:" in text for text in texts), texts


@pytest.mark.slow
def test_a_worker_thread_stuck_opening_a_fifo_does_not_keep_the_process_past_its_deadline(
    tmp_path: Path,
) -> None:
    """Slow: it waits out a 2 s postmortem deadline, in a process of its own."""
    result = _run(tmp_path, "blocking", 2_000)

    assert result["status"] == "timed_out"
    assert "timed_out" in result["specialists"].values()  # type: ignore[attr-defined]
