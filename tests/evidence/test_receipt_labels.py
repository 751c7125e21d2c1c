"""Every transcript tool-call record carries the ``receipt:<seq>`` admission accepts for it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from active_memory.admission.references import (
    RunEvidence,
    attribution_problem,
    parse_references,
    reference_problem,
)
from active_memory.evidence.builder import build_evidence
from active_memory.evidence.sources import open_run_source
from active_memory.models.runs import RunRecord, ToolReceipt, load_run_record
from fixture_runs import FIXTURES, RUN_NAMES, RUNS

CODEX = "rollout-2025-11-20T09-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl"
SESSIONS = {
    "claude": FIXTURES / "claude" / "subagent-files.jsonl",
    "claude-inline": FIXTURES / "claude" / "inline-sidechain.jsonl",
    "codex": FIXTURES / "codex" / CODEX,
    "codex-legacy": FIXTURES / "codex" / "rollout-2025-07-14T10-00-00-legacy.jsonl",
    "pi": FIXTURES / "pi" / "2025-12-01T14-00-00-000Z_019a7c3e-5b2d-7f10-9c4e-2d8b6a1f0e3c.jsonl",
    "copilot": FIXTURES / "copilot" / "session-state" / "3c1f0a52-7d4e-4b8a-9e21-6f5d8c0b1a47"
    / "events.jsonl",
}  # fmt: skip


def _records(record: RunRecord, tmp_path: Path) -> list[tuple[str, dict[str, Any]]]:
    bundle = build_evidence(record, "graph_discovery", private_dir=tmp_path / "private")
    return [(excerpt["execution"], item) for excerpt in bundle.payload["transcripts"]
            for item in excerpt["records"]]  # fmt: skip


def _assert_every_call_is_its_admitted_receipt(record: RunRecord, tmp_path: Path) -> int:
    evidence = RunEvidence.of(record)
    bound = all(node.is_agent for node in record.graph.nodes)
    node = record.graph.nodes[0].id if len(record.graph.nodes) == 1 else None
    labels: list[str] = []
    for execution, item in _records(record, tmp_path):
        if item.get("role") == "assistant" and item.get("tool") and bound:
            assert "receipt" in item, (execution, item)
        if "receipt" not in item:
            continue
        label = item["receipt"]
        references, refused = parse_references([label])
        assert refused is None
        assert reference_problem(references, evidence, graph_node_ids=[]) is None
        cited = evidence.execution_of(references[0])
        assert cited is not None
        assert cited.ref == execution
        receipt = evidence.receipts[int(label.split(":")[1])]
        assert receipt.tool == item["tool"]
        if node is not None:
            assert attribution_problem(references, node, evidence, require_own=True) is None
        labels.append(label)
    assert len(labels) == len(set(labels)), "one receipt labels one record"
    return len(labels)


@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_session_tool_calls_carry_their_receipt(name: str, tmp_path: Path) -> None:
    record = open_run_source(SESSIONS[name], tmp_path / "rec")
    labelled = _assert_every_call_is_its_admitted_receipt(record, tmp_path)
    if record.graph.nodes[0].binding is None:
        # Admission refuses an unbound node's receipts (receipt_auxiliary): none is labelled.
        assert labelled == 0 < len(record.receipts)
    else:
        assert labelled == len(record.receipts) > 0


@pytest.mark.parametrize("name", RUN_NAMES)
def test_host_transcripts_are_matched_to_receipts_by_tool_and_time(
    name: str, tmp_path: Path
) -> None:
    record = load_run_record(RUNS / name)
    labelled = _assert_every_call_is_its_admitted_receipt(record, tmp_path)
    # map-verbose-reviewer overflows the transcript budget: only the kept calls are labelled.
    assert 0 < labelled <= len(record.receipts)


def _host_record(
    tmp_path: Path, lines: list[dict[str, Any]], receipts: list[ToolReceipt]
) -> RunRecord:
    """clean-success with ``lines`` as its first execution's transcript and ``receipts``."""
    folder = tmp_path / "run"
    (folder / "transcripts").mkdir(parents=True)
    raw = json.loads((RUNS / "clean-success" / "run.json").read_text(encoding="utf-8"))
    execution = raw["executions"][0]
    for other in raw["executions"][1:]:
        other.pop("transcript", None)
    execution["transcript"] = "transcripts/only.jsonl"
    raw["receipts"] = [receipt.model_dump(mode="json") for receipt in receipts]
    raw.pop("deliveries", None)
    (folder / "transcripts" / "only.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8"
    )
    (folder / "run.json").write_text(json.dumps(raw), encoding="utf-8")
    return load_run_record(folder)


def test_a_call_without_a_receipt_of_its_execution_gets_no_label(tmp_path: Path) -> None:
    raw = json.loads((RUNS / "clean-success" / "run.json").read_text(encoding="utf-8"))
    own = raw["executions"][0]["id"]
    receipts = [
        ToolReceipt(seq=3, execution=own, time_ms=1000, tool="Read"),
        ToolReceipt(seq=4, execution=None, time_ms=2000, tool="Bash"),
    ]
    lines = [
        {"role": "assistant", "tool": "Read", "time_ms": 1000, "text": "{}"},  # receipt 3
        {"role": "assistant", "tool": "Read", "time_ms": 1000, "text": "{}"},  # 3 is used
        {"role": "assistant", "tool": "Bash", "time_ms": 2000, "text": "{}"},  # unattributed
        {"role": "assistant", "tool": "Edit", "time_ms": 1000, "text": "{}"},  # other tool
        {"role": "tool", "tool": "Read", "time_ms": 1000, "text": "file"},  # a result
        {"role": "assistant", "tool": "Read", "receipt": 99, "text": "{}"},  # not in the record
    ]
    record = _host_record(tmp_path, lines, receipts)
    got = [item.get("receipt") for _, item in _records(record, tmp_path)]
    assert got == ["receipt:3", None, None, None, None, None]


def test_a_written_seq_counts_only_for_its_own_execution(tmp_path: Path) -> None:
    raw = json.loads((RUNS / "clean-success" / "run.json").read_text(encoding="utf-8"))
    own = raw["executions"][0]["id"]
    receipts = [
        ToolReceipt(seq=0, execution=raw["executions"][1]["id"], time_ms=5, tool="Read"),
        ToolReceipt(seq=1, execution=own, time_ms=5, tool="Read"),
    ]
    lines = [
        {"role": "assistant", "tool": "Read", "receipt": 0, "time_ms": 5, "text": "{}"},
        {"role": "assistant", "tool": "Read", "receipt": 1, "time_ms": 5, "text": "{}"},
        {"role": "assistant", "tool": "Read", "time_ms": 5, "text": "{}"},  # 1 already used
    ]
    record = _host_record(tmp_path, lines, receipts)
    got = [item.get("receipt") for _, item in _records(record, tmp_path)]
    assert got == [None, "receipt:1", None]


def test_a_pager_cut_call_keeps_its_receipt(tmp_path: Path) -> None:
    record = open_run_source(SESSIONS["claude"], tmp_path / "rec")
    main = record.executions[0]
    assert main.transcript is not None
    lines = main.transcript.read_text(encoding="utf-8").splitlines()
    call = next(json.loads(line) for line in lines if '"receipt"' in line)
    call["text"] = call["text"] + " " * 100_000
    main.transcript.write_text(json.dumps(call, ensure_ascii=False) + "\n", encoding="utf-8")
    got = [item.get("receipt") for _, item in _records(record, tmp_path)
           if item.get("tool") == call["tool"]]  # fmt: skip
    assert f"receipt:{call['receipt']}" in got
