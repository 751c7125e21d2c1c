"""Recording and strict replay through the CLI: --record, --allow-changed, --ids, --lessons."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from active_memory.store.sqlite import SqliteStore
from cli.authoring_kit import cli, demo_runs, first_published, replay
from folder_copies import shipped_copy


def test_the_demo_runs_replay_strictly_into_a_fresh_store_with_sequential_ids(
    tmp_path: Path,
) -> None:
    first, second = demo_runs(tmp_path)
    store = tmp_path / "s.sqlite3"
    assert replay(first, store, "--ids", "sequential").exit_code == 0
    result = replay(second, store, "--ids", "sequential")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.stderr == ""
    with SqliteStore(store) as opened:
        assert len(opened.list_lessons()) == 2


def test_random_ids_make_the_second_demo_run_differ_from_its_recording(tmp_path: Path) -> None:
    first, second = demo_runs(tmp_path)
    store = tmp_path / "s.sqlite3"
    assert replay(first, store).exit_code == 0
    result = replay(second, store)
    assert result.exit_code == 1
    assert "evidence changed; first differing part messages[0]" in result.stdout
    assert "hint: the recording no longer matches the requests; pass --allow-changed" in (
        result.stderr
    )


def test_sequential_ids_continue_after_the_ones_the_store_holds(tmp_path: Path) -> None:
    first, _ = demo_runs(tmp_path)
    store = tmp_path / "s.sqlite3"
    first_published(store)
    again = replay(first, store, "--ids", "sequential", "--allow-changed", "--json")
    report = json.loads(again.stdout)
    created = sorted(c["id"] for c in report["changes"])
    with SqliteStore(store) as opened:
        ids = sorted(lesson.id for lesson in opened.list_lessons())
    assert created
    assert set(created) <= set(ids)
    assert min(created) > sorted(ids)[2]


def test_a_recording_of_any_provider_replays_strictly_and_carries_the_versions(
    tmp_path: Path,
) -> None:
    first, _ = demo_runs(tmp_path)
    recording = tmp_path / "again.jsonl"
    made = replay(first, tmp_path / "a.sqlite3", "--record", recording, "--dry-run")
    assert made.exit_code == 0, made.stderr
    assert f"recorded 5 exchange(s) to {recording}" in made.stderr
    line = json.loads(recording.read_text().splitlines()[0])
    assert len(line["prompt_sha256"]) == len(line["contract_sha256"]) == 64
    assert line["model"] == "claude-sonnet-4-5"
    assert "$CHECKOUT" in recording.read_text()
    assert str(first) not in recording.read_text()
    again = replay(first, tmp_path / "b.sqlite3", "--exchanges", recording, "--dry-run")
    assert again.exit_code == 0, again.stderr
    assert again.stderr == ""


def test_a_prompt_edit_fails_a_strict_replay_naming_the_prompt(tmp_path: Path) -> None:
    first, _ = demo_runs(tmp_path)
    prompts = shipped_copy("prompts", tmp_path)
    from active_memory.agents.prompts import load_prompt

    (prompts / "graph_discovery.md").write_text(
        load_prompt("graph_discovery").replace("procedural", "step-by-step", 1)
    )
    store = tmp_path / "s.sqlite3"
    strict = replay(first, store, "--prompts", prompts, "--dry-run")
    assert strict.exit_code == 1
    assert "'graph_discovery' batch 0 turn 1 differs from the recording" in strict.stdout
    assert "prompt changed; first differing part system: line" in strict.stdout
    lenient = replay(first, store, "--prompts", prompts, "--dry-run", "--allow-changed")
    assert lenient.exit_code == 0
    assert "warning: replayed anyway: " in lenient.stderr
    assert "prompt changed" in lenient.stderr


def test_supplied_lessons_pin_what_maintenance_reviews(tmp_path: Path) -> None:
    _, second = demo_runs(tmp_path)
    store = tmp_path / "s.sqlite3"
    first_published(store)
    exported = tmp_path / "lessons.jsonl"
    exported.write_text(cli("lessons", "export", "--store", store).stdout)
    fresh = tmp_path / "fresh.sqlite3"
    args = ("specialist", "run", "repository_maintenance", second, "--provider", "replay")
    empty = cli(*args, "--store", fresh)
    assert empty.exit_code == 2
    assert "no supplied lessons" in empty.stderr
    pinned = cli(*args, "--store", fresh, "--lessons", exported)
    assert pinned.exit_code == 0, pinned.stdout + pinned.stderr
    assert "validation   accepted: 2 item(s) accepted, 0 rejected" in pinned.stdout
    with SqliteStore(fresh) as opened:
        assert opened.list_lessons() == ()


def test_a_lessons_file_that_is_not_an_export_is_bad_input(tmp_path: Path) -> None:
    _, second = demo_runs(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    result = cli("specialist", "run", "repository_maintenance", second, "--provider", "replay",
                 "--store", tmp_path / "s.sqlite3", "--lessons", bad)  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: --lessons {str(bad)!r}: ")
    assert len(result.stderr.strip().splitlines()) == 1


def test_the_demo_replays_strictly_from_a_relative_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = cli("demo", "--dir", "demo")
    assert result.exit_code == 0, result.stderr
    assert "-- live lessons after postmortem 2: 2" in result.stdout
    # The recall at the end matches, as the command it prints does (a relative folder once
    # printed "(nothing matched)" there).
    shown = result.stdout.split("== what a Read of tests/conftest.py", 1)[1]
    assert "(nothing matched)" not in shown
    assert "[lesson-01JWNF15X00000000000000002@2] Name every setting APP_*" in shown
    printed = next(line for line in shown.splitlines() if line.startswith("$ active-memory recall"))
    assert f"--repository {tmp_path / 'demo' / 'second' / 'checkout'} " in printed
    again = json.loads(cli(*printed.split()[2:], "--json").stdout)
    delivered = [card["id"] for card in again["report"]["cards"]]
    assert delivered == ["lesson-01JWNF15X00000000000000002"]


def test_specialist_run_records_its_session_and_the_recording_replays_strictly(
    tmp_path: Path,
) -> None:
    first, _ = demo_runs(tmp_path)
    recording = tmp_path / "session.jsonl"
    args = ("specialist", "run", "graph_discovery", first, "--provider", "replay",
            "--store", tmp_path / "s.sqlite3")  # fmt: skip
    made = cli(*args, "--record", recording)
    assert made.exit_code == 0, made.stderr
    lines = [json.loads(line) for line in recording.read_text().splitlines()]
    assert {line["specialist"] for line in lines} == {"graph_discovery"}
    again = cli(*args, "--exchanges", recording)
    assert again.exit_code == 0, again.stderr
    assert again.stdout.splitlines()[-1] == made.stdout.splitlines()[-1]
