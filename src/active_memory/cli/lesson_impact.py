"""``active-memory lessons impact``: does a lesson help? Measured from recorded runs.

Reads the store (a file, or the memory service's URL) for every lesson's history and the
``--runs`` folders for run records, run logs and reports, then replays every run's recorded
tool calls through recall with the store as it was at the run's start and as it is now
(:mod:`active_memory.impact`). A delivery is not proof the model read the card.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from active_memory.cli._common import (
    EXIT_BAD_INPUT,
    BoundedInt,
    emit_json,
    fail,
    json_option,
    reports_errors,
    runs_option as runs_folders,
)
from active_memory.cli.collector import collector_paused
from active_memory.cli.lesson_stats import _location, _opened, rate_cell
from active_memory.cli.lessons import _clip
from active_memory.impact import ImpactReport, LessonImpact, measure_sources
from active_memory.ledger import load_sources, store_sources
from active_memory.ledger.sources import MAX_DEPTH, MAX_ENTRIES
from active_memory.models.runs import RUN_FILE
from active_memory.store.sqlite import SqliteStore

__all__ = ["impact_command", "impact_lines"]


def _flag(lesson: LessonImpact) -> str:
    if lesson.never_delivered:
        return f"never delivered in {lesson.runs_since} run{'' if lesson.runs_since == 1 else 's'}"
    if lesson.quiet:
        return "delivered often, no later failure"
    if lesson.title is None:
        return "retired; this store never held its card"
    return ""


def impact_lines(report: ImpactReport) -> list[str]:
    """The table ``lessons impact`` prints, then the totals."""
    lines = [
        f"{'ID':<33} {'STATE':<7} {'DELIV':>5} {'RUNS':>4} {'FAIL':>4} {'BEFORE':>6} "
        f"{'TODAY':>5} {'REPEAT D N B':>14}  NOTE"
    ]
    for lesson in report.lessons:
        after = [f for f in lesson.failures if f.existed]
        repeat = " ".join(
            rate_cell(rate) for rate in (lesson.delivered, lesson.not_delivered, lesson.before)
        )
        state = f"r{lesson.revision}" if lesson.live else "retired"
        note = _flag(lesson) or _clip(lesson.title or "-", 40)
        lines.append(
            f"{lesson.id:<33} {state:<7} {lesson.deliveries:>5} {lesson.runs_since:>4} "
            f"{len(after):>4} {lesson.delivered_before_failures:>6} "
            f"{sum(f.would_today for f in lesson.failures):>5} {repeat:>14}  {note}"
        )
    t = report.totals
    lines += [
        f"{t.lessons} lesson{'' if t.lessons == 1 else 's'} over {t.runs} "
        f"run{'' if t.runs == 1 else 's'}: {t.failures} failure{'' if t.failures == 1 else 's'}, "
        f"{t.failures_on_lessons} on some lesson's files, {t.delivered_before} reached first by "
        f"its card, {t.would_today} would be today",
        f"repeat rate: delivered {rate_cell(t.delivered)}, not delivered "
        f"{rate_cell(t.not_delivered)}, before it existed {rate_cell(t.before)}",
        f"never delivered: {t.never_delivered}; delivered in {report.often}+ runs with no later "
        f"failure: {t.quiet}",
    ]
    if t.missed:
        lines.append("missed: " + ", ".join(f"{k} {v}" for k, v in t.missed.items()))
    return lines


def _holds_runs(path: Path) -> bool:
    """Whether ``path`` is a run record, another file a ledger reads (a run log, a report, an
    outcome: what a run's generation comes from), or a folder with a run record within the
    bounds ``--runs`` is read with (symlinks not followed)."""
    if path.is_symlink() or not path.is_dir():
        if not path.is_file():
            return False  # a device, a FIFO: never a run's file
        if path.name == RUN_FILE:
            return True  # read with the others, and named in a warning when it cannot be
        found = load_sources([path])
        return bool(found.log_records or found.outcomes or found.reports)
    seen = 0
    stack = [(path, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > MAX_ENTRIES:
                return False
            if entry.is_symlink():
                continue
            if entry.is_file() and entry.name == RUN_FILE:
                return True
            if entry.is_dir() and depth < MAX_DEPTH:
                stack.append((Path(entry.path), depth + 1))
    return False


def _no_runs(paths: tuple[Path, ...]) -> str:
    named = ", ".join(repr(str(path)) for path in paths)
    return (
        f"--runs {named} holds no run record to replay: a runs folder holds one folder per run "
        f"with its {RUN_FILE} (as a host keeps them beside the store, or as "
        "`active-memory demo --dir DIR` makes them)"
    )


@click.command("impact")
@click.option(
    "--store",
    "location",
    callback=_location,
    help="Lesson store file, or the memory service's https:// URL "
    "(token in $ACTIVE_MEMORY_SERVICE_TOKEN).",
)
@runs_folders(" to replay")
@click.option(
    "--often",
    type=BoundedInt(1, 1_000_000),
    default=3,
    show_default=True,
    help="Runs with a delivery that make a lesson 'delivered often'.",
)
@json_option
@reports_errors
def impact_command(location: str | None, runs: tuple[Path, ...], often: int, as_json: bool) -> None:
    """Does a lesson help? Failures on each lesson's files in recorded runs, whether its card
    came first, and the repeat rate with and without it. Delivery is not proof it was read."""
    empty = tuple(path for path in runs if not _holds_runs(path))
    if empty:
        fail(_no_runs(empty), EXIT_BAD_INPUT)
    with collector_paused():
        _measure_and_print(location, runs, often, as_json)


def _measure_and_print(
    location: str | None, runs: tuple[Path, ...], often: int, as_json: bool
) -> None:
    with _opened(location) as (store, path):
        sources = store_sources(runs, path)
        retired = store.list_retired() if isinstance(store, SqliteStore) else ()
        report = measure_sources(store, sources, retired=[t.id for t in retired], often=often)
    for skipped in sources.skipped:
        click.echo(f"warning: skipped {skipped}", err=True)
    if runs and not sources.records:  # every run.json found was skipped: the warnings say why
        fail(_no_runs(runs), EXIT_BAD_INPUT)
    if as_json:
        emit_json(report.model_dump(mode="json"))
        return
    click.echo("\n".join(impact_lines(report)))
