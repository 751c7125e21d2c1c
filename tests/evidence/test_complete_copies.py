"""Complete transcript copies: what the budget cut is written beside the evidence, private."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from active_memory.evidence import complete_copies
from active_memory.evidence.builder import build_evidence
from active_memory.evidence.complete_copies import COPY_FOLDER, load_index
from active_memory.models.runs import RunRecord, load_run_record
from evidence.copies_kit import SECRET, cut_run


def _copy_lines(private: Path, ref: str) -> list[dict[str, Any]]:
    name = load_index(private)[ref]
    text = (private / COPY_FOLDER / name).read_text("utf-8")
    return [json.loads(line) for line in text.splitlines()]


def test_a_cut_transcript_is_copied_whole_redacted_and_private(tmp_path: Path) -> None:
    record = cut_run(tmp_path / "run", long_records=400)
    private = tmp_path / "p"
    bundle = build_evidence(record, "graph_discovery", private_dir=private, budget_bytes=16_384)
    long = next(t for t in bundle.payload["transcripts"] if t["execution"] == "exec:long")
    assert long["records_dropped"] > 300

    lines = _copy_lines(private, "exec:long")
    assert [line["n"] for line in lines] == list(range(1, 402)), "every record, in order"
    failure = lines[4]["text"]
    assert "KeyError 'sku'" in failure
    assert SECRET not in failure, "redacted like the evidence"
    assert lines[1]["text"].startswith("step 0 read src/m0.py"), "paths workspace-relative"
    # What the payload says was left out is what the copy holds beyond the excerpt.
    shown = {r["n"] for r in long["records"]}
    assert long["bytes_left_out"] == sum(ln["bytes"] for ln in lines if ln["n"] not in shown)
    assert bundle.payload["private_files"]["transcripts"] == COPY_FOLDER

    folder = private / COPY_FOLDER
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for path in folder.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name


def test_an_excerpt_the_budget_left_whole_gets_no_copy(tmp_path: Path) -> None:
    record = cut_run(tmp_path / "run", long_records=400)
    private = tmp_path / "p"
    bundle = build_evidence(record, "graph_discovery", private_dir=private, budget_bytes=16_384)
    short = next(t for t in bundle.payload["transcripts"] if t["execution"] == "exec:short")
    assert short["records_dropped"] == 0
    assert "bytes_left_out" not in short
    assert "exec:short" not in load_index(private)


def test_nothing_cut_writes_no_copies(tmp_path: Path) -> None:
    record = cut_run(tmp_path / "run", long_records=5)
    private = tmp_path / "p"
    bundle = build_evidence(record, "graph_discovery", private_dir=private)
    assert "transcripts" not in bundle.payload["private_files"]
    assert not (private / COPY_FOLDER).exists()


def test_maintenance_specialists_get_no_copies(tmp_path: Path) -> None:
    record = cut_run(tmp_path / "run", long_records=400)
    private = tmp_path / "p"
    build_evidence(record, "graph_maintenance", private_dir=private, budget_bytes=16_384)
    assert not (private / COPY_FOLDER).exists(), "their payload holds no transcripts"


def test_a_rebuild_that_cuts_nothing_offers_no_earlier_copies(tmp_path: Path) -> None:
    private = tmp_path / "p"
    record = cut_run(tmp_path / "run", long_records=400)
    build_evidence(record, "graph_discovery", private_dir=private, budget_bytes=16_384)
    assert "exec:long" in load_index(private)
    small = cut_run(tmp_path / "small", long_records=5)
    build_evidence(small, "graph_discovery", private_dir=private)
    assert load_index(private) == {}


def _many_executions(folder: Path, count: int) -> RunRecord:
    """``count`` small executions: listing them all leaves the budget no room for excerpts."""
    (folder / "t").mkdir(parents=True)
    items = []
    for index in range(count):
        lines = [
            {"role": "user", "text": f"migrate module {index}"},
            {"role": "assistant", "tool": "Bash", "text": f"pytest tests/m{index}: ok"},
        ]
        (folder / "t" / f"e{index}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        items.append({"id": f"e{index}", "node": "work", "occurrence": index + 1, "attempt": 1,
                      "status": "completed", "started_ms": index,
                      "transcript": f"t/e{index}.jsonl"})  # fmt: skip
    node = {"id": "work", "kind": "worker", "binding": {"provider": "anthropic", "model": "m"}}
    run = {"format": "active-memory/run-record@1", "run_id": "many",
           "graph": {"name": "g", "nodes": [node]}, "runtime": {}, "executions": items,
           "receipts": []}  # fmt: skip
    (folder / "run.json").write_text(json.dumps(run))
    return load_run_record(folder)


def test_an_execution_the_budget_left_out_whole_is_copied_too(tmp_path: Path) -> None:
    record = _many_executions(tmp_path / "run", 200)
    private = tmp_path / "p"
    bundle = build_evidence(record, "graph_discovery", private_dir=private, budget_bytes=16_384)
    excerpted = {item["execution"] for item in bundle.payload["transcripts"]}
    left_out = [f"exec:e{index}" for index in range(200) if f"exec:e{index}" not in excerpted]
    assert left_out, "the budget left some executions without an excerpt"
    assert set(left_out) <= set(load_index(private))
    lines = _copy_lines(private, left_out[-1])
    number = left_out[-1].removeprefix("exec:e")
    assert [line["text"] for line in lines] == [f"migrate module {number}",
                                                f"pytest tests/m{number}: ok"]  # fmt: skip
    assert "transcripts_not_copied" not in bundle.payload


def test_copies_stop_at_their_cap_and_the_payload_counts_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = _many_executions(tmp_path / "run", 200)
    one = (tmp_path / "run" / "t" / "e0.jsonl").stat().st_size
    monkeypatch.setattr(complete_copies, "COPY_TOTAL_BYTES", 100 * one)
    private = tmp_path / "p"
    bundle = build_evidence(record, "graph_discovery", private_dir=private, budget_bytes=16_384)
    copied = len(load_index(private))
    assert 90 <= copied <= 100
    left = bundle.payload["transcripts_not_copied"]
    assert left["executions"] + copied == sum(
        1 for item in record.executions if f"exec:{item.id}" not in _whole(bundle)
    )
    assert left["bytes"] > 0
    assert any(cut.reason == "complete copies over their cap" for cut in bundle.truncation.cuts)


def _whole(bundle: Any) -> set[str]:
    """The executions whose excerpt shows every record: they need no copy."""
    return {item["execution"] for item in bundle.payload["transcripts"]
            if not item.get("records_dropped") and not item.get("records_cut")}  # fmt: skip
