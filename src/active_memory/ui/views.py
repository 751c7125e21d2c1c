"""What the pages show, read fresh on every request: lessons grouped by scope, one lesson's card
(as agents receive it), evidence, revision diffs and ledger, the quarantine and the runs. The run
folders' sources and the impact report are read again only when their files or the store's
generation changed (:mod:`.shared_reads`).

Everything returned is plain data; the templates escape every string (lesson text is untrusted).
Approve and reject go through the same calls as ``lessons review approve|reject``.
"""

from __future__ import annotations

import difflib
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from active_memory.errors import LessonNotFound, QuarantineNotFound, ScopeRefused
from active_memory.impact import ImpactReport, ImpactStore, LessonImpact
from active_memory.learn.folder import SessionState, learn_folder, learn_status
from active_memory.ledger import (
    LedgerSources,
    LessonLedger,
    LessonReach,
    lesson_ledger,
    reach_of,
)
from active_memory.ledger.build import LedgerStore
from active_memory.ledger.sources import ReportSummary
from active_memory.models.lessons import GraphScope, Lesson, LessonDraft, RepositoryScope, Scope
from active_memory.recall.render import render
from active_memory.runlog import LogValue
from active_memory.store.admin_backend import AdminBackend
from active_memory.store.backend import PublicationReceipt
from active_memory.store.engine import EngineStore
from active_memory.store.listing import (
    LessonSort,
    ListedLesson,
    RetiredLesson,
    RetiredListing,
)
from active_memory.store.quarantine import REVIEW_RUN, QuarantineEntry, QuarantineKeeper
from active_memory.store.results import HistoryEntry
from active_memory.store.search_text import query_words, text_matches
from active_memory.store.sqlite import SqliteStore
from active_memory.store.team_or_file import team_or_file
from active_memory.ui.shared_reads import SharedReads

__all__ = [
    "LESSONS_PER_PAGE",
    "SORT_LABELS",
    "LessonPage",
    "LessonRow",
    "RevisionDiff",
    "RunRow",
    "UiData",
    "card_text",
    "draft_lines",
    "listed_label",
    "scope_label",
]

# Far above any card: the page shows the whole frame, exactly as a hook would hand it over.
_CARD_BUDGET = 1 << 20


def scope_label(scope: Scope) -> str:
    if isinstance(scope, RepositoryScope):
        return f"repository {scope.repository}"
    qualifier = f" in {scope.repository}" if scope.repository else ""
    return f"graph {scope.graph_hash[:12]} node {scope.node_id}{qualifier}"


def listed_label(listed: ListedLesson) -> str:
    """:func:`scope_label` of a listed lesson, from its scope columns."""
    if listed.kind != "graph":
        return f"repository {listed.repository}"
    qualifier = f" in {listed.repository}" if listed.repository else ""
    return f"graph {(listed.graph_hash or '')[:12]} node {listed.node_id}{qualifier}"


def card_text(lesson: Lesson) -> str:
    """The lesson's card inside the recall frame, by the hooks' own renderer."""
    return render([lesson], budget_bytes=_CARD_BUDGET).text


def draft_lines(draft: LessonDraft | Lesson) -> list[str]:
    """A revision as lines a diff can compare: card, scope and evidence, one field a line."""
    scope = draft.scope
    lines = [f"title: {draft.title}", f"recommendation: {draft.recommendation}"]
    if isinstance(scope, RepositoryScope):
        lines.append(f"repository: {scope.repository}")
        lines += [f"file: {f}" for f in scope.files]
        lines += [f"folder: {f}" for f in scope.folders]
        lines += [f"identifier: {i}" for i in scope.identifiers]
        lines += [f"keywords: {' + '.join(group)}" for group in scope.keyword_groups]
    elif isinstance(scope, GraphScope):
        lines += [f"graph: {scope.graph_hash}", f"node: {scope.node_id}"]
        if scope.repository:
            lines.append(f"repository: {scope.repository}")
    evidence = draft.evidence
    lines.append(f"evidence run: {evidence.run_id}")
    lines += [f"reference: {r}" for r in evidence.references]
    lines.append(f"reason: {evidence.reason}")
    if evidence.source_commit:
        lines.append(f"source commit: {evidence.source_commit}")
    return lines


@dataclass(frozen=True, slots=True)
class RevisionDiff:
    """One revision against the one before it: unified diff lines, each with its kind
    (``add``, ``del``, ``hunk`` or ``same``)."""

    entry: HistoryEntry
    lines: tuple[tuple[str, str], ...]


def _diff_kind(line: str) -> str:
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return "same"


