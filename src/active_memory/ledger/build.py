"""Fold recorded facts into one :class:`LessonLedger` per lesson.

What each part is counted from:

* reach: the delivery manifests of run records (``deliveries``), the receipts of the receiving
  executions at or after each delivery, and exposure files for deliveries outside runs;
* outcomes: the latched outcome of each reached run (``outcome.json``, else the record's
  ``outcome``, else the ``outcome`` of the run log's ``postmortem`` event);
* decisions: ``adapt`` and ``retire`` from the store's history (the run that published the
  revision), from reports' ``changes`` and from the run log's changed ids; ``defer`` from
  reports' downgrades (an adapt or retire the host turned into defer). ``keep`` is exact where
  the postmortem recorded the kept ids: a report specialist's ``keep_ids`` (the whole list),
  else a run log ``postmortem_specialist`` event's ``keep_ids`` when it is complete (as many ids
  as its ``kept`` count; the log caps its lists). Where neither is recorded (older postmortems
  count keeps per specialist only) it is *inferred*, and only where it is certain: the run
  delivered the lesson (so it was in the frozen snapshot the maintenance specialist of its kind
  reviewed, and coverage requires a decision on every reviewed id), that specialist completed
  (``published`` or ``nothing_to_do``) and nothing else was decided or refused about the lesson
  in that run. A recorded list is never second-guessed: an id missing from it is not kept;
* admission history: every revision in the store's history, the path it took (``review`` is a
  quarantine approval) and the quarantine hold of the run log that preceded it.

Nothing here changes recall: the index and its ranking never read a ledger.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Protocol

from active_memory.errors import LessonNotFound, ScopeRefused
from active_memory.ledger.models import (
    DecisionSource,
    LedgerAction,
    LessonLedger,
    MaintenanceDecision,
    RejectedDecision,
    RevisionAdmission,
    RevisionPath,
    RunReach,
    StandaloneReach,
)
from active_memory.ledger.sources import LedgerSources
from active_memory.models.lessons import GraphScope, Lesson, LessonDraft, RepositoryScope
from active_memory.models.runs import RunRecord
from active_memory.roles import ROLE_ROWS
from active_memory.runlog import LogValue
from active_memory.store.results import HistoryEntry

__all__ = ["LedgerIndex", "LedgerStore", "ledgers", "lesson_ledger", "run_reach"]

_COMPLETED = frozenset({"published", "nothing_to_do"})
_MAINTENANCE: dict[str, str] = {row.scope: row.name for row in ROLE_ROWS if row.maintenance}
_PATHS: dict[str, RevisionPath] = {
    "review": "review",
    "admin": "admin",
    "remote-admin": "admin",
    "import": "import",
    "zeroshot-import": "import",
}


class LedgerStore(Protocol):
    """What a ledger reads of a store: the live lessons and one lesson's history."""

    def list_lessons(self) -> tuple[Lesson, ...]: ...

    def history(self, lesson_id: str) -> tuple[HistoryEntry, ...]: ...


def _text(value: LogValue | None) -> str | None:
    return value if isinstance(value, str) and value else None


