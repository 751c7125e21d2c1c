"""Rejections by stage over time as a stacked bar chart: geometry only, drawn by the template
as inline SVG (no script, no style attribute: the page's CSP allows neither inline)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Bar", "Chart", "rejection_chart"]

WIDTH, HEIGHT = 720, 240
_LEFT, _BOTTOM, _TOP = 40, 40, 10
# A fixed, colour-blind-safe palette (Okabe-Ito); stages beyond it repeat.
_PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442", "#000000")


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    fill: str
    label: str


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    bars: tuple[Bar, ...]
    days: tuple[tuple[float, str], ...]  # (x of the label, date)
    ticks: tuple[tuple[float, int], ...]  # (y, count)
    legend: tuple[tuple[str, str], ...]  # (stage, colour)
    by_day: tuple[tuple[str, dict[str, int]], ...]  # date -> stage:code counts
    total: int


def _day(time_ms: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(time_ms / 1000))


def rejection_chart(rejections: Sequence[tuple[int, str, str]]) -> Chart:
    """One bar per UTC day with rejections, stacked by admission stage."""
    days: dict[str, Counter[str]] = {}
    codes: dict[str, Counter[str]] = {}
    for when, stage, code in rejections:
        day = _day(when)
        days.setdefault(day, Counter())[stage] += 1
        codes.setdefault(day, Counter())[f"{stage}:{code}"] += 1
    stages = sorted({stage for counter in days.values() for stage in counter})
    colour = {stage: _PALETTE[i % len(_PALETTE)] for i, stage in enumerate(stages)}
    peak = max((sum(c.values()) for c in days.values()), default=0)
    plot_w, plot_h = WIDTH - _LEFT - 10, HEIGHT - _BOTTOM - _TOP
    ordered = sorted(days)
    slot = plot_w / max(len(ordered), 1)
    bar_w = min(48.0, slot * 0.7)
    bars: list[Bar] = []
    labels: list[tuple[float, str]] = []
    for i, day in enumerate(ordered):
        x = _LEFT + i * slot + (slot - bar_w) / 2
        base = float(HEIGHT - _BOTTOM)
        for stage in stages:
            count = days[day].get(stage, 0)
            if not count:
                continue
            height = plot_h * count / peak
            base -= height
            bars.append(Bar(x, base, bar_w, height, colour[stage], f"{day} {stage}: {count}"))
        labels.append((x + bar_w / 2, day))
    ticks = tuple(
        (HEIGHT - _BOTTOM - plot_h * value / peak, value)
        for value in sorted({0, peak // 2, peak})
        if peak
    )
    return Chart(
        width=WIDTH,
        height=HEIGHT,
        bars=tuple(bars),
        days=tuple(labels),
        ticks=ticks,
        legend=tuple((stage, colour[stage]) for stage in stages),
        by_day=tuple((day, dict(sorted(codes[day].items()))) for day in ordered),
        total=len(rejections),
    )
