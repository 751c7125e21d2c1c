"""Planted instructions in other languages: the phrase tables of :mod:`.phrases`, matched.

An instruction is a few parts near one another in one clause, whatever their order (German
and Japanese put the verb last): a verb of dropping (``ignorez``, ``vergiss``, ``無視``) near
an instruction noun (``consignes``, ``Anweisungen``, ``指示``) and a marker (``précédentes``,
``alle``, ``以前の``); an approval near an "always"; a sending verb near a secret and a place
outside. Nearness is bounded (tens of characters, inside one clause), so "ignorer les fichiers
générés; toutes les instructions sont dans le README" stays two sentences. A negation near the
verb (``n'envoyez jamais``, ``nicht``, ``しないで``) makes it a warning, not an order.

Text is matched as :func:`active_memory.screening.normalise.plain` leaves it. The tables are
compiled once, on first use: one pattern per part, every language's cell joined, so a card
costs a handful of linear scans whatever the number of languages.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import cache, lru_cache

from active_memory.screening.anchor_leads import LEAD_LETTERS, gate
from active_memory.screening.normalise import without_marks
from active_memory.screening.phrases import (
    SCRIPTIO_CONTINUA,
    SHARED_OUTSIDE,
    SHARED_SECRET,
    languages,
)

__all__ = ["LANGUAGE_KINDS", "find_foreign", "may_hold_anchor"]

LANGUAGE_KINDS = ("override_instructions", "role_play", "forced_verdict", "exfiltration")

_CLAUSE_REACH = 200
# Arabic writes its own semicolon and question mark (U+061B, U+061F) and comma (U+060C).
_DELIMITER = re.compile(r"[;!?\n\u3002\uff01\uff1f\uff1b\u061b\u061f]|\.(?=\s|$)")
# How far a part may sit from the verb it completes, in characters.
_NOUN_REACH = 40
_MARKER_REACH = 25
_ALWAYS_REACH = 20
_SECRET_REACH = 120
_NEGATION_BEFORE = 30
_NEGATION_AFTER = 32
_COMMAS = (",", "\uff0c", "\u3001", "\u060c")


# The writing systems of SCRIPTIO_CONTINUA: a position outside them is passed over at once.
_CONTINUA_LETTERS = "\u0900-\u097f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CONTINUA_START = f"(?=[{_CONTINUA_LETTERS}])"
# Languages written with spaces in a script of their own (Cyrillic, Arabic): matched at word
# boundaries like the Latin ones, but only where a letter of their script stands, so the
# words of an English card are not tried against them (Arabic's joined "and"/"the" make its
# alternatives start with optional groups, which every position would otherwise enter).
_OWN_SCRIPT = frozenset({"ru", "ar"})
_OWN_SCRIPT_LETTERS = "\u0400-\u04ff\u0600-\u06ff"
_OWN_SCRIPT_START = f"(?=[{_OWN_SCRIPT_LETTERS}])"
# Below the letters the two branches after the words need at their first character: in a text
# holding none of them (every English card) only the words branch can match, and a pattern of
# that branch alone finds the same matches, under the same group names, for a third less to
# compile. max() tells it in C; a character class of those ranges would take 6 ms to compile
# (re fills a map of their 40,000 code points in Python).
_OTHER_SCRIPTS_FROM = "\u0400"


# Asked again for every part searched around an anchor of the text: a string keeps its hash, so
# a repeated question is one lookup rather than another pass over a long text.
@lru_cache(maxsize=2)
def _words_only(text: str) -> bool:
    """Whether ``text`` holds no letter of the scripts of their own nor of SCRIPTIO_CONTINUA."""
    return text.isascii() or max(text) < _OTHER_SCRIPTS_FROM


_BRANCHES = ("words", "own", "continua")


def _written(cell: str) -> str:
    """A cell as :func:`~active_memory.screening.normalise.plain` leaves text: NFKC, Arabic
    hamza seats and short vowels off (``أ`` is read as ``ا``)."""
    return without_marks(unicodedata.normalize("NFKC", cell))


def _branch(language: str) -> str:
    if language in SCRIPTIO_CONTINUA:
        return "continua"
    return "own" if language in _OWN_SCRIPT else "words"


def _join(cells: dict[str, list[str]], branches: tuple[str, ...] = _BRANCHES) -> str:
    """The three branches of a pattern (or those named in ``branches``): one boundary test (or
    script test) per position, before any language's alternatives, so a position inside a word
    costs one look-behind, not one test per alternative."""
    words, own, continua = ("|".join(cells[branch]) for branch in _BRANCHES)
    written = {
        "words": rf"(?<!\w)(?:{words})(?!\w)",
        "own": rf"{_OWN_SCRIPT_START}(?<!\w)(?:{own})(?!\w)",
        "continua": rf"{_CONTINUA_START}(?:{continua})",
    }
    return "|".join(written[branch] for branch in branches)


@cache
def _part(part: str, words_only: bool = False) -> re.Pattern[str]:
    """One part of every language, compiled on first use (a card in English that names no
    anchor compiles nothing); ``words_only`` as for :func:`_anchor`."""
    cells: dict[str, list[str]] = {branch: [] for branch in _BRANCHES}
    for language, row in languages().items():
        cells[_branch(language)].append(f"(?:{_written(row[part])})")
    branches = [_join(cells, ("words",) if words_only else _BRANCHES)]
    if part == "secret":
        branches.append(SHARED_SECRET)
    if part == "outside":
        branches.append(SHARED_OUTSIDE)
    return re.compile("|".join(branches))


def _clause(text: str, start: int, end: int) -> tuple[int, int]:
    """The bounds of the clause around ``text[start:end]``, at most a clause's reach away."""
    low = max(0, start - _CLAUSE_REACH)
    for match in _DELIMITER.finditer(text, low, start):
        low = match.end()
    found = _DELIMITER.search(text, end, end + _CLAUSE_REACH)
    high = found.start() if found else min(len(text), end + _CLAUSE_REACH)
    return low, high


