"""The recall frame: complete cards inside an ``<active_memory>`` block, within a byte budget.

Budget is counted in UTF-8 bytes of the whole text, framing included (a token allows four bytes).
Cards are taken in rank order; one that does not fit is left out and stays eligible for a later
call, while smaller cards after it may still fit. A harness may also cap characters (Claude Code
keeps at most 10,000 characters of ``additionalContext``).

Card text is data, never markup: anything in a title or recommendation that could open, close or
imitate the frame is escaped, and each recommendation is indented under its header so a
recommendation cannot pass for another card.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from active_memory.lessons import Lesson

__all__ = [
    "FRAME_CLOSE",
    "FRAME_NOTE",
    "FRAME_OPEN",
    "Rendering",
    "card_block",
    "escape_card_text",
    "render",
]

FRAME_OPEN = "<active_memory>"
FRAME_CLOSE = "</active_memory>"
FRAME_NOTE = (
    "Previously observed guidance from earlier runs: check it against the current source before "
    "relying on it. Authored instructions take precedence over it."
)
# A less-than sign (ASCII, full-width or small) that would start an active_memory tag.
_TAG = re.compile(r"[<\uff1c\ufe64](?=\s*/?\s*active[_\s-]?memory)", re.IGNORECASE)


def _utf8(text: str) -> int:
    return len(text.encode("utf-8"))


def escape_card_text(text: str) -> str:
    """Neutralise frame look-alikes (``</active_memory>``…) and keep the text on one line."""
    flat = " ".join(text.splitlines())
    return _TAG.sub("&lt;", flat)


def card_block(lesson: Lesson) -> str:
    title = escape_card_text(lesson.title)
    recommendation = escape_card_text(lesson.recommendation)
    return f"[{lesson.key}] {title}\n  {recommendation}\n"


_HEAD = f"{FRAME_OPEN}\n{FRAME_NOTE}\n"
_TAIL = FRAME_CLOSE


@dataclass(frozen=True, slots=True)
class Rendering:
    """The framed text (empty when nothing fits), and which cards it holds or left out."""

    text: str
    delivered: tuple[Lesson, ...]
    left_out: tuple[Lesson, ...]
    budget_bytes: int

    @property
    def used_bytes(self) -> int:
        return _utf8(self.text)


def render(
    lessons: Sequence[Lesson], *, budget_bytes: int, max_chars: int | None = None
) -> Rendering:
    """Frame as many complete cards as fit, in the order given."""
    used_bytes = _utf8(_HEAD) + _utf8(_TAIL)
    used_chars = len(_HEAD) + len(_TAIL)
    blocks: list[str] = []
    delivered: list[Lesson] = []
    left_out: list[Lesson] = []
    for lesson in lessons:
        block = card_block(lesson)
        size, chars = _utf8(block), len(block)
        fits = used_bytes + size <= budget_bytes and (
            max_chars is None or used_chars + chars <= max_chars
        )
        if fits:
            blocks.append(block)
            delivered.append(lesson)
            used_bytes += size
            used_chars += chars
        else:
            left_out.append(lesson)
    text = _HEAD + "".join(blocks) + _TAIL if blocks else ""
    return Rendering(text, tuple(delivered), tuple(left_out), budget_bytes)
