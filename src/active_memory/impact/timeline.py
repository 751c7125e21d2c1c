"""Which revision of each lesson was live when a run started, and the order runs happened in.

Runs are ordered by their first execution's start, then by the store generation their
postmortem published (a run log's ``postmortem`` event, a report's ``generation_after``: two
recorded runs may share a clock), then by id.

A revision entered the store before run S started when the run that published it (the
history's ``run_id``) is a run read here and comes before S; otherwise (an import, a review
approval, an administrator's change, a run not read) when its history time is at or before S's
first execution's start. The latest such revision is the one S's snapshot held: a retirement or
a purge means none. A delivery recorded in S of ``id@revision`` proves that revision was live,
whatever the history says (an imported store's history starts at the import).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise

from active_memory.models.lessons import Scope
from active_memory.models.runs import RunRecord
from active_memory.store.results import HistoryEntry

__all__ = ["CardVersion", "RunSlot", "Timeline", "order_runs"]


@dataclass(frozen=True, slots=True)
class CardVersion:
    """One revision's card as recall reads it (a :class:`~active_memory.recall.card.ScopedCard`)."""

    id: str
    revision: int
    title: str
    recommendation: str
    scope: Scope


@dataclass(frozen=True, slots=True)
class RunSlot:
    """A run's place in the replay: its position and its first execution's start."""

    run_id: str
    position: int
    start_ms: int


def _start_ms(record: RunRecord) -> int:
    return min((e.started_ms for e in record.executions), default=0)


def order_runs(
    records: Iterable[RunRecord], generations: Mapping[str, int]
) -> tuple[list[RunRecord], dict[str, RunSlot]]:
    """The records in replay order, and each run's slot."""
    ordered = sorted(
        records, key=lambda r: (_start_ms(r), generations.get(r.run_id, 1 << 62), r.run_id)
    )
    slots = {r.run_id: RunSlot(r.run_id, i, _start_ms(r)) for i, r in enumerate(ordered)}
    return ordered, slots


def _time_ms(text: str) -> int | None:
    try:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class _Step:
    revision: int
    live: bool  # False: retired or purged from this revision on
    run_id: str
    time_ms: int | None


class Timeline:
    """Every lesson's revisions, and which one was live at each run's start."""

    def __init__(
        self, histories: Mapping[str, Sequence[HistoryEntry]], slots: Mapping[str, RunSlot]
    ) -> None:
        self._slots = slots
        self._starts = [slot.start_ms for slot in sorted(slots.values(), key=lambda s: s.position)]
        self._steps: dict[str, tuple[_Step, ...]] = {}
        self.versions: list[CardVersion] = []
        self.scope_revision: dict[str, int] = {}  # the revision whose scope says "its files"
        self.origin: dict[str, str] = {}  # the run that published revision 1
        for lesson_id, history in histories.items():
            steps = []
            for entry in history:
                steps.append(
                    _Step(entry.revision, entry.op in ("upsert", "revert"), entry.run_id,
                          _time_ms(entry.time))
                )  # fmt: skip
                if entry.draft is not None and entry.op in ("upsert", "revert"):
                    draft = entry.draft
                    self.versions.append(
                        CardVersion(lesson_id, entry.revision, draft.title,
                                    draft.recommendation, draft.scope)
                    )  # fmt: skip
                    self.scope_revision[lesson_id] = entry.revision
            self._steps[lesson_id] = tuple(steps)
            if history:
                self.origin[lesson_id] = history[0].run_id
        # Every lesson with a history here, whether or not a card of it was kept (an imported
        # tombstone has none): asked once per run, so made once.
        self.known: frozenset[str] = frozenset(self._steps)

    def latest(self, lesson_id: str) -> int | None:
        """The lesson's latest revision in its history."""
        steps = self._steps.get(lesson_id, ())
        return steps[-1].revision if steps else None

    def _before(self, step: _Step, slot: RunSlot) -> bool:
        source = self._slots.get(step.run_id)
        if source is not None:
            return source.position < slot.position
        return step.time_ms is not None and step.time_ms <= slot.start_ms

    def live_at(self, lesson_id: str, slot: RunSlot) -> int | None:
        """The revision live when the run started, or None (not yet, or retired)."""
        found: int | None = None
        for step in self._steps.get(lesson_id, ()):
            if self._before(step, slot):
                found = step.revision if step.live else None
        return found

    def _effect(self, step: _Step) -> int:
        """The position of the first run whose start the step precedes (runs are ordered by
        start, so every later run is after it too)."""
        source = self._slots.get(step.run_id)
        if source is not None:
            return source.position + 1
        if step.time_ms is None:
            return len(self._starts)
        return bisect_left(self._starts, step.time_ms)

    def runs_live(self, lesson_id: str) -> int:
        """How many of the runs started while a revision of the lesson was live."""
        steps = self._steps.get(lesson_id, ())
        if not steps:
            return 0
        effects = [self._effect(step) for step in steps]
        if len(steps) == 1:  # the common case: published once, never retired
            return len(self._starts) - effects[0] if steps[0].live else 0
        breaks = sorted({*effects, len(self._starts)})
        count = 0
        for start, end in pairwise(breaks):
            live = False
            for step, effect in zip(steps, effects, strict=True):
                if effect <= start:
                    live = step.live
            count += (end - start) if live else 0
        return count
