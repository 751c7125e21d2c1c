"""Measure each lesson's impact over recorded runs: :func:`measure_impact`.

For every run, in replay order (:mod:`.timeline`): its failures (:mod:`active_memory.evidence.
failures`), the lessons each failure's tool calls match (a repository lesson's files, folders,
identifiers and keyword groups at its latest revision, through recall's matcher; a graph
lesson's node), whether the record shows the card reached the failing conversation before the
failure, and two replays of the run's calls (:mod:`.replay`): with the store as it was at the
run's start, and as it is now. A lesson *applies* to a run when a call of the run matches it;
the repeat rates count those runs, split by whether the lesson existed and was delivered.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import groupby
from operator import attrgetter
from typing import Protocol, TypeAlias

from active_memory.evidence.failures import (
    Conversation,
    RunFailure,
    conversation_of,
    conversations,
    delivery_position,
    run_failures,
    tool_calls_after,
)
from active_memory.impact.models import (
    FailureImpact,
    ImpactReport,
    ImpactTotals,
    LessonImpact,
    MissReason,
    RepeatRate,
    RunImpact,
)
from active_memory.impact.replay import Placement, Replay, Replayer
from active_memory.impact.timeline import CardVersion, RunSlot, Timeline, order_runs
from active_memory.ledger.build import LedgerStore
from active_memory.ledger.sources import LedgerSources
from active_memory.models.lessons import Lesson
from active_memory.models.runs import Delivery, RunRecord
from active_memory.store.results import HistoryEntry

__all__ = ["ImpactStore", "measure_impact", "measure_sources", "run_generations"]

# (graph hash, node) -> the graph lessons placed there, with their repository qualifier
_GraphPlaces: TypeAlias = Mapping[tuple[str, str], list[tuple[str, str | None]]]


@dataclass(slots=True)
class _Tally:
    """What one lesson accumulates over the runs."""

    deliveries: int = 0
    delivered_runs: list[int] = field(default_factory=list)
    failures: list[tuple[int, FailureImpact]] = field(default_factory=list)
    runs: list[RunImpact] = field(default_factory=list)
    rates: dict[str, list[int]] = field(default_factory=dict)  # group -> [runs, failed]

    def count(self, group: str, failed: bool) -> None:
        runs_failed = self.rates.setdefault(group, [0, 0])
        runs_failed[0] += 1
        runs_failed[1] += int(failed)


def _rate(tally: _Tally | None, group: str) -> RepeatRate:
    runs, failed = tally.rates.get(group, [0, 0]) if tally is not None else [0, 0]
    return _repeat_rate(runs, failed)


@lru_cache(maxsize=4096)
def _repeat_rate(runs: int, failed: int) -> RepeatRate:
    """One frozen RepeatRate per count pair, shared: 10,000 lessons need 30,000 of them, most
    alike. Built from counts this module made: validated by construction (validation was a
    tenth of the command's time)."""
    return RepeatRate.model_construct(runs=runs, failed=failed)


class _Run:
    """One run's facts the lessons share: its failures, recorded deliveries and placements."""

    def __init__(
        self, record: RunRecord, slot: RunSlot, replay: Replay, timeline: Timeline
    ) -> None:
        self.record, self.slot, self.replay = record, slot, replay
        self.failures = run_failures(record)
        self.calls = conversations(record)
        owner = {e.id: conversation_of(e) for e in record.executions}
        self.recorded: dict[tuple[str, str], list[Delivery]] = {}
        for delivery in record.deliveries:
            conversation = owner.get(delivery.execution or "", delivery.conversation_id)
            self.recorded.setdefault((conversation, delivery.lesson_id), []).append(delivery)
        self.delivered_ids = {lesson_id for _, lesson_id in self.recorded}
        self.delivery_counts = Counter(d.lesson_id for d in record.deliveries)
        self.proven = {(d.lesson_id, d.revision) for d in record.deliveries}
        self._timeline = timeline
        self._then: dict[str, int | None] = {}

    def live_then(self, lesson_id: str) -> int | None:
        if lesson_id not in self._then:
            revision = self._timeline.live_at(lesson_id, self.slot)
            proven = [r for (i, r) in self.proven if i == lesson_id]
            if proven and revision not in proven:
                revision = max(proven)  # the record shows what the snapshot held
            self._then[lesson_id] = revision
        return self._then[lesson_id]


def _applies(versions: Iterable[CardVersion], scope_revision: Mapping[str, int]) -> set[str]:
    return {v.id for v in versions if scope_revision.get(v.id) == v.revision}


def _failure_lessons(
    run: _Run, failure: RunFailure, timeline: Timeline, graph: _GraphPlaces
) -> set[str]:
    """The lessons a failure is on: matched by one of its calls, or guiding its node."""
    found: set[str] = set()
    for receipt in failure.receipts:
        found |= _applies(run.replay.matches.get(receipt.seq, ()), timeline.scope_revision)
    found.update(_graph_lessons(graph, run.record, failure.node_id))
    return found


def _graph_lessons(graph: _GraphPlaces, record: RunRecord, node: str) -> list[str]:
    """The graph lessons of ``node`` in the record's graph: unqualified, or qualified by the
    record's repository (as recall places them)."""
    repository = record.checkout.repository if record.checkout is not None else None
    return [
        lesson_id
        for lesson_id, qualifier in graph.get((record.graph.hash, node), ())
        if qualifier is None or qualifier == repository
    ]


def _impact(
    run: _Run,
    failure: RunFailure,
    lesson_id: str,
    then: Placement,
    today: Placement,
    origin: str | None,
) -> FailureImpact:
    revision = run.live_then(lesson_id)
    calls = run.calls.get(failure.conversation, Conversation((), (), ()))
    before: list[tuple[tuple[int, int], Delivery]] = []
    after = False
    for delivery in run.recorded.get((failure.conversation, lesson_id), ()):
        count = tool_calls_after(delivery, failure, calls)
        if count is None:
            after = True
        else:
            before.append((delivery_position(delivery, calls), delivery))
    first = min(before, key=lambda pair: pair[0])[1] if before else None
    missed: MissReason | None = None
    if first is None:
        if revision is None:
            missed = "before_it_existed"
        elif after:
            missed = "after_the_failure"
        elif lesson_id in run.delivered_ids:
            missed = "other_conversation"
        elif (failure.conversation, lesson_id) in then.cut and not then.before(lesson_id, failure):
            missed = "budget_cut"
        else:
            missed = "not_delivered"
    return FailureImpact(
        run_id=run.record.run_id,
        execution=failure.execution,
        node_id=failure.node_id,
        kind=failure.kind,
        existed=revision is not None,
        learned_here=origin == run.record.run_id,
        delivered=first is not None,
        tool_calls_before=None if first is None else tool_calls_after(first, failure, calls),
        revision=first.revision if first is not None else revision,
        would_then=then.before(lesson_id, failure),
        would_today=today.before(lesson_id, failure),
        missed=missed,
    )


class ImpactStore(LedgerStore, Protocol):
    """What the impact reads of a store: its live lessons and every lesson's history, in one
    read (:meth:`~active_memory.store.admin_backend.AdminBackend.histories`)."""

    def histories(self) -> Iterator[HistoryEntry]: ...


def _histories(store: ImpactStore, ids: Iterable[str]) -> dict[str, tuple[HistoryEntry, ...]]:
    """The histories of ``ids`` (ordered by id); an id without one (purged whole, or outside
    the token's scope) has nothing to replay and is left out."""
    wanted = set(ids)
    return {
        lesson_id: tuple(entries)
        for lesson_id, entries in groupby(store.histories(), key=attrgetter("id"))
        if lesson_id in wanted
    }


def measure_impact(
    store: ImpactStore,
    records: Sequence[RunRecord],
    *,
    generations: Mapping[str, int] | None = None,
    retired: Iterable[str] = (),
    often: int = 3,
) -> ImpactReport:
    """Per lesson of the store (live and ``retired`` ids) and in total, over ``records``."""
    live: dict[str, Lesson] = {lesson.id: lesson for lesson in store.list_lessons()}
    ordered, slots = order_runs(records, generations or {})
    timeline = Timeline(_histories(store, [*live, *retired]), slots)
    replayer = Replayer(timeline.versions)
    graph: dict[tuple[str, str], list[tuple[str, str | None]]] = {}
    for version in timeline.versions:
        scope = version.scope
        if scope.kind == "graph" and timeline.scope_revision.get(version.id) == version.revision:
            key = (scope.graph_hash, scope.node_id)
            graph.setdefault(key, []).append((version.id, scope.repository))
    today = {lesson_id: lesson.revision for lesson_id, lesson in live.items()}
    tallies: dict[str, _Tally] = {}
    failure_count = 0
    for position, record in enumerate(ordered):
        run = _Run(record, slots[record.run_id], replayer.prepare(record), timeline)
        then_place = replayer.place(run.replay, run.live_then)
        today_place = replayer.place(run.replay, today.get)
        failure_count += len(run.failures)
        failing: dict[str, list[RunFailure]] = {}
        for failure in run.failures:
            for lesson_id in _failure_lessons(run, failure, timeline, graph):
                failing.setdefault(lesson_id, []).append(failure)
        applied = set(failing) | run.delivered_ids  # a recorded delivery is recall's own match
        for versions in run.replay.matches.values():
            applied |= _applies(versions, timeline.scope_revision)
        for execution in record.executions:
            applied.update(_graph_lessons(graph, record, execution.node_id))
        for lesson_id in sorted(applied & timeline.known):
            existed = run.live_then(lesson_id) is not None
            delivered = lesson_id in run.delivered_ids
            tally = tallies.setdefault(lesson_id, _Tally())
            deliveries = run.delivery_counts[lesson_id]
            if delivered:
                tally.deliveries += deliveries
                tally.delivered_runs.append(position)
            if lesson_id in applied:
                group = "delivered" if delivered else "not_delivered" if existed else "before"
                tally.count(group, lesson_id in failing)
            impacts = [
                _impact(run, failure, lesson_id, then_place, today_place,
                        timeline.origin.get(lesson_id))
                for failure in failing.get(lesson_id, ())
            ]  # fmt: skip
            tally.failures.extend((position, impact) for impact in impacts)
            tally.runs.append(
                RunImpact.model_construct(
                    run_id=record.run_id,
                    revision=run.live_then(lesson_id),
                    deliveries=deliveries,
                    before_failure=sum(1 for impact in impacts if impact.delivered),
                    applied=lesson_id in applied,
                    failed=bool(impacts),
                )
            )
    return _report(ordered, slots, live, timeline, tallies, failure_count, often)


def _report(
    ordered: Sequence[RunRecord],
    slots: Mapping[str, RunSlot],
    live: Mapping[str, Lesson],
    timeline: Timeline,
    tallies: Mapping[str, _Tally],
    failure_count: int,
    often: int,
) -> ImpactReport:
    lessons: list[LessonImpact] = []
    card = {v.id: v for v in timeline.versions if timeline.scope_revision[v.id] == v.revision}
    for lesson_id in sorted(timeline.known):
        tally = tallies.get(lesson_id)
        version = card.get(lesson_id)  # None: a retired lesson whose cards the store never held
        failures = tuple(impact for _, impact in tally.failures) if tally else ()
        first = tally.delivered_runs[0] if tally and tally.delivered_runs else None
        later = (
            [p for p, impact in tally.failures if first is not None and p >= first] if tally else []
        )
        missed = Counter(f.missed for f in failures if f.missed is not None)
        # a delivery proves the revision it names was live, whatever the history says
        proven = [ordered[p].run_id for p in tally.delivered_runs] if tally else []
        runs_since = timeline.runs_live(lesson_id) + sum(
            1 for run_id in proven if timeline.live_at(lesson_id, slots[run_id]) is None
        )
        lessons.append(
            LessonImpact.model_construct(
                id=lesson_id,
                live=lesson_id in live,
                revision=live[lesson_id].revision
                if lesson_id in live
                else version.revision
                if version
                else timeline.latest(lesson_id),
                kind=version.scope.kind if version else None,
                title=version.title if version else None,
                repository=version.scope.repository if version else None,
                deliveries=tally.deliveries if tally else 0,
                delivered_runs=len(tally.delivered_runs) if tally else 0,
                runs_since=runs_since,
                runs=tuple(tally.runs) if tally else (),
                failures=failures,
                delivered=_rate(tally, "delivered"),
                not_delivered=_rate(tally, "not_delivered"),
                before=_rate(tally, "before"),
                missed=dict(sorted(missed.items())),
                never_delivered=runs_since > 0 and not (tally and tally.deliveries),
                quiet=bool(tally and len(tally.delivered_runs) >= often and not later),
            )
        )
    return ImpactReport(
        runs=tuple(r.run_id for r in ordered),
        lessons=tuple(lessons),
        totals=_totals(lessons, len(ordered), failure_count),
        often=often,
    )


def _sum(rates: Iterable[RepeatRate]) -> RepeatRate:
    runs = failed = 0
    for rate in rates:
        runs, failed = runs + rate.runs, failed + rate.failed
    return RepeatRate.model_construct(runs=runs, failed=failed)


def _totals(lessons: Sequence[LessonImpact], runs: int, failure_count: int) -> ImpactTotals:
    on_lessons = {(f.run_id, f.execution) for lesson in lessons for f in lesson.failures}
    reached = {
        (f.run_id, f.execution) for lesson in lessons for f in lesson.failures if f.delivered
    }
    today = {
        (f.run_id, f.execution) for lesson in lessons for f in lesson.failures if f.would_today
    }
    missed: Counter[str] = Counter()
    for lesson in lessons:
        missed.update(lesson.missed)
    return ImpactTotals(
        runs=runs,
        lessons=len(lessons),
        failures=failure_count,
        failures_on_lessons=len(on_lessons),
        delivered_before=len(reached),
        would_today=len(today),
        delivered=_sum(lesson.delivered for lesson in lessons),
        not_delivered=_sum(lesson.not_delivered for lesson in lessons),
        before=_sum(lesson.before for lesson in lessons),
        missed=dict(sorted(missed.items())),
        never_delivered=sum(lesson.never_delivered for lesson in lessons),
        quiet=sum(lesson.quiet for lesson in lessons),
    )


def run_generations(sources: LedgerSources) -> dict[str, int]:
    """The store generation each run's postmortem published, from reports and run logs."""
    found: dict[str, int] = {}
    for report in sources.reports:
        if report.generation_after is not None and not report.dry_run:
            found.setdefault(report.run_id, report.generation_after)
    for event in sources.log_records:
        run_id, generation = event.get("run_id"), event.get("generation")
        if (
            event.get("event") == "postmortem"
            and isinstance(run_id, str)
            and isinstance(generation, int)
            and not isinstance(generation, bool)
        ):
            found.setdefault(run_id, generation)
    return found


def measure_sources(
    store: ImpactStore, sources: LedgerSources, *, retired: Iterable[str] = (), often: int = 3
) -> ImpactReport:
    """:func:`measure_impact` over what :func:`~active_memory.ledger.load_sources` read."""
    return measure_impact(store, sources.records, generations=run_generations(sources),
                          retired=retired, often=often)  # fmt: skip
