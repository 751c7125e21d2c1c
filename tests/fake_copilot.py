"""A fake ``copilot`` executable for the Copilot CLI harness lane's tests (see
:mod:`fake_harness`), and the ``copilot --output-format json`` events a session prints (their
shapes as Copilot CLI 1.0.102 printed them against the conformance stand-in). The fake writes
the usage file the lane asks for (``--usage-output-file``) when a reply names ``usage_file``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fake_harness import FakeHarness, hang, install_fake_cli

__all__ = ["SESSION", "USAGE_FILE", "failed", "hang", "install_fake_copilot", "success"]

VERSION = "GitHub Copilot CLI 1.0.102."
SESSION = "61acfe32-8582-4339-a211-433fd94e53d7"
USAGE_FILE = {
    "modelMetrics": {
        "gpt-5.4": {
            "requests": {"count": 2, "cost": 0},
            "usage": {"inputTokens": 5900, "outputTokens": 120, "cacheReadTokens": 4000,
                      "cacheWriteTokens": 0},
        }
    },
    "currentModel": "gpt-5.4",
}  # fmt: skip


def install_fake_copilot(
    folder: Path,
    replies: Sequence[Mapping[str, Any]],
    *,
    version: str = "GitHub Copilot CLI 1.0.102.",
) -> FakeHarness:
    return install_fake_cli(folder, "copilot", replies, version=version)


def _call(number: int, name: str, arguments: Mapping[str, Any], ok: bool) -> list[dict[str, Any]]:
    call_id = f"call_{number}"
    request = {
        "toolCallId": call_id,
        "name": name,
        "arguments": dict(arguments),
        "type": "function",
    }
    message = {
        "type": "assistant.message",
        "data": {"content": "", "toolRequests": [request], "model": "gpt-5.4"},
    }
    done: dict[str, Any] = {"toolCallId": call_id, "success": ok}
    if ok:
        done["result"] = {"content": "x"}
    else:
        done["error"] = {"message": f"Tool '{name}' does not exist.", "code": "failure"}
    return [message, {"type": "tool.execution_start", "data": {"toolCallId": call_id,
             "toolName": name}}, {"type": "tool.execution_complete", "data": done}]  # fmt: skip


def success(
    answer: Mapping[str, Any] | str | None,
    *,
    calls: Sequence[tuple[str, Mapping[str, Any], bool]] = (),
    session: str = SESSION,
) -> dict[str, Any]:
    """A session that made ``calls`` (name, arguments, whether it ran), then gave ``answer`` as
    its last message (a mapping as JSON; None: an empty message)."""
    events: list[dict[str, Any]] = [
        {"type": "session.info", "data": {"infoType": "configuration"}, "ephemeral": True},
        {"type": "user.message", "data": {"content": "…"}},
    ]
    for number, (name, arguments, ok) in enumerate(calls):
        events += _call(number, name, arguments, ok)
    text = "" if answer is None else answer if isinstance(answer, str) else json.dumps(answer)
    events.append({"type": "assistant.message",
                   "data": {"content": text, "toolRequests": [], "model": "gpt-5.4"}})  # fmt: skip
    events.append({"type": "result", "sessionId": session, "exitCode": 0,
                   "usage": {"premiumRequests": 1}})  # fmt: skip
    return {"events": events, "usage_file": USAGE_FILE}


def failed(message: str, *, stderr: str = "", exit_code: int = 1) -> dict[str, Any]:
    """A session that ended with ``message`` as its error."""
    events = [
        {"type": "session.error", "data": {"errorType": "authentication", "message": message}},
        {"type": "result", "sessionId": SESSION, "exitCode": exit_code},
    ]
    return {"events": events, "stderr": stderr, "exit": exit_code}
