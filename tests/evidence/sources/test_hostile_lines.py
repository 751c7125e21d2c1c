"""Every source records a line it could not read as a cut, whatever made it unreadable."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from active_memory.evidence.builder import build_evidence
from active_memory.evidence.sources import open_run_source
from active_memory.evidence.sources.lines import LINE_LIMIT

FIXTURES = Path(__file__).parents[2] / "fixtures"
SESSIONS = {
    "codex": FIXTURES / "codex" / "rollout-2025-07-14T10-00-00-legacy.jsonl",
    "pi": FIXTURES / "pi" / "2025-12-01T14-00-00-000Z_019a7c3e-5b2d-7f10-9c4e-2d8b6a1f0e3c.jsonl",
    "copilot": FIXTURES / "copilot" / "session-state" / "3c1f0a52-7d4e-4b8a-9e21-6f5d8c0b1a47"
    / "events.jsonl",
}  # fmt: skip
HOSTILE = {
    "over the line limit": '{"type": "message", "text": "' + "z" * (LINE_LIMIT + 10) + '"}',
    "nested too deeply": "[" * 50_000 + "]" * 50_000,
    "a number too large": '{"type": "message", "n": ' + "7" * 6000 + "}",
    "a lone surrogate": '{"type": "message", "text": "\\udc00"}',
}


@pytest.mark.parametrize("harness", sorted(SESSIONS))
def test_hostile_lines_are_counted_and_cut_never_raised(tmp_path: Path, harness: str) -> None:
    path = tmp_path / "session.jsonl"
    shutil.copy(SESSIONS[harness], path)
    with path.open("a", encoding="utf-8") as out:
        for line in HOSTILE.values():
            out.write(line + "\n")
    record = open_run_source(path, tmp_path / "rec")
    assert record.runtime["lines_unreadable"] == len(HOSTILE)
    reasons = {cut["reason"] for cut in record.runtime["source_cuts"]}
    assert reasons == {f"line not read: {problem}" for problem in HOSTILE}
    bundle = build_evidence(record, "repository_discovery", private_dir=tmp_path / "private")
    sections = {(cut.section, cut.reason) for cut in bundle.truncation.cuts}
    assert ("source.lines", "line not read: over the line limit") in sections
