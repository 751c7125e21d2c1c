"""Conformance: learning by itself with the real Claude Code CLI, against the loopback stand-in.

Slow: it starts the pinned ``claude`` from the conformance kit (skipped with npm's reason when it
cannot be installed). ``hooks install --harness claude --project DIR --learn`` writes the
recall hook and the ``SessionEnd`` hook; a real ``claude -p`` session in DIR reads a file and
ends. Its ``SessionEnd`` event queues it and starts the worker detached; the worker reviews it
once on the claude-code lane, whose specialist session is the same real ``claude`` against the
same stand-in (which answers a request offering ``StructuredOutput`` with an empty discovery
answer); ``learn status --json`` then lists the session done. The specialist's own session is
never queued.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from active_memory.lanes import SPECIALIST_SESSION_MARKER
from cli_runner import run_cli
from conformance.harnesses import HARNESSES, PROMPT, Harness, Installed
from conformance.kit import TARGET, make_workspace
from conformance.stand_in import StandIn, ToolCall, tool_names

pytestmark = [pytest.mark.conformance, pytest.mark.slow, pytest.mark.timeout(300)]

ANSWER = {"lessons": []}


@pytest.fixture(params=["claude"])
def harness(request: pytest.FixtureRequest) -> Harness:
    return HARNESSES[request.param]


def _status(store: Path) -> list[dict[str, Any]]:
    result = run_cli(["learn", "status", "--json", "--store", str(store)])
    assert result.exit_code == 0, result.stderr
    sessions: list[dict[str, Any]] = json.loads(result.stdout)["sessions"]
    return sessions


def test_a_real_claude_session_end_is_queued_reviewed_once_and_listed(
    harness: Harness,
    installed: Installed,
    binary: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workspace = make_workspace(tmp_path)
    project = workspace.project
    # A store of its own, empty: only repository discovery has work.
    store = tmp_path / "learn-state" / "lessons.sqlite3"
    home = workspace.home
    target = str(project / TARGET)

    def choose(names: Sequence[str]) -> ToolCall | None:
        if "StructuredOutput" in names:  # a specialist's session: answer at once
            return ToolCall("StructuredOutput", ANSWER)
        return ToolCall("Read", {"file_path": target}) if "Read" in names else None

    with StandIn(choose) as model:
        invocation = harness.invocation(binary, project, home, model.url)
        for name, value in invocation.env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.setenv("PATH", f"{binary.parent}{os.pathsep}{os.environ['PATH']}")
        # The detached worker imports this checkout's package, as the test does.
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in sys.path if p))
        for args in (
            ["learn", "config", "--settle-seconds", "0", "--store", str(store)],
            ["hooks", "install", "--harness", "claude", "--project", str(project), "--learn",
             "--store", str(store)],
        ):  # fmt: skip
            done = run_cli(args)
            assert done.exit_code == 0, done.stdout + done.stderr
        # The kit's own command line, with the session kept (the hook reviews its file).
        argv = [arg for arg in invocation.argv if arg != "--no-session-persistence"]
        assert PROMPT in argv
        ran = subprocess.run(argv, cwd=project, capture_output=True, text=True, timeout=180,
                             env=dict(os.environ))  # fmt: skip
        assert ran.returncode == 0, ran.stdout + ran.stderr
        deadline = time.monotonic() + 180
        sessions = _status(store)
        while time.monotonic() < deadline and not (
            sessions and all(s["state"] in ("done", "failed", "skipped") for s in sessions)
        ):
            time.sleep(0.5)
            sessions = _status(store)
        requests = list(model.requests)
    log = store.parent / "learn" / "worker.log"
    said = log.read_text() if log.exists() else "(no worker log)"
    [session] = sessions  # the specialist's own session was never queued
    assert session["state"] == "done", f"{session}\n{said}"
    assert session["harness"] == "claude"
    assert Path(session["session_file"]).is_relative_to(home / ".claude" / "projects")
    assert session["cwd"] == str(project)
    assert session["digest"] is not None
    assert session["lessons"] == []
    specialist = [r for r in requests if isinstance(r.body, dict)
                  and "StructuredOutput" in tool_names(r.body)]  # fmt: skip
    assert specialist, "the worker's specialist never reached the stand-in"
    assert SPECIALIST_SESSION_MARKER in json.dumps(specialist[0].body["messages"])
    worked = [r for r in requests if isinstance(r.body, dict) and r.reply == "tool_call"
              and "StructuredOutput" not in tool_names(r.body)]  # fmt: skip
    assert worked, "the user's session never asked for its Read"
    # Once per content: a second worker run finds nothing left to do.
    again = run_cli(["learn", "run", "--store", str(store)])
    assert again.stdout == "learn worker: nothing queued; `active-memory learn status` lists them\n"
