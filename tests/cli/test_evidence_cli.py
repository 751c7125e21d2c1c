from __future__ import annotations

import json
import shutil
from pathlib import Path

from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import Lesson
from cli_runner import run_cli
from factories import make_draft, make_graph_draft
from fixture_runs import CLAUDE, RUNS


def test_human_summary_lists_executions_and_the_truncation_report() -> None:
    result = run_cli(["evidence", str(RUNS / "map-verbose-reviewer"),
                      "--specialist", "graph_discovery", "--budget", "32768"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "specialist   graph_discovery" in result.output
    assert "exec:ex-migrate-08-a1" in result.output
    assert "occurrence 8 attempt 2" in result.output
    assert "truncated    yes" in result.output
    assert "transcripts[].records" in result.output


def test_json_prints_the_payload_within_the_budget() -> None:
    result = run_cli(
        ["evidence", str(RUNS / "clean-success" / "run.json"), "--json", "--budget", "8192"]
    )
    assert result.exit_code == 0, result.output
    assert len(result.output.rstrip("\n").encode("utf-8")) <= 8192
    payload = json.loads(result.output)
    assert payload["specialist"] == "repository_discovery"
    assert payload["run"]["run_id"] == "run-20250601-clean-success"


def test_a_claude_code_session_is_accepted() -> None:
    result = run_cli(["evidence", str(CLAUDE / "subagent-files.jsonl")])
    assert result.exit_code == 0, result.output
    assert "exec:agent-a4f2c1e" in result.output


def test_private_dir_keeps_the_complete_copies(tmp_path: Path) -> None:
    result = run_cli(["evidence", str(RUNS / "clean-success"), "--specialist", "graph_maintenance",
                      "--dir", str(tmp_path / "private")])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (tmp_path / "private" / "graph.json").is_file()


def test_a_lessons_export_reaches_maintenance_with_its_live_lessons_of_that_scope(
    tmp_path: Path,
) -> None:
    repository, graph, retired = (new_lesson_id() for _ in range(3))
    lessons = tmp_path / "export.jsonl"
    lessons.write_text("\n".join([
        Lesson.from_draft(repository, 2, make_draft()).model_dump_json(),
        Lesson.from_draft(graph, 1, make_graph_draft()).model_dump_json(),
        json.dumps({"id": retired, "revision": 2, "retired": True, "kind": "repository"}),
    ]) + "\n", "utf-8")  # fmt: skip
    for specialist, expected in (("repository_maintenance", [repository, 2]),
                                 ("graph_maintenance", [graph, 1])):  # fmt: skip
        result = run_cli(["evidence", RUNS / "clean-success", "--specialist", specialist,
                          "--lessons", lessons, "--json"])  # fmt: skip
        assert (result.exit_code, result.stderr) == (0, ""), result.output
        supplied = json.loads(result.stdout)["lessons"]
        assert [[lesson["id"], lesson["revision"]] for lesson in supplied] == [expected]


def test_a_json_list_of_cards_still_reaches_maintenance_with_a_warning(tmp_path: Path) -> None:
    lessons = tmp_path / "lessons.json"
    lessons.write_text(json.dumps([{"id": "lesson-01JWKQ7Z3M8V4T2R6N0P5X9C1B", "revision": 2}]))
    result = run_cli(["evidence", str(RUNS / "clean-success"),
                      "--specialist", "repository_maintenance", "--lessons", str(lessons),
                      "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["lessons"][0]["revision"] == 2
    assert result.stderr == (
        "warning: --lessons with a JSON list is deprecated; give a `lessons export` file\n"
    )


def test_a_malformed_record_exits_2_naming_the_field(tmp_path: Path) -> None:
    folder = tmp_path / "bad"
    shutil.copytree(RUNS / "clean-success", folder)
    data = json.loads((folder / "run.json").read_text("utf-8"))
    data["executions"][1]["node"] = "deploy"
    (folder / "run.json").write_text(json.dumps(data), "utf-8")
    result = run_cli(["evidence", str(folder)])
    assert result.exit_code == 2
    assert "executions[1].node" in result.output
    assert result.output.count("\n") == 1


def test_bad_lessons_file_exits_2(tmp_path: Path) -> None:
    lessons = tmp_path / "lessons.json"
    lessons.write_text("{}")
    result = run_cli(["evidence", str(RUNS / "clean-success"), "--lessons", str(lessons)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: --lessons {str(lessons)!r} line 1: id: is required; give a `lessons export` file\n"
    )


def test_budget_below_the_minimum_is_a_usage_error() -> None:
    result = run_cli(["evidence", str(RUNS / "clean-success"), "--budget", "10"])
    assert result.exit_code == 2


def test_a_forced_harness_that_does_not_match_the_file_exits_2_naming_what_it_is() -> None:
    result = run_cli(["evidence", "--harness", "codex", str(CLAUDE / "subagent-files.jsonl")])
    assert result.exit_code == 2, result.output
    assert "is a Claude Code session, not a Codex CLI one" in result.stderr
    assert result.stderr.count("\n") == 1
    assert "executions" not in result.stdout


def test_the_summary_counts_the_executions_left_out_by_node(tmp_path: Path) -> None:
    binding = {"provider": "anthropic", "model": "claude-sonnet-4-5"}
    executions = [{"id": f"e{index}", "node": "work", "occurrence": index + 1, "attempt": 1,
                   "status": "completed", "started_ms": index} for index in range(600)]  # fmt: skip
    document = {"format": "active-memory/run-record@1", "run_id": "many",
                "graph": {"name": "many", "nodes": [{"id": "work", "kind": "worker",
                                                     "binding": binding}]},
                "runtime": {}, "executions": executions}  # fmt: skip
    (tmp_path / "run.json").write_text(json.dumps(document))
    result = run_cli(["evidence", str(tmp_path), "--specialist", "graph_maintenance",
                      "--budget", "8192"])  # fmt: skip
    assert result.exit_code == 0, result.output
    [line] = [line for line in result.output.splitlines() if "left out:" in line]
    listed = int(result.output.split("executions   600 (")[1].split(" listed")[0])
    assert line == f"  left out: work {600 - listed}"
