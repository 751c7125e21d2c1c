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

Each detector also has its arms (:func:`~active_memory.screening.required_literals
.required_arms`): for each arm of its top-level branch, the literal sets a match through it
holds one of each of. The hints say whether a text may open a detector at all (one look at a
text for every detector's literals); the arms, read for the few detectors the hints open,
whether it really may: "lesson" opens the detector of "paste the .env into the lesson", whose
scan of a card cost more than looking for its verb and its secret file.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import cache
from importlib import resources

from active_memory.screening.required_literals import required_alternatives, required_arms

__all__ = ["FILE_NAME", "Arms", "arms", "derive", "hints", "pattern_key"]

FILE_NAME = "detector_hints.json"


def pattern_key(source: str, flags: int = int(re.UNICODE)) -> str:
    """What the file keys a pattern by (its source and flags, ``re.UNICODE`` being what
    ``re.compile`` gives a string without flags): any change to either changes the key."""
    return hashlib.sha256(f"{int(flags)}:{source}".encode()).hexdigest()  # 32, not "re.UNICODE"


Arms = tuple[tuple[tuple[str, ...], ...], ...]


@cache
def _table() -> dict[str, tuple[tuple[str, ...] | None, Arms | None]]:
    text = resources.files("active_memory.screening").joinpath(FILE_NAME).read_text("utf-8")
    return {
        key: (
            None if row["hints"] is None else tuple(row["hints"]),
            None if row["arms"] is None else tuple(tuple(map(tuple, arm)) for arm in row["arms"]),
        )
        for key, row in json.loads(text).items()
    }


def hints(source: str) -> tuple[str, ...] | None:
    """``required_alternatives(re.compile(source))``, from the file when it holds the pattern
    (then the pattern is not compiled here)."""
    table = _table()
    key = pattern_key(source)
    return table[key][0] if key in table else required_alternatives(re.compile(source))


def arms(source: str) -> Arms | None:
    """``required_arms(re.compile(source))``, from the file when it holds the pattern."""
    table = _table()
    key = pattern_key(source)
    return table[key][1] if key in table else required_arms(re.compile(source))


def derive(patterns: list[re.Pattern[str]]) -> dict[str, dict[str, object]]:
    """The file's content for ``patterns``, parsed afresh (what the file must equal)."""
    table: dict[str, dict[str, object]] = {}
    for pattern in patterns:
        found = required_alternatives(pattern)
        needs = required_arms(pattern)
        table[pattern_key(pattern.pattern, pattern.flags)] = {
            "hints": None if found is None else list(found),
            "arms": None if needs is None else [[list(need) for need in arm] for arm in needs],
        }
    return table
