"""The instruction detectors' hints, derived once and kept as package data.

:func:`~active_memory.screening.required_literals.required_alternatives` parses a pattern with
``re._parser`` to prove which literals every match holds; for the ~20 detectors that parse was
about 30 ms of every command that screens a text, paid again in each process. The results are
kept in ``detector_hints.json``, keyed by a digest of each pattern's flags and source, and read
in well under a millisecond, without compiling the patterns.

A pattern whose digest is not in the file (edited since the file was written) is parsed as
before, so a stale file costs time, never a wrong hint.
``tests/screening/test_instruction_hints.py`` checks that the file holds every detector's
hints exactly as the parse gives them; ``tests/screening/rewrite_detector_hints.py`` writes it.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import cache
from importlib import resources

from active_memory.screening.required_literals import required_alternatives

__all__ = ["FILE_NAME", "derive", "hints", "pattern_key"]

FILE_NAME = "detector_hints.json"


def pattern_key(source: str, flags: int = int(re.UNICODE)) -> str:
    """What the file keys a pattern by (its source and flags, ``re.UNICODE`` being what
    ``re.compile`` gives a string without flags): any change to either changes the key."""
    return hashlib.sha256(f"{int(flags)}:{source}".encode()).hexdigest()  # 32, not "re.UNICODE"


@cache
def _table() -> dict[str, tuple[str, ...] | None]:
    text = resources.files("active_memory.screening").joinpath(FILE_NAME).read_text("utf-8")
    return {key: None if found is None else tuple(found) for key, found in json.loads(text).items()}


def hints(source: str) -> tuple[str, ...] | None:
    """``required_alternatives(re.compile(source))``, from the file when it holds the pattern
    (then the pattern is not compiled here)."""
    table = _table()
    key = pattern_key(source)
    return table[key] if key in table else required_alternatives(re.compile(source))


def derive(patterns: list[re.Pattern[str]]) -> dict[str, list[str] | None]:
    """The file's content for ``patterns``, parsed afresh (what the file must equal)."""
    table: dict[str, list[str] | None] = {}
    for pattern in patterns:
        found = required_alternatives(pattern)
        table[pattern_key(pattern.pattern, pattern.flags)] = None if found is None else list(found)
    return table