class LedgerIndex:
    """The sources indexed by lesson id and run id, built once for many ledgers."""

    def __init__(self, sources: LedgerSources) -> None:
        self.sources = sources
        self.records: dict[str, RunRecord] = {r.run_id: r for r in sources.records}
        self.outcomes: dict[str, str] = {}
        for record in sources.records:
            if record.outcome is not None:
                self.outcomes[record.run_id] = record.outcome.status
        self.rejections: dict[str, list[RejectedDecision]] = defaultdict(list)
        self.held: dict[str, tuple[str, tuple[str, ...]]] = {}
        self.changed: dict[tuple[str, str], str] = {}  # (run, id) -> role, from the run log
        self.completed: set[tuple[str, str]] = set()  # (run, role) that completed
        # (run, role) -> the ids that specialist kept, and where that list was read
        self.keeps: dict[tuple[str, str], tuple[frozenset[str], DecisionSource]] = {}
        self.generations: dict[str, int] = {}
        for event in sources.log_records:
            self._take(event)
        self.outcomes.update(sources.outcomes)
        for report in sources.reports:
            if report.generation_after is not None:
                self.generations.setdefault(report.run_id, report.generation_after)
        # Runs in the order their postmortems published (the store generation after each);
        # runs without a known postmortem follow, by id.
        self.order = {
            run_id: i
            for i, run_id in enumerate(
                sorted(self.records, key=lambda r: (self.generations.get(r, 1 << 62), r))
            )
        }
        # The records in that order, sorted once for every lesson's reach.
        self.published: tuple[RunRecord, ...] = tuple(self.records[r] for r in self.order)
        self.defers: dict[str, list[MaintenanceDecision]] = defaultdict(list)
        self.report_changes: dict[str, list[MaintenanceDecision]] = defaultdict(list)
        for report in sources.reports:
            for specialist in report.specialists:
                if specialist.status in _COMPLETED:
                    self.completed.add((report.run_id, specialist.specialist))
                if specialist.keep_ids is not None and not report.dry_run:
                    # The report's list is whole; it replaces a (capped) run log list.
                    self.keeps[(report.run_id, specialist.specialist)] = (
                        frozenset(specialist.keep_ids),
                        "report",
                    )
                for downgrade in specialist.downgrades:
                    self.defers[downgrade.id].append(
                        MaintenanceDecision(
                            run_id=report.run_id,
                            action="defer",
                            source="report",
                            role=specialist.specialist,
                            detail=downgrade.action,
                        )
                    )
            for change in report.changes:
                if change.op in ("adapt", "retire") and not report.dry_run:
                    action: LedgerAction = "adapt" if change.op == "adapt" else "retire"
                    self.report_changes[change.id].append(
                        MaintenanceDecision(
                            run_id=report.run_id,
                            action=action,
                            source="report",
                            role=change.specialist,
                            revision=change.revision,
                        )
                    )
        self.exposures: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for exposure in sources.exposures:
            for lesson_id, revision in exposure.keys:
                self.exposures[lesson_id].append((exposure.name, revision))

    def _take(self, event: dict[str, LogValue]) -> None:
        kind = event.get("event")
        run_id = _text(event.get("run_id"))
        if run_id is None:
            return
        if kind == "rejection":
            lesson_id = _text(event.get("id"))
            if lesson_id is not None:
                self.rejections[lesson_id].append(
                    RejectedDecision(
                        run_id=run_id,
                        role=_text(event.get("role")),
                        stage=_text(event.get("stage")) or "-",
                        code=_text(event.get("code")) or "-",
                    )
                )
        elif kind == "quarantine":
            lesson_id = _text(event.get("id"))
            signals = event.get("signals")
            if lesson_id is not None:
                held = (
                    tuple(s for s in signals if isinstance(s, str))
                    if isinstance(signals, list)
                    else ()
                )
                self.held[lesson_id] = (run_id, held)
        elif kind == "postmortem_specialist":
            role = _text(event.get("role")) or "-"
            if event.get("status") in _COMPLETED:
                self.completed.add((run_id, role))
            ids = event.get("ids")
            if isinstance(ids, list):
                for lesson_id in ids:
                    if isinstance(lesson_id, str):
                        self.changed[(run_id, lesson_id)] = role
            kept_ids = event.get("keep_ids")
            kept = event.get("kept")
            if isinstance(kept_ids, list) and not event.get("dry_run"):
                listed = frozenset(x for x in kept_ids if isinstance(x, str))
                # Exact only when whole: a capped list shorter than the count says too little.
                if not isinstance(kept, int) or isinstance(kept, bool) or len(listed) >= kept:
                    self.keeps[(run_id, role)] = (listed, "run_log")
        elif kind == "postmortem":
            outcome = _text(event.get("outcome"))
            if outcome is not None:
                self.outcomes.setdefault(run_id, outcome)
            generation = event.get("generation")
            if isinstance(generation, int) and not isinstance(generation, bool):
                self.generations.setdefault(run_id, generation)


