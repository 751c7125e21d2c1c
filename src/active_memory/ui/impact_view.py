"""What the browser shows of lesson impact: a small chart per lesson and a table per repository.

The chart has one column per run the lesson took part in (a call matched it or the run delivered
it; replay order): the upper bar is the
run's deliveries of the card, the lower mark says how the run ended for the lesson's files
(failed on them, or not), and runs before the lesson existed are shaded. Geometry only: the
template draws it as inline SVG (no script, no style attribute: the page's CSP allows neither).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from active_memory.impact import ImpactReport, LessonImpact, RepeatRate

__all__ = ["ImpactChart", "ImpactColumn", "RepositoryImpact", "impact_chart", "repository_rows"]

WIDTH, HEIGHT = 480, 120
_LEFT, _TOP, _BAR_HEIGHT, _MARK_Y, _MARK_HEIGHT = 10, 10, 60, 80, 14
# Okabe-Ito: delivered (blue), failed on its files (vermillion), applied without a failure
# (bluish green), took part without a matching call (grey).
DELIVERED, FAILED, CLEAN, IDLE, BEFORE = "#0072B2", "#D55E00", "#009E73", "#999999", "#eeeeee"
_MAX_COLUMNS = 120  # the latest runs; a lesson in more runs shows its last 120


@dataclass(frozen=True, slots=True)
class ImpactColumn:
    """One run: its slot, its delivery bar (height 0 for none) and its outcome mark."""

    x: float
    width: float
    bar_y: float
    bar_height: float
    mark: str
    existed: bool
    label: str


@dataclass(frozen=True, slots=True)
class ImpactChart:
    width: int
    height: int
    columns: tuple[ImpactColumn, ...]
    mark_y: int
    mark_height: int
    shown: int
    total: int


def _mark(applied: bool, failed: bool) -> str:
    if failed:
        return FAILED
    return CLEAN if applied else IDLE


def impact_chart(lesson: LessonImpact) -> ImpactChart:
    """The lesson's runs as columns: deliveries above, the outcome on its files below."""
    runs = lesson.runs[-_MAX_COLUMNS:]
    peak = max((run.deliveries for run in runs), default=0)
    slot = (WIDTH - 2 * _LEFT) / max(len(runs), 1)
    width = max(2.0, min(24.0, slot * 0.8))
    columns = []
    for i, run in enumerate(runs):
        x = _LEFT + i * slot + (slot - width) / 2
        height = _BAR_HEIGHT * run.deliveries / peak if peak else 0.0
        outcome = "failed on its files" if run.failed else "no failure on its files"
        existed = run.revision is not None
        when = f"revision {run.revision}" if existed else "before it existed"
        columns.append(
            ImpactColumn(
                x=x,
                width=width,
                bar_y=_TOP + _BAR_HEIGHT - height,
                bar_height=height,
                mark=_mark(run.applied, run.failed),
                existed=existed,
                label=f"{run.run_id}: {when}, {run.deliveries} delivery(ies), {outcome}",
            )
        )
    return ImpactChart(WIDTH, HEIGHT, tuple(columns), _MARK_Y, _MARK_HEIGHT, len(runs),
                       len(lesson.runs))  # fmt: skip


@dataclass(frozen=True, slots=True)
class RepositoryImpact:
    """One repository's lessons together (graph lessons without one under ``(graph)``)."""

    repository: str
    lessons: int
    deliveries: int
    failures_after: int
    reached_first: int
    delivered: RepeatRate
    not_delivered: RepeatRate
    before: RepeatRate
    never_delivered: tuple[str, ...]
    quiet: tuple[str, ...]


def _sum(rates: Sequence[RepeatRate]) -> RepeatRate:
    return RepeatRate(runs=sum(r.runs for r in rates), failed=sum(r.failed for r in rates))


def repository_rows(report: ImpactReport) -> list[RepositoryImpact]:
    """One row per repository, sorted by name."""
    grouped: dict[str, list[LessonImpact]] = {}
    for lesson in report.lessons:
        grouped.setdefault(lesson.repository or "(graph)", []).append(lesson)
    rows = []
    for repository in sorted(grouped):
        lessons = grouped[repository]
        after = [f for lesson in lessons for f in lesson.failures if f.existed]
        rows.append(
            RepositoryImpact(
                repository=repository,
                lessons=len(lessons),
                deliveries=sum(lesson.deliveries for lesson in lessons),
                failures_after=len(after),
                reached_first=sum(1 for f in after if f.delivered),
                delivered=_sum([lesson.delivered for lesson in lessons]),
                not_delivered=_sum([lesson.not_delivered for lesson in lessons]),
                before=_sum([lesson.before for lesson in lessons]),
                never_delivered=tuple(x.id for x in lessons if x.never_delivered),
                quiet=tuple(x.id for x in lessons if x.quiet),
            )
        )
    return rows
