"""The words a match of the phrase anchors can begin with: the gate of an ASCII text.

:func:`active_memory.screening.languages.may_hold_anchor` lets a text reach the anchor pattern
only when one of its words may open an anchor. Which words those are is read here from the
pattern's own parse tree (``re._parser``, the parser ``re.compile`` uses), every way its
alternatives can begin: an optional group (``(?:mulai )?sekarang`` begins with ``mulai`` or
with ``sekarang``), a quantified first atom (``ignore[rz]?``), nested groups and branches,
character classes. A gate read from the pattern's text by hand missed the words after an
optional group, and a planted instruction went unscreened.

A match starts after a character that is not a word character (the anchor's ``(?<!\\w)``), so
in an ASCII text its first letters are the start of a run of letters ``[a-z]+``: a lead is the
letters every match of one path starts with (at most :data:`LEAD_LETTERS`, the rest is not told
apart), and whether the run may go on past it (``sube\\w{0,2}`` matches ``subelo``). A path
that may begin with no letter gives the empty lead, which lets every text through; a path that
needs a letter outside ASCII gives none (an ASCII text cannot match it); what the walk cannot
read (a back-reference, ``.``) leaves the run open. Every approximation lets more through.

Parsing the anchors and walking their beginnings costs about 16 ms of CPU, which every
process's first screen would pay: the leads are kept in ``anchor_leads.json`` under the
pattern's key (as ``detector_hints.json`` keeps the detectors' hints) and read in about 0.4 ms;
an anchor pattern the file does not hold (an edited table) is parsed, so a stale file costs
time, never a missed anchor.
``tests/screening/test_anchor_leads.py`` checks the file and the leads against every
alternative of the tables; ``tests/screening/rewrite_detector_hints.py`` writes it.
"""

from __future__ import annotations

import importlib
import json
import re
from functools import cache
from importlib import resources
from typing import Any

from active_memory.screening.detector_hints import pattern_key

__all__ = ["FILE_NAME", "LEAD_LETTERS", "Gate", "derive", "gate", "leads"]

FILE_NAME = "anchor_leads.json"
LEAD_LETTERS = 5

parser: Any = importlib.import_module("re._parser")
constants: Any = importlib.import_module("re._constants")

# Steps of one path's walk before it gives up (as an open lead): far above what a table's
# first word takes, it bounds a repeat of something that consumes nothing.
_BUDGET = 64
# A class of more characters than this is read as any letter: spelling out [a-z]{5} would
# take 26 ** 5 paths.
_CLASS_CHARS = 8
# Categories that hold no letter a-z: \W, \s, \d.
_NO_LETTER = (constants.CATEGORY_NOT_WORD, constants.CATEGORY_SPACE, constants.CATEGORY_DIGIT)

Lead = tuple[str, bool]
Gate = tuple[frozenset[str], frozenset[str], frozenset[str]]


def leads(source: str) -> frozenset[Lead]:
    """Every ``(lead, open)`` a match of ``source`` in an ASCII text can begin with."""
    tree = parser.parse(source)
    if tree.state.flags & re.IGNORECASE:
        return frozenset({("", True)})  # an upper-case letter would start another run
    found = _walk(tuple(tree), "", _BUDGET)
    # A lead that begins with an open lead adds nothing: the open one lets its words through.
    opened = [lead for lead, is_open in found if is_open]
    return frozenset(
        (lead, is_open)
        for lead, is_open in found
        if not any(
            lead.startswith(shorter) and (shorter, True) != (lead, is_open) for shorter in opened
        )
    )


