"""The ``explain`` and ``list`` tools: one lesson in full, or the lessons of a scope.

``explain`` shows the card exactly as agents receive it (the recall frame of that one card, as
a hook or a node prompt would hand it over), then the record kept apart from the card: its
scope, its evidence references with the run, reason and source commit, every revision, oldest
first, and its ledger (:mod:`active_memory.ledger`: deliveries, the runs reached and their
outcomes, maintenance decisions with run ids, how each revision was admitted). A retired
lesson has no card; its history and ledger are still shown when its last content was this
workspace's. An id that is not this workspace's is answered exactly as an unknown one.

``list`` pages through the scope's live lessons, sorted by id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from active_memory.errors import LessonNotFound, StoreError
from active_memory.ledger import LessonLedger
from active_memory.mcp_server.answers import ToolAnswer, framed, quoted
from active_memory.mcp_server.arguments import ExplainArguments, ListArguments
from active_memory.mcp_server.reads import Explained, StoreReads
from active_memory.models.lessons import GraphScope, Lesson, LessonDraft, Scope
from active_memory.recall.render import render
from active_memory.store.results import HistoryEntry

__all__ = ["NotServed", "explain", "list_lessons"]

# Far above any card: one card always fits, so the frame is the one a hook would build.
_CARD_BUDGET = 64 * 1024


class NotServed(LessonNotFound):
    """An id this workspace has no lesson under: unknown, or another repository's."""

    def __init__(self, lesson_id: str, repository: str) -> None:
        StoreError.__init__(
            self,
            f"no lesson {lesson_id!r} among the lessons of {repository}; the list tool shows them",
        )
        self.lesson_id = lesson_id


def _scope_data(scope: Scope) -> dict[str, Any]:
    data: dict[str, Any] = scope.model_dump(mode="json")
    return data


def _scope_line(scope: Scope, *, listed: bool = False) -> str:
    """The scope on one line; ``listed`` leaves out what the list's heading already says."""
    if isinstance(scope, GraphScope):
        qualifier = quoted(scope.repository) if scope.repository else "any repository"
        if listed:
            return f"node {quoted(scope.node_id)}, for {qualifier}"
        return f"graph {scope.graph_hash}, node {quoted(scope.node_id)}, for {qualifier}"
    parts = [] if listed else [f"repository {quoted(scope.repository)}"]
    groups = " | ".join(" ".join(group) for group in scope.keyword_groups)
    for label, values in (("files", ", ".join(scope.files)),
                          ("folders", ", ".join(scope.folders)),
                          ("identifiers", ", ".join(scope.identifiers)),
                          ("keywords", groups)):  # fmt: skip
        if values:
            parts.append(f"{label} {quoted(values)}")
    return "; ".join(parts)


def _evidence(draft: LessonDraft | Lesson) -> dict[str, Any]:
    evidence = draft.evidence
    return {
        "run_id": quoted(evidence.run_id),
        # A reference is one line after its prefix, anything at all: quoted like a title.
        "references": [quoted(reference) for reference in evidence.references],
        "reason": quoted(evidence.reason),
        "source_commit": evidence.source_commit,
    }


def _revision(entry: HistoryEntry) -> dict[str, Any]:
    draft = entry.draft
    return {
        "revision": entry.revision,
        "op": entry.op,
        "generation": entry.generation,
        "time": entry.time,
        "run_id": quoted(entry.run_id),
        "source_revision": entry.source_revision,
        "title": None if draft is None else quoted(draft.title),
        "recommendation": None if draft is None else quoted(draft.recommendation),
    }


def _revision_line(entry: HistoryEntry) -> str:
    head = (f"  r{entry.revision} {entry.op} at generation {entry.generation}, {entry.time}, "
            f"run {quoted(entry.run_id)}")  # fmt: skip
    if entry.source_revision:
        head += f" (content of r{entry.source_revision})"
    if entry.draft is None:
        note = "content erased by purge" if entry.erased else "no content"
        return f"{head}: {note}"
    return f"{head}: {quoted(entry.draft.title)} / {quoted(entry.draft.recommendation)}"


def _quoted_tree(value: Any) -> Any:
    """``value`` (JSON data) with every string in it, keys included, quoted."""
    if isinstance(value, str):
        return quoted(value)
    if isinstance(value, list):
        return [_quoted_tree(item) for item in value]
    if isinstance(value, dict):
        return {quoted(key): _quoted_tree(item) for key, item in value.items()}
    return value


def _ledger_data(ledger: LessonLedger) -> dict[str, Any]:
    # Outcomes, stages, codes and run ids are read from files under the runs folders: every
    # string is quoted, not only the titles.
    data: dict[str, Any] = _quoted_tree(ledger.model_dump(mode="json"))
    return data


