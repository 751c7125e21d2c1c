from __future__ import annotations

import json
from pathlib import Path

import pytest

from active_memory.errors import RunRecordError
from active_memory.evidence.builder import build_evidence
from active_memory.evidence.sources import open_run_source
from active_memory.evidence.sources.codex import load_codex_rollout
from active_memory.evidence.sources.lanes import REJECTED_REASON

CODEX = Path(__file__).parents[2] / "fixtures" / "codex"
CURRENT = CODEX / "rollout-2025-11-20T09-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl"
LEGACY = CODEX / "rollout-2025-07-14T10-00-00-legacy.jsonl"
FAKE_GITHUB = "ghp_EXAMPLEONLYnotarealtoken000000000000"


def test_a_current_rollout_is_one_codex_execution_with_its_model_and_lane(tmp_path: Path) -> None:
    record = open_run_source(CURRENT, tmp_path / "rec")
    assert record.run_id == "codex-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    node = record.graph.nodes[0]
    assert node.id == "codex"
    assert node.binding is not None
    assert (node.binding.provider, node.binding.model, node.binding.lane) == (
        "openai", "gpt-5-codex", "codex",
    )  # fmt: skip
    (main,) = record.executions
    assert main.completion == (
        "Added Settings.request_timeout; the FEATURE_FLAGS failure is pre-existing."
    )
    assert record.checkout is not None
    assert str(record.checkout.path) == "/home/dev/order-service"
    assert record.runtime["git_branch"] == "main"
    assert record.runtime["version"] == "0.58.0"


def test_the_typed_request_is_the_initial_input_not_the_environment(tmp_path: Path) -> None:
    record = load_codex_rollout(CURRENT, tmp_path / "rec")
    assert record.initial_input is not None
    assert record.initial_input.startswith("Add APP_REQUEST_TIMEOUT")


def test_receipts_carry_patch_headers_and_shell_operands_never_commands(tmp_path: Path) -> None:
    record = load_codex_rollout(CURRENT, tmp_path / "rec")
    receipts = [(receipt.tool, receipt.paths) for receipt in record.receipts]
    assert receipts == [
        ("shell", ("src/app/config.py", "tests/conftest.py")),
        ("apply_patch", ("src/app/config.py", "tests/test_timeout.py")),
        ("shell", ("tests/test_config.py",)),
        ("local_shell_call", ("src/app/settings.py",)),
    ]
    dumped = json.dumps([receipt.model_dump() for receipt in record.receipts])
    assert "sed" not in dumped
    assert FAKE_GITHUB not in dumped


def test_reasoning_is_not_read_and_failures_are_marked(tmp_path: Path) -> None:
    record = load_codex_rollout(CURRENT, tmp_path / "rec")
    transcript = record.executions[0].transcript
    assert transcript is not None
    lines = [json.loads(line) for line in transcript.read_text("utf-8").splitlines()]
    assert not any("settings module first" in line["text"] for line in lines)
    failed = [line for line in lines if line["text"].startswith("[error] ")]
    assert [line["tool"] for line in failed] == ["shell"]
    assert {line["role"] for line in lines} == {"user", "assistant", "tool"}


def test_evidence_from_a_rollout_redacts_the_token_in_a_command(tmp_path: Path) -> None:
    record = open_run_source(CURRENT, tmp_path / "rec")
    bundle = build_evidence(record, "repository_discovery", private_dir=tmp_path / "private")
    assert FAKE_GITHUB not in bundle.serialized
    assert "[redacted:github-token]" in bundle.serialized


def test_a_legacy_rollout_reads_its_bare_first_line_and_state_lines(tmp_path: Path) -> None:
    record = open_run_source(LEGACY, tmp_path / "rec")
    assert record.run_id == "codex-5e0c7a1d-2b3c-4d5e-8f90-a1b2c3d4e5f6"
    assert record.initial_input == "Why does test_defaults fail on CI?"
    # The legacy form names no cwd but in the environment context, and no model at all.
    assert record.checkout is not None
    assert str(record.checkout.path) == "/home/dev/order-service"
    # No made-up model: the node is unbound and the postmortem asks for --model.
    assert record.graph.nodes[0].binding is None
    assert "binding" not in record.graph.raw["nodes"][0]
    assert record.runtime["model_note"] == "the rollout names no model (legacy form)"
    assert [(r.tool, r.paths) for r in record.receipts] == [
        ("shell", (".github/workflows/ci.yml",)),
        ("shell", ("tests/conftest.py",)),
    ]
    assert record.executions[0].completion is not None
    assert record.executions[0].completion.startswith("CI sets FEATURE_FLAGS")


