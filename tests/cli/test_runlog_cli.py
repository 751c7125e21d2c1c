"""``runlog summary`` over the run logs of replayed postmortems."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from active_memory.agents.prompts import prompt_sha256
from active_memory.runlog import read_events
from cli.authoring_kit import cli, demo_runs, isolated_build, replay


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The two replays' run logs, the first torn at its end. Built once for the module (two
    postmortems, most of each test's CPU): every test here only reads them."""
    tmp_path = tmp_path_factory.mktemp("runlog")
    with isolated_build(tmp_path_factory.mktemp("isolated")):
        first, second = demo_runs(tmp_path)
        store = tmp_path / "s.sqlite3"
        one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
        assert replay(first, store, "--ids", "sequential", "--run-log", one).exit_code == 0
        with one.open("a") as handle:
            handle.write('{"event":"postmortem","ru')  # a crash tore the last line
        assert replay(second, store, "--ids", "sequential", "--run-log", two).exit_code == 0
    return one, two


def test_every_specialist_record_names_its_prompt_sha256(logs: tuple[Path, Path]) -> None:
    one, _ = logs
    records = [r for r in read_events(one) if r["event"] == "postmortem_specialist"]
    assert len(records) == 4
    for record in records:
        assert record["prompt_sha256"] == prompt_sha256(str(record["role"]))


def test_summary_by_code_counts_rejections_across_files_and_torn_lines(
    logs: tuple[Path, Path],
) -> None:
    one, two = logs
    result = cli("runlog", "summary", one, two, "--by", "code")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("read         2 file(s), ")
    assert lines[0].endswith(", 1 torn line(s) skipped")
    assert lines[1] == "postmortems  2 over 2 run(s): completed 2"
    assert any(line.split() == ["secret:url_credentials", "1"] for line in lines)


def test_summary_json_by_prompt_and_since(logs: tuple[Path, Path]) -> None:
    one, two = logs
    result = cli("runlog", "summary", one, two, "--by", "prompt", "--json")
    data = json.loads(result.stdout)
    keys = {row["key"] for row in data["rows"]}
    assert f"graph_discovery {prompt_sha256('graph_discovery')[:16]}" in keys
    assert data["torn"] == 1
    later = json.loads(cli("runlog", "summary", one, "--since", "2999-01-01", "--json").stdout)
    assert (later["records"], later["rows"]) == (0, [])


def test_a_bad_date_is_bad_input(logs: tuple[Path, Path]) -> None:
    one, _ = logs
    result = cli("runlog", "summary", one, "--since", "last week")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: --since 'last week' is not a date; use YYYY-MM-DD or YYYY-MM-DDTHH:MM\n"
    )
