"""The preamble's list of the evidence payload is what each specialist's payload really holds:
a part it names is there, a part it says is missing is not (graph maintenance has no
transcripts or receipts, repository maintenance no completions or transcripts)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from active_memory.agents.payload_parts import payload_parts
from active_memory.evidence.builder import SPECIALISTS, build_evidence
from active_memory.models.runs import load_run_record
from fixture_runs import RUNS

_NAMED = re.compile(r"`([a-z_]+)` \(")
_MISSING = re.compile(r"no `([a-z_]+)`")


@pytest.mark.parametrize("specialist", sorted(SPECIALISTS))
def test_every_payload_part_the_prompt_names_is_there_and_no_other(
    specialist: str, tmp_path: Path
) -> None:
    record = load_run_record(RUNS / "retry-and-review")
    lessons = [] if specialist.endswith("discovery") else None
    payload = build_evidence(
        record, specialist, private_dir=tmp_path / "p", existing_lessons=lessons
    ).payload
    text = payload_parts(specialist)
    named, missing = set(_NAMED.findall(text)), set(_MISSING.findall(text))
    assert "executions" in named
    for part in named:
        assert part in payload, (specialist, part)
    executions = payload["executions"]
    assert executions
    for part in missing:
        if part == "completions":
            assert all("completion" not in execution for execution in executions)
        else:
            assert part not in payload, (specialist, part)
    # Whatever the payload carries beyond bookkeeping is either named or said to be missing.
    bookkeeping = {"format", "run", "runtime", "specialist", "truncation", "evidence_truncated",
                   "private_files", "lesson_changes", "checkout"}  # fmt: skip
    assert set(payload) - bookkeeping <= named, (specialist, set(payload) - bookkeeping - named)
