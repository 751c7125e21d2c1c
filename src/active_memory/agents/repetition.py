"""Whether a model's reply is a loop: the same span written over and over until the token cap.

A small model in a degenerate loop writes one line (or one JSON fragment) again and again until
the turn's output cap stops it. :func:`find_repetition` recognises two shapes, each only when
the repeated span covers at least :data:`MIN_SHARE` of the text and occurs at least
:data:`MIN_REPEATS` times:

- a repeated line: one non-blank line (compared stripped) occurring that often;
- a periodic tail: the text ends in one span repeated back to back (a loop inside one line,
  e.g. ``"exec:1", "exec:1", …``), found in linear time with the prefix function of the
  reversed text (the border of each suffix gives its shortest period).

The session asks only about a reply that ran to its cap: a reply that ended by itself is not a
loop, however repetitive a long list of similar items may look.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

__all__ = ["MIN_REPEATS", "MIN_SHARE", "Repetition", "find_repetition"]

MIN_REPEATS = 8
MIN_SHARE = 0.5
# A loop shows itself at the end of the text: this much of it is examined.
_TAIL_CHARS = 256 * 1024
_PREVIEW_CHARS = 80


@dataclass(frozen=True, slots=True)
class Repetition:
    """The repeated span, how many times it occurs and the share of the text it covers."""

    span: str
    count: int
    share: float

    def describe(self) -> str:
        """One line for a repair turn or a failure: the span, shortened, and its count."""
        shown = self.span.strip() or self.span
        if len(shown) > _PREVIEW_CHARS:
            shown = shown[: _PREVIEW_CHARS - 1] + "…"
        return f"{shown!r} {self.count} times ({self.share:.0%} of the reply)"


def find_repetition(
    text: str, *, min_repeats: int = MIN_REPEATS, min_share: float = MIN_SHARE
) -> Repetition | None:
    """The span ``text`` repeats over most of its length, or None when it does not loop."""
    if not text.strip():
        return None
    return _repeated_line(text, min_repeats, min_share) or _periodic_tail(
        text[-_TAIL_CHARS:], len(text), min_repeats, min_share
    )


def _repeated_line(text: str, min_repeats: int, min_share: float) -> Repetition | None:
    lines = Counter(line.strip() for line in text.splitlines() if line.strip())
    if not lines:
        return None
    line, count = lines.most_common(1)[0]
    # Each occurrence is the line and its line break.
    share = count * (len(line) + 1) / len(text)
    if count >= min_repeats and share >= min_share:
        return Repetition(line, count, min(share, 1.0))
    return None


def _periodic_tail(tail: str, whole: int, min_repeats: int, min_share: float) -> Repetition | None:
    """The longest suffix of ``tail`` made of one span repeated ``min_repeats`` times or more."""
    border = _prefix_function(tail[::-1])
    shortest = max(1, int(min_share * whole))
    for length in range(len(tail), shortest - 1, -1):
        period = length - border[length - 1]
        count = length // period
        if count >= min_repeats and count * period >= shortest:
            suffix = tail[len(tail) - length :]
            return Repetition(suffix[:period], count, count * period / whole)
    return None


def _prefix_function(text: str) -> list[int]:
    """Knuth-Morris-Pratt: for each prefix, the length of its longest proper border."""
    border = [0] * len(text)
    for index in range(1, len(text)):
        length = border[index - 1]
        while length and text[index] != text[length]:
            length = border[length - 1]
        if text[index] == text[length]:
            length += 1
        border[index] = length
    return border