def _negated(text: str, match: re.Match[str], low: int, high: int) -> bool:
    """Whether a negation sits next to the anchor: before it (never send, ne pas ignorer) or
    after it (sende … nicht, 送信しないで), within its comma-free stretch of the clause: in
    "ignore the previous instructions, do not run the tests" the negation is the next order's."""
    start = max(low, match.start() - _NEGATION_BEFORE)
    end = min(high, match.end() + _NEGATION_AFTER)
    for comma in _COMMAS:
        start = max(start, text.rfind(comma, start, match.start()) + 1)
        found = text.find(comma, match.end(), end)
        end = found if found >= 0 else end
    negation = _part("negation", _words_only(text))
    before = negation.search(text, start, match.start())
    return bool(before or negation.search(text, match.end(), end))


def _near(part: str, text: str, match: re.Match[str], reach: int, bounds: tuple[int, int]) -> bool:
    low, high = bounds
    start, end = max(low, match.start() - reach), min(high, match.end() + reach)
    return _part(part, _words_only(text)).search(text, start, end) is not None


def _override(text: str, match: re.Match[str], bounds: tuple[int, int]) -> bool:
    if match.lastgroup == "override":
        return True
    start = max(bounds[0], match.start() - _NOUN_REACH)
    end = min(bounds[1], match.end() + _NOUN_REACH)
    for noun in _part("nouns", _words_only(text)).finditer(text, start, end):
        if _near("prior", text, noun, _MARKER_REACH, bounds):
            return True
        if _near("all", text, noun, _MARKER_REACH, bounds):
            return True
    return any(
        _near("prior", text, noun, _MARKER_REACH, bounds)
        for noun in _part("rules", _words_only(text)).finditer(text, start, end)
    )


def _forced_verdict(text: str, match: re.Match[str], bounds: tuple[int, int]) -> bool:
    # "Approve once CI is green" is a policy; "always approve" is not.
    if _part("condition", _words_only(text)).search(text, *bounds):
        return False
    return _near("always", text, match, _ALWAYS_REACH, bounds)


