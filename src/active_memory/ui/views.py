"""What the pages show, read fresh on every request: lessons grouped by scope, one lesson's card
(as agents receive it), evidence, revision diffs and ledger, the quarantine and the runs.

Everything returned is plain data; the templates escape every string (lesson text is untrusted).
Approve and reject go through the same calls as ``lessons review approve|reject``.
"""

from __future__ import annotations

import difflib
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from active_memory.errors import QuarantineNotFound
from active_memory.impact import ImpactReport, ImpactStore, measure_sources
from active_memory.learn.folder import SessionState, learn_folder, learn_status
from active_memory.ledger import LedgerSources, LessonLedger, ledgers, lesson_ledger, store_sources
from active_memory.ledger.build import LedgerStore
from active_memory.ledger.sources import ReportSummary
from active_memory.models.lessons import GraphScope, Lesson, LessonDraft, RepositoryScope, Scope
from active_memory.recall.render import render
from active_memory.runlog import LogValue
from active_memory.store.backend import PublicationReceipt
from active_memory.store.engine import EngineStore
from active_memory.store.quarantine import REVIEW_RUN, QuarantineEntry, QuarantineKeeper
from active_memory.store.results import HistoryEntry
from active_memory.store.sqlite import SqliteStore

__all__ = [
    "LESSONS_PER_PAGE",
    "LessonPage",
    "LessonRow",
    "RevisionDiff",
    "RunRow",
    "UiData",
    "card_text",
    "draft_lines",
    "scope_label",
]

# Far above any card: the page shows the whole frame, exactly as a hook would hand it over.
_CARD_BUDGET = 1 << 20


def scope_label(scope: Scope) -> str:
    if isinstance(scope, RepositoryScope):
        return f"repository {scope.repository}"
    qualifier = f" in {scope.repository}" if scope.repository else ""
    return f"graph {scope.graph_hash[:12]} node {scope.node_id}{qualifier}"


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
    lesson: Lesson
    label: str
    ledger: LessonLedger | None


# Enough to scan by eye; a store of thousands is paged rather than sent in one page.
LESSONS_PER_PAGE = 100


@dataclass(frozen=True, slots=True)
class LessonPage:
    """The rows of one page, which page it is of how many, the lessons matching in all, and
    how many come before this page."""

    rows: list[LessonRow]
    page: int
    pages: int
    total: int
    offset: int