def test_a_rollout_without_messages_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "rollout-empty.jsonl"
    meta = {"timestamp": "2025-11-20T09:00:00Z", "type": "session_meta",
            "payload": {"id": "x", "cwd": "/w"}}  # fmt: skip
    path.write_text(json.dumps(meta) + "\n", "utf-8")
    with pytest.raises(RunRecordError, match="no messages or tool calls of a Codex session"):
        load_codex_rollout(path, tmp_path / "rec")


def test_an_unreadable_rollout_line_is_a_recorded_cut(tmp_path: Path) -> None:
    path = tmp_path / "rollout-broken.jsonl"
    path.write_text(CURRENT.read_text("utf-8") + '{"type": "event_msg", "payload": \n', "utf-8")
    record = load_codex_rollout(path, tmp_path / "rec")
    assert record.runtime["lines_unreadable"] == 1
    assert record.runtime["source_cuts"] == [
        {"section": "lines", "reason": "line not read: not JSON", "count": 1, "bytes": 33}
    ]


def test_a_legacy_line_whose_type_is_not_a_string_is_a_recorded_cut(tmp_path: Path) -> None:
    # Found by the session-reader fuzz: a list as "type" reached a set lookup (TypeError).
    lines = LEGACY.read_text().splitlines()
    lines.insert(2, json.dumps({"type": [[]], "role": "user", "content": []}))
    odd = tmp_path / LEGACY.name
    odd.write_text("\n".join(lines) + "\n")
    record = open_run_source(odd, tmp_path / "work")
    assert len(record.executions) == 1
    cuts = json.dumps(record.runtime.get("cuts", record.runtime))
    assert "not a Codex rollout record" in cuts


def test_a_declined_command_or_patch_is_no_receipt(tmp_path: Path) -> None:
    def item(second: int, payload: dict[str, object]) -> str:
        stamp = f"2025-11-20T09:10:{second:02d}.000Z"
        return json.dumps({"timestamp": stamp, "type": "response_item", "payload": payload})

    declined = [
        item(1, {"type": "function_call", "name": "shell", "call_id": "call_rm",
                 "arguments": json.dumps({"command": ["rm", "-rf", "build"]})}),
        item(2, {"type": "function_call_output", "call_id": "call_rm",
                 "output": "exec command rejected by user"}),
        item(3, {"type": "custom_tool_call", "name": "apply_patch", "call_id": "call_patch",
                 "input": "*** Begin Patch\n*** Update File: src/app/config.py\n*** End Patch"}),
        item(4, {"type": "custom_tool_call_output", "call_id": "call_patch",
                 "output": "patch rejected by user"}),
    ]  # fmt: skip
    path = tmp_path / CURRENT.name
    path.write_text(CURRENT.read_text("utf-8") + "\n".join(declined) + "\n", "utf-8")
    plain = load_codex_rollout(CURRENT, tmp_path / "plain")
    record = load_codex_rollout(path, tmp_path / "rec")
    assert [r.seq for r in record.receipts] == [r.seq for r in plain.receipts]
    assert record.runtime["receipts_total"] == plain.runtime["receipts_total"]
    transcript = record.executions[0].transcript
    assert transcript is not None
    rows = [json.loads(line) for line in transcript.read_text("utf-8").splitlines()]
    assert [row["text"] for row in rows[-4:] if row["role"] == "tool"] == [
        "[rejected by the user]", "[rejected by the user]",
    ]  # fmt: skip
    cuts = {(c["section"], c["reason"]): c["count"] for c in record.runtime["source_cuts"]}
    assert cuts[("receipts", REJECTED_REASON)] == 2
    bundle = build_evidence(record, "graph_discovery", private_dir=tmp_path / "private")
    calls = [item for excerpt in bundle.payload["transcripts"] for item in excerpt["records"]
             if item.get("role") == "assistant" and item.get("tool")]  # fmt: skip
    assert [call.get("receipt") for call in calls[-2:]] == [None, None]
    assert all("receipt" in call for call in calls[:-2])
