"""``active-memory lessons stats [ID]``: what each lesson has done, from what is recorded.

The store (a file, a ``postgresql://`` URL with ``$ACTIVE_MEMORY_TENANT``, or the memory
service's ``https://`` URL with ``$ACTIVE_MEMORY_SERVICE_TOKEN``) gives the lessons, each one's
history and the proposals held in its quarantine; ``--runs`` folders give the run records, run logs,
latched outcomes and postmortem reports (default: the ``runs`` folder beside the store, where
the host keeps each run's state). A local store adds its exposure files. Each lesson's impact
(:mod:`active_memory.impact`, as ``lessons impact`` measures it) is shown too: ``REACHED``
counts the failures on its files after it existed that its card reached first.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from active_memory.cli._common import (
    EXIT_BAD_INPUT,
    emit_json,
    fail,
    json_option,
    reports_errors,
    runs_option,
)
from active_memory.cli.lessons import _clip
from active_memory.errors import ConfigError, LessonValidationError
from active_memory.impact import LessonImpact, RepeatRate, measure_sources
from active_memory.ledger import LessonLedger, ledgers, lesson_ledger, store_sources
from active_memory.models.ids import validate_lesson_id
from active_memory.store.admin_backend import AdminBackend
from active_memory.store.paths import check_store_location, default_store_path
from active_memory.store.select import is_team_location, open_backend
from active_memory.store.sqlite import SqliteStore

__all__ = ["rate_cell", "stats_command"]


def _location(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None or is_team_location(value):
        return value
    try:
        return str(check_store_location(value))
    except ConfigError as error:
        fail(f"--store: {error.problem}", EXIT_BAD_INPUT)


def _optional_id(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return validate_lesson_id("ID", value)
    except LessonValidationError as error:
        raise click.BadParameter(error.problem, ctx=ctx, param=param) from None


@contextmanager
def _opened(location: str | None) -> Iterator[tuple[AdminBackend, Path | None]]:
    """The store to read, and the local store file (None for a team store)."""
    if is_team_location(location):
        with open_backend(location) as backend:
            yield backend, None
        return
    path = Path(location) if location is not None else default_store_path()
    with SqliteStore(path, read_only=True) as store:
        yield store, path


def _outcome_cell(ledger: LessonLedger) -> str:
    o = ledger.outcomes
    return f"{o.get('succeeded', 0)}/{o.get('failed', 0)}/{o.get('cancelled', 0)}"


def _decision_cell(ledger: LessonLedger) -> str:
    c = ledger.decision_counts
    return f"{c['keep']}/{c['adapt']}/{c['retire']}/{c['defer']}"


def rate_cell(rate: RepeatRate) -> str:
    """``failed/runs``, or ``-`` when the lesson applied to no such run."""
    return f"{rate.failed}/{rate.runs}" if rate.runs else "-"


def _reached_cell(impact: LessonImpact | None) -> str:
    """Failures on the lesson's files after it existed that its card reached first, of all."""
    if impact is None:
        return "-"
    after = sum(1 for failure in impact.failures if failure.existed)
    return f"{impact.delivered_before_failures}/{after}"


def _table(found: tuple[LessonLedger, ...], impacts: dict[str, LessonImpact]) -> list[str]:
    lines = [
        f"{'ID':<33} {'STATE':<8} {'DELIV':>5} {'CONV':>4} {'RUNS':>4} {'OK/FAIL/CXL':>11} "
        f"{'K/A/R/D':>9} {'REACHED':>7}  TITLE"
    ]
    for ledger in found:
        state = f"r{ledger.revision}" if ledger.live else "retired"
        if not ledger.live and not ledger.revisions:
            state = "absent"  # delivered by a record, but never in this store
        if ledger.quarantined:
            state = "held"
        lines.append(
            f"{ledger.id:<33} {state:<8} {ledger.delivered + ledger.standalone.deliveries:>5} "
            f"{ledger.conversations + ledger.standalone.conversations:>4} {len(ledger.runs):>4} "
            f"{_outcome_cell(ledger):>11} {_decision_cell(ledger):>9} "
            f"{_reached_cell(impacts.get(ledger.id)):>7}  "
            f"{_clip(ledger.title or '-', 50)}"
        )
    return lines


def _impact_lines(impact: LessonImpact | None) -> list[str]:
    """What ``lessons impact`` says of the lesson, in two or three lines."""
    if impact is None:
        return []
    after = [f for f in impact.failures if f.existed]
    reached = [f for f in after if f.delivered]
    calls = sorted(f.tool_calls_before for f in reached if f.tool_calls_before is not None)
    before = f" ({', '.join(map(str, calls))} tool call(s) before)" if calls else ""
    lines = [
        f"impact          {len(after)} failure(s) on its files after it existed, "
        f"{len(reached)} reached first by its card{before}; "
        f"{len(impact.failures) - len(after)} before it existed",
        f"repeat rate     delivered {rate_cell(impact.delivered)}, not delivered "
        f"{rate_cell(impact.not_delivered)}, before it existed {rate_cell(impact.before)} "
        "(failed runs/runs it applied to)",
    ]
    if impact.never_delivered:
        lines.append(
            f"                never delivered in {impact.runs_since} run(s) since it existed"
        )
    if impact.quiet:
        lines.append("                delivered often, no later failure on its files")
    return lines


