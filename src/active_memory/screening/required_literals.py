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

:func:`required_alternatives` goes into groups, branches and repeats as well, for the
instruction detectors (``screening.instructions``): most of them open with a branch of verbs
(``\b(?:ignore|disregard|forget…)``) and hold no single literal, but every match holds one of
the branch's words. Those patterns run over text that is already case-folded, without
IGNORECASE, so their alternatives are compared with the text as it is.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

# The parser and opcodes re.compile itself uses (private to re, stable within a Python minor
# version; the tests below prove the hints against every pattern this Python runs).
parser: Any = importlib.import_module("re._parser")
constants: Any = importlib.import_module("re._constants")

__all__ = [
    "FOLDS",
    "MIN_HINT_CHARS",
    "case_fold",
    "required_alternatives",
    "required_arms",
    "required_literal",
]

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


def required_alternatives(
    pattern: re.Pattern[str], *, folded: bool = False
) -> tuple[str, ...] | None:
    """Literals of which every match of ``pattern`` holds at least one, sorted; None when the
    parse tree proves none (or ``pattern`` ignores case: compare with :func:`required_literal`).

    ``folded``: the literals are lower-cased ASCII, to be looked for in :func:`case_fold` of a text,
    and case-insensitive patterns have them too (a non-ASCII literal proves nothing then).

    A sequence needs each of its parts, so the part with the longest shortest literal is
    chosen (a run of plain characters, lookarounds and anchors in it consuming nothing); a
    branch needs one of its arms, so it needs the union of theirs, and nothing when one arm
    needs nothing; a repeat needs its item when it runs at least once; a character class of
    plain characters needs one of them."""
    if pattern.flags & re.IGNORECASE and not folded:
        return None
    try:
        tree = parser.parse(pattern.pattern, pattern.flags & ~re.UNICODE)
    except (re.error, RecursionError):
        return None
    if tree.state.flags & re.IGNORECASE and not folded:  # an inline (?i) at the start
        return None
    found = _sequence(tree, folded)
    return None if found is None else tuple(sorted(found))


# The characters other than ASCII letters that IGNORECASE matches with an ASCII letter (İ and ı
# with i, ſ with s, the Kelvin sign with k: the test proves the list over all of Unicode).
FOLDS = {0x130: "i", 0x131: "i", 0x17F: "s", 0x212A: "k"}


_FOLDED = tuple(map(chr, FOLDS))


def case_fold(text: str) -> str:
    """``text`` lower-cased, with :data:`FOLDS` mapped first: an ASCII literal a pattern
    matches, in any case its flags allow, appears lower-cased in it."""
    # translate() looks each character up in a dict: only for the rare text that needs it.
    if text.isascii() or not any(char in text for char in _FOLDED):
        return text.lower()
    return text.translate(FOLDS).lower()


def required_arms(pattern: re.Pattern[str]) -> tuple[tuple[tuple[str, ...], ...], ...] | None:
    """For each arm of ``pattern``'s top-level branch (the whole pattern is one arm when it has
    none), the literal sets a match through that arm holds one of *each* of, sorted, the set
    with the longest shortest literal first; None when some arm needs nothing (or ``pattern``
    ignores case).

    Finer than :func:`required_alternatives`, which keeps one set for a sequence and a union
    for a branch: "a verb, then a secret file, then a sink" needs a word of each of the three,
    which a card holding only "lesson" (a sink) lacks."""
    if pattern.flags & re.IGNORECASE:
        return None
    try:
        tree = parser.parse(pattern.pattern, pattern.flags & ~re.UNICODE)
    except (re.error, RecursionError):
        return None
    if tree.state.flags & re.IGNORECASE:
        return None
    items = list(tree)
    *lead, last = items or [(None, None)]
    # The parser moves a prefix every arm shares (\b) in front of the branch; consuming
    # nothing, it leaves each arm's needs as they were.
    zero_width = all(op in (constants.ASSERT, constants.ASSERT_NOT, constants.AT) for op, _ in lead)
    arms = last[1][1] if zero_width and last[0] is constants.BRANCH else [items]
    found: list[tuple[tuple[str, ...], ...]] = []
    for arm in arms:
        needs = sorted(_needs(arm), key=lambda need: (-min(map(len, need)), len(need)))
        if not needs:
            return None
        found.append(tuple(tuple(sorted(need)) for need in dict.fromkeys(needs)))
    return tuple(found)


def _sequence(items: Any, folded: bool = False) -> frozenset[str] | None:
    choices = _needs(items, folded)
    if not choices:
        return None
    return max(choices, key=lambda choice: (min(map(len, choice)), -len(choice)))


def _needs(items: Any, folded: bool = False) -> list[frozenset[str]]:
    """The literal sets a match of the sequence ``items`` holds one of each of."""
    choices: list[frozenset[str]] = []
    run = ""
    for op, argument in items:
        if op is constants.LITERAL and (not folded or argument < 128):
            run += chr(argument).lower() if folded else chr(argument)
            continue
        if op in (constants.ASSERT, constants.ASSERT_NOT, constants.AT):
            continue  # consumes nothing: the characters either side are adjacent in the match
        if run:
            choices.append(frozenset((run,)))
            run = ""
        needed = _node(op, argument, folded)
        if needed is not None:
            choices.append(needed)
    if run:
        choices.append(frozenset((run,)))
    return choices


def _node(op: Any, argument: Any, folded: bool) -> frozenset[str] | None:
    if op is constants.SUBPATTERN:
        _group, add_flags, _del_flags, items = argument
        return None if add_flags & re.IGNORECASE and not folded else _sequence(items, folded)
    if op is constants.ATOMIC_GROUP:
        return _sequence(argument, folded)
    if op is constants.BRANCH:
        union: set[str] = set()
        for arm in argument[1]:
            needed = _sequence(arm, folded)
            if needed is None:
                return None
            union |= needed
        return frozenset(union)
    if op in (constants.MAX_REPEAT, constants.MIN_REPEAT, constants.POSSESSIVE_REPEAT):
        least, _most, item = argument
        return _sequence(item, folded) if least >= 1 else None
    if op is constants.IN and all(kind is constants.LITERAL for kind, _ in argument):
        if not folded:
            return frozenset(chr(value) for _, value in argument)
        if all(value < 128 for _, value in argument):
            return frozenset(chr(value).lower() for _, value in argument)
    return None