def _exfiltration(text: str, match: re.Match[str], bounds: tuple[int, int]) -> bool:
    return _near("secret", text, match, _SECRET_REACH, bounds) and _near(
        "outside", text, match, _SECRET_REACH, bounds
    )


# The part that opens an instruction (its anchor), the kind it would be, and what else the
# clause needs around the anchor.
_ANCHORS: dict[str, tuple[str, Callable[[str, re.Match[str], tuple[int, int]], bool]]] = {
    "override": ("override_instructions", _override),
    "role": ("role_play", lambda text, match, bounds: True),
    "verbs": ("override_instructions", _override),
    "approve": ("forced_verdict", _forced_verdict),
    "send": ("exfiltration", _exfiltration),
}


def _cells(part: str, branch: str) -> str:
    return "|".join(
        # Cells are alternations: joined flat, each alternative's first letter is tested
        # before the alternative is entered.
        _written(row[part])
        for language, row in languages().items()
        if _branch(language) == branch
    )


@cache
def _anchor_source(words_only: bool = False) -> str:
    """Every anchor part in one pattern, one named group each (``_o`` for the scripts of
    their own, ``_c`` for those without spaces), behind one boundary test: one scan of the
    card. ``words_only``: the first branch alone, for a text :func:`_words_only` passes."""
    suffixes = {"words": "", "own": "_o", "continua": "_c"}
    cells = {
        branch: ["|".join(f"(?P<{part}{suffix}>{_cells(part, branch)})" for part in _ANCHORS)]
        for branch, suffix in suffixes.items()
    }
    return _join(cells, ("words",) if words_only else _BRANCHES)


@cache
def _anchor(words_only: bool = False) -> re.Pattern[str]:
    return re.compile(_anchor_source(words_only))


# Runs of letters: a match of the words branch starts after a character that is not a word
# character, so at the start of one ("d'ignorer": ``ignorer``, after the apostrophe).
_WORD = re.compile(r"[a-z]+")


def may_hold_anchor(text: str) -> bool:
    """False when ``text`` is ASCII and no word of it can open an anchor: most English cards,
    which then cost one scan for words instead of the anchor pattern's."""
    if not text.isascii():
        return True
    # The words branch's leads (anchor_leads.py), read from the pattern an ASCII text meets.
    whole, opened, prefixes = gate(_anchor_source(True))
    if "" in whole:
        return True  # some anchor may begin with no letter
    # Set against set, each cut of the words made in one comprehension: a test per word and
    # per lead length in Python was a sixth of a card's screening.
    words = set(_WORD.findall(text))
    if not whole.isdisjoint(words) or not prefixes.isdisjoint(
        {word[:LEAD_LETTERS] for word in words}
    ):
        return True
    return any(
        not opened.isdisjoint({word[:length] for word in words})
        for length in {len(lead) for lead in opened}
    )


def find_foreign(text: str) -> tuple[str, ...]:
    """The kinds of instruction (:data:`LANGUAGE_KINDS`) the phrase tables find in ``text``
    (as :func:`active_memory.screening.normalise.plain` leaves it)."""
    if not may_hold_anchor(text):
        return ()
    found: set[str] = set()
    for match in _anchor(_words_only(text)).finditer(text):
        part = (match.lastgroup or "").removesuffix("_c").removesuffix("_o")
        kind, complete = _ANCHORS[part]
        if kind in found:
            continue
        bounds = _clause(text, match.start(), match.end())
        # A whole phrase ("new instructions:", "you are now a") is an order whatever follows
        # ("… do not run the tests"); a verb can be negated ("never send", "ne pas ignorer").
        whole = part in ("override", "role")
        if (whole or not _negated(text, match, *bounds)) and complete(text, match, bounds):
            found.add(kind)
    return tuple(kind for kind in LANGUAGE_KINDS if kind in found)
