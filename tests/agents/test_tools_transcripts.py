"""read_transcript: the complete copies read back in bounded pages, bad calls as tool errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from active_memory.agents.providers.base import ToolCall
from active_memory.agents.tools import Toolbox, ToolOutcome
from active_memory.evidence.builder import build_evidence
from active_memory.evidence.complete_copies import COPY_FOLDER, COPY_INDEX
from evidence.copies_kit import SECRET, cut_run


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The evidence of one cut run, built once: building it is most of each test's time."""
    folder = tmp_path_factory.mktemp("built")
    record = cut_run(folder / "run", long_records=400)
    build_evidence(record, "graph_discovery", private_dir=folder / "p", budget_bytes=16_384)
    return folder / "p"


@pytest.fixture
def evidence(tmp_path: Path, built: Path) -> Path:
    """A test's own copy of the built evidence (two tests rewrite its index)."""
    return Path(shutil.copytree(built, tmp_path / "p"))


async def _read(tools: Toolbox, execution: str, **arguments: Any) -> ToolOutcome:
    arguments = {
        "execution": execution,
        "from_record": arguments.get("from_record"),
        "max_records": arguments.get("max_records"),
        "text_offset": arguments.get("text_offset"),
    }
    return await tools.run(ToolCall("c1", "read_transcript", json.dumps(arguments)))


def _records(outcome: ToolOutcome) -> list[dict[str, Any]]:
    return [json.loads(line) for line in outcome.content.splitlines() if line.startswith("{")]


def test_the_tool_is_offered_only_with_an_evidence_root(tmp_path: Path, evidence: Path) -> None:
    names = [spec.name for spec in Toolbox({"evidence": evidence}).specs()]
    assert "read_transcript" in names
    assert "read_transcript" not in [spec.name for spec in Toolbox({"other": tmp_path}).specs()]


async def test_a_page_of_records_from_a_record_number(evidence: Path) -> None:
    outcome = await _read(Toolbox({"evidence": evidence}), "exec:long", from_record=5,
                          max_records=3)  # fmt: skip
    assert not outcome.is_error
    records = _records(outcome)
    assert [r["n"] for r in records] == [5, 6, 7]
    assert "KeyError 'sku'" in records[0]["text"]
    assert SECRET not in outcome.content
    assert outcome.content.splitlines()[-1] == "[more records: from_record=8]"


async def test_a_page_is_bounded_in_bytes(evidence: Path) -> None:
    tools = Toolbox({"evidence": evidence}, max_output_bytes=4096)
    outcome = await _read(tools, "long", max_records=200)
    records = _records(outcome)
    assert 1 < len(records) < 10
    assert len(outcome.content.encode("utf-8")) <= 4096 + 512
    assert outcome.content.endswith(f"[more records: from_record={records[-1]['n'] + 1}]")


async def test_a_record_longer_than_a_page_continues_at_a_text_offset(evidence: Path) -> None:
    tools = Toolbox({"evidence": evidence}, max_output_bytes=400)
    first = await _read(tools, "exec:long", from_record=10)
    [record] = _records(first)
    footer = first.content.splitlines()[-1]
    assert footer.startswith("[record 10 continues: from_record=10, text_offset=")
    offset = int(footer.split("text_offset=")[1].rstrip("]"))
    second = await _read(tools, "exec:long", from_record=10, text_offset=offset)
    assert len(record["text"]) == offset, "the first page ends where the second starts"
    assert (record["text"] + _records(second)[0]["text"]).startswith("step 8 read src/m8.py")


async def test_the_end_of_a_transcript_is_said(evidence: Path) -> None:
    outcome = await _read(Toolbox({"evidence": evidence}), "exec:long", from_record=400)
    assert [r["n"] for r in _records(outcome)] == [400, 401]
    assert outcome.content.endswith("[end of transcript]")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"from_record": 0}, "from_record 0 must be 1 or more"),
        ({"max_records": 0}, "max_records 0 must be between 1 and 200"),
        ({"max_records": 201}, "max_records 201 must be between 1 and 200"),
        ({"text_offset": -1}, "text_offset -1 must be 0 or more"),
    ],
)
async def test_bad_arguments_are_tool_errors(
    evidence: Path, arguments: dict[str, Any], message: str
) -> None:
    outcome = await _read(Toolbox({"evidence": evidence}), "exec:long", **arguments)
    assert outcome.is_error
    assert message in outcome.content


async def test_an_execution_without_a_copy_names_the_copies(evidence: Path) -> None:
    outcome = await _read(Toolbox({"evidence": evidence}), "exec:short")
    assert outcome.is_error
    assert "no complete transcript of 'exec:short'" in outcome.content
    assert "copies: exec:long" in outcome.content


async def test_an_index_naming_a_file_outside_the_copies_is_refused(
    evidence: Path, tmp_path: Path
) -> None:
    (tmp_path / "outside.jsonl").write_text('{"n": 1, "text": "TOP-SECRET"}\n')
    index = evidence / COPY_FOLDER / COPY_INDEX
    index.write_text(json.dumps({"exec:long": "../../outside.jsonl"}))
    outcome = await _read(Toolbox({"evidence": evidence}), "exec:long")
    assert outcome.is_error
    assert "not a copy this tool reads" in outcome.content
    assert "TOP-SECRET" not in outcome.content


async def test_a_broken_index_is_a_tool_error(evidence: Path) -> None:
    (evidence / COPY_FOLDER / COPY_INDEX).write_text("{not json")
    outcome = await _read(Toolbox({"evidence": evidence}), "exec:long")
    assert outcome.is_error
    assert "is not JSON" in outcome.content


async def test_whole_number_floats_are_taken_as_integers(evidence: Path) -> None:
    # JSON Schema's "integer" admits 5.0, and models write it; the tool must read, not crash.
    outcome = await _read(Toolbox({"evidence": evidence}), "exec:long", from_record=5.0,
                          max_records=2.0, text_offset=0.0)  # fmt: skip
    assert not outcome.is_error, outcome.content
    assert [r["n"] for r in _records(outcome)] == [5, 6]


async def test_an_error_quoting_a_huge_argument_stays_bounded(evidence: Path) -> None:
    outcome = await _read(Toolbox({"evidence": evidence}), "exec:" + "x" * 100_000)
    assert outcome.is_error
    assert len(outcome.content.encode("utf-8")) < 4096
    assert "no complete transcript" in outcome.content
