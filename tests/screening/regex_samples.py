"""Strings a regular expression may match, read from its parse tree, for the property tests of
the screen's gates (a gate must let through every text its pattern matches).

Every way the pattern can begin is spelled out (each arm of a branch, an optional group taken
and skipped, a repeat at its fewest and one or two more, each letter of a class, a letter and a
non-letter for ``\\w``/``\\S``/``.``); past :data:`VARIED` characters, fewer (two characters
of a class, a gap that may hold a space as one space). Lookarounds are not followed: the
caller keeps the samples the pattern does match.
"""

from __future__ import annotations

import importlib
from collections import deque
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

parser: Any = importlib.import_module("re._parser")
constants: Any = importlib.import_module("re._constants")

VARIED = 12
_LIMIT = 400

# Stand-ins for a category: letters that open or continue a word, and what ends one.
_CATEGORY = {
    constants.CATEGORY_WORD: "ax_9",
    constants.CATEGORY_NOT_WORD: " '-",
    constants.CATEGORY_SPACE: " ",
    constants.CATEGORY_NOT_SPACE: "ax'",
    constants.CATEGORY_DIGIT: "7",
    constants.CATEGORY_NOT_DIGIT: "a ",
}


def samples(source: str, limit: int = _LIMIT) -> list[str]:
    """Up to ``limit`` strings spelling every way ``source`` can begin, and a spread of the ways
    it can go on: the choices are taken in turn (the first string takes every first choice,
    the next ones the second choices...), so a long pattern's later arms are sampled too."""
    return list(dict.fromkeys(islice(_expand(tuple(parser.parse(source)), ""), limit)))


def _expand(items: tuple[Any, ...], done: str) -> Iterator[str]:
    while items:
        (op, argument), items = items[0], items[1:]
        choices = _choices(op, argument, varied=len(done) < VARIED)
        if len(choices) > 1:
            yield from _in_turn(
                _expand((*chosen, *items), done)
                if not isinstance(chosen, str)
                else _expand(items, done + chosen)
                for chosen in choices
            )
            return
        chosen = choices[0]
        if isinstance(chosen, str):
            done += chosen
        else:
            items = (*chosen, *items)
    yield done


def _in_turn(iterators: Iterable[Iterator[str]]) -> Iterator[str]:
    """One from each iterator in turn, until all are done."""
    pending = deque(iterators)
    while pending:
        iterator = pending.popleft()
        for value in iterator:
            yield value
            pending.append(iterator)
            break


def _choices(op: Any, argument: Any, varied: bool) -> list[Any]:
    """What one node may become: text, or a sequence of nodes to expand in its place."""
    if op is constants.LITERAL:
        return [chr(argument)]
    if op is constants.NOT_LITERAL:
        return [char for char in "a " if char != chr(argument)]
    if op is constants.ANY:
        return ["a", " "]
    if op is constants.IN:
        chars = _class(argument)
        return chars if varied else chars[:2]
    if op is constants.BRANCH:
        return [tuple(arm) for arm in argument[1]]
    if op is constants.SUBPATTERN:
        return [tuple(argument[3])]
    if op is constants.ATOMIC_GROUP:
        return [tuple(argument)]
    if op in (constants.MAX_REPEAT, constants.MIN_REPEAT, constants.POSSESSIVE_REPEAT):
        least, most, item = argument
        if not varied and most >= 1 and _holds_a_space(item):
            return [" " * max(least, 1)]  # a gap between words, past the varied beginning
        counts = range(least, min(most, least + 2) + 1)
        return [tuple(item) * count for count in counts]
    return [""]  # lookarounds, anchors, back-references: not spelled out


def _holds_a_space(item: Any) -> bool:
    if len(item) != 1:
        return False
    op, argument = item[0]
    if op is constants.NOT_LITERAL:  # [^.]
        return argument != ord(" ")
    return op is constants.ANY or (op is constants.IN and " " in _class(argument))


def _class(members: Any) -> list[str]:
    if any(kind is constants.NEGATE for kind, _ in members):
        return ["a", " ", "7"]  # a class that leaves most characters in
    chars: list[str] = []
    for kind, value in members:
        if kind is constants.LITERAL:
            chars.append(chr(value))
        elif kind is constants.RANGE:
            chars += sorted({chr(value[0]), chr(value[1])})
        elif kind is constants.CATEGORY:
            chars += _CATEGORY.get(value, "a")
    return chars