def _walk(items: tuple[Any, ...], lead: str, budget: int) -> set[Lead]:
    """The leads of a path that has read ``lead`` and has ``items`` left to match."""
    if not items or budget == 0 or len(lead) >= LEAD_LETTERS:
        return {(lead, True)}  # what follows is not known: the run may go on
    (op, argument), rest = items[0], items[1:]
    budget -= 1
    if op is constants.LITERAL:
        char = chr(argument)
        if "a" <= char <= "z":
            return _walk(rest, lead + char, budget)
        return {(lead, False)} if char.isascii() else set()
    if op is constants.IN:
        return _class(argument, rest, lead, budget)
    if op is constants.BRANCH:
        return {found for arm in argument[1] for found in _walk((*arm, *rest), lead, budget)}
    if op is constants.SUBPATTERN:
        _group, add_flags, _del_flags, inner = argument
        if add_flags & re.IGNORECASE:
            return {("", True)}
        return _walk((*inner, *rest), lead, budget)
    if op is constants.ATOMIC_GROUP:
        return _walk((*argument, *rest), lead, budget)
    if op in (constants.MAX_REPEAT, constants.MIN_REPEAT, constants.POSSESSIVE_REPEAT):
        return _repeat(argument, rest, lead, budget)
    if op is constants.AT:
        if argument is constants.AT_BOUNDARY and lead:
            return {(lead, False)}  # after a letter, \b: no word character follows
        return _walk(rest, lead, budget)
    if op is constants.ASSERT_NOT and lead and _not_a_word_character(argument):
        return {(lead, False)}  # (?!\w)
    if op in (constants.ASSERT, constants.ASSERT_NOT):
        return _walk(rest, lead, budget)  # consumes nothing; the constraint is not needed
    return {(lead, True)}  # ANY, NOT_LITERAL, a back-reference: could be a letter


def _class(members: Any, rest: tuple[Any, ...], lead: str, budget: int) -> set[Lead]:
    """A character class: each of its letters read on, and the run closed when it may hold
    something else (``[rz]``: ``r`` or ``z``; ``\\W``: not a letter; ``\\S``: any letter)."""
    chars: list[str] = []
    other = False  # whether it may match something that is not a letter a-z
    for kind, value in members:
        if kind is constants.LITERAL:
            chars.append(chr(value))
        elif kind is constants.RANGE and value[1] - value[0] < _CLASS_CHARS:
            chars += map(chr, range(value[0], value[1] + 1))
        elif kind is constants.CATEGORY and value in _NO_LETTER:
            other = True
        else:  # a negation or a category that holds letters (\w, \S): any letter may follow
            return {(lead, True)}
    if len(chars) > _CLASS_CHARS:
        return {(lead, True)}
    found = {(lead, False)} if other else set()
    for char in chars:
        found |= _walk(((constants.LITERAL, ord(char)), *rest), lead, budget)
    return found


def _repeat(argument: Any, rest: tuple[Any, ...], lead: str, budget: int) -> set[Lead]:
    least, most, item = argument
    if most == 0:
        return _walk(rest, lead, budget)
    fewer = (constants.MAX_REPEAT, (max(least - 1, 0), _less(most), item))
    once = _walk((*item, fewer, *rest), lead, budget)
    return once if least > 0 else once | _walk(rest, lead, budget)


def _less(most: int) -> int:
    return most if most == constants.MAXREPEAT else most - 1


def _not_a_word_character(argument: Any) -> bool:
    direction, body = argument
    if direction != 1 or len(body) != 1 or body[0][0] is not constants.IN:
        return False
    return list(body[0][1]) == [(constants.CATEGORY, constants.CATEGORY_WORD)]


def derive(source: str) -> dict[str, Any]:
    """What the file holds for the anchor pattern ``source``: its key and its leads."""
    return {
        "key": pattern_key(source),
        "leads": sorted([lead, is_open] for lead, is_open in leads(source)),
    }


@cache
def gate(source: str) -> Gate:
    """The anchor pattern's leads as the gate reads them: whole short words, short words a
    longer word may start with, and the first :data:`LEAD_LETTERS` letters of longer ones
    (the empty lead, when there is one, is among the whole words)."""
    text = resources.files("active_memory.screening").joinpath(FILE_NAME).read_text("utf-8")
    kept = json.loads(text)
    found = (
        {(lead, bool(is_open)) for lead, is_open in kept["leads"]}
        if kept["key"] == pattern_key(source)
        else leads(source)
    )
    short = frozenset(lead for lead, _ in found if len(lead) < LEAD_LETTERS)
    opened = frozenset(lead for lead, is_open in found if is_open and 0 < len(lead) < LEAD_LETTERS)
    # Cut to LEAD_LETTERS: the file's key is the pattern's, not the walk's, so leads kept from
    # a walk that read more letters than this one still open the gate, never close it.
    cut = frozenset(lead[:LEAD_LETTERS] for lead, _ in found if len(lead) >= LEAD_LETTERS)
    return short, opened, cut
