"""The gate in front of the instruction detectors: which of them a text may match, from the
literals it holds, so that a card pays for the few patterns its words call for.

Per detector, :class:`Gate` holds its hints (``detector_hints.hints``: literals one of which
every match holds) and its arms (``detector_hints.arms``: per arm of the pattern, sets one of
whose literals each match through that arm holds). Both are proven on the pattern's parse tree
(:mod:`active_memory.screening.required_literals`), so a text the gate turns away has no
match: the gate changes what a screen costs, never what it finds
(``tests/screening/test_instruction_hints.py`` screens the corpus with and without it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from active_memory.screening.detector_hints import Arms
from active_memory.screening.literal_scan import HintTable

__all__ = ["Gate"]


@dataclass(frozen=True, slots=True)
class Gate:
    """Which detectors may match a text, from one look at it.

    Per detector, ``hints`` holds the literals one of which each of its matches holds (proven
    on the pattern's parse tree, ``screening.required_literals``), or None: a text holding
    none of them is not scanned by it. Most cards hold none of most detectors' words, and the
    scans were most of a publication's screening time. A detector the hints let through is
    scanned only when the text also holds what one of its arms needs (:meth:`opens`): a sink
    word such as "log" or "lesson" alone opened the costliest detector for most cards."""

    hints: tuple[frozenset[str] | None, ...]
    # Per detector, its arms (``detector_hints.arms``), or None: read only for the detectors a
    # text's literals open, since most texts open none.
    arms: tuple[Arms | None, ...] = ()
    # Which detectors each literal opens (a union over a text's literals, not a test of
    # each detector's hints in turn).
    _table: HintTable = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_table", HintTable(self.hints))

    @property
    def literals(self) -> tuple[str, ...]:
        """Every detector's literals, once (about 300)."""
        return self._table.literals

    def present(self, folded: str, only: frozenset[int] | None = None) -> frozenset[str]:
        """The literals ``folded`` holds: every detector's, or those of the detectors ``only``
        numbers (a leet view read by a few detectors tests their few literals)."""
        if only is not None:
            return frozenset(
                literal
                for index in only
                for literal in self.hints[index] or ()
                if literal in folded
            )
        return self._table.present(folded)

    def may_match(self, index: int, present: frozenset[str]) -> bool:
        hint = self.hints[index]
        return hint is None or not hint.isdisjoint(present)

    def opens(self, index: int, folded: str, seen: dict[tuple[str, ...], bool]) -> bool:
        """Whether ``folded`` holds a literal of each set of one of detector ``index``'s arms
        (``seen``: the sets looked for already in this text; arms and detectors share many)."""
        arms = self.arms[index] if self.arms else None
        if arms is None:
            return True
        for arm in arms:
            for need in arm:
                hit = seen.get(need)
                if hit is None:
                    hit = seen[need] = any(map(folded.__contains__, need))
                if not hit:
                    break
            else:
                return True
        return False

    def candidates(self, present: frozenset[str]) -> list[int]:
        """The detectors that may match a text holding the literals ``present`` (those
        :meth:`may_match` lets through), in detector order."""
        return self._table.candidates(present)