def run_reach(lesson_id: str, index: LedgerIndex) -> tuple[RunReach, ...]:
    """The runs that delivered ``lesson_id``, in publication order."""
    reached: list[RunReach] = []
    for record in index.published:
        mine = [d for d in record.deliveries if d.lesson_id == lesson_id]
        if not mine:
            continue
        after = 0
        for receipt in record.receipts:
            if any(
                d.execution is not None
                and receipt.execution == d.execution
                and (d.time_ms is None or receipt.time_ms >= d.time_ms)
                for d in mine
            ):
                after += 1
        reached.append(
            RunReach(
                run_id=record.run_id,
                outcome=index.outcomes.get(record.run_id),
                deliveries=len(mine),
                conversations=tuple(sorted({d.conversation_id for d in mine})),
                nodes=tuple(sorted({d.node_id for d in mine})),
                revisions=tuple(sorted({d.revision for d in mine})),
                channels=tuple(sorted({d.channel for d in mine})),
                tool_calls_after=after,
            )
        )
    return tuple(reached)


def _path(entry: HistoryEntry) -> RevisionPath:
    if entry.op == "revert":
        return "revert"
    if entry.op == "purge":
        return "purge"
    return _PATHS.get(entry.run_id, "run")


def _admissions(
    lesson_id: str, history: Sequence[HistoryEntry], index: LedgerIndex
) -> tuple[RevisionAdmission, ...]:
    held_run, held = index.held.get(lesson_id, (None, ()))
    out: list[RevisionAdmission] = []
    for entry in history:
        first_review = entry.revision == 1 and entry.run_id == "review"
        out.append(
            RevisionAdmission(
                revision=entry.revision,
                op=entry.op,
                path=_path(entry),
                run_id=entry.run_id,
                generation=entry.generation,
                time=entry.time,
                title=entry.draft.title if entry.draft is not None else None,
                held=held if first_review else (),
                held_in_run=held_run if first_review else None,
            )
        )
    return tuple(out)


def _history_decisions(history: Sequence[HistoryEntry]) -> list[MaintenanceDecision]:
    found = []
    for entry in history:
        if _path(entry) != "run":
            continue
        if entry.op == "retire":
            found.append(
                MaintenanceDecision(
                    run_id=entry.run_id, action="retire", source="history", revision=entry.revision
                )
            )
        elif entry.op == "upsert" and entry.revision > 1:
            found.append(
                MaintenanceDecision(
                    run_id=entry.run_id, action="adapt", source="history", revision=entry.revision
                )
            )
    return found


def _decisions(
    lesson_id: str,
    kind: str | None,
    history: Sequence[HistoryEntry],
    reach: Sequence[RunReach],
    index: LedgerIndex,
) -> tuple[MaintenanceDecision, ...]:
    decisions = _history_decisions(history)
    seen = {(d.run_id, d.action) for d in decisions}
    roles = {(run, lid): role for (run, lid), role in index.changed.items() if lid == lesson_id}
    decisions = [d.model_copy(update={"role": roles.get((d.run_id, lesson_id))}) for d in decisions]
    for extra in (*index.report_changes.get(lesson_id, ()), *index.defers.get(lesson_id, ())):
        if (extra.run_id, extra.action) not in seen:
            seen.add((extra.run_id, extra.action))
            decisions.append(extra)
    for (run_id, keeper), (kept, source) in index.keeps.items():
        if lesson_id in kept and (run_id, "keep") not in seen:
            seen.add((run_id, "keep"))
            decisions.append(
                MaintenanceDecision(run_id=run_id, action="keep", source=source, role=keeper)
            )
    decided_runs = {d.run_id for d in decisions}
    refused_runs = {r.run_id for r in index.rejections.get(lesson_id, ())}
    role = _MAINTENANCE.get(kind or "")
    for run in reach:
        if run.run_id in decided_runs or run.run_id in refused_runs or role is None:
            continue
        if (run.run_id, role) in index.keeps:
            continue  # that specialist's kept ids are recorded, and this lesson is not among them
        if (run.run_id, lesson_id) in index.changed:
            continue
        if (run.run_id, role) in index.completed:
            decisions.append(
                MaintenanceDecision(run_id=run.run_id, action="keep", source="inferred", role=role)
            )
    order = index.order
    decisions.sort(key=lambda d: (order.get(d.run_id, len(order)), d.run_id, d.action))
    return tuple(decisions)


