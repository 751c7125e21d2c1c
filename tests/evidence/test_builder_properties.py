"""Property tests over random histories: the budget holds, cuts are flagged, excerpts stay."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

from active_memory.evidence.builder import build_evidence
from active_memory.models.runs import RunRecord, parse_run_record

GRAPH = {
    "name": "random",
    "nodes": [
        {"id": "worker", "kind": "worker", "binding": {"provider": "p", "model": "m"}},
        {"id": "fan", "kind": "map"},
        {"id": "reviewer", "kind": "verifier", "binding": {"provider": "p", "model": "m"}},
    ],
}

line = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "tool"]),
        "text": st.one_of(
            st.text(max_size=200),
            st.integers(min_value=0, max_value=30_000).map(lambda n: "y" * n),
        ),
    }
)
execution = st.fixed_dictionaries(
    {
        "node": st.sampled_from(["worker", "reviewer"]),
        "lines": st.lists(line, max_size=40),
        "completion": st.one_of(st.none(), st.text(max_size=3000)),
        "status": st.sampled_from(["completed", "error", "timeout", "crashed", "cancelled"]),
    }
)
history = st.lists(execution, min_size=1, max_size=8)
specialists = st.sampled_from(["graph_discovery", "repository_discovery", "graph_maintenance"])


def _record(folder: Path, executions: list[dict[str, Any]]) -> RunRecord:
    (folder / "transcripts").mkdir()
    items = []
    for index, item in enumerate(executions):
        name = f"transcripts/{index}.jsonl"
        with (folder / name).open("w", encoding="utf-8") as out:
            for entry in item["lines"]:
                out.write(json.dumps(entry) + "\n")
        items.append({
            "id": f"e{index}", "node": item["node"], "occurrence": index + 1, "attempt": 1,
            "status": item["status"], "started_ms": index, "ended_ms": index + 1,
            "completion": item["completion"], "transcript": name,
        })  # fmt: skip
    receipts = [{"seq": i, "execution": f"e{i % len(items)}", "time_ms": i, "tool": "Read",
                 "paths": [f"src/module_{i}.py"]} for i in range(3 * len(items))]  # fmt: skip
    data = {"format": "active-memory/run-record@1", "run_id": "run-random", "graph": GRAPH,
            "runtime": {"token": "x"}, "executions": items, "receipts": receipts}  # fmt: skip
    return parse_run_record(data, folder)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    executions=history,
    budget=st.integers(min_value=4096, max_value=48 * 1024),
    specialist=specialists,
)
def test_serialized_evidence_never_exceeds_the_budget_and_flags_every_cut(
    executions: list[dict[str, Any]], budget: int, specialist: str
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        record = _record(folder, executions)
        bundle = build_evidence(record, specialist, private_dir=folder / "private",
                                budget_bytes=budget)  # fmt: skip
    assert len(bundle.serialized.encode("utf-8")) <= budget
    payload = json.loads(bundle.serialized)
    assert payload["evidence_truncated"] == bool(payload["truncation"]["cuts"])
    for excerpt in payload.get("transcripts", []):
        lost = excerpt["records_total"] - len(excerpt["records"])
        if lost:
            assert excerpt["records_dropped"] == lost
            assert payload["evidence_truncated"]
        if any("…[cut " in record["text"] for record in excerpt["records"]):
            assert payload["evidence_truncated"]
    listed = payload["executions"]
    if len(listed) == len(executions):
        assert [item["ref"] for item in listed] == [f"exec:e{i}" for i in range(len(executions))]
        assert [item["occurrence"] for item in listed] == list(range(1, len(executions) + 1))
    else:
        assert payload["evidence_truncated"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(executions=history)
def test_every_execution_with_history_keeps_an_excerpt_when_the_budget_allows(
    executions: list[dict[str, Any]],
) -> None:
    # 64 KiB holds an excerpt record (at most 2 KiB here) of each of 8 executions with room.
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        record = _record(folder, executions)
        bundle = build_evidence(record, "graph_discovery", private_dir=folder / "private",
                                budget_bytes=64 * 1024)  # fmt: skip
    kept = {item["execution"] for item in bundle.payload["transcripts"] if item["records"]}
    with_history = {f"exec:e{i}" for i, item in enumerate(executions) if item["lines"]}
    assert kept == with_history
