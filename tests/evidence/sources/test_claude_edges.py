"""Generated Claude Code sessions at the edges: nothing is dropped without a recorded cut."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

import active_memory
from active_memory.evidence.builder import build_evidence
from active_memory.evidence.sources.claude_code import load_claude_session
from active_memory.evidence.sources.lanes import RECORD_TEXT_BYTES
from active_memory.evidence.sources.lines import LINE_LIMIT
from active_memory.models.runs import RunRecord
from evidence.sources.session_writers import (
    SESSION,
    assistant_text,
    session_path,
    tool_result,
    tool_use,
    user,
    write_lines,
)


def _cuts(record: RunRecord) -> dict[str, int]:
    return {f"{cut['section']}: {cut['reason']}": cut["count"]
            for cut in record.runtime["source_cuts"]}  # fmt: skip


def _evidence_cuts(record: RunRecord, tmp_path: Path) -> dict[tuple[str, str], int]:
    bundle = build_evidence(record, "repository_discovery", private_dir=tmp_path / "private")
    return {(cut.section, cut.reason): cut.count for cut in bundle.truncation.cuts}


def _transcript(record: RunRecord, index: int = 0) -> list[dict[str, Any]]:
    path = record.executions[index].transcript
    assert path is not None
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_receipts_beyond_the_ring_are_reported_with_the_true_count(tmp_path: Path) -> None:
    lines: list[dict[str, Any]] = [user("Read every module.", 0)]
    for n in range(1, 739):
        lines.append(tool_use("Read", {"file_path": f"/home/dev/order-service/m{n}.py"}, 2 * n))
        lines.append(tool_result("ok", 2 * n + 1, 2 * n))
    record = load_claude_session(write_lines(session_path(tmp_path), lines), tmp_path / "rec")
    assert len(record.receipts) == 512
    assert record.runtime["receipts_total"] == 738
    assert record.receipts[-1].seq == 737
    bundle = build_evidence(record, "repository_discovery", private_dir=tmp_path / "private")
    assert bundle.payload["run"]["receipts_total"] == 738
    ring = [cut for cut in bundle.truncation.cuts if cut.section == "receipts"]
    assert sum(cut.count for cut in ring) >= 738 - 512
    assert any("512" in cut.reason for cut in ring)


def test_a_line_over_the_limit_is_a_recorded_cut_with_a_placeholder(tmp_path: Path) -> None:
    huge = tool_result("y" * (LINE_LIMIT + 1024), 2, 1)
    lines = [user("Show me the log.", 0), tool_use("Bash", {"command": "cat big.log"}, 1), huge,
             assistant_text("The log is huge.", 3)]  # fmt: skip
    record = load_claude_session(write_lines(session_path(tmp_path), lines), tmp_path / "rec")
    assert record.runtime["lines_unreadable"] == 1
    assert _cuts(record) == {"lines: line not read: over the line limit": 1}
    placeholder = [line for line in _transcript(record) if "over the line limit" in line["text"]]
    assert len(placeholder) == 1
    assert placeholder[0]["role"] == "tool"
    assert f"{LINE_LIMIT + 1024}" in placeholder[0]["text"] or "bytes" in placeholder[0]["text"]
    cuts = _evidence_cuts(record, tmp_path)
    assert cuts[("source.lines", "line not read: over the line limit")] == 1


def test_a_long_result_with_few_escapes_keeps_role_tool_start_and_end(tmp_path: Path) -> None:
    body = "START " + "a" * 200_000 + "\n" + "b" * 1000 + " END"
    lines = [user("Dump it.", 0), tool_use("Bash", {"command": "cat dump.txt"}, 1),
             tool_result(body, 2, 1), assistant_text("Done.", 3)]  # fmt: skip
    record = load_claude_session(write_lines(session_path(tmp_path), lines), tmp_path / "rec")
    result = next(line for line in _transcript(record) if line["role"] == "tool")
    assert result["tool"] == "Bash"
    assert result["text"].startswith("START ")
    assert result["text"].endswith(" END")
    assert "…[cut " in result["text"]
    assert len(json.dumps(result, ensure_ascii=False).encode()) < 2 * RECORD_TEXT_BYTES
    bundle = build_evidence(record, "repository_discovery", private_dir=tmp_path / "private")
    excerpt = bundle.payload["transcripts"][0]["records"]
    kept = next(item for item in excerpt if item.get("tool") == "Bash" and item["role"] == "tool")
    assert kept["text"].startswith("START ")
    assert kept["text"].endswith(" END")


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"type": "user", "n": ' + "9" * 5000 + "}", "a number too large"),
        ('{"type": "user", "sessionId": "s", "message": {"content": "\\ud800 alone"}}',
         "a lone surrogate"),
        ("not json at all {", "not JSON"),
    ],
    ids=["deep", "huge-int", "lone-surrogate", "not-json"],
)  # fmt: skip
def test_a_hostile_line_is_an_unreadable_line_with_a_cut(
    tmp_path: Path, line: str, problem: str
) -> None:
    lines = [user("Go.", 0), line, assistant_text("Went.", 2)]
    record = load_claude_session(write_lines(session_path(tmp_path), lines), tmp_path / "rec")
    assert record.runtime["lines_unreadable"] == 1
    assert _cuts(record) == {f"lines: line not read: {problem}": 1}
    assert [line["text"] for line in _transcript(record) if line["role"] == "assistant"] == [
        "Went."
    ]


def _subagent_session(folder: Path, agents: int) -> Path:
    main = [user("Survey every package.", 0)]
    for index in range(agents):
        agent = f"a{index:05x}"
        main.append(tool_use("Task", {"prompt": f"survey {index}"}, 10 + 2 * index))
        result = tool_result(f"package {index} is fine\nagentId: {agent}", 11 + 2 * index,
                             10 + 2 * index, toolUseResult={"agentId": agent})  # fmt: skip
        main.append(result)
    path = write_lines(session_path(folder), main)
    for index in range(agents):
        agent = f"a{index:05x}"
        write_lines(path.with_suffix("") / "subagents" / f"agent-{agent}.jsonl", [
            user(f"survey {index}", 1, sidechain=True, agentId=agent),
            tool_use("Glob", {"path": f"/home/dev/order-service/pkg{index}"}, 2, sidechain=True,
                     agentId=agent),
            assistant_text(f"package {index} is fine", 3, sidechain=True, agentId=agent),
        ])  # fmt: skip
    return path


_UNDER_LIMIT = """
import json, resource, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
from active_memory.evidence.sources.claude_code import load_claude_session
record = load_claude_session(sys.argv[1], sys.argv[2])
records = sum(len(e.transcript.read_text().splitlines()) for e in record.executions)
print(json.dumps({"executions": len(record.executions),
                  "receipts": record.runtime["receipts_total"], "records": records}))
