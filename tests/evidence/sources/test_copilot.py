from __future__ import annotations

import json
from pathlib import Path

from active_memory.evidence.builder import build_evidence
from active_memory.evidence.sources import open_run_source

STATE = Path(__file__).parents[2] / "fixtures" / "copilot" / "session-state"
EVENTS = STATE / "3c1f0a52-7d4e-4b8a-9e21-6f5d8c0b1a47" / "events.jsonl"


def test_a_copilot_session_has_its_subagent_as_a_second_execution(tmp_path: Path) -> None:
    record = open_run_source(EVENTS, tmp_path / "rec")
    assert record.run_id == "copilot-3c1f0a52-7d4e-4b8a-9e21-6f5d8c0b1a47"
    assert [e.id for e in record.executions] == ["main", "agent-explore-1"]
    main, agent = record.executions
    assert agent.conversation_id == "3c1f0a52-7d4e-4b8a-9e21-6f5d8c0b1a47/agent-explore-1"
    assert agent.completion == "One call without a timeout: billing.charge()."
    assert main.completion == (
        "Documented APP_REQUEST_TIMEOUT; billing.charge() still needs a timeout."
    )
    binding = record.graph.nodes[0].binding
    assert binding is not None
    assert (binding.provider, binding.model, binding.lane) == (
        "anthropic", "claude-sonnet-4.5", "copilot",
    )  # fmt: skip
    assert record.runtime["repository"] == "example/order-service"
    assert record.initial_input is not None
    assert record.initial_input.startswith("Document APP_REQUEST_TIMEOUT")
    assert "current_datetime" not in record.initial_input


def test_copilot_tool_executions_are_receipts_in_the_lane_that_ran_them(tmp_path: Path) -> None:
    record = open_run_source(EVENTS, tmp_path / "rec")
    assert [(r.execution, r.tool, r.paths) for r in record.receipts] == [
        ("main", "view", ("docs/configuration.md",)),
        ("main", "task", ()),
        ("agent-explore-1", "grep", ("src/app/services",)),
        ("main", "edit", ("docs/configuration.md",)),
        ("main", "bash", ("docs/configuration.md",)),
    ]


def test_a_failed_copilot_tool_is_an_error_record(tmp_path: Path) -> None:
    record = open_run_source(EVENTS, tmp_path / "rec")
    transcript = record.executions[0].transcript
    assert transcript is not None
    lines = [json.loads(line) for line in transcript.read_text("utf-8").splitlines()]
    errors = [line for line in lines if line["text"].startswith("[error] ")]
    assert [(line["tool"], line["text"]) for line in errors] == [
        ("bash", "[error] fatal: not a git repository")
    ]
    bundle = build_evidence(record, "graph_discovery", private_dir=tmp_path / "private")
    assert [item["ref"] for item in bundle.payload["executions"]] == [
        "exec:main", "exec:agent-explore-1",
    ]  # fmt: skip


def test_the_model_an_assistant_message_names_is_the_sessions_model(tmp_path: Path) -> None:
    session = "5e2a0c11-3b4d-4f6e-8a90-1c2d3e4f5a6b"
    events = [
        {"type": "session.start", "data": {"sessionId": session, "copilotVersion": "0.0.365",
         "context": {"cwd": "/home/dev/order-service"}}},
        {"type": "user.message", "data": {"content": "Explain the retry policy."}},
        {"type": "assistant.message", "data": {"content": "It retries three times.",
         "model": "gpt-5-mini", "toolRequests": []}},
    ]  # fmt: skip
    path = tmp_path / "session-state" / session / "events.jsonl"
    path.parent.mkdir(parents=True)
    stamp = "2025-12-02T08:00:0{}.000Z"
    path.write_text("".join(
        json.dumps({**event, "id": f"e{n}", "timestamp": stamp.format(n), "parentId": None}) + "\n"
        for n, event in enumerate(events)
    ))  # fmt: skip
    record = open_run_source(path, tmp_path / "rec")
    binding = record.graph.nodes[0].binding
    assert binding is not None
    assert (binding.provider, binding.model) == ("openai", "gpt-5-mini")
