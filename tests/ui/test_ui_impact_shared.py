"""The lesson and impact pages read the report ``lessons impact`` prints, measured once and
measured again only when the store's generation or the runs' files change."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from active_memory.demo import run_demo
from active_memory.impact import ImpactReport
from active_memory.models.changes import Mutation, Publication
from active_memory.store.sqlite import SqliteStore
from active_memory.ui import shared_reads
from active_memory.ui.views import UiData
from checkouts import built_once, copy_built
from cli_runner import run_cli

SETTINGS = "lesson-01JWNF15X00000000000000002"
GRAPH = "lesson-01JWNF15X00000000000000001"


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """A private copy of the demo's two runs and store, made once per test process (a run of
    the demo is about 0.6 CPU-s, a copy a tenth of that): one test publishes to the store and
    another touches a run file, so none shares a folder with another."""
    template, _ = built_once("impact-demo", _run_demo)
    copy_built(template, tmp_path / "demo", ("first/checkout", "second/checkout"))
    return tmp_path / "demo"


def _run_demo(folder: Path) -> None:
    asyncio.run(run_demo(folder))


@pytest.fixture
def measured(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the pages measured the whole report."""
    calls: list[int] = []
    measure = shared_reads.measure_sources

    def counted(*args: Any, **kwargs: Any) -> ImpactReport:
        calls.append(1)
        return measure(*args, **kwargs)

    monkeypatch.setattr(shared_reads, "measure_sources", counted)
    return calls


def _command(demo: Path) -> dict[str, dict[str, Any]]:
    result = run_cli(
        ["lessons", "impact", "--store", demo / "lessons.sqlite3", "--runs", demo, "--json"]
    )
    assert result.exit_code == 0, result.output
    return {lesson["id"]: lesson for lesson in json.loads(result.stdout)["lessons"]}


def _figures(data: UiData, lesson_id: str) -> dict[str, Any]:
    impact = data.lesson_impact(lesson_id)
    assert impact is not None
    return impact.model_dump(mode="json")


def test_the_lesson_page_shows_the_figures_lessons_impact_prints(demo: Path) -> None:
    pytest.importorskip("jinja2", reason="the ui extra is not installed")
    from active_memory.ui import UiServer

    printed = _command(demo)
    data = UiData(demo / "lessons.sqlite3", [demo])
    for lesson_id, figures in printed.items():
        assert _figures(data, lesson_id) == figures
    with UiServer(data) as server:
        client = httpx.Client(base_url=server.url, follow_redirects=True, timeout=60)
        try:
            assert client.get(server.login_url.removeprefix(server.url)).status_code == 200
            page = client.get(f"/lesson/{GRAPH}").text
        finally:
            client.close()
    runs_live = printed[GRAPH]["runs_since"]
    assert f"<div><b>{runs_live}</b> runs live</div>" in page
    assert 'id="never-delivered"' in page


def test_lesson_pages_and_the_impact_page_share_one_measurement(
    demo: Path, measured: list[int]
) -> None:
    data = UiData(demo / "lessons.sqlite3", [demo])
    data.lesson_impact(SETTINGS)
    data.lesson_impact(GRAPH)
    data.impact()
    assert len(measured) == 1


def test_a_publication_or_a_changed_run_file_measures_again(
    demo: Path, measured: list[int]
) -> None:
    path = demo / "lessons.sqlite3"
    data = UiData(path, [demo])
    assert _figures(data, SETTINGS)["live"]
    with SqliteStore(path) as store:
        revision = store.get(SETTINGS).revision
        store.publish(
            Publication(
                run_id="run-retire",
                mutations=(Mutation(op="retire", id=SETTINGS, expected_revision=revision),),
            )
        )
    retired = _figures(data, SETTINGS)
    assert not retired["live"]
    assert retired == _command(demo)[SETTINGS]
    assert len(measured) == 2
    record = next(demo.rglob("run.json"))
    later = record.stat().st_mtime_ns + 1_000_000_000
    os.utime(record, ns=(later, later))
    data.impact()
    assert len(measured) == 3
    data.impact()
    assert len(measured) == 3
