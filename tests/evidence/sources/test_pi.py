from __future__ import annotations

import json
from pathlib import Path

from active_memory.evidence.sources import open_run_source

PI = Path(__file__).parents[2] / "fixtures" / "pi"
SESSION = PI / "2025-12-01T14-00-00-000Z_019a7c3e-5b2d-7f10-9c4e-2d8b6a1f0e3c.jsonl"


def test_a_pi_session_is_one_execution_with_every_model_it_used(tmp_path: Path) -> None:
    record = open_run_source(SESSION, tmp_path / "rec")
    assert record.run_id == "pi-019a7c3e-5b2d-7f10-9c4e-2d8b6a1f0e3c"
    binding = record.graph.nodes[0].binding
    assert binding is not None
    # The most used model binds the node, with the provider that served it.
    assert (binding.provider, binding.model, binding.lane) == (
        "anthropic", "claude-sonnet-4-5", "pi",
    )  # fmt: skip
    assert record.runtime["models"] == ["claude-sonnet-4-5", "gpt-5.1-codex"]
    assert record.initial_input == (
        "The billing client has no timeout; add one from settings.\n[image]"
    )
    (main,) = record.executions
    assert (
        main.completion == "billing.charge() now passes timeout=settings.request_timeout; 2 passed."
    )
    assert main.status == "completed"


def test_pi_tool_calls_are_receipts_with_their_paths(tmp_path: Path) -> None:
    record = open_run_source(SESSION, tmp_path / "rec")
    assert [(r.tool, r.paths) for r in record.receipts] == [
        ("read", ("src/app/services/billing.py",)),
        ("edit", ("src/app/services/billing.py",)),
        ("bash", ("tests/test_billing.py",)),
    ]


def test_pi_tool_results_keep_their_tool_and_thinking_is_not_read(tmp_path: Path) -> None:
    record = open_run_source(SESSION, tmp_path / "rec")
    transcript = record.executions[0].transcript
    assert transcript is not None
    lines = [json.loads(line) for line in transcript.read_text("utf-8").splitlines()]
    assert [line.get("tool") for line in lines if line["role"] == "tool"] == [
        "read", "edit", "bash",
    ]  # fmt: skip
    assert not any("Read the client first" in line["text"] for line in lines)
    assert "iVBORw0KGgo" not in transcript.read_text("utf-8")


def test_an_aborted_pi_answer_marks_the_execution_cancelled(tmp_path: Path) -> None:
    lines = SESSION.read_text("utf-8").splitlines()
    last = json.loads(lines[-1])
    last["message"]["stopReason"] = "aborted"
    path = tmp_path / "aborted.jsonl"
    path.write_text("\n".join([*lines[:-1], json.dumps(last)]) + "\n", "utf-8")
    record = open_run_source(path, tmp_path / "rec")
    assert record.executions[0].status == "cancelled"
