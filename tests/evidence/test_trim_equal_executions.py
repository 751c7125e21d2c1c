"""Many equal executions: trimming cuts what the budget needs and keeps a record of each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from active_memory.evidence.builder import build_evidence
from active_memory.models.runs import load_run_record

# Records per transcript. Ten of about 430 bytes make each execution's transcript some 4.3 KB,
# over four times its share of the largest budget here (262,144 / 200 is about 1.3 KB), and the
# 200 transcripts over three times the budget: every execution must still be trimmed to fit.
# (Thirty made the complete copies of every cut transcript, which are redacted line by line,
# three times the CPU for the same cut.)
RECORDS = 10


def _record(folder: Path, executions: int) -> Path:
    (folder / "transcripts").mkdir(parents=True)
    items: list[dict[str, Any]] = []
    for index in range(executions):
        name = f"transcripts/{index:03d}.jsonl"
        with (folder / name).open("w", encoding="utf-8") as out:
            for n in range(RECORDS):
                role = "user" if n == 0 else "assistant"
                out.write(json.dumps({"role": role, "text": f"step {n} of {index} " + "w" * 400}))
                out.write("\n")
        items.append({"id": f"e{index}", "node": "work", "occurrence": index + 1, "attempt": 1,
                      "status": "completed", "started_ms": index, "ended_ms": index + 1,
                      "completion": "done " * 40, "transcript": name})  # fmt: skip
    receipts = [{"seq": i, "execution": f"e{i % executions}", "time_ms": i, "tool": "Read",
                 "paths": [f"src/m{i}.py"]} for i in range(600)]  # fmt: skip
    graph = {
        "name": "g",
        "nodes": [
            {"id": "work", "kind": "worker", "binding": {"provider": "anthropic", "model": "m"}}
        ],
    }
    (folder / "run.json").write_text(json.dumps({
        "format": "active-memory/run-record@1", "run_id": "equal", "graph": graph,
        "runtime": {}, "executions": items, "receipts": receipts,
    }))  # fmt: skip
    return folder


@pytest.mark.parametrize("budget", [200_000, 262_144])
def test_two_hundred_equal_executions_each_keep_a_record(tmp_path: Path, budget: int) -> None:
    record = load_run_record(_record(tmp_path / "run", 200))
    bundle = build_evidence(record, "repository_discovery", private_dir=tmp_path / "p",
                            budget_bytes=budget)  # fmt: skip
    excerpts = bundle.payload["transcripts"]
    assert len(excerpts) == 200
    assert all(excerpt["records"] for excerpt in excerpts)
    assert bundle.payload["receipts"], "receipts are shrunk, never emptied, when records fit"
    # Only what the budget needs is cut: the payload ends close to the budget.
    assert budget * 0.97 <= bundle.size_bytes <= budget


def test_when_not_every_execution_fits_the_budget_is_still_used(tmp_path: Path) -> None:
    record = load_run_record(_record(tmp_path / "run", 201))
    bundle = build_evidence(record, "repository_discovery", private_dir=tmp_path / "p")
    kept = sum(1 for excerpt in bundle.payload["transcripts"] if excerpt["records"])
    assert kept >= 100
    assert bundle.size_bytes >= 131072 * 0.97
    reasons = {cut.reason for cut in bundle.truncation.cuts}
    assert any("transcript budget" in reason for reason in reasons)
