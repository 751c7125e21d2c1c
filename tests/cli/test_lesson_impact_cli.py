"""``lessons impact`` on the demo's two runs: each lesson with its deliveries, the run-2
failures on its files, and whether each delivery came before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from active_memory.demo import run_demo
from cli.authoring_kit import isolated_build
from cli_runner import run_cli

FIRST, SECOND = "run-20250601-retry-and-review", "run-20250601-clean-success"
GRAPH = "lesson-01JWNF15X00000000000000001"
SETTINGS = "lesson-01JWNF15X00000000000000002"
DOCS = "lesson-01JWNF15X00000000000000003"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import asyncio

    folder = tmp_path_factory.mktemp("impact") / "demo"
    with isolated_build(tmp_path_factory.mktemp("isolated")):
        asyncio.run(run_demo(folder))
    return folder


def _impact(demo: Path, *extra: str) -> dict:  # type: ignore[type-arg]
    result = run_cli(
        ["lessons", "impact", "--store", demo / "lessons.sqlite3", "--runs", demo, *extra]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_each_demo_lesson_is_listed_with_its_deliveries_and_failures(demo: Path) -> None:
    report = _impact(demo, "--json")
    assert report["runs"] == [FIRST, SECOND]
    lessons = {lesson["id"]: lesson for lesson in report["lessons"]}
    assert sorted(lessons) == [GRAPH, SETTINGS, DOCS]
    settings = lessons[SETTINGS]
    # run 2 delivered it once, on its first call; run 2 had no failure on its files
    assert [(r["run_id"], r["revision"], r["deliveries"], r["before_failure"], r["failed"])
            for r in settings["runs"]] == [
        (FIRST, None, 0, 0, True), (SECOND, 1, 1, 0, False)
    ]  # fmt: skip
    assert not [f for f in settings["failures"] if f["run_id"] == SECOND]
    # run 1's failures on its files came before it existed: it was learned there
    assert {(f["execution"], f["existed"], f["learned_here"], f["delivered"], f["missed"])
            for f in settings["failures"]} == {
        ("ex-implement-1a1", False, True, False, "before_it_existed"),
        ("ex-implement-1a2", False, True, False, "before_it_existed"),
    }  # fmt: skip
    assert all(f["would_today"] for f in settings["failures"])
    assert lessons[GRAPH]["never_delivered"]
    assert lessons[GRAPH]["runs_since"] == 1
    assert not lessons[DOCS]["live"]
    assert report["totals"]["failures"] == 3


def test_the_table_names_the_never_delivered_lesson(demo: Path) -> None:
    result = run_cli(["lessons", "impact", "--store", demo / "lessons.sqlite3", "--runs", demo])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    graph = next(line for line in lines if line.startswith(GRAPH))
    assert graph.endswith("never delivered in 1 run")
    assert "3 lessons over 2 runs: 3 failures" in result.stdout


def test_a_bad_often_is_a_usage_error(demo: Path) -> None:
    result = run_cli(["lessons", "impact", "--store", demo / "lessons.sqlite3", "--often", "0"])
    assert result.exit_code == 2


def test_lessons_stats_shows_the_same_figures(demo: Path) -> None:
    store = demo / "lessons.sqlite3"
    result = run_cli(["lessons", "stats", "--store", store, "--runs", demo, "--json"])
    assert result.exit_code == 0, result.output
    by_id = {ledger["id"]: ledger for ledger in json.loads(result.stdout)}
    assert by_id[GRAPH]["impact"]["never_delivered"]
    assert by_id[SETTINGS]["impact"]["before"] == {"runs": 1, "failed": 1}
    assert by_id["lesson-01JWKQ7Z3M8V4T2R6N0P5X9C1B"]["impact"] is None  # never in this store
    table = run_cli(["lessons", "stats", "--store", store, "--runs", demo]).stdout.splitlines()
    assert table[0].split()[7] == "REACHED"
    row = next(line for line in table if line.startswith(SETTINGS)).split()
    assert row[7] == "0/0"
    one = run_cli(["lessons", "stats", SETTINGS, "--store", store, "--runs", demo]).stdout
    assert "impact          0 failure(s) on its files after it existed" in one
    assert "2 before it existed" in one


def test_an_imported_store_keeps_the_figures_its_runs_prove(demo: Path, tmp_path: Path) -> None:
    exported = run_cli(["lessons", "export", "--store", demo / "lessons.sqlite3"])
    assert exported.exit_code == 0, exported.output
    (tmp_path / "lessons.jsonl").write_text(exported.stdout)
    fresh = tmp_path / "fresh.sqlite3"
    imported = run_cli(["lessons", "import", "--store", fresh, tmp_path / "lessons.jsonl"])
    assert imported.exit_code == 0, imported.output
    report = json.loads(
        run_cli(["lessons", "impact", "--store", fresh, "--runs", demo, "--json"]).stdout
    )
    lessons = {lesson["id"]: lesson for lesson in report["lessons"]}
    assert sorted(lessons) == [GRAPH, SETTINGS, DOCS]
    # the second run delivered both: that proves they existed there, import or not
    assert [(lessons[i]["deliveries"], lessons[i]["runs_since"], lessons[i]["delivered"])
            for i in (SETTINGS, DOCS)] == [(1, 1, {"runs": 1, "failed": 0})] * 2  # fmt: skip
    assert not lessons[DOCS]["live"]
    table = run_cli(["lessons", "impact", "--store", fresh, "--runs", demo]).stdout.splitlines()
    docs = next(line for line in table if line.startswith(DOCS)).split()
    assert docs[1:4] == ["retired", "1", "1"]
    assert " ".join(docs).endswith("retired; this store never held its card")


def _not_runs(tmp_path: Path, kind: str) -> Path:
    if kind == "device":
        return Path("/dev/null")
    if kind == "text":
        (tmp_path / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
        return tmp_path / "passwd"
    if kind == "session":
        (tmp_path / "session.jsonl").write_text('{"type": "user", "message": "hi"}\n')
        return tmp_path / "session.jsonl"
    if kind == "unreadable":
        (tmp_path / "runs" / "r1").mkdir(parents=True)
        (tmp_path / "runs" / "r1" / "run.json").write_text("not json")
        return tmp_path / "runs"
    (tmp_path / "empty").mkdir()
    return tmp_path / "empty"


@pytest.mark.parametrize("kind", ["device", "text", "session", "empty", "unreadable"])
def test_a_runs_path_with_no_run_record_is_bad_input(demo: Path, tmp_path: Path, kind: str) -> None:
    path = _not_runs(tmp_path, kind)
    for runs in ([path], [demo, path]) if kind != "unreadable" else ([path],):
        args = [arg for given in runs for arg in ("--runs", given)]
        result = run_cli(["lessons", "impact", "--store", demo / "lessons.sqlite3", *args])
        assert result.exit_code == 2, result.output
        assert result.stdout == ""
        error = result.stderr.splitlines()[-1]
        assert error.startswith(f"error: --runs {str(path)!r} holds no run record to replay: ")
        assert "one folder per run with its run.json" in error
        assert "Traceback" not in result.stderr


def test_a_run_log_beside_the_runs_is_read_for_generations(demo: Path, tmp_path: Path) -> None:
    from active_memory.runlog import RunLog

    RunLog(tmp_path / "run-log.jsonl").append_event("postmortem", run_id=FIRST, generation=3)
    result = run_cli(["lessons", "impact", "--store", demo / "lessons.sqlite3",
                      "--runs", demo, "--runs", tmp_path / "run-log.jsonl"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "3 lessons over 2 runs" in result.stdout


def test_the_collector_is_paused_while_measuring_and_resumes_after(
    demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc

    from active_memory.cli import lesson_impact

    seen: list[bool] = []
    measure = lesson_impact.measure_sources

    def watched(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return measure(*args, **kwargs)

    monkeypatch.setattr(lesson_impact, "measure_sources", watched)
    assert gc.isenabled()
    _impact(demo, "--json")
    assert seen == [False]
    assert gc.isenabled()