def _details(ledger: LessonLedger, impact: LessonImpact | None = None) -> list[str]:
    state = f"live at revision {ledger.revision}" if ledger.live else "retired"
    if not ledger.live and not ledger.revisions:
        state = "not in this store"
    lines = [f"{ledger.id} ({ledger.kind or 'unknown kind'}, {state})"]
    if ledger.title:
        lines.append(f"title           {ledger.title}")
    lines.append(
        f"delivered       {ledger.delivered} time(s) to {ledger.conversations} conversation(s) "
        f"in {len(ledger.runs)} run(s)"
    )
    if ledger.standalone.deliveries:
        lines.append(
            f"outside runs    {ledger.standalone.deliveries} delivery(ies) to "
            f"{ledger.standalone.conversations} conversation(s) (exposure files)"
        )
    outcomes = ", ".join(f"{k} {v}" for k, v in ledger.outcomes.items()) or "none recorded"
    lines.append(f"run outcomes    {outcomes}")
    for run in ledger.runs:
        lines.append(
            f"  run {run.run_id}: {run.deliveries} delivery(ies), "
            f"{len(run.conversations)} conversation(s), outcome {run.outcome or 'unknown'}, "
            f"{run.tool_calls_after} tool call(s) after"
        )
    lines += _impact_lines(impact)
    lines.append("decisions")
    for d in ledger.decisions or ():
        extra = f" (was {d.detail})" if d.detail else ""
        revision = f" -> r{d.revision}" if d.revision is not None else ""
        lines.append(f"  {d.action:<7} run {d.run_id}{revision}{extra} [{d.source}]")
    if not ledger.decisions:
        lines.append("  none recorded")
    for r in ledger.rejections:
        lines.append(f"  refused run {r.run_id}: {r.stage}:{r.code} ({r.role or '-'})")
    lines.append("revisions")
    for rev in ledger.revisions:
        held = f", held for {', '.join(rev.held)}" if rev.held else ""
        lines.append(
            f"  r{rev.revision} {rev.op:<7} via {rev.path:<6} run {rev.run_id} "
            f"generation {rev.generation} at {rev.time}{held}"
        )
    return lines


def _impact_json(impact: LessonImpact | None) -> object:
    if impact is None:
        return None
    return impact.model_dump(mode="json", exclude={"id", "live", "revision", "kind", "title",
                                                   "repository"})  # fmt: skip


@click.command("stats")
@click.argument("lesson_id", metavar="[ID]", required=False, callback=_optional_id)
@click.option(
    "--store",
    "location",
    callback=_location,
    help="Lesson store: a file, a postgresql:// URL (tenant in $ACTIVE_MEMORY_TENANT) or the "
    "memory service's https:// URL (token in $ACTIVE_MEMORY_SERVICE_TOKEN).",
)
@runs_option("")
@json_option
@reports_errors
def stats_command(
    lesson_id: str | None, location: str | None, runs: tuple[Path, ...], as_json: bool
) -> None:
    """What each lesson has done: deliveries, runs and their outcomes, maintenance decisions
    and the admission of every revision. These counters never change recall ranking."""
    with _opened(location) as (store, path):
        sources = store_sources(runs, path)
        held = {entry.id for entry in store.held()}
        retired_ids = [t.id for t in store.list_retired()]
        impacts = {
            impact.id: impact
            for impact in measure_sources(store, sources, retired=retired_ids).lessons
        }
        if lesson_id is not None:
            found: tuple[LessonLedger, ...] = (
                lesson_ledger(lesson_id, store, sources, quarantined=held),
            )
        else:
            found = ledgers(store, sources, retired=retired_ids, quarantined=held)
    for skipped in sources.skipped:
        click.echo(f"warning: skipped {skipped}", err=True)
    if as_json:
        data = [
            {**ledger.model_dump(mode="json"), "impact": _impact_json(impacts.get(ledger.id))}
            for ledger in found
        ]
        emit_json(data[0] if lesson_id is not None else data)
        return
    if lesson_id is not None:
        click.echo("\n".join(_details(found[0], impacts.get(found[0].id))))
        return
    click.echo("\n".join(_table(found, impacts)))
    click.echo(f"{len(found)} lesson{'' if len(found) == 1 else 's'}")
