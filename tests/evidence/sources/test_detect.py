from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from active_memory.errors import RunRecordError
from active_memory.evidence.sources import detect_harness, open_run_source

FIXTURES = Path(__file__).parents[2] / "fixtures"
SAMPLES = {
    "claude": FIXTURES / "claude" / "inline-sidechain.jsonl",
    "codex": FIXTURES / "codex"
    / "rollout-2025-11-20T09-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl",
    "codex-legacy": FIXTURES / "codex" / "rollout-2025-07-14T10-00-00-legacy.jsonl",
    "pi": FIXTURES / "pi" / "2025-12-01T14-00-00-000Z_019a7c3e-5b2d-7f10-9c4e-2d8b6a1f0e3c.jsonl",
    "copilot": FIXTURES / "copilot" / "session-state" / "3c1f0a52-7d4e-4b8a-9e21-6f5d8c0b1a47"
    / "events.jsonl",
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_the_format_is_told_by_content_whatever_the_file_is_called(
    tmp_path: Path, name: str
) -> None:
    renamed = tmp_path / "session.log"
    shutil.copy(SAMPLES[name], renamed)
    assert detect_harness(renamed) == name.split("-")[0]
    record = open_run_source(renamed, tmp_path / "rec")
    if name == "codex-legacy":  # names no model: unbound, the postmortem asks for one
        assert record.graph.nodes[0].binding is None
        return
    assert record.graph.nodes[0].binding is not None
    assert record.graph.nodes[0].binding.lane == {"claude": "claude-code"}.get(
        name, name.split("-")[0]
    )


def test_a_file_of_no_known_format_names_the_formats_and_its_first_record_shape(
    tmp_path: Path,
) -> None:
    path = tmp_path / "other.jsonl"
    secret = "sk-ant-api03-EXAMPLEONLY-not-a-real-key-000000000000"
    path.write_text(json.dumps({"event": "start", "token": secret, "type": "boot"}) + "\n")
    with pytest.raises(RunRecordError) as caught:
        open_run_source(path, tmp_path / "rec")
    message = str(caught.value)
    for name in ("Claude Code", "Codex CLI", "pi", "Copilot CLI"):
        assert name in message
    assert "keys [event, token, type], type 'boot'" in message
    assert secret not in message
    assert message.count("\n") == 0


@pytest.mark.parametrize(
    ("content", "shape"),
    [("", "the file is empty"), ("hello\n", "its first line is not a JSON object (not JSON")],
)
def test_an_empty_or_non_json_file_says_so(tmp_path: Path, content: str, shape: str) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(content, "utf-8")
    with pytest.raises(RunRecordError, match="neither a run record") as caught:
        detect_harness(path)
    assert shape in str(caught.value)


def test_a_forced_harness_reads_a_file_of_no_known_format_and_says_what_it_holds(
    tmp_path: Path,
) -> None:
    path = tmp_path / "other.jsonl"
    path.write_text("".join(json.dumps({"type": "note", "n": n}) + "\n" for n in range(5)))
    expected = {
        "pi": "no messages of a pi session",
        "codex": "no messages or tool calls of a Codex session",
        "copilot": "no messages or tool calls of a Copilot CLI session",
    }
    for harness, says in expected.items():
        with pytest.raises(RunRecordError) as caught:
            open_run_source(path, tmp_path / harness, harness=harness)
        message = str(caught.value)
        assert says in message
        assert "its first record has keys [n, type], type 'note'" in message
        assert "\n" not in message


@pytest.mark.parametrize("forced", ["claude", "codex", "pi", "copilot"])
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_a_forced_harness_that_the_content_contradicts_is_refused_naming_the_content(
    tmp_path: Path, name: str, forced: str
) -> None:
    real = name.split("-")[0]
    if forced == real:
        return
    with pytest.raises(RunRecordError) as caught:
        open_run_source(SAMPLES[name], tmp_path / "rec", harness=forced)
    told = {"claude": "Claude Code", "codex": "Codex CLI", "pi": "pi", "copilot": "Copilot CLI"}
    assert f"is a {told[real]} session, not a {told[forced]} one" in str(caught.value)
    assert f"--harness {real}" in str(caught.value)
    assert not (tmp_path / "rec").exists()


def test_a_bare_line_that_is_no_codex_item_is_cut_not_read_as_a_placeholder(
    tmp_path: Path,
) -> None:
    path = tmp_path / "rollout.jsonl"
    legacy = SAMPLES["codex-legacy"].read_text("utf-8")
    path.write_text(legacy + json.dumps({"type": "user", "sessionId": "x"}) + "\n", "utf-8")
    record = open_run_source(path, tmp_path / "rec", harness="codex")
    assert record.executions[0].transcript is not None
    assert '"[user]"' not in record.executions[0].transcript.read_text("utf-8")
    cuts = {cut["reason"]: cut["count"] for cut in record.runtime["source_cuts"]}
    assert cuts["line not read: not a Codex rollout record"] == 1
