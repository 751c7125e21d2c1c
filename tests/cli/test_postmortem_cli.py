"""``postmortem``, ``specialist run``, ``contracts check`` and ``demo`` through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import Result

from active_memory.store.sqlite import SqliteStore
from cli_runner import run_cli
from fixture_runs import RUNS
from postmortem.postmortem_kit import FIRST, first_run


def _cli(*args: str) -> Result:
    return run_cli(list(args))


def test_postmortem_with_replay_publishes_and_prints_the_report(tmp_path: Path) -> None:
    folder, _ = first_run(tmp_path)
    store = tmp_path / "lessons.sqlite3"
    log = tmp_path / "run-log.jsonl"
    result = _cli("postmortem", str(folder), "--provider", "replay", "--store", str(store),
                  "--run-log", str(log))  # fmt: skip
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "status       completed" in out
    assert "source node  implement (replay claude-sonnet-4-5)" in out
    assert "rejections   card 1, injection 1, references 1, secret 1, source 1" in out
    assert "changes      3 published" in out
    with SqliteStore(store) as opened:
        assert len(opened.list_lessons()) == 3
    assert log.exists()


def test_postmortem_json_and_dry_run_publish_nothing(tmp_path: Path) -> None:
    folder, _ = first_run(tmp_path)
    store = tmp_path / "lessons.sqlite3"
    result = _cli("postmortem", str(folder), "--provider", "replay", "--store", str(store),
                  "--dry-run", "--json")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["status"] == "dry_run"
    assert report["totals"]["mutations"] == 3
    assert report["totals"]["published"] == 0
    with SqliteStore(store) as opened:
        assert opened.list_lessons() == ()


def test_a_bad_source_node_is_bad_input_in_one_sentence(tmp_path: Path) -> None:
    folder, _ = first_run(tmp_path)
    runtime = tmp_path / "runtime.json"
    runtime.write_text(json.dumps({"globalAgents": {"postmortem": {"sourceNode": "deploy"}}}))
    result = _cli("postmortem", str(folder), "--provider", "replay", "--runtime", str(runtime),
                  "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr.startswith("error: globalAgents.postmortem.sourceNode 'deploy'")
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "s.sqlite3").exists()


def test_a_record_without_an_outcome_needs_outcome(tmp_path: Path) -> None:
    folder, _ = first_run(tmp_path)
    run_file = folder / "run.json"
    data = json.loads(run_file.read_text())
    data["outcome"] = None
    run_file.write_text(json.dumps(data))
    store = str(tmp_path / "s.sqlite3")
    refused = _cli("postmortem", str(folder), "--provider", "replay", "--store", store)
    assert refused.exit_code == 2
    assert "no latched outcome" in refused.stderr
    # Latching now changes the evidence the recording saw: a strict replay would refuse it.
    latched = _cli("postmortem", str(folder), "--provider", "replay", "--store", store,
                   "--outcome", "succeeded", "--dry-run", "--allow-changed")  # fmt: skip
    assert latched.exit_code == 0, latched.stderr
    assert "warning: replayed anyway:" in latched.stderr
    assert "evidence changed; first differing part messages[0]" in latched.stderr


def test_a_failing_specialist_exits_1_with_the_report(tmp_path: Path) -> None:
    folder, _ = first_run(tmp_path)
    lines = (folder / "exchanges.jsonl").read_text().splitlines()
    (folder / "exchanges.jsonl").write_text(
        "\n".join(line for line in lines if '"graph_discovery"' not in line) + "\n"
    )
    result = _cli("postmortem", str(folder), "--provider", "replay",
                  "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
    assert result.exit_code == 1
    assert "status       partial" in result.stdout
    line = next(line for line in result.stdout.splitlines() if "graph_discovery: " in line)
    assert line.startswith(
        "  graph_discovery: failed (replay_mismatch), 0 retries: unexpected call"
    )


def test_specialist_run_prints_answer_validation_and_hashes(tmp_path: Path) -> None:
    folder, _ = first_run(tmp_path)
    result = _cli("specialist", "run", "graph_discovery", str(folder), "--provider", "replay",
                  "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert out.startswith("specialist   graph_discovery (batch 0 of 1)")
    assert "prompt       sha256 " in out
    assert "contract     sha256 " in out
    assert '"node_id": "implement"' in out
    assert "validation   accepted: 1 item(s) accepted, 2 rejected" in out
    assert "injection    override_instructions" in out
    assert "references   receipt_unknown" in out
    with SqliteStore(tmp_path / "s.sqlite3") as opened:
        assert opened.list_lessons() == ()


def test_contracts_check_lists_every_contract_with_its_hash() -> None:
    result = _cli("contracts", "check")
    assert result.exit_code == 0
    assert [line.split()[:2] for line in result.stdout.splitlines()] == [
        ["ok", name] for name in ("card", "graph_discovery", "graph_maintenance",
                                  "repository_discovery", "repository_maintenance")
    ]  # fmt: skip


def test_demo_prints_reports_lessons_and_recall(tmp_path: Path) -> None:
    result = _cli("demo", "--dir", str(tmp_path / "demo"))
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "== postmortem 1: first run" in out
    assert "== postmortem 2: second run" in out
    assert "-- live lessons after postmortem 2: 2" in out
    assert "adapt   lesson-01JWNF15X00000000000000002@2" in out
    assert "[lesson-01JWNF15X00000000000000002@2] Name every setting APP_*" in out
    again = _cli("demo", "--dir", str(tmp_path / "demo"))
    assert again.exit_code == 2
    assert "is not empty" in again.stderr


def test_an_unknown_provider_is_bad_input(tmp_path: Path) -> None:
    folder, _ = first_run(tmp_path)
    result = _cli("postmortem", str(folder), "--provider", "mistral",
                  "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
    assert result.exit_code == 2
    assert "unknown provider 'mistral'; known: replay, anthropic, openai" in result.stderr


NOT_GIT = "the checkout is not a git work tree, so repository lessons cannot be verified"


def test_a_checkout_that_is_no_git_work_tree_is_named_as_why_repository_items_are_rejected(
    tmp_path: Path,
) -> None:
    # The fixture folder as shipped: its checkout is plain files, not a git work tree (so the
    # evidence differs from the recording's: no commit).
    result = _cli("postmortem", str(RUNS / FIRST), "--provider", "replay", "--allow-changed",
                  "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
    assert result.exit_code == 0, result.stderr
    # Repository specialists are not run on it: the report says why, once for each.
    for name in ("repository_maintenance", "repository_discovery"):
        assert f"note         {name} not run: {NOT_GIT}" in result.stdout
    assert "source" not in result.stdout.split("rejections", 1)[1].splitlines()[0]
    as_json = _cli("postmortem", str(RUNS / FIRST), "--provider", "replay", "--json",
                   "--allow-changed", "--store", str(tmp_path / "j.sqlite3"))  # fmt: skip
    report = json.loads(as_json.stdout)
    assert report["checkout"] == "not_git"
    assert report["notes"] == [
        f"repository_maintenance not run: {NOT_GIT}",
        f"repository_discovery not run: {NOT_GIT}",
    ]


def test_specialist_run_on_a_checkout_that_is_no_git_work_tree_says_so(tmp_path: Path) -> None:
    result = _cli("specialist", "run", "repository_discovery", str(RUNS / FIRST), "--allow-changed",
                  "--provider", "replay", "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert f"note         {NOT_GIT}" in result.stdout
    as_json = _cli("specialist", "run", "repository_discovery", str(RUNS / FIRST), "--json",
                   "--allow-changed", "--provider", "replay",
                   "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
    assert json.loads(as_json.stdout)["checkout"] == "not_git"


def test_a_git_checkout_carries_no_note(tmp_path: Path) -> None:
    folder, _ = first_run(tmp_path)
    result = _cli("postmortem", str(folder), "--provider", "replay", "--json",
                  "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
    report = json.loads(result.stdout)
    assert (report["checkout"], report["notes"]) == ("git", [])


def test_a_skipped_postmortem_does_not_warn_about_unrequested_exchanges(tmp_path: Path) -> None:
    folder, _ = first_run(tmp_path)
    runtime = tmp_path / "runtime.json"
    runtime.write_text(json.dumps({"activeMemory": {"graph": False, "repository": False}}))
    result = _cli("postmortem", str(folder), "--provider", "replay", "--runtime", str(runtime),
                  "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "status       skipped" in result.stdout
    assert result.stderr == ""


def test_model_and_provider_options_reach_the_library_policy(tmp_path: Path) -> None:
    folder, _ = first_run(tmp_path)
    result = _cli("postmortem", str(folder), "--provider", "replay", "--model", "claude-opus-4",
                  "--dry-run", "--json", "--allow-changed",
                  "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "model changed; first differing part model" in result.stderr
    report = json.loads(result.stdout)
    assert (report["provider"], report["model"]) == ("replay", "claude-opus-4")
