"""The reach of many lessons at once, from the recorded runs alone: what a list shows.

A list row shows how often a lesson was delivered, in how many runs and with which outcomes.
Those come from run records, outcomes and exposure files, never from the store's history, so a
page of lessons costs no history read; the full :class:`LessonLedger` (decisions, admissions)
stays for one lesson's own page.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from active_memory.ledger.build import LedgerIndex, run_reach
from active_memory.ledger.sources import LedgerSources

__all__ = ["LessonReach", "reach_of"]


@dataclass(frozen=True, slots=True)
class LessonReach:
    """Deliveries (in runs and outside them), the runs that delivered it, and how many of
    those ended in each outcome."""

    delivered: int
    runs: tuple[str, ...]
    outcomes: dict[str, int]


def reach_of(ids: Iterable[str], sources: LedgerSources) -> dict[str, LessonReach]:
    """The reach of each of ``ids``; equal to what its ledger counts."""
    index = LedgerIndex(sources)
    found = {}
    for lesson_id in ids:
        reach = run_reach(lesson_id, index)
        outcomes = Counter(run.outcome or "unknown" for run in reach)
        found[lesson_id] = LessonReach(
            delivered=sum(run.deliveries for run in reach)
            + len(index.exposures.get(lesson_id, ())),
            runs=tuple(run.run_id for run in reach),
            outcomes=dict(sorted(outcomes.items())),
        )
    return found
