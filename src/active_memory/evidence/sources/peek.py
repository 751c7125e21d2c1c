"""What a harness's quick look at one session line fills in: the inventory's :class:`Scan`.

Each session source (``evidence/sources/<source_module>.py``) has ``PEEK``, a :data:`Peek` that
reads one line of its harness's session file as :mod:`active_memory.evidence.inventory_scan`
finds it (the first and last 256 KiB of the file), so the inventory knows no harness's format.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = ["Look", "Peek", "Scan", "dig", "text_of"]


@dataclass(slots=True)
class Scan:
    session_id: str | None = None
    cwd: str | None = None
    started: int | None = None
    ended: int | None = None
    models: set[str] = field(default_factory=set)
    conversation: bool = False
    problem: str | None = None

    def saw(self, when: int | None) -> None:
        if when is not None:
            self.started = when if self.started is None else min(self.started, when)
            self.ended = when if self.ended is None else max(self.ended, when)


class Look(NamedTuple):
    """What one line says beyond what :data:`Peek` notes on the scan."""

    model: object = None  # the model the line names, if any
    main: bool = True  # False for a line of a subagent's side conversation (Claude Code's)


# A harness's quick look at one line (``PEEK`` of its session source): it notes the session id
# and working directory on the scan and says what else the line holds.
Peek = Callable[[dict[str, Any], Scan], Look]


def text_of(value: Any) -> str | None:
    """A non-empty string, clipped to 4 KiB; None for anything else."""
    return value[:4096] if isinstance(value, str) and value else None


def dig(value: Any, *keys: str) -> Any:
    """``value[key][key]…``; None as soon as a level is not a dict."""
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value
