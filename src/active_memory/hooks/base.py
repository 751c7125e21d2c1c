"""What every harness adapter provides: read a hook payload, write a hook answer.

Adapters are pure functions over plain JSON values. They never raise on a malformed payload:
``parse`` returns None and the caller answers with the harness's empty answer, because an
erroring hook can block or deny the tool call it was meant to inform.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from active_memory.recall.signals import ToolCall

__all__ = ["EMPTY", "Harness", "ParsedCall", "text_field"]

EMPTY: dict[str, Any] = {}


@dataclass(frozen=True, slots=True)
class ParsedCall:
    """A hook payload read as a tool call, with the harness's own session id when it has one."""

    call: ToolCall
    session_id: str | None = None


@dataclass(frozen=True, slots=True)
class Harness:
    """One harness: its name, payload reader, answer writer and context size cap (characters)."""

    name: str
    parse: Callable[[Any], ParsedCall | None]
    answer: Callable[[str], dict[str, Any]]
    max_chars: int | None = None


def text_field(payload: Mapping[str, Any], *names: str) -> str | None:
    """The first of ``names`` holding a non-empty string."""
    for name in names:
        value = payload.get(name)
        if isinstance(value, str) and value:
            return value
    return None
