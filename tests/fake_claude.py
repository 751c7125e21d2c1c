"""A fake ``claude`` executable for the Claude Code harness lane's tests.

:func:`install_fake_claude` writes a program named ``claude`` into a folder: it answers
``--version`` with the version it was given, and every other run records what it was started
with (argv, working directory, environment, stdin) as one JSON line in ``calls.jsonl`` and then
plays the next of its scripted replies: stream-json events on stdout, text on stderr, an exit
code, or ``hang`` (it starts a grandchild, writes both pids to ``pids``, and sleeps: what a
deadline must end). The replies are data, so a test reads exactly what a session would see.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "FakeClaude",
    "hang",
    "install_fake_claude",
    "logged_out",
    "max_turns",
    "success",
]

_PROGRAM = r"""
import json, os, subprocess, sys, time
here = os.path.dirname(os.path.abspath(__file__))
if sys.argv[1:] == ["--version"]:
    print(open(os.path.join(here, "version")).read())
    sys.exit(0)
calls = os.path.join(here, "calls.jsonl")
count = sum(1 for _ in open(calls)) if os.path.exists(calls) else 0
record = {"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ),
          "stdin": sys.stdin.read()}
with open(calls, "a") as out:
    out.write(json.dumps(record) + "\n")
replies = json.load(open(os.path.join(here, "replies.json")))
reply = replies[min(count, len(replies) - 1)]
if reply.get("hang"):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(os.path.join(here, "pids"), "w") as out:
        out.write(f"{os.getpid()} {child.pid}")
    time.sleep(600)
for event in reply.get("events", []):
    print(json.dumps(event), flush=True)
sys.stderr.write(reply.get("stderr", ""))
sys.exit(reply.get("exit", 0))
"""


@dataclass(frozen=True)
class FakeClaude:
    """The folder holding the fake ``claude``: put it first on PATH."""

    folder: Path

    @property
    def path(self) -> str:
        return f"{self.folder}{os.pathsep}{os.environ.get('PATH', os.defpath)}"

    def calls(self) -> list[dict[str, Any]]:
        log = self.folder / "calls.jsonl"
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]

    def pids(self) -> tuple[int, int]:
        leader, child = (self.folder / "pids").read_text().split()
        return int(leader), int(child)


def install_fake_claude(
    folder: Path, replies: Sequence[Mapping[str, Any]], *, version: str = "2.1.197 (Claude Code)"
) -> FakeClaude:
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "claude"
    program.write_text(f"#!{sys.executable}\n{_PROGRAM}")
    program.chmod(0o755)
    (folder / "version").write_text(version)
    (folder / "replies.json").write_text(json.dumps(list(replies)))
    return FakeClaude(folder)


_USAGE = {
    "input_tokens": 900,
    "cache_creation_input_tokens": 1000,
    "cache_read_input_tokens": 4000,
    "output_tokens": 120,
}


def success(
    answer: Mapping[str, Any] | None,
    *,
    reads: Sequence[str] = (),
    denied: Sequence[str] = (),
    text: str = "",
    model: str = "claude-sonnet-4-5",
) -> dict[str, Any]:
    """A session that read ``reads`` (absolute paths), tried the ``denied`` tools, then gave
    ``answer`` as its structured output (or only ``text`` when ``answer`` is None)."""
    events: list[dict[str, Any]] = [
        {"type": "system", "subtype": "init", "tools": ["Glob", "Grep", "Read", "StructuredOutput"]}
    ]
    calls = [("Read", {"file_path": path}, False) for path in reads]
    calls += [(name, {"command": "touch x"}, True) for name in denied]
    for number, (name, given, refused) in enumerate(calls):
        call_id = f"toolu_{number}"
        events.append({"type": "assistant", "message": {"model": model, "content": [
            {"type": "tool_use", "id": call_id, "name": name, "input": given}]}})  # fmt: skip
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": "x"}
        if refused:
            result["is_error"] = True
        events.append({"type": "user", "message": {"content": [result]}})
    final: dict[str, Any] = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": text if answer is None else json.dumps(answer),
        "usage": _USAGE,
        "num_turns": len(calls) + 1,
    }
    if answer is not None:
        final["structured_output"] = answer
    return {"events": [*events, final]}


def logged_out() -> dict[str, Any]:
    """What ``claude -p`` prints when nobody is logged in (seen with 2.1.197), exit 1."""
    result = {"type": "result", "subtype": "success", "is_error": True,
              "result": "Not logged in · Please run /login", "usage": {}}  # fmt: skip
    return {"events": [result], "exit": 1}


def max_turns() -> dict[str, Any]:
    result = {"type": "result", "subtype": "error_max_turns", "is_error": True, "usage": _USAGE}
    return {"events": [result], "exit": 1}


def hang() -> dict[str, Any]:
    return {"hang": True}
