"""A fake harness executable for the harness lanes' tests.

:func:`install_fake_cli` writes a program named like the harness's command into a folder: it
answers ``--version`` with the version it was given, and every other run records what it was
started with (argv, working directory, environment, stdin, and the text of every argument that
names a file: a schema file the lane deletes afterwards) as one JSON line in ``calls.jsonl`` and
then plays the next of its scripted replies: JSON events on stdout, text on stderr, an exit
code, a ``usage_file`` written where ``--usage-output-file`` says, or ``hang`` (it starts a
grandchild, writes both pids to ``pids``, and sleeps: what a deadline must end). The replies
are data, so a test reads exactly what a session would see.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["FakeHarness", "hang", "install_fake_cli"]

_PROGRAM = r"""
import json, os, subprocess, sys, time
here = os.path.dirname(os.path.abspath(__file__))
if sys.argv[1:] == ["--version"]:
    print(open(os.path.join(here, "version")).read())
    sys.exit(0)
calls = os.path.join(here, "calls.jsonl")
count = sum(1 for _ in open(calls)) if os.path.exists(calls) else 0
files = {arg: open(arg).read() for arg in sys.argv[1:] if os.path.isfile(arg)}
record = {"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ),
          "stdin": sys.stdin.read(), "files": files}
with open(calls, "a") as out:
    out.write(json.dumps(record) + "\n")
replies = json.load(open(os.path.join(here, "replies.json")))
reply = replies[min(count, len(replies) - 1)]
if reply.get("hang"):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(os.path.join(here, "pids"), "w") as out:
        out.write(f"{os.getpid()} {child.pid}")
    time.sleep(600)
if reply.get("usage_file") and "--usage-output-file" in sys.argv:
    with open(sys.argv[sys.argv.index("--usage-output-file") + 1], "w") as out:
        json.dump(reply["usage_file"], out)
for event in reply.get("events", []):
    print(json.dumps(event), flush=True)
sys.stderr.write(reply.get("stderr", ""))
sys.exit(reply.get("exit", 0))
"""


@dataclass(frozen=True)
class FakeHarness:
    """The folder holding the fake command: put it first on PATH."""

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


def install_fake_cli(
    folder: Path, command: str, replies: Sequence[Mapping[str, Any]], *, version: str
) -> FakeHarness:
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / command
    program.write_text(f"#!{sys.executable}\n{_PROGRAM}")
    program.chmod(0o755)
    (folder / "version").write_text(version)
    (folder / "replies.json").write_text(json.dumps(list(replies)))
    return FakeHarness(folder)


def hang() -> dict[str, Any]:
    """A run that never ends by itself, with a grandchild: what a deadline must end."""
    return {"hang": True}