def revision_diffs(history: Sequence[HistoryEntry]) -> list[RevisionDiff]:
    out: list[RevisionDiff] = []
    before: list[str] = []
    for entry in history:
        after = draft_lines(entry.draft) if entry.draft is not None else []
        diff = difflib.unified_diff(
            before,
            after,
            f"revision {entry.revision - 1}" if entry.revision > 1 else "nothing",
            f"revision {entry.revision}",
            lineterm="",
            n=2,
        )
        lines = [(line, _diff_kind(line)) for line in diff if not line.startswith(("---", "+++"))]
        out.append(RevisionDiff(entry, tuple(lines)))
        if entry.draft is not None or entry.op in ("retire", "purge"):
            before = after
    return out


@dataclass(frozen=True, slots=True)
class LessonRow:
    lesson: ListedLesson
    label: str
    reach: LessonReach


# Enough to scan by eye; a store of thousands is paged rather than sent in one page.
LESSONS_PER_PAGE = 100

# The list's orders, as its sort menu names them (keys of store.listing.SORTS).
SORT_LABELS: dict[LessonSort, str] = {
    "oldest": "oldest first",
    "newest": "newest first",
    "revised": "most revised first",
}


@dataclass(frozen=True, slots=True)
class LessonPage:
    """The rows of one page, which page it is of how many, the lessons matching in all, and
    how many come before this page."""

    rows: list[LessonRow]
    page: int
    pages: int
    total: int
    offset: int
    note: str | None = None


@dataclass(frozen=True, slots=True)
class RunRow:
    """One postmortem: its report when one was found, else its run-log event."""

    run_id: str
    status: str
    time_ms: int | None
    report: ReportSummary | None
    report_file: str | None
    mutations: int | None
    published: int | None
    quarantined: int | None
    outcome: str | None
    rejections: dict[str, int]
    specialists: tuple[dict[str, LogValue], ...] = ()
    delivered: tuple[str, ...] = ()  # the lessons its record delivered, by id
    postmortem: bool = True  # False: a run that delivered cards and has no postmortem found