class _PageStore:
    """What the ledgers of one page read of a store: the page's lessons (the only ones they
    look up, so the rest of the store is not decoded) and the store's history."""

    def __init__(self, store: LedgerStore, lessons: tuple[Lesson, ...]) -> None:
        self._store, self._lessons = store, lessons

    def list_lessons(self) -> tuple[Lesson, ...]:
        return self._lessons

    def history(self, lesson_id: str) -> tuple[HistoryEntry, ...]:
        return self._store.history(lesson_id)


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
        # One approve or reject at a time: a double click or two tabs then meet a proposal
        # that is already gone (a clear answer) rather than a publication conflict.
        self._deciding = threading.Lock()

    @contextmanager
    def store(self) -> Iterator[ImpactStore]:
        if self.remote is not None:
            yield self.remote
            return
        assert self.store_path is not None
        with SqliteStore(self.store_path, read_only=True) as store:
            yield store

    def sources(self) -> LedgerSources:
        return store_sources(self.runs, self.store_path)

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

    @contextmanager
    def _quarantine(self, *, read_only: bool) -> Iterator[QuarantineKeeper]:
        """The team store's own quarantine, or the local store file's."""
        if isinstance(self.remote, QuarantineKeeper):
            yield self.remote
            return
        assert self.store_path is not None  # no remote: the page reads a store file
        with SqliteStore(self.store_path, read_only=read_only) as store:
            yield store

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
            return {lesson.id: lesson.revision for lesson in store.list_lessons()}.get(lesson_id)

    def lessons(
        self,
        *,
        repository: str | None,
        graph: str | None,
        query: str | None,
        page: int = 1,
        per_page: int = LESSONS_PER_PAGE,
    ) -> tuple[LessonPage, Counter[str], Counter[str]]:
        """One page of the lessons matching the filters (``page`` clamped to those there are),
        and the counts by repository and by graph over every lesson. Ledgers are built for the
        page's lessons only, so a store of thousands costs one page of work."""
        with self.store() as store:
            if isinstance(store, EngineStore):  # a local or team store: the page is cut in SQL
                sliced = store.lesson_page(repository=repository, graph=graph, query=query,
                                            page=page, per_page=per_page)  # fmt: skip
                found = self._page_ledgers(store, sliced.lessons)
                page_rows = [LessonRow(lesson, scope_label(lesson.scope), found.get(lesson.id))
                        for lesson in sliced.lessons]  # fmt: skip
                offset = (sliced.page - 1) * per_page
                result = LessonPage(page_rows, sliced.page, sliced.pages, sliced.matching, offset)
                return result, Counter(sliced.repositories), Counter(sliced.graphs)
            live = store.list_lessons()
            repositories: Counter[str] = Counter()
            graphs: Counter[str] = Counter()
            matching: list[Lesson] = []
            needle = (query or "").casefold().strip()
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
                if needle and needle not in lesson.title.casefold():
                    continue
                matching.append(lesson)
            pages = max(1, -(-len(matching) // per_page))
            page = min(max(page, 1), pages)
            shown = matching[(page - 1) * per_page : page * per_page]
            found = self._page_ledgers(store, shown)
        rows = [
            LessonRow(lesson, scope_label(lesson.scope), found.get(lesson.id)) for lesson in shown
        ]
        listing = LessonPage(rows, page, pages, len(matching), (page - 1) * per_page)
        return listing, repositories, graphs

    def _page_ledgers(self, store: LedgerStore, shown: Sequence[Lesson]) -> dict[str, LessonLedger]:
        if not shown:
            return {}
        page = _PageStore(store, tuple(shown))
        built = ledgers(page, self.sources(), ids=[lesson.id for lesson in shown])
        return {ledger.id: ledger for ledger in built}

    def lesson(self, lesson_id: str) -> tuple[Lesson | None, list[RevisionDiff], LessonLedger]:
        with self.store() as store:
            live = {lesson.id: lesson for lesson in store.list_lessons()}.get(lesson_id)
            history = store.history(lesson_id)
            held = {e.id for e in self.quarantine()}
            ledger = lesson_ledger(lesson_id, store, self.sources(), quarantined=held)
        return live, revision_diffs(history), ledger

    def impact(self) -> ImpactReport:
        """What ``lessons impact`` measures over this store and these runs."""
        with self.store() as store:
            retired = store.list_retired() if isinstance(store, SqliteStore) else ()
            return measure_sources(store, self.sources(), retired=[t.id for t in retired])

    def runs_view(self) -> tuple[list[RunRow], list[tuple[int, str, str]], LedgerSources]:
        """Every postmortem found, newest first, and every rejection as (time, stage, code)."""
        sources = self.sources()
        reports = {report.run_id: (path, report) for path, report in sources.report_files}
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
        for run_id in sorted(set(reports) | set(events)):
            path, report = reports.get(run_id, (None, None))
            event = events.get(run_id, {})
            when = event.get("time_ms")
            rows.append(
                RunRow(
                    run_id=run_id,
                    status=report.status if report is not None else str(event.get("status", "-")),
                    time_ms=when if isinstance(when, int) else None,
                    report=report,
                    report_file=path,
                    mutations=_int(event.get("mutations")),
                    published=_int(event.get("published")),
                    quarantined=_int(event.get("quarantined")),
                    outcome=_str(event.get("outcome")) or sources.outcomes.get(run_id),
                    rejections=dict(sorted(by_run.get(run_id, Counter()).items())),
                    specialists=tuple(specialists.get(run_id, ())),
                )
            )
        rows.sort(key=lambda row: (-(row.time_ms or 0), row.run_id))
        return rows, sorted(rejections), sources


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