"""


@pytest.mark.slow
def test_a_thousand_subagents_are_read_one_file_at_a_time(tmp_path: Path) -> None:
    """Slow: 1,100 subagent files, read in a process with a low open-file limit."""
    path = _subagent_session(tmp_path, 1100)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(active_memory.__file__).parents[1]), env.get("PYTHONPATH", "")]
    )
    done = subprocess.run(
        [sys.executable, "-c", _UNDER_LIMIT, str(path), str(tmp_path / "rec")],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Too many open files" not in done.stderr
    counts = json.loads(done.stdout)
    assert counts["executions"] == 1101
    assert counts["receipts"] == 2200
    assert counts["records"] == 1 + 2 * 1100 + 3 * 1100


def test_a_launched_subagent_without_its_file_is_an_unavailable_execution(tmp_path: Path) -> None:
    path = _subagent_session(tmp_path, 2)
    (path.with_suffix("") / "subagents" / "agent-a00001.jsonl").unlink()
    record = load_claude_session(path, tmp_path / "rec")
    ids = [execution.id for execution in record.executions]
    assert ids == ["main", "agent-a00000", "agent-a00001"]
    missing = record.executions[2]
    assert missing.completion is not None
    assert "package 1 is fine" in missing.completion
    assert record.runtime["subagents_unavailable"] == ["agent-a00001"]
    bundle = build_evidence(record, "repository_discovery", private_dir=tmp_path / "private")
    excerpt = bundle.payload["transcripts"][2]
    assert excerpt["unavailable"] == "subagent transcript file not found"
    sections = {cut.section for cut in bundle.truncation.cuts}
    assert "source.executions" in sections


def test_a_missing_subagent_is_marked_unavailable_on_its_execution_too(tmp_path: Path) -> None:
    path = _subagent_session(tmp_path, 2)
    (path.with_suffix("") / "subagents" / "agent-a00001.jsonl").unlink()
    record = load_claude_session(path, tmp_path / "rec")
    assert record.executions[1].unavailable is None
    assert record.executions[2].unavailable == "subagent transcript file not found"
    document = json.loads((tmp_path / "rec" / "run.json").read_text("utf-8"))
    assert "unavailable" not in document["executions"][1]
    assert document["executions"][2]["unavailable"] == "subagent transcript file not found"
    bundle = build_evidence(record, "repository_discovery", private_dir=tmp_path / "private")
    listed = bundle.payload["executions"]
    assert "unavailable" not in listed[1]
    assert listed[2]["unavailable"] == "subagent transcript file not found"
    sections = {cut.section for cut in bundle.truncation.cuts}
    assert "source.executions" in sections


def test_warm_up_agents_are_not_work(tmp_path: Path) -> None:
    path = write_lines(session_path(tmp_path), [
        user("Warmup", 0, sidechain=True, agentId="w1"),
        assistant_text("Ready.", 1, sidechain=True, agentId="w1",
                       model="claude-haiku-4-5-20251001"),
        user("Fix the flaky test.", 2),
        tool_use("Read", {"file_path": "/home/dev/order-service/tests/test_config.py"}, 3),
        assistant_text("Fixed.", 4),
    ])  # fmt: skip
    record = load_claude_session(path, tmp_path / "rec")
    assert [execution.id for execution in record.executions] == ["main"]
    assert record.runtime["warmup_agents"] == 1
    assert [receipt.execution for receipt in record.receipts] == ["main"]


def test_every_content_block_leaves_text_or_a_placeholder(tmp_path: Path) -> None:
    blocks = [
        {"type": "text", "text": "What is wrong in this screenshot and spec?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
        {"type": "document", "title": "spec.pdf",
         "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}},
    ]  # fmt: skip
    lines = [user(blocks, 0), assistant_text("The timeout is missing.", 1)]
    record = load_claude_session(write_lines(session_path(tmp_path), lines), tmp_path / "rec")
    texts = [line["text"] for line in _transcript(record) if line["role"] == "user"]
    assert texts == ["What is wrong in this screenshot and spec?", "[image]",
                     "[document: spec.pdf]"]  # fmt: skip
    assert "iVBO" not in json.dumps(_transcript(record))


def test_every_model_used_is_recorded(tmp_path: Path) -> None:
    lines = [user("Plan, then do.", 0), assistant_text("Plan.", 1, model="claude-opus-4-1"),
             assistant_text("Do.", 2), assistant_text("Done.", 3)]  # fmt: skip
    record = load_claude_session(write_lines(session_path(tmp_path), lines), tmp_path / "rec")
    assert record.runtime["models"] == ["claude-opus-4-1", "claude-sonnet-4-5-20250929"]
    binding = record.graph.nodes[0].binding
    assert binding is not None
    assert (binding.model, binding.lane) == ("claude-sonnet-4-5-20250929", "claude-code")


def test_an_answer_split_over_several_lines_counts_its_model_once(tmp_path: Path) -> None:
    split = [tool_use("Read", {"file_path": f"/home/dev/order-service/m{n}.py"}, n,
                      model="claude-haiku-4-5") for n in range(2, 5)]  # fmt: skip
    for line in split:
        line["message"]["id"] = "msg_one_answer"
    lines = [user("Read three files.", 0), *split, assistant_text("Read.", 5),
             assistant_text("All three are fine.", 6)]  # fmt: skip
    record = load_claude_session(write_lines(session_path(tmp_path), lines), tmp_path / "rec")
    binding = record.graph.nodes[0].binding
    assert binding is not None
    assert binding.model == "claude-sonnet-4-5-20250929"
    assert record.runtime["models"] == ["claude-haiku-4-5", "claude-sonnet-4-5-20250929"]


def test_a_slash_command_start_is_the_request_with_its_expansion(tmp_path: Path) -> None:
    command = (
        "<command-name>/review-pr</command-name>\n<command-message>review-pr"
        "</command-message>\n<command-args>42 focus on timeouts</command-args>"
    )
    lines = [
        user("<local-command-caveat>Caveat: the messages below were generated by the user "
             "while running local commands.</local-command-caveat>", 0, isMeta=True),
        user("<command-name>/model</command-name>\n<command-args></command-args>", 1),
        user(command, 2),
        user("Review pull request 42 of this repository; report problems.", 3, isMeta=True),
        assistant_text("Reviewing.", 4),
    ]  # fmt: skip
    record = load_claude_session(write_lines(session_path(tmp_path), lines), tmp_path / "rec")
    assert record.initial_input == (
        "/review-pr 42 focus on timeouts\n\nReview pull request 42 of this repository; "
        "report problems."
    )


def test_an_interrupted_first_turn_keeps_the_real_request(tmp_path: Path) -> None:
    lines = [
        user("[Request interrupted by user]", 0),
        user("Add a timeout to billing.charge().", 1),
        assistant_text("Added.", 2),
    ]
    record = load_claude_session(write_lines(session_path(tmp_path), lines), tmp_path / "rec")
    assert record.initial_input == "Add a timeout to billing.charge()."
    assert record.executions[0].status == "completed"


def _inline_sidechains(path: Path, records: int, chains: int) -> None:
    per_chain = records // chains
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps(user("Ask the helpers.", 0)) + "\n")
        n = 1
        for chain in range(chains):
            parent = None
            for step in range(per_chain):
                n += 1
                uuid = f"c{chain}-{step}"
                kind = user if step % 2 == 0 else assistant_text
                line = kind(f"step {step}", n, sidechain=True, parent=parent, uuid=uuid)
                out.write(json.dumps(line) + "\n")
                parent = uuid


def _peak(path: Path, workdir: Path) -> tuple[int, RunRecord]:
    tracemalloc.start()
    try:
        record = load_claude_session(path, workdir)
        return tracemalloc.get_traced_memory()[1], record
    finally:
        tracemalloc.stop()


def test_memory_stays_flat_whatever_the_inline_sidechain_record_count(tmp_path: Path) -> None:
    """40x the records at a size that still proves it: merely keeping each record's raw line
    would cost about 15 MB at 20,000 records, four times the bound below.
    ``benchmarks/evidence_bench.py --cases claude-sidechains --traced`` measures any size."""
    small, large = tmp_path / "small" / f"{SESSION}.jsonl", tmp_path / "large" / f"{SESSION}.jsonl"
    small.parent.mkdir()
    large.parent.mkdir()
    _inline_sidechains(small, 500, 20)
    _inline_sidechains(large, 20_000, 20)
    small_peak, _ = _peak(small, tmp_path / "rec-small")
    large_peak, record = _peak(large, tmp_path / "rec-large")
    assert len(record.executions) == 21
    assert sum(1 for _ in record.executions[1].transcript.open()) == 1_000  # type: ignore[union-attr]
    # Forty times the records: memory grows by at most a small constant, never with the count.
    assert large_peak < small_peak * 1.5 + (2 << 20), (small_peak, large_peak)


def test_special_files_among_subagents_are_cut_by_name_never_opened(tmp_path: Path) -> None:
    path = _subagent_session(tmp_path, 1)
    folder = path.with_suffix("") / "subagents"
    os.mkfifo(folder / "agent-zzfifo.jsonl")
    (folder / "agent-zzzero.jsonl").symlink_to("/dev/zero")
    record = load_claude_session(path, tmp_path / "rec")
    cuts = _cuts(record)
    assert cuts["executions: subagent file agent-zzfifo.jsonl not read: it is a FIFO (named "
                "pipe), not a regular file"] == 1  # fmt: skip
    assert cuts["executions: subagent file agent-zzzero.jsonl not read: it is a character "
                "device, not a regular file"] == 1  # fmt: skip
    by_id = {execution.id: execution for execution in record.executions}
    assert {"agent-a00000", "agent-zzfifo", "agent-zzzero"} <= set(by_id)
    assert by_id["agent-zzfifo"].unavailable is not None
    assert "FIFO" in by_id["agent-zzfifo"].unavailable
    assert record.runtime["subagents_unavailable"] == ["agent-zzfifo", "agent-zzzero"]
    assert set(_evidence_cuts(record, tmp_path)) >= {
        ("source.executions", "subagent file agent-zzfifo.jsonl not read: it is a FIFO (named "
         "pipe), not a regular file"),
        ("source.executions", "subagent file agent-zzzero.jsonl not read: it is a character "
         "device, not a regular file"),
    }  # fmt: skip


@pytest.mark.parametrize("first_bytes", [100 << 10, LINE_LIMIT + 1024])
def test_a_project_level_agent_file_with_a_long_first_line_is_an_execution(
    tmp_path: Path, first_bytes: int
) -> None:
    path = _subagent_session(tmp_path, 0)
    prompt = "survey the orders package " + "x" * first_bytes
    write_lines(path.parent / "agent-a0long.jsonl", [
        user(prompt, 1, sidechain=True, agentId="a0long"),
        assistant_text("the orders package is fine", 3, sidechain=True, agentId="a0long"),
    ])  # fmt: skip
    record = load_claude_session(path, tmp_path / "rec")
    by_id = {execution.id: execution for execution in record.executions}
    assert "agent-a0long" in by_id, "a long first line no longer hides whose the file is"
    agent = by_id["agent-a0long"]
    assert agent.unavailable is None
    texts = [line["text"] for line in _transcript(record, record.executions.index(agent))]
    assert "the orders package is fine" in texts
    if first_bytes > LINE_LIMIT:
        # The line over the converter's own limit is cut, and the cut is recorded.
        assert _cuts(record)["lines: line not read: over the line limit"] == 1


def test_a_working_directory_holding_a_nul_is_read_without_a_checkout(tmp_path: Path) -> None:
    # Found by the session fuzz: the path reached os.path.realpath, which raised ValueError.
    lines = [user("Fix the failing test.", 1, cwd="/home/dev/a\u0000b"),
             assistant_text("Looking at it.", 2, cwd="/home/dev/a\u0000b")]  # fmt: skip
    record = load_claude_session(write_lines(session_path(tmp_path), lines), tmp_path / "rec")
    assert record.checkout is None
    assert record.runtime["cwd"] == "/home/dev/a\u0000b"
