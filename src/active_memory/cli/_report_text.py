"""Human output for postmortem reports, and the progress lines shown on a terminal."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping

import click

from active_memory.models.lessons import Lesson
from active_memory.postmortem.report import PostmortemReport, SpecialistReport

__all__ = ["format_lessons", "format_report", "progress_printer"]


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{key} {value}" for key, value in counts.items() if value) or "none"


def _row(s: SpecialistReport) -> str:
    d = s.decisions
    tokens = f"{s.input_tokens}/{s.output_tokens}"
    # The input a prompt cache served, and the rest, which a provider bills in full.
    cached = f"{s.cache_read_tokens}/{s.input_tokens - s.cache_read_tokens}"
    return (
        f"  {s.specialist:<23} {s.status:<14} {s.batches:>7} {d.get('keep', 0):>4} "
        f"{d.get('adapt', 0):>5} {d.get('retire', 0):>6} {d.get('defer', 0):>5} "
        f"{s.proposals_accepted:>4} {s.rejected:>8} {tokens:>13} {cached:>15} "
        f"{s.elapsed_ms:>7} ms"
    )


def _error_line(s: SpecialistReport) -> str:
    """A failed specialist: its status, its cause's code (one per cause), its retries, why."""
    retries = f"{s.retries} retr{'y' if s.retries == 1 else 'ies'}"
    return f"  {s.specialist}: {s.status} ({s.error_code}), {retries}: {s.error}"


def format_report(report: PostmortemReport) -> list[str]:
    seconds = report.elapsed_ms / 1000
    lines = [
        f"run          {report.run_id}",
        f"status       {report.status} in {seconds:.2f} s",
    ]
    if report.reason:
        lines.append(f"reason       {report.reason}")
    lines.extend(f"note         {note}" for note in report.notes)
    if report.source_node is not None:
        # A lane and host are shown for an SDK adapter only: a replay keeps the inherited lane.
        route, where = report.provider, ""
        if report.host:
            lane = "" if report.lane in (None, report.provider) else f"/{report.lane}"
            route, where = f"{report.provider}{lane}", f" at {report.host}"
        answered = ""
        if report.answered_model and report.answered_model != report.model:
            answered = f", the server answered as {report.answered_model}"
        lines.append(f"source node  {report.source_node} ({route} {report.model}{where}{answered})")
    if report.generation_before is not None:
        lines.append(
            f"store        generation {report.generation_before} -> {report.generation_after}"
        )
    lines.append(
        "  specialist              status         batches keep adapt retire defer  new "
        "rejected tokens in/out cached/uncached    time"
    )
    lines.extend(_row(s) for s in report.specialists)
    lines.append(f"rejections   {_counts(report.rejections)}")
    verb = "would publish" if report.dry_run else "published"
    lines.append(f"changes      {len(report.changes)} {verb}")
    for change in report.changes:
        revision = change.revision if change.revision is not None else "-"
        title = f"  {change.title}" if change.title else ""
        lines.append(
            f"  {change.op:<7} {change.id}@{revision:<3} {change.specialist:<22}{title}".rstrip()
        )
    if report.quarantined:
        lines.append(f"quarantined  {len(report.quarantined)} held for `lessons review`")
        for held in report.quarantined:
            kept = "" if held.kept else "  (not kept)"
            lines.append(f"  {held.id}  {held.specialist:<22} {','.join(held.signals)}{kept}")
    downgrades = [(s.specialist, d) for s in report.specialists for d in s.downgrades]
    if downgrades:
        lines.append("downgrades")
        for specialist, note in downgrades:
            lines.append(f"  {note.action} -> defer  {note.id}  {specialist}  ({note.reason})")
    errors = [s for s in report.specialists if s.error]
    if errors:
        lines.append("errors")
        lines.extend(_error_line(s) for s in errors)
    lines.append("hashes       prompt / contract sha256")
    for name, digest in report.prompt_sha256.items():
        contract = report.contract_sha256.get(name, "")
        lines.append(f"  {name:<23} {digest[:16]} / {contract[:16]}")
    return lines


def format_lessons(lessons: tuple[Lesson, ...]) -> list[str]:
    lines: list[str] = []
    for lesson in lessons:
        scope = lesson.scope
        if scope.kind == "graph":
            where = f"node {scope.model_dump()['node_id']}"
        else:
            data = scope.model_dump(mode="json")
            where = ", ".join([*data["files"], *data["folders"], *data["identifiers"]])
        lines.append(f"{lesson.key}  [{scope.kind}: {where}]")
        lines.append(f"  {lesson.title}")
        lines.append(f"  {lesson.recommendation}")
        evidence = lesson.evidence
        commit = (evidence.source_commit or "unknown")[:12]
        lines.append(f"  evidence: {', '.join(evidence.references)} (source {commit})")
    return lines


def progress_printer(enabled: bool) -> Callable[[str, str], None] | None:
    """One stderr line per specialist state change, only when stderr is a terminal."""
    if not enabled or not sys.stderr.isatty():
        return None
    started = time.monotonic()

    def show(specialist: str, state: str) -> None:
        click.echo(f"[{time.monotonic() - started:6.2f}s] {specialist}: {state}", err=True)

    return show
