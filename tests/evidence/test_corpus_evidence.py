"""Real Claude Code sessions (../shared/corpus, read in place): their evidence holds no harness
reminder, no Read line-number prefix and no home directory path, and keeps every failed tool
call (Claude Code, Codex and pi alike)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from active_memory.models.runs import RunRecord
from evidence.conftest import Converted

CORPUS = Path(__file__).parents[2] / ".." / "shared" / "corpus" / "sessions" / "claude"
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus is not here")

_READ_PREFIX = re.compile(r"(?m)^ *\d+→")
_HOME = re.compile(r"(?:/home|/Users)/(?!~)[^/\s\"'`]+")


def _sessions() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    found = []
    for path in sorted(CORPUS.glob("*/*.jsonl")):
        lines = path.read_text("utf-8", "replace").splitlines()
        # A file of sidechain lines only (a subagent's own file) is no session of its own.
        if any('"isSidechain":false' in line.replace(" ", "") for line in lines):
            found.append(path)
    return found


@pytest.mark.parametrize("path", _sessions(), ids=lambda path: path.name[:40])
def test_real_claude_evidence_is_free_of_harness_noise_and_homes(
    corpus: Converted, path: Path
) -> None:
    record = corpus.record(path)
    cwd = record.runtime["cwd"]
    assert isinstance(cwd, str)
    assert cwd.startswith("/")
    for specialist in ("repository_discovery", "repository_maintenance"):
        bundle = corpus.evidence(path, specialist)
        shown = bundle.serialized
        texts = [item["text"] for excerpt in bundle.payload.get("transcripts", [])
                 for item in excerpt["records"]]  # fmt: skip
        assert not [text for text in texts if "<system-reminder>" in text]
        assert not [text for text in texts if _READ_PREFIX.search(text)]
        # Inside the workspace a path is relative; a home anywhere is ~ (JSON escapes undone).
        assert not [text for text in texts if cwd + "/" in text]
        assert not _HOME.findall(repr(json.loads(shown)))


def _other_sessions() -> list[Path]:
    root = CORPUS.parent
    if not root.is_dir():
        return []
    return sorted([*root.glob("codex/**/*.jsonl"), *root.glob("pi/*.jsonl")])


@pytest.mark.parametrize("path", _other_sessions(), ids=lambda path: path.name[:40])
def test_real_codex_and_pi_evidence_names_no_home(corpus: Converted, path: Path) -> None:
    bundle = corpus.evidence(path, "repository_discovery")
    assert not _HOME.findall(repr(json.loads(bundle.serialized)))


def _failed_calls(record: RunRecord) -> tuple[dict[str, int], int]:
    """Per execution, how many of its transcript records are failed tool results; their bytes."""
    failed: dict[str, int] = {}
    size = 0
    for execution in record.executions:
        if execution.transcript is None or not execution.transcript.is_file():
            continue
        with execution.transcript.open(encoding="utf-8") as lines:
            for line in lines:
                item = json.loads(line)
                if item.get("role") == "tool" and str(item.get("text", "")).startswith("[error]"):
                    failed[execution.ref] = failed.get(execution.ref, 0) + 1
                    size += len(line.encode())
    return failed, size


def _all_sessions() -> list[Path]:
    return [*_sessions(), *_other_sessions()]


@pytest.mark.parametrize("path", _all_sessions(), ids=lambda path: path.name[:40])
def test_the_kept_records_include_every_failed_tool_call_while_the_budget_allows(
    corpus: Converted, path: Path
) -> None:
    failed, size = _failed_calls(corpus.record(path))
    bundle = corpus.evidence(path, "repository_discovery")
    kept = {
        excerpt["execution"]: sum(
            1 for item in excerpt["records"]
            if item.get("role") == "tool" and item["text"].startswith("[error]")
        )
        for excerpt in bundle.payload["transcripts"]
    }  # fmt: skip
    # The failures (with their calls) fit half the default budget in every real session here
    # (at most 15, 47 KB): then all stay, whatever else the budget reclaims.
    if size <= 64 * 1024:
        assert {ref: kept.get(ref, 0) for ref in failed} == failed
    else:
        assert sum(kept.values()) > 0
