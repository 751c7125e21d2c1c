"""A fake ``codex`` executable for the Codex harness lane's tests (see :mod:`fake_harness`),
and the ``codex exec --json`` events a session prints (their shapes as codex-cli 0.171.0
printed them against the conformance stand-in)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fake_harness import FakeHarness, hang, install_fake_cli

__all__ = ["THREAD", "failed", "hang", "install_fake_codex", "success"]

THREAD = "01a24189-6f7f-7193-b3b0-dce87d8d5e75"
USAGE = {
    "input_tokens": 5900,
    "cached_input_tokens": 4000,
    "cache_write_input_tokens": 0,
    "output_tokens": 120,
    "reasoning_output_tokens": 64,
}


def install_fake_codex(
    folder: Path, replies: Sequence[Mapping[str, Any]], *, version: str = "codex-cli 0.171.0"
) -> FakeHarness:
    return install_fake_cli(folder, "codex", replies, version=version)


def _command(number: int, command: str, output: str, exit_code: int) -> dict[str, Any]:
    status = "completed" if exit_code == 0 else "failed"
    item = {"id": f"item_{number}", "type": "command_execution",
            "command": f"/bin/bash -lc {json.dumps(command)}", "aggregated_output": output,
            "exit_code": exit_code, "status": status}  # fmt: skip
    return {"type": "item.completed", "item": item}


def success(
    answer: Mapping[str, Any] | str | None,
    *,
    commands: Sequence[tuple[str, int]] = (),
    items: Sequence[Mapping[str, Any]] = (),
    thread: str = THREAD,
) -> dict[str, Any]:
    """A session that ran ``commands`` (each with its exit code), made ``items``, then gave
    ``answer`` as its last message (a mapping as JSON; None: no message)."""
    warning = {"id": "item_0", "type": "error", "message": "Model metadata not found."}
    events: list[dict[str, Any]] = [
        {"type": "thread.started", "thread_id": thread},
        {"type": "item.completed", "item": warning},
        {"type": "turn.started"},
    ]
    for number, (command, exit_code) in enumerate(commands, start=1):
        events.append(_command(number, command, "x\n", exit_code))
    events += [{"type": "item.completed", "item": dict(item)} for item in items]
    if answer is not None:
        text = answer if isinstance(answer, str) else json.dumps(answer)
        message = {"id": "item_99", "type": "agent_message", "text": text}
        events.append({"type": "item.completed", "item": message})
    events.append({"type": "turn.completed", "usage": USAGE})
    return {"events": events}


def failed(message: str, *, stderr: str = "", exit_code: int = 1) -> dict[str, Any]:
    """A session whose turn failed with ``message``."""
    events = [
        {"type": "thread.started", "thread_id": THREAD},
        {"type": "turn.started"},
        {"type": "error", "message": message},
        {"type": "turn.failed", "error": {"message": message}},
    ]
    return {"events": events, "stderr": stderr, "exit": exit_code}
