"""The words the instruction detectors spell, derived once and kept as package data.

A leetspeak view (:func:`active_memory.screening.normalise.leet_views`) is worth screening
only when a disguised word, folded, is one a detector needs: a hand-made list of such words
missed most of them ("Fr0m now on, you are…", "D0wnload and run…", "Your 4ctual goal is…").
They are read here from each pattern's parse tree (``re._parser``, the parser ``re.compile``
uses): every run of two or more letters ``a``-``z`` in a row, through alternatives and
optional letters, so ``you\\s+are\\s+now`` gives ``you``, ``are`` and ``now``,
``instructions?`` gives ``instruction`` and ``instructions``, ``(?:ba|z)?sh`` gives ``sh``,
``bash`` and ``zsh`` (a word is also matched with a short ending, :func:`spelled_stems`).

Parsing the ~20 detectors costs about 30 ms of CPU a process; the words are kept in
``detector_words.json`` under each pattern's key (as ``detector_hints.json`` keeps their hints)
and a pattern the file does not hold (an edited detector) is parsed, so a stale file costs
time, never a missed word. ``tests/screening/test_leet_words.py`` checks the file;
``tests/screening/rewrite_detector_hints.py`` writes it.
"""

from __future__ import annotations

import importlib
import json
from functools import cache
from importlib import resources
from typing import Any

from active_memory.screening.detector_hints import pattern_key

__all__ = ["ENDING", "FILE_NAME", "STEM", "derive", "spelled_stems", "words"]

FILE_NAME = "detector_words.json"
# A word at least STEM letters long also spells itself with up to ENDING more letters
# ("instruction" -> "instructions", "verif" -> "verifier"); a shorter one only exactly.
STEM = 4
ENDING = 3
# Spellings of one run of letter alternatives kept before its parts are read apart.
_SPELLINGS = 256

parser: Any = importlib.import_module("re._parser")
constants: Any = importlib.import_module("re._constants")


def _spelled(op: Any, argument: Any) -> set[str] | None:
    """What one item spells when it is made of letters only: a letter, a branch or a group of
    letter strings, an optional one (``s?``); None for anything else."""
    if op is constants.LITERAL:
        return {chr(argument)} if "a" <= chr(argument) <= "z" else None
    if op is constants.BRANCH:
        found: set[str] = set()
        for arm in argument[1]:
            spelled = _spelled_all(arm)
            if spelled is None:
                return None
            found |= spelled
        return found
    if op is constants.SUBPATTERN and not argument[1]:
        return _spelled_all(argument[3])
    if op in (constants.MAX_REPEAT, constants.MIN_REPEAT) and argument[:2] == (0, 1):
        inner = _spelled_all(argument[2])
        return None if inner is None else inner | {""}
    return None


def _spelled_all(items: Any) -> set[str] | None:
    found = {""}
    for op, argument in items:
        part = _spelled(op, argument)
        if part is None:
            return None
        found = {head + tail for head in found for tail in part}
        if len(found) > _SPELLINGS:
            return None
    return found


def _runs(items: Any, found: set[str]) -> None:
    """Adds to ``found`` the words of ``items``: letters in a row, through letter alternatives
    and optional letters (``(?:ba|z)?sh``: ``sh``, ``bash``, ``zsh``)."""
    run = {""}
    for op, argument in items:
        part = _spelled(op, argument)
        if part is not None and len(run) * len(part) <= _SPELLINGS:
            run = {head + tail for head in run for tail in part}
            continue
        found.update(word for word in run if len(word) > 1)
        run = {""}
        if part is not None:  # too many spellings in a row: each part on its own
            run = part
        elif op is constants.BRANCH:
            for arm in argument[1]:
                _runs(arm, found)
        elif op is constants.SUBPATTERN:
            _runs(argument[3], found)
        elif op is constants.ATOMIC_GROUP:
            _runs(argument, found)
        elif op in (constants.MAX_REPEAT, constants.MIN_REPEAT, constants.POSSESSIVE_REPEAT):
            _runs(argument[2], found)
        elif op in (constants.ASSERT, constants.ASSERT_NOT):
            _runs(argument[1], found)
    found.update(word for word in run if len(word) > 1)


def parse(source: str) -> frozenset[str]:
    """Every run of two or more literal letters in ``source``'s parse tree."""
    found: set[str] = set()
    _runs(parser.parse(source), found)
    return frozenset(found)


@cache
def _table() -> dict[str, frozenset[str]]:
    text = resources.files("active_memory.screening").joinpath(FILE_NAME).read_text("utf-8")
    return {key: frozenset(found) for key, found in json.loads(text).items()}


def words(source: str) -> frozenset[str]:
    """:func:`parse` of ``source``, from the file when it holds the pattern."""
    table = _table()
    key = pattern_key(source)
    return table[key] if key in table else parse(source)


def spelled_stems(word: str) -> tuple[str, ...]:
    """``word`` and its beginnings that a detector's word may be, as it is spelled with a
    short ending: of at least :data:`STEM` letters and up to :data:`ENDING` letters shorter
    ("instructions" may be "instruction" with an "s", "verifier" "verif" with "ier")."""
    return (word, *(word[:end] for end in range(max(STEM, len(word) - ENDING), len(word))))


def derive(sources: list[str]) -> dict[str, list[str]]:
    """The file's content for ``sources``, parsed afresh (what the file must equal)."""
    return {pattern_key(source): sorted(parse(source)) for source in sources}
