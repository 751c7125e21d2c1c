"""Generated run histories for the impact tests: runs built in memory, a store as a history."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from active_memory.errors import LessonNotFound
from active_memory.models.lessons import Evidence, Lesson, LessonDraft, RepositoryScope
from active_memory.models.runs import (
    AuthoredGraph,
    Delivery,
    Execution,
    GraphNode,
    RunRecord,
    ToolReceipt,
)
from active_memory.store.results import HistoryEntry

REPOSITORY = "forge:github.com/example/impact"
GRAPH = AuthoredGraph(
    name="impact",
    nodes=(GraphNode(id="implement", kind="worker"), GraphNode(id="review", kind="verifier")),
)


def lesson_id(n: int) -> str:
    return f"lesson-01JWAR{n:020d}"


def draft(files: Sequence[str], title: str = "Read the settings module first") -> LessonDraft:
    return LessonDraft(
        scope=RepositoryScope(repository=REPOSITORY, files=tuple(files)),
        title=title,
        recommendation="Check how the module reads its settings before editing it.",
        evidence=Evidence(run_id="run-0", references=("exec:e1",), reason="seen"),
    )


@dataclass
class HistoryStore:
    """What ``measure_impact`` reads of a store: live lessons and each one's history."""

    entries: dict[str, list[HistoryEntry]] = field(default_factory=dict)

    def publish(self, n: int, files: Sequence[str], run_id: str, time: str, **kw: str) -> str:
        ident = lesson_id(n)
        history = self.entries.setdefault(ident, [])
        history.append(
            HistoryEntry(id=ident, revision=len(history) + 1, op="upsert",
                         generation=len(history) + 1, run_id=run_id, time=time,
                         draft=draft(files, **kw))
        )  # fmt: skip
        return ident

    def retire(self, ident: str, run_id: str, time: str) -> None:
        history = self.entries[ident]
        history.append(
            HistoryEntry(id=ident, revision=len(history) + 1, op="retire",
                         generation=len(history) + 1, run_id=run_id, time=time, draft=None)
        )  # fmt: skip

    def list_lessons(self) -> tuple[Lesson, ...]:
        live = []
        for ident, history in sorted(self.entries.items()):
            last = history[-1]
            if last.draft is not None:
                d = last.draft
                live.append(Lesson(id=ident, revision=last.revision, scope=d.scope,
                                   title=d.title, recommendation=d.recommendation,
                                   evidence=d.evidence))  # fmt: skip
        return tuple(live)

    def history(self, ident: str) -> tuple[HistoryEntry, ...]:
        if ident not in self.entries:
            raise LessonNotFound(ident)
        return tuple(self.entries[ident])

    def histories(self) -> Iterator[HistoryEntry]:
        for ident in sorted(self.entries):
            yield from self.entries[ident]


@dataclass
class Ex:
    """One execution to generate: its calls (paths per call) and its deliveries."""

    id: str
    node: str = "implement"
    status: str = "completed"
    completion: str | None = None
    conversation: str | None = None
    calls: tuple[tuple[str, ...], ...] = ()
    # (lesson id, revision, index of the call it rode on)
    delivered: tuple[tuple[str, int, int], ...] = ()


def make_run(run_id: str, start_ms: int, executions: Sequence[Ex], **runtime: object) -> RunRecord:
    seq, clock = 0, start_ms
    made, receipts, deliveries = [], [], []
    for i, ex in enumerate(executions):
        conversation = ex.conversation or f"conv-{ex.id}"
        started = clock
        seqs = []
        for paths in ex.calls:
            clock += 1000
            receipts.append(ToolReceipt(seq=seq, execution=ex.id, time_ms=clock, tool="Read",
                                        paths=paths))  # fmt: skip
            seqs.append((seq, clock))
            seq += 1
        for ident, revision, call in ex.delivered:
            at, when = seqs[call]
            deliveries.append(
                Delivery(lesson_id=ident, revision=revision, node_id=ex.node,
                         conversation_id=conversation, channel="hook", execution=ex.id,
                         time_ms=when, receipt_seq=at)
            )  # fmt: skip
        clock += 1000
        made.append(
            Execution(id=ex.id, node_id=ex.node, occurrence=i + 1, attempt=1, status=ex.status,
                      started_ms=started, ended_ms=clock, conversation_id=conversation,
                      completion=ex.completion)
        )  # fmt: skip
    return RunRecord(
        run_id=run_id,
        checkout=None,
        graph=GRAPH,
        runtime={"activeMemory": dict(runtime)} if runtime else {},
        executions=tuple(made),
        receipts=tuple(receipts),
        deliveries=tuple(deliveries),
    )
