"""Which of a fixed set of literals a text holds: the look the gates in front of the detectors
and the credential formats take at every text (about 300 and 150 literals).

A substring test per literal costs a C call each, about a fifth of a card's screening once the
scans were gated. One pattern of every literal, tried at each position (``(?=(...))``, the
longest first, grouped by their first character), finds the longest literal opening there;
every literal a text holds is a prefix of such a longest one at its own position, so the
literals found and their prefixes among the set are exactly those the substring tests find, in
about a third of the time. Compiling that pattern costs a few milliseconds, more than a
process's first cards would save: it is compiled once :data:`COMPILE_AFTER` texts have been
looked at the plain way (a command screening one card never pays it; a service or an import
does once).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["COMPILE_AFTER", "HintTable", "LiteralScan"]

# Texts looked at with substring tests before the pattern is compiled: about what the compile
# costs, in texts (about 4 ms of CPU over the two gates, each look saving 4 to 12 µs).
COMPILE_AFTER = 256


def _source(literals: Iterable[str]) -> str:
    by_first: dict[str, list[str]] = {}
    for literal in sorted(literals, key=len, reverse=True):  # longest first at each position
        by_first.setdefault(literal[0], []).append(re.escape(literal[1:]))
    arms = (f"{re.escape(first)}(?:{'|'.join(rests)})" for first, rests in by_first.items())
    return f"(?=({'|'.join(arms)}))"


class LiteralScan:
    """:meth:`present`: the members of ``literals`` a text holds (substring tests, then one
    pattern)."""

    __slots__ = ("_looks", "_pattern", "_prefixes", "literals")

    def __init__(self, literals: Iterable[str]) -> None:
        self.literals = tuple(literals)
        self._looks = 0
        self._pattern: re.Pattern[str] | None = None
        self._prefixes: dict[str, frozenset[str]] = {}

    def present(self, text: str) -> frozenset[str]:
        pattern = self._pattern
        if pattern is None:
            self._looks += 1
            if self._looks <= COMPILE_AFTER or "" in self.literals or not self.literals:
                # filter() runs the substring tests without a Python step per literal.
                return frozenset(filter(text.__contains__, self.literals))
            pattern = self._compile()
        prefixes = self._prefixes
        return frozenset().union(*map(prefixes.__getitem__, set(pattern.findall(text))))

    def _compile(self) -> re.Pattern[str]:
        known = set(self.literals)
        self._prefixes = {
            literal: frozenset(
                literal[:end] for end in range(1, len(literal) + 1) if literal[:end] in known
            )
            for literal in known
        }
        self._pattern = re.compile(_source(known))
        return self._pattern


class HintTable:
    """Which entries of a table (detectors, credential formats) a text may match, from the
    literals it holds: ``hints`` gives, per entry, the literals one of which each of its
    matches holds, or None (it may match any text).

    The entries a text opens are a union over the few literals it holds, in table order,
    rather than a test of each entry's hints in turn (a card holds a handful of them)."""

    __slots__ = ("_opens", "_unhinted", "literals", "scan")

    def __init__(self, hints: Iterable[Iterable[str] | None]) -> None:
        opens: dict[str, list[int]] = {}
        unhinted: list[int] = []
        for index, hint in enumerate(hints):
            if hint is None:
                unhinted.append(index)
            for literal in hint or ():
                opens.setdefault(literal, []).append(index)
        self._opens = {literal: tuple(found) for literal, found in opens.items()}
        self._unhinted = tuple(unhinted)
        self.literals = tuple(sorted(opens))  # every entry's, once
        self.scan = LiteralScan(self.literals)

    def present(self, text: str) -> frozenset[str]:
        """The literals ``text`` holds."""
        return self.scan.present(text)

    def candidates(self, present: frozenset[str]) -> list[int]:
        """The entries (numbers) a text holding the literals ``present`` may match, in order."""
        opened = set(self._unhinted)
        for literal in present:
            opened.update(self._opens.get(literal, ()))
        return sorted(opened)
