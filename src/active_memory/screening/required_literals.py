"""The literal every match of a regular expression must contain: a prefilter proven by the
pattern's own parse tree.

A pattern's top-level sequence is walked (``re._parser``, the parser ``re.compile`` uses); a
run of plain literal characters there is matched by every match, in order. The longest such
ASCII run becomes a hint: a text whose lower-cased form lacks it cannot match, so the pattern
is not run over it (the detect-secrets formats carry no hints of their own, and running 40 of
them over every text costs most of redaction's time).

Sound under case folding: the hint is compared with ``text.lower()``, and ASCII letters are
lowered one for one. Under IGNORECASE a pattern's ``s``, ``i`` and ``k`` also match ``ſ``,
``ı`` and the Kelvin sign, whose lower-case forms are not ASCII, so a run holding any of them
is cut there.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

# The parser and opcodes re.compile itself uses (private to re, stable within a Python minor
# version; the tests below prove the hints against every pattern this Python runs).
parser: Any = importlib.import_module("re._parser")
constants: Any = importlib.import_module("re._constants")

__all__ = ["MIN_HINT_CHARS", "required_literal"]

MIN_HINT_CHARS = 3
# What IGNORECASE lets match a non-ASCII character whose lower-case form is not ASCII.
_FOLDING_LETTERS = frozenset("sik")


def required_literal(pattern: re.Pattern[str]) -> str | None:
    """The longest run of at least :data:`MIN_HINT_CHARS` ASCII characters that every match
    of ``pattern`` contains, lower-cased; None when there is none."""
    try:
        tree = parser.parse(pattern.pattern, pattern.flags & ~re.UNICODE)
    except (re.error, RecursionError):
        return None
    folded = bool(pattern.flags & re.IGNORECASE)
    best, run = "", ""
    for op, argument in tree:
        if op is constants.LITERAL and argument < 128:
            char = chr(argument).lower()
            if not (folded and char in _FOLDING_LETTERS):
                run += char
                best = max(best, run, key=len)
                continue
        elif op in (constants.ASSERT, constants.ASSERT_NOT, constants.AT):
            continue  # a lookaround or an anchor consumes nothing: the run goes on
        run = ""
    return best if len(best) >= MIN_HINT_CHARS else None
