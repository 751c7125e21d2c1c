"""A fake ``pi`` executable for the pi harness lane's tests (see :mod:`fake_harness`), and the
``pi -p --mode json`` events a session prints (their shapes as pi 0.73.1 printed them against
the conformance stand-in)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fake_harness import FakeHarness, hang, install_fake_cli

__all__ = ["SESSION", "hang", "install_fake_pi", "model_error", "no_api_key", "success"]

SESSION = "01a241a8-4a92-7544-b8e5-14848380650f"
USAGE = {"input": 900, "output": 60, "cacheRead": 2000, "cacheWrite": 0, "totalTokens": 2960}


def install_fake_pi(
    folder: Path, replies: Sequence[Mapping[str, Any]], *, version: str = "0.73.1"
) -> FakeHarness:
    return install_fake_cli(folder, "pi", replies, version=version)


def _assistant(content: list[dict[str, Any]], stop: str, **extra: Any) -> dict[str, Any]:
    message = {"role": "assistant", "content": content, "provider": "anthropic",
               "model": "claude-sonnet-4-5", "usage": USAGE, "stopReason": stop,
               **extra}  # fmt: skip
    return {"type": "message_end", "message": message}


def success(
    answer: Mapping[str, Any] | str | None,
    *,
    calls: Sequence[tuple[str, Mapping[str, Any], bool]] = (),
    session: str = SESSION,
) -> dict[str, Any]:
    """A session that made ``calls`` (name, arguments, whether it ran; each a model turn of its
    own), then gave ``answer`` as its last message (a mapping as JSON; None: no text)."""
    events: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": session, "cwd": "/"},
        {"type": "agent_start"},
    ]
    for number, (name, arguments, ok) in enumerate(calls):
        call = {"type": "toolCall", "id": f"call_{number}", "name": name,
                "arguments": dict(arguments)}  # fmt: skip
        events.append(_assistant([call], "toolUse"))
        events.append({"type": "tool_execution_start", "toolCallId": f"call_{number}",
                       "toolName": name, "args": dict(arguments)})  # fmt: skip
        said = "x" if ok else f"Tool {name} not found"
        events.append({"type": "tool_execution_end", "toolCallId": f"call_{number}",
                       "toolName": name, "isError": not ok,
                       "result": {"content": [{"type": "text", "text": said}]}})  # fmt: skip
    text = "" if answer is None else answer if isinstance(answer, str) else json.dumps(answer)
    events.append(_assistant([{"type": "text", "text": text}], "stop"))
    events.append({"type": "agent_end", "messages": []})
    return {"events": events}


def no_api_key() -> dict[str, Any]:
    """What pi says with no login or key for the model's provider, exit 1."""
    said = "No API key found for anthropic.\n\nUse /login or set an API key environment variable.\n"
    return {"events": [], "stderr": said, "exit": 1}


def model_error(message: str) -> dict[str, Any]:
    """A session whose model call failed with ``message``."""
    events = [
        {"type": "session", "version": 3, "id": SESSION, "cwd": "/"},
        _assistant([], "error", errorMessage=message),
        {"type": "agent_end", "messages": []},
    ]
    return {"events": events, "exit": 1}
