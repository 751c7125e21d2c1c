"""Strings a regular expression may match, read from its parse tree, for the property tests of
the screen's gates (a gate must let through every text its pattern matches).

Every way the pattern can begin is spelled out (each arm of a branch, an optional group taken
and skipped, a repeat at its fewest and one or two more, each letter of a class, a letter and a
non-letter for ``\\w``/``\\S``/``.``); past :data:`VARIED` characters, one short completion is
taken. Lookarounds are not followed: the caller keeps the samples the pattern does match.
"""

from __future__ import annotations

import importlib
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


def samples(source: str) -> list[str]:
    """Up to a few hundred strings spelling every way ``source`` can begin."""
    found: list[str] = []
    _expand(tuple(parser.parse(source)), "", found)
    return list(dict.fromkeys(found))


def _expand(items: tuple[Any, ...], done: str, found: list[str]) -> None:
    if len(found) >= _LIMIT:
        return
    if not items:
        found.append(done)
        return
    (op, argument), rest = items[0], items[1:]
    for chosen in _choices(op, argument, varied=len(done) < VARIED):
        if isinstance(chosen, str):
            _expand(rest, done + chosen, found)
        else:
            _expand((*chosen, *rest), done, found)


def _choices(op: Any, argument: Any, varied: bool) -> list[Any]:
    """What one node may become: text, or a sequence of nodes to expand in its place."""
    if op is constants.LITERAL:
        return [chr(argument)]
    if op is constants.NOT_LITERAL:
        return ["a" if chr(argument) != "a" else "b"]
    if op is constants.ANY:
        return ["a", " "] if varied else ["a"]
    if op is constants.IN:
        chars = _class(argument)
        return chars if varied else chars[:1]
    if op is constants.BRANCH:
        arms = [tuple(arm) for arm in argument[1]]
        return arms if varied else arms[:1]
    if op is constants.SUBPATTERN:
        return [tuple(argument[3])]
    if op is constants.ATOMIC_GROUP:
        return [tuple(argument)]
    if op in (constants.MAX_REPEAT, constants.MIN_REPEAT, constants.POSSESSIVE_REPEAT):
        least, most, item = argument
        counts = range(least, min(most, least + 2) + 1) if varied else (least,)
        return [tuple(item) * count for count in counts]
    return [""]  # lookarounds, anchors, back-references: not spelled out


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