def _scope_of(lesson: Lesson | LessonDraft | None) -> dict[str, str | None]:
    if lesson is None:
        return {}
    scope = lesson.scope
    out: dict[str, str | None] = {"kind": scope.kind, "title": lesson.title}
    if isinstance(scope, RepositoryScope):
        out["repository"] = scope.repository
    elif isinstance(scope, GraphScope):
        out.update(repository=scope.repository, graph_hash=scope.graph_hash, node_id=scope.node_id)
    return out


def _ledger(
    lesson_id: str,
    live: Lesson | None,
    history: Sequence[HistoryEntry],
    index: LedgerIndex,
    quarantined: bool,
) -> LessonLedger:
    last_draft = next((e.draft for e in reversed(history) if e.draft is not None), None)
    described = _scope_of(live) or _scope_of(last_draft)
    reach = run_reach(lesson_id, index)
    outcomes: Counter[str] = Counter(run.outcome or "unknown" for run in reach)
    exposures = index.exposures.get(lesson_id, [])
    kind = described.get("kind")
    return LessonLedger(
        id=lesson_id,
        live=live is not None,
        revision=live.revision if live is not None else (history[-1].revision if history else None),
        quarantined=quarantined,
        delivered=sum(run.deliveries for run in reach),
        conversations=sum(len(run.conversations) for run in reach),
        runs=reach,
        outcomes=dict(sorted(outcomes.items())),
        standalone=StandaloneReach(
            deliveries=len(exposures),
            conversations=len({name for name, _ in exposures}),
            revisions=tuple(sorted({revision for _, revision in exposures})),
        ),
        decisions=_decisions(lesson_id, kind, history, reach, index),
        rejections=tuple(index.rejections.get(lesson_id, ())),
        revisions=_admissions(lesson_id, history, index),
        **described,
    )


def lesson_ledger(
    lesson_id: str,
    store: LedgerStore,
    sources: LedgerSources,
    *,
    quarantined: Iterable[str] = (),
) -> LessonLedger:
    """The ledger of one lesson id (live, retired, or known only from the records).

    Raises what ``store.history`` raises for an id the store has never held (LessonNotFound)
    unless the sources mention it."""
    live = {lesson.id: lesson for lesson in store.list_lessons()}.get(lesson_id)
    return _one(lesson_id, live, store, LedgerIndex(sources), set(quarantined))


def _one(
    lesson_id: str, live: Lesson | None, store: LedgerStore, index: LedgerIndex, held: set[str]
) -> LessonLedger:
    try:
        history = store.history(lesson_id)
    except (LessonNotFound, ScopeRefused):
        mentioned = any(
            d.lesson_id == lesson_id for r in index.records.values() for d in r.deliveries
        )
        if not mentioned and lesson_id not in held and lesson_id not in index.rejections:
            raise
        history = ()
    return _ledger(lesson_id, live, history, index, lesson_id in held)


def ledgers(
    store: LedgerStore,
    sources: LedgerSources,
    *,
    ids: Sequence[str] | None = None,
    retired: Iterable[str] = (),
    quarantined: Iterable[str] = (),
) -> tuple[LessonLedger, ...]:
    """Ledgers sorted by id: of ``ids``, or else of every live lesson, every ``retired`` id
    and every id a run record delivered."""
    live = {lesson.id: lesson for lesson in store.list_lessons()}
    index = LedgerIndex(sources)
    held = set(quarantined)
    if ids is None:
        wanted = set(live) | set(retired)
        for record in index.records.values():
            wanted.update(d.lesson_id for d in record.deliveries)
    else:
        wanted = set(ids)
    return tuple(_one(i, live.get(i), store, index, held) for i in sorted(wanted))
