from __future__ import annotations

import json
from pathlib import Path

import pytest

from active_memory.errors import RunRecordError
from active_memory.evidence.builder import build_evidence
from active_memory.evidence.sources import open_run_source
from active_memory.evidence.sources.claude_code import NODE_ID, load_claude_session
from fixture_runs import CLAUDE

FAKE_GITHUB = "ghp_EXAMPLEONLYnotarealtoken000000000000"


def test_inline_sidechain_becomes_its_own_execution(tmp_path: Path) -> None:
    record = load_claude_session(CLAUDE / "inline-sidechain.jsonl", tmp_path / "rec")
    assert [node.id for node in record.graph.nodes] == [NODE_ID]
    node = record.graph.nodes[0]
    assert node.kind == "worker"
    assert node.binding is not None
    assert (node.binding.provider, node.binding.model) == (
        "anthropic",
        "claude-sonnet-4-5-20250929",
    )
    ids = [(e.id, e.occurrence, e.attempt, e.status) for e in record.executions]
    assert ids == [("main", 1, 1, "completed"), ("sidechain-1", 2, 1, "completed")]
    main, side = record.executions
    assert main.conversation_id == "6f1d2c3b-4a5e-4f60-9a7b-8c9d0e1f2a3b"
    assert side.completion is not None
    assert side.completion.startswith("CI sets FEATURE_FLAGS=legacy-checkout")
    assert record.initial_input is not None
    assert record.initial_input.startswith("tests/test_config.py::test_defaults fails on CI")
    assert record.checkout is not None
    assert str(record.checkout.path) == "/home/dev/order-service"
    assert record.checkout.repository.startswith("local:")
    assert record.outcome is None


def test_receipts_name_tools_and_paths_never_arguments(tmp_path: Path) -> None:
    record = load_claude_session(CLAUDE / "inline-sidechain.jsonl", tmp_path / "rec")
    receipts = [(r.execution, r.tool, r.paths) for r in record.receipts]
    assert receipts == [
        ("main", "Read", ("src/app/config.py",)),
        ("main", "Read", ("tests/conftest.py",)),
        ("main", "Task", ()),
        ("sidechain-1", "Glob", (".",)),
        ("sidechain-1", "Read", (".github/workflows/ci.yml",)),
        ("main", "Edit", ("src/app/config.py",)),
        ("main", "Bash", ()),
    ]
    assert [r.seq for r in record.receipts] == list(range(7))
    dumped = json.dumps([r.model_dump() for r in record.receipts])
    assert "pytest" not in dumped
    assert FAKE_GITHUB not in dumped


def test_subagent_files_are_read_and_compaction_agents_skipped(tmp_path: Path) -> None:
    record = load_claude_session(CLAUDE / "subagent-files.jsonl", tmp_path / "rec")
    assert [e.id for e in record.executions] == ["main", "agent-a4f2c1e"]
    main, agent = record.executions
    assert agent.conversation_id == "9b8a7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d/agent-a4f2c1e"
    assert agent.completion == (
        "One network call: billing.charge() uses requests.post without a timeout."
    )
    # The main conversation's model, not the subagent's, binds the node.
    assert record.graph.nodes[0].binding is not None
    assert record.graph.nodes[0].binding.model == "claude-sonnet-4-5-20250929"
    # A meta /clear line is not the task.
    assert record.initial_input is not None
    assert record.initial_input.startswith("Add a request timeout")
    assert main.status == "completed"
    assert record.runtime["subagents"] == 1
    assert record.runtime["version"] == "2.0.14"
    paths = {path for receipt in record.receipts for path in receipt.paths}
    assert "src/app/services/billing.py" in paths
    assert "docs/configuration.md" in paths


def test_transcripts_keep_text_tool_calls_and_results_but_not_thinking(tmp_path: Path) -> None:
    record = load_claude_session(CLAUDE / "subagent-files.jsonl", tmp_path / "rec")
    main = record.executions[0]
    assert main.transcript is not None
    lines = [json.loads(line) for line in main.transcript.read_text("utf-8").splitlines()]
    roles = {line["role"] for line in lines}
    assert roles == {"user", "assistant", "tool"}
    assert not any("Need to check how billing" in line["text"] for line in lines)
    errors = [line for line in lines if line["text"].startswith("[error] ")]
    assert [line["tool"] for line in errors] == ["Edit"]


def test_evidence_from_a_session_redacts_the_token_in_a_command(tmp_path: Path) -> None:
    record = open_run_source(CLAUDE / "inline-sidechain.jsonl", tmp_path / "rec")
    bundle = build_evidence(record, "repository_discovery", private_dir=tmp_path / "private")
    assert FAKE_GITHUB not in bundle.serialized
    assert "[redacted:github-token]" in bundle.serialized
    refs = [item["ref"] for item in bundle.payload["executions"]]
    assert refs == ["exec:main", "exec:sidechain-1"]


def test_a_file_without_conversation_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text('{"type": "summary", "summary": "nothing"}\n', "utf-8")
    with pytest.raises(RunRecordError, match="main conversation"):
        load_claude_session(path, tmp_path / "rec")


def test_unknown_source_kind_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello", "utf-8")
    with pytest.raises(RunRecordError, match="neither a run record"):
        open_run_source(path, tmp_path / "rec")


def test_a_session_value_the_record_refuses_names_the_session_file(tmp_path: Path) -> None:
    path = tmp_path / "spaced.jsonl"
    lines = [
        {"type": "user", "sessionId": "s1", "message": {"role": "user", "content": "go"}},
        {"type": "assistant", "sessionId": "s1", "isSidechain": True, "agentId": "a b",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "done"}]}},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    with pytest.raises(RunRecordError) as caught:
        load_claude_session(path, tmp_path / "rec")
    assert caught.value.source == str(path)
    assert caught.value.path == "id"
    assert "pattern" in caught.value.problem
