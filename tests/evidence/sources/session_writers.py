"""Claude Code session lines for generated adversarial files: real field names, synthetic
content, nothing secret. Every helper returns one entry (a dict) or writes a file."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

SESSION = "7d2e9c41-0b5a-4f3e-9a61-2c8d4e6f1a0b"
CWD = "/home/dev/order-service"


def stamp(second: int) -> str:
    return f"2025-11-03T10:{second // 60 % 60:02d}:{second % 60:02d}.000Z"


def entry(kind: str, content: Any, n: int, **extra: Any) -> dict[str, Any]:
    line: dict[str, Any] = {
        "parentUuid": extra.pop("parent", None),
        "isSidechain": extra.pop("sidechain", False),
        "userType": "external",
        "cwd": CWD,
        "sessionId": SESSION,
        "version": "2.0.31",
        "gitBranch": "main",
        "type": kind,
        "uuid": extra.pop("uuid", f"u-{n}"),
        "timestamp": stamp(n),
    }
    role = "user" if kind == "user" else "assistant"
    message: dict[str, Any] = {"role": role, "content": content}
    if kind == "assistant":
        message["model"] = extra.pop("model", "claude-sonnet-4-5-20250929")
    line["message"] = message
    line.update(extra)
    return line


def user(text: Any, n: int, **extra: Any) -> dict[str, Any]:
    return entry("user", text, n, **extra)


def assistant_text(text: str, n: int, **extra: Any) -> dict[str, Any]:
    return entry("assistant", [{"type": "text", "text": text}], n, **extra)


def tool_use(name: str, tool_input: dict[str, Any], n: int, **extra: Any) -> dict[str, Any]:
    block = {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": tool_input}
    return entry("assistant", [block], n, **extra)


def tool_result(text: str, n: int, tool_n: int, **extra: Any) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": f"toolu_{tool_n}", "content": text}
    return entry("user", [block], n, **extra)


def write_lines(path: Path, lines: Iterable[dict[str, Any] | str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for line in lines:
            out.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
    return path


def session_path(folder: Path) -> Path:
    return folder / "project" / f"{SESSION}.jsonl"
