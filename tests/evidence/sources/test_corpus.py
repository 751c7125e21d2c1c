"""Real session files from public repositories (../shared/corpus, read in place, never copied):
every one converts, its counts match a plain count of the file, its evidence fits the budget."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from active_memory.errors import RunRecordError
from active_memory.evidence.sources import detect_harness, open_run_source
from evidence.conftest import Converted

CORPUS = Path(__file__).parents[3] / ".." / "shared" / "corpus" / "sessions"
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus is not here")


def _sessions() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    found = [*CORPUS.glob("claude/*/*.jsonl"), *CORPUS.glob("codex/**/*.jsonl"),
             *CORPUS.glob("pi/*.jsonl"), *CORPUS.glob("copilot/**/*.jsonl")]  # fmt: skip
    return sorted(path for path in found if not path.name.startswith("agent-"))


def _objects(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text("utf-8", "replace").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


_REJECTED = ("The user doesn't want to proceed with this tool use",
             "The user doesn't want to take this action right now",
             "[Request interrupted by user for tool use]")  # fmt: skip


def _rejected(block: dict[str, Any]) -> bool:
    content = block.get("content")
    text = content if isinstance(content, str) else ""
    if isinstance(content, list):
        text = "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return block.get("type") == "tool_result" and text.lstrip().startswith(_REJECTED)


def _claude_counts(path: Path) -> tuple[int, int]:
    """Executions (main, subagent files but compaction agents, launched subagents whose file is
    missing) and tool_use blocks the user did not reject."""
    files = [path]
    folder = path.with_suffix("") / "subagents"
    if folder.is_dir():
        files += [p for p in folder.glob("agent-*.jsonl") if "acompact" not in p.name]
    launched = {result["agentId"] for entry in _objects(path)
                if isinstance(result := entry.get("toolUseResult"), dict)
                and isinstance(result.get("agentId"), str)}  # fmt: skip
    missing = launched - {file.stem[len("agent-") :] for file in files[1:]}
    tools = 0
    for file in files:
        for entry in _objects(file):
            content = (entry.get("message") or {}).get("content") if entry.get("type") == (
                "assistant") else None  # fmt: skip
            if isinstance(content, list):
                tools += sum(1 for b in content if isinstance(b, dict) and b.get("type") in (
                    "tool_use", "server_tool_use"))  # fmt: skip
            answer = (entry.get("message") or {}).get("content") if entry.get("type") == (
                "user") else None  # fmt: skip
            if isinstance(answer, list):
                tools -= sum(1 for b in answer if isinstance(b, dict) and _rejected(b))
    return len(files) + len(missing), tools


def _codex_tools(path: Path) -> int:
    """Tool calls less the ones the user declined."""
    items = [entry.get("payload", entry) for entry in _objects(path)]
    calls = sum(1 for item in items if isinstance(item, dict) and item.get("type") in (
        "function_call", "custom_tool_call", "local_shell_call", "web_search_call"))  # fmt: skip
    declined = sum(1 for item in items if isinstance(item, dict) and item.get("output") in (
        "exec command rejected by user", "patch rejected by user"))  # fmt: skip
    return calls - declined


@pytest.mark.parametrize("path", _sessions(), ids=lambda path: path.name[:40])
def test_a_real_session_converts_and_its_evidence_fits(
    tmp_path: Path, corpus: Converted, path: Path
) -> None:
    harness = detect_harness(path)
    objects = _objects(path)
    if harness == "claude" and all(e.get("isSidechain") for e in objects if "message" in e):
        # A file of sidechain lines only (a subagent's own file) has no main conversation.
        with pytest.raises(RunRecordError, match="main conversation"):
            open_run_source(path, tmp_path / "rec")
        return
    record = corpus.record(path)
    if harness == "claude":
        executions, tools = _claude_counts(path)
        assert len(record.executions) == executions
        assert record.runtime["receipts_total"] == tools
    elif harness == "codex":
        assert len(record.executions) == 1
        assert record.runtime["receipts_total"] == _codex_tools(path)
    bundle = corpus.evidence(path, "repository_discovery")
    assert bundle.size_bytes <= 128 * 1024
    assert bundle.payload["run"]["receipts_total"] == record.runtime["receipts_total"]
