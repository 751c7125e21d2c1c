"""Complete transcript copies: what the budget cut is written beside the evidence, private."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from active_memory.evidence.builder import build_evidence
from active_memory.evidence.complete_copies import COPY_FOLDER, load_index
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