class UiData:
    """The store and the run folders the page reads. A local store also gives the exposure
    files; every store gives lessons, history, ledgers and its quarantine (``remote``: a
    PostgreSQL store or the memory service's client)."""

    def __init__(
        self,
        store_path: Path | None,
        runs: Sequence[Path],
        *,
        remote: ImpactStore | None = None,
    ) -> None:
        self.store_path = store_path
        self.runs = tuple(runs)
        self.remote = remote
        self._shared = SharedReads(self.runs, store_path)
        # One approve or reject at a time: a double click or two tabs then meet a proposal
        # that is already gone (a clear answer) rather than a publication conflict.
        self._deciding = threading.Lock()

    def store(self) -> AbstractContextManager[ImpactStore]:
        return team_or_file(self.remote, self.store_path)

    def sources(self) -> LedgerSources:
        return self._shared.sources()

    def learn_view(self) -> list[SessionState]:
        """The sessions learning queued for the local store, as ``learn status`` lists them
        (none for a service: its learning runs on its users' machines)."""
        if self.store_path is None:
            return []
        return learn_status(learn_folder(self.store_path))

    @property
    def has_quarantine(self) -> bool:
        return self.remote is None or isinstance(self.remote, QuarantineKeeper)

    @property
    def service_url(self) -> str | None:
        """The memory service's address when the page reads one (it carries no token)."""
        url = getattr(self.remote, "url", None)
        return url if isinstance(url, str) else None

    def _quarantine(self, *, read_only: bool) -> AbstractContextManager[QuarantineKeeper]:
        """The team store's own quarantine, or the local store file's."""
        keeper = self.remote if isinstance(self.remote, QuarantineKeeper) else None
        return team_or_file(keeper, self.store_path, read_only=read_only)

    def quarantine(self) -> tuple[QuarantineEntry, ...]:
        if not self.has_quarantine:
            return ()
        with self._quarantine(read_only=True) as quarantine:
            return quarantine.held()

    def held(self, lesson_id: str) -> QuarantineEntry:
        if not self.has_quarantine:
            raise QuarantineNotFound(lesson_id)
        with self._quarantine(read_only=True) as quarantine:
            return quarantine.held_entry(lesson_id)

    def approve(self, lesson_id: str) -> PublicationReceipt:
        """What ``lessons review approve`` does: screened again, then a checked publication."""
        if not self.has_quarantine:
            raise QuarantineNotFound(lesson_id)
        with self._deciding, self._quarantine(read_only=False) as quarantine:
            return quarantine.approve_held(lesson_id, run_id=REVIEW_RUN)

    def reject(self, lesson_id: str) -> bool:
        """What ``lessons review reject`` does: delete the entry (and scrub a store file)."""
        if not self.has_quarantine:
            raise QuarantineNotFound(lesson_id)
        with self._deciding, self._quarantine(read_only=False) as quarantine:
            return quarantine.reject_held(lesson_id)

    def live_revision(self, lesson_id: str) -> int | None:
        """The live revision of ``lesson_id``; None when it is not live."""
        with self.store() as store:
            live = _live(store, lesson_id)
        return live.revision if live is not None else None

    def lessons(
        self,
        *,
        repository: str | None,
        graph: str | None,
        query: str | None,
        page: int = 1,
        per_page: int = LESSONS_PER_PAGE,
        sort: LessonSort = "oldest",
    ) -> tuple[LessonPage, Counter[str], Counter[str]]:
        """One page of the lessons matching the filters and the search (every word of
        ``query`` in the title or recommendation), in ``sort`` order, ``page`` clamped to those
        there are; and the counts by repository and by graph over every lesson. A local or
        team store, or the memory service for its token's scope, cuts the page in SQL; the
        reach of the page's lessons alone is counted."""
        with self.store() as store:
            if isinstance(store, AdminBackend):
                sliced = store.lesson_page(repository=repository, graph=graph, query=query,
                                            page=page, per_page=per_page, sort=sort)  # fmt: skip
                shown, note = list(sliced.lessons), sliced.note
                page, pages, total = sliced.page, sliced.pages, sliced.matching
                repositories, graphs = Counter(sliced.repositories), Counter(sliced.graphs)
            else:  # a store that only lists its lessons: filtered here
                live = store.list_lessons()
                shown, repositories, graphs = _filtered(live, repository, graph, query)
                if sort == "revised":
                    shown.sort(key=lambda x: (x.revision, x.id), reverse=True)
                else:
                    shown.sort(key=lambda x: x.id, reverse=sort == "newest")
                note, total = None, len(shown)
                pages = max(1, -(-total // per_page))
                page = min(max(page, 1), pages)
                shown = shown[(page - 1) * per_page : page * per_page]
        reach = reach_of([x.id for x in shown], self.sources()) if shown else {}
        rows = [LessonRow(x, listed_label(x), reach[x.id]) for x in shown]
        listing = LessonPage(rows, page, pages, total, (page - 1) * per_page, note)
        return listing, repositories, graphs

    def retired(self, page: int = 1, per_page: int = LESSONS_PER_PAGE) -> RetiredListing:
        """One page of the retired ids, newest first; a store that only lists its tombstones
        names them without their titles."""
        with self.store() as store:
            if isinstance(store, AdminBackend):
                return store.retired_page(page=page, per_page=per_page)
            listed = getattr(store, "list_retired", None)
            tombstones = sorted(listed() if listed is not None else (), key=lambda t: t.id)
        rows = [RetiredLesson(t.id, t.revision, t.kind, None) for t in reversed(tombstones)]
        pages = max(1, -(-len(rows) // per_page))
        page = min(max(page, 1), pages)
        shown = tuple(rows[(page - 1) * per_page : page * per_page])
        return RetiredListing(shown, page, pages, len(rows))

    def lesson(self, lesson_id: str) -> tuple[Lesson | None, list[RevisionDiff], LessonLedger]:
        """The live lesson (None when retired or never published), its revisions and its
        ledger. An id only the quarantine holds has a page too: its proposal's link."""
        held = {e.id for e in self.quarantine()}
        with self.store() as store:
            live = _live(store, lesson_id)
            try:
                history = store.history(lesson_id)
            except LessonNotFound:
                if lesson_id not in held:
                    raise
                history = ()
            one = _OneLesson(store, live)
            ledger = lesson_ledger(lesson_id, one, self.sources(), quarantined=held)
        return live, revision_diffs(history), ledger

    def impact(self) -> ImpactReport:
        """What ``lessons impact`` measures over this store and these runs."""
        return self._impact()[0]

    def lesson_impact(self, lesson_id: str) -> LessonImpact | None:
        """``lesson_id``'s figures in :meth:`impact`'s report; None when it has none."""
        return self._impact()[1].get(lesson_id)

    def _impact(self) -> tuple[ImpactReport, Mapping[str, LessonImpact]]:
        with self.store() as store:

            def retired() -> list[str]:  # as `lessons impact` measures them
                listed = store.list_retired() if isinstance(store, SqliteStore) else ()
                return [t.id for t in listed]

            return self._shared.impact(store, retired)

    def runs_view(self) -> tuple[list[RunRow], list[tuple[int, str, str]], LedgerSources]:
        """Every postmortem found, and every run that delivered cards without one (a lesson
        page links to each run it reached), newest first; every rejection as (time, stage,
        code)."""
        sources = self.sources()
        reports = {report.run_id: (path, report) for path, report in sources.report_files}
        delivered = {
            record.run_id: tuple(sorted({d.lesson_id for d in record.deliveries}))
            for record in sources.records
        }
        latched = {
            record.run_id: record.outcome.latched_ms
            for record in sources.records
            if record.outcome is not None
        }
        events: dict[str, dict[str, LogValue]] = {}
        rejections: list[tuple[int, str, str]] = []
        by_run: dict[str, Counter[str]] = {}
        specialists: dict[str, list[dict[str, LogValue]]] = {}
        for event in sources.log_records:
            run_id = event.get("run_id")
            if not isinstance(run_id, str):
                continue
            kind = event.get("event")
            if kind == "postmortem":
                events[run_id] = dict(event)
            elif kind == "postmortem_specialist":
                specialists.setdefault(run_id, []).append(dict(event))
            elif kind == "rejection":
                stage, code = str(event.get("stage", "-")), str(event.get("code", "-"))
                when = event.get("time_ms")
                rejections.append((when if isinstance(when, int) else 0, stage, code))
                by_run.setdefault(run_id, Counter())[f"{stage}:{code}"] += 1
        rows = []
        delivering = {run_id for run_id, lesson_ids in delivered.items() if lesson_ids}
        for run_id in sorted(set(reports) | set(events) | delivering):
            path, report = reports.get(run_id, (None, None))
            event = events.get(run_id, {})
            reviewed = report is not None or run_id in events
            when = event.get("time_ms") if reviewed else latched.get(run_id)
            status = str(event.get("status", "-")) if reviewed else "no postmortem"
            rows.append(
                RunRow(
                    run_id=run_id,
                    status=report.status if report is not None else status,
                    time_ms=when if isinstance(when, int) else None,
                    report=report,
                    report_file=path,
                    mutations=_int(event.get("mutations")),
                    published=_int(event.get("published")),
                    quarantined=_int(event.get("quarantined")),
                    outcome=_str(event.get("outcome")) or sources.outcomes.get(run_id),
                    rejections=dict(sorted(by_run.get(run_id, Counter()).items())),
                    specialists=tuple(specialists.get(run_id, ())),
                    delivered=delivered.get(run_id, ()),
                    postmortem=reviewed,
                )
            )
        rows.sort(key=lambda row: (-(row.time_ms or 0), row.run_id))
        return rows, sorted(rejections), sources


class _OneLesson:
    """What one lesson's ledger reads of a store: that lesson alone (so no other lesson is
    decoded) and the store's history."""

    def __init__(self, store: LedgerStore, live: Lesson | None) -> None:
        self._store, self._live = store, live

    def list_lessons(self) -> tuple[Lesson, ...]:
        return (self._live,) if self._live is not None else ()

    def history(self, lesson_id: str) -> tuple[HistoryEntry, ...]:
        return self._store.history(lesson_id)


def _live(store: LedgerStore, lesson_id: str) -> Lesson | None:
    """The live lesson ``lesson_id``, read alone where the store can (the memory service's
    client too; a store that only lists its lessons is listed)."""
    if isinstance(store, EngineStore | AdminBackend):
        try:
            return store.get(lesson_id)
        # LessonRetired is a LessonNotFound; a lesson outside a token's scope is left out, as
        # the token's list leaves it out (its history then says why).
        except (LessonNotFound, ScopeRefused):
            return None
    return {lesson.id: lesson for lesson in store.list_lessons()}.get(lesson_id)


def _filtered(
    live: Sequence[Lesson], repository: str | None, graph: str | None, query: str | None
) -> tuple[list[ListedLesson], Counter[str], Counter[str]]:
    """What the SQL page selects, for a store that only lists: the lessons matching the
    filters and the search, and every lesson's count by repository and by graph."""
    repositories: Counter[str] = Counter()
    graphs: Counter[str] = Counter()
    matching: list[ListedLesson] = []
    words = query_words(query)
    for lesson in live:
        scope = lesson.scope
        if scope.repository:
            repositories[scope.repository] += 1
        if isinstance(scope, GraphScope):
            graphs[scope.graph_hash] += 1
        if repository and scope.repository != repository:
            continue
        if graph and not (isinstance(scope, GraphScope) and scope.graph_hash == graph):
            continue
        if words and not text_matches(words, lesson.title, lesson.recommendation):
            continue
        matching.append(ListedLesson.of(lesson))
    return matching, repositories, graphs


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
