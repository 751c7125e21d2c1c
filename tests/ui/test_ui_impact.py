"""The browser's impact: a chart per lesson (inline SVG) and a table per repository."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from active_memory.impact import measure_impact
from active_memory.models.runs import dump_run_record
from active_memory.ui.impact_view import CLEAN, FAILED, impact_chart, repository_rows
from impact.impact_kit import REPOSITORY, Ex, HistoryStore, make_run

T0 = 1_750_000_000_000
LEARNED = "2025-06-15T15:06:40.000Z"


def _store_and_runs() -> tuple[HistoryStore, str, str, list]:  # type: ignore[type-arg]
    store = HistoryStore()
    helped = store.publish(1, ["src/a.py"], "run-0", LEARNED)
    idle = store.publish(2, ["src/never.py"], "run-0", LEARNED, title="A file nobody opens")
    runs = [
        make_run("run-0", T0, [Ex("e0", status="error", calls=(("src/a.py",),))]),
        make_run("run-1", T0 + 3_600_000,
                 [Ex("e1", status="error", calls=(("src/a.py",), ("src/z.py",)),
                     delivered=((helped, 1, 0),))]),
        make_run("run-2", T0 + 7_200_000, [Ex("e2", calls=(("src/a.py",),))]),
        make_run("run-3", T0 + 9_000_000, [Ex("e3", calls=(("src/z.py",),))]),
    ]  # fmt: skip
    return store, helped, idle, runs


def test_the_chart_has_a_column_per_run_with_deliveries_and_outcome() -> None:
    store, helped, _, runs = _store_and_runs()
    lesson = next(x for x in measure_impact(store, runs).lessons if x.id == helped)
    chart = impact_chart(lesson)
    # run-3 touched nothing of it: a lesson's runs are those a call matched or that delivered it
    assert [c.mark for c in chart.columns] == [FAILED, FAILED, CLEAN]
    assert [c.existed for c in chart.columns] == [False, True, True]
    heights = [c.bar_height for c in chart.columns]
    assert heights[1] > 0
    assert heights[0] == heights[2] == 0
    assert "run-1: revision 1, 1 delivery(ies), failed on its files" in chart.columns[1].label


def test_the_repository_table_sums_its_lessons() -> None:
    store, _, idle, runs = _store_and_runs()
    (row,) = repository_rows(measure_impact(store, runs))
    assert (row.repository, row.lessons, row.deliveries) == (REPOSITORY, 2, 1)
    assert (row.failures_after, row.reached_first) == (1, 1)
    assert row.never_delivered == (idle,)
    assert (row.delivered.failed, row.delivered.runs) == (1, 1)


def test_the_pages_show_the_chart_and_the_table(tmp_path: Path) -> None:
    pytest.importorskip("jinja2", reason="the ui extra is not installed")
    from active_memory.ui import UiData, UiServer

    store, helped, idle, runs = _store_and_runs()
    for record in runs:
        dump_run_record(record, tmp_path / "runs" / record.run_id)
    with UiServer(UiData(None, [tmp_path / "runs"], remote=store)) as server:  # type: ignore[arg-type]
        client = httpx.Client(base_url=server.url, follow_redirects=True, timeout=60)
        try:
            assert client.get(server.login_url.removeprefix(server.url)).status_code == 200
            page = client.get(f"/lesson/{helped}").text
            chart = page[page.index('<svg class="chart" id="impact-chart"') :]
            chart = chart[: chart.index("</svg>")]
            assert chart.count(f'fill="{FAILED}"') == 2
            assert "<script" not in page
            assert "style=" not in chart
            failures = re.findall(r"<tr><td><code>(run-\d)</code></td><td><code>(e\d)</code>", page)
            assert failures == [("run-0", "e0"), ("run-1", "e1")]
            assert 'id="never-delivered"' in client.get(f"/lesson/{idle}").text
            table = client.get("/impact").text
            assert 'id="impact-repositories"' in table
            assert REPOSITORY in table
            assert f'href="/lesson/{idle}"' in table
        finally:
            client.close()