def _ledger_lines(ledger: LessonLedger, skipped: int) -> list[str]:
    runs = len(ledger.runs)
    lines = [
        "ledger (counted from run records, run logs, outcomes, reports and exposure files):",
        f"  delivered {ledger.delivered} time(s) to {ledger.conversations} conversation(s) in "
        f"{runs} run(s); {ledger.standalone.deliveries} time(s) outside runs",
        "  run outcomes: "
        + (
            ", ".join(f"{quoted(name)} {count}" for name, count in ledger.outcomes.items())
            or "none"
        ),
    ]
    for run in ledger.runs:
        lines.append(
            f"  run {quoted(run.run_id)}: {run.deliveries} delivery(ies), outcome "
            f"{quoted(run.outcome or 'unknown')}, {run.tool_calls_after} tool call(s) after"
        )
    for decision in ledger.decisions:
        produced = f" -> r{decision.revision}" if decision.revision is not None else ""
        lines.append(
            f"  decision {decision.action} in run {quoted(decision.run_id)}{produced} "
            f"[{decision.source}]"
        )
    for refused in ledger.rejections:
        lines.append(
            f"  refused in run {quoted(refused.run_id)}: "
            f"{quoted(refused.stage)}:{quoted(refused.code)}"
        )
    for admitted in ledger.revisions:
        held = f", held for {quoted(', '.join(admitted.held))}" if admitted.held else ""
        lines.append(
            f"  r{admitted.revision} admitted via {admitted.path} "
            f"(run {quoted(admitted.run_id)}){held}"
        )
    if ledger.quarantined:
        lines.append("  a proposal with this id waits in the quarantine")
    if skipped:
        lines.append(f"  {skipped} source file(s) could not be read and were left out")
    return lines


def explain(reads: StoreReads, raw: Mapping[str, Any]) -> ToolAnswer:
    arguments = ExplainArguments.parse(raw).checked()
    found = reads.explain(arguments.id)
    if found is None:
        raise NotServed(arguments.id, reads.workspace.key)
    return _explained(arguments.id, found)


def _explained(lesson_id: str, found: Explained) -> ToolAnswer:
    lesson = found.lesson
    latest = lesson if lesson is not None else next(
        entry.draft for entry in reversed(found.history) if entry.draft is not None
    )  # fmt: skip
    card = render((lesson,), budget_bytes=_CARD_BUDGET).text if lesson is not None else None
    evidence = _evidence(latest)
    if lesson is not None:
        head = f"{lesson_id} revision {lesson.revision}, a {lesson.scope.kind} lesson (live)"
    else:
        head = f"{lesson_id}, retired at revision {found.retired_at} (its last content below)"
    lines = [
        head,
        f"scope: {_scope_line(latest.scope)}",
        "evidence (kept apart from the card, never injected):",
        f"  run {evidence['run_id']}, source commit {evidence['source_commit'] or '-'}",
        f"  references: {', '.join(evidence['references'])}",
        f"  reason: {evidence['reason']}",
        "history (oldest first):",
        *(_revision_line(entry) for entry in found.history),
        *_ledger_lines(found.ledger, len(found.skipped)),
    ]
    record = framed(lines)
    text = f"{card}\n\n{record}" if card is not None else record
    data = {
        "id": lesson_id,
        "live": lesson is not None,
        "revision": lesson.revision if lesson is not None else found.retired_at,
        "card": card,
        "scope": _scope_data(latest.scope),
        "evidence": evidence,
        "history": [_revision(entry) for entry in found.history],
        "ledger": _ledger_data(found.ledger),
        "ledger_skipped": len(found.skipped),
    }
    return ToolAnswer(text, data)


def list_lessons(reads: StoreReads, raw: Mapping[str, Any]) -> ToolAnswer:
    arguments = ListArguments.parse(raw).checked()
    key = reads.workspace.key
    found = reads.lessons(graph_hash=arguments.graph_hash, node_id=arguments.node)
    page = found[arguments.offset : arguments.offset + arguments.limit]
    if arguments.scope == "graph":
        node = f", node {quoted(arguments.node)}" if arguments.node else ""
        label = f"graph {arguments.graph_hash}{node}, seen from {key}"
    else:
        label = f"repository {key}"
    data = {
        "repository": key,
        "scope": arguments.scope,
        "total": len(found),
        "offset": arguments.offset,
        "lessons": [
            {
                "id": lesson.id,
                "revision": lesson.revision,
                "title": quoted(lesson.title),
                "scope": _scope_data(lesson.scope),
            }
            for lesson in page
        ],
    }
    if not page:
        shown = "none" if not found else f"none at offset {arguments.offset}"
        return ToolAnswer(f"Lessons of {label}: {shown} of {len(found)}.", data)
    first = arguments.offset + 1
    lines = [f"Lessons of {label}: {first}-{first + len(page) - 1} of {len(found)}."]
    lines += [
        f"[{lesson.id}@{lesson.revision}] {quoted(lesson.title)} "
        f"({_scope_line(lesson.scope, listed=True)})"
        for lesson in page
    ]
    return ToolAnswer(framed(lines), data)
