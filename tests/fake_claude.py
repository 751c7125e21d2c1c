"""A fake ``claude`` executable for the Claude Code harness lane's tests (see
:mod:`fake_harness`), and the stream-json replies a ``claude -p`` session prints."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fake_harness import FakeHarness, hang, install_fake_cli

__all__ = [
    "FakeClaude",
    "hang",
    "install_fake_claude",
    "logged_out",
    "max_turns",
    "success",
]

FakeClaude = FakeHarness


def install_fake_claude(
    folder: Path, replies: Sequence[Mapping[str, Any]], *, version: str = "2.1.197 (Claude Code)"
) -> FakeClaude:
    return install_fake_cli(folder, "claude", replies, version=version)


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
    searches: Sequence[tuple[str, Mapping[str, Any]]] = (),
    denied: Sequence[str] = (),
    text: str = "",
    model: str = "claude-sonnet-4-5",
) -> dict[str, Any]:
    """A session that read ``reads`` (absolute paths), made the ``searches`` (a Grep or Glob
    and its input) and tried the ``denied`` tools, then gave
    ``answer`` as its structured output (or only ``text`` when ``answer`` is None)."""
    events: list[dict[str, Any]] = [
        {"type": "system", "subtype": "init", "tools": ["Glob", "Grep", "Read", "StructuredOutput"]}
    ]
    calls = [("Read", {"file_path": path}, False) for path in reads]
    calls += [(name, dict(given), False) for name, given in searches]
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
